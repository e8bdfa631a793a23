//! The SQLite schema and its migrations.
//!
//! Bump [`SCHEMA_VERSION`] and append a migration to [`MIGRATIONS`] on any change; never
//! edit a migration that has shipped. Costs are integers in picodollars (1e-12 USD) so
//! that sums are exact.
//!
//! Tables:
//! * `meta(key, value)`: `schema_version`.
//! * `experiment`: one row: name, spec (TOML text and its sha256), price-card sha256,
//!   evaluator profile and version, baton version, git revision, creation time.
//! * `tasks`: task id, family, number of turns, schedule sha256, the sample as JSON.
//! * `episodes`: one per (task, cell, replicate): seed, K, the anchor episode it forks its
//!   prefix from (if any), schedule sha256, status, final response, extracted answer,
//!   verdict, reason, attributed and paid cost.
//! * `calls`: one per completed model call: episode, turn, phase (prefix, handoff,
//!   suffix), model name, model served, the exact request (messages and settings as
//!   JSON), its sha256, response text and raw body, normalized usage, cost, latency,
//!   attempts, finish reason. A forked prefix is not copied: the episode's `forked_from`
//!   and `k` reference the anchor's calls.

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 1;

/// Migrations, in order; migration `i` takes the schema from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE experiment (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    spec_toml TEXT NOT NULL,
    spec_sha256 TEXT NOT NULL,
    price_card_sha256 TEXT NOT NULL,
    eval_profile TEXT NOT NULL,
    eval_version TEXT NOT NULL,
    baton_version TEXT NOT NULL,
    git_revision TEXT,
    simulated INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE tasks (
    task_id TEXT PRIMARY KEY,
    family TEXT NOT NULL,
    n_turns INTEGER NOT NULL,
    schedule_sha256 TEXT NOT NULL,
    sample_json TEXT NOT NULL
);
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks(task_id),
    cell_key TEXT NOT NULL,
    cell_json TEXT NOT NULL,
    replicate INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    k INTEGER,
    forked_from INTEGER REFERENCES episodes(id),
    schedule_sha256 TEXT NOT NULL,
    status TEXT NOT NULL,
    final_response TEXT,
    extracted TEXT,
    score REAL,
    is_correct INTEGER,
    eval_error TEXT,
    eval_details TEXT,
    reason TEXT,
    cost_attributed INTEGER NOT NULL DEFAULT 0,
    cost_paid INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    UNIQUE (task_id, cell_key, replicate)
);
CREATE TABLE calls (
    id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    turn INTEGER NOT NULL,
    phase TEXT NOT NULL,
    model TEXT NOT NULL,
    model_served TEXT NOT NULL,
    request_json TEXT NOT NULL,
    request_sha256 TEXT NOT NULL,
    response_text TEXT NOT NULL,
    raw_response TEXT,
    uncached_in INTEGER NOT NULL,
    cache_read INTEGER NOT NULL,
    cache_write_5m INTEGER NOT NULL,
    cache_write_1h INTEGER NOT NULL,
    output INTEGER NOT NULL,
    reasoning INTEGER NOT NULL,
    cost INTEGER NOT NULL,
    latency_ms INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    finish_reason TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (episode_id, turn, phase)
);
CREATE INDEX calls_request ON calls(request_sha256);
"#];
