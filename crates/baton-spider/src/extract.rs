//! Deterministic SQL extraction from a model response (see [`extract_sql`]).

use std::sync::LazyLock;

use regex::Regex;

static SQL_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(select|with)\b").expect("valid regex"));
static STARTS_SQL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^(select|with)\b").expect("valid regex"));

/// A fenced block: its info string, body, and the line it opens on.
struct Block {
    info: String,
    body: String,
    line: usize,
}

/// The fenced blocks of `response`.
fn fenced_blocks(lines: &[&str]) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, usize, Vec<&str>)> = None;
    for (n, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some((info.trim().to_owned(), n, Vec::new()));
                }
            }
            Some((info, at, mut body)) => {
                if trimmed.starts_with("```") {
                    blocks.push(Block {
                        info,
                        body: body.join("\n"),
                        line: at,
                    });
                } else {
                    body.push(line);
                    open = Some((info, at, body));
                }
            }
        }
    }
    if let Some((info, line, body)) = open {
        blocks.push(Block {
            info,
            body: body.join("\n"),
            line,
        });
    }
    blocks
}

fn is_sql_tag(info: &str) -> bool {
    let tag = info.split_whitespace().next().unwrap_or("");
    tag.is_empty() || tag.eq_ignore_ascii_case("sql") || tag.eq_ignore_ascii_case("sqlite")
}

static FINAL_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(final|corrected|updated|revised|complete)\b").expect("valid regex")
});
static SIDE_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(alternative(ly)?|another (way|option|approach)|or,? if|to (verify|check|test|confirm|see|inspect)|verif(y|ication)|sanity|check(ing)?|debug|sample (data|output)|you (can|could|might) (also )?(run|use|try))\b")
        .expect("valid regex")
});

/// An extracted query and the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlAnswer {
    /// The query, comments removed; `None` when the response holds no query.
    pub sql: Option<String>,
    /// `database.fence`, `database.line` or `database.none`.
    pub rule: &'static str,
}

/// Extract the SQL query from a model response ([`read_sql`] without the rule; an empty
/// string when there is none).
pub fn extract_sql(response: &str) -> String {
    read_sql(response).sql.unwrap_or_default()
}

/// Extract the SQL query from a model response, and say which rule found it.
///
/// Upstream LiC asks gpt-4o-mini to pull the SQL out of the response. That
/// cannot be reproduced, so baton uses fixed rules (a design decision, recorded
/// with every result as the rule that fired):
///
/// 1. `database.fence`: among the fenced code blocks tagged `sql` or `sqlite` (any case) or
///    untagged whose body mentions `SELECT` or `WITH` as a word (any case), the last one
///    that the two lines of prose before it call final (`final`, `corrected`, `updated`, …);
///    else the last one they do not introduce as an alternative or a check (`alternatively`,
///    `to verify`, `sanity check`, …); else the last one. An unclosed final fence runs to
///    the end of the response.
/// 2. `database.line`: otherwise, from the last line that starts with `SELECT` or `WITH`
///    (after indentation, any case) and does not lie inside the span of an earlier such line,
///    up to the first `;` (excluded) or blank line. The "earlier span" condition keeps a
///    multi-line query whole when one of its subquery lines also starts with `SELECT`.
/// 3. `database.none`: otherwise there is no query.
///
/// Then SQL comments (`-- …` to the end of the line, `/* … */`) are removed outside string
/// literals: LiC's evaluator collapses every whitespace run to one space, after which a
/// `--` comment would swallow the rest of the query. A block holding several statements
/// gives its last one that no comment before it introduces as a check or an alternative
/// (else its last one), without the `;`.
///
/// Because the fence is removed here, a ```` ```SQL ```` or ```` ```sqlite ````
/// block scores like a ```` ```sql ```` one; passing the raw response to
/// [`SpiderEvaluator::evaluate`](crate::SpiderEvaluator::evaluate) instead
/// reproduces LiC's handling of fences (only ```` ```sql ```` and ```` ``` ````
/// are removed, so the other tags break the query).
pub fn read_sql(response: &str) -> SqlAnswer {
    let lines: Vec<&str> = response.lines().collect();
    let blocks: Vec<Block> = fenced_blocks(&lines)
        .into_iter()
        .filter(|b| is_sql_tag(&b.info) && SQL_WORD.is_match(&strip_comments(&b.body).0))
        .collect();
    let prose = |b: &Block| -> String {
        lines[..b.line]
            .iter()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(2)
            .copied()
            .collect::<Vec<_>>()
            .join("\n")
    };
    let chosen = blocks
        .iter()
        .rfind(|b| FINAL_LABEL.is_match(&prose(b)))
        .or_else(|| blocks.iter().rfind(|b| !SIDE_LABEL.is_match(&prose(b))))
        .or_else(|| blocks.last());
    if let Some(block) = chosen {
        return found("database.fence", final_statement(&block.body));
    }

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
        return found("database.line", strip_comments(text).0.trim().to_owned());
    }
    SqlAnswer {
        sql: None,
        rule: "database.none",
    }
}

