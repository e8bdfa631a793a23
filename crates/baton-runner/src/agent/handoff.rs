//! The handoff study's episodes: switch points from the anchors, then one episode per
//! (task, replicate, pair, direction, percentile, interface) that hands the prefix
//! model's trajectory to the suffix model at call s, in the same working tree.
//!
//! # Switch points
//!
//! Once every anchor has finished, s_b(p) is the nearest-rank p-th percentile (and at
//! least 1) of the prefix model's termination steps (calls made) over its finished anchors in
//! bucket b, all replicates pooled ([`thresholds`]). They are stored before any handoff
//! runs; a resume reuses the stored ones, so a changed anchor never moves a switch.
//!
//! # One handoff episode
//!
//! 1. **Prefix.** Forked (the default): the anchor's calls `0..s` are the prefix; the
//!    conversation before call s is the context node of the anchor's last event before it
//!    and the tree is the anchor's last snapshot before it. Nothing is re-paid; the
//!    episode's `forked_from` names the anchor. The handoff *fires* when the anchor made
//!    call s. Independent (`--independent`): the prefix model runs live in this episode
//!    (phase `prefix`) with the step limit set to s; it fires when that run stops at the
//!    step limit with s below the experiment's.
//! 2. **Switch.** An unfired episode stores its switch (`fired = 0`) and ends as its
//!    prefix run ended (a forked one takes the anchor's outcome, and pays nothing). A fired
//!    one rewrites the trajectory per interface ([`baton_agent::rewrite_trajectory`]);
//!    compaction first makes the handoff call (phase `handoff`, turn s; the summariser is
//!    the sender for `compact_pre`, the receiver for `compact_suf`), then stores the new
//!    conversation with the switch. `traj_drop`'s removed trajectory is the switch's
//!    `prefix_context`.
//! 3. **Suffix.** The receiver continues the same loop from call s (phase `suffix`), with
//!    the tree restored, the step limit counting the prefix's calls and the cost limit
//!    the prefix's and the handoff call's spend.
//!
//! A resume picks up at any point: a live prefix like an anchor, a stored handoff call
//! is reused (never re-paid), and a stored switch restarts the suffix from its last event.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use baton_agent::{
    AgentConfig, AgentExit, AgentOutcome, AgentSink, AgentTask, HandoffTexts, Protocol, bash_tool,
    handoff_call_messages, model_side_terminal, rewrite_trajectory, sender_writes, summarises,
    summary_messages,
};
use baton_models::{Accept, ModelError, ProviderError, ToolChoice};
use baton_report::nearest_rank;
use baton_store::{
    AgentCell, AgentEnd, AgentEpisodeInit, AgentEpisodeRow, AgentProgress, HandoverClaimRow,
    HandoverLintRow, NewAgentSwitch, Outcome, Reader, ThresholdRow,
};
use baton_types::agent::{AgentSwitch, Difficulty};
use baton_types::{Cost, Direction, EpisodeStatus, Interface, Phase};

use crate::RunError;
use crate::agent::resume::{self, Base};
use crate::agent::sink::{StoreSink, message_json};
use crate::agent::{AgentRunner, spec::HandoffSpec};
use crate::schedule;

/// The anchors as stored, read once per (task, prefix model, replicate) rather than once
/// per handoff cell: the anchors have all ended before any handoff runs, so what is stored
/// of them no longer changes (some 35 cells share each anchor).
type Anchors = tokio::sync::Mutex<HashMap<(usize, String, u32), Arc<Anchor>>>;

/// One anchor as its handoff cells read it.
struct Anchor {
    /// Its calls and steps, where a forked prefix comes from.
    progress: AgentProgress,
    /// Its episode row, whose outcome an unfired cell takes.
    row: AgentEpisodeRow,
}

/// A pair's label: `lc/hc`.
pub(crate) fn pair_label(lc: &str, hc: &str) -> String {
    format!("{lc}/{hc}")
}

