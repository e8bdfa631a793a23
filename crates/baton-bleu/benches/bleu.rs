//! Throughput of corpus BLEU (10,000 two-reference pairs) and sentence BLEU (1,000 calls),
//! side by side with sacreBLEU 2.6.0 on the same inputs when it is installed.
//!
//! Inputs, in order of preference:
//! 1. `BATON_BLEU_CORPUS` and `BATON_BLEU_SENTENCE`: JSONL files of `{"hyp": .., "refs": [..]}`;
//! 2. `python3 ../shared/bench/sacrebleu_bench.py dump` (relative to the workspace root;
//!    `BATON_SHARED_DIR` stands for `../shared`) into a temporary directory, when that script
//!    exists;
//! 3. synthetic data generated here (no sacreBLEU comparison then).
//!
//! sacreBLEU is timed by running the same script's `corpus` and `sentence` modes with
//! `BATON_SACREBLEU_PYTHON` (default `python3`), when that interpreter can import sacrebleu.
//! The figures come from one run on one machine, so their ratio is meaningful.
//!
//! Run with `cargo bench -p baton-bleu`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "printing figures is the point"
)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use baton_bleu::{corpus_bleu, sentence_bleu};
use serde_json::Value;

/// sacreBLEU 2.6.0's corpus score on the script's dumped corpus.
const DUMPED_CORPUS_SCORE: f64 = 71.155_044_623_438_04;

/// sacreBLEU's side of the comparison, in the shared `bench` folder (`BATON_SHARED_DIR` moves
/// it).
static SCRIPT: LazyLock<String> = LazyLock::new(|| {
    baton_fixture::shared_path("bench")
        .join("sacrebleu_bench.py")
        .display()
        .to_string()
});

struct Pair {
    hyp: String,
    refs: Vec<String>,
}

enum Source {
    Files,
    Dump,
    Synthetic,
}

