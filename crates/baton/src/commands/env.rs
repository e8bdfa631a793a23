//! `baton env check`, `baton env exec`, `baton env check-tasks` and `baton env clean`.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use baton_agent::{LocalScorer, TaskFormat, load_dataset};
use baton_env::{BackendKind, EnvConfig, Exec, Setup};

use crate::Outcome;
use crate::cli::{EnvArgs, EnvBackend, EnvCommand};
use crate::printer::Printer;

pub fn env(cmd: EnvCommand, printer: &Printer) -> Result<Outcome> {
    match cmd {
        EnvCommand::Check(args) => check(&config(&args), printer),
        EnvCommand::Exec {
            tree,
            command,
            timeout,
            env,
        } => {
            let config = config(&env);
            let mut sandbox =
                baton_env::start(&config, &Setup::tree(&tree)).with_context(|| {
                    format!(
                        "starting a {} sandbox on a copy of {}",
                        config.backend,
                        tree.display()
                    )
                })?;
            let timeout = Duration::try_from_secs_f64(timeout)
                .context("--timeout must be a positive number of seconds")?;
            let out = sandbox.exec(&Exec::new(shell_line(&command)).timeout(timeout))?;
            sandbox.close()?;
            printer.out(&out.output.text())?;
            printer.error(&format!(
                "{} after {:.1} ms ({} bytes of output{})",
                out.status,
                out.duration.as_secs_f64() * 1e3,
                out.output.total_bytes,
                if out.output.is_truncated() {
                    format!(", {} omitted", out.output.omitted_bytes)
                } else {
                    String::new()
                }
            ));
            Ok(Outcome::Success)
        }
        EnvCommand::CheckTasks {
            dataset,
            jobs,
            swebench_python,
            env,
        } => check_tasks(&dataset, jobs, swebench_python, &config(&env), printer),
        EnvCommand::Clean { results, env } => clean(&results, &config(&env), printer),
    }
}

/// Remove the containers of the run in `results` (found by the run's label).
fn clean(results: &Path, config: &EnvConfig, printer: &Printer) -> Result<Outcome> {
    if !results.is_dir() {
        bail!("{} is not a results folder", results.display());
    }
    let mut config = config.clone();
    config.run_label = Some(baton_env::run_label(results));
    let removed = baton_env::remove_run_containers(&config).with_context(|| {
        format!(
            "removing the containers of the run in {} (docker client {})",
            results.display(),
            config.docker.executable.display()
        )
    })?;
    printer.line(&format!(
        "removed {} container(s) of the run in {}",
        removed.len(),
        results.display()
    ))?;
    Ok(Outcome::Success)
}

/// The shell line that runs `command` in the sandbox: one word is a shell string, as the
/// agent's own commands are; several words are an argv, each word quoted and the program
/// `exec`ed, so no word is split, expanded or re-parsed (`python3 -c "print(1)"`).
fn shell_line(command: &[String]) -> String {
    match command {
        [line] => line.clone(),
        words => {
            let quoted: Vec<String> = words
                .iter()
                .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
                .collect();
            format!("exec {}", quoted.join(" "))
        }
    }
}

fn config(args: &EnvArgs) -> EnvConfig {
    let backend = match args.backend {
        EnvBackend::Bwrap => BackendKind::Bwrap,
        EnvBackend::Docker => BackendKind::Docker,
        EnvBackend::Local => BackendKind::Local,
    };
    let mut config = EnvConfig::for_backend(backend);
    if let Some(p) = &args.bwrap {
        config.bwrap.executable = p.clone();
    }
    if let Some(p) = &args.docker {
        config.docker.executable = p.clone();
    }
    config.docker.default_image = args.docker_image.clone();
    config
}

fn check(config: &EnvConfig, printer: &Printer) -> Result<Outcome> {
    let report = baton_env::check(config);
    printer.out(&report.to_string())?;
    if !report.passed() {
        let fixes: Vec<String> = report
            .failures()
            .map(|i| {
                format!(
                    "{}: {} (fix: {})",
                    i.name,
                    i.detail,
                    i.fix.as_deref().unwrap_or("-")
                )
            })
            .collect();
        bail!(
            "the {} backend cannot run agent tasks on this machine:\n  {}",
            config.backend,
            fixes.join("\n  ")
        );
    }
    Ok(Outcome::Success)
}

fn check_tasks(
    dataset: &str,
    jobs: Option<usize>,
    swebench_python: Option<std::path::PathBuf>,
    config: &EnvConfig,
    printer: &Printer,
) -> Result<Outcome> {
    let ds = load_dataset(dataset)?;
    if ds.format == TaskFormat::SweBench {
        return check_swebench(dataset, &ds.tasks, swebench_python, config, printer);
    }
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    printer.error(&format!(
        "checking {} tasks of {dataset} in the {} sandbox ({jobs} at a time)",
        ds.tasks.len(),
        config.backend
    ));
    let report =
        baton_agent::check_tasks(dataset, &ds.tasks, &LocalScorer::new(config.clone()), jobs)?;
    printer.out(&report.to_string())?;
    Ok(if report.all_good() {
        Outcome::Success
    } else {
        Outcome::Partial
    })
}

fn check_swebench(
    dataset: &str,
    tasks: &[baton_agent::AgentTask],
    python: Option<std::path::PathBuf>,
    config: &EnvConfig,
    printer: &Printer,
) -> Result<Outcome> {
    let n = tasks.len();
    let Some(python) = python else {
        printer.line(&format!(
            "{n} tasks: valid SWE-bench instances; unchanged fail not checked, reference pass not checked \
             (gold patches are checked by the official harness: pass --swebench-python with swebench {} \
             installed, and Docker)",
            baton_agent::SWEBENCH_VERSION
        ))?;
        return Ok(Outcome::Success);
    };
    let harness = baton_agent::SweBenchHarness::new(python, dataset, "results/swebench");
    let predictions: Vec<baton_agent::Prediction> = tasks
        .iter()
        .map(|t| {
            Ok(baton_agent::Prediction {
                instance_id: t.id.clone(),
                patch: t.reference_patch()?.unwrap_or_default(),
            })
        })
        .collect::<Result<_, baton_agent::AgentError>>()?;
    if !harness.pending(&predictions).is_empty() {
        // the harness runs every instance's tests in Docker: ask before starting it
        baton_env::docker_preflight(&config.docker.executable).with_context(|| {
            format!("the gold patches of {dataset} are checked by the SWE-bench harness, which needs Docker")
        })?;
    }
    let verdicts = harness.evaluate(&predictions)?;
    let passed = verdicts
        .iter()
        .filter(|v| v.status == baton_agent::HarnessStatus::Resolved)
        .count();
    printer.line(&format!(
        "{n} tasks: unchanged fail not checked (the harness does not run an empty patch), reference pass {passed}/{n}"
    ))?;
    for v in verdicts
        .iter()
        .filter(|v| v.status != baton_agent::HarnessStatus::Resolved)
    {
        printer.line(&format!(
            "  {}: {:?}{}",
            v.instance_id,
            v.status,
            v.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ))?;
    }
    Ok(if passed == n {
        Outcome::Success
    } else {
        Outcome::Partial
    })
}
