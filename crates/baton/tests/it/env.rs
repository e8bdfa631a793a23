//! `baton env check | exec | check-tasks` end to end, with the real sandbox.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::{stderr, stdout};

fn baton_env(cwd: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_baton"));
    cmd.arg("env")
        .args(args)
        .current_dir(cwd)
        .env_remove("BATON_LOG");
    cmd.env_remove("BATON_BWRAP").env_remove("BATON_DOCKER");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().expect("baton runs")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `baton env check` passes here; a loud skip (or, under
/// `BATON_REQUIRE_CONFORMANCE=1`, a failure) when it does not.
pub fn sandbox_works() -> bool {
    static OK: OnceLock<Result<(), String>> = OnceLock::new();
    let result = OK.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let out = baton_env(dir.path(), &["check"], &[]);
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{}{}", stdout(&out), stderr(&out)))
        }
    });
    match result {
        Ok(()) => true,
        Err(why) => {
            baton_fixture::skip(format!("`baton env check` fails here:\n{why}"));
            false
        }
    }
}

#[test]
fn env_check_reports_what_works() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = baton_env(dir.path(), &["check"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for item in [
        "bwrap",
        "sandbox",
        "python3",
        "git",
        "network",
        "filesystem",
        "limits",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with("ok") && l.contains(item)),
            "{item}: {text}"
        );
    }
    assert!(text.contains("ms per command"), "{text}");
}

#[test]
fn env_check_refuses_with_the_fix_when_bwrap_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = baton_env(
        dir.path(),
        &["check"],
        &[("BATON_BWRAP", "/nonexistent/bwrap")],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("/nonexistent/bwrap not found")
            && err.contains("apt-get install -y bubblewrap"),
        "{err}"
    );
}

