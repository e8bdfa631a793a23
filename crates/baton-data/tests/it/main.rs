//! Integration tests for baton-data: dataset errors, schedules, the Python
//! repr, the sample set and its answer key.

mod answer_key;
mod errors;
mod python;
mod schedule;
