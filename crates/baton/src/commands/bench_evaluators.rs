//! `baton bench evaluators`: baton's evaluators against LiC's own Python evaluators on the
//! conformance vectors, side by side in one run.
//!
//! Per family it measures four figures, each the fastest of `--repeat` runs:
//!
//! - **whole process, baton**: `baton score --rules lic --input <family>.jsonl` as a child
//!   process, as a user runs it (start, reading, scoring on every core, writing the scored
//!   cases to `/dev/null`);
//! - **whole process, LiC**: a child Python that imports LiC's task classes unchanged
//!   through the `lic_harness.py` of the folder given with `--lic` and runs every vector
//!   (the script is written into `--out`, `lic_timing.py`);
//! - **per vector**, both: the time of the loop over the vectors alone, divided by their
//!   number, on one thread for baton as for Python: process start, imports, reading and
//!   parsing the vectors are excluded (the Python script times its own loop with
//!   `time.perf_counter`; baton times the same evaluator calls in this process).
//!
//! LiC's code is copied into `--out` first, because its harness links the conformance
//! databases into LiC's `data/spider/databases` (a placeholder file at that path is not
//! copied). When the folder has no LiC code, or the Python cannot import LiC's
//! evaluators, baton's figures are printed alone with what is missing and how to set it
//! up, and the command exits 1.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use baton_eval::Rules;
use baton_types::Family;

use crate::Outcome;
use crate::cli::EvaluatorsBenchArgs;
use crate::commands::score;
use crate::printer::Printer;

/// The Python side: imports LiC's harness, times its own loop, prints one JSON line.
const LIC_TIMING_PY: &str = r#""""Time LiC's own evaluators on one conformance file (written by `baton bench evaluators`).