/// A `bwrap` that hides one program inside the sandbox (binds /dev/null over it).
fn bwrap_hiding(dir: &Path, program: &str) -> PathBuf {
    let real = String::from_utf8(
        Command::new("bash")
            .args(["-c", "command -v bwrap"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let path = dir.join(format!("bwrap-without-{program}"));
    let script = format!(
        "#!/usr/bin/env bash\n\
         # Insert a bind of /dev/null over {program} before the command separator.\n\
         args=()\n\
         for a in \"$@\"; do\n\
           if [ \"$a\" = -- ] && [ -z \"$done\" ]; then\n\
             for p in /usr/bin/{program} /usr/local/bin/{program}; do\n\
               [ -e \"$p\" ] && args+=(--ro-bind /dev/null \"$p\");\n\
             done\n\
             done=1\n\
           fi\n\
           args+=(\"$a\")\n\
         done\n\
         exec {} \"${{args[@]}}\"\n",
        real.trim()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn env_check_refuses_with_the_fix_when_python3_or_git_is_missing() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for program in ["python3", "git"] {
        let fake = bwrap_hiding(dir.path(), program);
        let out = baton_env(
            dir.path(),
            &["check"],
            &[("BATON_BWRAP", fake.to_str().unwrap())],
        );
        assert_eq!(out.status.code(), Some(2), "{program}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{program}: not runnable inside"))
                && err.contains(&format!("apt-get install -y {program}")),
            "{program}: {err}"
        );
        assert!(
            stdout(&out).contains(&format!("FAIL  {program}")),
            "{}",
            stdout(&out)
        );
    }
}

#[test]
fn env_exec_runs_one_command_on_a_copy_of_the_tree() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("hello.py"), "print('hi from', __name__)\n").unwrap();
    let out = baton_env(
        dir.path(),
        &[
            "exec",
            "tree",
            "--",
            "python3 hello.py; pwd; touch new; exit 3",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hi from __main__\n/testbed\n");
    assert!(
        stderr(&out).contains("return code 3 after"),
        "{}",
        stderr(&out)
    );
    assert!(!tree.join("new").exists(), "the tree is a copy");

    let out = baton_env(
        dir.path(),
        &["exec", "tree", "--timeout", "1", "--", "sleep", "30"],
        &[],
    );
    assert!(stderr(&out).contains("timed out"), "{}", stderr(&out));

    let out = baton_env(dir.path(), &["exec", "missing", "--", "true"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing"), "{}", stderr(&out));
}

/// Several words after `--` are an argv run as given; one word is a shell string.
#[test]
fn issue_24_env_exec_passes_several_words_as_argv_and_one_as_a_shell_string() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tree")).unwrap();
    let exec = |command: &[&str]| {
        let mut args = vec!["exec", "tree", "--"];
        args.extend_from_slice(command);
        let out = baton_env(dir.path(), &args, &[]);
        assert_eq!(out.status.code(), Some(0), "{command:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("return code 0 after"),
            "{command:?}: {}",
            stderr(&out)
        );
        stdout(&out)
    };
    assert_eq!(exec(&["python3", "-c", "print(1)"]), "1\n");
    assert_eq!(exec(&["bash", "-c", "echo hi"]), "hi\n");
    // no word is split, expanded or re-parsed: spaces, quotes, `$`, globs and `;` arrive as typed
    assert_eq!(
        exec(&["printf", "%s|", "a  b", "it's", "$HOME", "*", "x; echo no"]),
        "a  b|it's|$HOME|*|x; echo no|"
    );
    // one word is a shell string, as the agent's own commands are
    assert_eq!(exec(&["echo a; echo \"$HOME\""]), "a\n/tmp\n");
}

#[test]
fn env_check_tasks_on_the_bundled_set() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = baton_env(dir.path(), &["check-tasks", "agent-sample"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("12 tasks: unchanged fail 12/12, reference pass 12/12\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn env_check_tasks_on_the_polyglot_exercises() {
    if !sandbox_works() {
        return;
    }
    let Some(agent) = baton_fixture::shared_dir("agent") else {
        return;
    };
    let dir = agent.join("polyglot-python");
    if !dir.is_dir() {
        baton_fixture::skip(format!("{} not found", dir.display()));
        return;
    }
    let out = baton_env(&repo_root(), &["check-tasks", dir.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("34 tasks: unchanged fail 34/34, reference pass 34/34\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn env_check_tasks_lists_the_tasks_that_misbehave() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let test = "import unittest\nfrom m import f\n\nclass T(unittest.TestCase):\n    def test_f(self):\n        self.assertEqual(f(), 2)\n";
    for (name, repo, solution) in [
        (
            "good",
            "def f():\n    return 1\n",
            "def f():\n    return 2\n",
        ),
        (
            "already-solved",
            "def f():\n    return 2\n",
            "def f():\n    return 2\n",
        ),
        (
            "wrong-reference",
            "def f():\n    return 1\n",
            "def f():\n    return 3\n",
        ),
    ] {
        write(
            &format!("tasks/{name}/task.toml"),
            "difficulty = \"easy\"\nfail_to_pass = [\"test_m.T.test_f\"]\n",
        );
        write(
            &format!("tasks/{name}/instruction.md"),
            "Make f return 2.\n",
        );
        write(&format!("tasks/{name}/repo/m.py"), repo);
        write(&format!("tasks/{name}/hidden/test_m.py"), test);
        write(&format!("tasks/{name}/solution/m.py"), solution);
    }
    let out = baton_env(dir.path(), &["check-tasks", "tasks"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("3 tasks: unchanged fail 2/3, reference pass 2/3\n"),
        "{text}"
    );
    assert!(
        text.contains("already-solved (easy): unchanged does not fail"),
        "{text}"
    );
    assert!(
        text.contains("wrong-reference (easy): reference does not pass"),
        "{text}"
    );
    assert!(!text.contains("  good"), "{text}");

    write(
        "tasks/good/task.toml",
        "difficulty = \"simple\"\nfail_to_pass = [\"test_m.T.test_f\"]\n",
    );
    let out = baton_env(dir.path(), &["check-tasks", "tasks"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("tasks/good/task.toml: task \"good\": key \"difficulty\""),
        "{}",
        stderr(&out)
    );
}
