//! A trial's identity and the output folder's lock, with the real sandbox and offline
//! simulated agents on a small experiment (`fixtures/small.toml`: one scenario, two
//! conditions, two models, one trial): a `results.json` written before identities
//! (`fixtures/results-before-identity.json`, by the code of that time) is adopted and an
//! unchanged rerun runs nothing, its report byte for byte the same; a changed skill re-runs
//! exactly that model's trials, listed before any trial runs; a changed price re-prices the
//! kept trials' tokens and runs nothing; a removed condition leaves the report; a changed
//! document re-runs its condition, a changed scenario file the whole scenario; a second run
//! on a folder in use is refused at once while the report still reads it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

use baton_handover::Error;
use baton_handover::traps::experiment::{self, BenchResults, RunOptions, TrialRecord};
use baton_handover::traps::identity::Changes;
use baton_handover::traps::{Condition, lock, report};

use crate::support::handover_dir;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/traps/fixtures")
        .join(name)
}

/// The fixture experiment, pointed at this machine's Handover checkout, with `extra`
/// appended to the `[models.lc.sim]` table and `top` before the tables, written to `dir`.
fn experiment(dir: &Path, handover: &Path, top: &str, lc_sim: &str) -> PathBuf {
    let text = std::fs::read_to_string(fixture("small.toml")).unwrap();
    let text = text
        .replace(
            "handover = \"/work/shared/handover\"",
            &format!("handover = {:?}\n{top}", handover.display().to_string()),
        )
        .replace(
            "[models.lc.sim]\nmalformed = 0.0\n",
            &format!("[models.lc.sim]\nmalformed = 0.0\n{lc_sim}\n"),
        );
    let path = dir.join("exp.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Every report file of `out`, written now from its `results.json`.
fn reports(out: &Path) -> Vec<Vec<u8>> {
    let (_, files) = report::write(out).unwrap();
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

/// A run that records, in order, the changes it announced and the trials it ran.
fn run(exp: &Path, out: &Path) -> (experiment::RunSummary, Vec<String>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (events.clone(), events.clone());
    let options = RunOptions {
        on_changes: Some(Box::new(move |c: &Changes| {
            a.lock().unwrap().push(c.to_string());
        })),
        on_trial: Some(Box::new(move |t: &TrialRecord| {
            b.lock().unwrap().push(format!(
                "ran {} {} {} #{}",
                t.id.scenario, t.id.condition, t.id.model, t.id.trial
            ));
        })),
        ..RunOptions::default()
    };
    let summary = experiment::run(exp, out, &options).unwrap();
    let events = events.lock().unwrap().clone();
    (summary, events)
}

fn by_model<'a>(r: &'a BenchResults, model: &str) -> Vec<&'a TrialRecord> {
    r.trials.iter().filter(|t| t.id.model == model).collect()
}

#[test]
fn issue_38_a_trial_reruns_only_when_what_decides_it_changed() {
    let Some(handover) = handover_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    // the fixture, its stored experiment pointed at this machine's checkout
    let mut stored: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("results-before-identity.json")).unwrap(),
    )
    .unwrap();
    stored["experiment"]["handover"] = handover.display().to_string().into();
    assert!(stored["trials"][0].get("identity").is_none());
    std::fs::write(
        out.join(experiment::RESULTS_FILE),
        serde_json::to_string_pretty(&stored).unwrap() + "\n",
    )
    .unwrap();
    let before = experiment::read_results(&out).unwrap();
    let reports_before = reports(&out);

    // 1. adopted: nothing runs, every trial gets its identity, the reports are the same
    let exp = experiment(dir.path(), &handover, "", "");
    let (summary, events) = run(&exp, &out);
    assert_eq!(
        (
            summary.planned,
            summary.kept,
            summary.ran,
            summary.unfinished
        ),
        (4, 4, 0, 0)
    );
    assert_eq!(
        events,
        ["the experiment is unchanged since it was stored\n\
          trials: 4 kept, 0 new, 0 unfinished run again, 0 re-run (identity changed), 0 removed (out of the report); to run: 0\n"]
    );
    let adopted = experiment::read_results(&out).unwrap();
    assert!(
        adopted
            .trials
            .iter()
            .all(|t| t.identity.as_ref().is_some_and(|i| i.len() == 64))
    );
    let strip = |r: &BenchResults| {
        r.trials
            .iter()
            .cloned()
            .map(|mut t| {
                t.identity = None;
                t
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&adopted), before.trials);
    assert_eq!(reports(&out), reports_before);

    // 2. unchanged rerun on a results.json of this version: nothing runs, byte for byte
    let results_text = std::fs::read(out.join(experiment::RESULTS_FILE)).unwrap();
    let (summary, _) = run(&exp, &out);
    assert_eq!((summary.kept, summary.ran), (4, 0));
    assert_eq!(
        std::fs::read(out.join(experiment::RESULTS_FILE)).unwrap(),
        results_text
    );
    assert_eq!(reports(&out), reports_before);

    // 3. lc's skill changed: exactly lc's two trials run again, said before they run
    let exp = experiment(dir.path(), &handover, "", "skill = 0.6");
    let (summary, events) = run(&exp, &out);
    assert_eq!((summary.kept, summary.ran, summary.unfinished), (2, 2, 0));
    assert_eq!(
        events[0],
        "the experiment changed since it was stored:\n  \
         models.lc.sim.skill: (none) → 0.6\n\
         trials: 2 kept, 0 new, 0 unfinished run again, 2 re-run (identity changed), 0 removed (out of the report); to run: 2\n  \
         re-run: reverted-feature good lc #0\n  \
         re-run: reverted-feature none lc #0\n"
    );
    let mut ran = events[1..].to_vec();
    ran.sort();
    assert_eq!(
        ran,
        [
            "ran reverted-feature good lc #0",
            "ran reverted-feature none lc #0"
        ]
    );
    let skilled = experiment::read_results(&out).unwrap();
    assert_eq!(skilled.trials.len(), 4);
    // hc's records are the adopted ones, untouched; lc's are new, with a new identity
    assert_eq!(by_model(&skilled, "hc"), by_model(&adopted, "hc"));
    for (now, was) in by_model(&skilled, "lc")
        .into_iter()
        .zip(by_model(&adopted, "lc"))
    {
        assert_eq!(now.id, was.id);
        assert_eq!(now.seed, was.seed, "the trial's draws are the trial's");
        assert!(now.finished && now.identity.is_some() && now.identity != was.identity);
    }
    assert_eq!(
        skilled.experiment.models["lc"]
            .sim_settings()
            .unwrap()
            .skill,
        0.6
    );

    // 4. a price of lc changed: its kept trials are re-priced from their tokens, none runs
    std::fs::write(
        dir.path().join("prices.json"),
        r#"{"sim/lc": {"input_cost_per_token": 1e-06, "output_cost_per_token": 4e-06}}"#,
    )
    .unwrap();
    let exp = experiment(
        dir.path(),
        &handover,
        "prices = \"prices.json\"",
        "skill = 0.6",
    );
    let (summary, events) = run(&exp, &out);
    assert_eq!((summary.kept, summary.ran), (4, 0));
    let repriced = experiment::read_results(&out).unwrap();
    let lc_before: f64 = by_model(&skilled, "lc").iter().map(|t| t.cost_usd).sum();
    let mut lc_after = 0.0;
    for t in by_model(&repriced, "lc") {
        let want = t.tokens.input as f64 * 1e-6 + t.tokens.output as f64 * 4e-6;
        assert!((t.cost_usd - want).abs() < 1e-12, "{t:?} {want}");
        lc_after += want;
    }
    assert_eq!(by_model(&repriced, "hc"), by_model(&adopted, "hc"));
    let prices_path = dir.path().join("prices.json").display().to_string();
    assert_eq!(
        events,
        [format!(
            "the experiment changed since it was stored:\n  \
             prices: (none) → {prices_path:?}\n\
             price of lc changed: its kept trials re-priced from their stored tokens (${lc_before:.6} → ${lc_after:.6}); nothing runs for it\n\
             trials: 4 kept, 0 new, 0 unfinished run again, 0 re-run (identity changed), 0 removed (out of the report); to run: 0\n"
        )]
    );

    // 5. a condition dropped: its trials leave results.json and the report
    let exp_text = std::fs::read_to_string(&exp).unwrap().replace(
        "conditions = [\"good\", \"none\"]",
        "conditions = [\"good\"]",
    );
    std::fs::write(&exp, exp_text).unwrap();
    let (summary, events) = run(&exp, &out);
    assert_eq!((summary.planned, summary.kept, summary.ran), (2, 2, 0));
    assert!(
        events[0].contains("2 removed (out of the report)"),
        "{}",
        events[0]
    );
    let (rep, _) = report::write(&out).unwrap();
    assert!(rep.cells.iter().all(|c| c.condition == Condition::Good));
    assert_eq!(rep.cells.len(), 3 * 2);
}

