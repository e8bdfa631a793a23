//! Cross-checks against a local `python3`, when there is one.

use std::io::Write as _;
use std::process::{Command, Stdio};

use baton_data::{py_float_repr, py_repr, sample_dataset};
use baton_types::Family;
use serde_json::{Value, json};

/// Run `python3 -c script` with `input` on stdin; `None` (with a loud note)
/// when no python3 is installed.
pub fn run_python(script: &str, input: &str) -> Option<String> {
    let child = Command::new("python3")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(err) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("SKIPPED: python3 is not available ({err}); cross-check not run");
            }
            return None;
        }
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write to python3");
    let out = child.wait_with_output().expect("python3 runs");
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("utf-8 output"))
}

/// A small deterministic generator (splitmix64) for test inputs.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn probe_values() -> Vec<Value> {
    let mut values = Vec::new();
    let mut mix = Mix(42);
    // Floats: random bit patterns, and round decimals around the exponent switch points.
    while values.len() < 3000 {
        let x = f64::from_bits(mix.next());
        if x.is_finite() {
            values.push(json!(x));
        }
    }
    for exp in -8..=18 {
        for mantissa in [1.0, 1.5, 9.999, 12.25] {
            values.push(json!(mantissa * 10f64.powi(exp)));
            values.push(json!(-mantissa / 10f64.powi(exp)));
        }
    }
    for x in [
        0.1,
        0.2 + 0.1,
        100.0,
        1e16,
        1e-5,
        1e-4,
        123_456_789.0,
        f64::MIN_POSITIVE,
    ] {
        values.push(json!(x));
    }
    values.extend([json!(0), json!(-7), json!(i64::MIN), json!(u64::MAX)]);
    // Strings: every code point outside the surrogates, 128 per string.
    let chars: Vec<char> = (0..0x11_0000u32).filter_map(char::from_u32).collect();
    for chunk in chars.chunks(128) {
        values.push(Value::String(chunk.iter().collect()));
    }
    for s in [
        "",
        "'",
        "\"",
        "'\"",
        "it's",
        "a\\b",
        "\u{7f}\u{80}\u{a0}\u{ad}",
    ] {
        values.push(json!(s));
    }
    values.push(json!({"k": [true, false, null, 1, 2.5, "x"], "nested": {"e": {}, "l": []}}));
    // The sample set's function lists, as the actions system prompt shows them.
    for task in sample_dataset().tasks {
        if task.family == Family::Actions {
            values.push(task.sample["function"].clone());
        }
    }
    values
}

#[test]
fn py_repr_matches_python_on_many_values() {
    let values = probe_values();
    let script =
        "import json,sys\nprint(json.dumps([repr(v) for v in json.loads(sys.stdin.read())]))";
    let Some(out) = run_python(script, &serde_json::to_string(&values).expect("json")) else {
        return;
    };
    let expected: Vec<String> = serde_json::from_str(&out).expect("python output");
    assert_eq!(expected.len(), values.len());
    let mut bad = Vec::new();
    for (value, want) in values.iter().zip(&expected) {
        let got = py_repr(value);
        if &got != want {
            bad.push(format!("value {value}\n  python: {want}\n  ours:   {got}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} values differ:\n{}",
        bad.len(),
        values.len(),
        bad.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn float_repr_matches_python_float_repr() {
    let mut mix = Mix(7);
    let floats: Vec<f64> = std::iter::repeat_with(|| f64::from_bits(mix.next()))
        .filter(|x| x.is_finite())
        .take(2000)
        .collect();
    let input: Vec<String> = floats
        .iter()
        .map(|x| format!("{:016x}", x.to_bits()))
        .collect();
    let script = "import sys,struct\nfor h in sys.stdin.read().split():\n    print(repr(struct.unpack('>d', bytes.fromhex(h))[0]))";
    let Some(out) = run_python(script, &input.join("\n")) else {
        return;
    };
    for (x, want) in floats.iter().zip(out.lines()) {
        assert_eq!(py_float_repr(*x), want, "bits {:016x}", x.to_bits());
    }
}
