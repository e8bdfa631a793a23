//! Reading function calls out of a response that is not only calls (baton's rules).
//!
//! LiC hands the whole response to BFCL's parser, so "Here are the calls: [f(a=1)]" scores 0
//! however right the call. Under [`Rules::Baton`](super::Rules::Baton) the first of these
//! that parses as calls (with LiC's own parser, `baton_bfcl::parse_calls`) is the answer:
//!
//! 1. `actions.full_response`: the whole response, as LiC reads it.
//! 2. `actions.fence`: the body of the last fenced block (any tag) that parses.
//! 3. `actions.prose`: the calls written inside the prose of the last paragraph that has any:
//!    each line (list bullets removed), else its `[` … `]` span, else its `` `…` `` spans;
//!    several lines' calls are joined into one bracketed list
//!    (`[a(x=1)]\n[a(x=2)]` → `[a(x=1), a(x=2)]`).
//! 4. `actions.none`: no call anywhere: no answer.
//!
//! Steps 2 and 3 look only into responses of at most [`MAX_SEARCHED`] bytes and try at most
//! [`MAX_CANDIDATES`] snippets, so that a hostile reply costs no more than LiC's own parse of
//! it; a longer response that does not parse whole is read as LiC reads it
//! (`actions.too_long`).
//!
//! The answer then goes to LiC's checker unchanged, so everything after the parse (names,
//! types, values, counts) is judged exactly as LiC judges it.

use baton_bfcl::parse_calls;

use super::Extracted;

/// The longest response whose prose and fences are searched for calls.
pub const MAX_SEARCHED: usize = 64 << 10;

/// The most snippets tried as calls in one response.
pub const MAX_CANDIDATES: usize = 400;

/// Read the calls of an actions response (see the module docs).
pub fn extract(response: &str) -> Extracted {
    if parses(response) {
        return Extracted::found("actions.full_response", response);
    }
    if response.len() > MAX_SEARCHED {
        return Extracted::found("actions.too_long", response);
    }
    let tries = std::cell::Cell::new(0usize);
    let parses = |text: &str| {
        tries.set(tries.get() + 1);
        tries.get() <= MAX_CANDIDATES && parses(text)
    };
    if let Some(body) = fences(response).into_iter().rev().find(|b| parses(b)) {
        return Extracted::found("actions.fence", body);
    }
    let mut best: Vec<String> = Vec::new();
    for paragraph in response.split("\n\n") {
        let calls: Vec<String> = paragraph
            .lines()
            .filter_map(|l| calls_in_line(l, &parses))
            .collect();
        if !calls.is_empty() {
            best = calls;
        }
    }
    if best.is_empty() {
        return Extracted::none("actions.none");
    }
    let inner: Vec<&str> = best
        .iter()
        .map(|c| {
            let c = c.trim();
            c.strip_prefix('[')
                .and_then(|c| c.strip_suffix(']'))
                .unwrap_or(c)
                .trim()
        })
        .collect();
    Extracted::found("actions.prose", format!("[{}]", inner.join(", ")))
}

/// Whether `text` parses as one or more calls under LiC's parser.
fn parses(text: &str) -> bool {
    let text = baton_py::strip(text);
    !text.is_empty() && parse_calls(text).is_ok_and(|calls| !calls.is_empty())
}

/// The bodies of the fenced blocks of `text` (an unclosed last fence runs to the end).
fn fences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<Vec<&str>> = None;
    for line in text.lines() {
        let fence = line.trim_start().starts_with("```");
        match (open.take(), fence) {
            (None, true) => open = Some(Vec::new()),
            (None, false) => {}
            (Some(body), true) => out.push(body.join("\n")),
            (Some(mut body), false) => {
                body.push(line);
                open = Some(body);
            }
        }
    }
    if let Some(body) = open {
        out.push(body.join("\n"));
    }
    out
}

/// The calls a line of prose holds, as text that parses.
fn calls_in_line(line: &str, parses: &dyn Fn(&str) -> bool) -> Option<String> {
    let line = line.trim();
    let bare = line
        .trim_start_matches(|c: char| c == '*' || c == '-' || c == '•' || c.is_whitespace())
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start_matches(['.', ')', ' ']);
    for candidate in [line, bare] {
        if candidate.contains('(') && parses(candidate) {
            return Some(candidate.to_owned());
        }
    }
    if let (Some(open), Some(close)) = (line.find('['), line.rfind(']'))
        && open < close
    {
        let span = &line[open..=close];
        if span.contains('(') && parses(span) {
            return Some(span.to_owned());
        }
    }
    let ticks: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
    let calls: Vec<&str> = ticks
        .into_iter()
        .filter(|t| t.contains('(') && parses(t))
        .collect();
    (!calls.is_empty()).then(|| calls.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> (Option<String>, &'static str) {
        let e = extract(s);
        (e.answer, e.rule)
    }

    #[test]
    fn calls_inside_prose_and_fences() {
        assert_eq!(read("[f(a=1), g(b='x')]").1, "actions.full_response");
        assert_eq!(
            read("I'll call it:\n\n```python\n[f(a=1)]\n```\nDone."),
            (Some("[f(a=1)]".into()), "actions.fence")
        );
        assert_eq!(
            read("Here are the calls:\n\n[d(w=180)]\n[d(w=150)]\n\nThis returns the odds."),
            (Some("[d(w=180), d(w=150)]".into()), "actions.prose")
        );
        assert_eq!(
            read("Sure! Here are the calls: [f(a=1), f(a=2)] and that is all."),
            (Some("[f(a=1), f(a=2)]".into()), "actions.prose")
        );
        assert_eq!(
            read("You can use `spotify.play(artist='X', duration=5)` for that."),
            (
                Some("[spotify.play(artist='X', duration=5)]".into()),
                "actions.prose"
            )
        );
        assert_eq!(
            read("I need the city first. Which one?"),
            (None, "actions.none")
        );
    }
}
