//! Writing the site: `index.html`, `data/meta.js`, the list in chunks and the transcripts
//! in chunks, each a JavaScript file that hands its JSON to the page (`BATON.put(name,
//! value)`), so the viewer works from `file://` as well as from a web server.

use std::fs;
use std::path::{Path, PathBuf};

use baton_store::Reader;
use serde_json::{Value, json};

use crate::error::ViewError;
use crate::transcript::{EpisodeHead, transcript};

/// Episodes per list chunk.
pub const LIST_CHUNK: usize = 5_000;
/// Episodes per transcript chunk.
pub const EPISODE_CHUNK: usize = 50;

/// Marks an `index.html` as this crate's, so writing again may replace the folder's data.
const MARKER: &str = "<!-- baton-view -->";
const INDEX: &str = include_str!("assets/index.html");

/// What [`write_site`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSummary {
    /// The page to open.
    pub index: PathBuf,
    /// Episodes shown.
    pub episodes: usize,
    /// Files of the episode list.
    pub list_chunks: usize,
    /// Files of transcripts.
    pub episode_chunks: usize,
}

/// Write the viewer of the store at `store` into the folder `out` (created if missing;
/// a folder holding an earlier viewer is rewritten, any other non-empty folder refused).
pub fn write_site(store: &Path, out: &Path) -> Result<SiteSummary, ViewError> {
    let reader = Reader::open(store)?;
    let experiment = reader.experiment()?;
    let agent = reader.is_agent()?;
    let heads = if agent {
        agent_heads(&reader)?
    } else {
        chat_heads(&reader)?
    };

    prepare(out)?;
    let data = out.join("data");
    let list_chunks = heads.len().div_ceil(LIST_CHUNK);
    for (i, chunk) in heads.chunks(LIST_CHUNK).enumerate() {
        let rows: Vec<Value> = chunk
            .iter()
            .enumerate()
            .map(|(j, h)| h.list_row((i * LIST_CHUNK + j) / EPISODE_CHUNK))
            .collect();
        put(&data, &format!("list-{i}"), &Value::Array(rows))?;
    }
    let episode_chunks = heads.len().div_ceil(EPISODE_CHUNK);
    for (i, chunk) in heads.chunks(EPISODE_CHUNK).enumerate() {
        // System prompts repeat across a chunk's episodes: each is written once, in
        // `systems`, and an episode's `system` is its index there.
        let mut episodes = serde_json::Map::new();
        let mut systems: Vec<Value> = Vec::new();
        for head in chunk {
            let mut t = transcript(&reader, head, agent)?;
            if let Some(system) = t.get_mut("system").filter(|s| !s.is_null()) {
                let at = match systems.iter().position(|s| s == &*system) {
                    Some(at) => at,
                    None => {
                        systems.push(system.take());
                        systems.len() - 1
                    }
                };
                *system = json!(at);
            }
            episodes.insert(head.id.to_string(), t);
        }
        put(
            &data,
            &format!("ep-{i}"),
            &json!({"systems": systems, "episodes": episodes}),
        )?;
    }
    let meta = &experiment.meta;
    put(
        &data,
        "meta",
        &json!({
            "name": meta.name,
            "kind": meta.kind.as_str(),
            "simulated": meta.simulated,
            "baton_version": meta.baton_version,
            "created_at": experiment.created_at,
            "episodes": heads.len(),
            "list_chunks": list_chunks,
            "group_label": if agent { "difficulty" } else { "family" },
        }),
    )?;
    let index = out.join("index.html");
    write(&index, INDEX.as_bytes())?;
    Ok(SiteSummary {
        index,
        episodes: heads.len(),
        list_chunks,
        episode_chunks,
    })
}

fn chat_heads(reader: &Reader) -> Result<Vec<EpisodeHead>, ViewError> {
    reader
        .episodes()?
        .into_iter()
        .map(|e| {
            let cell_json =
                serde_json::from_str(&e.init.cell_json).map_err(|source| ViewError::Json {
                    episode: e.id,
                    what: "its cell".into(),
                    source,
                })?;
            Ok(EpisodeHead {
                id: e.id,
                task: e.init.task_id,
                group: e.family.as_str().to_owned(),
                cell: e.init.cell_key,
                cell_json,
                replicate: e.init.replicate,
                status: e.outcome.status.as_str().to_owned(),
                reason: e.outcome.reason,
                k: e.init.k,
                forked_from: e.init.forked_from,
                final_response: e.outcome.final_response,
                extracted: e.outcome.extracted,
                verdict: e.outcome.verdict,
                cost_paid: e.outcome.cost_paid,
                cost_attributed: e.outcome.cost_attributed,
                exit: None,
                switch: None,
            })
        })
        .collect()
}

fn agent_heads(reader: &Reader) -> Result<Vec<EpisodeHead>, ViewError> {
    reader
        .agent_episodes()?
        .into_iter()
        .map(|e| {
            let cell_json = serde_json::to_value(&e.cell).map_err(|source| ViewError::Json {
                episode: e.id,
                what: "its cell".into(),
                source,
            })?;
            Ok(EpisodeHead {
                id: e.id,
                task: e.task_id,
                group: e.difficulty.to_string(),
                cell: e.cell.label(),
                cell_json,
                replicate: e.replicate,
                status: e.outcome.status.as_str().to_owned(),
                reason: e.outcome.reason,
                k: e.k,
                forked_from: e.forked_from,
                final_response: e.outcome.final_response,
                extracted: e.outcome.extracted,
                verdict: e.outcome.verdict,
                cost_paid: e.paid,
                cost_attributed: e.outcome.cost_attributed,
                exit: e.end.map(|end| end.exit.to_string()),
                switch: e.switch.map(|w| (w.switch.s, w.switch.fired)),
            })
        })
        .collect()
}

/// Make `out` ready: created when missing; an earlier viewer's data removed (only the
/// files this crate writes); anything else that is not empty refused.
fn prepare(out: &Path) -> Result<(), ViewError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ViewError::Write { path, source }
    };
    if out.exists() {
        let index = out.join("index.html");
        let ours = fs::read_to_string(&index).is_ok_and(|s| s.contains(MARKER));
        let empty = fs::read_dir(out).map_err(io(out))?.next().is_none();
        if !ours && !empty {
            return Err(ViewError::NotAViewer {
                path: out.to_path_buf(),
            });
        }
        let data = out.join("data");
        if ours && data.is_dir() {
            for entry in fs::read_dir(&data).map_err(io(&data))? {
                let path = entry.map_err(io(&data))?.path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let written = name == "meta.js"
                    || ((name.starts_with("list-") || name.starts_with("ep-"))
                        && name.ends_with(".js"));
                if written {
                    fs::remove_file(&path).map_err(io(&path))?;
                }
            }
        }
    }
    let data = out.join("data");
    fs::create_dir_all(&data).map_err(io(&data))
}

/// Write `data/<name>.js`, handing `value` to the page.
fn put(data: &Path, name: &str, value: &Value) -> Result<(), ViewError> {
    let json = serde_json::to_string(value).expect("a JSON value always serializes");
    let name_json = serde_json::to_string(name).expect("a string always serializes");
    write(
        &data.join(format!("{name}.js")),
        format!("BATON.put({name_json}, {json});\n").as_bytes(),
    )
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), ViewError> {
    fs::write(path, bytes).map_err(|source| ViewError::Write {
        path: path.to_path_buf(),
        source,
    })
}
