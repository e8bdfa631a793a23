//! Datasets and turn schedules for baton.
//!
//! This crate turns LiC sharded-instruction files into validated
//! [`Task`](baton_types::Task)s and decides exactly what a model sees for each
//! task:
//!
//! - **Loading** ([`load`], [`parse`] → [`Dataset`]): LiC's JSON array or JSON
//!   Lines (decided by content), the shard key `shard` with `shard_text` as an
//!   alias, every family's required keys checked. All problems are collected
//!   and reported together, each naming the file, the item index or line, the
//!   task id and the key ([`DataError::Invalid`]). `summary` and `translation`
//!   items are counted, not loaded. [`Dataset::stats`] describes a dataset and
//!   checks that its Spider databases are present.
//! - **Schedules** ([`build_schedule`] → [`Schedule`]): the family system
//!   prompt filled from the sample (schema text for database, Python's `str()`
//!   of the function list for actions, by `baton_py::json_repr`), one user turn per
//!   shard verbatim, and the family's final-turn format instruction appended
//!   to the last turn. The prompt texts are [`Templates`]: embedded defaults
//!   from the repository's `evaluators/` folder, a user's edited copy, or LiC's own
//!   system prompts read from the user's LiC checkout ([`lic`]).
//! - **Single-turn baselines** ([`baseline_prompt`]): LiC's `full` and `concat` user
//!   messages, byte for byte as LiC's code builds them from its templates.
//! - **Code test cases** ([`testcases`]): LiC's public and private tests, the private
//!   ones as JSON text or LiveCodeBench's `base64(zlib(pickle(json)))` packing, unpacked
//!   under a bound; `data check` validates them and the code grader runs them.
//! - **The sample set** ([`sample_dataset`], [`materialize_sample_databases`]):
//!   hand-sharded tasks for all five families with small Spider-style
//!   databases, compiled in so the demo runs anywhere.
//!
//! It is not the place for scoring (`baton-eval`), for calling models or the
//! simulated models' answer key (`baton-models`) or for handoff interfaces
//! (`baton-runner`). It keeps the
//! schedule, the templates and the sample together because all three must
//! agree byte for byte: the schedule hash recorded on every episode is a pure
//! function of a task and the templates.
//!
//! ```
//! use baton_data::{Templates, build_schedule, sample_dataset};
//!
//! let dataset = sample_dataset();
//! let task = dataset.task("sample-math/01").expect("bundled");
//! let schedule = build_schedule(task, &Templates::embedded()).expect("valid task");
//! assert_eq!(schedule.user_turns.len(), task.shards.len());
//! assert!(schedule.user_turns[0].contains(&task.shards[0].shard));
//! ```
#![deny(missing_docs)]

mod baseline;
mod error;
pub mod lic;
mod load;
mod parquet;
mod sample;
mod schedule;
mod stats;
mod templates;
pub mod testcases;

pub use baseline::baseline_prompt;
pub use error::{DataError, Problems};
pub use load::{Dataset, InvalidTask, SKIPPED_FAMILIES, load, load_lenient, parse};
pub use sample::{
    SAMPLE_DATABASES, SAMPLE_PATH, SampleDatabase, materialize_sample_databases, sample_dataset,
    try_sample_dataset,
};
pub use schedule::{Schedule, build_schedule, system_prompt};
pub use stats::{DatabaseStats, DbStatus, FamilyStats, Stats};
pub use templates::{
    FINAL_INSTRUCTION_FILE, FUNCTIONS_PLACEHOLDER, SCHEMA_PLACEHOLDER, SYSTEM_FILE, Templates,
};
