//! The SQLite schema and its migrations.
//!
//! Bump [`SCHEMA_VERSION`] and append a migration to [`MIGRATIONS`] on any change; never
//! edit a migration that has shipped. Costs are integers in picodollars (1e-12 USD) so
//! that sums are exact.
//!
//! Tables (version 11):
//! * `meta(key, value)`: `schema_version`.
//! * `experiment`: one row: name, spec (TOML text and its sha256), price-card sha256,
//!   evaluator profile and version, baton version, git revision, creation time, and
//!   (version 12) the experiment's kind, `chat` or `agent`, so a reader never has to
//!   guess it from the file's text or from which tables hold rows.
//! * `tasks`: task id, family, number of turns, schedule sha256, the sample as JSON.
//! * `episodes`: one per (task, cell, replicate) among current episodes (version 14:
//!   plus the retired ones, see V14): seed, K, the anchor episode it forks its
//!   prefix from (if any), schedule sha256, status, final response, extracted answer,
//!   verdict (score, `is_correct`, error, details, the extraction rule that fired,
//!   `no_answer`: 1 when the response held no extractable answer), reason, attributed and
//!   paid cost.
//! * `calls`: one per completed model call: episode, turn, phase (prefix, handoff,
//!   suffix, or `extraction` for LiC's answer extraction, whose `turn` is the attempt,
//!   1 to 3; a new value in a text column, so no migration), model name, model served, the exact request, its sha256, response text
//!   and raw body, normalized usage, cost, latency, attempts, finish reason. A forked
//!   prefix is not copied: the episode's `forked_from` and `k` reference the anchor's
//!   calls.
//!   `unpriced` holds why a used reply's cost could not be computed (a token class or
//!   tier the price card has no rate for); its `cost` is then 0 and not a price.
//! * `attempts`: one per answered (HTTP 2xx, so billed) attempt whose reply could not
//!   be used: episode, turn, phase, model, attempt number, reason, raw body (capped),
//!   usage (NULL when it could not be read), cost (NULL when usage is unreadable or
//!   unpriced, with the reason in `unpriced`), latency. A used reply is a `calls` row
//!   instead, so billed attempts = calls + attempts.
//! * `inputs(name, sha256)`: the sha256 of everything a result depends on (`spec`,
//!   `price card`, `templates`, `interfaces`, `task <id>` for each task's data); a
//!   resume compares them. `input_changes` records each change a resume was allowed
//!   to continue past (`--allow-changed`), with the old and new hash and when.
//! * `skipped_tasks(task_id, reason)` (version 5): the tasks a run left out
//!   (`--skip-invalid`: invalid items, missing databases), with why; every report lists
//!   them. A later run replaces the list.
//! * `messages(id, sha256, json)`: every chat message any request carried, once, keyed
//!   by the sha256 of its JSON text as it appeared in the request.
//! * `message_lists(id, parent, message)`: message lists as a prefix tree: a node is
//!   its parent list (0 for the empty list) plus one message. A conversation's calls
//!   share every node but their newest ones, and handoff episodes share the anchor's.
//!
//! * `batches` (version 8): one per provider batch a batched model submitted, recorded
//!   right after the provider created it and before it is polled: batch id, model, API
//!   (`openai-chat`, `openai-responses`, `anthropic`), its items' `custom_id`s (a JSON
//!   array; an id is the request's sha256 cut to 48 hex digits, `-`, and a number that
//!   tells equal requests apart), their count, the gather window its round was
//!   collected under (`gather_ms`, which baton fills in), and when it was submitted and
//!   finished (every item handed to its call). `calls.batch_id` and
//!   `attempts.batch_id` name the batch a reply came from (NULL for a direct call), and
//!   `cost_direct` what it would have cost at the card's direct rates (NULL for a
//!   direct call, or when the card has no direct rate for it), so a report can say
//!   what batching saved.
//!   Version 9 adds `retry`: where the batch's failed, expired or cancelled items were
//!   retried (`round`, the default, or `direct`, the experiment's `batch_retry`, which
//!   baton fills in); a direct retry is a call with NULL `batch_id`, priced at the
//!   direct rates.
//! * `batch_submissions` (version 10): one per batch a batched model set out to create,
//!   written before the create request: a random token the request carries (OpenAI:
//!   the batch's `metadata`), model, API, the items' `custom_id`s, when it started
//!   (`started_at`), and once settled the batch id (NULL
//!   when the provider made none) and when. A submission still unsettled when a run
//!   resumes is looked up at the provider before any of its items is sent again.
//!   `batches.submission` names the submission a batch came from, and
//!   `calls.batch_item` and `attempts.batch_item` the item (`custom_id`) a batched reply
//!   answered, so a resume never hands a stored item to a second call.
//! * Version 11: `calls.response_sha256`, the sha256 of `response_text`, written with
//!   the call and checked whenever the call is read back (a resume replays stored
//!   replies into later requests: a flipped bit stops it, naming the call); the
//!   migration fills it in for the rows already stored, from their text as it is.
//!   `spool_imports(sha256, imported_at)`: the spool lines (see the `spool` module)
//!   already imported, by the sha256 of the line, so none is imported twice.
//!
//! Agent experiments (version 4) reuse `experiment`, `tasks` (family `agent`),
//! `episodes` (one per task, model and replicate, cell `single(model)`), `calls` (turn =
//! the model call's index q, from 0; phase `prefix`), `attempts`, `messages` and
//! `message_lists`, and add:
//! * `agent_tasks`: task id, where it came from, difficulty bucket, format, and the sha256
//!   of what the task is (instruction, repository, tests, reference).
//! * `agent_calls`: one per model call of an agent episode, written in the same
//!   transaction as its `calls` row: the actions read from the reply (JSON), the format
//!   error when it had none, and `context`, the `message_lists` node of the visible
//!   conversation after the call (its request's messages, the reply and any answer to a
//!   format error).
//! * `agent_steps`: one per command that ran, committed after it ran and the tree was
//!   snapshotted: call index, action index, the command and its tool-call id, how it
//!   ended (`status` JSON, return code), duration, output size, the observation (a
//!   `messages` id: stored once, shared with the next request), the submission when it
//!   submitted, the working-tree snapshot after it (a content-addressed manifest id in
//!   the blob folder beside the store) and `context`, the conversation node after it.
//!   A step's context is what the next call's request carries, so a handoff can fork
//!   at call s from the last step before it: its context node and its snapshot.
//! * `agent_outcomes`: how an agent episode ended (exit status, calls made, error),
//!   written in the same transaction as the episode's outcome; the verdict is the
//!   episode's (`score`, `is_correct`, `eval_details`).
//!
//! Agent handoffs (version 7): a handoff episode's cell is `agent_handoff` (sender,
//! receiver, percentile p, interface, whether its prefix was run live); `k` holds its
//! switch call s and, when its prefix is forked, `forked_from` the anchor whose calls
//! `0..s` (and their billed attempts) are its prefix: they are not copied. Its own calls
//! are phase `prefix` (an independent prefix), `handoff` (the compaction summary, turn s,
//! no `agent_calls` row: not a step) and `suffix` (turn = call index q ≥ s).
//! * `agent_thresholds`: the switch calls s per (pair, direction, bucket, p), from the
//!   prefix model's anchors' termination steps, written once before any handoff runs.
//! * `agent_texts`: the handoff texts a run used (sha256, version, JSON).
//! * `agent_switches`: one per handoff episode once its prefix is settled: s, bucket,
//!   whether it fired (the prefix reached call s), the conversation before the switch
//!   (`prefix_context`; for `traj_drop` the removed trajectory's audit record), the one
//!   the suffix model starts from (`context`), the tree at the switch and the texts.
//!
//! # How a request is stored
//!
//! A call's request is a JSON object whose `messages` array repeats the whole
//! conversation so far, so storing it whole makes the file grow with the square of a
//! conversation. Version 2 stores it by reference instead: `request_params` is the
//! request text with the array emptied (`"messages":[]`, so it stays valid JSON that
//! SQL can query), `request_messages_at` the byte offset just inside that array, and
//! `request_messages` the `message_lists` node of its messages (0 for none). The
//! exact bytes are `params[..at] + join(",", messages) + params[at..]`; the writer
//! checks that this gives back the request before it stores the split, and the
//! reader checks the result against `request_sha256`. A request that does not split
//! this way (not an object with one `messages` array, or not compact JSON) is kept
//! whole in `request_json`, as every call of a version-1 file is after migration:
//! exactly one of `request_json` and `request_params` is set.
//!
//! Version 16: `calls.raw_response_text_at`. A raw body repeats the reply's text as a
//! JSON string (`"content":"…"`), which `response_text` already holds; when the body
//! holds that string exactly as serde_json writes `response_text` (quotes included),
//! it is cut out of `raw_response` and its byte offset kept in `raw_response_text_at`,
//! and the reader puts it back. NULL (every call stored before version 16, and a body
//! that escapes the text otherwise): `raw_response` is the body as received. The body
//! read back is the same bytes either way.
//!
//! Version 17: a call's two sha256 are stored as their 32 bytes, `calls.request_hash`
//! and `calls.response_hash`, instead of 64 hex characters each; `request_sha256` and
//! `response_sha256` are kept as virtual columns (lowercase hex, computed when read,
//! stored nowhere), so what a reader or a query sees is unchanged. The index
//! `calls_request` is dropped: no query looks a call up by its request's hash. A
//! bench harness call stores 128 bytes of hashes less, and no index entry.
//!
//! Version 18: `agent_handover_lints`, one per fired handoff episode of the `handover`
//! interface once its document is linted at the switch: the commit the working tree was
//! committed as there (`commit_sha`, the document's `true_at_sha`), the tree after that
//! commit (`snapshot`, where the suffix starts), the rubric, the structure score (0–100),
//! whether the header is valid, the verification's verdict (`verified`, `failed`, …) and
//! each claim's verdict (`claims_json`: an array of `{label, command, class}`, `class` one
//! of `held-and-holds`, `held-now-broken`, `never-held`, `fails-now`, `cannot-tell`,
//! `not-run`). The document is the episode's `handoff` call's reply; a resume that finds
//! the row neither pays for the document again nor lints it again.
//!
//! Growth is linear in the transcript: each message is stored once, each call adds
//! one prefix-tree node per message that is new to its conversation (usually two: the
//! last reply and the new user turn) and its parameters.

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 18;

