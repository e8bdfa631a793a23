//! CSV export: one line per table row, raw numbers; `qrec_unstable` is `true` on a row
//! whose QRec divides by anchors less than 5 points apart (empty otherwise).

use crate::report::{CellRow, Report};

/// The CSV header, in column order.
pub const CSV_COLUMNS: [&str; 32] = [
    "pair",
    "direction",
    "family",
    "k",
    "interface",
    "anchor",
    "model",
    "cell",
    "score",
    "cost_per_task",
    "qrec",
    "csret",
    "qrec_omitted_reason",
    "csret_omitted_reason",
    "score_lc",
    "score_hc",
    "cost_lc",
    "cost_hc",
    "score_ci_low",
    "score_ci_high",
    "qrec_ci_low",
    "qrec_ci_high",
    "csret_ci_low",
    "csret_ci_high",
    "n_attempted",
    "n_scored",
    "n_unscored",
    "n_errored",
    "n_incomplete",
    "n_matched",
    "n_no_answer",
    "qrec_unstable",
];

impl Report {
    /// Every row of [`Report::cells`] as CSV (RFC 4180 quoting, `\n` line ends), then
    /// every baseline row (`interface` `full` or `concat`, `pair` and `direction` empty;
    /// their degradation is in the JSON, Markdown and HTML reports).
    /// Numbers are written in full (shortest round-trip form); a missing value is an
    /// empty field.
    pub fn to_csv(&self) -> String {
        let mut out = CSV_COLUMNS.join(",");
        out.push('\n');
        for r in &self.cells {
            out.push_str(
                &fields(r)
                    .iter()
                    .map(|f| quote(f))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            out.push('\n');
        }
        for b in &self.baselines {
            let mut f = vec![String::new(); CSV_COLUMNS.len()];
            let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
            f[2] = b.family.clone();
            f[4] = b.interface.clone();
            f[6] = b.model.clone();
            f[7] = b.cell.clone();
            f[8] = num(b.score);
            f[9] = num(b.cost_per_task);
            f[24] = b.n_attempted.to_string();
            f[25] = b.n_scored.to_string();
            f[28] = b.n_incomplete.to_string();
            f[29] = b.n_matched.to_string();
            f[30] = b.n_no_answer.to_string();
            out.push_str(&f.iter().map(|x| quote(x)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        out
    }
}

fn fields(r: &CellRow) -> Vec<String> {
    let text = |v: Option<&str>| v.unwrap_or_default().to_owned();
    let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let lo = |ci: Option<[f64; 2]>| num(ci.map(|c| c[0]));
    let hi = |ci: Option<[f64; 2]>| num(ci.map(|c| c[1]));
    vec![
        r.pair.clone(),
        text(r.direction.map(|d| d.as_str())),
        r.family.clone(),
        text(r.k.as_deref()),
        r.interface.clone(),
        text(r.anchor.map(|a| a.as_str())),
        text(r.model.as_deref()),
        text(r.cell.as_deref()),
        num(r.score),
        num(r.cost_per_task),
        num(r.qrec),
        num(r.csret),
        text(r.qrec_omitted_reason.map(|o| o.as_str())),
        text(r.csret_omitted_reason.map(|o| o.as_str())),
        num(r.score_lc),
        num(r.score_hc),
        num(r.cost_lc),
        num(r.cost_hc),
        lo(r.score_ci),
        hi(r.score_ci),
        lo(r.qrec_ci),
        hi(r.qrec_ci),
        lo(r.csret_ci),
        hi(r.csret_ci),
        r.n_attempted.to_string(),
        r.n_scored.to_string(),
        r.n_unscored.to_string(),
        r.n_errored.to_string(),
        r.n_incomplete.to_string(),
        r.n_matched.to_string(),
        r.n_no_answer.to_string(),
        if r.qrec_unstable { "true" } else { "" }.to_owned(),
    ]
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(
            quote("handoff(a -> b, early, raw)"),
            "\"handoff(a -> b, early, raw)\""
        );
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
