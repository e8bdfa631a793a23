//! Every dataset problem names the file, the item or line, the task id and the key.

use baton_data::{DataError, Problems, load, parse};

fn err(name: &str, text: &str) -> String {
    match parse(name, text) {
        Ok(ds) => panic!("{name} should not validate, got {} tasks", ds.tasks.len()),
        Err(e) => e.to_string(),
    }
}

const SHARDS: &str = r#"[{"shard_id": 1, "shard": "a"}, {"shard_id": 2, "shard": "b"}]"#;

#[test]
fn missing_keys_and_wrong_types_in_a_json_array() {
    let text = format!(
        r#"[
  {{"task_id": "m/0", "task": "math", "shards": {SHARDS}, "answer": "so #### 4"}},
  {{"task_id": "m/1", "task": "math", "shards": {SHARDS}, "answer": "4"}},
  {{"task_id": "d/2", "task": "database", "shards": {SHARDS}, "db_id": 7, "reference_sql": "SELECT 1"}},
  {{"task_id": "a/3", "task": "actions", "shards": {SHARDS}, "function": [{{"description": "x"}}], "reference_answer": {{}}, "language": "Python"}},
  {{"task_id": "c/4", "task": "code", "shards": {SHARDS}, "metadata": {{}}, "public_test_cases": "[{{\"input\": 1}}]", "private_test_cases": "[oops"}},
  {{"task_id": "t/5", "task": "data2text", "shards": {SHARDS}, "references": []}},
  {{"task": "math", "shards": {SHARDS}, "answer": "so #### 1"}}
]"#
    );
    insta::assert_snapshot!(err("datasets/x.json", &text), @r#####"
    dataset datasets/x.json is invalid: 11 problems found
      datasets/x.json: item 1 (task_id "m/1"): key "answer": expected a string containing "####"
      datasets/x.json: item 2 (task_id "d/2"): key "db_id": expected a string, found a number
      datasets/x.json: item 2 (task_id "d/2"): key "schema_sql": missing (expected a string)
      datasets/x.json: item 3 (task_id "a/3"): key "function[0].name": missing (expected a string)
      datasets/x.json: item 3 (task_id "a/3"): key "reference_answer": expected an array, found an object
      datasets/x.json: item 3 (task_id "a/3"): key "test_category": missing (expected a string)
      datasets/x.json: item 4 (task_id "c/4"): key "metadata.func_name": missing (expected a string)
      datasets/x.json: item 4 (task_id "c/4"): key "public_test_cases": test case 0 must be an object with string "input" and "output"
      datasets/x.json: item 4 (task_id "c/4"): key "private_test_cases": expected JSON text of an array of test cases, but it does not parse: expected value at column 2
      datasets/x.json: item 5 (task_id "t/5"): key "references": expected at least one reference sentence
      datasets/x.json: item 6: key "task_id": missing (expected a string)
    "#####);
}

#[test]
fn shard_problems_are_reported_per_shard() {
    let text = r#"[
  {"task_id": "s/0", "task": "math", "answer": "so #### 1", "shards": []},
  {"task_id": "s/1", "task": "math", "answer": "so #### 1", "shards": [{"shard_id": 1}, {"shard_id": 1, "shard": "x"}, {"shard_id": "2", "shard_text": 5}, "text"]},
  {"task_id": "s/2", "task": "poetry", "shards": [{"shard_id": 1, "shard": "x"}]},
  {"task_id": "s/3", "task": "summary"},
  {"task_id": "s/4", "task": "math", "answer": "so #### 1"}
]"#;
    insta::assert_snapshot!(err("mem.json", text), @r#"
    dataset mem.json is invalid: 8 problems found
      mem.json: item 0 (task_id "s/0"): key "shards": expected at least one shard, found an empty array
      mem.json: item 1 (task_id "s/1"): key "shards[0].shard": missing (expected a string; "shard_text" is accepted too)
      mem.json: item 1 (task_id "s/1"): key "shards[1].shard_id": shard_id 1 repeats shards[0]
      mem.json: item 1 (task_id "s/1"): key "shards[2].shard_id": expected an integer, found a string
      mem.json: item 1 (task_id "s/1"): key "shards[2].shard_text": expected a string, found a number
      mem.json: item 1 (task_id "s/1"): key "shards[3]": expected an object with "shard_id" and "shard", found a string
      mem.json: item 2 (task_id "s/2"): key "task": unknown task family "poetry" (expected one of code, database, actions, math, data2text; summary and translation are skipped)
      mem.json: item 4 (task_id "s/4"): key "shards": missing (expected an array)
    "#);
}

