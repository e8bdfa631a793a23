//! One experiment dialect for both kinds: an agent experiment written with the chat's
//! `[[pairs]]` and top-level `interfaces` runs, and is the same experiment as its older
//! spelling (which still reads, with a warning); the example files share every common key.
// See: issue 24 (`[[pairs]]` in an agent file was an "unknown field" error).

use std::collections::BTreeSet;
use std::path::Path;

use rusqlite::Connection;

use crate::env::sandbox_works;
use crate::{baton, stderr};

const SHARED: &str = r#"kind = "agent"
name = "dialect"
dataset = "agent-sample"
limit = 2
seed = 5
concurrency = 2
[models.lc]
model = "sim/lc"
[models.hc]
model = "sim/hc"
"#;

fn rows(db: &Path, sql: &str) -> Vec<String> {
    let c = Connection::open(db).unwrap();
    let mut stmt = c.prepare(sql).unwrap();
    stmt.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn issue_24_an_agent_experiment_with_pairs_runs_as_its_older_spelling_does() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let new = format!(
        "interfaces = [\"raw\"]\n{SHARED}[agent]\nstep_limit = 20\n[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n[handoff]\npercentiles = [50]\n"
    );
    let old = format!(
        "step_limit = 20\n{SHARED}[handoff]\npairs = [[\"lc\", \"hc\"]]\ninterfaces = [\"raw\"]\npercentiles = [50]\n"
    );
    std::fs::write(dir.path().join("new.toml"), new).unwrap();
    std::fs::write(dir.path().join("old.toml"), old).unwrap();
    let a = baton(dir.path(), &["run", "new.toml", "--out", "new", "--quiet"]);
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(!stderr(&a).contains("older spelling"), "{}", stderr(&a));
    let b = baton(dir.path(), &["run", "old.toml", "--out", "old", "--quiet"]);
    assert!(b.status.success(), "{}", stderr(&b));
    let warned = stderr(&b);
    assert!(
        warned.contains("step_limit at the top level is the older spelling")
            && warned.contains("write [[pairs]]")
            && warned.contains("handoff.interfaces is the older spelling"),
        "{warned}"
    );
    // stderr is a pipe here, as in a log file: no colour codes
    assert!(!warned.contains('\u{1b}'), "{warned:?}");
    let (a, b) = (
        dir.path().join("new/results.sqlite"),
        dir.path().join("old/results.sqlite"),
    );
    // the same experiment: the same identity and the same episodes, verdicts included
    let sha = "SELECT spec_sha256 FROM experiment";
    assert_eq!(rows(&a, sha), rows(&b, sha));
    let episodes = "SELECT cell_key || ' ' || task_id || ' ' || status || ' ' || coalesce(score, -1) FROM episodes ORDER BY 1";
    let (ea, eb) = (rows(&a, episodes), rows(&b, episodes));
    assert_eq!(ea, eb);
    // 2 tasks x (2 anchors + 2 directions x 1 percentile x 1 interface)
    assert_eq!(ea.len(), 2 * 4, "{ea:#?}");
    assert_eq!(
        ea.iter().filter(|e| e.starts_with("handoff")).count(),
        4,
        "{ea:#?}"
    );
}

#[test]
fn issue_24_the_chat_and_agent_examples_share_every_common_key() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |name: &str| -> toml::Table {
        toml::from_str(&std::fs::read_to_string(root.join("examples").join(name)).unwrap()).unwrap()
    };
    let (chat, agent) = (
        read("handoff-tax-chat.toml"),
        read("agent-handoff-sim.toml"),
    );
    let common = [
        "name",
        "dataset",
        "replicates",
        "seed",
        "interfaces",
        "models",
        "pairs",
    ];
    for key in common {
        assert!(chat.contains_key(key), "the chat example lacks {key}");
        assert!(agent.contains_key(key), "the agent example lacks {key}");
    }
    // the pairs are written alike
    for t in [&chat, &agent] {
        for p in t["pairs"].as_array().unwrap() {
            let keys: BTreeSet<_> = p.as_table().unwrap().keys().cloned().collect();
            assert!(keys.contains("low") && keys.contains("high"), "{keys:?}");
        }
    }
    // nothing kind-specific at the top level of either
    for key in baton_runner::CHAT_KEYS {
        assert!(
            !chat.contains_key(*key),
            "chat example: {key} belongs in [chat]"
        );
    }
    for key in baton_runner::AGENT_KEYS {
        assert!(
            !agent.contains_key(*key),
            "agent example: {key} belongs in [agent]"
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

// See: issue 24 (`--skip-invalid` was silently dropped on agent runs).
#[test]
fn issue_24_skip_invalid_leaves_out_an_agent_task_that_does_not_load() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/agent-sample");
    copy_dir(
        &sample.join("roman-numerals"),
        &dir.path().join("tasks/roman-numerals"),
    );
    copy_dir(&sample.join("chunked"), &dir.path().join("tasks/chunked"));
    std::fs::write(
        dir.path().join("tasks/chunked/task.toml"),
        "this is = = not toml",
    )
    .unwrap();
    let exp = "kind = \"agent\"\nname = \"skip\"\ndataset = \"tasks\"\nseed = 1\n[agent]\nstep_limit = 20\n[models.hc]\nmodel = \"sim/hc\"\n";
    std::fs::write(dir.path().join("exp.toml"), exp).unwrap();
    let strict = baton(
        dir.path(),
        &["run", "exp.toml", "--out", "strict", "--quiet"],
    );
    assert_eq!(strict.status.code(), Some(2), "{}", stderr(&strict));
    assert!(stderr(&strict).contains("chunked"), "{}", stderr(&strict));
    let lenient = baton(
        dir.path(),
        &[
            "run",
            "exp.toml",
            "--out",
            "lenient",
            "--quiet",
            "--skip-invalid",
        ],
    );
    assert!(
        lenient.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&lenient)
    );
    let db = dir.path().join("lenient/results.sqlite");
    assert_eq!(
        rows(&db, "SELECT task_id FROM skipped_tasks"),
        vec!["chunked".to_string()]
    );
    assert_eq!(
        rows(&db, "SELECT DISTINCT task_id FROM episodes"),
        vec!["roman-numerals".to_string()]
    );
}
