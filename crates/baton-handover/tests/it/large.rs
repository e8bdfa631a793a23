//! `--claims` on a large repository: a generated tree like the one issue 36 measured (87 MB,
//! 14,028 files, most of them in an ignored `node_modules`), where Handover 0.4.1 took
//! 0.20–0.27 s for 5 claims and baton, copying the whole tree, 12.3–78.2 s.

use std::path::Path;
use std::time::{Duration, Instant};

use baton_handover::Rubric;
use baton_handover::verify::{Class, Level, Options, Verdict};

use crate::support::{commit, repo};

/// Handover 0.4.1's slowest time on the issue's repository, in seconds (measured there; it
/// cannot run here).
const HANDOVER_041_SECS: f64 = 0.27;

/// Write `files` files of `bytes` bytes each under `dir`, 100 per folder.
fn fill(dir: &Path, files: usize, bytes: usize) {
    let block: Vec<u8> = (0..bytes).map(|i| b'a' + (i % 26) as u8).collect();
    for i in 0..files {
        let folder = dir.join(format!("pkg{:03}/lib", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&folder).unwrap();
        }
        std::fs::write(folder.join(format!("m{i}.js")), &block).unwrap();
    }
}

/// The generated repository: 300 tracked source files, 13,700 ignored dependency files,
/// about 90 MB in all.
pub fn large_repo() -> (tempfile::TempDir, String) {
    let (dir, _) = repo(&[
        (".gitignore", "node_modules/\n.env\n"),
        (
            "package.json",
            "{\"name\":\"big\",\"scripts\":{\"test\":\"node -e 0\"}}\n",
        ),
    ]);
    let d = dir.path();
    fill(&d.join("src"), 300, 2_000);
    fill(&d.join("node_modules"), 13_700, 6_500);
    std::fs::write(d.join(".env"), "API_TOKEN=large-repo-token-123456\n").unwrap();
    let sha = commit(d, "sources");
    (dir, sha)
}

// See: issue 36
#[test]
fn issue_36_claims_on_a_large_repository_do_not_copy_it() {
    let (dir, sha) = large_repo();
    let d = dir.path();
    let doc = format!(
        "---\nprotocol_version: 1\nhandoff: big\nauthor: Dana\niso_date: 2026-01-14\n\
         true_at_sha: {sha}\nshape: handoff\nfirst_action: Read the claims\n\
         verify_cmd: test -f package.json\nstatus: in_progress\n---\n\n# Handover\n\n\
         ## Claims\n\n| Claim | Verify |\n|---|---|\n\
         | Sources | `test -f src/pkg002/lib/m250.js` |\n\
         | Dependency | `test -f node_modules/pkg136/lib/m13699.js` |\n\
         | Manifest | `grep -q big package.json` |\n\
         | Many deps | `test -d node_modules/pkg100` |\n\
         | History | `git cat-file -e {sha}` |\n"
    );
    let path = d.join("HANDOFF.md");
    let mut opts = Options::new(Level::Claims, d);
    opts.today = "2026-06-01".parse().unwrap();
    // The fastest of three runs (the machine may be busy with other work).
    let mut times = Vec::new();
    let mut l = None;
    for _ in 0..3 {
        let start = Instant::now();
        l = Some(baton_handover::lint(
            &doc,
            &path,
            Rubric::Baton,
            Some(&opts),
        ));
        times.push(start.elapsed());
    }
    let l = l.unwrap();
    let took = *times.iter().min().unwrap();
    for c in &l.verification.claims {
        assert_eq!(
            c.class(),
            Class::HeldAndHolds,
            "{}: {}",
            c.label,
            c.output_tail()
        );
    }
    assert_eq!(
        l.verification.verdict,
        Verdict::Verified,
        "{:#?}",
        l.verification.checks
    );
    let ratio = took.as_secs_f64() / HANDOVER_041_SECS;
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "--claims, 5 claims, ~90 MB / 14,000 files: {:.2} s, the fastest of {:?} ({ratio:.1}x Handover 0.4.1's {HANDOVER_041_SECS} s)",
        took.as_secs_f64(),
        times
    );
    // The bar is 3x 0.4.1 in a release build on a machine not busy with other work (the load
    // average below its processor count); a debug build, or a busy machine, gets 10 s.
    let load: f64 = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(0.0);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let bar = if cfg!(debug_assertions) || load >= cpus {
        if !cfg!(debug_assertions) {
            let _ = writeln!(
                std::io::stderr(),
                "the 3x bar is not asserted: load average {load} on {cpus} processors"
            );
        }
        Duration::from_secs(10)
    } else {
        Duration::from_secs_f64(3.0 * HANDOVER_041_SECS)
    };
    assert!(took < bar, "{took:?}");
}