/// Migrations, in order; migration `i` takes the schema from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15, V16, V17, V18,
];

/// Version 1: the first shipped schema; each call stores its whole request.
const V1: &str = r#"
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
"#;

/// Version 2: requests stored as content-addressed messages plus their parameters.
/// Version-1 calls keep their whole request in `request_json`.
const V2: &str = r#"
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    sha256 BLOB NOT NULL UNIQUE,
    json TEXT NOT NULL
);
CREATE TABLE message_lists (
    id INTEGER PRIMARY KEY,
    parent INTEGER NOT NULL,
    message INTEGER NOT NULL REFERENCES messages(id),
    UNIQUE (parent, message)
);
ALTER TABLE calls RENAME TO calls_v1;
CREATE TABLE calls (
    id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    turn INTEGER NOT NULL,
    phase TEXT NOT NULL,
    model TEXT NOT NULL,
    model_served TEXT NOT NULL,
    request_json TEXT,
    request_params TEXT,
    request_messages_at INTEGER,
    request_messages INTEGER,
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
    UNIQUE (episode_id, turn, phase),
    CHECK ((request_json IS NULL) = (request_params IS NOT NULL)),
    CHECK ((request_params IS NULL) = (request_messages_at IS NULL)),
    CHECK ((request_params IS NULL) = (request_messages IS NULL))
);
INSERT INTO calls (id, episode_id, turn, phase, model, model_served, request_json,
    request_sha256, response_text, raw_response, uncached_in, cache_read, cache_write_5m,
    cache_write_1h, output, reasoning, cost, latency_ms, attempts, finish_reason, created_at)
