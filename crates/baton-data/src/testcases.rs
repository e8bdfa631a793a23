//! LiC's code test cases (`TaskCode.load_test_cases`): `public_test_cases`, then
//! `private_test_cases`, each JSON text of a list of `{"input": str, "output": str}`, where
//! the private list may instead be packed as LiveCodeBench packs it,
//! `base64(zlib(pickle(json_text)))`.
//!
//! One reader for everyone who needs them: `data check` validates both lists (the packed
//! one unpacked), and the code grader runs them. The pickle holds one `str`, so a reader for
//! the handful of opcodes `pickle.dumps(str)` emits (protocols 0-5) is enough; no crate
//! reads pickles without also executing what they ask for. Unpacking is bounded
//! ([`MAX_UNPACKED_BYTES`]): a zlib stream of a few kilobytes can inflate to gigabytes.

use std::io::Read;

use base64::Engine as _;
use serde_json::Value;

/// The most bytes a packed `private_test_cases` may inflate to (256 MiB).
///
/// LiveCodeBench's largest packed test lists inflate to some tens of megabytes; a list
/// past this bound is refused as malformed rather than held in memory (the grader holds
/// it once per answer being graded).
pub const MAX_UNPACKED_BYTES: u64 = 256 << 20;

/// One call-based test: the argument lines and the expected output, both JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCase {
    /// One JSON value per line, one line per positional argument.
    pub input: String,
    /// One JSON value.
    pub output: String,
}

/// All tests of a code sample, public first, in order, as LiC loads them.
///
/// An absent `private_test_cases` means none. The error says which key is wrong and why
/// (LiC raises there, so the answer scores 0).
pub fn load_tests(sample: &Value) -> Result<Vec<TestCase>, String> {
    let public = match sample.get("public_test_cases") {
        Some(Value::String(text)) => {
            test_list(text).map_err(|e| format!("public_test_cases: {e}"))?
        }
        Some(_) => return Err("public_test_cases is not a string".into()),
        None => return Err("sample has no public_test_cases".into()),
    };
    let private = match sample.get("private_test_cases") {
        None => Vec::new(),
        Some(Value::String(text)) => {
            private_tests(text).map_err(|e| format!("private_test_cases: {e}"))?
        }
        Some(_) => return Err("private_test_cases is not a string".into()),
    };
    let mut all = public;
    all.extend(private);
    Ok(all)
}

/// The tests in a `private_test_cases` string: JSON text if it parses as JSON (LiC tries
/// that first), else the packed form.
pub fn private_tests(text: &str) -> Result<Vec<TestCase>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => cases(value),
        Err(_) => test_list(&unpack_private(text)?),
    }
}

/// The tests in JSON text of a list of `{"input": str, "output": str}`.
pub fn test_list(text: &str) -> Result<Vec<TestCase>, String> {
    let value = serde_json::from_str::<Value>(text).map_err(|e| e.to_string())?;
    cases(value)
}

fn cases(value: Value) -> Result<Vec<TestCase>, String> {
    let Value::Array(items) = value else {
        return Err("not a JSON list".into());
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, case)| {
            let Value::Object(mut case) = case else {
                return Err(format!("test {i} is not an object"));
            };
            let mut field = |key: &str| match case.remove(key) {
                Some(Value::String(s)) => Ok(s),
                Some(_) => Err(format!("test {i}: {key} is not a string")),
                None => Err(format!("test {i}: no {key}")),
            };
            Ok(TestCase {
                input: field("input")?,
                output: field("output")?,
            })
        })
        .collect()
}

/// `pickle.loads(zlib.decompress(base64.b64decode(text)))`, which must give a string of at
/// most [`MAX_UNPACKED_BYTES`] (the inflated pickle is bounded by the same).
pub fn unpack_private(text: &str) -> Result<String, String> {
    unpack_bounded(text, MAX_UNPACKED_BYTES)
}

fn unpack_bounded(text: &str, max: u64) -> Result<String, String> {
    // b64decode without validate=True skips bytes outside the alphabet.
    let cleaned: String = text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
        .collect();
    let compressed = base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .map_err(|e| format!("base64: {e}"))?;
    let mut pickled = Vec::new();
    flate2::read::ZlibDecoder::new(compressed.as_slice())
        .take(max + 1)
        .read_to_end(&mut pickled)
        .map_err(|e| format!("zlib: {e}"))?;
    if pickled.len() as u64 > max {
        return Err(format!("the packed tests inflate to more than {max} bytes"));
    }
    unpickle_str(&pickled)
}

