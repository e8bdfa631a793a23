//! Data2text (ToTTo): LiC's BLEU on one segment against every reference, on
//! `baton-bleu` (a sacreBLEU 2.6.0 port).

use baton_bleu::corpus_bleu;
use baton_py::strip;
use baton_types::{Family, Verdict};
use serde_json::{Value, json};

use crate::{EvalError, Evaluator, Extracted, Rules};

/// The data2text evaluator (`lic` profile).
#[derive(Debug, Default, Clone, Copy)]
pub struct Data2TextEvaluator;

/// `sacrebleu.corpus_bleu([hyp.strip()], [[r.strip()] for r in references]).score / 100`.
pub fn evaluate(response: &str, sample: &Value) -> Verdict {
    let Some(refs) = sample.get("references").and_then(Value::as_array) else {
        return Verdict::fail(None, "sample has no \"references\" list (upstream raises)");
    };
    if refs.is_empty() {
        return Verdict::fail(
            None,
            "empty \"references\" list: sacreBLEU raises \"No references provided\"",
        );
    }
    let mut streams = Vec::with_capacity(refs.len());
    for (i, r) in refs.iter().enumerate() {
        let Some(r) = r.as_str() else {
            return Verdict::fail(
                None,
                format!("references[{i}] is not a string (upstream raises)"),
            );
        };
        streams.push([strip(r)]);
    }
    match corpus_bleu(&[strip(response)], &streams) {
        Ok(b) => Verdict::new(b.score / 100.0, None).with_details(json!({
            "bleu": b.score, "counts": b.counts, "totals": b.totals, "bp": b.bp,
            "sys_len": b.sys_len, "ref_len": b.ref_len,
        })),
        Err(e) => Verdict::fail(None, format!("sacreBLEU would raise: {e}")),
    }
}

impl Evaluator for Data2TextEvaluator {
    fn family(&self) -> Family {
        Family::Data2Text
    }

    /// LiC hands the whole final response to the evaluator (`full_response`).
    fn extract(
        &self,
        response: &str,
        _sample: &Value,
        _rules: Rules,
    ) -> Result<Extracted, EvalError> {
        Ok(Extracted::unless_empty(
            "data2text.full_response",
            response.to_string(),
            "data2text.none",
        ))
    }

    fn evaluate(&self, extracted: &str, sample: &Value) -> Result<Verdict, EvalError> {
        Ok(evaluate(extracted, sample))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbatim_match_scores_just_above_one() {
        let s = json!({ "references": ["Naomi Osaka won the 2018 US Open, beating Serena Williams 6–2, 6–4.",
                                       "In 2018, Osaka defeated Serena Williams in the US Open final."] });
        let v = evaluate(
            "  Naomi Osaka won the 2018 US Open, beating Serena Williams 6–2, 6–4.\n",
            &s,
        );
        assert_eq!(v.score, 1.0000000000000004);
        assert_eq!(evaluate("Osaka won.", &s).score, 0.0);
        assert!(evaluate("x", &json!({ "references": [] })).error.is_some());
    }
}
