//! Number formatting and a padded Markdown table shared by the text exporters.

/// Shown where a value is missing.
pub(crate) const DASH: &str = "—";

/// One decimal, or a dash.
pub(crate) fn one_decimal(v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_owned(), |v| fixed(v, 1))
}

/// A 95% interval with one decimal, or a dash.
pub(crate) fn interval(ci: Option<[f64; 2]>) -> String {
    ci.map_or_else(
        || DASH.to_owned(),
        |[lo, hi]| format!("[{}, {}]", fixed(lo, 1), fixed(hi, 1)),
    )
}

/// USD with 4 significant digits (more for amounts of 10,000 and up), or a dash.
pub(crate) fn dollars(v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_owned(), |v| format!("${}", significant(v, 4)))
}

/// `v` with `digits` significant digits, never in exponent notation.
pub(crate) fn significant(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return fixed(v, 0);
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).clamp(0, 12) as usize;
    fixed(v, decimals)
}

/// `v` with `decimals` decimals, never `-0.0`.
pub(crate) fn fixed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_owned(),
        _ => s,
    }
}

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// Short names for table headers.
pub(crate) const L: Align = Align::Left;
/// See [`L`].
pub(crate) const R: Align = Align::Right;

/// A table's headers (with alignment) and cells, rendered by each exporter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grid {
    pub headers: Vec<(&'static str, Align)>,
    pub rows: Vec<Vec<String>>,
}

impl Grid {
    /// A table of `rows` under `headers`; every row has one cell per header (a row
    /// that does not is a report bug: a column would print under another's name).
    pub(crate) fn new(headers: &[(&'static str, Align)], rows: Vec<Vec<String>>) -> Grid {
        for row in &rows {
            debug_assert_eq!(
                row.len(),
                headers.len(),
                "a table row has {} cells under {} headers",
                row.len(),
                headers.len()
            );
        }
        Grid {
            headers: headers.to_vec(),
            rows,
        }
    }

    /// As a padded Markdown table.
    pub(crate) fn markdown(&self) -> String {
        table(&self.headers, &self.rows)
    }
}

/// A Markdown table whose columns are padded to line up in a terminal too.
pub(crate) fn table(headers: &[(&str, Align)], rows: &[Vec<String>]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| c.replace('|', "\\|")).collect())
        .collect();
    let width = |i: usize| {
        cells
            .iter()
            .map(|r| r[i].chars().count())
            .chain([headers[i].0.chars().count(), 3])
            .max()
            .unwrap_or(3)
    };
    let widths: Vec<usize> = (0..headers.len()).map(width).collect();
    let pad = |s: &str, w: usize, a: Align| {
        let fill = " ".repeat(w.saturating_sub(s.chars().count()));
        match a {
            Align::Left => format!("{s}{fill}"),
            Align::Right => format!("{fill}{s}"),
        }
    };
    let line = |items: Vec<String>| format!("| {} |\n", items.join(" | "));
    let mut out = line(
        headers
            .iter()
            .zip(&widths)
            .map(|(&(h, a), &w)| pad(h, w, a))
            .collect(),
    );
    out.push_str(&line(
        headers
            .iter()
            .zip(&widths)
            .map(|(&(_, a), &w)| match a {
                Align::Left => "-".repeat(w),
                Align::Right => format!("{}:", "-".repeat(w - 1)),
            })
            .collect(),
    ));
    for r in &cells {
        out.push_str(&line(
            r.iter()
                .zip(headers.iter().zip(&widths))
                .map(|(c, (&(_, a), &w))| pad(c, w, a))
                .collect(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_keep_four_significant_digits() {
        assert_eq!(dollars(Some(0.00123456)), "$0.001235");
        assert_eq!(dollars(Some(0.5)), "$0.5000");
        assert_eq!(dollars(Some(12.3456)), "$12.35");
        assert_eq!(dollars(Some(123456.7)), "$123457");
        assert_eq!(dollars(Some(0.0)), "$0");
        assert_eq!(dollars(None), "—");
    }

    #[test]
    fn scores_have_one_decimal_and_no_negative_zero() {
        assert_eq!(one_decimal(Some(66.666)), "66.7");
        assert_eq!(one_decimal(Some(-0.0)), "0.0");
        assert_eq!(one_decimal(Some(-0.04)), "0.0");
        assert_eq!(one_decimal(Some(-12.34)), "-12.3");
        assert_eq!(interval(Some([1.04, 99.96])), "[1.0, 100.0]");
    }

    #[test]
    fn tables_line_up() {
        let t = table(
            &[("name", Align::Left), ("n", Align::Right)],
            &[vec!["a|b".into(), "12345".into()]],
        );
        assert_eq!(t, "| name |     n |\n| ---- | ----: |\n| a\\|b | 12345 |\n");
    }
}