fn found(rule: &'static str, sql: String) -> SqlAnswer {
    if sql.trim().is_empty() {
        return SqlAnswer {
            sql: None,
            rule: "database.none",
        };
    }
    SqlAnswer {
        sql: Some(sql),
        rule,
    }
}

/// The statement of a block that answers: see [`read_sql`].
fn final_statement(body: &str) -> String {
    let (code, comments) = strip_comments(body);
    // Split on `;` outside string literals, remembering the comments before each statement.
    let mut statements: Vec<(String, String)> = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut consumed_comments = 0;
    for (i, c) in code.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' || c == '`' => quote = Some(c),
            None if c == ';' => {
                let said = comments_before(&comments, &mut consumed_comments, i);
                statements.push((std::mem::take(&mut current), said));
                continue;
            }
            None => {}
        }
        current.push(c);
    }
    let said = comments_before(&comments, &mut consumed_comments, code.len());
    statements.push((current, said));
    let statements: Vec<(String, String)> = statements
        .into_iter()
        .map(|(s, said)| (s.trim().to_owned(), said))
        .filter(|(s, _)| SQL_WORD.is_match(s))
        .collect();
    statements
        .iter()
        .rfind(|(_, said)| !SIDE_LABEL.is_match(said))
        .or_else(|| statements.last())
        .map(|(s, _)| s.clone())
        .unwrap_or_default()
}

/// The text of the comments that end before byte `end` of the stripped code and were not
/// consumed yet.
fn comments_before(comments: &[(usize, String)], consumed: &mut usize, end: usize) -> String {
    let mut said = String::new();
    while *consumed < comments.len() && comments[*consumed].0 <= end {
        said.push_str(&comments[*consumed].1);
        said.push('\n');
        *consumed += 1;
    }
    said
}

/// `sql` without its comments, and the comments with the byte offset (in the returned code)
/// where each was. A `-- …` comment keeps its line break; `/* … */` becomes one space.
fn strip_comments(sql: &str) -> (String, Vec<(usize, String)>) {
    let mut code = String::with_capacity(sql.len());
    let mut comments = Vec::new();
    let mut quote: Option<char> = None;
    let mut rest = sql;
    while let Some(c) = rest.chars().next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
        } else if c == '\'' || c == '"' || c == '`' {
            quote = Some(c);
        } else if rest.starts_with("--") {
            let end = rest.find('\n').unwrap_or(rest.len());
            comments.push((code.len(), rest[2..end].to_owned()));
            rest = &rest[end..];
            continue;
        } else if rest.starts_with("/*") {
            let end = rest[2..].find("*/").map_or(rest.len(), |e| e + 4);
            comments.push((code.len(), rest[2..end.min(rest.len()).max(2)].to_owned()));
            code.push(' ');
            rest = &rest[end..];
            continue;
        }
        code.push(c);
        rest = &rest[c.len_utf8()..];
    }
    (code, comments)
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
        assert_eq!(extract_sql("```\nSELECT a FROM b;\n```"), "SELECT a FROM b");
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
        assert_eq!(read_sql("Selection is hard.").sql, None);
        assert_eq!(read_sql("  no sql here \n").rule, "database.none");
    }

    #[test]
    fn comments_never_swallow_the_query() {
        let response = "```sql\n-- museums without visits\nSELECT name -- the name\nFROM museum /* all */ WHERE id NOT IN (SELECT museum_id FROM visit)\n```";
        assert_eq!(
            extract_sql(response),
            "SELECT name \nFROM museum   WHERE id NOT IN (SELECT museum_id FROM visit)"
        );
        assert_eq!(
            extract_sql("```sql\nSELECT '--x' FROM t\n```"),
            "SELECT '--x' FROM t"
        );
    }

    #[test]
    fn the_final_query_beats_alternatives_and_checks() {
        let response = "Final query:\n```sql\nSELECT a FROM t\n```\nAlternatively:\n```sql\nSELECT b FROM t\n```";
        assert_eq!(extract_sql(response), "SELECT a FROM t");
        let response =
            "```sql\nSELECT a FROM t\n```\nTo verify, run:\n```sql\nSELECT COUNT(*) FROM t\n```";
        assert_eq!(extract_sql(response), "SELECT a FROM t");
        let response = "```sql\nSELECT a FROM t;\n-- check the count\nSELECT COUNT(*) FROM t;\n```";
        assert_eq!(
            read_sql(response),
            SqlAnswer {
                sql: Some("SELECT a FROM t".into()),
                rule: "database.fence"
            }
        );
        let response = "```sql\nSELECT a FROM t;\nSELECT a, b FROM t;\n```";
        assert_eq!(extract_sql(response), "SELECT a, b FROM t");
    }
}
