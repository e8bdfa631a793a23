//! `baton score` on LiC's conformance vectors: `--rules lic` gives LiC's verdict on every
//! one, code and actions included; the default is baton's rules.

use std::path::Path;

use serde_json::Value;

use crate::{baton, stderr};

const FAMILIES: [&str; 5] = ["math", "database", "actions", "code", "data2text"];

/// Score `family`'s vectors with `rules` (`None`: the default) and return the cases with
/// their `actual`, and the summary line.
fn score(
    dir: &Path,
    conformance: &Path,
    family: &str,
    rules: Option<&str>,
) -> (Vec<Value>, String) {
    let input = conformance.join(format!("{family}.jsonl"));
    let spider = conformance.join("databases");
    let out = dir.join(format!("{family}-{}.jsonl", rules.unwrap_or("default")));
    let mut args = vec![
        "score",
        "--input",
        input.to_str().unwrap(),
        "--spider-dir",
        spider.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ];
    if let Some(r) = rules {
        args.extend(["--rules", r]);
    }
    let run = baton(dir, &args);
    assert!(run.status.success(), "{family}: {}", stderr(&run));
    let cases = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line per case"))
        .collect();
    (cases, stderr(&run))
}

/// The ids of the cases whose `actual` differs from LiC's `expected`: `score` exactly
/// (data2text within 1e-9) and `is_correct` exactly.
fn disagreements(family: &str, cases: &[Value]) -> Vec<String> {
    cases
        .iter()
        .filter(|c| {
            let (e, a) = (&c["expected"], &c["actual"]);
            let (Some(want), Some(got)) = (e["score"].as_f64(), a["score"].as_f64()) else {
                return true;
            };
            let score_ok = if family == "data2text" {
                (want - got).abs() <= 1e-9
            } else {
                want == got
            };
            !score_ok || e["is_correct"] != a["is_correct"]
        })
        .map(|c| {
            format!(
                "{}: expected {} got {}",
                c["id"], c["expected"], c["actual"]
            )
        })
        .collect()
}

#[test]
fn issue_24_score_rules_lic_agrees_with_every_conformance_vector() {
    let Some(conformance) = baton_fixture::shared_dir("conformance") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for family in FAMILIES {
        let n = std::fs::read_to_string(conformance.join(format!("{family}.jsonl")))
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count();
        let (cases, summary) = score(dir.path(), &conformance, family, Some("lic"));
        assert_eq!(cases.len(), n, "{family}: one output line per vector");
        let bad = disagreements(family, &cases);
        assert!(
            bad.is_empty(),
            "{} of {n} {family} vectors disagree with LiC under --rules lic:\n{}",
            bad.len(),
            bad.join("\n")
        );
        assert!(
            summary.contains(&format!("{n} of {n} agree with expected")),
            "{family}: {summary}"
        );
    }
}

/// Without `--rules`, `baton score` reads responses by baton's rules, which credit calls
/// that prose follows where LiC's `full_response` strategy fails them.
#[test]
fn issue_24_score_defaults_to_baton_rules() {
    let Some(conformance) = baton_fixture::shared_dir("conformance") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (default, _) = score(dir.path(), &conformance, "actions", None);
    let (baton_rules, summary) = score(dir.path(), &conformance, "actions", Some("baton"));
    assert_eq!(default, baton_rules, "the default is --rules baton");
    let bad = disagreements("actions", &baton_rules);
    assert!(
        !bad.is_empty(),
        "baton's rules read actions replies as LiC does"
    );
    assert!(summary.contains("disagreements: actions-"), "{summary}");

    let run = baton(
        dir.path(),
        &["score", "--input", "x.jsonl", "--rules", "python"],
    );
    assert_eq!(
        run.status.code(),
        Some(2),
        "an unknown rule set is a usage error"
    );
    assert!(stderr(&run).contains("baton, lic"), "{}", stderr(&run));
}

/// With no compiled sandbox yet, the first code case compiles it (wasmtime compiles on
/// rayon's global pool); `baton score` once scored its cases on that same pool and waited
/// forever on a two-core machine. It must finish and agree.
#[test]
fn issue_24_score_on_code_with_a_cold_sandbox_cache_finishes() {
    let Some(conformance) = baton_fixture::shared_dir("conformance") else {
        return;
    };
    let build = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sandbox/build");
    if !build.join("runner.wasm").is_file() {
        baton_fixture::skip(format!(
            "the sandbox runner {} is not built",
            build.join("runner.wasm").display()
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // a sandbox home with the built runner and an empty cache
    std::fs::create_dir(dir.path().join("sandbox")).unwrap();
    std::os::unix::fs::symlink(
        build.canonicalize().unwrap(),
        dir.path().join("sandbox/build"),
    )
    .unwrap();
    let text = std::fs::read_to_string(conformance.join("code.jsonl")).unwrap();
    let vectors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"stage\": \"response\""))
        .take(4)
        .collect();
    assert_eq!(vectors.len(), 4);
    std::fs::write(dir.path().join("code.jsonl"), vectors.join("\n")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args([
            "score",
            "--rules",
            "lic",
            "--input",
            "code.jsonl",
            "--output",
            "out.jsonl",
        ])
        .current_dir(dir.path())
        .env("BATON_HOME", dir.path())
        .env_remove("BATON_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(900) {
            child.kill().unwrap();
            panic!("baton score hung compiling the sandbox");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("4 of 4 agree with expected"), "{err}");
    assert!(
        std::fs::read_dir(dir.path().join("sandbox/cache"))
            .unwrap()
            .count()
            > 0,
        "the compiled runner is cached in the new home"
    );
}

#[test]
fn issue_37_bench_evaluators_is_short_of_the_goal_when_lic_did_not_run() {
    let (Some(conformance), Some(lic)) = (
        baton_fixture::shared_dir("conformance"),
        baton_fixture::shared_dir("bench/lic-python"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = baton(
        dir.path(),
        &[
            "bench",
            "evaluators",
            "--lic",
            lic.to_str().unwrap(),
            "--python",
            "/bin/false",
            "--conformance",
            conformance.to_str().unwrap(),
            "--family",
            "math",
            "--repeat",
            "1",
            "--out",
            "bench",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("short of the goal: math (LiC's evaluator did not run: nothing to compare)"),
        "{text}"
    );
    assert!(!text.contains("every family meets the goal"), "{text}");
    assert!(
        stderr(&out).contains("LiC's math evaluator did not run: /bin/false exited"),
        "{}",
        stderr(&out)
    );
    // baton's own side still ran and agreed on every vector.
    assert!(text.contains("| baton 696/696"), "{text}");
}

#[test]
fn issue_37_bench_harness_prints_the_floor_of_a_bare_client_sending_the_same_requests() {
    let dir = tempfile::tempdir().unwrap();
    let out = baton(
        dir.path(),
        &[
            "bench",
            "harness",
            "--tasks",
            "2",
            "--latency-ms",
            "0",
            "--out",
            "bench",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let number_after = |prefix: &str| -> u64 {
        let at = text
            .find(prefix)
            .unwrap_or_else(|| panic!("{prefix:?} in {text}"));
        text[at + prefix.len()..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    // every stored call's request went to the server again, and every reply parsed
    let calls = number_after("calls: ");
    assert!(calls > 0, "{text}");
    assert_eq!(
        number_after("a bare HTTP client sending the same "),
        calls,
        "{text}"
    );
    assert!(text.contains("baton's run above it: "), "{text}");
    // the requests it sent are not left in the benchmark's folder
    assert!(!dir.path().join("bench/floor-requests.jsonl").exists());
    assert!(dir.path().join("bench/run/results.sqlite").exists());
}
