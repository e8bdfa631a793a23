//! `baton handoff lint|bench|write|traps`: handoff documents (and agent instruction files),
//! scored and verified, scaffolded from git state, and Handover's trap bench run by agents
//! (see `baton-handover`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use baton_handover::bench::{self, Coverage};
use baton_handover::input::{self, Input};
use baton_handover::redact::redact;
use baton_handover::report::terminal_safe;
use baton_handover::sandbox::{Isolation, Sandbox, SandboxOptions};
use baton_handover::traps::{experiment, report as trap_report};
use baton_handover::verify::{self, Class, Level, Status};
use baton_handover::{Linted, Policy, Rubric, Severity, report};

use crate::Outcome;
use crate::cli::{
    HandoffBenchArgs, HandoffCommand, HandoffLintArgs, HandoffRubric, HandoffTrapsCommand,
    HandoffTrapsReportArgs, HandoffTrapsRunArgs, HandoffWriteArgs,
};
use crate::printer::Printer;

pub fn handoff(cmd: HandoffCommand, printer: &Printer) -> Result<Outcome> {
    match cmd {
        HandoffCommand::Lint(args) => lint(args, printer),
        HandoffCommand::Bench(args) => bench(args, printer),
        HandoffCommand::Write(args) => write(args, printer),
        HandoffCommand::Traps(HandoffTrapsCommand::Run(args)) => traps_run(args, printer),
        HandoffCommand::Traps(HandoffTrapsCommand::Report(args)) => traps_report(args, printer),
    }
}

/// `baton handoff traps run`: every planned trial not finished in `OUT/results.json` with
/// its identity unchanged, under `OUT`'s lock (a second run on `OUT` is refused), then the
/// reports. What changed since the stored run is printed before any trial.
fn traps_run(args: HandoffTrapsRunArgs, printer: &Printer) -> Result<Outcome> {
    let http: std::sync::Arc<dyn baton_models::ProviderFactory> =
        std::sync::Arc::new(baton_http::HttpProviders::new(baton_http::DEFAULT_TIMEOUT));
    let options = experiment::RunOptions {
        providers: vec![http],
        on_trial: Some(Box::new(|t: &experiment::TrialRecord| {
            let line = format!(
                "{} {} {} #{}: {} ({} steps, ${:.4})",
                t.id.scenario, t.id.condition, t.id.model, t.id.trial, t.exit, t.steps, t.cost_usd
            );
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        })),
        // what is kept, new and re-run (and why), before any trial runs
        on_changes: Some(Box::new(|c: &baton_handover::traps::identity::Changes| {
            let _ = write!(std::io::stderr().lock(), "{c}");
        })),
    };
    let summary = experiment::run(&args.experiment, &args.out, &options)
        .with_context(|| args.experiment.display().to_string())?;
    let (report, files) = trap_report::write(&args.out)?;
    printer.out(&trap_report::markdown(&report))?;
    printer.error(&format!(
        "{} trials planned, {} kept from an earlier run, {} run now ({} unfinished); {}",
        summary.planned,
        summary.kept,
        summary.ran,
        summary.unfinished,
        written(&files)
    ));
    Ok(if summary.unfinished == 0 {
        Outcome::Success
    } else {
        Outcome::Partial
    })
}

/// `baton handoff traps report`: the reports of a run's folder.
fn traps_report(args: HandoffTrapsReportArgs, printer: &Printer) -> Result<Outcome> {
    let (report, files) = trap_report::write(&args.dir)?;
    printer.out(&trap_report::markdown(&report))?;
    printer.error(&written(&files));
    Ok(Outcome::Success)
}

/// "wrote a, b, c".
fn written(files: &[PathBuf]) -> String {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    format!("wrote {}", names.join(", "))
}

/// `.baton-handoff.toml`: rules turned off.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Rule ids whose findings are dropped (`header-date`, `negative-knowledge`, …).
    #[serde(default)]
    disable: Vec<String>,
}

/// The name of the config file looked for at the top of the repository.
const CONFIG_FILE: &str = ".baton-handoff.toml";

/// The config named with `--config`, else the repository's `.baton-handoff.toml`, else none.
fn config(named: Option<&Path>, cwd: &Path) -> Result<Config> {
    let path = match named {
        Some(p) => p.to_path_buf(),
        None => match baton_handover::git::Repo::discover(cwd) {
            Some(repo) if repo.root.join(CONFIG_FILE).is_file() => repo.root.join(CONFIG_FILE),
            _ => return Ok(Config::default()),
        },
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the config file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("config file {} is not valid", path.display()))
}