Imports `lic_harness` (which imports LiC's task classes unchanged) from LIC_HARNESS_DIR,
runs every vector once and prints one JSON line: seconds spent importing and constructing
LiC's tasks, seconds spent in the vector loop alone, the vector count and the mismatches
with each vector's `expected`.
"""
import json
import os
import sys
import time

t0 = time.perf_counter()
sys.path.insert(0, os.environ["LIC_HARNESS_DIR"])
import lic_harness  # noqa: E402

lic_harness.setup()
t1 = time.perf_counter()
vectors = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
bad = 0
t2 = time.perf_counter()
for v in vectors:
    got, _ = lic_harness.run_case(v["family"], v["stage"], v["sample"], v["input"])
    exp = v.get("expected")
    if exp is not None and (
        got["is_correct"] != exp["is_correct"] or abs(got["score"] - exp["score"]) > 1e-9
    ):
        bad += 1
t3 = time.perf_counter()
print(json.dumps({"setup_s": t1 - t0, "loop_s": t3 - t2, "vectors": len(vectors), "mismatches": bad}))
"#;

/// Goals of issue 37: how much faster than LiC's Python baton must be.
const WHOLE_PROCESS_GOAL: f64 = 5.0;
const PER_VECTOR_GOAL: f64 = 20.0;

/// One side's figures on one family.
#[derive(Debug, Clone, Copy)]
struct Figures {
    whole: Duration,
    per_vector: Duration,
}

/// What LiC's side gave on one family.
enum Lic {
    Ran { figures: Figures, mismatches: u64 },
    Failed(String),
}

pub fn evaluators(args: EvaluatorsBenchArgs, printer: &Printer) -> Result<Outcome> {
    anyhow::ensure!(args.repeat > 0, "--repeat must be at least 1");
    let out = &args.out;
    if out.exists() {
        std::fs::remove_dir_all(out)
            .with_context(|| format!("cannot clear the benchmark folder {}", out.display()))?;
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let databases = args.conformance.join("databases");
    let exe = std::env::current_exe().context("cannot find the baton executable")?;

    let lic = prepare_lic(&args, out)?;
    match &lic {
        Ok(_) => printer.line(&format!(
            "LiC's own evaluators: {} (copied to {}), run by {}",
            args.lic.display(),
            out.join("lic-python").display(),
            args.python.display()
        ))?,
        Err(missing) => printer.error(missing),
    }
    printer.line(&format!(
        "vectors: {}; each figure the fastest of {} runs; per vector: the scoring loop alone, one thread, process start and reading excluded",
        args.conformance.display(),
        args.repeat
    ))?;
    printer.line(&format!(
        "{:<10} {:>7} | {:>11} {:>11} {:>7} | {:>10} {:>10} {:>7} | agreement",
        "family", "vectors", "LiC process", "baton", "×", "LiC/vec", "baton/vec", "×"
    ))?;

    let mut all_ok = lic.is_ok();
    let mut short: Vec<String> = Vec::new();
    let families = if args.families.is_empty() {
        DEFAULT_FAMILIES.to_vec()
    } else {
        args.families.clone()
    };
    for family in families {
        let file = args.conformance.join(format!("{family}.jsonl"));
        anyhow::ensure!(
            file.is_file(),
            "no conformance vectors for {family} at {}",
            file.display()
        );
        let cases = score::read_cases(&file)?;
        let vectors = cases.len();
        let (per_vector, agreed, with_expected) = baton_per_vector(cases, &databases, args.repeat)?;
        let whole = fastest(args.repeat, || baton_process(&exe, &file, &databases))?;
        let baton = Figures { whole, per_vector };
        let lic_side = match &lic {
            Ok(dir) => lic_family(&args, dir, &file, &databases, out, vectors)?,
            Err(_) => Lic::Failed("not run".into()),
        };
        let agree = format!("baton {agreed}/{with_expected}");
        let line = match &lic_side {
            Lic::Ran {
                figures,
                mismatches,
            } => {
                let whole_x = ratio(figures.whole, baton.whole);
                let vec_x = ratio(figures.per_vector, baton.per_vector);
                let misses =
                    goal_misses(whole_x, vec_x, agreed == with_expected && *mismatches == 0);
                all_ok &= misses.is_empty();
                if !misses.is_empty() {
                    short.push(format!("{family} ({})", misses.join(", ")));
                }
                format!(
                    "{:<10} {:>7} | {:>11} {:>11} {:>6.1}× | {:>10} {:>10} {:>6.0}× | {agree}, LiC {} mismatches",
                    family.to_string(),
                    vectors,
                    secs(figures.whole),
                    secs(baton.whole),
                    whole_x,
                    micros(figures.per_vector),
                    micros(baton.per_vector),
                    vec_x,
                    mismatches
                )
            }
            Lic::Failed(_) => {
                all_ok = false;
                short.push(format!(
                    "{family} (LiC's evaluator did not run: nothing to compare)"
                ));
                format!(
                    "{:<10} {:>7} | {:>11} {:>11} {:>7} | {:>10} {:>10} {:>7} | {agree}",
                    family.to_string(),
                    vectors,
                    "—",
                    secs(baton.whole),
                    "",
                    "—",
                    micros(baton.per_vector),
                    ""
                )
            }
        };
        printer.line(&line)?;
        if let Lic::Failed(why) = &lic_side
            && lic.is_ok()
        {
            printer.error(&format!("LiC's {family} evaluator did not run: {why}"));
        }
    }
    printer.line(&format!(
        "goal: every family ≥ {WHOLE_PROCESS_GOAL}× faster than LiC whole-process and ≥ {PER_VECTOR_GOAL}× per vector, agreeing on every vector"
    ))?;
    if lic.is_ok() {
        printer.line(&if short.is_empty() {
            "every family meets the goal".to_owned()
        } else {
            format!("short of the goal: {}", short.join("; "))
        })?;
    }
    Ok(if all_ok {
        Outcome::Success
    } else {
        Outcome::Partial
    })
}

/// Copy the LiC folder into `out` (without a placeholder where the harness links the
/// databases) and write the timing script; `Err` says what is missing and how to fix it.
fn prepare_lic(args: &EvaluatorsBenchArgs, out: &Path) -> Result<Result<PathBuf, String>> {
    let harness = args.lic.join("lic_harness.py");
    let tasks = args.lic.join("lic").join("tasks").join("tasks.py");
    if !harness.is_file() || !tasks.is_file() {
        return Ok(Err(format!(
            "LiC's evaluator code is missing: {} needs lic_harness.py and LiC's checkout in lic/ (lic/tasks/tasks.py); \
             no LiC figures are printed. Pass --lic with a folder laid out like ../shared/bench/lic-python, \
             and --python with the Python its setup.sh builds (VENV=DIR bash setup.sh, then --python DIR/bin/python)",
            args.lic.display()
        )));
    }
    let copy = out.join("lic-python");
    let placeholder = copy
        .join("lic")
        .join("data")
        .join("spider")
        .join("databases");
    copy_tree(&args.lic, &copy, &placeholder)?;
    let script = out.join("lic_timing.py");
    std::fs::write(&script, LIC_TIMING_PY)
        .with_context(|| format!("cannot write {}", script.display()))?;
    Ok(Ok(copy))
}

/// Copy `from` into `to` recursively, regular files and folders only, leaving out
/// `except` unless it is a folder.
fn copy_tree(from: &Path, to: &Path, except: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in
        std::fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))?
    {
        let entry = entry.with_context(|| format!("cannot list {}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst, except)?;
        } else if dst != except && src.is_file() {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}

/// baton's time per vector: the cases scored one after another on one thread with the
/// scoring stack, as `baton score`'s workers (the fastest of `repeat` loops), with the
/// agreement of the last loop.
fn baton_per_vector(
    cases: Vec<score::Case>,
    databases: &Path,
    repeat: usize,
) -> Result<(Duration, usize, usize)> {
    let evaluators = score::evaluators(Rules::Lic, Some(databases.to_path_buf()));
    let handle = baton_eval::spawn_scoring_thread("baton-bench-score".into(), move || {
        let mut best = Duration::MAX;
        let (mut agreed, mut with_expected) = (0, 0);
        for _ in 0..repeat {
            (agreed, with_expected) = (0, 0);
            let started = Instant::now();
            for c in &cases {
                let verdict = score::verdict(&evaluators, c);
                if let Some(a) = score::agrees_with_expected(c, &verdict) {
                    with_expected += 1;
                    agreed += usize::from(a);
                }
            }
            best = best.min(started.elapsed());
        }
        (best / cases.len().max(1) as u32, agreed, with_expected)
    })
    .context("cannot start a scoring thread")?;
    handle
        .join()
        .map_err(|_| anyhow::anyhow!("the scoring thread panicked"))
}

/// The wall time of `baton score --rules lic` on `file` as a child process.
fn baton_process(exe: &Path, file: &Path, databases: &Path) -> Result<Duration> {
    let started = Instant::now();
    let output = Command::new(exe)
        .args([
            "score",
            "--rules",
            "lic",
            "--output",
            "/dev/null",
            "--input",
        ])
        .arg(file)
        .arg("--spider-dir")
        .arg(databases)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("cannot start baton score")?;
    let wall = started.elapsed();
    if !output.status.success() {
        bail!(
            "baton score on {} failed: {}",
            file.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(wall)
}

/// LiC's figures on one family: the fastest whole process, and its own loop's time.
fn lic_family(
    args: &EvaluatorsBenchArgs,
    dir: &Path,
    file: &Path,
    databases: &Path,
    out: &Path,
    vectors: usize,
) -> Result<Lic> {
    let script = out.join("lic_timing.py");
    let mut best: Option<(Duration, Duration, u64)> = None;
    for _ in 0..args.repeat {
        let started = Instant::now();
        // LiC's harness changes into LiC's folder, so every path it reads is absolute.
        let output = Command::new(&args.python)
            .arg(std::path::absolute(&script)?)
            .arg(std::path::absolute(file)?)
            .env("LIC_HARNESS_DIR", std::path::absolute(dir)?)
            .env("LIC_DIR", std::path::absolute(dir.join("lic"))?)
            .env("CONF_DB_DIR", std::path::absolute(databases)?)
            .env("PYTHONHASHSEED", "0")
            .stdin(Stdio::null())
            .output();
        let wall = started.elapsed();
        let output = match output {
            Ok(o) => o,
            Err(e) => {
                return Ok(Lic::Failed(format!(
                    "cannot start {}: {e} (pass --python with the Python LiC's setup.sh builds)",
                    args.python.display()
                )));
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let parsed = stdout
            .lines()
            .last()
            .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok());
        let (Some(report), true) = (parsed, output.status.success()) else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
            return Ok(Lic::Failed(format!(
                "{} exited with {}: {} (does it have LiC's environment? see setup.sh in {})",
                args.python.display(),
                output.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
                args.lic.display()
            )));
        };
        let loop_s = report["loop_s"].as_f64().unwrap_or(f64::NAN);
        let n = report["vectors"].as_u64().unwrap_or(0);
        anyhow::ensure!(
            n as usize == vectors,
            "LiC's harness read {n} vectors from {}, baton {vectors}",
            file.display()
        );
        let per_vector = Duration::from_secs_f64(loop_s / n.max(1) as f64);
        let mismatches = report["mismatches"].as_u64().unwrap_or(u64::MAX);
        best = Some(match best {
            Some((w, p, m)) => (w.min(wall), p.min(per_vector), m.max(mismatches)),
            None => (wall, per_vector, mismatches),
        });
    }
    let (whole, per_vector, mismatches) = best.expect("at least one run");
    Ok(Lic::Ran {
        figures: Figures { whole, per_vector },
        mismatches,
    })
}

/// What a family's figures leave short of the goal (none when it meets it).
fn goal_misses(whole_x: f64, vec_x: f64, agrees: bool) -> Vec<String> {
    let mut misses = Vec::new();
    if whole_x < WHOLE_PROCESS_GOAL {
        misses.push(format!(
            "whole process {whole_x:.1}× < {WHOLE_PROCESS_GOAL}×"
        ));
    }
    if vec_x < PER_VECTOR_GOAL {
        misses.push(format!("per vector {vec_x:.1}× < {PER_VECTOR_GOAL}×"));
    }
    if !agrees {
        misses.push("verdicts disagree".to_owned());
    }
    misses
}

fn fastest(repeat: usize, mut run: impl FnMut() -> Result<Duration>) -> Result<Duration> {
    let mut best = Duration::MAX;
    for _ in 0..repeat {
        best = best.min(run()?);
    }
    Ok(best)
}

fn ratio(reference: Duration, ours: Duration) -> f64 {
    reference.as_secs_f64() / ours.as_secs_f64().max(1e-12)
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 10.0 {
        format!("{us:.2} µs")
    } else {
        format!("{us:.0} µs")
    }
}

/// Families benchmarked when none is named: the four LiC's Python scores without the
/// code sandbox.
pub const DEFAULT_FAMILIES: [Family; 4] = [
    Family::Actions,
    Family::Math,
    Family::Data2Text,
    Family::Database,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn args(lic: &Path) -> EvaluatorsBenchArgs {
        EvaluatorsBenchArgs {
            lic: lic.to_path_buf(),
            python: "python3".into(),
            conformance: "../shared/conformance".into(),
            families: Vec::new(),
            repeat: 1,
            out: "unused".into(),
        }
    }

    #[test]
    fn issue_37_goal_misses_name_each_shortfall() {
        assert!(goal_misses(5.0, 20.0, true).is_empty());
        assert_eq!(
            goal_misses(4.9, 2.04, false),
            [
                "whole process 4.9× < 5×",
                "per vector 2.0× < 20×",
                "verdicts disagree"
            ]
        );
    }

    #[test]
    fn issue_37_missing_lic_code_is_named_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("no-lic");
        let said = prepare_lic(&args(&missing), tmp.path())
            .unwrap()
            .unwrap_err();
        assert!(said.contains(&missing.display().to_string()), "{said}");
        assert!(
            said.contains("lic_harness.py") && said.contains("--python"),
            "{said}"
        );
    }

    #[test]
    fn issue_37_lic_copy_leaves_out_the_database_placeholder() {
        let tmp = tempfile::tempdir().unwrap();
        let lic = tmp.path().join("lic-python");
        let spider = lic.join("lic").join("data").join("spider");
        std::fs::create_dir_all(lic.join("lic").join("tasks")).unwrap();
        std::fs::create_dir_all(&spider).unwrap();
        std::fs::write(lic.join("lic_harness.py"), "# harness").unwrap();
        std::fs::write(lic.join("lic").join("tasks").join("tasks.py"), "# tasks").unwrap();
        std::fs::write(spider.join("databases"), "/elsewhere/databases").unwrap();
        std::fs::write(spider.join("readme.txt"), "kept").unwrap();
        let out = tmp.path().join("out");
        let copy = prepare_lic(&args(&lic), &out).unwrap().unwrap();
        let copied = copy.join("lic").join("data").join("spider");
        assert_eq!(
            std::fs::read_to_string(copied.join("readme.txt")).unwrap(),
            "kept"
        );
        assert!(!copied.join("databases").exists());
        assert_eq!(
            std::fs::read_to_string(copy.join("lic_harness.py")).unwrap(),
            "# harness"
        );
        assert!(
            std::fs::read_to_string(out.join("lic_timing.py"))
                .unwrap()
                .contains("lic_harness.setup()")
        );
    }
}
