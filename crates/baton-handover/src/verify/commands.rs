//! Running the document's own commands: `verify_cmd` and the claims' checks, in the sandbox.

use super::{ClaimResult, ClaimRun, Class, Run, Status};
use crate::check;
use crate::claims;
use crate::git::Repo;
use crate::structure::Structure;

pub(super) fn verify_cmd(
    run: &mut Run<'_>,
    repo: &Repo,
    structure: &Structure,
    fabricated: bool,
) -> Status {
    let line = run.line("verify_cmd");
    let skip = if !structure.valid {
        Some("not run: the header is invalid".to_string())
    } else if fabricated {
        Some("not run: the anchor is not a commit of this repository".to_string())
    } else {
        None
    };
    let Some(cmd) = run.field("verify_cmd").map(str::to_string) else {
        run.add("verify_cmd", Status::Skip, "no verify_cmd".into(), line);
        return Status::Skip;
    };
    if let Some(why) = skip {
        run.add("verify_cmd", Status::Skip, why, line);
        return Status::Skip;
    }
    let not_run = |run: &mut Run<'_>, why: String| {
        let detail = format!("`{cmd}` was not run: {why}");
        let status = run.not_run_status(format!("verify_cmd (L{}): {why}", line.unwrap_or(0)));
        run.add("verify_cmd", status, detail, line);
        Status::Skip
    };
    if !run.opts.sandbox.allow_destructive
        && let Some(why) = check::destructive(&cmd)
    {
        return not_run(
            run,
            format!("{why} (pass --allow-destructive to run it in the sandbox)"),
        );
    }
    let Some(timeout) = run.budget(run.opts.verify_timeout) else {
        return not_run(run, "the total time limit ran out".into());
    };
    let result = match run.now_tree(repo) {
        Ok(tree) => tree.run(&cmd, timeout),
        Err(why) => return not_run(run, why),
    };
    let secs = result.elapsed.as_secs_f64();
    let (status, detail) = if result.success() {
        (Status::Ok, format!("`{cmd}` passed in {secs:.1} s"))
    } else {
        (
            Status::Fail,
            format!("`{cmd}` failed after {secs:.1} s:\n{}", result.tail()),
        )
    };
    run.add("verify_cmd", status, detail, line);
    status
}

/// Why a claim is not run: the header is invalid or the anchor fabricated.
fn not_run_claims(claims: Vec<claims::Claim>, why: &str) -> Vec<ClaimResult> {
    claims
        .into_iter()
        .map(|c| ClaimResult {
            line: c.line,
            label: c.label,
            command: c.command,
            at_anchor: ClaimRun::not_run(why),
            now: ClaimRun::not_run(why),
        })
        .collect()
}

