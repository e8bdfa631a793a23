//! The bundled agent sample set, `datasets/agent-sample/`, compiled into the binary (a
//! build script embeds every file) so `baton env check-tasks agent-sample` and the agent
//! demo need nothing on disk.

use std::collections::BTreeMap;

use crate::error::AgentError;
use crate::own::{TaskFolder, check_unique, parse_task};
use crate::task::{AgentTask, Repository, TreeFile};

include!(concat!(env!("OUT_DIR"), "/agent_sample.rs"));

/// The name that selects the bundled set.
pub const SAMPLE_NAME: &str = "agent-sample";

/// The bundled tasks, sorted by id.
pub fn sample_tasks() -> Result<Vec<AgentTask>, AgentError> {
    let mut by_task: BTreeMap<&str, BTreeMap<String, &'static [u8]>> = BTreeMap::new();
    for (path, bytes) in FILES {
        if let Some((task, rest)) = path.split_once('/') {
            by_task
                .entry(task)
                .or_default()
                .insert(rest.to_string(), bytes);
        }
    }
    let mut tasks = Vec::new();
    for (name, files) in by_task {
        if !files.contains_key("task.toml") {
            continue;
        }
        let repo: Vec<TreeFile> = files
            .iter()
            .filter_map(|(p, b)| {
                p.strip_prefix("repo/").map(|rel| TreeFile {
                    path: rel.to_string(),
                    contents: b.to_vec(),
                    executable: false,
                })
            })
            .collect();
        let folder = TaskFolder {
            display: format!("datasets/agent-sample/{name}"),
            name: name.to_string(),
            files: files
                .iter()
                .filter(|(p, _)| !p.starts_with("repo/"))
                .map(|(p, b)| (p.clone(), *b))
                .collect(),
            repository: Repository::Files(repo),
        };
        tasks.push(parse_task(&folder)?);
    }
    check_unique("datasets/agent-sample", &tasks)?;
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Difficulty, Reference};

    #[test]
    fn the_sample_parses_with_every_bucket_and_a_reference_each() {
        let tasks = sample_tasks().unwrap();
        assert!((10..=12).contains(&tasks.len()), "{}", tasks.len());
        for d in Difficulty::ALL {
            assert!(
                tasks.iter().filter(|t| t.difficulty == d).count() >= 3,
                "{d}"
            );
        }
        for t in &tasks {
            assert!(matches!(t.reference, Some(Reference::Files(_))), "{}", t.id);
            assert!(!t.tests.files.is_empty(), "{}", t.id);
            let patch = t.reference_patch().unwrap().unwrap();
            assert!(patch.starts_with("diff --git "), "{}", t.id);
        }
    }
}