fn main() {
    let (corpus, sentences, source) = load_inputs();
    let python = sacrebleu_python();

    // Corpus BLEU.
    let hyps: Vec<&str> = corpus.iter().map(|p| p.hyp.as_str()).collect();
    let n_refs = corpus.first().map_or(0, |p| p.refs.len());
    let streams: Vec<Vec<&str>> = (0..n_refs)
        .map(|k| corpus.iter().map(|p| p.refs[k].as_str()).collect())
        .collect();
    let score = corpus_bleu(&hyps, &streams).unwrap_or_else(|e| fail(&format!("corpus BLEU: {e}")));
    let corpus_time = best_of(10, || {
        black_box(
            corpus_bleu(black_box(&hyps), black_box(&streams))
                .map(|s| s.score)
                .ok(),
        );
    });
    println!("corpus BLEU  = {score}");
    if matches!(source, Source::Dump) {
        if score.score != DUMPED_CORPUS_SCORE {
            fail(&format!(
                "corpus BLEU {} != sacreBLEU's {DUMPED_CORPUS_SCORE}",
                score.score
            ));
        }
        println!("               equals sacreBLEU 2.6.0's 71.15504462343804 on the dumped corpus");
    }

    // Sentence BLEU.
    let sentence_time = best_of(10, || {
        for p in &sentences {
            black_box(
                sentence_bleu(black_box(&p.hyp), black_box(&p.refs))
                    .map(|s| s.score)
                    .ok(),
            );
        }
    });
    let scores: Vec<f64> = sentences
        .iter()
        .map(|p| sentence_bleu(&p.hyp, &p.refs).map_or(f64::NAN, |s| s.score))
        .collect();
    // Python's `sum(scores) / len(scores)` (3.11: plain left-to-right addition).
    let mean = scores.iter().fold(0.0, |acc, s| acc + s) / scores.len() as f64;
    println!(
        "sentence BLEU mean = {mean:?}, first3 = {:?}",
        &scores[..scores.len().min(3)]
    );

    let corpus_rate = corpus.len() as f64 / corpus_time.as_secs_f64();
    let sentence_rate = sentences.len() as f64 / sentence_time.as_secs_f64();
    println!();
    println!(
        "{:<38} {:>14} {:>16}",
        "workload", "time (best/10)", "pairs/second"
    );
    let row = |name: &str, t: Duration, rate: f64| {
        println!(
            "{name:<38} {:>11.3} ms {:>16.0}",
            t.as_secs_f64() * 1e3,
            rate
        );
    };
    row(
        &format!("baton-bleu corpus_bleu {} x {n_refs} refs", corpus.len()),
        corpus_time,
        corpus_rate,
    );
    row(
        &format!("baton-bleu sentence_bleu {} calls", sentences.len()),
        sentence_time,
        sentence_rate,
    );

    let Some(python) = python else {
        println!("\nsacreBLEU not timed: no Python with sacrebleu (set BATON_SACREBLEU_PYTHON)");
        return;
    };
    if !Path::new(SCRIPT.as_str()).exists() {
        println!("\nsacreBLEU not timed: {} not found", *SCRIPT);
        return;
    }
    if !matches!(source, Source::Dump) {
        println!(
            "\nnote: sacreBLEU runs on the script's own data, which may differ from these inputs"
        );
    }
    let py_corpus = run_sacrebleu(&python, "corpus");
    let py_sentence = run_sacrebleu(&python, "sentence");
    let py_corpus_s = py_corpus["seconds"].as_f64().unwrap_or(f64::NAN);
    let py_sentence_s = py_sentence["seconds"].as_f64().unwrap_or(f64::NAN);
    row(
        "sacreBLEU 2.6.0 corpus_bleu 10000 x 2",
        Duration::from_secs_f64(py_corpus_s),
        10_000.0 / py_corpus_s,
    );
    row(
        "sacreBLEU 2.6.0 sentence_bleu 1000",
        Duration::from_secs_f64(py_sentence_s),
        1_000.0 / py_sentence_s,
    );
    println!();
    println!(
        "speed-up corpus:   {:.0}x",
        py_corpus_s / corpus_time.as_secs_f64()
    );
    println!(
        "speed-up sentence: {:.0}x",
        py_sentence_s / sentence_time.as_secs_f64()
    );

    if matches!(source, Source::Dump) {
        let same_corpus = py_corpus["score"].as_f64() == Some(score.score);
        let same_mean = py_sentence["mean"].as_f64() == Some(mean);
        println!("identical to sacreBLEU: corpus score {same_corpus}, sentence mean {same_mean}");
        if !(same_corpus && same_mean) {
            fail(&format!("sacreBLEU printed {py_corpus} and {py_sentence}"));
        }
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}

/// The fastest of `runs` timed runs of `f`, after one warm-up run.
fn best_of(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn load_inputs() -> (Vec<Pair>, Vec<Pair>, Source) {
    if let (Some(c), Some(s)) = (
        std::env::var_os("BATON_BLEU_CORPUS"),
        std::env::var_os("BATON_BLEU_SENTENCE"),
    ) {
        let (c, s) = (PathBuf::from(c), PathBuf::from(s));
        println!("inputs: {} and {}", c.display(), s.display());
        return (read_pairs(&c), read_pairs(&s), Source::Files);
    }
    if Path::new(SCRIPT.as_str()).exists() {
        let dir = std::env::temp_dir().join(format!("baton-bleu-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail(&format!("{}: {e}", dir.display())));
        let (c, s) = (dir.join("corpus.jsonl"), dir.join("sentence.jsonl"));
        let status = Command::new("python3")
            .arg(SCRIPT.as_str())
            .arg("dump")
            .arg(&c)
            .arg(&s)
            .status();
        if status.is_ok_and(|s| s.success()) {
            println!("inputs: {} dump", *SCRIPT);
            let inputs = (read_pairs(&c), read_pairs(&s), Source::Dump);
            let _ = std::fs::remove_dir_all(&dir);
            return inputs;
        }
        let _ = std::fs::remove_dir_all(&dir);
        eprintln!(
            "warning: `python3 {} dump` failed; using synthetic inputs",
            *SCRIPT
        );
    }
    println!("inputs: synthetic");
    (synthetic(10_000, 1), synthetic(1_000, 2), Source::Synthetic)
}

fn read_pairs(path: &Path) -> Vec<Pair> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
            let text = |v: &Value| {
                v.as_str()
                    .unwrap_or_else(|| fail("expected a string"))
                    .to_owned()
            };
            Pair {
                hyp: text(&v["hyp"]),
                refs: v["refs"]
                    .as_array()
                    .unwrap_or_else(|| fail("expected refs"))
                    .iter()
                    .map(text)
                    .collect(),
            }
        })
        .collect()
}

/// About 24 tokens per segment and two perturbed references, like the reference script.
fn synthetic(n: usize, seed: u64) -> Vec<Pair> {
    const WORDS: &[&str] = &[
        "the", "a", "of", "in", "team", "season", "club", "league", "scored", "goals", "won",
        "final", "cup", "1998", "12.5", "3,000", "New", "York", "album", "released", "chart",
        "film", "role", "party", ",", ".", "(", ")", "'s", "-", ";", "%",
    ];
    let mut state = seed;
    let mut next = move |bound: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) % bound as u64) as usize
    };
    (0..n)
        .map(|k| {
            let base: Vec<&str> = (0..12 + next(19))
                .map(|_| WORDS[next(WORDS.len())])
                .collect();
            let mut perturb = || {
                let mut w = base.clone();
                for _ in 0..1 + next(5) {
                    let i = next(w.len());
                    w[i] = WORDS[next(WORDS.len())];
                }
                format!("{}. #{k}", w.join(" "))
            };
            Pair {
                hyp: perturb(),
                refs: vec![perturb(), perturb()],
            }
        })
        .collect()
}

fn sacrebleu_python() -> Option<String> {
    let python = std::env::var("BATON_SACREBLEU_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let ok = Command::new(&python)
        .args(["-c", "import sacrebleu"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(python)
}

/// Runs the reference script in `mode` and parses the JSON line it prints.
fn run_sacrebleu(python: &str, mode: &str) -> Value {
    let out = Command::new(python)
        .arg(SCRIPT.as_str())
        .arg(mode)
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| fail(&format!("{python}: {e}")));
    if !out.status.success() {
        fail(&format!(
            "{python} {} {mode} failed: {}",
            *SCRIPT, out.status
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| fail(&format!("no JSON from {mode}: {stdout}")));
    serde_json::from_str(line).unwrap_or_else(|e| fail(&format!("{e}: {line}")))
}
