//! Integration tests for baton-data: dataset errors, schedules, the actions
//! prompt's Python `str()` and the sample set. (The simulated models' answer key on
//! the sample set is tested in `baton-runner`, where both meet.)

mod errors;
mod parquet;
mod python;
mod schedule;
