//! Writing files in the version-1 layout, as baton 0.1 did: its DDL (the first shipped
//! migration, never edited) and its insert statements. Used by the migration tests and
//! by the store-size benchmark (which measures the old layout on the same data).

use baton_store::schema::MIGRATIONS;
use baton_store::{EpisodeInit, ExperimentMeta, NewCall, Outcome, TaskMeta};
use rusqlite::{Connection, params};

/// An empty version-1 store.
pub fn create(db: &Connection) {
    db.execute_batch(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO meta VALUES ('schema_version', '1');",
    )
    .unwrap();
    db.execute_batch(MIGRATIONS[0]).unwrap();
}

pub fn insert_experiment(db: &Connection, m: &ExperimentMeta, created_at: &str) {
    db.execute(
        "INSERT INTO experiment (id, name, spec_toml, spec_sha256, price_card_sha256,
         eval_profile, eval_version, baton_version, git_revision, simulated, created_at)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            m.name,
            m.spec_toml,
            m.spec_sha256,
            m.price_card_sha256,
            m.eval_profile,
            m.eval_version,
            m.baton_version,
            m.git_revision,
            m.simulated,
            created_at
        ],
    )
    .unwrap();
}

pub fn insert_task(db: &Connection, t: &TaskMeta) {
    db.execute(
        "INSERT INTO tasks VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            t.task_id,
            t.family.as_str(),
            t.n_turns,
            t.schedule_sha256,
            t.sample_json
        ],
    )
    .unwrap();
}

pub fn insert_episode(db: &Connection, id: i64, e: &EpisodeInit, o: &Outcome, updated_at: &str) {
    let v = o.verdict.as_ref();
    db.execute(
        "INSERT INTO episodes (id, task_id, cell_key, cell_json, replicate, seed, k, forked_from,
         schedule_sha256, status, final_response, extracted, score, is_correct, eval_error,
         eval_details, reason, cost_attributed, cost_paid, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
         ?19, ?20)",
        params![
            id,
            e.task_id,
            e.cell_key,
            e.cell_json,
            e.replicate,
            e.seed as i64,
            e.k,
            e.forked_from,
            e.schedule_sha256,
            o.status.as_str(),
            o.final_response,
            o.extracted,
            v.map(|v| v.score),
            v.and_then(|v| v.is_correct),
            v.and_then(|v| v.error.clone()),
            v.map(|v| v.details.to_string()),
            o.reason,
            o.cost_attributed.0,
            o.cost_paid.0,
            updated_at
        ],
    )
    .unwrap();
}

pub fn insert_call(db: &Connection, c: &NewCall, created_at: &str) {
    db.execute(
        "INSERT INTO calls (episode_id, turn, phase, model, model_served, request_json,
         request_sha256, response_text, raw_response, uncached_in, cache_read, cache_write_5m,
         cache_write_1h, output, reasoning, cost, latency_ms, attempts, finish_reason, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
         ?18, ?19, ?20)",
        params![
            c.episode_id,
            c.turn,
            c.phase.as_str(),
            c.model,
            c.model_served,
            c.request_json,
            c.request_sha256,
            c.response_text,
            c.raw_response,
            c.usage.uncached_in as i64,
            c.usage.cache_read as i64,
            c.usage.cache_write_5m as i64,
            c.usage.cache_write_1h as i64,
            c.usage.output as i64,
            c.usage.reasoning as i64,
            c.cost.0,
            c.latency_ms as i64,
            c.attempts,
            c.finish_reason,
            created_at
        ],
    )
    .unwrap();
}
