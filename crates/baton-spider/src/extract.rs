//! Deterministic SQL extraction from a model response (see [`extract_sql`]).

use std::sync::LazyLock;

use regex::Regex;

static SQL_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(select|with)\b").expect("valid regex"));
static STARTS_SQL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^(select|with)\b").expect("valid regex"));

/// The fenced blocks of `response` as (info string, body).
fn fenced_blocks(response: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in response.lines() {
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some((info.trim().to_owned(), Vec::new()));
                }
            }
            Some((info, mut body)) => {
                if trimmed.starts_with("```") {
                    blocks.push((info, body.join("\n")));
                } else {
                    body.push(line);
                    open = Some((info, body));
                }
            }
        }
    }
    if let Some((info, body)) = open {
        blocks.push((info, body.join("\n")));
    }
    blocks
}

fn is_sql_tag(info: &str) -> bool {
    let tag = info.split_whitespace().next().unwrap_or("");
    tag.is_empty() || tag.eq_ignore_ascii_case("sql") || tag.eq_ignore_ascii_case("sqlite")
}

/// Extract the SQL query from a model response.
///
/// Upstream LiC asks gpt-4o-mini to pull the SQL out of the response. That
/// cannot be reproduced, so baton uses fixed rules (a design decision, to be
/// recorded with every result):
///
/// 1. The last fenced code block tagged `sql` or `sqlite` (any case) or
///    untagged whose body mentions `SELECT` or `WITH` as a word (any case). An
///    unclosed final fence runs to the end of the response. The block body is
///    returned trimmed, without the fence lines.
/// 2. Otherwise, from the last line that starts with `SELECT` or `WITH` (after
///    indentation, any case) and does not lie inside the span of an earlier
///    such line, up to the first `;` (excluded) or blank line. The "earlier
///    span" condition keeps a multi-line query whole when one of its subquery
///    lines also starts with `SELECT`.
/// 3. Otherwise the whole response, trimmed.
///
/// Because the fence is removed here, a ```` ```SQL ```` or ```` ```sqlite ````
/// block scores like a ```` ```sql ```` one; passing the raw response to
/// [`SpiderEvaluator::evaluate`](crate::SpiderEvaluator::evaluate) instead
/// reproduces LiC's handling of fences (only ```` ```sql ```` and ```` ``` ````
/// are removed, so the other tags break the query).
pub fn extract_sql(response: &str) -> String {
    let from_fence = fenced_blocks(response)
        .into_iter()
        .rev()
        .find(|(info, body)| is_sql_tag(info) && SQL_WORD.is_match(body));
    if let Some((_, body)) = from_fence {
        return body.trim().to_owned();
    }

    let lines: Vec<&str> = response.lines().collect();
    // (first line, end line exclusive, text) for every line starting a query.
    let mut spans: Vec<(usize, usize, String)> = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        if !STARTS_SQL.is_match(line.trim_start()) {
            continue;
        }
        let mut text = String::new();
        let mut end = start;
        while end < lines.len() {
            let current = if end == start {
                lines[end].trim_start()
            } else {
                lines[end]
            };
            if end > start && current.trim().is_empty() {
                break;
            }
            end += 1;
            if let Some(cut) = current.find(';') {
                text.push_str(&current[..cut]);
                break;
            }
            text.push_str(current);
            text.push('\n');
        }
        spans.push((start, end, text.trim().to_owned()));
    }
    let chosen = spans
        .iter()
        .enumerate()
        .rev()
        .find(|(i, (start, _, _))| !spans[..*i].iter().any(|(s, e, _)| s < start && start < e));
    if let Some((_, (_, _, text))) = chosen {
        return text.clone();
    }
    response.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_sql_fence_wins() {
        let response =
            "Try:\n```sql\nSELECT 1\n```\nor better:\n```SQL\nSELECT name\nFROM t\n```\nDone.";
        assert_eq!(extract_sql(response), "SELECT name\nFROM t");
        let response =
            "```sqlite\nwith x as (select 1) select * from x\n```\n```python\nprint('select')\n```";
        assert_eq!(
            extract_sql(response),
            "with x as (select 1) select * from x"
        );
        assert_eq!(
            extract_sql("```\nSELECT a FROM b;\n```"),
            "SELECT a FROM b;"
        );
        assert_eq!(extract_sql("```sql\nSELECT a\nFROM b"), "SELECT a\nFROM b");
    }

    #[test]
    fn fences_without_sql_are_skipped() {
        let response =
            "```sql\nSELECT a FROM b\n```\nand the schema:\n```sql\n-- nothing here\n```";
        assert_eq!(extract_sql(response), "SELECT a FROM b");
    }

    #[test]
    fn line_rule() {
        let response =
            "The query is:\nSELECT name\nFROM t\nWHERE id IN (\n  SELECT id FROM u\n);\nThat's it.";
        assert_eq!(
            extract_sql(response),
            "SELECT name\nFROM t\nWHERE id IN (\n  SELECT id FROM u\n)"
        );
        let response = "First: SELECT 1\n\n  select a from b\n\nThen prose.";
        assert_eq!(extract_sql(response), "select a from b");
        assert_eq!(extract_sql("Selection is hard."), "Selection is hard.");
        assert_eq!(extract_sql("  no sql here \n"), "no sql here");
    }
}
