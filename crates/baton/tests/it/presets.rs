//! The presets in `examples/` estimate without keys: each is run with `--dry-run` after
//! pointing its paths at a LiC-format file built from real LiC items and at the LiC prompt
//! files in `../shared/lic`.

use std::path::{Path, PathBuf};

use crate::support::read_json;
use crate::{stderr, stdout};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A LiC-format file of real LiC items for every family: the replies task file (math,
/// actions) and the LiC items of the prompt vectors (code, database, data2text).
fn lic_file(dir: &Path) -> Option<PathBuf> {
    let replies = baton_fixture::shared_dir("replies")?;
    let conformance = baton_fixture::shared_dir("conformance")?;
    let mut items = read_json(&replies.join("tasks.json"));
    let list = items.as_array_mut().expect("an array");
    list.extend(
        read_json(&conformance.join("prompt_tasks.json"))
            .as_array()
            .expect("an array")
            .iter()
            .filter(|t| !t["task_id"].as_str().unwrap_or("").starts_with("sample-"))
            .cloned(),
    );
    let path = dir.join("sharded_instructions_600.json");
    std::fs::write(&path, serde_json::to_string(&items).unwrap()).unwrap();
    Some(path)
}

#[test]
fn every_preset_estimates_without_keys() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (Some(data), Some(lic)) = (lic_file(dir.path()), baton_fixture::shared_dir("lic")) else {
        return;
    };
    let examples = repo().join("examples");
    for name in ["handoff-tax-chat.toml", "local-openai-compatible.toml"] {
        let text = std::fs::read_to_string(examples.join(name)).expect("preset");
        assert!(
            text.contains("dataset = \"../datasets/lic/sharded_instructions_600.json\""),
            "{name}"
        );
        let text = text
            .replace(
                "../datasets/lic/sharded_instructions_600.json",
                &data.display().to_string(),
            )
            .replace(
                "../datasets/lic/lost_in_conversation",
                &lic.display().to_string(),
            );
        let spec = dir.path().join(name);
        std::fs::write(&spec, text).unwrap();
        if name.starts_with("local") {
            std::fs::copy(
                examples.join("local-prices.json"),
                dir.path().join("local-prices.json"),
            )
            .unwrap();
        }
        let spec = spec.display().to_string();
        let out = dir.path().join("out").display().to_string();
        // no Spider databases here: the database items are left out, with why
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["run", &spec, "--dry-run", "--skip-invalid", "--out", &out])
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("BATON_LOG")
            .output()
            .expect("baton runs");
        assert!(run.status.success(), "{name}: {}", stderr(&run));
        assert!(stdout(&run).contains("calls"), "{name}: {}", stdout(&run));
    }
}
