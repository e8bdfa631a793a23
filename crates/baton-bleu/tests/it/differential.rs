//! Side by side with sacreBLEU 2.6.0 itself, on generated inputs built to hit the tokenizer's
//! corner cases, every tokenizer, lowercasing, every smoothing method and effective order.
//!
//! Needs a Python with `sacrebleu==2.6.0`: `BATON_SACREBLEU_PYTHON=/path/to/python`, or
//! `python3` if it can import sacrebleu. Without one the test prints `SKIPPED` and passes.

use std::io::Write;
use std::process::{Command, Stdio};

use baton_bleu::{Bleu, BleuScore, Smoothing, Tokenizer};
use baton_fixture::SplitMix;
use serde_json::{Value, json};

/// Reads one JSON case per line, prints one JSON result per line.
const SCRIPT: &str = r#"
import json, sys, logging
logging.disable(logging.WARNING)
import sacrebleu
from sacrebleu.metrics import BLEU
assert sacrebleu.__version__ == "2.6.0", sacrebleu.__version__
for line in sys.stdin:
    c = json.loads(line)
    bleu = BLEU(tokenize=c["tokenize"], lowercase=c["lowercase"], smooth_method=c["smooth"],
                smooth_value=c["smooth_value"], effective_order=c["effective_order"])
    if c["sentence"]:
        s = bleu.sentence_score(c["hyps"][0], [stream[0] for stream in c["refs"]])
    else:
        s = bleu.corpus_score(c["hyps"], c["refs"])
    print(json.dumps({"score": s.score, "counts": s.counts, "totals": s.totals,
                      "precisions": s.precisions, "bp": s.bp, "sys_len": s.sys_len,
                      "ref_len": s.ref_len, "str": str(s)}))
"#;

