//! Reading a math answer out of free prose (LiC used an LLM here).
//!
//! The rules, first match wins; each names itself in [`Extracted::rule`]:
//!
//! 1. `math.boxed`: the last `\boxed{…}` (nested braces allowed), its first number, with TeX
//!    thousands separators (`3{,}360`, `3\,360`) and `\text{…}` undone.
//! 2. `math.hashes`: the last line `#### N` (GSM8K's own format).
//! 3. `math.answer_line`: the last line labelled `Answer:` / `Final answer:` (bold, heading or
//!    plain, any case), or saying `the (final) answer is …`: the number the label introduces,
//!    read by the sentence rule below. A label with no number on its line (a heading) reads
//!    the next two lines.
//! 4. `math.conclusion`: among the last six sentences that hold a number (questions skipped),
//!    the last one opening with a conclusion word (`Therefore`, `So`, `Thus`, `In total`, …).
//! 5. `math.last_sentence`: else the last sentence that holds a number.
//! 6. `math.none`: no number anywhere: no answer.
//!
//! Inside the chosen sentence the answer is not its last number: a bold number wins (after
//! its last `=` if it holds one); else the number after the last `=`; else the number right
//! after the last verb that states a result (`is`, `are`, `be`, `needs`, `costs`, `of`, …);
//! else the sentence's first number. So "Therefore, 3 trucks will be needed to transport 80
//! flagstones" gives 3, and "Answer: 3360 points (that's 160 games × 21)" gives 3360.
//!
//! The number is returned as written (`$34.00`, `2,100`), and LiC's number rule then scores it
//! as it would score the LLM extractor's verbatim substring, quirks included.

use std::sync::LazyLock;

use regex::Regex;

use super::Extracted;

static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-?(?:\$\s?)?\d(?:[\d,]*\d)?(?:\.\d+)?(?:/\d+)?").expect("valid regex")
});
static TEX_TEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\\text\{([^{}]*)\}").expect("valid regex"));
static HASHES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^[ \t]*####[ \t]*(.+)$").expect("valid regex"));
static LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^[\s#>*_-]*(?:the\s+)?(?:final\s+answer|answer)\b[^:\n]{0,15}?(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*(.*)$",
    )
    .expect("valid regex")
});
static LABEL_SAYS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:final answer|the answer)\s+(?:is|would be|will be|remains)\s*[:：]?\s*(.*)$",
    )
    .expect("valid regex")
});
static HEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[\s#>*_-]*(?:the\s+)?final\s+answer[\s*_:：]*$").expect("valid regex")
});
static CONCLUSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^[\s*#>-]*(?:therefore|thus|so|hence|in total|in conclusion|overall|altogether|in summary|final|the final|as a result|this means)\b",
    )
    .expect("valid regex")
});
static RESULT_VERB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:is|are|was|were|be|remains|equals|of|to|has|have|had|needs?|needed|got|gets|get|spent|spends|makes|made|earns?|earned|pays?|paid|costs?|takes?|took|sold|bought|buys?|sells?|saved?|saves|uses?|used|received?|left with|weighs?|owes?)\s+(?:about|approximately|around|roughly|exactly|only|just|now|still|a total of|total of|the total of)?\s*(?:\*\*)?\s*(-?\$?\d)",
    )
    .expect("valid regex")
});
static BOLD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\*\*(.+?)\*\*").expect("valid regex"));

/// Read the answer of a math response (see the module docs for the rules).
pub fn extract(response: &str) -> Extracted {
    if let Some(inner) = boxed(response).last() {
        let inner = untex(inner);
        return found("math.boxed", first_number(&inner).unwrap_or(inner));
    }
    if let Some(c) = HASHES.captures_iter(response).last() {
        let rest = &c[1];
        return found(
            "math.hashes",
            first_number(rest).unwrap_or_else(|| rest.trim().to_owned()),
        );
    }
    let lines: Vec<&str> = response
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    for (i, line) in lines.iter().enumerate().rev() {
        let rest = if HEADING.is_match(line) {
            ""
        } else if let Some(c) = LABEL.captures(line).or_else(|| LABEL_SAYS.captures(line)) {
            c.get(1).map_or("", |m| m.as_str())
        } else {
            continue;
        };
        if let Some(n) = last_sentence(rest).map(|s| pick(&s)) {
            return found("math.answer_line", n);
        }
        if let Some(n) = lines[i + 1..].iter().take(2).find_map(|l| last_sentence(l)) {
            return found("math.answer_line", pick(&n));
        }
    }
    let sentences: Vec<String> = sentences(response)
        .into_iter()
        .filter(|s| has_number(s) && !s.trim_end().ends_with('?'))
        .collect();
    let tail = &sentences[sentences.len().saturating_sub(6)..];
    if let Some(s) = tail.iter().rev().find(|s| CONCLUSION.is_match(s)) {
        return found("math.conclusion", pick(s));
    }
    match sentences.last() {
        Some(s) => found("math.last_sentence", pick(s)),
        None => Extracted::none("math.none"),
    }
}