/// The switch calls of `spec` from the anchors `episodes`, or why they cannot be computed
/// yet (an anchor of a prefix model has not finished). A bucket without a finished anchor
/// has no switch call: its tasks get no handoff.
pub(crate) fn thresholds(
    spec: &HandoffSpec,
    episodes: &[AgentEpisodeRow],
) -> Result<Vec<ThresholdRow>, String> {
    let mut out = Vec::new();
    for [lc, hc] in &spec.pairs {
        for (direction, prefix) in [(Direction::Escalation, lc), (Direction::Downshift, hc)] {
            let anchors: Vec<&AgentEpisodeRow> = episodes
                .iter()
                .filter(|e| matches!(&e.cell, AgentCell::Single { model } if model == prefix))
                .collect();
            if let Some(e) = anchors.iter().find(|e| !finished(e)) {
                return Err(format!(
                    "the anchor of model {prefix:?} on task {:?} (replicate {}) has not finished",
                    e.task_id, e.replicate
                ));
            }
            // by the bucket's name, the order the store lists them in
            let mut by_bucket: BTreeMap<&str, (Difficulty, Vec<u32>)> = BTreeMap::new();
            for e in &anchors {
                by_bucket
                    .entry(e.difficulty.name())
                    .or_insert((e.difficulty, Vec::new()))
                    .1
                    .push(e.calls);
            }
            for (_, (bucket, mut steps)) in by_bucket {
                steps.sort_unstable();
                for &p in &spec.percentiles {
                    let s = nearest_rank(&steps, p).unwrap_or(1).max(1);
                    out.push(ThresholdRow {
                        pair: pair_label(lc, hc),
                        direction,
                        prefix_model: prefix.clone(),
                        bucket,
                        p,
                        s,
                        n_anchors: steps.len() as u32,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The current handoff episodes whose switch call is not the one `rows` give their
/// cell and bucket (or that have none now).
fn stale_handoffs(rows: &[ThresholdRow], episodes: &[AgentEpisodeRow]) -> Vec<i64> {
    episodes
        .iter()
        .filter_map(|e| {
            let AgentCell::AgentHandoff { sender, p, .. } = &e.cell else {
                return None;
            };
            // a switch call is the sender's anchors' percentile in the task's bucket
            let bucket = e.difficulty;
            let s = rows
                .iter()
                .find(|t| t.prefix_model == *sender && t.bucket == bucket && t.p == *p)
                .map(|t| t.s);
            (s != e.k).then_some(e.id)
        })
        .collect()
}

pub(crate) fn finished(e: &AgentEpisodeRow) -> bool {
    e.end.is_some() && e.outcome.status != EpisodeStatus::Incomplete
}

/// The conversation node before call `s` of a stored run, and its tree then: the context
/// of its last event before call s and its last snapshot before it. `None` when the run
/// did not make call s (the handoff does not fire).
fn state_before(progress: &AgentProgress, s: u32) -> Option<(i64, Option<String>)> {
    let made_s = progress.calls.iter().any(|c| c.index() == s);
    if !made_s || s == 0 {
        return None;
    }
    let last_call = progress.calls.iter().find(|c| c.index() == s - 1)?;
    let context = progress
        .steps
        .iter()
        .rev()
        .find(|st| st.step.call_index == s - 1)
        .map_or(last_call.context, |st| st.context);
    let snapshot = progress
        .steps
        .iter()
        .rev()
        .filter(|st| st.step.call_index < s)
        .find_map(|st| st.step.snapshot.clone());
    Some((context, snapshot))
}

impl AgentRunner {
    /// Compute (or read back) the switch calls and run every handoff episode.
    pub(crate) async fn run_handoffs(self: &Arc<Self>) -> Result<(), RunError> {
        let Some(spec) = self.spec.handoff.clone() else {
            return Ok(());
        };
        if self.shared.stop.is_stopped() {
            return Ok(());
        }
        let episodes = Reader::open(&self.store_path)?.agent_episodes()?;
        let stored = Reader::open(&self.store_path)?.agent_thresholds()?;
        // A whole study computes its switch calls from its current anchors: a handoff
        // that ran at a switch call that moved (the anchors grew or shrank) is retired
        // and runs afresh, one whose switch call is unchanged is reused. A part keeps the
        // ones it adopted (computed over every part's anchors) and adds a missing
        // bucket's.
        let rows = match thresholds(&spec, &episodes) {
            Ok(rows) if self.part.is_none() => {
                let stale = stale_handoffs(&rows, &episodes);
                if !stale.is_empty() {
                    tracing::info!(
                        "{} handoff episode(s) ran at a switch call that moved with the anchors: run afresh",
                        stale.len()
                    );
                }
                self.shared
                    .store
                    .recompute_agent_thresholds(rows, stale)
                    .await?
            }
            Ok(rows) => self.shared.store.agent_thresholds(rows).await?,
            Err(why) if stored.is_empty() => {
                tracing::warn!("no handoff runs yet: {why}; resume once the anchors finish");
                return Ok(());
            }
            Err(_) => stored,
        };
        let anchors = Arc::new(Anchors::default());
        // each planned cell with the pair and direction its switch calls are stored under
        let planned: Vec<(AgentCell, String, Direction, u32)> = spec
            .cells(self.independent)
            .into_iter()
            .filter_map(|cell| {
                let ([lc, hc], direction) = cell.pair(&spec.pairs)?;
                let AgentCell::AgentHandoff { p, .. } = cell else {
                    return None;
                };
                Some((cell, pair_label(lc, hc), direction, p))
            })
            .collect();
        let mut jobs = Vec::new();
        for replicate in 0..self.spec.replicates {
            for ti in 0..self.tasks.len() {
                for (cell, pair, direction, p) in &planned {
                    let bucket = self.tasks[ti].difficulty;
                    let Some(s) = rows
                        .iter()
                        .find(|t| {
                            t.pair == *pair
                                && t.direction == *direction
                                && t.bucket == bucket
                                && t.p == *p
                        })
                        .map(|t| t.s)
                    else {
                        continue;
                    };
                    jobs.push((ti, cell.clone(), replicate, s));
                }
            }
        }
        let (r, jobs) = (self.clone(), Arc::new(jobs));
        schedule::for_each_bounded(jobs.len(), self.concurrency, &self.shared.stop, move |i| {
            let (r, jobs, anchors) = (r.clone(), jobs.clone(), anchors.clone());
            async move {
                let (ti, cell, replicate, s) = &jobs[i];
                r.run_handoff(*ti, cell, *replicate, *s, &anchors).await
            }
        })
        .await
    }

    async fn run_handoff(
        &self,
        ti: usize,
        cell: &AgentCell,
        replicate: u32,
        s: u32,
        anchors: &Anchors,
    ) -> Result<(), RunError> {
        let task = &self.tasks[ti];
        let seed = self.seed(replicate);
        let store = &self.shared.store;
        let task_sha256 = super::task_sha256(task)?;
        let (sender, receiver) = (cell.first_model(), cell.last_model());
        let anchor = {
            let mut known = anchors.lock().await;
            match known.get(&(ti, sender.to_string(), replicate)) {
                Some(a) => a.clone(),
                None => {
                    let progress = store
                        .agent_episode(AgentEpisodeInit {
                            task_id: task.id.clone(),
                            cell: AgentCell::single(sender),
                            k: None,
                            forked_from: None,
                            replicate,
                            seed,
                            task_sha256: task_sha256.clone(),
                        })
                        .await?;
                    let row = Reader::open(&self.store_path)?
                        .agent_episode(progress.episode_id)?
                        .ok_or_else(|| baton_store::StoreError::Decode {
                            path: self.store_path.clone(),
                            what: format!("agent episode {}", progress.episode_id),
                            message: "the anchor of a handoff is not stored".into(),
                        })?;
                    let a = Arc::new(Anchor { progress, row });
                    known.insert((ti, sender.to_string(), replicate), a.clone());
                    a
                }
            }
        };
        let progress = store
            .agent_episode(AgentEpisodeInit {
                task_id: task.id.clone(),
                cell: cell.clone(),
                k: Some(s),
                forked_from: (!cell.independent()).then_some(anchor.progress.episode_id),
                replicate,
                seed,
                task_sha256,
            })
            .await?;
        if progress.status != EpisodeStatus::Incomplete {
            return Ok(());
        }
        let episode_id = progress.episode_id;
        // One read connection for the cell's reads (opening one reads the schema again).
        let reader = Reader::open(&self.store_path)?;
        let forked_prefix = if cell.independent() {
            Cost::ZERO
        } else {
            reader.paid_before(anchor.progress.episode_id, s)?
        };
        let switch = match &progress.switch {
            Some(sw) => sw.clone(),
            None => {
                // settle the prefix: where it stands before call s, or how it ended
                let before = if cell.independent() {
                    match self
                        .live_prefix(task, cell, episode_id, seed, &progress, s)
                        .await?
                    {
                        Prefix::Reached(context, snapshot) => Some((context, snapshot)),
                        Prefix::Ended => return Ok(()),
                    }
                } else {
                    state_before(&anchor.progress, s)
                };
                let Some((prefix_context, snapshot)) = before else {
                    return self.unfired(task, episode_id, &anchor.row, s).await;
                };
                match self
                    .switch(task, cell, &progress, s, prefix_context, snapshot, seed)
                    .await?
                {
                    Ok(sw) => sw,
                    Err(SwitchFailed::Retry(why)) => {
                        let paid = reader.episode_paid(episode_id)?;
                        return self.leave_incomplete(episode_id, why, paid).await;
                    }
                    Err(SwitchFailed::Refused(why)) => {
                        // the summariser gave no usable summary: the handoff ended on the
                        // model's side, an `error` exit that counts as unresolved
                        let paid = reader.episode_paid(episode_id)?;
                        let o = AgentOutcome {
                            exit: AgentExit::Error,
                            submission: None,
                            calls: s,
                            cost: forked_prefix + paid,
                            error: Some(why),
                        };
                        return self
                            .finish(task, episode_id, o, forked_prefix + paid, paid)
                            .await;
                    }
                }
            }
        };
        if !switch.switch.fired {
            return Ok(());
        }
        // the suffix: from the switch, or from its last stored event
        let progress = reader.agent_progress(episode_id)?;
        let handoff_cost = progress
            .handoff_call
            .as_ref()
            .map_or(Cost::ZERO, |c| c.call.cost);
        let base = Base {
            first: s,
            context: switch.context.unwrap_or_default(),
            cost: forked_prefix + handoff_cost,
        };
        let model = &self.models[receiver];
        let restored =
            match resume::restore(&self.config, task, &progress, store, Some(&base)).await? {
                Ok(r) => r,
                Err(what) => {
                    let why =
                        self.shared
                            .block_unpriced(receiver, &what, "it is stored without a cost");
                    return self.leave_incomplete(episode_id, why, Cost::ZERO).await;
                }
            };
        let snapshot = progress
            .steps
            .iter()
            .rev()
            .filter(|st| st.step.call_index >= s)
            .find_map(|st| st.step.snapshot.clone())
            .or(switch.snapshot.clone());
        let outcome = match restored.ended {
            Some(o) => Ok(o),
            None => {
                self.drive(
                    task,
                    model,
                    episode_id,
                    seed,
                    restored,
                    snapshot.as_deref(),
                    Phase::Suffix,
                    &self.config,
                )
                .await?
            }
        };
        let paid = reader.episode_paid(episode_id)?;
        match outcome {
            Ok(o) => {
                self.finish(task, episode_id, o, forked_prefix + paid, paid)
                    .await
            }
            Err(why) => self.leave_incomplete(episode_id, why, paid).await,
        }
    }

    /// Run (or resume) an independent prefix up to call s. An ended prefix has finished
    /// the episode (it did not fire, or it stays incomplete with why).
    async fn live_prefix(
        &self,
        task: &Arc<AgentTask>,
        cell: &AgentCell,
        episode_id: i64,
        seed: u64,
        progress: &AgentProgress,
        s: u32,
    ) -> Result<Prefix, RunError> {
        let store = &self.shared.store;
        let model = &self.models[cell.first_model()];
        let config = AgentConfig {
            step_limit: s.min(self.config.step_limit),
            ..(*self.config).clone()
        };
        let restored = match resume::restore(&config, task, progress, store, None).await? {
            Ok(r) => r,
            Err(what) => {
                let why = self.shared.block_unpriced(
                    cell.first_model(),
                    &what,
                    "it is stored without a cost",
                );
                self.leave_incomplete(episode_id, why, Cost::ZERO).await?;
                return Ok(Prefix::Ended);
            }
        };
        let outcome = match restored.ended {
            Some(o) => Ok(o),
            None => {
                self.drive(
                    task,
                    model,
                    episode_id,
                    seed,
                    restored,
                    progress.last_snapshot(),
                    Phase::Prefix,
                    &config,
                )
                .await?
            }
        };
        let paid = Reader::open(&self.store_path)?.episode_paid(episode_id)?;
        let o = match outcome {
            Ok(o) => o,
            Err(why) => {
                self.leave_incomplete(episode_id, why, paid).await?;
                return Ok(Prefix::Ended);
            }
        };
        let reached = o.exit == AgentExit::StepLimit
            && o.calls == s
            && s < self.config.step_limit
            && o.cost < self.config.cost_limit;
        let after = Reader::open(&self.store_path)?.agent_progress(episode_id)?;
        if reached {
            return Ok(Prefix::Reached(
                after.context(),
                after.last_snapshot().map(str::to_string),
            ));
        }
        store
            .agent_switch(NewAgentSwitch::unfired(episode_id, s, task.difficulty))
            .await?;
        self.finish(task, episode_id, o, paid, paid).await?;
        Ok(Prefix::Ended)
    }

    /// A forked handoff whose anchor (`row`) ended before call s: its switch (not fired)
    /// and the anchor's outcome; it paid nothing.
    async fn unfired(
        &self,
        task: &Arc<AgentTask>,
        episode_id: i64,
        row: &AgentEpisodeRow,
        s: u32,
    ) -> Result<(), RunError> {
        self.shared
            .store
            .agent_switch(NewAgentSwitch::unfired(episode_id, s, task.difficulty))
            .await?;
        let outcome = Outcome {
            cost_attributed: row.paid,
            cost_paid: Cost::ZERO,
            ..row.outcome.clone()
        };
        let end = row.end.clone().unwrap_or(AgentEnd {
            exit: AgentExit::Error,
            calls: row.calls,
            error: None,
        });
        let status = outcome.status;
        self.shared
            .store
            .finish_agent(episode_id, outcome, end)
            .await?;
        self.shared.observer.episode(status);
        Ok(())
    }

    /// Make the switch of a fired handoff: the handoff call (compaction; a stored one is
    /// reused), the rewritten conversation, stored with the texts. `Ok(Err(why))`: the
    /// handoff call failed; the episode stays incomplete and a resume retries it.
    #[allow(clippy::too_many_arguments)]
    async fn switch(
        &self,
        task: &Arc<AgentTask>,
        cell: &AgentCell,
        progress: &AgentProgress,
        s: u32,
        prefix_context: i64,
        snapshot: Option<String>,
        seed: u64,
    ) -> Result<Result<baton_store::AgentSwitchRow, SwitchFailed>, RunError> {
        let store = &self.shared.store;
        let trajectory = resume::messages_of(task, store, prefix_context).await?;
        let texts: &HandoffTexts = &self.texts;
        let mut snapshot = snapshot;
        let interface = cell
            .interface()
            .expect("the handoff phase plans handoff cells only");
        let summary = if interface == Interface::Handover {
            match self
                .handover(task, cell, progress, s, &trajectory, snapshot.clone(), seed)
                .await?
            {
                Ok((document, after)) => {
                    // the suffix starts from the tree with the commit the document names
                    snapshot = after;
                    Some(document)
                }
                Err(failed) => return Ok(Err(failed)),
            }
        } else if summarises(interface) {
            match &progress.handoff_call {
                Some(c) => Some(c.call.response_text.clone()),
                None => {
                    let who = if sender_writes(interface) {
                        cell.first_model()
                    } else {
                        cell.last_model()
                    };
                    let messages = summary_messages(texts, &trajectory);
                    match self
                        .handoff_call(task, who, progress, s, messages, seed, "a summary")
                        .await?
                    {
                        Ok(text) => Some(text),
                        Err(failed) => return Ok(Err(failed)),
                    }
                }
            }
        } else {
            None
        };
        let messages = rewrite_trajectory(interface, texts, &trajectory, summary.as_deref())
            .map_err(|source| RunError::AgentInput {
                what: format!("the handoff texts {}", texts.version),
                source: Box::new(source),
            })?;
        let switch = AgentSwitch {
            s,
            bucket: task.difficulty,
            fired: true,
        };
        let context = store
            .agent_switch(NewAgentSwitch {
                episode_id: progress.episode_id,
                switch,
                prefix_context: Some(prefix_context),
                messages: Some(messages.iter().map(message_json).collect()),
                snapshot: snapshot.clone(),
                texts: Some((texts.sha256(), texts.version.clone(), texts.to_json())),
            })
            .await?;
        Ok(Ok(baton_store::AgentSwitchRow {
            switch,
            prefix_context: Some(prefix_context),
            context,
            snapshot,
            texts_sha256: Some(texts.sha256()),
        }))
    }

    /// `handover`'s switch: the tree at the switch committed in the sandbox, the prefix
    /// model's Handover document (the handoff call, [`Self::handoff_call`]), and its lint
    /// with claims checked at that commit, stored once per episode. Returns the document
    /// and the tree the suffix starts from: the tree at the switch with the commit undone
    /// but kept ([`baton_handover::switch::uncommit_at_switch`]), so the document's
    /// `true_at_sha` resolves and the submission's diff against the task's baseline still
    /// holds the prefix's work.
    ///
    /// A stored lint is reused as it is (nothing paid or linted again); a stored document
    /// without its lint (a run stopped between the two) is linted at the same commit: the
    /// tree before the switch is restored and committed again, which gives the same id
    /// ([`baton_handover::switch::commit_at_switch`] fixes identity and dates).
    #[allow(clippy::too_many_arguments)]
    async fn handover(
        &self,
        task: &Arc<AgentTask>,
        cell: &AgentCell,
        progress: &AgentProgress,
        s: u32,
        trajectory: &[baton_types::Message],
        snapshot: Option<String>,
        seed: u64,
    ) -> Result<Result<(String, Option<String>), SwitchFailed>, RunError> {
        use baton_handover::switch;
        if let (Some(lint), Some(call)) = (&progress.handover_lint, &progress.handoff_call) {
            return Ok(Ok((call.call.response_text.clone(), lint.snapshot.clone())));
        }
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            SwitchFailed::Retry(format!(
                "task {:?}: the handover at call {s}: {what}: {e}",
                task.id
            ))
        };
        // the tree at the switch, committed
        let (env_config, t, blobs) = (self.env.clone(), task.clone(), self.blobs.clone());
        let committed = tokio::task::spawn_blocking(move || {
            let mut env = baton_agent::start_task_env(&t, &env_config)
                .map_err(|e| ("the sandbox did not start", e.to_string()))?;
            if let Some(id) = snapshot {
                env.restore(blobs.as_ref(), &baton_env::SnapshotId(id))
                    .map_err(|e| ("the tree at the switch was not restored", e.to_string()))?;
            }
            let sha = switch::commit_at_switch(env.as_mut())
                .map_err(|e| ("the tree was not committed", e.to_string()))?;
            Ok::<_, (&str, String)>((env, sha))
        })
        .await
        .expect("the environment thread does not panic");
        let (env, sha) = match committed {
            Ok(c) => c,
            Err((what, e)) => return Ok(Err(failed(what, &e))),
        };
        let document = match &progress.handoff_call {
            Some(c) => c.call.response_text.clone(),
            None => {
                let today = baton_handover::verify::today().to_string();
                let messages =
                    handoff_call_messages(trajectory, switch::handover_request(&sha, &today));
                let written = self
                    .handoff_call(
                        task,
                        cell.first_model(),
                        progress,
                        s,
                        messages,
                        seed,
                        "a Handover document",
                    )
                    .await?;
                match written {
                    Ok(text) => text,
                    Err(f) => {
                        let _ = tokio::task::spawn_blocking(move || env.close()).await;
                        return Ok(Err(f));
                    }
                }
            }
        };
        // the lint at the commit; then the commit is undone for the suffix (kept in the
        // object store, so the document's sha resolves) and the tree snapshotted
        let (text, at, blobs) = (document.clone(), sha.clone(), self.blobs.clone());
        let linted = tokio::task::spawn_blocking(move || {
            let mut env = env;
            let out = (|| {
                let lint = switch::lint_at_switch(
                    env.as_mut(),
                    &text,
                    baton_handover::Rubric::Baton,
                    HANDOVER_CLAIM_TIMEOUT,
                )
                .map_err(|e| ("the document was not linted", e.to_string()))?;
                switch::uncommit_at_switch(env.as_mut(), &at)
                    .map_err(|e| ("the commit was not undone", e.to_string()))?;
                let after = env
                    .snapshot(blobs.as_ref())
                    .map_err(|e| ("the tree was not snapshotted", e.to_string()))?;
                Ok::<_, (&str, String)>((lint, after.id.0))
            })();
            let _ = env.close();
            out
        })
        .await
        .expect("the lint thread does not panic");
        let (lint, after) = match linted {
            Ok(l) => l,
            Err((what, e)) => return Ok(Err(failed(what, &e))),
        };
        self.shared
            .store
            .agent_handover_lint(HandoverLintRow {
                episode_id: progress.episode_id,
                commit_sha: sha,
                snapshot: Some(after.clone()),
                rubric: lint.rubric,
                score: lint.score,
                valid: lint.valid,
                verdict: lint.verdict.to_string(),
                claims: lint
                    .claims
                    .into_iter()
                    .map(|c| HandoverClaimRow {
                        label: c.label,
                        command: c.command,
                        class: c.class.to_string(),
                    })
                    .collect(),
            })
            .await?;
        Ok(Ok((document, Some(after))))
    }

    /// The handoff's one paid call: `messages` (the trajectory and the summary request,
    /// or `handover`'s request for a document) to `who`, stored as phase `handoff` at
    /// turn s with its unusable billed attempts.
    ///
    /// Its reply (`what`: a summary, a Handover document) must be text: the call offers
    /// the bash tool (a conversation with tool calls is only valid with it) but forbids
    /// using it (`tool_choice` none). The model checks the rule in its one retry loop
    /// ([`Accept::Text`]): a reply that still makes a tool call, or has no text, is an
    /// unusable billed attempt (stored, counted per cell) retried like any unusable
    /// reply, up to the model's `unusable_retries` with the attempts stored by earlier
    /// runs counted.
    #[allow(clippy::too_many_arguments)]
    async fn handoff_call(
        &self,
        task: &Arc<AgentTask>,
        who: &str,
        progress: &AgentProgress,
        s: u32,
        messages: Vec<baton_types::Message>,
        seed: u64,
        what: &'static str,
    ) -> Result<Result<String, SwitchFailed>, RunError> {
        let model = &self.models[who];
        let prior = progress
            .unusable
            .iter()
            .filter(|a| a.phase == Phase::Handoff && a.call_index == s)
            .count() as u32;
        let mut sink = StoreSink::new(
            &self.shared,
            model,
            &task.id,
            progress.episode_id,
            Phase::Handoff,
            0,
        );
        if let Err(e) = sink.before_call(s, &messages).await {
            return Ok(Err(SwitchFailed::Retry(format!("{e:#}"))));
        }
        let mut request = model.request(messages, Some(seed));
        if self.config.protocol == Protocol::ToolCalls {
            request.tools = vec![bash_tool()];
            request.tool_choice = Some(ToolChoice::NoTools);
        }
        let generation = model
            .generate_accepting(request, prior, Accept::Text { what })
            .await;
        if let Err(e) = sink.unusable(s, &generation.unusable).await {
            return Err(sink.run_error(e));
        }
        let c = match generation.result {
            Ok(c) => c,
            Err(e) => {
                sink.settle();
                self.shared.block_dead_end(model, &e);
                let seen = prior + generation.unusable.len() as u32;
                let why = match &e {
                    // the unusable limit spent (this run's refusals and earlier runs')
                    ModelError::Provider { source, .. }
                        if matches!(**source, ProviderError::Unusable { .. }) =>
                    {
                        format!(
                            "task {:?}: model {who:?} gave no usable {} in {seen} answered attempt(s) of the handoff call (call {s})",
                            task.id,
                            what.trim_start_matches("a ")
                        )
                    }
                    _ => format!("task {:?}: the handoff call to {who:?}: {e}", task.id),
                };
                return Ok(Err(if model_side_terminal(&e) {
                    SwitchFailed::Refused(why)
                } else {
                    SwitchFailed::Retry(why)
                }));
            }
        };
        if let Err(e) = sink.record_plain(s, &c).await {
            return Err(sink.run_error(e));
        }
        sink.settle();
        // a billed reply whose cost cannot be computed blocks the model: the text
        // (stored without a cost), or a refused reply whose usage was read but not priced
        let unpriced = c.cost.as_ref().err().or_else(|| {
            generation
                .unusable
                .iter()
                .find_map(|a| a.usage.and(a.cost.as_ref().err()))
        });
        if let Some(why) = unpriced {
            let why = self.shared.block_unpriced(
                who,
                &format!("task {:?}, the handoff call {s}", task.id),
                why,
            );
            return Ok(Err(SwitchFailed::Retry(why)));
        }
        Ok(Ok(c.response.text))
    }
}

/// How long each run of a `handover` document's claim check may take at the switch.
const HANDOVER_CLAIM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Why a fired handoff could not make its switch.
pub(crate) enum SwitchFailed {
    /// The handoff call failed in a way a resume may not repeat; the episode stays
    /// incomplete.
    Retry(String),
    /// The summariser refused for good or gave no usable summary: the episode ends
    /// with exit `error`.
    Refused(String),
}

/// Where an independent prefix stands.
enum Prefix {
    /// It reached call s: the conversation node and the tree then.
    Reached(i64, Option<String>),
    /// It ended before (the episode is finished or left incomplete).
    Ended,
}
