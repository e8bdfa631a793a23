//! Reading a math answer out of free prose (LiC used an LLM here).
//!
//! The rules, first match wins; each names itself in [`Extracted::rule`]:
//!
//! 1. `math.boxed`: the last `\boxed{…}` (nested braces allowed), its first number, with TeX
//!    thousands separators (`3{,}360`, `3\,360`) and `\text{…}` undone.
//! 2. `math.hashes`: the last line `#### N` (GSM8K's own format).
//! 3. `math.answer_line`: the last line labelled `Answer:` / `Final answer:` (bold, heading or
//!    plain, any case, with a qualifier in parentheses: `Answer (interpretation B):`), or
//!    saying `the (final) answer (to the question) is …` / `the final answer of …`: the
//!    number the label introduces, read by the sentence rule below, up to a coordinated
//!    afterthought (`5 each, and 20 in total` gives 5). A label with no number on its line (a
//!    heading) reads the next two lines.
//! 4. `math.conclusion`: among the last six sentences that hold a number (questions skipped),
//!    the last one opening with a conclusion word (`Therefore`, `So`, `Thus`, `In total`,
//!    `Total:`, …).
//! 5. `math.last_sentence`: else the last sentence that holds a number.
//! 6. `math.none`: no number anywhere: no answer.
//!
//! What a sentence holds is read after taking out what cannot be its answer:
//!
//! - a statement in quotation marks (four or more words): LiC's later turns repeat a fact
//!   and models quote it back ("the fact that "each box has 90 lenses" is included");
//! - the whole of `out of N` (a count's denominator);
//! - a quantity in two units (`3 hours and 47 minutes`) when the sentence also states it in
//!   one (`or 227 minutes`);
//! - sentences that recap how the answer was reached rather than state it (`has been
//!   accounted for`, `was included`, `This was based on: …`, `(Confirmed: …)`, `you've
//!   mentioned`), unless they hold `=`, bold or the word `answer`, are passed over when
//!   another sentence states a number.
//!
//! Sentences split after `.`, `!` or `?` before a capital letter, but not after a title or
//! abbreviation (`Mr.`, `Dr.`, `approx.`, `e.g.`); a line that ends in `:` with no number
//! ("This was based on:") is read with the line it introduces unless that is a list item or
//! the line opens a conclusion ("So, in summary:" before a recap list).
//!
//! Inside the chosen sentence the answer is not its last number: a bold number wins (after
//! its last `=` if it holds one); else the number after the last `=`; else, in a concluding
//! sentence that restates the response's last computed result (`… = 30 students`) beside
//! the givens it came from, that result; else the number right after the last verb that
//! states a result (`is`, `are`, `be`, `needs`, `costs`, `of`, …); else the sentence's first
//! number. So "Therefore, 3 trucks will be needed to transport 80 flagstones" gives 3, and
//! "Answer: 3360 points (that's 160 games × 21)" gives 3360.
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
        r"(?i)^[\s#>*_-]*(?:the\s+)?(?:final\s+answer|answer)\b(?:\s*\([^)\n]{0,120}\))?[^:\n]{0,15}?(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*(.*)$",
    )
    .expect("valid regex")
});
static LABEL_SAYS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:final answer|the answer)(?:\s+(?:to|for)\s+[^.:\n]{1,60}?)?\s+(?:is|would be|will be|remains|of)\s*[:：]?\s*(.*)$",
    )
    .expect("valid regex")
});
static HEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[\s#>*_-]*(?:the\s+)?final\s+answer[\s*_:：]*$").expect("valid regex")
});
static CONCLUSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^[\s*#>-]*(?:therefore|thus|so|hence|in total|in conclusion|overall|altogether|in summary|final|the final|as a result|this means|total\s*[:：=])",
    )
    .expect("valid regex")
});
static RESULT_VERB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:is|are|was|were|be|remains|equals|of|to|has|have|had|needs?|needed|got|gets|get|spent|spends|makes|made|earns?|earned|pays?|paid|costs?|takes?|took|sold|bought|buys?|sells?|saved?|saves|uses?|used|received?|left with|weighs?|owes?)\s+(?:about|approximately|around|roughly|exactly|only|just|now|still|a total of|total of|the total of)?\s*(?:\*\*)?\s*(-?\$?\d)",
    )
    .expect("valid regex")
});
/// `X out of N`: N is the whole a part is counted against, never what a sentence states.
static OUT_OF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bout\s+of\s+(?:the\s+)?\$?\d[\d,]*(?:\.\d+)?").expect("valid regex")
});
/// A quantity written in two units (`3 hours and 47 minutes`, `2 feet 3 inches`).
static COMPOUND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\d[\d,]*(?:\.\d+)?\s*(?:hours?|hrs?|minutes?|mins?|days?|weeks?|years?|months?|dollars?|feet|foot|ft|pounds?|lbs?|meters?|kilograms?|kg)\s*(?:,?\s*and\s+|\s+)\d[\d,]*(?:\.\d+)?\s*(?:minutes?|mins?|seconds?|secs?|hours?|days?|weeks?|months?|cents?|inches|inch|ounces?|oz|centimeters?|cm|grams?|g)\b",
    )
    .expect("valid regex")
});
/// A sentence about how the answer was reached rather than what it is: a confirmation
/// that a given was used (LiC's later turns repeat a fact and models confirm it), or the
/// list of what a result was based on.
static RECAP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^[\s(*]*confirmed\b|\b(?:accounted for|taken into account|(?:been|was|were|is|are|fully|correctly|already|definitely)\s+(?:\w+\s+)?(?:included|incorporated|integrated|factored|reflected|used|applied|acknowledged|considered)|(?:was|were|is|are) based on|you(?:'ve| have)? (?:mentioned|provided|said|told)|including the)\b",
    )
    .expect("valid regex")
});
static ANSWER_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\banswer\b").expect("valid regex"));
/// A list item: `-`, `*`, `+`, `•` or `1.` / `1)` first.
static LIST_ITEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:[-*+•]\s|\d{1,2}[.)]\s)").expect("valid regex"));
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
        if let Some(n) = last_sentence(first_clause(rest)).map(|s| pick(&plain(&s))) {
            return found("math.answer_line", n);
        }
        if let Some(n) = lines[i + 1..]
            .iter()
            .take(2)
            .find_map(|l| last_sentence(&plain(l)))
        {
            return found("math.answer_line", pick(&n));
        }
    }
    let all: Vec<String> = sentences(response)
        .into_iter()
        .map(|s| plain(&s))
        .filter(|s| has_number(s) && !s.trim_end().ends_with('?'))
        .collect();
    // Sentences that recap how the answer was reached are passed over, unless nothing
    // else states a number.
    let stating: Vec<&String> = all
        .iter()
        .filter(|s| {
            s.contains('=') || s.contains("**") || ANSWER_WORD.is_match(s) || !RECAP.is_match(s)
        })
        .collect();
    let sentences: Vec<&String> = if stating.is_empty() {
        all.iter().collect()
    } else {
        stating
    };
    let computed = last_result(response);
    let tail = &sentences[sentences.len().saturating_sub(6)..];
    if let Some(s) = tail.iter().rev().find(|s| CONCLUSION.is_match(s)) {
        return found("math.conclusion", pick_stated(s, computed.as_deref()));
    }
    match sentences.last() {
        Some(s) => found("math.last_sentence", pick_stated(s, computed.as_deref())),
        None => Extracted::none("math.none"),
    }
}

