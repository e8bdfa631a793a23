//! Assembling the report: from episode records to rows through indexing, matching
//! and the evaluation plan ([`build`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use baton_types::{Cell, Cost, Direction, EpisodeStatus, Family, Interface, SwitchPoint};

use crate::input::{EpisodeCalls, EpisodeRecord, PairSpec, ReportInput};
use crate::metrics::{Means, Plan, PlanRow, Recovery, Source, Sums};
use crate::report::{
    ALL_FAMILIES, AVERAGE_K, AnchorRole, CellRow, ExtractionLine, IncompleteEntry, Report, SINGLE,
    SpendLine,
};
use crate::restart;

/// A (task, replicate) unit: the task's index within its family, and the replicate.
pub(crate) type Unit = (usize, u32);

/// Episode counts by status, plus matched units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub attempted: usize,
    pub scored: usize,
    pub unscored: usize,
    pub errored: usize,
    pub incomplete: usize,
    pub matched: usize,
    pub calls: EpisodeCalls,
    pub no_answer: usize,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.attempted += other.attempted;
        self.scored += other.scored;
        self.unscored += other.unscored;
        self.errored += other.errored;
        self.incomplete += other.incomplete;
        self.matched += other.matched;
        self.calls.add(&other.calls);
        self.no_answer += other.no_answer;
    }
}

/// The episodes of one cell in one family.
#[derive(Debug, Default)]
pub(crate) struct CellData {
    pub counts: Counts,
    /// Score and attributed cost of usable scored episodes (the first record wins).
    pub usable: BTreeMap<Unit, (f64, f64)>,
    /// Sum and count of recorded prefix costs, any status.
    pub prefix: BTreeMap<Unit, (f64, usize)>,
}

/// Episodes grouped by cell and family, tasks numbered within their family.
#[derive(Debug, Default)]
pub(crate) struct Index<'a> {
    /// Tasks per family, in the order of [`Family::ALL`].
    pub family_sizes: Vec<usize>,
    pub cells: HashMap<Family, HashMap<&'a Cell, CellData>>,
}

pub(crate) fn family_index(f: Family) -> usize {
    Family::ALL.iter().position(|&g| g == f).unwrap_or(0)
}