#[test]
fn bad_json_names_line_and_column() {
    let text = "[\n  {\"task_id\": \"a\",\n   \"task\": \"math\" \"shards\": []}\n]";
    let e = parse("datasets/broken.json", text).expect_err("syntax error");
    assert!(matches!(e, DataError::Json { line: 3, .. }), "{e:?}");
    insta::assert_snapshot!(e.to_string(), @"datasets/broken.json: invalid JSON at line 3, column 19: expected `,` or `}`");
}

#[test]
fn jsonl_problems_carry_line_numbers() {
    let good = r#"{"task_id": "j/1", "task": "data2text", "shards": [{"shard_id": 1, "shard": "t"}], "references": ["r"]}"#;
    let text = format!(
        "{good}\n\n{{\"task_id\": \"j/2\", \"task\": \"data2text\", \"shards\": [{{\"shard_id\": 1, \"shard\": \"t\"}}], \"references\": [\"r\", 3]}}\n{{not json}}\n{good}\n"
    );
    insta::assert_snapshot!(err("data/x.jsonl", &text), @r#"
    dataset data/x.jsonl is invalid: 3 problems found
      data/x.jsonl: line 3 (task_id "j/2"): key "references[1]": expected a string, found a number
      data/x.jsonl: line 4: invalid JSON at column 2: key must be a string (a file that does not start with '[' is read as JSON Lines, one object per line)
      data/x.jsonl: task_id "j/1" appears 2 times: line 1, line 5
    "#);
}

#[test]
fn duplicate_ids_list_every_position() {
    let item = |id: &str| {
        format!(
            r#"{{"task_id": "{id}", "task": "math", "answer": "so #### 2", "shards": {SHARDS}}}"#
        )
    };
    let text = format!(
        "[{}, {}, {}, {}, {}]",
        item("a"),
        item("b"),
        item("a"),
        item("b"),
        item("a")
    );
    insta::assert_snapshot!(err("dup.json", &text), @r#"
    dataset dup.json is invalid: 2 problems found
      dup.json: task_id "a" appears 3 times: item 0, item 2, item 4
      dup.json: task_id "b" appears 2 times: item 1, item 3
    "#);
}

#[test]
fn long_problem_lists_are_capped() {
    let items: Vec<String> = (0..60)
        .map(|i| {
            format!(r#"{{"task_id": "m/{i}", "task": "math", "answer": "4", "shards": {SHARDS}}}"#)
        })
        .collect();
    let e =
        parse("many.json", &format!("[{}]", items.join(",\n"))).expect_err("every item lacks ####");
    let DataError::Invalid { problems, .. } = &e else {
        panic!("expected a validation error, got {e:?}");
    };
    assert_eq!(problems.total, 60);
    assert_eq!(problems.messages.len(), Problems::CAP);
    let shown = e.to_string();
    assert!(shown.starts_with("dataset many.json is invalid: 60 problems found\n"));
    assert!(shown.ends_with("\n  ... and 10 more"), "{shown}");
    assert_eq!(shown.lines().count(), 1 + Problems::CAP + 1);
}

#[test]
fn empty_input_is_an_error() {
    insta::assert_snapshot!(err("empty.jsonl", "\n \n"), @r"
    dataset empty.jsonl is invalid: 1 problem found
      empty.jsonl: the file holds no items
    ");
}

#[test]
fn load_reads_files_and_names_missing_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tasks.jsonl");
    std::fs::write(
        &path,
        r#"{"task_id": "f/1", "task": "math", "answer": "so #### 3", "shards": [{"shard_id": 1, "shard": "q"}]}"#,
    )
    .expect("write");
    let ds = load(&path).expect("valid file");
    assert_eq!(ds.path, path);
    assert_eq!(ds.tasks[0].task_id, "f/1");

    let missing = dir.path().join("nope.json");
    let e = load(&missing).expect_err("missing file");
    assert!(matches!(e, DataError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("nope.json"), "{e}");

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, b"[\xff]").expect("write");
    let e = load(&bad).expect_err("not UTF-8");
    assert!(e.to_string().contains("not valid UTF-8"), "{e}");
}

// See: issue 9 ("packed `private_test_cases` are not checked by `data check` and are
// decompressed without a bound").
#[test]
fn issue_9_packed_private_tests_are_checked_and_bounded() {
    use base64::Engine as _;
    use std::io::Write as _;
    let pack = |pickle: &[u8]| {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(pickle).unwrap();
        base64::engine::general_purpose::STANDARD.encode(z.finish().unwrap())
    };
    // pickle.dumps(text, protocol=4) for a short str: PROTO 4, SHORT_BINUNICODE, STOP.
    let pickled = |text: &str| {
        let mut p = vec![0x80, 4, 0x8c, text.len() as u8];
        p.extend_from_slice(text.as_bytes());
        p.push(b'.');
        p
    };
    let good = pack(&pickled(r#"[{"input": "1", "output": "2"}]"#));
    let not_a_list = pack(&pickled(r#"{"input": "1"}"#));
    let no_output = pack(&pickled(r#"[{"input": "1"}]"#));
    let an_int = pack(b"\x80\x04K\x07.");
    let mut bomb = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..300 {
        bomb.write_all(&zeros).unwrap();
    }
    let bomb = base64::engine::general_purpose::STANDARD.encode(bomb.finish().unwrap());
    let item = |id: &str, private: &str| {
        format!(
            r#"{{"task_id": "{id}", "task": "code", "shards": {SHARDS}, "metadata": {{"func_name": "f"}}, "public_test_cases": "[]", "private_test_cases": "{private}"}}"#
        )
    };
    let valid = format!("[{}]", item("c/0", &good));
    assert_eq!(parse("ok.json", &valid).unwrap().tasks.len(), 1);
    let text = format!(
        "[{}, {}, {}, {}, {}, {}]",
        item("c/0", &good),
        item("c/1", &not_a_list),
        item("c/2", &no_output),
        item("c/3", &an_int),
        item("c/4", "!!not base64 at all"),
        item("c/5", &bomb),
    );
    insta::assert_snapshot!(err("packed.json", &text), @r#"
    dataset packed.json is invalid: 5 problems found
      packed.json: item 1 (task_id "c/1"): key "private_test_cases": expected JSON text of an array of test cases, found an object (after unpacking base64, zlib and pickle)
      packed.json: item 2 (task_id "c/2"): key "private_test_cases": test case 0 must be an object with string "input" and "output" (after unpacking base64, zlib and pickle)
      packed.json: item 3 (task_id "c/3"): key "private_test_cases": neither JSON text nor packed test cases: unsupported pickle opcode 0x4b (not a plain string)
      packed.json: item 4 (task_id "c/4"): key "private_test_cases": neither JSON text nor packed test cases: base64: Invalid padding
      packed.json: item 5 (task_id "c/5"): key "private_test_cases": neither JSON text nor packed test cases: the packed tests inflate to more than 268435456 bytes
    "#);
}

#[test]
fn issue_35_an_unknown_family_names_the_closest_one() {
    // See: issue 35 (did-you-mean for families)
    let item = |family: &str| {
        format!(
            r#"[{{"task_id": "m/1", "task": "{family}", "answer": "so #### 1", "shards": [{{"shard_id": 1, "shard": "x"}}]}}]"#
        )
    };
    for (typo, meant) in [
        ("maths", "math"),
        ("Database", "database"),
        ("data-to-text", "data2text"),
        ("summaries", "summary"),
    ] {
        let e = err("mem.json", &item(typo));
        assert!(
            e.contains(&format!("unknown task family \"{typo}\"")),
            "{e}"
        );
        assert!(
            e.ends_with(&format!("are skipped); did you mean \"{meant}\"?")),
            "{e}"
        );
    }
    assert!(err("mem.json", &item("poetry")).ends_with("are skipped)"));
}