SELECT id, episode_id, turn, phase, model, model_served, request_json,
    request_sha256, response_text, raw_response, uncached_in, cache_read, cache_write_5m,
    cache_write_1h, output, reasoning, cost, latency_ms, attempts, finish_reason, created_at
FROM calls_v1;
DROP TABLE calls_v1;
CREATE INDEX calls_request ON calls(request_sha256);
"#;

/// Version 3: answered-but-unusable attempts are stored (they are billed), and a used
/// reply whose cost could not be computed says why.
const V3: &str = r#"
CREATE TABLE attempts (
    id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    turn INTEGER NOT NULL,
    phase TEXT NOT NULL,
    model TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    reason TEXT NOT NULL,
    raw_response TEXT,
    uncached_in INTEGER,
    cache_read INTEGER,
    cache_write_5m INTEGER,
    cache_write_1h INTEGER,
    output INTEGER,
    reasoning INTEGER,
    cost INTEGER,
    unpriced TEXT,
    latency_ms INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    CHECK ((cost IS NULL) = (unpriced IS NOT NULL))
);
CREATE INDEX attempts_call ON attempts(episode_id, turn, phase);
ALTER TABLE calls ADD COLUMN unpriced TEXT;
CREATE TABLE inputs (
    name TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL
);
CREATE TABLE input_changes (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    stored TEXT,
    current TEXT NOT NULL,
    changed_at TEXT NOT NULL
);
"#;

