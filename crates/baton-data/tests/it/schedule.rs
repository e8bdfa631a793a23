//! The schedule is a pure function of (task, templates).

use baton_data::{Templates, build_schedule, sample_dataset};
use baton_types::Family;

#[test]
fn every_sample_task_has_a_schedule() {
    let templates = Templates::embedded();
    for task in &sample_dataset().tasks {
        let s = build_schedule(task, &templates).expect("sample tasks are complete");
        assert_eq!(s.user_turns.len(), task.shards.len(), "{}", task.task_id);
        let n = s.user_turns.len();
        for (turn, shard) in s.user_turns[..n - 1].iter().zip(&task.shards) {
            assert_eq!(
                turn, &shard.shard,
                "{}: middle turns are verbatim",
                task.task_id
            );
        }
        let last = format!(
            "{}\n\n{}",
            task.shards[n - 1].shard,
            templates.final_instruction(task.family)
        );
        assert_eq!(s.user_turns[n - 1], last, "{}", task.task_id);
        assert!(
            !s.system.contains("[["),
            "{}: unfilled placeholder",
            task.task_id
        );
        assert_eq!(s.sha256.len(), 64);
    }
}

#[test]
fn schedule_hash_is_deterministic_and_tracks_every_input() {
    let dataset = sample_dataset();
    let templates = Templates::embedded();
    let task = dataset.task("sample-database/01").expect("bundled");
    let a = build_schedule(task, &templates).expect("schedule");
    let again = build_schedule(&task.clone(), &Templates::embedded()).expect("schedule");
    assert_eq!(a, again);

    let mut edited = task.clone();
    edited.shards[1].shard.push(' ');
    let b = build_schedule(&edited, &templates).expect("schedule");
    assert_ne!(a.sha256, b.sha256, "a shard edit must change the hash");

    let mut schema = task.clone();
    schema.sample["schema_sql"] = serde_json::Value::from("CREATE TABLE t (x int);");
    let c = build_schedule(&schema, &templates).expect("schedule");
    assert_ne!(a.sha256, c.sha256, "the filled system prompt is hashed");

    let mut reordered = task.clone();
    reordered.shards.swap(0, 1);
    let d = build_schedule(&reordered, &templates).expect("schedule");
    assert_ne!(a.sha256, d.sha256, "reveal order is hashed");

    // Every distinct task gets a distinct plan.
    let mut hashes: Vec<String> = dataset
        .tasks
        .iter()
        .map(|t| build_schedule(t, &templates).expect("schedule").sha256)
        .collect();
    hashes.sort();
    hashes.dedup();
    assert_eq!(hashes.len(), dataset.tasks.len());
}

#[test]
fn edited_templates_change_prompt_and_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let embedded = Templates::embedded();
    embedded.write_dir(dir.path()).expect("export");
    std::fs::write(
        dir.path().join("math/final_instruction.txt"),
        "Finish with \\boxed{answer}.\n",
    )
    .expect("edit");
    let edited = Templates::from_dir(dir.path()).expect("read back");
    assert_ne!(edited.sha256(), embedded.sha256());
    assert_eq!(
        edited.final_instruction(Family::Math),
        "Finish with \\boxed{answer}."
    );

    let dataset = sample_dataset();
    let math = dataset.task("sample-math/01").expect("bundled");
    let a = build_schedule(math, &embedded).expect("schedule");
    let b = build_schedule(math, &edited).expect("schedule");
    assert_eq!(a.system, b.system);
    assert_ne!(a.sha256, b.sha256);
    assert!(
        b.user_turns
            .last()
            .expect("turns")
            .ends_with("\n\nFinish with \\boxed{answer}.")
    );

    // Untouched families keep their plans.
    let code = dataset.task("sample-code/01").expect("bundled");
    assert_eq!(
        build_schedule(code, &embedded).expect("schedule"),
        build_schedule(code, &edited).expect("schedule")
    );
}

#[test]
fn repository_templates_are_the_embedded_ones() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evaluators");
    let from_disk = Templates::from_dir(&dir).expect("evaluators/ is complete");
    assert_eq!(from_disk.sha256(), Templates::embedded().sha256());
}
