//! How a final reply's answer is found: by rule (the default) or by LiC's LLM extractor.

use serde::{Deserialize, Serialize};

use crate::Family;

/// How a run reads the answer out of an episode's final reply (`extraction` in the
/// experiment file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Extraction {
    /// baton's deterministic rules for every family (the default).
    #[default]
    Rules,
    /// LiC's LLM extraction for math and database (one JSON-mode call at temperature 0,
    /// up to 3 attempts); the other families keep LiC's deterministic extraction.
    Lic,
}

/// Which of LiC's extraction prompts a family uses (LiC's `answer_extraction_strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExtractionStrategy {
    /// `gen`: the answer is copied verbatim (math).
    Gen,
    /// `prefix_suffix`: a short answer verbatim, a long one as `start [...] end`, the
    /// span between them cut out of the reply (database).
    PrefixSuffix,
}

impl ExtractionStrategy {
    /// The strategy LiC uses for `family`; `None` for the families LiC extracts without an
    /// LLM (code, actions, data2text).
    pub fn of(family: Family) -> Option<ExtractionStrategy> {
        match family {
            Family::Math => Some(ExtractionStrategy::Gen),
            Family::Database => Some(ExtractionStrategy::PrefixSuffix),
            Family::Code | Family::Actions | Family::Data2Text => None,
        }
    }

    /// The prompt file in a `lost_in_conversation` checkout.
    pub fn prompt_file(self) -> &'static str {
        match self {
            ExtractionStrategy::Gen => "prompts/system_answer_extraction_gen.txt",
            ExtractionStrategy::PrefixSuffix => {
                "prompts/system_answer_extraction_prefix_suffix.txt"
            }
        }
    }
}

/// baton's wording of the answer a family's extraction prompt asks for (the
/// `[[ANSWER_DESCRIPTION]]` of LiC's prompt). LiC keeps its own descriptions in its
/// Python code, which baton does not copy; these say the same in baton's words. `None`
/// for the families without LLM extraction.
pub fn answer_description(family: Family) -> Option<&'static str> {
    match family {
        Family::Math => Some(
            "the final numerical answer to the math problem: one number (an integer, a decimal, a negative number or a fraction), with any unit or currency sign written next to it",
        ),
        Family::Database => Some(
            "a single complete SQL query that answers the question, with nothing before or after the query",
        ),
        Family::Code | Family::Actions | Family::Data2Text => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_math_and_database_have_an_llm_extractor() {
        for f in Family::ALL {
            assert_eq!(
                ExtractionStrategy::of(f).is_some(),
                answer_description(f).is_some()
            );
        }
        assert_eq!(
            ExtractionStrategy::of(Family::Database),
            Some(ExtractionStrategy::PrefixSuffix)
        );
    }
}
