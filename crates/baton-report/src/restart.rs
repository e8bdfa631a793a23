//! Restart controls: what escalating by starting over would have cost.
//!
//! `abort+HC` runs LC through turn K, gives up, and runs HC from the start:
//! cost = LC's attributed prefix cost through K + HC-only cost, quality = HC-only.
//! `LC-full+HC-full` runs LC to the end, then HC from the start: cost = LC-only +
//! HC-only, quality = HC-only. Both are composed from stored episodes; the prefix
//! cost comes from the escalation episodes' `prefix_cost` and is never estimated.

use std::collections::{BTreeMap, BTreeSet};

use baton_types::{Cell, Direction, Family};

use crate::assemble::{CellData, Index, Unit, endpoints};
use crate::input::PairSpec;
use crate::report::{ALL_FAMILIES, RestartControl};

/// Mean HC score (points), LC cost, HC cost and prefix cost over units.
#[derive(Debug, Clone, Copy)]
struct Parts {
    quality: f64,
    cost_lc: f64,
    cost_hc: f64,
    prefix: f64,
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
        let n = parts.len() as f64;
        let mean = (n > 0.0).then(|| Parts {
            quality: parts.iter().map(|p| p.quality).sum::<f64>() / n,
            cost_lc: parts.iter().map(|p| p.cost_lc).sum::<f64>() / n,
            cost_hc: parts.iter().map(|p| p.cost_hc).sum::<f64>() / n,
            prefix: parts.iter().map(|p| p.prefix).sum::<f64>() / n,
        });
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
    let mut acc = [0.0; 4];
    let mut n = 0usize;
    for (unit, &(sum, k)) in prefix {
        let (Some(&(_, cl)), Some(&(sh, ch))) = (lc.usable.get(unit), hc.usable.get(unit)) else {
            continue;
        };
        for (a, v) in acc.iter_mut().zip([100.0 * sh, cl, ch, sum / k as f64]) {
            *a += v;
        }
        n += 1;
    }
    let d = n as f64;
    (n > 0).then(|| {
        (
            n,
            Parts {
                quality: acc[0] / d,
                cost_lc: acc[1] / d,
                cost_hc: acc[2] / d,
                prefix: acc[3] / d,
            },
        )
    })
}

fn control(
    pair: &PairSpec,
    family: &str,
    k: &str,
    n_units: usize,
    p: Option<Parts>,
) -> RestartControl {
    let csret = |p: &Parts, cost: f64| {
        let gap = p.cost_hc - p.cost_lc;
        (gap.abs() >= 1e-12).then(|| 100.0 * (p.cost_hc - cost) / gap)
    };
    let abort = p.map(|p| p.prefix + p.cost_hc);
    let full = p.map(|p| p.cost_lc + p.cost_hc);
    RestartControl {
        pair: pair.name.clone(),
        family: family.to_owned(),
        k: k.to_owned(),
        n_units,
        quality: p.map(|p| p.quality),
        cost_lc: p.map(|p| p.cost_lc),
        cost_hc: p.map(|p| p.cost_hc),
        prefix_cost: p.map(|p| p.prefix),
        abort_hc_cost: abort,
        abort_hc_csret: p.zip(abort).and_then(|(p, c)| csret(&p, c)),
        full_restart_cost: full,
        full_restart_csret: p.zip(full).and_then(|(p, c)| csret(&p, c)),
    }
}
