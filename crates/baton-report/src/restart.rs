//! Restart controls: what escalating by starting over would have cost.
//!
//! `abort+HC` runs LC through turn K, gives up, and runs HC from the start:
//! cost = LC's attributed prefix cost through K + HC-only cost, quality = HC-only.
//! `LC-full+HC-full` runs LC to the end, then HC from the start: cost = LC-only +
//! HC-only, quality = HC-only. Both are composed from stored episodes; the prefix
//! cost comes from the escalation episodes' `prefix_cost` and is never estimated. The
//! composition of a unit and its CSRet are the metrics core's ([`RestartUnit`],
//! [`Means::csret`]), shared with the agent handoff study.

use std::collections::{BTreeMap, BTreeSet};

use baton_types::{Cell, Direction, Family};

use crate::assemble::{CellData, Index, Unit, endpoints};
use crate::input::PairSpec;
use crate::metrics::{Means, RestartUnit, add_sums};
use crate::report::{ALL_FAMILIES, RestartControl};

/// A restart control's composed rows over matched units: `abort+HC`, `LC-full+HC-full`
/// and the mean prefix cost.
#[derive(Debug, Clone, Copy)]
struct Parts {
    abort: Means,
    full: Means,
    prefix: f64,
}

impl Parts {
    /// The equal-weight mean of families' parts (`None` without any).
    fn mean_of(parts: &[Parts]) -> Option<Parts> {
        Some(Parts {
            abort: Means::mean_of(parts.iter().map(|p| &p.abort))?,
            full: Means::mean_of(parts.iter().map(|p| &p.full))?,
            prefix: parts.iter().map(|p| p.prefix).sum::<f64>() / parts.len() as f64,
        })
    }
}

pub(crate) fn controls(
    idx: &Index<'_>,
    pair: &PairSpec,
    families: &[Family],
) -> Vec<RestartControl> {
    let (sender, receiver) = endpoints(pair, Direction::Escalation);
    let lc = Cell::single(&pair.lc);
    let hc = Cell::single(&pair.hc);
    let mut out = Vec::new();
    // Per switch: units and the families' parts, for the equal-weight row.
    let mut by_switch: BTreeMap<_, (usize, Vec<Parts>)> = BTreeMap::new();
    for &family in families {
        let switches: BTreeSet<_> = idx
            .handoffs(sender, receiver, family)
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        for switch in switches {
            // Prefix cost per unit, averaged over the interfaces that recorded one
            // (forked prefixes make them equal; independent ones may differ).
            let mut prefix: BTreeMap<Unit, (f64, usize)> = BTreeMap::new();
            for (s, interface) in idx.handoffs(sender, receiver, family) {
                if s != switch {
                    continue;
                }
                let cell = Cell::handoff(sender, receiver, switch, interface);
                for (unit, &(sum, n)) in idx
                    .get(&cell, family)
                    .map(|d| &d.prefix)
                    .into_iter()
                    .flatten()
                {
                    let slot = prefix.entry(*unit).or_insert((0.0, 0));
                    slot.0 += sum;
                    slot.1 += n;
                }
            }
            let (dl, dh) = (idx.get(&lc, family), idx.get(&hc, family));
            let parts = compose(&prefix, dl, dh);
            let n_units = parts.map_or(0, |(n, _)| n);
            let parts = parts.map(|(_, p)| p);
            let slot = by_switch.entry(switch).or_default();
            slot.0 += n_units;
            slot.1.extend(parts);
            out.push(control(
                pair,
                family.as_str(),
                &switch.label(),
                n_units,
                parts,
            ));
        }
    }
    for (switch, (n_units, parts)) in by_switch {
        let mean = Parts::mean_of(&parts);
        out.push(control(pair, ALL_FAMILIES, &switch.label(), n_units, mean));
    }
    out
}

fn compose(
    prefix: &BTreeMap<Unit, (f64, usize)>,
    lc: Option<&CellData>,
    hc: Option<&CellData>,
) -> Option<(usize, Parts)> {
    let (lc, hc) = (lc?, hc?);
    let (mut abort, mut full) = ([0.0; 7], [0.0; 7]);
    let mut prefix_sum = 0.0;
    let mut n = 0usize;
    for (unit, &(sum, k)) in prefix {
        let (Some(&l), Some(&h)) = (lc.usable.get(unit), hc.usable.get(unit)) else {
            continue;
        };
        let u = RestartUnit {
            prefix: sum / k as f64,
            lc: l,
            hc: h,
        };
        add_sums(&mut abort, &u.abort());
        add_sums(&mut full, &u.full_restart());
        prefix_sum += u.prefix;
        n += 1;
    }
    Some((
        n,
        Parts {
            abort: Means::from_sums(&abort)?,
            full: Means::from_sums(&full)?,
            prefix: prefix_sum / n as f64,
        },
    ))
}

fn control(
    pair: &PairSpec,
    family: &str,
    k: &str,
    n_units: usize,
    p: Option<Parts>,
) -> RestartControl {
    RestartControl {
        pair: pair.name.clone(),
        family: family.to_owned(),
        k: k.to_owned(),
        n_units,
        quality: p.map(|p| p.abort.r_m),
        cost_lc: p.map(|p| p.abort.c_lc),
        cost_hc: p.map(|p| p.abort.c_hc),
        prefix_cost: p.map(|p| p.prefix),
        abort_hc_cost: p.map(|p| p.abort.c_m),
        abort_hc_csret: p.and_then(|p| p.abort.csret().ok()),
        full_restart_cost: p.map(|p| p.full.c_m),
        full_restart_csret: p.and_then(|p| p.full.csret().ok()),
    }
}
