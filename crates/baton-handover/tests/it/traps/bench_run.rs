//! The trap bench run by simulated agents, end to end: the bundled example's experiment
//! (3 scenarios × 4 conditions × 2 models × 2 trials) offline in the real sandbox; every
//! trap's outcome is what the simulated agent's policy implies for the document it was
//! handed, as the probes found it on the tree; a rerun keeps every finished trial and runs
//! only the missing and unfinished ones; the report's rates, intervals and contrasts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton_handover::Rubric;
use baton_handover::traps::experiment::{self, RunOptions, TrapExperiment};
use baton_handover::traps::{self, Condition, Outcome, report};

use crate::support::handover_dir;

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/trap-bench-sim.toml")
}

#[test]
fn issue_38_the_example_runs_offline_and_its_rates_follow_the_documents() {
    let Some(handover) = handover_dir() else {
        return;
    };
    let mut exp = TrapExperiment::load(&example()).unwrap();
    assert_eq!(exp.plan().len(), 3 * 4 * 2 * 2);
    exp.handover = handover;
    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let summary = experiment::run_experiment(&exp, out.path(), &RunOptions::default()).unwrap();
    let took = started.elapsed();
    assert_eq!(
        (
            summary.planned,
            summary.kept,
            summary.ran,
            summary.unfinished
        ),
        (48, 0, 48, 0)
    );
    // the example's promise is two minutes on a free machine; the tests share theirs
    assert!(took.as_secs() < 300, "{took:?}");
    let results = experiment::read_results(out.path()).unwrap();
    assert_eq!(results.trials.len(), 48);

    // Each trap's probe verdict is the branch the policy picks for the document handed.
    let tasks = traps::tasks(&exp.handover.join("bench/scenarios")).unwrap();
    let card = baton_models::PriceCard::embedded();
    for t in &results.trials {
        assert!(t.finished, "{t:?}");
        assert_eq!(t.exit, "submitted", "{t:?}");
        let task = tasks.iter().find(|x| x.name() == t.id.scenario).unwrap();
        let doc_task = task.document_task(exp.base_rate).unwrap();
        let entry = &exp.models[&t.id.model];
        let settings = entry.sim_settings().unwrap();
        let id = entry.model.trim_start_matches("sim/");
        let document = task.document(t.id.condition).unwrap();
        let choices =
            baton_agent::document_choices(&doc_task, &settings, t.seed, id, document.as_deref());
        let want: BTreeMap<&str, Outcome> = doc_task
            .traps
            .iter()
            .zip(&choices)
            .map(|(trap, f)| {
                (
                    trap.id.as_str(),
                    if *f { Outcome::FellIn } else { Outcome::Clear },
                )
            })
            .collect();
        let got: BTreeMap<&str, Outcome> = t
            .outcomes
            .iter()
            .map(|o| (o.trap.as_str(), o.outcome))
            .collect();
        assert_eq!(got, want, "{:?}: {:?}", t.id, t.commands);
        match t.id.condition {
            Condition::Good => assert_eq!(choices, vec![false; 3], "{:?}", t.id),
            Condition::Poisoned => assert_eq!(choices, vec![true; 3], "{:?}", t.id),
            _ => {}
        }
        assert!(
            t.steps >= 4 && t.tokens.input > 0 && t.tokens.output > 0,
            "{t:?}"
        );
        // priced as the agent study prices calls: the price card's rates on the usage
        let usage = baton_types::Usage {
            uncached_in: t.tokens.input,
            output: t.tokens.output,
            ..Default::default()
        };
        let want = card
            .get(&entry.model)
            .unwrap()
            .cost(&entry.model, &usage)
            .unwrap()
            .usd();
        assert!(
            t.cost_usd > 0.0 && (t.cost_usd - want).abs() < 1e-8,
            "{t:?} {want}"
        );
    }

    // Pooled rates: poisoned > none > good.
    let pooled = |c: Condition| {
        let a: Vec<Option<bool>> = results
            .trials
            .iter()
            .filter(|t| t.id.condition == c)
            .flat_map(|t| {
                t.outcomes
                    .iter()
                    .map(|o| Some(o.outcome == Outcome::FellIn))
            })
            .collect();
        traps::stats::cell_rate(&a).unwrap()
    };
    let (good, none, poisoned) = (
        pooled(Condition::Good),
        pooled(Condition::None),
        pooled(Condition::Poisoned),
    );
    assert_eq!((good.k, good.n), (0, 36));
    assert_eq!((poisoned.k, poisoned.n), (36, 36));
    assert!(none.k > 0 && none.k < 36, "{none:?}");

    // The report: 3 scenarios × 3 traps × 4 conditions × 2 models cells.
    let (rep, files) = report::write(out.path()).unwrap();
    assert_eq!(files.len(), 3);
    assert_eq!(rep.cells.len(), 72);
    assert_eq!(rep.costs.len(), 24);
    // pooled per condition and model: 3 scenarios × 3 traps × 2 trials = 18 answers
    let pooled = |c: Condition, m: &str| {
        rep.pooled
            .iter()
            .find(|p| p.condition == c && p.model == m)
            .unwrap()
            .clone()
    };
    for m in ["lc", "hc"] {
        let (g, p, n) = (
            pooled(Condition::Good, m),
            pooled(Condition::Poisoned, m),
            pooled(Condition::None, m),
        );
        assert_eq!((g.rate.unwrap().k, g.rate.unwrap().n), (0, 18), "{m}");
        assert_eq!((p.rate.unwrap().k, p.rate.unwrap().n), (18, 18), "{m}");
        let nr = n.rate.unwrap();
        assert_eq!(nr.n, 18);
        let c = p.contrast.unwrap();
        assert!((c.difference - (1.0 - nr.rate)).abs() < 1e-12);
        let fisher = traps::stats::fisher_exact(18, 0, nr.k, 18 - nr.k).p_value;
        assert!((c.p_value - fisher).abs() < 1e-12);
        assert!(n.contrast.is_none());
    }
    let cell = |scenario: &str, trap: &str, c: Condition, m: &str| {
        rep.cells
            .iter()
            .find(|x| x.scenario == scenario && x.trap == trap && x.condition == c && x.model == m)
            .unwrap()
    };
    let p = cell(
        "reverted-feature",
        "wrong-first-step",
        Condition::Poisoned,
        "lc",
    );
    let r = p.rate.unwrap();
    assert_eq!((r.k, r.n, r.rate), (2, 2, 1.0));
    // Wilson for 2/2: [0.3424, 1]
    assert!((r.low - 0.3424).abs() < 1e-3 && r.high == 1.0, "{r:?}");
    let lint = p.lint.as_ref().unwrap();
    assert_eq!(lint.coverage, "contradicted");
    let g = cell(
        "reverted-feature",
        "wrong-first-step",
        Condition::Good,
        "lc",
    );
    assert_eq!(g.lint.as_ref().unwrap().coverage, "covered");
    let good_lint = task_lint(&tasks, "reverted-feature", Condition::Good);
    assert_eq!(g.lint.as_ref().unwrap().score, good_lint);
    // the contrast with none is the difference of the rates and Fisher's p of their table
    let n = cell(
        "reverted-feature",
        "wrong-first-step",
        Condition::None,
        "lc",
    );
    assert!(n.contrast.is_none());
    let nr = n.rate.unwrap();
    let c = p.contrast.unwrap();
    assert!((c.difference - (1.0 - nr.rate)).abs() < 1e-12);
    let fisher = traps::stats::fisher_exact(2, 0, nr.k, nr.n - nr.k).p_value;
    assert!((c.p_value - fisher).abs() < 1e-12);
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(
        md.contains(
            "| reverted-feature | wrong-first-step | poisoned | lc | 2/2 = 1.00 [0.34, 1.00] | 0 |"
        ),
        "{md}"
    );
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(html.contains("<td>2/2 = 1.00 [0.34, 1.00]</td>"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap())
            .unwrap();
    assert_eq!(json["cells"].as_array().unwrap().len(), 72);
    let cost = rep
        .costs
        .iter()
        .find(|c| c.scenario == "descoped-admin-export" && c.condition == Condition::Bad)
        .unwrap();
    assert_eq!(cost.exits.get("submitted"), Some(&2));
    assert!(cost.steps_per_trial >= 6.0, "{cost:?}");

    // A rerun keeps every finished trial; one marked unfinished and one removed run again,
    // and come back the same (the policy's draws are the trial's).
    let again = experiment::run_experiment(&exp, out.path(), &RunOptions::default()).unwrap();
    assert_eq!((again.kept, again.ran), (48, 0));
    let mut edited = results.clone();
    edited.trials[5].finished = false;
    let removed = edited.trials.remove(30);
    let unfinished = edited.trials[5].id.clone();
    std::fs::write(
        out.path().join(experiment::RESULTS_FILE),
        serde_json::to_string(&edited).unwrap(),
    )
    .unwrap();
    let third = experiment::run_experiment(&exp, out.path(), &RunOptions::default()).unwrap();
    assert_eq!((third.kept, third.ran, third.unfinished), (46, 2, 0));
    let after = experiment::read_results(out.path()).unwrap();
    assert_eq!(after.trials.len(), 48);
    for id in [&removed.id, &unfinished] {
        let before = results.trials.iter().find(|t| &t.id == id).unwrap();
        let now = after.trials.iter().find(|t| &t.id == id).unwrap();
        // the verdicts (the probe's output names the agent's commits, dated now)
        let verdicts = |t: &experiment::TrialRecord| {
            t.outcomes
                .iter()
                .map(|o| (o.trap.clone(), o.outcome))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            (verdicts(now), &now.commands, now.steps, now.tokens),
            (
                verdicts(before),
                &before.commands,
                before.steps,
                before.tokens
            )
        );
    }

    // A trial without an answer counts apart, not as avoided.
    let mut partial = after.clone();
    let i = partial
        .trials
        .iter()
        .position(|t| {
            t.id.scenario == "reverted-feature"
                && t.id.condition == Condition::Poisoned
                && t.id.model == "lc"
        })
        .unwrap();
    partial.trials[i].finished = false;
    let rep = report::build(&partial);
    let p = rep
        .cells
        .iter()
        .find(|x| {
            x.scenario == "reverted-feature"
                && x.trap == "wrong-first-step"
                && x.condition == Condition::Poisoned
                && x.model == "lc"
        })
        .unwrap();
    assert_eq!((p.trials, p.no_answer, p.rate.unwrap().n), (2, 1, 1));
    assert!(report::markdown(&rep).contains("| 1/1 = 1.00 [0.21, 1.00] | 1 |"));
}

fn task_lint(tasks: &[traps::TrapTask], scenario: &str, c: Condition) -> u32 {
    let task = tasks.iter().find(|t| t.name() == scenario).unwrap();
    task.lint(c, Rubric::Baton).unwrap().unwrap().score
}

#[test]
fn issue_38_experiment_files_are_checked_before_anything_runs() {
    let path = std::path::Path::new("exp.toml");
    let models = "[models.lc]\nmodel = \"sim/lc\"\n";
    let base = format!("name = \"x\"\nhandover = \"h\"\n{models}");
    let exp = TrapExperiment::parse(path, &base).unwrap();
    assert_eq!(exp.trials, 3);
    assert_eq!(exp.condition_list(), Condition::ALL.to_vec());
    assert_eq!(exp.models["lc"].sim_settings().unwrap().skill, 0.45);
    let refined = format!("{base}[models.lc.sim]\nmalformed = 0.0\n");
    let s = TrapExperiment::parse(path, &refined).unwrap().models["lc"]
        .sim_settings()
        .unwrap();
    assert_eq!((s.skill, s.malformed), (0.45, 0.0));
    for (text, message) in [
        (
            format!("name = \"x\"\nhandover = \"h\"\nconditions = [\"ok\"]\n{models}"),
            "exp.toml: conditions: unknown condition \"ok\" (known: good, bad, poisoned, none)",
        ),
        (
            format!("name = \"x\"\nhandover = \"h\"\nscenarios = [\"nope\"]\n{models}"),
            "exp.toml: scenarios: unknown scenario \"nope\" (known: reverted-feature, failed-dependency-upgrade, descoped-admin-export)",
        ),
        (
            format!("name = \"x\"\nhandover = \"h\"\ntrials = 0\n{models}"),
            "exp.toml: trials: must be at least 1",
        ),
        (
            format!("name = \"x\"\nhandover = \"h\"\nbase_rate = 2.0\n{models}"),
            "exp.toml: base_rate: must be within 0..=1",
        ),
    ] {
        let err = TrapExperiment::parse(path, &text).unwrap_err().to_string();
        assert_eq!(err, format!("trap bench: {message}"));
    }
    let err = TrapExperiment::parse(
        path,
        &format!("name = \"x\"\nhandover = \"h\"\ntrails = 3\n{models}"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("unknown field `trails`"), "{err}");
    let err = TrapExperiment::parse(
        path,
        "name = \"x\"\nhandover = \"h\"\n[models.a]\nmodel = \"gpt\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("models.a.model: write it as provider/model-id"),
        "{err}"
    );
}

/// A model that is not `sim/…` goes through the caller's provider factory and the same
/// loop: here the simulated agent served over HTTP by the simulated server on
/// 127.0.0.1:0, spoken to as an OpenAI-compatible model, priced by the experiment's price
/// file. The documents that decide every trap (good, poisoned) give the same trials as the
/// agent in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_38_a_remote_model_runs_through_the_providers_factory() {
    let Some(handover) = handover_dir() else {
        return;
    };
    let tasks = traps::tasks(&handover.join("bench/scenarios")).unwrap();
    let docs = tasks
        .iter()
        .map(|t| t.document_task(0.5).unwrap())
        .collect();
    let settings = baton_agent::SimAgentSettings {
        malformed: 0.0,
        ..baton_agent::SimAgentSettings::preset("hc")
    };
    let agent = baton_agent::SimAgent::new(&[], BTreeMap::from([("hc".to_string(), settings)]))
        .unwrap()
        .with_document_tasks(docs)
        .unwrap();
    let mut config = baton_http::SimServerConfig::new(Vec::new());
    config.providers.insert(
        "hc".into(),
        baton_http::ServedProvider(std::sync::Arc::new(agent)),
    );
    let server = baton_http::serve(config).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prices.json"),
        r#"{"openai-compatible/hc": {"input_cost_per_token": 1e-06, "cache_read_input_token_cost": 5e-07, "output_cost_per_token": 2e-06}}"#,
    )
    .unwrap();
    let common = format!(
        "name = \"remote\"\nhandover = {:?}\ntrials = 1\nseed = 5\n\
         scenarios = [\"descoped-admin-export\", \"failed-dependency-upgrade\"]\n\
         conditions = [\"good\", \"poisoned\"]\nconcurrency = 2\nprices = \"prices.json\"\n",
        handover.display().to_string()
    );
    let remote = format!(
        "{common}[models.m]\nmodel = \"openai-compatible/hc\"\nbase_url = \"{}\"\n",
        server.base_url()
    );
    let local =
        format!("{common}[models.m]\nmodel = \"sim/hc\"\n[models.m.sim]\nmalformed = 0.0\n");
    let base = dir.path().to_path_buf();
    let run = move |text: String, name: &str| {
        let path = base.join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = base.join(name);
        let providers: Vec<std::sync::Arc<dyn baton_models::ProviderFactory>> =
            vec![std::sync::Arc::new(baton_http::HttpProviders::new(
                Duration::from_secs(30),
            ))];
        let options = RunOptions {
            providers,
            ..RunOptions::default()
        };
        let summary = experiment::run(&path, &out, &options).unwrap();
        let results = experiment::read_results(&out).unwrap();
        assert_eq!(
            (summary.ran, summary.unfinished),
            (4, 0),
            "{name}: {:?}",
            results.trials.iter().map(|t| &t.error).collect::<Vec<_>>()
        );
        results
    };
    let (remote, local) =
        tokio::task::spawn_blocking(move || (run(remote, "remote"), run(local, "local")))
            .await
            .unwrap();
    assert!(server.stats().requests > 0);
    for (r, l) in remote.trials.iter().zip(&local.trials) {
        assert_eq!(r.id, l.id);
        assert_eq!(r.exit, "submitted");
        let fell: Vec<Outcome> = r.outcomes.iter().map(|o| o.outcome).collect();
        let want = if r.id.condition == Condition::Good {
            Outcome::Clear
        } else {
            Outcome::FellIn
        };
        assert_eq!(fell, vec![want; 3], "{:?}", r.id);
        assert_eq!((&r.commands, r.steps), (&l.commands, l.steps), "{:?}", r.id);
        let t = r.tokens;
        let want_cost =
            (t.input - t.cached) as f64 * 1e-6 + t.cached as f64 * 5e-7 + t.output as f64 * 2e-6;
        assert!(
            r.tokens.input > 0 && (r.cost_usd - want_cost).abs() < 1e-9,
            "{r:?}"
        );
    }
}