#[test]
fn issue_38_a_second_run_on_a_folder_in_use_is_refused_at_once() {
    let Some(handover) = handover_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let exp = experiment(dir.path(), &handover, "", "");
    // one trial at a time, so nothing is written while the first run waits
    let text = std::fs::read_to_string(&exp).unwrap();
    std::fs::write(&exp, text.replace("concurrency = 2", "concurrency = 1")).unwrap();
    // the first run stops after its first trial until the second has been refused
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let gate = Mutex::new(Some((started_tx, go_rx)));
    let first = {
        let (exp, out) = (exp.clone(), out.clone());
        std::thread::spawn(move || {
            let options = RunOptions {
                on_trial: Some(Box::new(move |_: &TrialRecord| {
                    if let Some((started, go)) = gate.lock().unwrap().take() {
                        started.send(()).unwrap();
                        go.recv().unwrap();
                    }
                })),
                ..RunOptions::default()
            };
            experiment::run(&exp, &out, &options)
        })
    };
    started_rx.recv().unwrap();
    let results_then = std::fs::read(out.join(experiment::RESULTS_FILE)).unwrap();
    let t0 = std::time::Instant::now();
    let err = experiment::run(&exp, &out, &RunOptions::default()).unwrap_err();
    assert!(
        t0.elapsed().as_secs() < 2,
        "refused at once: {:?}",
        t0.elapsed()
    );
    assert!(
        matches!(&err, Error::Busy { folder, .. } if folder == &out),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "trap bench: the output folder {} is in use by process {} (lock {}); wait for that run to end or choose another --out",
            out.display(),
            std::process::id(),
            lock::lock_path(&out).display()
        )
    );
    // the refused run wrote nothing; the report reads the folder without the lock
    assert_eq!(
        std::fs::read(out.join(experiment::RESULTS_FILE)).unwrap(),
        results_then
    );
    assert!(report::write(&out).is_ok());
    go_tx.send(()).unwrap();
    let summary = first.join().unwrap().unwrap();
    assert_eq!((summary.ran, summary.unfinished), (4, 0));
    // once the first run ended, the folder is free again
    let mut again = experiment::run(&exp, &out, &RunOptions::default());
    for _ in 0..50 {
        if !matches!(again, Err(Error::Busy { .. })) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        again = experiment::run(&exp, &out, &RunOptions::default());
    }
    assert_eq!(again.unwrap().ran, 0);
}