fn sacrebleu_python() -> Option<String> {
    let candidates = std::env::var("BATON_SACREBLEU_PYTHON")
        .ok()
        .into_iter()
        .chain(["python3".to_owned()]);
    for python in candidates {
        let ok = Command::new(&python)
            .args([
                "-c",
                "import sacrebleu; assert sacrebleu.__version__ == '2.6.0'",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(python);
        }
    }
    None
}

/// Pieces that exercise every 13a rule: separators between and around digits, entities,
/// `<skipped>`, hyphen-newline, Unicode whitespace and case.
const PIECES: &[&str] = &[
    "the",
    "The",
    "cat",
    "CAT",
    "sat",
    "on",
    "mat",
    "1998",
    "3,000",
    "12.5",
    "6-2",
    "6–4",
    ".",
    ",",
    "-",
    "--",
    "'s",
    "don't",
    "(",
    ")",
    "\"",
    "&amp;",
    "&quot;",
    "&lt;",
    "&gt;",
    "&amp;lt;",
    "&",
    ";",
    "<skipped>",
    "-\n",
    "\n",
    "\t",
    "\u{a0}",
    "\u{3000}",
    "\u{1f}",
    "\u{200b}",
    "é",
    "Éte",
    "ÉTÉ",
    "İstanbul",
    "ΣΟΦΟΣ",
    "straße",
    "€5",
    "5%",
    "a.b",
    "x,y",
    "1.,2",
    "..",
    ".5",
    "5.",
    "U.S.",
    "e-mail",
    "#7",
    "@user",
    "[x]",
    "{y}",
    "~",
    "|",
    "^",
    "_",
    "`",
    "$",
    "!",
    "?",
    "/",
    "\\",
    "*",
    "+",
    "=",
    ":",
    "«",
    "»",
    "…",
    "—",
    "、",
    "。",
    "日本",
];

fn random_line(rng: &mut SplitMix, max_words: usize) -> String {
    let n = rng.below(max_words + 1);
    let mut s = String::new();
    for _ in 0..n {
        let sep = rng.pick(&[" ", " ", " ", "", "  ", "\u{2009}"]);
        s.push_str(sep);
        s.push_str(rng.pick(PIECES));
    }
    if rng.below(4) == 0 {
        s.push_str(rng.pick(&[" ", "\n", " \u{85}", "\u{1e}"]));
    }
    s
}

/// A reference made by editing `hyp`, so that matches of every order occur.
fn variant(rng: &mut SplitMix, hyp: &str) -> String {
    let mut words: Vec<String> = hyp.split(' ').map(str::to_owned).collect();
    for _ in 0..rng.below(4) {
        let i = rng.below(words.len() + 1);
        match rng.below(3) {
            0 if i < words.len() => {
                words.remove(i);
            }
            1 if i < words.len() => words[i] = rng.pick(PIECES).to_owned(),
            _ => words.insert(i, rng.pick(PIECES).to_owned()),
        }
    }
    words.join(" ")
}

struct Case {
    bleu: Bleu,
    sentence: bool,
    hyps: Vec<String>,
    refs: Vec<Vec<String>>,
}

fn cases() -> Vec<Case> {
    let mut rng = SplitMix::new(20_260_101);
    let tokenizers = [
        Tokenizer::V13a,
        Tokenizer::V13a,
        Tokenizer::None,
        Tokenizer::Intl,
        Tokenizer::Char,
    ];
    let smoothings = [
        Smoothing::Exp,
        Smoothing::Exp,
        Smoothing::Floor(0.1),
        Smoothing::Floor(0.5),
        Smoothing::AddK(1.0),
        Smoothing::AddK(0.5),
        Smoothing::None,
    ];
    (0..1500)
        .map(|_| {
            let bleu = Bleu {
                tokenizer: tokenizers[rng.below(tokenizers.len())],
                lowercase: rng.below(3) == 0,
                smoothing: smoothings[rng.below(smoothings.len())],
                effective_order: rng.below(2) == 0,
            };
            let sentence = rng.below(3) == 0;
            let segments = if sentence { 1 } else { 1 + rng.below(4) };
            let streams = 1 + rng.below(3);
            let hyps: Vec<String> = (0..segments).map(|_| sentence_with(&mut rng)).collect();
            let refs = (0..streams)
                .map(|_| {
                    hyps.iter()
                        .map(|h| {
                            if rng.below(5) == 0 {
                                random_line(&mut rng, 12)
                            } else {
                                variant(&mut rng, h)
                            }
                        })
                        .collect()
                })
                .collect();
            Case {
                bleu,
                sentence,
                hyps,
                refs,
            }
        })
        .collect()
}

fn sentence_with(rng: &mut SplitMix) -> String {
    let max = if rng.below(4) == 0 { 3 } else { 20 };
    random_line(rng, max)
}

fn smoothing_args(s: Smoothing) -> (&'static str, Value) {
    match s {
        Smoothing::Floor(v) | Smoothing::AddK(v) => (s.name(), json!(v)),
        _ => (s.name(), Value::Null),
    }
}

fn ours(case: &Case) -> BleuScore {
    let result = if case.sentence {
        let refs: Vec<&str> = case.refs.iter().map(|stream| stream[0].as_str()).collect();
        case.bleu.sentence_score(&case.hyps[0], &refs)
    } else {
        case.bleu.corpus_score(&case.hyps, &case.refs)
    };
    result.unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn agrees_bit_for_bit_with_sacrebleu() {
    let Some(python) = sacrebleu_python() else {
        eprintln!(
            "SKIPPED: no Python with sacrebleu 2.6.0 (set BATON_SACREBLEU_PYTHON to one) — \
             the side-by-side comparison with sacreBLEU did not run"
        );
        return;
    };
    let cases = cases();
    let mut input = String::new();
    for case in &cases {
        let (smooth, smooth_value) = smoothing_args(case.bleu.smoothing);
        let line = json!({
            "tokenize": case.bleu.tokenizer.name(), "lowercase": case.bleu.lowercase,
            "smooth": smooth, "smooth_value": smooth_value,
            "effective_order": case.bleu.effective_order, "sentence": case.sentence,
            "hyps": case.hyps, "refs": case.refs,
        });
        input.push_str(&line.to_string());
        input.push('\n');
    }
    let mut child = Command::new(&python)
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    writer
        .join()
        .unwrap_or_else(|_| panic!("writer thread panicked"))
        .unwrap_or_else(|e| panic!("writing to {python}: {e}"));
    assert!(
        output.status.success(),
        "{python} failed: {}",
        output.status
    );
    let stdout = String::from_utf8(output.stdout).unwrap_or_else(|e| panic!("{e}"));
    let theirs: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(
        theirs.len(),
        cases.len(),
        "sacreBLEU answered {} of {} cases",
        theirs.len(),
        cases.len()
    );

    let mut failures = Vec::new();
    for (i, (case, expected)) in cases.iter().zip(&theirs).enumerate() {
        let actual = ours(case);
        let f = |key: &str| expected[key].as_f64().unwrap_or(f64::NAN);
        let precisions: Vec<f64> = expected["precisions"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let mut same = actual.score.to_bits() == f("score").to_bits()
            && actual.bp.to_bits() == f("bp").to_bits()
            && actual
                .precisions
                .iter()
                .map(|p| p.to_bits())
                .eq(precisions.iter().map(|p| p.to_bits()))
            && Some(actual.sys_len) == expected["sys_len"].as_u64()
            && Some(actual.ref_len) == expected["ref_len"].as_u64();
        // Under add-k sacreBLEU reports its smoothed copies of the counts.
        if !matches!(case.bleu.smoothing, Smoothing::AddK(_)) {
            same &= json!(actual.counts) == expected["counts"]
                && json!(actual.totals) == expected["totals"]
                && actual.to_string() == expected["str"].as_str().unwrap_or("");
        }
        if !same {
            failures.push(format!(
                "case {i} ({:?}, sentence={}): hyps {:?} refs {:?}\n  sacreBLEU {expected}\n  ours      {actual:?}",
                case.bleu, case.sentence, case.hyps, case.refs
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from sacreBLEU:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
