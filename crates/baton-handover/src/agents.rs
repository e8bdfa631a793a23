//! Agent instruction files (`AGENTS.md`, `CLAUDE.md`): do the commands and paths they name
//! exist, and (with `--verify`) do the test commands they name pass?
//!
//! Such a file is not a handoff (it has no header and no rubric applies), but the next agent
//! trusts it the same way. [`lint`] reads it with the same masking rules as a handoff body:
//!
//! - **commands**: every line of a shell code block (` ```sh `, `bash`, `console`, `shell`,
//!   or no language; a leading `$ ` is dropped) and every inline code span that starts with a
//!   build or test tool (`npm`, `cargo`, `make`, `pytest`, …). A command exists when its tool
//!   can find what it names: `make T` a `T:` target in the Makefile, `npm test`/`npm run S`
//!   a script in `package.json`, `cargo …` a `Cargo.toml`, `./x.sh` or `bash x.sh` the file,
//!   anything else its program on `PATH`;
//! - **paths**: inline code spans shaped like a relative path (a `/` or a known extension,
//!   no spaces or globs), looked up from the file's folder and from the top of the repository;
//! - **tests** (with `--verify`): each command that runs tests (`test` in its words, or
//!   `pytest`) runs in the same sandbox as a handoff's claims ([`crate::sandbox`]), on the
//!   repository's current tree, and must exit 0.
//!
//! The score is the share of named commands and paths that exist (tests count when run);
//! a missing one is an error, so the file is invalid.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::git::Repo;
use crate::sandbox::Sandbox;
use crate::structure::{Cues, Finding, Rubric, Severity, Structure, Subscores};
use crate::verify::{self, Check, Level, Status, Verdict, Verification};

/// Whether `path` names an agent instruction file.
pub fn is_agent_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.eq_ignore_ascii_case("AGENTS.md") || n.eq_ignore_ascii_case("CLAUDE.md"))
}

/// Tools whose inline code spans are read as commands.
const TOOLS: [&str; 22] = [
    "npm", "npx", "yarn", "pnpm", "cargo", "make", "just", "python", "python3", "pytest", "uv",
    "go", "node", "bash", "sh", "tox", "poetry", "pip", "bun", "deno", "gradle", "mvn",
];

/// What the file names, with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// A command.
    Command(usize, String),
    /// A path.
    Path(usize, String),
}

/// The commands and paths `text` names.
pub fn named(text: &str) -> Vec<Named> {
    let mut out = Vec::new();
    let mut fence: Option<(String, bool)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if let Some((marker, shell)) = &fence {
            if trimmed.starts_with(marker.as_str())
                && trimmed
                    .trim_start_matches(marker.chars().next().unwrap_or('`'))
                    .trim()
                    .is_empty()
            {
                fence = None;
            } else if *shell && !trimmed.is_empty() && !trimmed.starts_with('#') {
                let cmd = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
                out.push(Named::Command(line, cmd.to_string()));
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let ch = trimmed.chars().next().unwrap_or('`');
            let marker: String = trimmed.chars().take_while(|c| *c == ch).collect();
            let lang = trimmed[marker.len()..].trim().to_ascii_lowercase();
            let shell = matches!(
                lang.as_str(),
                "" | "sh" | "bash" | "shell" | "console" | "zsh"
            );
            fence = Some((marker, shell));
            continue;
        }
        if trimmed.starts_with('>') {
            continue;
        }
        for span in raw.split('`').skip(1).step_by(2) {
            let span = span.trim();
            let first = span.split_whitespace().next().unwrap_or("");
            if TOOLS.contains(&first) || first.starts_with("./") && first.len() > 2 {
                out.push(Named::Command(line, span.to_string()));
            } else if path_shaped(span) {
                out.push(Named::Path(line, span.trim_end_matches('/').to_string()));
            }
        }
    }
    out
}

fn path_shaped(span: &str) -> bool {
    const EXT: [&str; 16] = [
        ".md", ".rs", ".ts", ".tsx", ".js", ".py", ".json", ".toml", ".yml", ".yaml", ".sh", ".go",
        ".txt", ".cfg", ".ini", ".lock",
    ];
    !span.is_empty()
        && !span.contains(char::is_whitespace)
        && !span.contains(['*', '?', '<', '>', '$', '{', '|', '=', '(', ':'])
        && !span.starts_with('/')
        && !span.starts_with('-')
        && !span.starts_with('~')
        && !span.contains("..")
        && (span.contains('/') || EXT.iter().any(|e| span.ends_with(e)))
}

