//! One module per command.

pub mod bench;
pub mod bench_evaluators;
pub mod data;
pub mod env;
pub mod handoff;
pub mod merge;
pub mod report;
pub mod run;
pub mod sandbox;
pub mod score;
pub mod show;
pub mod sim_server;
pub mod swebench;
pub mod thresholds;
pub mod view;
