//! Integration tests for baton-data: dataset errors, schedules, the actions
//! prompt's Python `str()`, the sample set and its answer key.

mod answer_key;
mod errors;
mod python;
mod schedule;