/// Version 4: agent episodes: tasks, calls with their actions and context, commands with
/// their observations and snapshots, outcomes.
const V4: &str = r#"
CREATE TABLE agent_tasks (
    task_id TEXT PRIMARY KEY REFERENCES tasks(task_id),
    origin TEXT NOT NULL,
    difficulty TEXT NOT NULL,
    format TEXT NOT NULL,
    task_sha256 TEXT NOT NULL
);
CREATE TABLE agent_calls (
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    call_index INTEGER NOT NULL,
    call_id INTEGER NOT NULL UNIQUE REFERENCES calls(id),
    actions_json TEXT NOT NULL,
    format_error TEXT,
    context INTEGER NOT NULL,
    PRIMARY KEY (episode_id, call_index)
);
CREATE TABLE agent_steps (
    id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    call_index INTEGER NOT NULL,
    action_index INTEGER NOT NULL,
    command TEXT NOT NULL,
    tool_call_id TEXT,
    status_json TEXT NOT NULL,
    return_code INTEGER,
    duration_ms INTEGER NOT NULL,
    output_bytes INTEGER NOT NULL,
    observation INTEGER REFERENCES messages(id),
    submission TEXT,
    snapshot TEXT,
    context INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (episode_id, call_index, action_index),
    FOREIGN KEY (episode_id, call_index) REFERENCES agent_calls(episode_id, call_index)
);
CREATE TABLE agent_outcomes (
    episode_id INTEGER PRIMARY KEY REFERENCES episodes(id),
    exit TEXT NOT NULL,
    calls INTEGER NOT NULL,
    error TEXT
);
"#;

/// Version 5: the tasks a run left out, with why.
const V5: &str = r#"
CREATE TABLE skipped_tasks (
    task_id TEXT PRIMARY KEY,
    reason TEXT NOT NULL
);
"#;

/// Version 6: the extraction rule of each scored episode, and whether it found no answer.
const V6: &str = r#"
ALTER TABLE episodes ADD COLUMN extraction_rule TEXT;
ALTER TABLE episodes ADD COLUMN no_answer INTEGER NOT NULL DEFAULT 0;
"#;

/// Version 7: agent handoffs: switch points, the texts the interfaces used, and each
/// handoff episode's switch.
const V7: &str = r#"
CREATE TABLE agent_thresholds (
    pair TEXT NOT NULL,
    direction TEXT NOT NULL,
    prefix_model TEXT NOT NULL,
    bucket TEXT NOT NULL,
    p INTEGER NOT NULL,
    s INTEGER NOT NULL,
    n_anchors INTEGER NOT NULL,
    PRIMARY KEY (pair, direction, bucket, p)
);
CREATE TABLE agent_texts (
    sha256 TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    json TEXT NOT NULL
);
CREATE TABLE agent_switches (
    episode_id INTEGER PRIMARY KEY REFERENCES episodes(id),
    s INTEGER NOT NULL,
    bucket TEXT NOT NULL,
    fired INTEGER NOT NULL,
    prefix_context INTEGER,
    context INTEGER,
    snapshot TEXT,
    texts_sha256 TEXT REFERENCES agent_texts(sha256),
    created_at TEXT NOT NULL
);
"#;