/// Drop the findings of disabled rules; a document invalid only through them becomes valid.
fn apply(config: &Config, l: &mut Linted) {
    if config.disable.is_empty() {
        return;
    }
    let s = &mut l.structure;
    let before = s.findings.iter().any(|f| f.severity == Severity::Error);
    s.findings
        .retain(|f| !config.disable.iter().any(|d| d == f.rule));
    let after = s.findings.iter().any(|f| f.severity == Severity::Error);
    if before && !after && !s.valid {
        s.valid = true;
        if l.verification.verdict == verify::Verdict::InvalidHeader {
            l.verification.verdict = verify::Verdict::UnverifiedNoRepo;
        }
    }
}

fn rubric(r: HandoffRubric) -> Rubric {
    match r {
        HandoffRubric::Baton => Rubric::Baton,
        HandoffRubric::Handover04 => Rubric::Handover04,
    }
}

/// Read every document (bounded, regular files only, see `baton_handover::input`); one error
/// names every file that could not be read.
fn read_all(files: &[PathBuf]) -> Result<Vec<Input>> {
    let mut texts = Vec::new();
    let mut errors = Vec::new();
    for path in files {
        match input::read(path) {
            Ok(t) => texts.push(t),
            Err(e) => {
                let mut msg = format!("{e:#}: {}", source_of(&e));
                if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > input::MAX_BYTES)
                {
                    msg.push_str(" (a deliberate difference from Handover 0.4.1, which lints documents of any size)");
                }
                errors.push(terminal_safe(&msg))
            }
        }
    }
    if !errors.is_empty() {
        bail!("{}", errors.join("\n"));
    }
    Ok(texts)
}

fn source_of(e: &baton_handover::Error) -> String {
    use std::error::Error as _;
    e.source()
        .map(|s| s.to_string())
        .unwrap_or_else(|| "refused".into())
}

fn lint(mut args: HandoffLintArgs, printer: &Printer) -> Result<Outcome> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    let config = config(args.config.as_deref(), &cwd)?;
    if let Some(base) = &args.changed {
        let changed =
            baton_handover::changed::documents(&cwd, base).map_err(|e| anyhow::anyhow!(e))?;
        if changed.is_empty() && args.files.is_empty() {
            printer.line(&format!(
                "no handoff document or agent file changed since {base}"
            ))?;
            return Ok(Outcome::Success);
        }
        args.files.extend(changed);
    }
    let texts = read_all(&args.files)?;
    let level = if args.claims {
        Some(Level::Claims)
    } else if args.verify {
        Some(Level::Verify)
    } else if args.repo {
        Some(Level::Repo)
    } else {
        None
    };
    let sandbox = SandboxOptions {
        isolation: if args.no_sandbox {
            Isolation::Host
        } else {
            Isolation::Sandbox
        },
        allow_network: args.allow_network,
        allow_destructive: args.allow_destructive,
        total_timeout: Duration::from_secs(args.total_timeout),
        include: args.include.clone(),
    };
    let options = match level {
        Some(level) => Some(verify::Options {
            level,
            claim_timeout: Duration::from_secs(args.claim_timeout),
            verify_timeout: Duration::from_secs(args.verify_timeout),
            today: verify::today(),
            cwd: cwd.clone(),
            sandbox: sandbox.clone(),
            allow_unverified: args.allow_unverified,
        }),
        None => None,
    };
    if level.is_some_and(|l| l >= Level::Verify) {
        // A sandbox that cannot run is the machine's problem, not the document's: say so
        // before anything runs.
        Sandbox::new(&sandbox)
            .map_err(|e| anyhow::anyhow!("cannot run the documents' commands: {e}"))?;
        end_checks_on_interrupt();
    }
    let rubric = rubric(args.rubric);
    let linted: Vec<Linted> = args
        .files
        .iter()
        .zip(&texts)
        .map(|(path, input)| {
            let mut l = if baton_handover::agents::is_agent_file(path) {
                baton_handover::agents::lint(&input.text, path, rubric, options.as_ref())
            } else {
                baton_handover::lint(&input.text, path, rubric, options.as_ref())
            };
            if let Some(f) = &input.finding {
                l.structure.findings.insert(0, f.clone());
            }
            if rubric == Rubric::Handover04 {
                let utf16 = input
                    .finding
                    .as_ref()
                    .is_some_and(|f| f.message.contains("UTF-16"));
                l.structure
                    .findings
                    .extend(baton_handover::rubric::compat::differences(
                        &input.text,
                        utf16,
                    ));
            }
            apply(&config, &mut l);
            l
        })
        .collect();
    let policy = Policy {
        min: args.min,
        strict: args.strict,
    };
    let paths: Vec<String> = args.files.iter().map(|p| p.display().to_string()).collect();
    let reports: Vec<report::Report<'_>> = paths
        .iter()
        .zip(&linted)
        .map(|(path, l)| report::Report {
            path,
            structure: &l.structure,
            verification: &l.verification,
        })
        .collect();
    if args.json {
        printer.line(&serde_json::to_string_pretty(&report::json(&reports))?)?;
    } else if args.sarif {
        let log = report::sarif(&reports, env!("CARGO_PKG_VERSION"));
        printer.line(&serde_json::to_string_pretty(&log)?)?;
    } else {
        for (path, l) in paths.iter().zip(&linted) {
            // The first line is baton's own (path, score, rubric): a score is never redacted.
            let text = text_report(path, l, policy, level.is_some());
            let (head, rest) = text.split_once('\n').unwrap_or((&text, ""));
            printer.out(&terminal_safe(&format!("{head}\n{}", redact(rest))))?;
        }
    }
    let failed = linted
        .iter()
        .filter(|l| !l.failures(policy).is_empty())
        .count();
    if paths.len() > 1 && !args.json && !args.sarif {
        printer.line(&format!(
            "{} documents: {} passed, {failed} failed",
            paths.len(),
            paths.len() - failed
        ))?;
    }
    Ok(if failed > 0 {
        Outcome::Partial
    } else {
        Outcome::Success
    })
}

