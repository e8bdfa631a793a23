//! Side by side with CPython 3.11 on generated inputs: every rule of the crate, every code point.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use baton_fixture::SplitMix;
use serde_json::{Value, json};

/// Reads one JSON object of inputs, prints one JSON object of CPython's answers.
const SCRIPT: &str = r#"
import json, struct, sys, unicodedata
def f(h):
    return struct.unpack(">d", bytes.fromhex(h))[0]
c = json.load(sys.stdin)
cps = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
out = {
    "str_repr": [repr(s) for s in c["strings"]],
    "unicode_escape": [s.encode("unicode_escape").decode("ascii") for s in c["strings"]],
    "strip": [s.strip() for s in c["spaced"]],
    "rstrip": [s.rstrip() for s in c["spaced"]],
    "split": [s.split() for s in c["spaced"]],
    "lower": [s.lower() for s in c["cased"]],
    "upper": [s.upper() for s in c["cased"]],
    "bytes_repr": [repr(bytes.fromhex(h)) for h in c["bytes"]],
    "decode_utf8_ignore": [bytes.fromhex(h).decode("utf-8", "ignore") for h in c["utf8"]],
    "float_repr": [repr(f(h)) for h in c["floats"]],
    "complex_repr": [repr(complex(f(a), f(b))) for a, b in c["complex"]],
    "json_repr": [repr(json.loads(t)) for t in c["json"]],
    "isprintable": "".join("1" if chr(cp).isprintable() else "0" for cp in cps),
    "assigned": "".join("0" if unicodedata.category(chr(cp)) == "Cn" else "1" for cp in cps),
    "isspace": "".join("1" if chr(cp).isspace() else "0" for cp in cps),
    "lower_map": {str(cp): chr(cp).lower() for cp in cps if chr(cp).lower() != chr(cp)},
    "upper_map": {str(cp): chr(cp).upper() for cp in cps if chr(cp).upper() != chr(cp)},
}
json.dump(out, sys.stdout)
"#;

/// Generated strings.
trait Strings {
    /// A string of 0 to `max_len` characters drawn from `alphabet`.
    fn string(&mut self, alphabet: &[char], max_len: usize) -> String;
}

impl Strings for SplitMix {
    fn string(&mut self, alphabet: &[char], max_len: usize) -> String {
        let len = self.below(max_len + 1);
        (0..len).map(|_| self.pick(alphabet)).collect()
    }
}

fn all_chars() -> Vec<char> {
    (0..0x11_0000u32).filter_map(char::from_u32).collect()
}

/// Every code point in strings of 128, then strings that exercise quote choice and escapes.
fn strings(mix: &mut SplitMix) -> Vec<String> {
    let mut out: Vec<String> = all_chars()
        .chunks(128)
        .map(|chunk| chunk.iter().collect())
        .collect();
    let alphabet = [
        'a',
        'Z',
        ' ',
        '\'',
        '"',
        '\\',
        '\t',
        '\n',
        '\r',
        '\0',
        '\u{7}',
        '\u{7f}',
        '\u{80}',
        '\u{a0}',
        '\u{ad}',
        'é',
        '\u{300}',
        '\u{378}',
        '\u{200b}',
        '\u{2028}',
        '\u{feff}',
        '\u{fffd}',
        '\u{ffff}',
        '🎉',
        '\u{e0001}',
        '\u{f0000}',
        '\u{10ffff}',
        '中',
    ];
    out.extend((0..3000).map(|_| mix.string(&alphabet, 12)));
    out.push(String::new());
    out
}

/// Strings built around every whitespace character and its near misses.
fn spaced(mix: &mut SplitMix) -> Vec<String> {
    let mut alphabet: Vec<char> = all_chars()
        .into_iter()
        .filter(|c| c.is_whitespace() || baton_py::is_space(*c))
        .collect();
    alphabet.extend([
        'a', 'b', '\u{200b}', '\u{180e}', '\u{feff}', '\u{2060}', '\0', 'x',
    ]);
    let mut out: Vec<String> = alphabet.iter().map(|c| format!("{c}a{c}b {c}")).collect();
    out.extend((0..3000).map(|_| mix.string(&alphabet, 10)));
    out
}