/// The number the last `= N` of the response computes, as written.
fn last_result(response: &str) -> Option<String> {
    let at = response.rfind('=')?;
    let after = response[at + 1..].trim_start_matches([' ', '*', '\t']);
    let line = after.lines().next().unwrap_or("");
    first_number(line)
}

/// [`pick`] for a concluding sentence: when the sentence restates the last computed
/// result beside other numbers (the givens it came from), the result.
fn pick_stated(s: &str, computed: Option<&str>) -> String {
    let ns = numbers(s);
    if ns.len() > 1
        && !s.contains("**")
        && !s.contains('=')
        && let Some(c) = computed
        && ns.iter().any(|n| n == c)
    {
        return c.to_owned();
    }
    pick(s)
}

/// A sentence with what cannot be its answer taken out: quoted words (the user's own
/// statement, repeated), the whole of `out of N`, and a quantity written in two units when
/// the sentence also states it in one (`3 hours and 47 minutes (or 227 minutes)`).
fn plain(s: &str) -> String {
    let mut out = unquote(s);
    if OUT_OF.is_match(&out) {
        out = OUT_OF.replace_all(&out, "out of").into_owned();
    }
    if COMPOUND.is_match(&out) {
        let single = COMPOUND.replace_all(&out, " ").into_owned();
        if has_number(&single) {
            out = single;
        }
    }
    out
}

/// `s` without its quotations: text between a pair of `"` or of `“` and `”` that holds
/// words (four or more: a statement quoted, not a term such as "daily pairs", and not
/// `12"` as inches).
fn unquote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let Some(open) = rest.find(['"', '“']) else {
            out.push_str(rest);
            return out;
        };
        let quote = rest[open..].chars().next().unwrap_or('"');
        let close_char = if quote == '“' { '”' } else { '"' };
        let body_start = open + quote.len_utf8();
        let Some(len) = rest[body_start..].find(close_char) else {
            out.push_str(rest);
            return out;
        };
        let body = &rest[body_start..body_start + len];
        out.push_str(&rest[..open]);
        if body.matches(' ').count() >= 3 && body.chars().any(char::is_alphabetic) {
            out.push(' ');
        } else {
            out.push_str(&rest[open..body_start + len + close_char.len_utf8()]);
        }
        rest = &rest[body_start + len + close_char.len_utf8()..];
    }
}

fn found(rule: &'static str, answer: String) -> Extracted {
    Extracted::found(rule, answer)
}

