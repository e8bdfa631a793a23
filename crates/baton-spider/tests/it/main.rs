//! Integration tests for baton-spider: LiC's conformance vectors and hostile SQL.

mod conformance;
mod hostile;