/// Read a pickle holding a single `str` (or `bytes`, read as UTF-8 text).
pub fn unpickle_str(data: &[u8]) -> Result<String, String> {
    let mut pos = 0;
    let mut value: Option<Vec<u8>> = None;
    let take = |pos: &mut usize, n: usize| -> Result<&[u8], String> {
        let end = pos
            .checked_add(n)
            .filter(|&e| e <= data.len())
            .ok_or("truncated pickle")?;
        let slice = &data[*pos..end];
        *pos = end;
        Ok(slice)
    };
    let uint = |bytes: &[u8]| {
        bytes
            .iter()
            .rev()
            .fold(0usize, |acc, &b| (acc << 8) | b as usize)
    };
    loop {
        let op = *take(&mut pos, 1)?.first().ok_or("truncated pickle")?;
        match op {
            0x80 => {
                take(&mut pos, 1)?; // PROTO n
            }
            0x95 => {
                take(&mut pos, 8)?; // FRAME length
            }
            0x8c | b'C' => {
                let n = take(&mut pos, 1)?[0] as usize; // SHORT_BINUNICODE / SHORT_BINBYTES
                value = Some(take(&mut pos, n)?.to_vec());
            }
            b'X' | b'B' => {
                let n = uint(take(&mut pos, 4)?); // BINUNICODE / BINBYTES
                value = Some(take(&mut pos, n)?.to_vec());
            }
            0x8d | 0x8e => {
                let n = uint(take(&mut pos, 8)?); // BINUNICODE8 / BINBYTES8
                value = Some(take(&mut pos, n)?.to_vec());
            }
            b'V' => {
                let end = data[pos..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .ok_or("truncated pickle")?;
                let raw = take(&mut pos, end)?;
                take(&mut pos, 1)?;
                value = Some(raw_unicode_escape(raw)?.into_bytes());
            }
            0x94 => {} // MEMOIZE
            b'q' => {
                take(&mut pos, 1)?; // BINPUT
            }
            b'r' => {
                take(&mut pos, 4)?; // LONG_BINPUT
            }
            b'p' => {
                let end = data[pos..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .ok_or("truncated pickle")?;
                take(&mut pos, end + 1)?; // PUT
            }
            b'.' => break,
            other => {
                return Err(format!(
                    "unsupported pickle opcode 0x{other:02x} (not a plain string)"
                ));
            }
        }
    }
    let bytes = value.ok_or("the pickle holds no string")?;
    String::from_utf8(bytes).map_err(|e| format!("the pickled string is not UTF-8: {e}"))
}

/// Python's `raw-unicode-escape` decoding (pickle protocol 0): latin-1 bytes with
/// `\uXXXX` and `\UXXXXXXXX` escapes.
fn raw_unicode_escape(raw: &[u8]) -> Result<String, String> {
    let mut out = String::new();
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        let width = match (b, raw.get(i + 1)) {
            (b'\\', Some(b'u')) => 4,
            (b'\\', Some(b'U')) => 8,
            _ => 0,
        };
        if width == 0 {
            out.push(b as char);
            i += 1;
            continue;
        }
        let hex = raw.get(i + 2..i + 2 + width).ok_or("truncated escape")?;
        let code = u32::from_str_radix(std::str::from_utf8(hex).map_err(|e| e.to_string())?, 16)
            .map_err(|e| e.to_string())?;
        out.push(char::from_u32(code).ok_or("escape is not a character")?);
        i += 2 + width;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unpickles_every_protocol() {
        // pickle.dumps('héllo 😀', protocol=p) for p = 0, 2 and 4.
        let p0 = b"Vh\xe9llo \\U0001f600\np0\n.";
        let p2 = b"\x80\x02X\x0b\x00\x00\x00h\xc3\xa9llo \xf0\x9f\x98\x80q\x00.";
        let p4 = b"\x80\x04\x95\x0f\x00\x00\x00\x00\x00\x00\x00\x8c\x0bh\xc3\xa9llo \xf0\x9f\x98\x80\x94.";
        for data in [&p0[..], &p2[..], &p4[..]] {
            assert_eq!(unpickle_str(data).unwrap(), "héllo 😀");
        }
        assert!(
            unpickle_str(b"\x80\x04K\x01.").is_err(),
            "an int is not a string"
        );
        assert!(unpickle_str(b"\x80\x04\x8c\x05ab").is_err(), "truncated");
    }

    #[test]
    fn private_tests_may_be_packed() {
        // base64(zlib(pickle('[{"input": "[5]\\n1", "output": "[5]"}]'))), as LCB stores them.
        let packed = "eJxrYJn6iAECeu5FVytl5hWUlihZKShFm+goQFFsTJ6Bko6CUn5pCUwyFsQvSS0uKaksSAWJpJXmJZdk5ucl5ijV6iggm2Opo2Cho2Cuo2Cmo2AKNMoUzShUeeLNJdVVsVP0AB7dRVk=";
        let sample = json!({
            "public_test_cases": "[{\"input\": \"[1, 2, 3]\\n2\", \"output\": \"[1, 2]\"}]",
            "private_test_cases": packed,
        });
        let tests = load_tests(&sample).unwrap();
        assert_eq!(tests[0].input, "[1, 2, 3]\n2");
        assert!(tests.len() > 1);
    }

    #[test]
    fn unpacking_is_bounded() {
        use std::io::Write;
        // A small zlib bomb against a small bound (the real bound is tested on a real bomb
        // in tests/it/errors.rs).
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&vec![0u8; 3 << 20]).unwrap();
        let packed = base64::engine::general_purpose::STANDARD.encode(z.finish().unwrap());
        let err = unpack_bounded(&packed, 2 << 20).unwrap_err();
        assert!(err.contains("inflate to more than"), "{err}");
        assert!(
            private_tests("eJzLSM3JyQcABiwCFQ==").is_err(),
            "zlib of b'hello' is no pickle"
        );
    }

    #[test]
    fn malformed_samples_are_errors() {
        assert!(load_tests(&json!({})).is_err());
        assert!(
            load_tests(&json!({"public_test_cases": "[{\"input\": 1, \"output\": \"1\"}]"}))
                .is_err()
        );
        assert!(
            load_tests(&json!({"public_test_cases": "[]", "private_test_cases": "!!"})).is_err()
        );
        assert!(
            load_tests(&json!({"public_test_cases": "[]", "private_test_cases": null})).is_err()
        );
        assert_eq!(
            load_tests(&json!({"public_test_cases": "[]"})).unwrap(),
            vec![]
        );
    }
}