/// Case contexts: final sigma next to cased, case-ignorable and newly assigned characters,
/// special casings, and every code point in strings of 128.
fn cased(mix: &mut SplitMix) -> Vec<String> {
    let alphabet = [
        'Σ',
        'σ',
        'ς',
        'A',
        'a',
        ' ',
        '.',
        '1',
        '\'',
        '\u{300}',
        '\u{345}',
        '\u{2019}',
        'İ',
        'ß',
        'ﬁ',
        'ŉ',
        'ǅ',
        'ɤ',
        'ƛ',
        '\u{a7cb}',
        '\u{a7dc}',
        '\u{10d50}',
        '\u{10d70}',
        '\u{16ea0}',
        'Ω',
        'ᾈ',
        '\u{378}',
    ];
    let mut out: Vec<String> = (0..5000).map(|_| mix.string(&alphabet, 8)).collect();
    out.extend(
        all_chars()
            .chunks(128)
            .map(|chunk| chunk.iter().collect::<String>()),
    );
    out
}

/// Every byte alone, then byte strings heavy in quotes, escapes and high bytes.
fn byte_strings(mix: &mut SplitMix) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let alphabet = [
        b'a', b'\'', b'"', b'\\', b'\t', b'\n', b'\r', 0, 0x1f, 0x7e, 0x7f, 0x80, 0xff,
    ];
    for _ in 0..2000 {
        let len = mix.below(10);
        out.push((0..len).map(|_| mix.pick(&alphabet)).collect());
    }
    out
}

/// Byte strings for the UTF-8 decoder: valid encodings cut short, lone continuation bytes,
/// overlong forms, surrogates and code points past U+10FFFF.
fn utf8_strings(mix: &mut SplitMix) -> Vec<Vec<u8>> {
    let pieces: [&[u8]; 16] = [
        b"a",
        "é".as_bytes(),
        "中".as_bytes(),
        "🎉".as_bytes(),
        b"\x80",
        b"\xbf",
        b"\xc0\xaf",
        b"\xc2",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\xef\xbf",
        b"\xf0\x9f\x98",
        b"\xf4\x90\x80\x80",
        b"\xf5",
        b"\xff",
        b"\xe0\x80\x80",
    ];
    let mut out: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b, b'x']).collect();
    for _ in 0..4000 {
        let len = mix.below(6);
        out.push((0..len).flat_map(|_| mix.pick(&pieces).to_vec()).collect());
    }
    out
}

