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

/// One column of a table: its header, its alignment and how its cell is computed from
/// a row's item, so a header and its cells are written once, side by side, and cannot
/// drift apart (the agent report's exit-status table once had 9 cells under 8 headers).
pub(crate) struct Column<'a, T> {
    /// The header text.
    pub header: &'static str,
    /// How the column's header and cells align.
    pub align: Align,
    /// Whether the column holds the 95% interval of the column before it (LaTeX puts
    /// the two in one cell).
    pub interval: bool,
    cell: Box<dyn Fn(&T) -> String + 'a>,
}

impl<T> std::fmt::Debug for Column<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Column")
            .field("header", &self.header)
            .field("align", &self.align)
            .finish_non_exhaustive()
    }
}

/// A column headed `header`, aligned `align`, whose cell for an item is `cell(item)`.
pub(crate) fn column<'a, T>(
    header: &'static str,
    align: Align,
    cell: impl Fn(&T) -> String + 'a,
) -> Column<'a, T> {
    Column {
        header,
        align,
        interval: false,
        cell: Box::new(cell),
    }
}

impl<T> Column<'_, T> {
    /// This column marked as the interval of the column before it.
    pub(crate) fn interval(mut self) -> Self {
        self.interval = true;
        self
    }

    /// This column's cell for `item`.
    pub(crate) fn cell(&self, item: &T) -> String {
        (self.cell)(item)
    }
}

/// A table's headers (with alignment) and cells, rendered by each exporter. Built only
/// from a column list ([`Grid::of`]), so every row has one cell per header.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grid {
    pub headers: Vec<(&'static str, Align)>,
    /// Per column, whether it is the interval of the column before it.
    pub intervals: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

impl Grid {
    /// The table of `items`, one row each, under `columns`: each column gives its
    /// header and its cell of every row.
    pub(crate) fn of<T>(columns: &[Column<'_, T>], items: impl IntoIterator<Item = T>) -> Grid {
        Grid {
            headers: columns.iter().map(|c| (c.header, c.align)).collect(),
            intervals: columns.iter().map(|c| c.interval).collect(),
            rows: items
                .into_iter()
                .map(|item| columns.iter().map(|c| c.cell(&item)).collect())
                .collect(),
        }
    }

    /// As a padded Markdown table.
    pub(crate) fn markdown(&self) -> String {
        table(&self.headers, &self.rows)
    }
}

/// The width, in characters, every Markdown table fits in: a terminal's 100 columns.
pub(crate) const TABLE_WIDTH: usize = 100;

/// A Markdown table whose columns are padded to line up in a terminal too, no line
/// wider than [`TABLE_WIDTH`]: a table that would be wider is cut into parts of whole
/// columns, one under the other, each repeating the row's key (its leading
/// left-aligned columns, such as family, K and interface) so every part reads alone.
/// Only a single cell wider than the width (a long error message) can make a line
/// wider.
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
    parts(headers, &widths, TABLE_WIDTH)
        .iter()
        .map(|columns| part(headers, &cells, &widths, columns))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The columns of each part of a table whose columns are `widths` wide, so a part's
/// lines (`| a | b |`: three characters per column and one) stay within `limit`: as few
/// parts as fit, their widths as even as that number allows (no part of one lone
/// column under a full one).
fn parts(headers: &[(&str, Align)], widths: &[usize], limit: usize) -> Vec<Vec<usize>> {
    let fewest = greedy_parts(headers, widths, limit);
    if fewest.len() < 2 {
        return fewest;
    }
    // The narrowest limit that still needs no more parts.
    let (mut lo, mut hi) = (1, limit);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if greedy_parts(headers, widths, mid).len() <= fewest.len() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    greedy_parts(headers, widths, hi)
}

/// [`parts`] filled greedily: each part takes columns while they fit in `limit`.
fn greedy_parts(headers: &[(&str, Align)], widths: &[usize], limit: usize) -> Vec<Vec<usize>> {
    let line = |columns: &[usize]| 1 + columns.iter().map(|&i| widths[i] + 3).sum::<usize>();
    let all: Vec<usize> = (0..widths.len()).collect();
    if line(&all) <= limit {
        return vec![all];
    }
    let mut keys = headers
        .iter()
        .take_while(|(_, a)| *a == Align::Left)
        .count()
        .min(widths.len().saturating_sub(1));
    while keys > 1 && line(&all[..keys]) > limit / 2 {
        keys -= 1;
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = all[..keys].to_vec();
    for i in keys..widths.len() {
        let mut next = current.clone();
        next.push(i);
        if current.len() > keys && line(&next) > limit {
            out.push(std::mem::replace(&mut current, all[..keys].to_vec()));
            current.push(i);
        } else {
            current = next;
        }
    }
    out.push(current);
    out
}

/// One part of a table: the given columns of every row.
fn part(
    headers: &[(&str, Align)],
    cells: &[Vec<String>],
    widths: &[usize],
    columns: &[usize],
) -> String {
    let pad = |s: &str, w: usize, a: Align| {
        let fill = " ".repeat(w.saturating_sub(s.chars().count()));
        match a {
            Align::Left => format!("{s}{fill}"),
            Align::Right => format!("{fill}{s}"),
        }
    };
    let line = |items: Vec<String>| format!("| {} |\n", items.join(" | "));
    let mut out = line(
        columns
            .iter()
            .map(|&i| pad(headers[i].0, widths[i], headers[i].1))
            .collect(),
    );
    out.push_str(&line(
        columns
            .iter()
            .map(|&i| match headers[i].1 {
                Align::Left => "-".repeat(widths[i]),
                Align::Right => format!("{}:", "-".repeat(widths[i] - 1)),
            })
            .collect(),
    ));
    for r in cells {
        out.push_str(&line(
            columns
                .iter()
                .map(|&i| pad(&r[i], widths[i], headers[i].1))
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

    #[test]
    fn issue_35_wide_tables_wrap_into_parts_that_repeat_the_key() {
        // See: issue 35 (terminal tables up to 195 columns)
        let headers: Vec<(&str, Align)> = vec![("family", L), ("K", L)]
            .into_iter()
            .chain((0..12).map(|_| ("value 95% CI", R)))
            .collect();
        let row: Vec<String> = ["data2text".to_owned(), "middle".to_owned()]
            .into_iter()
            .chain((0..12).map(|i| format!("[-{i}0.5, 1{i}0.5]")))
            .collect();
        let t = table(&headers, &[row.clone(), row]);
        let lines: Vec<&str> = t.lines().collect();
        // The key takes 22 characters, each value column 17 (19 for the last two):
        // 4 value columns per part (90 and 94 characters; a fifth would make 107), each
        // part a header, a rule and two rows, a blank line between parts.
        assert_eq!(lines.len(), 3 * 4 + 2);
        assert!(
            lines.iter().all(|l| l.chars().count() <= TABLE_WIDTH),
            "{t}"
        );
        for header in [0, 5, 10] {
            assert_eq!(lines[header].matches("value 95% CI").count(), 4, "{t}");
        }
        for header in [0, 5, 10] {
            assert!(lines[header].starts_with("| family    | K      |"), "{t}");
        }
        assert_eq!(lines[4], "");
        assert!(lines[12].ends_with("[-110.5, 1110.5] |"), "{t}");
    }
}
