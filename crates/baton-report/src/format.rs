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

/// The widest a key column is when a table is cut into parts.
const MAX_KEY_WIDTH: usize = 40;

/// The narrowest a text column is cut to when a table is too wide for [`TABLE_WIDTH`].
const MIN_TEXT_WIDTH: usize = 24;

/// A Markdown table whose columns are padded to line up in a terminal too, no line
/// wider than [`TABLE_WIDTH`]: a table that would be wider is cut into parts of whole
/// columns, one under the other, each repeating the row's key (its leading
/// left-aligned columns, such as family, K and interface) so every part reads alone.
/// A text cell too long for any part (a long error message, a cell name with long
/// model names) is abbreviated to its start, `…` and a number, `[1]`, and the table is
/// followed by its legend: each number with the full text.
pub(crate) fn table(headers: &[(&str, Align)], rows: &[Vec<String>]) -> String {
    let mut cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| c.replace('|', "\\|")).collect())
        .collect();
    let width = |cells: &[Vec<String>], i: usize| {
        cells
            .iter()
            .map(|r| r[i].chars().count())
            .chain([headers[i].0.chars().count(), 3])
            .max()
            .unwrap_or(3)
    };
    let mut widths: Vec<usize> = (0..headers.len()).map(|i| width(&cells, i)).collect();
    let legend = abbreviate(headers, &mut cells, &mut widths);
    let mut out = parts(headers, &widths, TABLE_WIDTH)
        .iter()
        .map(|columns| part(headers, &cells, &widths, columns))
        .collect::<Vec<_>>()
        .join("\n");
    if !legend.is_empty() {
        out.push('\n');
        for (n, text) in legend.iter().enumerate() {
            out.push_str(&wrap(&format!("- [{}] {text}", n + 1), TABLE_WIDTH, "  "));
        }
    }
    out
}

/// When the table is cut into parts, narrows its key columns to [`MAX_KEY_WIDTH`];
/// then narrows the widest text column of the widest part while a part is wider than
/// [`TABLE_WIDTH`] (never under [`MIN_TEXT_WIDTH`] or its header), then shortens each
/// cell longer than its column to its start, `…` and `[n]`; the texts shortened, in
/// order of their numbers (one number per distinct text).
fn abbreviate(
    headers: &[(&str, Align)],
    cells: &mut [Vec<String>],
    widths: &mut [usize],
) -> Vec<String> {
    let line = line_width;
    let natural = widths.to_vec();
    if parts(headers, widths, TABLE_WIDTH).len() > 1 {
        // The key repeats in every part: a long key (a pair of model names) would
        // leave room for a column or two beside it.
        let keys = headers
            .iter()
            .take_while(|(_, a)| *a == Align::Left)
            .count();
        for i in 0..keys.min(widths.len().saturating_sub(1)) {
            widths[i] = widths[i].min(MAX_KEY_WIDTH.max(headers[i].0.chars().count()));
        }
    }
    loop {
        let all = parts(headers, widths, TABLE_WIDTH);
        let Some(worst) = all.iter().max_by_key(|c| line(widths, c)) else {
            break;
        };
        let over = line(widths, worst).saturating_sub(TABLE_WIDTH);
        if over == 0 {
            break;
        }
        let floor = |i: usize| MIN_TEXT_WIDTH.max(headers[i].0.chars().count());
        let Some(&i) = worst
            .iter()
            .filter(|&&i| headers[i].1 == Align::Left && widths[i] > floor(i))
            .max_by_key(|&&i| widths[i])
        else {
            break;
        };
        widths[i] = widths[i].saturating_sub(over).max(floor(i));
    }
    let mut legend: Vec<String> = Vec::new();
    for row in cells.iter_mut() {
        for (i, cell) in row.iter_mut().enumerate() {
            if widths[i] == natural[i] || cell.chars().count() <= widths[i] {
                continue;
            }
            let n = match legend.iter().position(|t| t == cell) {
                Some(n) => n + 1,
                None => {
                    legend.push(cell.clone());
                    legend.len()
                }
            };
            let mark = format!("… [{n}]");
            let keep = widths[i].saturating_sub(mark.chars().count());
            let mut start: String = cell.chars().take(keep).collect();
            while start.ends_with(' ') || start.ends_with('\\') {
                start.pop();
            }
            *cell = format!("{start}{mark}");
        }
    }
    legend
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word
/// keeps its line), each line after the first starting with `indent`.
pub(crate) fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let len = line.chars().count();
        if len > indent.len() && len + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.to_owned();
        } else if !line.is_empty() && line != indent {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The columns of each part of a table whose columns are `widths` wide, so a part's
/// lines (`| a | b |`: three characters per column and one) stay within `limit`: as few
/// parts as fit, their widths as even as that number allows (no part of one lone
/// column under a full one).
fn parts(headers: &[(&str, Align)], widths: &[usize], limit: usize) -> Vec<Vec<usize>> {
    let keys = key_columns(headers, widths, limit);
    let fewest = greedy_parts(widths, limit, keys);
    if fewest.len() < 2 {
        return fewest;
    }
    // The narrowest limit that still needs no more parts.
    let (mut lo, mut hi) = (1, limit);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if greedy_parts(widths, mid, keys).len() <= fewest.len() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    greedy_parts(widths, hi, keys)
}

/// The line of a part made of `columns`: `| a | b |`, three characters per column and one.
fn line_width(widths: &[usize], columns: &[usize]) -> usize {
    1 + columns.iter().map(|&i| widths[i] + 3).sum::<usize>()
}

/// How many leading columns each part repeats as the row's key: the leading
/// left-aligned ones (not all of them), as many as fit in 3/5 of `limit`.
fn key_columns(headers: &[(&str, Align)], widths: &[usize], limit: usize) -> usize {
    let all: Vec<usize> = (0..widths.len()).collect();
    let mut keys = headers
        .iter()
        .take_while(|(_, a)| *a == Align::Left)
        .count()
        .min(widths.len().saturating_sub(1));
    while keys > 1 && line_width(widths, &all[..keys]) > limit * 3 / 5 {
        keys -= 1;
    }
    keys
}

/// [`parts`] filled greedily: each part takes columns while they fit in `limit`, after
/// the first `keys` columns.
fn greedy_parts(widths: &[usize], limit: usize, keys: usize) -> Vec<Vec<usize>> {
    let line = |columns: &[usize]| line_width(widths, columns);
    let all: Vec<usize> = (0..widths.len()).collect();
    if line(&all) <= limit {
        return vec![all];
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