pub(super) fn run_claims(
    run: &mut Run<'_>,
    repo: &Repo,
    structure: &Structure,
    anchor: Option<&str>,
    fabricated: bool,
) -> Vec<ClaimResult> {
    let (claims, over) = claims::claims(&run.doc.body);
    if !structure.valid || fabricated {
        let why = if fabricated {
            "not run: the anchor is not a commit of this repository"
        } else {
            "not run: the header is invalid"
        };
        run.add("claims", Status::Skip, why.into(), None);
        return not_run_claims(claims.into_iter().chain(over).collect(), why);
    }
    if claims.is_empty() {
        run.add(
            "claims",
            Status::Warn,
            "no claim with a check to run (a table whose last column is `Verify`, outside code blocks)".into(),
            None,
        );
        return Vec::new();
    }
    if let Err(why) = run.sandbox() {
        run.add("claims", Status::Fail, format!("not run: {why}"), None);
        return not_run_claims(
            claims.into_iter().chain(over).collect(),
            &format!("not run: {why}"),
        );
    }
    let own = run.opts.claim_timeout;
    let allow_destructive = run.opts.sandbox.allow_destructive;
    let deadline = run.deadline;
    let budget = move || {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        (!left.is_zero()).then(|| own.min(left))
    };
    let out_of_time = || ClaimRun::not_run("not run: the total time limit ran out");
    // Why each claim is skipped, if it is.
    let skipped: Vec<Option<String>> = claims
        .iter()
        .map(|c| {
            check::destructive(&c.command)
                .filter(|_| !allow_destructive)
                .map(|why| {
                    format!("skipped: {why} (pass --allow-destructive to run it in the sandbox)")
                })
        })
        .collect();
    // The current tree first (verify_cmd usually made it already), then the anchor's runs in a
    // second thread, on their own tree, while the current tree's run here: the two trees share
    // nothing, and each run is mostly waiting for a sandbox to start.
    let now_error = run
        .now_tree(repo)
        .err()
        .map(|why| format!("not run: {why}"));
    let mut now_slot = run.now.take();
    let Some(Ok(sandbox)) = run.sandbox.as_ref() else {
        unreachable!("the sandbox was checked above")
    };
    let (thens, nows) = std::thread::scope(|scope| {
        let anchor_runs = scope.spawn(|| {
            let tree = match anchor {
                Some(a) => sandbox
                    .tree(repo, Some(a))
                    .map_err(|e| format!("not run at the anchor: {e}")),
                None => Err("not run: no anchor commit (true_at_sha is not a commit)".to_string()),
            };
            let mut tree = tree;
            claims
                .iter()
                .zip(&skipped)
                .map(|(c, skip)| match (skip, &mut tree, budget()) {
                    (Some(why), _, _) => ClaimRun::not_run(why.clone()),
                    (None, _, None) => out_of_time(),
                    (None, Ok(tree), Some(t)) => ClaimRun::at_anchor(&tree.run(&c.command, t)),
                    (None, Err(why), _) => ClaimRun::not_run(why.clone()),
                })
                .collect::<Vec<_>>()
        });
        let nows: Vec<ClaimRun> = claims
            .iter()
            .zip(&skipped)
            .map(|(c, skip)| match (skip, &mut now_slot, budget()) {
                (Some(why), _, _) => ClaimRun::not_run(why.clone()),
                (None, _, None) => out_of_time(),
                (None, Some(Ok(tree)), Some(t)) => ClaimRun::now(&tree.run(&c.command, t)),
                (None, _, _) => ClaimRun::not_run(
                    now_error
                        .clone()
                        .unwrap_or_else(|| "not run: no sandbox".into()),
                ),
            })
            .collect();
        let thens = anchor_runs.join().unwrap_or_else(|_| {
            claims
                .iter()
                .map(|_| ClaimRun::not_run("not run: the anchor's runs stopped"))
                .collect()
        });
        (thens, nows)
    });
    run.now = now_slot;
    let mut results = Vec::new();
    for ((c, then), now) in claims.into_iter().zip(thens).zip(nows) {
        results.push(ClaimResult {
            line: c.line,
            label: c.label,
            command: c.command,
            at_anchor: then,
            now,
        });
    }
    let over_cap = over.len();
    let cap = format!(
        "not run: over the cap of {} claims per document",
        claims::MAX_CLAIMS
    );
    results.extend(over.into_iter().map(|c| ClaimResult {
        line: c.line,
        label: c.label,
        command: c.command,
        at_anchor: ClaimRun::not_run(cap.clone()),
        now: ClaimRun::not_run(cap.clone()),
    }));
    let count = |class: Class| results.iter().filter(|r| r.class() == class).count();
    let (held, broken, never, fails_now, unknown, not_run) = (
        count(Class::HeldAndHolds),
        count(Class::HeldNowBroken),
        count(Class::NeverHeld),
        count(Class::FailsNow),
        count(Class::CannotTell),
        count(Class::NotRun),
    );
    let mut unverified_status = Status::Ok;
    for r in results.iter().filter(|r| r.class() == Class::NotRun) {
        let what = format!("claim \"{}\" (L{}): {}", r.label, r.line, r.now.tail);
        unverified_status = run.not_run_status(what);
    }
    let status = if broken + never + fails_now > 0 || unverified_status == Status::Fail {
        Status::Fail
    } else if unknown + not_run > 0 {
        Status::Warn
    } else {
        Status::Ok
    };
    let extra = if over_cap > 0 {
        format!(
            "; {over_cap} claim(s) past the cap of {} were not run",
            claims::MAX_CLAIMS
        )
    } else {
        String::new()
    };
    run.add(
        "claims",
        status,
        format!("{} claim(s): {held} held-and-holds, {broken} held-now-broken, {never} never-held, {fails_now} fails-now, {unknown} cannot-tell, {not_run} not-run{extra}", results.len()),
        None,
    );
    results
}