impl<'a> Index<'a> {
    fn new(episodes: &'a [EpisodeRecord]) -> Index<'a> {
        let mut tasks: Vec<BTreeSet<&str>> = vec![BTreeSet::new(); Family::ALL.len()];
        for e in episodes {
            tasks[family_index(e.family)].insert(&e.task_id);
        }
        let local: Vec<HashMap<&str, usize>> = tasks
            .iter()
            .map(|ts| ts.iter().enumerate().map(|(i, &t)| (t, i)).collect())
            .collect();
        let mut cells: HashMap<Family, HashMap<&Cell, CellData>> = HashMap::new();
        for e in episodes {
            let unit = (
                local[family_index(e.family)][e.task_id.as_str()],
                e.replicate,
            );
            let data = cells
                .entry(e.family)
                .or_default()
                .entry(&e.cell)
                .or_default();
            data.counts.attempted += 1;
            data.counts.calls.add(&e.calls);
            match e.status {
                EpisodeStatus::Scored => {
                    data.counts.scored += 1;
                    data.counts.no_answer += usize::from(e.no_answer);
                }
                EpisodeStatus::Unscored => data.counts.unscored += 1,
                EpisodeStatus::Errored => data.counts.errored += 1,
                EpisodeStatus::Incomplete => data.counts.incomplete += 1,
            }
            if let Some(s) = e.usable_score() {
                data.usable
                    .entry(unit)
                    .or_insert((s, e.cost_attributed.usd()));
            }
            if let Some(p) = e.prefix_cost.map(Cost::usd) {
                let slot = data.prefix.entry(unit).or_insert((0.0, 0));
                slot.0 += p;
                slot.1 += 1;
            }
        }
        Index {
            family_sizes: tasks.iter().map(BTreeSet::len).collect(),
            cells,
        }
    }

    pub fn get(&self, cell: &Cell, family: Family) -> Option<&CellData> {
        self.cells.get(&family)?.get(cell)
    }

    /// Families in which any cell of the pair has an episode.
    pub fn pair_families(&self, pair: &PairSpec) -> Vec<Family> {
        Family::ALL
            .into_iter()
            .filter(|f| {
                self.cells
                    .get(f)
                    .is_some_and(|cells| cells.keys().any(|c| belongs_to(c, pair)))
            })
            .collect()
    }

    /// (switch, interface) of the handoff cells from `sender` to `receiver` in a family.
    pub fn handoffs(
        &self,
        sender: &str,
        receiver: &str,
        family: Family,
    ) -> BTreeSet<(SwitchPoint, Interface)> {
        self.cells
            .get(&family)
            .into_iter()
            .flat_map(HashMap::keys)
            .filter_map(|cell| match cell {
                Cell::Handoff {
                    sender: s,
                    receiver: r,
                    switch,
                    interface,
                } if s == sender && r == receiver => Some((*switch, *interface)),
                _ => None,
            })
            .collect()
    }
}

fn belongs_to(cell: &Cell, pair: &PairSpec) -> bool {
    match cell {
        Cell::Single { model } | Cell::Baseline { model, .. } => {
            *model == pair.lc || *model == pair.hc
        }
        Cell::Handoff {
            sender, receiver, ..
        } => {
            (*sender == pair.lc && *receiver == pair.hc)
                || (*sender == pair.hc && *receiver == pair.lc)
        }
    }
}

/// The sender and receiver of a pair's direction.
pub(crate) fn endpoints(pair: &PairSpec, direction: Direction) -> (&str, &str) {
    match direction {
        Direction::Escalation => (&pair.lc, &pair.hc),
        Direction::Downshift => (&pair.hc, &pair.lc),
    }
}

/// Rows under construction: the plan and a skeleton row per plan row.
struct Builder {
    plan: Plan,
    rows: Vec<CellRow>,
    counts: Vec<Counts>,
}

impl Builder {
    fn push(&mut self, row: CellRow, source: Source, counts: Counts, min_gap: bool) -> usize {
        let handoff = row.anchor.is_none();
        self.plan.rows.push(PlanRow {
            source,
            handoff,
            min_gap,
        });
        self.rows.push(row);
        self.counts.push(counts);
        self.rows.len() - 1
    }