/// Version 8: provider batches (the batch journal), and the batch each call and
/// attempt came from.
const V8: &str = r#"
CREATE TABLE batches (
    batch_id TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    api TEXT NOT NULL,
    custom_ids TEXT NOT NULL,
    items INTEGER NOT NULL,
    gather_ms INTEGER NOT NULL,
    submitted_at TEXT NOT NULL,
    finished_at TEXT
);
ALTER TABLE calls ADD COLUMN batch_id TEXT;
ALTER TABLE calls ADD COLUMN cost_direct INTEGER;
ALTER TABLE attempts ADD COLUMN batch_id TEXT;
ALTER TABLE attempts ADD COLUMN cost_direct INTEGER;
"#;

/// Version 9: where a batch's failed items were retried (`batch_retry`).
const V9: &str = r#"
ALTER TABLE batches ADD COLUMN retry TEXT NOT NULL DEFAULT 'round';
"#;

/// Version 10: batch submissions, journaled before each create request, so a process
/// killed before the provider's answer was recorded leaves a trace a resume follows.
const V10: &str = r#"
CREATE TABLE batch_submissions (
    token TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    api TEXT NOT NULL,
    custom_ids TEXT NOT NULL,
    started_at TEXT NOT NULL,
    batch_id TEXT,
    settled_at TEXT
);
ALTER TABLE batches ADD COLUMN submission TEXT;
ALTER TABLE calls ADD COLUMN batch_item TEXT;
ALTER TABLE attempts ADD COLUMN batch_item TEXT;
"#;

/// Version 11: each reply's checksum (filled in for stored rows by
/// `connect::after_migration`), and the spool lines already imported.
const V11: &str = r#"
ALTER TABLE calls ADD COLUMN response_sha256 TEXT;
CREATE TABLE spool_imports (
    sha256 TEXT PRIMARY KEY,
    imported_at TEXT NOT NULL
);
"#;

/// Version 12: the experiment's kind, stored; an older store's is what its rows say
/// (an agent experiment is the one with agent tasks). The columns that hold one of a
/// fixed set of names are typed: the experiment's kind, an agent task's difficulty and
/// an agent run's exit status refuse any other value (SQLite cannot add a CHECK to a
/// table, so triggers do it). A new exit status or bucket is a migration.
const V12: &str = r#"
ALTER TABLE experiment ADD COLUMN kind TEXT NOT NULL DEFAULT 'chat';
UPDATE experiment SET kind = 'agent' WHERE EXISTS (SELECT 1 FROM agent_tasks);
CREATE TRIGGER experiment_kind_insert BEFORE INSERT ON experiment
WHEN NEW.kind NOT IN ('chat', 'agent')
BEGIN SELECT RAISE(ABORT, 'experiment.kind must be chat or agent'); END;
CREATE TRIGGER experiment_kind_update BEFORE UPDATE OF kind ON experiment
WHEN NEW.kind NOT IN ('chat', 'agent')
BEGIN SELECT RAISE(ABORT, 'experiment.kind must be chat or agent'); END;
CREATE TRIGGER agent_tasks_difficulty_insert BEFORE INSERT ON agent_tasks
WHEN NEW.difficulty NOT IN ('easy', 'medium', 'hard')
BEGIN SELECT RAISE(ABORT, 'agent_tasks.difficulty must be easy, medium or hard'); END;
CREATE TRIGGER agent_tasks_difficulty_update BEFORE UPDATE OF difficulty ON agent_tasks
WHEN NEW.difficulty NOT IN ('easy', 'medium', 'hard')
BEGIN SELECT RAISE(ABORT, 'agent_tasks.difficulty must be easy, medium or hard'); END;
CREATE TRIGGER agent_outcomes_exit_insert BEFORE INSERT ON agent_outcomes
WHEN NEW.exit NOT IN ('submitted', 'step_limit', 'cost_limit', 'format_errors', 'error', 'snapshot_limit')
BEGIN SELECT RAISE(ABORT, 'agent_outcomes.exit is not an exit status'); END;
CREATE TRIGGER agent_outcomes_exit_update BEFORE UPDATE OF exit ON agent_outcomes
WHEN NEW.exit NOT IN ('submitted', 'step_limit', 'cost_limit', 'format_errors', 'error', 'snapshot_limit')
BEGIN SELECT RAISE(ABORT, 'agent_outcomes.exit is not an exit status'); END;
"#;