fn found(rule: &'static str, answer: String) -> Extracted {
    Extracted::found(rule, answer)
}

/// The bodies of every `\boxed{…}`, braces balanced.
fn boxed(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("\\boxed{") {
        let start = from + at + "\\boxed{".len();
        let mut depth = 1usize;
        let mut end = None;
        for (i, ch) in text[start..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(start + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        out.push(&text[start..end]);
        from = end + 1;
    }
    out
}

/// Undo the TeX that hides a number: `{,}` and `\,` separators, `\$`, `\text{…}`.
fn untex(s: &str) -> String {
    let s = s
        .replace("{,}", ",")
        .replace("\\,", "")
        .replace("\\!", "")
        .replace("\\$", "$")
        .replace("\\%", "%");
    TEX_TEXT.replace_all(&s, "$1").into_owned()
}

/// The numbers of `s` as written, spaces after `$` removed; a digit run glued to a letter or
/// a dot before it (`x2`, `.5` inside `v1.5`) is not a number of its own.
fn numbers(s: &str) -> Vec<String> {
    let s = untex(s);
    NUMBER
        .find_iter(&s)
        .filter(|m| {
            s[..m.start()]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.'))
        })
        .map(|m| m.as_str().replace(' ', ""))
        .collect()
}

fn has_number(s: &str) -> bool {
    !numbers(s).is_empty()
}

fn first_number(s: &str) -> Option<String> {
    numbers(s).into_iter().next()
}

/// The sentences of `text`, line by line: a line splits after `.`, `!` or `?` followed by
/// white space and a capital letter or `*`.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let mut start = 0;
        let mut i = 0;
        while i < chars.len() {
            let (at, c) = chars[i];
            if matches!(c, '.' | '!' | '?') {
                let mut j = i + 1;
                while j < chars.len() && chars[j].1.is_whitespace() {
                    j += 1;
                }
                if j > i + 1 && j < chars.len() && (chars[j].1.is_uppercase() || chars[j].1 == '*')
                {
                    out.push(line[start..at + c.len_utf8()].to_owned());
                    start = chars[j].0;
                    i = j;
                    continue;
                }
            }
            i += 1;
        }
        if start < line.len() {
            out.push(line[start..].to_owned());
        }
    }
    out.retain(|s| !s.trim().is_empty());
    out
}

/// The last sentence of `text` that holds a number.
fn last_sentence(text: &str) -> Option<String> {
    sentences(text).into_iter().rfind(|s| has_number(s))
}

/// The answer a sentence states (see the module docs); the sentence holds a number.
fn pick(s: &str) -> String {
    let bold: Vec<&str> = BOLD
        .captures_iter(s)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str())
        .filter(|b| has_number(b))
        .collect();
    if let Some(b) = bold.last() {
        let ns = numbers(b);
        let n = if b.contains('=') {
            ns.last()
        } else {
            ns.first()
        };
        if let Some(n) = n {
            return n.clone();
        }
    }
    if let Some((_, after)) = s.rsplit_once('=')
        && let Some(n) = first_number(after)
    {
        return n;
    }
    if let Some(c) = RESULT_VERB.captures_iter(s).last()
        && let Some(n) = first_number(&s[c.get(1).map_or(0, |m| m.start())..])
    {
        return n;
    }
    first_number(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> (String, &'static str) {
        let e = extract(s);
        (e.answer.unwrap_or_default(), e.rule)
    }

    #[test]
    fn the_forms_models_write() {
        let cases = [
            ("so \\boxed{42} and then 7", "42", "math.boxed"),
            (
                "The total is $\\boxed{3{,}360}$ points.",
                "3,360",
                "math.boxed",
            ),
            ("work\n#### 1,200\n", "1,200", "math.hashes"),
            (
                "Answer: 3360 points (that's 160 games × 21)",
                "3360",
                "math.answer_line",
            ),
            (
                "**Final Answer:** **$34.00**\nThanks!",
                "$34.00",
                "math.answer_line",
            ),
            (
                "### Final Answer\n**Mr. Jackson needs 7 packs of glue sticks.**",
                "7",
                "math.answer_line",
            ),
            (
                "80 / 27 = 2.96.\nTherefore, 3 trucks will be needed to transport 80 flagstones.",
                "3",
                "math.conclusion",
            ),
            (
                "Total = 50 + 32 = 82.\nTherefore, after moving for 10 hours, the angle is 82 degrees.",
                "82",
                "math.conclusion",
            ),
            (
                "Total cost = 12 × $250 = $3,000\nLet me know!",
                "$3,000",
                "math.last_sentence",
            ),
        ];
        for (reply, want, rule) in cases {
            assert_eq!(read(reply), (want.to_owned(), rule), "{reply:?}");
        }
    }

    #[test]
    fn no_number_is_no_answer() {
        let e = extract("I need more information. How many trucks are there?");
        assert_eq!((e.answer, e.rule), (None, "math.none"));
        assert_eq!(extract("").answer, None);
    }
}