/// Random bit patterns, every power of two, the neighbours of every power of ten, subnormals,
/// the fixed/exponent switch points, and values whose shortest digits are a tie.
fn floats(mix: &mut SplitMix) -> Vec<f64> {
    let mut out = vec![0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
    out.extend([
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        2.675,
        247_600_580_198_296.62,
    ]);
    while out.len() < 20_000 {
        let x = f64::from_bits(mix.next_u64());
        if x.is_finite() {
            out.push(x);
        }
    }
    out.extend((-1074..=1023).map(|e| 2f64.powi(e)));
    for e in -325..=308 {
        let x: f64 = format!("1e{e}").parse().expect("a float");
        out.extend([x, x.next_up(), x.next_down(), -x, 9.5 * x, 1.5 * x]);
    }
    for _ in 0..2000 {
        out.push(f64::from_bits(mix.next_u64() & 0x000F_FFFF_FFFF_FFFF));
    }
    // m / 2^k with a 53-bit m: k fraction bits, so the exact value ends in a 5 and the
    // shortest round-trip form is often a tie between two strings.
    for _ in 0..20_000 {
        let m = (1u64 << 52) | (mix.next_u64() >> 12);
        let k = 1 + mix.below(12) as i32;
        out.push(m as f64 / 2f64.powi(k));
    }
    for x in [
        1e16_f64,
        1e-4,
        1e-5,
        9_999_999_999_999_998.0,
        123_456_789.125,
    ] {
        out.extend([x, x.next_up(), x.next_down()]);
    }
    out
}

fn complexes(floats: &[f64]) -> Vec<(f64, f64)> {
    let parts = [
        0.0,
        -0.0,
        1.0,
        -2.5,
        1e16,
        1e-5,
        f64::INFINITY,
        -f64::INFINITY,
        f64::NAN,
    ];
    let mut out: Vec<(f64, f64)> = parts
        .iter()
        .flat_map(|&re| parts.iter().map(move |&im| (re, im)))
        .collect();
    out.extend(floats.chunks(2).take(2000).map(|p| (p[0], p[p.len() - 1])));
    out
}

fn json_texts(strings: &[String], floats: &[f64]) -> Vec<String> {
    let mut values = vec![
        json!({"k": [true, false, null, 1, 2.5, "x"], "nested": {"e": {}, "l": []}}),
        json!([0, -7, i64::MIN, u64::MAX, 1e16, 1e-5, 0.1]),
        json!([{"name": "get_weather", "parameters": {"unit": ["celsius", "it's"]}}]),
    ];
    values.extend(
        floats
            .iter()
            .take(3000)
            .filter(|x| x.is_finite())
            .map(|&x| json!(x)),
    );
    values.extend(
        strings
            .iter()
            .step_by(7)
            .map(|s| json!({ s.clone(): [s.clone()] })),
    );
    values.iter().map(Value::to_string).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn float_hex(x: f64) -> String {
    format!("{:016x}", x.to_bits())
}

/// Mismatches of one rule, a few shown in full.
#[derive(Default)]
struct Report {
    failures: Vec<String>,
}

impl Report {
    fn compare<T: std::fmt::Debug, W: PartialEq<G> + std::fmt::Debug, G: std::fmt::Debug>(
        &mut self,
        rule: &str,
        inputs: &[T],
        want: &[W],
        got: impl Fn(&T) -> G,
    ) {
        assert_eq!(
            inputs.len(),
            want.len(),
            "{rule}: CPython answered a different count"
        );
        let bad: Vec<String> = inputs
            .iter()
            .zip(want)
            .filter_map(|(input, want)| {
                let got = got(input);
                (*want != got).then(|| {
                    format!(
                        "  {}\n    cpython: {}\n    baton:   {}",
                        clip(input),
                        clip(want),
                        clip(&got)
                    )
                })
            })
            .collect();
        if !bad.is_empty() {
            self.failures.push(format!(
                "{rule}: {} of {} differ, e.g.\n{}",
                bad.len(),
                inputs.len(),
                bad.iter().take(4).cloned().collect::<Vec<_>>().join("\n")
            ));
        }
    }
}

/// `Debug` of `value`, cut to a readable length (the inputs hold up to 128 code points).
fn clip(value: &impl std::fmt::Debug) -> String {
    let text = format!("{value:?}");
    match text.char_indices().nth(240) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text,
    }
}

fn strings_of(out: &Value, key: &str) -> Vec<String> {
    serde_json::from_value(out[key].clone()).unwrap_or_else(|e| panic!("{key}: {e}"))
}

#[test]
fn every_rule_matches_cpython_311() {
    let Some(python) = baton_fixture::cpython_with_unicode("14.0.0") else {
        return;
    };
    let mut mix = SplitMix::new(0x5eed);
    let strings = strings(&mut mix);
    let spaced = spaced(&mut mix);
    let cased = cased(&mut mix);
    let bytes = byte_strings(&mut mix);
    let utf8 = utf8_strings(&mut mix);
    let floats = floats(&mut mix);
    let complexes = complexes(&floats);
    let json_texts = json_texts(&strings, &floats);
    let input = json!({
        "strings": strings,
        "spaced": spaced,
        "cased": cased,
        "bytes": bytes.iter().map(|b| hex(b)).collect::<Vec<_>>(),
        "utf8": utf8.iter().map(|b| hex(b)).collect::<Vec<_>>(),
        "floats": floats.iter().map(|&x| float_hex(x)).collect::<Vec<_>>(),
        "complex": complexes.iter().map(|&(a, b)| [float_hex(a), float_hex(b)]).collect::<Vec<_>>(),
        "json": json_texts,
    });
    let out: Value =
        serde_json::from_str(&python.run(SCRIPT, &input.to_string())).expect("CPython's JSON");

    let mut report = Report::default();
    report.compare("repr(str)", &strings, &strings_of(&out, "str_repr"), |s| {
        baton_py::str_repr(s)
    });
    report.compare(
        "unicode_escape",
        &strings,
        &strings_of(&out, "unicode_escape"),
        |s| baton_py::unicode_escape(s),
    );
    report.compare("strip()", &spaced, &strings_of(&out, "strip"), |s| {
        baton_py::strip(s).to_owned()
    });
    report.compare("rstrip()", &spaced, &strings_of(&out, "rstrip"), |s| {
        baton_py::rstrip(s).to_owned()
    });
    let splits: Vec<Vec<String>> = serde_json::from_value(out["split"].clone()).expect("split");
    report.compare("split()", &spaced, &splits, |s| {
        baton_py::split(s).map(str::to_owned).collect::<Vec<_>>()
    });
    report.compare("lower()", &cased, &strings_of(&out, "lower"), |s| {
        baton_py::lower(s)
    });
    report.compare("upper()", &cased, &strings_of(&out, "upper"), |s| {
        baton_py::upper(s)
    });
    report.compare(
        "repr(bytes)",
        &bytes,
        &strings_of(&out, "bytes_repr"),
        |b| baton_py::bytes_repr(b),
    );
    report.compare(
        "decode('utf-8', 'ignore')",
        &utf8,
        &strings_of(&out, "decode_utf8_ignore"),
        |b| baton_py::decode_utf8_ignore(b),
    );
    report.compare(
        "repr(float)",
        &floats,
        &strings_of(&out, "float_repr"),
        |&x| baton_py::float_repr(x),
    );
    report.compare(
        "repr(complex)",
        &complexes,
        &strings_of(&out, "complex_repr"),
        |&(re, im)| baton_py::complex_repr(re, im),
    );
    report.compare(
        "repr(json.loads(...))",
        &json_texts,
        &strings_of(&out, "json_repr"),
        |t| baton_py::json_repr(&serde_json::from_str(t).expect("our own JSON")),
    );

    let chars = all_chars();
    let flags = |key: &str| -> Vec<bool> {
        out[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key} is a string"))
            .bytes()
            .map(|b| b == b'1')
            .collect()
    };
    report.compare("isprintable()", &chars, &flags("isprintable"), |&c| {
        baton_py::is_printable(c)
    });
    report.compare("category != 'Cn'", &chars, &flags("assigned"), |&c| {
        baton_py::is_assigned(c)
    });
    report.compare("isspace()", &chars, &flags("isspace"), |&c| {
        baton_py::is_space(c)
    });
    for (rule, key, ours) in [
        (
            "lower() of each code point",
            "lower_map",
            baton_py::lower as fn(&str) -> String,
        ),
        ("upper() of each code point", "upper_map", baton_py::upper),
    ] {
        let want: BTreeMap<u32, String> =
            serde_json::from_value::<BTreeMap<String, String>>(out[key].clone())
                .expect("a map")
                .into_iter()
                .map(|(cp, s)| (cp.parse().expect("a code point"), s))
                .collect();
        let got: BTreeMap<u32, String> = chars
            .iter()
            .filter_map(|&c| {
                let mapped = ours(c.encode_utf8(&mut [0; 4]));
                (mapped != c.to_string()).then_some((u32::from(c), mapped))
            })
            .collect();
        let cps: Vec<u32> = want.keys().chain(got.keys()).copied().collect();
        let want: Vec<Option<&String>> = cps.iter().map(|cp| want.get(cp)).collect();
        report.compare(rule, &cps, &want, |cp| got.get(cp));
    }

    assert!(
        report.failures.is_empty(),
        "baton-py differs from {} {}:\n{}",
        python.program,
        python.version,
        report.failures.join("\n")
    );
}