/// Version 13: each agent step stores the episode's running count of new snapshot bytes
/// (what its cap, `limits.episode_snapshot_bytes`, is counted against), so a resumed
/// episode goes on counting from where it stopped instead of from zero. Steps stored
/// before have none.
const V13: &str = r#"
ALTER TABLE agent_steps ADD COLUMN snapshot_bytes INTEGER;
"#;

/// Version 14: episode identity (see the `identity` module). Each episode's `identity`
/// is the sha256 of what decides what it sends and how it is scored, written by the
/// run that made it (NULL for an episode stored before, until a run adopts it);
/// `retired` says why an episode no longer belongs to its experiment (`changed`: a new
/// episode replaced it, its `cell_key` then suffixed ` #<id>`; `removed`: its cell or
/// task left the experiment), NULL for a current one. `experiment.experiment_json` is
/// the experiment's normalized, versioned form, so a later run can list what changed.
const V14: &str = r#"
ALTER TABLE episodes ADD COLUMN identity TEXT;
ALTER TABLE episodes ADD COLUMN retired TEXT;
ALTER TABLE experiment ADD COLUMN experiment_json TEXT;
"#;

/// Version 15: a chat episode's paid and attributed cost count every billed attempt, as
/// an agent episode's always did: the unusable attempts of its own calls (extraction
/// apart) are added to both, and a forked handoff's attributed cost also takes its
/// anchor's prefix attempts through turn K. Only finished episodes of chat experiments
/// are touched (an unfinished one gets its cost when it finishes).
const V15: &str = r#"
UPDATE episodes SET
    cost_paid = cost_paid + (SELECT coalesce(sum(a.cost), 0) FROM attempts a
        WHERE a.episode_id = episodes.id AND a.phase != 'extraction'),
    cost_attributed = cost_attributed + (SELECT coalesce(sum(a.cost), 0) FROM attempts a
        WHERE a.episode_id = episodes.id AND a.phase != 'extraction')
        + CASE WHEN forked_from IS NULL OR k IS NULL THEN 0 ELSE
            (SELECT coalesce(sum(a.cost), 0) FROM attempts a
             WHERE a.episode_id = episodes.forked_from AND a.phase = 'prefix'
             AND a.turn <= episodes.k) END
WHERE status != 'incomplete'
    AND (SELECT kind FROM experiment WHERE id = 1) = 'chat';
"#;

/// Version 16: a raw body may be stored without the reply text it repeats (see the
/// module docs, "How a request is stored").
const V16: &str = r#"
ALTER TABLE calls ADD COLUMN raw_response_text_at INTEGER;
"#;

/// Version 17: a call's hashes as bytes, read back as hex through virtual columns of
/// the old names; the unused index on the request's hash dropped (see the module docs).
/// The migration rewrites the table once (`DROP COLUMN`).
const V17: &str = r#"
DROP INDEX calls_request;
ALTER TABLE calls ADD COLUMN request_hash BLOB;
ALTER TABLE calls ADD COLUMN response_hash BLOB;
UPDATE calls SET request_hash = unhex(request_sha256), response_hash = unhex(response_sha256);
ALTER TABLE calls DROP COLUMN request_sha256;
ALTER TABLE calls DROP COLUMN response_sha256;
ALTER TABLE calls ADD COLUMN request_sha256 TEXT
    GENERATED ALWAYS AS (lower(hex(request_hash))) VIRTUAL;
ALTER TABLE calls ADD COLUMN response_sha256 TEXT
    GENERATED ALWAYS AS (CASE WHEN response_hash IS NOT NULL THEN lower(hex(response_hash)) END) VIRTUAL;
"#;

/// Version 18: the lint of each `handover` handoff's document at the switch (see the
/// module docs).
const V18: &str = r#"
CREATE TABLE agent_handover_lints (
    episode_id INTEGER PRIMARY KEY REFERENCES episodes(id),
    commit_sha TEXT NOT NULL,
    snapshot TEXT,
    rubric TEXT NOT NULL,
    score INTEGER NOT NULL,
    valid INTEGER NOT NULL,
    verdict TEXT NOT NULL,
    claims_json TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"#;