/// Checks run in their own process groups, which Ctrl-C does not reach: on Ctrl-C, end them,
/// remove the sandbox copies, then exit 130 (no git worktree is ever registered, so none is
/// left behind).
fn end_checks_on_interrupt() {
    let (ready, registered) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        let signal = rt.block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        });
        let _ = ready.send(());
        if let Ok(mut signal) = signal
            && rt.block_on(signal.recv()).is_some()
        {
            baton_handover::exec::kill_running();
            baton_handover::sandbox::remove_scratch();
            std::process::exit(130);
        }
    });
    // Checks start only once the handler is in place.
    let _ = registered.recv_timeout(std::time::Duration::from_secs(5));
}

fn indent(text: &str, by: &str) -> String {
    text.lines()
        .map(|l| format!("{by}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The report for people.
fn text_report(path: &str, l: &Linted, policy: Policy, verified: bool) -> String {
    let s = &l.structure;
    let max = s.rubric.maxima();
    let mut out = format!(
        "{path}: {}/100 ({} rubric), {}\n",
        s.score,
        s.rubric,
        if s.valid { "valid" } else { "INVALID" }
    );
    out.push_str(&format!(
        "  header {}/{} · negative knowledge {}/{} · sections {}/{} · self-containment {}/{} · prose {}/{}\n",
        s.subscores.header,
        max.header,
        s.subscores.negative,
        max.negative,
        s.subscores.sections,
        max.sections,
        s.subscores.self_containment,
        max.self_containment,
        s.subscores.prose,
        max.prose
    ));
    let mut findings: Vec<_> = s.findings.iter().collect();
    findings.sort_by_key(|f| (f.severity, f.line.unwrap_or(0)));
    for f in findings {
        let line = f.line.map(|n| format!("L{n}")).unwrap_or_default();
        let sev = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warn",
            Severity::Note => "note",
        };
        out.push_str(&format!("  {sev:<5} {line:<5} {}: {}\n", f.rule, f.message));
    }
    let v = &l.verification;
    let hint = if verified {
        ""
    } else {
        " (pass --repo, --verify or --claims to check against the repository)"
    };
    out.push_str(&format!("  verification: {}{hint}\n", v.verdict));
    for c in &v.checks {
        let line = c.line.map(|n| format!(" (L{n})")).unwrap_or_default();
        let mark = match c.status {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        };
        let mut detail = c.detail.lines();
        out.push_str(&format!(
            "    {mark:<4} {}{line}: {}\n",
            c.name,
            detail.next().unwrap_or("")
        ));
        let rest: Vec<&str> = detail.collect();
        if !rest.is_empty() {
            out.push_str(&indent(&rest.join("\n"), "         | "));
            out.push('\n');
        }
    }
    for c in &v.claims {
        let class = c.class();
        out.push_str(&format!(
            "    {:<15} L{} \"{}\": `{}` (at the anchor: {}, now: {})\n",
            class.to_string(),
            c.line,
            c.label,
            c.command,
            status(c.at_anchor.status),
            status(c.now.status)
        ));
        if class != Class::HeldAndHolds {
            let tail = c.output_tail();
            if !tail.is_empty() {
                out.push_str(&indent(&tail, "         | "));
                out.push('\n');
            }
        }
    }
    for u in &v.unverified {
        out.push_str(&format!(
            "    passed unverified (--allow-unverified): {u}\n"
        ));
    }
    let failures = l.failures(policy);
    if failures.is_empty() {
        out.push_str("  result: pass\n");
    } else {
        out.push_str(&format!("  result: FAIL ({})\n", failures.join("; ")));
    }
    out
}

/// `baton handoff write`: the scaffold for the repository holding the current folder.
fn write(args: HandoffWriteArgs, printer: &Printer) -> Result<Outcome> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    let repo = baton_handover::git::Repo::discover(&cwd)
        .with_context(|| format!("{} is not inside a git repository", cwd.display()))?;
    let sandbox = SandboxOptions {
        isolation: if args.no_sandbox {
            Isolation::Host
        } else {
            Isolation::Sandbox
        },
        ..SandboxOptions::default()
    };
    let written = baton_handover::write::write(&repo, &sandbox, verify::today())
        .map_err(|e| anyhow::anyhow!("cannot write the handoff: {e}"))?;
    let text = redact(&written.text).into_owned();
    match &args.out {
        Some(out) => {
            std::fs::write(out, &text)
                .with_context(|| format!("cannot write {}", out.display()))?;
            let test = match &written.test_command {
                Some(cmd) => format!("verify_cmd: `{cmd}` (passed in the sandbox)"),
                None => {
                    "no test command passed in the sandbox; verify_cmd checks the anchor".into()
                }
            };
            printer.line(&terminal_safe(&format!("wrote {}: {test}", out.display())))?;
            for (cmd, why) in &written.rejected {
                printer.line(&terminal_safe(&format!(
                    "  `{cmd}` was found but did not pass: {why}"
                )))?;
            }
        }
        None => printer.out(&terminal_safe(&text))?,
    }
    Ok(Outcome::Success)
}

fn status(s: verify::ClaimStatus) -> &'static str {
    match s {
        verify::ClaimStatus::Holds => "holds",
        verify::ClaimStatus::Fails => "fails",
        verify::ClaimStatus::NotRun => "not run",
    }
}