/// What an answer label introduces up to a coordinated afterthought (`5 lollipops each,
/// and in total 20`), when that first part holds a number.
fn first_clause(rest: &str) -> &str {
    for sep in [", and ", "; "] {
        if let Some(at) = rest.find(sep)
            && has_number(&rest[..at])
        {
            return &rest[..at];
        }
    }
    rest
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
    for line in joined_lines(text) {
        let line = line.trim();
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let mut start = 0;
        let mut i = 0;
        while i < chars.len() {
            let (at, c) = chars[i];
            if matches!(c, '.' | '!' | '?') && !(c == '.' && abbreviation(&line[start..at])) {
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

/// The lines of `text`, a line that ends in `:` with no number of its own ("This was based
/// on:", "The answer to the question is:") joined to the next non-empty line it introduces
/// unless that line is a list item; a conclusion's introduction ("So, in summary:") is not
/// joined, so that a recap list after it does not become the conclusion.
fn joined_lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let line = match pending.take() {
            Some(intro) if !LIST_ITEM.is_match(line) => format!("{intro} {line}"),
            Some(intro) => {
                out.push(intro);
                line.to_owned()
            }
            None => line.to_owned(),
        };
        let bare = line.trim_end_matches(['*', ' ']);
        if bare.ends_with(':') && !has_number(bare) && !CONCLUSION.is_match(bare) {
            pending = Some(line);
        } else {
            out.push(line);
        }
    }
    out.extend(pending);
    out
}

/// Whether `before` (a sentence so far) ends with a title or abbreviation whose `.` ends
/// no sentence (`Mr. Jackson`, `approx. 3`).
fn abbreviation(before: &str) -> bool {
    const WORDS: [&str; 14] = [
        "mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "vs", "etc", "approx", "no", "e.g",
        "i.e",
    ];
    // The last word, looked for among the last 8 characters only (the longest
    // abbreviation has 6), so a run of dots costs no more than a word.
    let mut start = None;
    for (n, (i, c)) in before.char_indices().rev().enumerate() {
        if c.is_whitespace() || c == '(' || c == '*' {
            start = Some(i + c.len_utf8());
            break;
        }
        if n == 7 {
            return false;
        }
        start = Some(i);
    }
    let word = start.map_or("", |i| &before[i..]);
    WORDS.iter().any(|w| word.eq_ignore_ascii_case(w))
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

    /// Each rule on the way models write (issue 35, item 10), one form per case.
    #[test]
    fn issue_35_answers_read_past_what_is_not_the_answer() {
        let cases = [
            // A title's `.` ends no sentence.
            (
                "54 / 8 = 6.75.\nSo, the fact that each student receives 2 sticks means Mr. Jackson needs to buy **7 packs** of glue sticks.",
                "7",
            ),
            // A quantity in two units gives way to the one-unit statement.
            (
                "**Final Answer:**\n\nIt will take Andy a total of **227 minutes**, which is **3 hours and 47 minutes**, to string them.",
                "227",
            ),
            (
                "The answer remains:\n\nIt will take **3 hours and 47 minutes (or 227 minutes)**.",
                "227",
            ),
            // A quoted statement of the user's is not an answer.
            (
                "Cost per pair = $180 / 90 = **$2.00**.\n\nSo, yes, \"Each box has 90 single-use lenses\" is an important detail.",
                "$2.00",
            ),
            // A confirmation that a given was used is passed over.
            (
                "Labor: 3 hours * $35/hour = $105.\nTotal = $40 + $105 + $60 = $205.\nSo, the $40 charge for showing up was definitely included!",
                "$205",
            ),
            (
                "The total cost of John's physical therapy is $3000.\n\nThis was based on:\n6 weeks of therapy, 2 sessions per week, 2 hours per session.",
                "$3000",
            ),
            // A conclusion that restates the last result beside the givens.
            (
                "* 300 cards / 10 cards per student = 30 students\n\nTherefore, Miss Maria shared her 300 remaining cards with 30 students.",
                "30",
            ),
            // A qualified answer label, and an afterthought after the answer.
            (
                "**Answer (based on Interpretation B: $33 per ride):** Each friend paid **$34.00**.\n\nNote: if $33 is per person, it is $66 each.",
                "$34.00",
            ),
            (
                "So, the answer is: Each of Ray's friends got 5 lollipops, and in total, his friends got 20 lollipops.",
                "5",
            ),
            (
                "x = 75 each.\nThe answer to the original question is:\nThere were 225 corn chips in total.",
                "225",
            ),
            // `out of N` is a denominator.
            (
                "We've deduced that there are indeed 4 semi-automatic cars out of 20 total cars.",
                "4",
            ),
        ];
        for (reply, want) in cases {
            assert_eq!(read(reply).0, want, "{reply:?}");
        }
    }

    #[test]
    fn no_number_is_no_answer() {
        let e = extract("I need more information. How many trucks are there?");
        assert_eq!((e.answer, e.rule), (None, "math.none"));
        assert_eq!(extract("").answer, None);
    }
}