#[test]
fn issue_38_a_changed_document_reruns_its_condition_and_a_changed_scenario_file_everything() {
    let Some(handover) = handover_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // a copy of the checkout's scenarios, to edit
    let copy = dir.path().join("handover");
    std::fs::create_dir_all(copy.join("bench")).unwrap();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(handover.join("bench/scenarios"))
        .arg(copy.join("bench/scenarios"))
        .status()
        .unwrap();
    assert!(status.success());
    let out = dir.path().join("out");
    let exp = experiment(dir.path(), &copy, "", "");
    let (first, _) = run(&exp, &out);
    assert_eq!(first.ran, 4);
    let scenario = copy.join("bench/scenarios/reverted-feature");
    let hash = |key: &str| experiment::read_results(&out).unwrap().inputs[key].clone();
    let good_before = hash("document reverted-feature/good");

    // the good document gains a line: its two trials (one per model) run again
    let good = scenario.join("good.handover.md");
    let text = std::fs::read_to_string(&good).unwrap();
    std::fs::write(&good, format!("{text}\nOne more line.\n")).unwrap();
    let (summary, events) = run(&exp, &out);
    assert_eq!((summary.kept, summary.ran), (2, 2));
    let good_after = hash("document reverted-feature/good");
    assert_ne!(good_before, good_after);
    assert_eq!(
        events[0],
        format!(
            "the experiment changed since it was stored:\n  \
             document reverted-feature/good (sha256): {good_before} → {good_after}\n\
             trials: 2 kept, 0 new, 0 unfinished run again, 2 re-run (identity changed), 0 removed (out of the report); to run: 2\n  \
             re-run: reverted-feature good hc #0\n  \
             re-run: reverted-feature good lc #0\n"
        )
    );

    // a file of the scenario's repository changes: every trial of the scenario runs again
    let readme = scenario.join("repo/README.md");
    let text = std::fs::read_to_string(&readme).unwrap();
    std::fs::write(&readme, format!("{text}\n")).unwrap();
    let (summary, events) = run(&exp, &out);
    assert_eq!(
        (summary.kept, summary.ran, summary.changes.rerun.len()),
        (0, 4, 4)
    );
    assert!(
        events[0].contains("  scenario reverted-feature (sha256): "),
        "{}",
        events[0]
    );
}