fn bench(args: HandoffBenchArgs, printer: &Printer) -> Result<Outcome> {
    if !args.scenarios.exists() {
        bail!(
            "no scenarios at {} (pass a scenario folder, or a folder of them such as a Handover checkout's bench/scenarios)",
            args.scenarios.display()
        );
    }
    let scenarios = bench::load(&args.scenarios)?;
    let rubric = rubric(args.rubric);
    let mut json = Vec::new();
    for scenario in &scenarios {
        let results = bench::run(scenario, rubric)?;
        if args.json {
            json.push(serde_json::json!({
                "name": scenario.name,
                "traps": scenario.traps.iter().map(|t| serde_json::json!({"id": t.id, "kind": t.kind})).collect::<Vec<_>>(),
                "documents": results,
            }));
            continue;
        }
        printer.out(&bench_text(scenario, &results, rubric))?;
    }
    if args.json {
        let out = serde_json::json!({"schema": 1, "rubric": rubric.to_string(), "scenarios": json});
        printer.line(&serde_json::to_string_pretty(&out)?)?;
    }
    Ok(Outcome::Success)
}

fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

fn bench_text(
    scenario: &bench::Scenario,
    results: &[bench::DocumentResult],
    rubric: Rubric,
) -> String {
    let n = scenario.traps.len();
    let mut rows = vec![[
        "document".to_string(),
        format!("lint ({rubric})"),
        "valid".into(),
        "covered".into(),
        "raw match".into(),
        "quality".into(),
    ]];
    for r in results {
        rows.push([
            name(&r.path),
            format!("{}/100", r.score),
            if r.valid { "yes" } else { "no" }.into(),
            format!("{}/{n}", r.covered),
            format!("{}/{n}", r.naive),
            format!("{}/100", r.quality),
        ]);
    }
    rows.push([
        "(no document)".into(),
        "0/100".into(),
        "no".into(),
        format!("0/{n}"),
        format!("0/{n}"),
        "0/100".into(),
    ]);
    let widths: Vec<usize> = (0..6)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!("scenario {} ({n} traps)\n", scenario.name);
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(&format!("  {}\n", cells.join("  ").trim_end()));
    }
    for r in results {
        for t in &r.traps {
            let mark = match t.coverage {
                Coverage::Covered => "covered",
                Coverage::Contradicted => "CONTRADICTED",
                Coverage::Missing => "missing",
            };
            let at = t.line.map(|l| format!(" L{l}")).unwrap_or_default();
            out.push_str(&format!("  {}: {mark:<12} {}{at}", name(&r.path), t.id));
            if t.coverage == Coverage::Contradicted {
                out.push_str(&format!(" (names the trap and says: \"{}\")", t.evidence));
            }
            out.push('\n');
        }
    }
    out
}