/// Why `cmd` (run from `root`) names something that does not exist, or `None`.
fn missing(cmd: &str, root: &Path) -> Option<String> {
    let words = shlex::split(cmd).unwrap_or_default();
    let words: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
        .collect();
    let (&program, args) = words.split_first()?;
    let read = |f: &str| std::fs::read_to_string(root.join(f)).ok();
    let operand = args.iter().find(|a| !a.starts_with('-')).copied();
    match program {
        "make" => {
            let Some(makefile) = read("Makefile")
                .or_else(|| read("makefile"))
                .or_else(|| read("GNUmakefile"))
            else {
                return Some("`make` is named but there is no Makefile".into());
            };
            let target = operand?;
            let has = makefile.lines().any(|l| {
                l.split(':')
                    .next()
                    .is_some_and(|t| t.split_whitespace().any(|t| t == target))
                    && l.contains(':')
            });
            (!has).then(|| format!("the Makefile has no `{target}` target"))
        }
        "npm" | "yarn" | "pnpm" | "bun" => {
            let Some(package) = read("package.json") else {
                return Some(format!("`{program}` is named but there is no package.json"));
            };
            let json: serde_json::Value = serde_json::from_str(&package).unwrap_or_default();
            let script = match (operand, args.get(1)) {
                (Some("run" | "run-script"), Some(s)) => Some(*s),
                (Some("test" | "t"), _) => Some("test"),
                (Some("start"), _) => Some("start"),
                (Some(s), _)
                    if program != "npm"
                        && !["install", "add", "i", "ci", "exec", "dlx"].contains(&s) =>
                {
                    Some(s)
                }
                _ => None,
            }?;
            json["scripts"][script]
                .is_null()
                .then(|| format!("package.json has no `{script}` script"))
        }
        "cargo" => (!root.join("Cargo.toml").is_file())
            .then(|| "`cargo` is named but there is no Cargo.toml".to_string()),
        "bash" | "sh" if operand.is_some_and(|o| o.ends_with(".sh")) => {
            let o = operand?;
            (!root.join(o).is_file()).then(|| format!("{o} does not exist"))
        }
        p if p.starts_with("./") => {
            (!root.join(p).is_file()).then(|| format!("{p} does not exist"))
        }
        p => {
            let found = std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths)
                .any(|d| d.join(p).is_file());
            (!found && !TOOLS.contains(&p)).then(|| format!("`{p}` is not on PATH"))
        }
    }
}

fn runs_tests(cmd: &str) -> bool {
    cmd.split_whitespace()
        .any(|w| w == "test" || w == "pytest" || w == "unittest" || w.starts_with("test:"))
}

/// Lint an agent instruction file read from `path`; with `options` at [`Level::Verify`] or
/// above, run the test commands it names in the sandbox.
pub fn lint(
    text: &str,
    path: &Path,
    rubric: Rubric,
    options: Option<&verify::Options>,
) -> crate::Linted {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let repo = Repo::discover(dir);
    let root: PathBuf = repo
        .as_ref()
        .map_or_else(|| dir.to_path_buf(), |r| r.root.clone());
    let mut findings = Vec::new();
    let mut checks = Vec::new();
    let (mut ok, mut total) = (0usize, 0usize);
    let mut tests = Vec::new();
    for item in named(text) {
        total += 1;
        match item {
            Named::Path(line, p) => {
                if dir.join(&p).exists() || root.join(&p).exists() {
                    ok += 1;
                } else {
                    findings.push(Finding::new(
                        "agents-path",
                        Severity::Error,
                        Some(line),
                        format!("`{p}` is named but does not exist"),
                    ));
                }
            }
            Named::Command(line, c) => match missing(&c, &root) {
                None => {
                    ok += 1;
                    if runs_tests(&c) {
                        tests.push((line, c));
                    }
                }
                Some(why) => findings.push(Finding::new(
                    "agents-command",
                    Severity::Error,
                    Some(line),
                    format!("`{c}`: {why}"),
                )),
            },
        }
    }
    let mut verdict = Verdict::UnverifiedNoRepo;
    if let (Some(opts), Some(repo)) = (options, &repo)
        && opts.level >= Level::Verify
    {
        verdict = Verdict::Verified;
        let sandbox = Sandbox::new(&opts.sandbox).and_then(|s| s.tree(repo, None).map(|t| (s, t)));
        match sandbox {
            Err(why) => {
                verdict = Verdict::Failed;
                checks.push(Check {
                    name: "agents-test",
                    status: Status::Fail,
                    detail: format!("not run: {why}"),
                    line: None,
                });
            }
            Ok((_sandbox, mut tree)) => {
                for (line, cmd) in tests {
                    if let Some(why) =
                        crate::check::destructive(&cmd).filter(|_| !opts.sandbox.allow_destructive)
                    {
                        verdict = Verdict::Failed;
                        checks.push(Check {
                            name: "agents-test",
                            status: Status::Fail,
                            detail: format!("`{cmd}` was not run: {why}"),
                            line: Some(line),
                        });
                        continue;
                    }
                    let run = tree.run(&cmd, opts.verify_timeout.min(Duration::from_secs(600)));
                    let secs = run.elapsed.as_secs_f64();
                    if run.success() {
                        checks.push(Check {
                            name: "agents-test",
                            status: Status::Ok,
                            detail: format!("`{cmd}` passed in {secs:.1} s"),
                            line: Some(line),
                        });
                    } else {
                        verdict = Verdict::Failed;
                        checks.push(Check {
                            name: "agents-test",
                            status: Status::Fail,
                            detail: format!("`{cmd}` failed after {secs:.1} s:\n{}", run.tail()),
                            line: Some(line),
                        });
                    }
                }
            }
        }
    }
    let valid = findings.is_empty();
    if !valid && verdict != Verdict::Failed {
        verdict = Verdict::InvalidHeader;
    }
    let score = (100 * ok).checked_div(total).map_or(100, |s| s as u32);
    let structure = Structure {
        rubric,
        score,
        valid,
        subscores: Subscores::default(),
        findings,
        cues: Cues::default(),
    };
    let verification = Verification {
        verdict,
        repo: repo.map(|r| r.root),
        checks,
        claims: Vec::new(),
        drift: None,
        unverified: Vec::new(),
    };
    crate::Linted {
        document: crate::Document::parse(""),
        structure,
        verification,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_paths_are_found() {
        let text = "# Agents\n\nRun `npm test` before pushing; the spec is `docs/SPEC.md`.\n\n```sh\n$ make lint\n# a comment\ncargo build\n```\n\n```json\n{\"x\": 1}\n```\n";
        assert_eq!(
            named(text),
            [
                Named::Command(3, "npm test".into()),
                Named::Path(3, "docs/SPEC.md".into()),
                Named::Command(6, "make lint".into()),
                Named::Command(8, "cargo build".into()),
            ]
        );
    }
}