    fn push_mean(&mut self, row: CellRow, children: Vec<usize>, min_gap: bool) -> usize {
        let mut counts = Counts::default();
        for &c in &children {
            counts.add(&self.counts[c]);
        }
        self.push(row, Source::Mean(children), counts, min_gap)
    }
}

fn skeleton(pair: &PairSpec, direction: Option<Direction>, family: &str) -> CellRow {
    CellRow {
        pair: pair.name.clone(),
        direction,
        family: family.to_owned(),
        k: None,
        interface: SINGLE.to_owned(),
        anchor: None,
        model: None,
        cell: None,
        score: None,
        cost_per_task: None,
        qrec: None,
        csret: None,
        qrec_omitted_reason: None,
        qrec_unstable: false,
        csret_omitted_reason: None,
        score_lc: None,
        score_hc: None,
        cost_lc: None,
        cost_hc: None,
        score_ci: None,
        qrec_ci: None,
        csret_ci: None,
        n_attempted: 0,
        n_scored: 0,
        n_unscored: 0,
        n_errored: 0,
        n_incomplete: 0,
        n_no_answer: 0,
        n_matched: 0,
        cache_read_share: None,
        n_empty_replies: 0,
        n_cut_replies: 0,
        extraction_calls: 0,
        extraction_cost_usd: 0.0,
        extraction_failed: 0,
        aptitude: None,
        unreliability: None,
        mean_p: None,
        n_reliability_tasks: 0,
        unreliability_lc: None,
        unreliability_hc: None,
    }
}

fn add_anchor_rows(b: &mut Builder, idx: &Index<'_>, pair: &PairSpec, families: &[Family]) {
    let lc = Cell::single(&pair.lc);
    let hc = Cell::single(&pair.hc);
    let mut per_role: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    for &family in families {
        let (dl, dh) = (idx.get(&lc, family), idx.get(&hc, family));
        let both = match (dl, dh) {
            (Some(l), Some(h)) => l.usable.keys().filter(|u| h.usable.contains_key(u)).count(),
            _ => 0,
        };
        for (i, (role, cell, data)) in [(AnchorRole::Lc, &lc, dl), (AnchorRole::Hc, &hc, dh)]
            .into_iter()
            .enumerate()
        {
            let mut sums: BTreeMap<usize, Sums> = BTreeMap::new();
            let mut counts = Counts::default();
            if let Some(d) = data {
                counts = d.counts;
                for (&(t, _), &(s, c)) in &d.usable {
                    let acc = sums.entry(t).or_insert([0.0; 7]);
                    acc[0] += 1.0;
                    acc[1] += s;
                    acc[2] += c;
                }
            }
            counts.matched = both;
            let mut row = skeleton(pair, None, family.as_str());
            row.anchor = Some(role);
            row.model = Some(cell.first_model().to_owned());
            row.cell = Some(cell.label());
            let source = Source::Tasks {
                family: family_index(family),
                sums: sums.into_iter().collect(),
            };
            per_role[i].push(b.push(row, source, counts, false));
        }
    }
    for (role, cell, children) in [
        (AnchorRole::Lc, &lc, &per_role[0]),
        (AnchorRole::Hc, &hc, &per_role[1]),
    ] {
        let mut row = skeleton(pair, None, ALL_FAMILIES);
        row.anchor = Some(role);
        row.model = Some(cell.first_model().to_owned());
        b.push_mean(row, children.clone(), false);
    }
}

fn add_handoff_rows(
    b: &mut Builder,
    idx: &Index<'_>,
    pair: &PairSpec,
    direction: Direction,
    families: &[Family],
) {
    let (sender, receiver) = endpoints(pair, direction);
    let lc = Cell::single(&pair.lc);
    let hc = Cell::single(&pair.hc);
    let empty = CellData::default();
    let row_for = |family: &str, switch: &str, interface: Interface| {
        let mut row = skeleton(pair, Some(direction), family);
        row.k = Some(switch.to_owned());
        row.interface = interface.as_str().to_owned();
        row
    };
    // (switch, interface) -> per-family row indices, for the aggregates.
    let mut by_key: BTreeMap<(SwitchPoint, Interface), Vec<usize>> = BTreeMap::new();
    for &family in families {
        let keys = idx.handoffs(sender, receiver, family);
        if keys.is_empty() {
            continue;
        }
        let dl = idx.get(&lc, family).unwrap_or(&empty);
        let dh = idx.get(&hc, family).unwrap_or(&empty);
        let mut by_interface: BTreeMap<Interface, Vec<usize>> = BTreeMap::new();
        for &(switch, interface) in &keys {
            let cell = Cell::handoff(sender, receiver, switch, interface);
            let data = idx.get(&cell, family).unwrap_or(&empty);
            let mut sums: BTreeMap<usize, Sums> = BTreeMap::new();
            let mut counts = data.counts;
            for (unit, &(s, c)) in &data.usable {
                let (Some(&(sl, cl)), Some(&(sh, ch))) = (dl.usable.get(unit), dh.usable.get(unit))
                else {
                    continue;
                };
                let acc = sums.entry(unit.0).or_insert([0.0; 7]);
                for (a, v) in acc.iter_mut().zip([1.0, s, c, sl, cl, sh, ch]) {
                    *a += v;
                }
                counts.matched += 1;
            }
            let mut row = row_for(family.as_str(), &switch.label(), interface);
            row.cell = Some(cell.label());
            let source = Source::Tasks {
                family: family_index(family),
                sums: sums.into_iter().collect(),
            };
            let i = b.push(row, source, counts, true);
            by_interface.entry(interface).or_default().push(i);
            by_key.entry((switch, interface)).or_default().push(i);
        }
        for (interface, children) in by_interface {
            if children.len() > 1 {
                b.push_mean(
                    row_for(family.as_str(), AVERAGE_K, interface),
                    children,
                    true,
                );
            }
        }
    }
    let mut all_by_interface: BTreeMap<Interface, Vec<usize>> = BTreeMap::new();
    for ((switch, interface), children) in by_key {
        let i = b.push_mean(
            row_for(ALL_FAMILIES, &switch.label(), interface),
            children,
            false,
        );
        all_by_interface.entry(interface).or_default().push(i);
    }
    for (interface, children) in all_by_interface {
        if children.len() > 1 {
            b.push_mean(row_for(ALL_FAMILIES, AVERAGE_K, interface), children, false);
        }
    }
}

fn fill(row: &mut CellRow, counts: &Counts, means: Option<&Means>, min_gap: bool) {
    row.n_attempted = counts.attempted;
    row.n_scored = counts.scored;
    row.n_unscored = counts.unscored;
    row.n_errored = counts.errored;
    row.n_incomplete = counts.incomplete;
    row.n_matched = counts.matched;
    let c = &counts.calls;
    row.cache_read_share =
        (c.input_tokens > 0).then(|| 100.0 * c.cache_read_tokens as f64 / c.input_tokens as f64);
    row.n_empty_replies = c.empty_replies;
    row.n_cut_replies = c.cut_replies;
    row.extraction_calls = c.extraction_calls;
    row.extraction_cost_usd = c.extraction_cost.usd();
    row.extraction_failed = c.extraction_failed;
    row.n_no_answer = counts.no_answer;
    if !row.is_anchor() {
        let r = Recovery::of(means, min_gap);
        (row.qrec, row.qrec_omitted_reason) = (r.qrec, r.qrec_omitted);
        (row.csret, row.csret_omitted_reason) = (r.csret, r.csret_omitted);
        row.qrec_unstable = r.qrec_unstable;
        if let Some(m) = means {
            row.score_lc = Some(m.r_lc);
            row.score_hc = Some(m.r_hc);
            row.cost_lc = Some(m.c_lc);
            row.cost_hc = Some(m.c_hc);
        }
    }
    if let Some(m) = means {
        row.score = Some(m.r_m);
        row.cost_per_task = Some(m.c_m);
    }
}

fn incomplete_list(episodes: &[EpisodeRecord]) -> Vec<IncompleteEntry> {
    let mut list: Vec<IncompleteEntry> = episodes
        .iter()
        .filter_map(|e| {
            let reason = match e.status {
                EpisodeStatus::Incomplete | EpisodeStatus::Errored => e.reason.clone(),
                EpisodeStatus::Scored if e.usable_score().is_none() => Some(
                    e.reason
                        .clone()
                        .unwrap_or_else(|| "scored without a usable score or cost".to_owned()),
                ),
                _ => return None,
            };
            Some(IncompleteEntry {
                task_id: e.task_id.clone(),
                family: e.family,
                cell: e.cell.label(),
                replicate: e.replicate,
                status: e.status,
                reason,
            })
        })
        .collect();
    list.sort_by(|a, b| {
        (family_index(a.family), &a.task_id, &a.cell, a.replicate).cmp(&(
            family_index(b.family),
            &b.task_id,
            &b.cell,
            b.replicate,
        ))
    });
    list
}

fn notes(input: &ReportInput) -> Vec<String> {
    let mut outside: BTreeMap<String, usize> = BTreeMap::new();
    for e in &input.episodes {
        if !input.pairs.iter().any(|p| belongs_to(&e.cell, p)) {
            *outside.entry(e.cell.label()).or_default() += 1;
        }
    }
    let mut notes = input.notes.clone();
    if !outside.is_empty() {
        let n: usize = outside.values().sum();
        let cells: Vec<String> = outside.into_keys().collect();
        notes.push(format!(
            "{n} episode(s) belong to no pair and appear in no table: {}",
            cells.join("; ")
        ));
    }
    let unscored: usize = input
        .episodes
        .iter()
        .filter(|e| e.status == EpisodeStatus::Unscored)
        .count();
    if unscored > 0 {
        notes.push(format!(
            "{unscored} episode(s) were answered but not scored (no evaluator for the family in this build); they are counted, not scored"
        ));
    }
    notes
}

/// Builds every table of the report from the episode records.
///
/// Never fails: records [`ReportInput::validate`] would reject are handled
/// conservatively (a repeated record counts as attempted but only the first one
/// enters metrics; a scored record without a usable score is listed with the
/// incomplete ones).
pub fn build(input: &ReportInput) -> Report {
    let idx = Index::new(&input.episodes);
    let mut b = Builder {
        plan: Plan {
            rows: Vec::new(),
            family_sizes: idx.family_sizes.clone(),
        },
        rows: Vec::new(),
        counts: Vec::new(),
    };
    for pair in &input.pairs {
        let families = idx.pair_families(pair);
        add_anchor_rows(&mut b, &idx, pair, &families);
        for direction in [Direction::Escalation, Direction::Downshift] {
            add_handoff_rows(&mut b, &idx, pair, direction, &families);
        }
    }
    let mut point = Vec::new();
    b.plan.evaluate(None, &mut point);
    for (i, row) in b.rows.iter_mut().enumerate() {
        fill(row, &b.counts[i], point[i].as_ref(), b.plan.rows[i].min_gap);
    }
    if let Some(cfg) = &input.bootstrap {
        for (row, ci) in b.rows.iter_mut().zip(b.plan.intervals(cfg)) {
            if row.score.is_some() {
                row.score_ci = ci.score;
            }
            if row.qrec.is_some() {
                row.qrec_ci = ci.qrec;
            }
            if row.csret.is_some() {
                row.csret_ci = ci.csret;
            }
        }
    }
    crate::protocol::fill_reliability(&mut b.rows, &input.episodes, &input.pairs);
    Report {
        extraction_rules: crate::report::rule_counts(&input.episodes),
        baselines: crate::protocol::baseline_rows(
            &input.episodes,
            &input.pairs,
            input.bootstrap.as_ref(),
        ),
        title: input.title.clone(),
        simulated: input.simulated,
        pairs: input.pairs.clone(),
        bootstrap: input.bootstrap,
        cells: b.rows,
        restart_controls: input
            .pairs
            .iter()
            .flat_map(|p| restart::controls(&idx, p, &idx.pair_families(p)))
            .collect(),
        incomplete: incomplete_list(&input.episodes),
        notes: notes(input),
        spend: input.spend.as_ref().map(|s| {
            let forked: baton_types::Cost = input
                .episodes
                .iter()
                .map(|e| e.cost_attributed - e.cost_paid)
                .sum();
            SpendLine::new(s, forked)
        }),
        skipped_tasks: input.skipped_tasks.clone(),
        extraction: extraction_line(&input.episodes),
    }
}

/// The experiment's answer-extraction spend, over every episode; `None` when no
/// extraction call was made.
fn extraction_line(episodes: &[EpisodeRecord]) -> Option<ExtractionLine> {
    let mut total = EpisodeCalls::default();
    for e in episodes {
        total.add(&e.calls);
    }
    (total.extraction_calls > 0).then(|| ExtractionLine {
        extraction_calls: total.extraction_calls,
        extraction_cost_usd: total.extraction_cost.usd(),
        extraction_failed: total.extraction_failed,
    })
}
