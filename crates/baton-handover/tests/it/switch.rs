//! The handoff document at an agent study's switch: the working tree in the sandbox is
//! committed, and the document is linted with its claims checked at that commit.
//
// See: issue 38 (`issues show 38`), part 3.

use std::time::Duration;

use baton_env::{BackendKind, EnvConfig, Exec, Setup};
use baton_handover::switch::{self, SwitchLint};
use baton_handover::verify::{Class, Verdict};
use baton_handover::{Document, Rubric};

use crate::support::git;

#[test]
fn issue_38_the_switch_commits_the_tree_and_checks_the_claims_there() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("a.txt"), "one\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "start"]);
    let start = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();

    let mut config = EnvConfig::for_backend(BackendKind::Bwrap);
    config.limits.timeout_secs = 60.0;
    let mut env = baton_env::start(&config, &Setup::tree(&repo)).unwrap();
    let sh = |env: &mut Box<dyn baton_env::Environment>, c: &str| {
        let out = env.exec(&Exec::new(c)).unwrap();
        assert!(out.status.success(), "{c}: {}", out.output.text());
        out.output.text()
    };
    // the prefix model's work: an edit and an untracked file
    sh(&mut env, "sed -i s/one/uno/ a.txt && echo two > b.txt");
    let sha = switch::commit_at_switch(env.as_mut()).unwrap();
    assert_eq!(sha.len(), 40);
    assert_ne!(sha, start);
    assert_eq!(sh(&mut env, "git rev-parse HEAD").trim(), sha);
    assert_eq!(sh(&mut env, "git rev-parse HEAD~1").trim(), start);
    assert_eq!(sh(&mut env, "git status --porcelain"), "");
    assert_eq!(
        sh(&mut env, "git show --name-only --format= HEAD"),
        "a.txt\nb.txt\n"
    );

    let date = baton_handover::verify::today().to_string();
    let request = switch::handover_request(&sha, &date);
    assert!(
        request.contains(&format!("true_at_sha: {sha}\n")),
        "{request}"
    );
    assert!(request.contains(&format!("iso_date: {date}\n")));
    assert!(request.contains("| Claim | Verify |"));

    let document = format!(
        "---\nhandoff: switch-test\niso_date: {date}\ntrue_at_sha: {sha}\nshape: handoff\n\
         first_action: Run `test -f b.txt` first.\nverify_cmd: test -f b.txt\nstatus: in_progress\n---\n\n\
         # Handover: switch test\n\n## Current state as verifiable claims\n| Claim | Verify |\n|---|---|\n\
         | b.txt was added | `test -f b.txt` |\n| a.txt still says one | `grep -q one a.txt` |\n\n\
         ## Negative knowledge\n- **Tried and failed:** Keeping `one` in a.txt: the task wants `uno`.\n\n\
         ## Next action\n1. Run `test -f b.txt` first.\n"
    );
    let lint = switch::lint_at_switch(
        env.as_mut(),
        &document,
        Rubric::Baton,
        Duration::from_secs(30),
    )
    .unwrap();
    let structure = Rubric::Baton.score(&Document::parse(&document));
    let SwitchLint {
        rubric,
        score,
        valid,
        verdict,
        claims,
    } = lint;
    assert_eq!(
        (rubric.as_str(), score, valid),
        ("baton", structure.score, structure.valid)
    );
    assert!(valid, "{:?}", structure.findings);
    let classes: Vec<(&str, Class)> = claims.iter().map(|c| (c.label.as_str(), c.class)).collect();
    assert_eq!(
        classes,
        [
            ("b.txt was added", Class::HeldAndHolds),
            ("a.txt still says one", Class::NeverHeld)
        ]
    );
    assert_eq!(verdict, Verdict::Failed);
    // the sandbox is as it was: nothing was written into it
    assert_eq!(sh(&mut env, "git status --porcelain"), "");

    // The simulated agent, asked with the request, writes a document whose claims hold
    // at the commit: that each file it read exists.
    let task = baton_agent::DocumentTask {
        id: "fix-a".into(),
        instruction: "Fix a.txt.".into(),
        document: "HANDOVER.md".into(),
        traps: Vec::new(),
        base_rate: 0.5,
        reader: std::sync::Arc::new(NoReader),
    };
    let settings = baton_agent::SimAgentSettings {
        malformed: 0.0,
        ..Default::default()
    };
    let agent = baton_agent::SimAgent::new(&[], [("m".to_string(), settings)].into())
        .unwrap()
        .with_document_tasks(vec![task])
        .unwrap();
    let call = baton_types::ToolCall {
        id: "c1".into(),
        name: "bash".into(),
        arguments: r#"{"command":"cat a.txt"}"#.into(),
    };
    let messages = vec![
        baton_types::Message::system("s"),
        baton_types::Message::user("Fix a.txt."),
        baton_types::Message::assistant_with_calls("", vec![call]),
        baton_types::Message::tool("c1", "<returncode>0</returncode>\n<output>\nuno\n</output>"),
        baton_types::Message::user(request),
    ];
    let reply = agent
        .reply(&baton_models::Request {
            model: "m".into(),
            messages,
            config: Default::default(),
            seed: Some(1),
            tools: vec![baton_agent::bash_tool()],
            tool_choice: None,
        })
        .unwrap();
    assert!(reply.tool_calls.is_empty());
    assert!(
        reply.text.contains(&format!("true_at_sha: {sha}\n")),
        "{}",
        reply.text
    );
    let lint = switch::lint_at_switch(
        env.as_mut(),
        &reply.text,
        Rubric::Baton,
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(
        lint.valid,
        "{}\n{lint:?}\n{:?}",
        reply.text,
        Rubric::Baton.score(&Document::parse(&reply.text)).findings
    );
    let classes: Vec<(&str, Class)> = lint
        .claims
        .iter()
        .map(|c| (c.label.as_str(), c.class))
        .collect();
    assert_eq!(classes, [("a.txt exists", Class::HeldAndHolds)]);
    assert_eq!(lint.verdict, Verdict::Verified, "{lint:?}");

    // The work goes on from the tree as it was before the commit, the commit kept: the
    // submission's diff against the baseline holds the change again, and the document's
    // sha still resolves. Committing the same tree again gives the same id (a resume).
    switch::uncommit_at_switch(env.as_mut(), &sha).unwrap();
    assert_eq!(sh(&mut env, "git rev-parse HEAD").trim(), start);
    assert_eq!(
        sh(&mut env, "git status --porcelain"),
        " M a.txt\n?? b.txt\n"
    );
    assert_eq!(
        sh(&mut env, "git add -A && git diff --cached --name-only"),
        "a.txt\nb.txt\n"
    );
    assert_eq!(sh(&mut env, &format!("git cat-file -t {sha}")), "commit\n");
    sh(&mut env, "git reset -q");
    assert_eq!(switch::commit_at_switch(env.as_mut()).unwrap(), sha);
    let _ = env.close();
}

#[derive(Debug)]
struct NoReader;

impl baton_agent::DocumentReader for NoReader {
    fn stances(&self, _: &str) -> Vec<baton_agent::Stance> {
        Vec::new()
    }
}
