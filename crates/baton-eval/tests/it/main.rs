//! LiC conformance: every vector in `../shared/conformance` must get LiC's verdict
//! through the same `Evaluators` registry that runs use.
#![allow(clippy::print_stderr)] // a skipped or passed conformance run says so loudly

mod conformance;
mod hostile;
mod replies;
