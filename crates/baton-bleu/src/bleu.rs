//! The BLEU metric: options ([`Bleu`]), sufficient statistics ([`Stats`]), the score
//! ([`BleuScore`]) and sacreBLEU's `compute_bleu` ([`compute_bleu`]).

use std::fmt;
use std::ops::AddAssign;
use std::str::FromStr;

use crate::BleuError;
use crate::ngram::Matcher;
use crate::tokenizer::Tokenizer;

/// The highest n-gram order counted (sacreBLEU's `MAX_NGRAM_ORDER`).
pub const MAX_NGRAM_ORDER: usize = 4;

/// sacreBLEU's smoothing methods (Chen and Cherry, 2014).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum Smoothing {
    /// `exp`, sacreBLEU's default (mteval-v13a's NIST smoothing): the k-th order with no match
    /// gets precision `100 / (2^k * total)`.
    #[default]
    Exp,
    /// `floor`: an order with no match gets precision `100 * value / total`; sacreBLEU's default
    /// value is [`Smoothing::FLOOR_DEFAULT`].
    Floor(f64),
    /// `add-k`: `value` is added to the matches and totals of orders 2 and up; sacreBLEU's
    /// default value is [`Smoothing::ADD_K_DEFAULT`].
    AddK(f64),
    /// `none`: an order with no match has precision 0, so the score is about 0.
    None,
}

impl Smoothing {
    /// sacreBLEU's default value for `floor`.
    pub const FLOOR_DEFAULT: f64 = 0.1;
    /// sacreBLEU's default value for `add-k`.
    pub const ADD_K_DEFAULT: f64 = 1.0;

    /// sacreBLEU's name for the method (`smooth_method=`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Exp => "exp",
            Self::Floor(_) => "floor",
            Self::AddK(_) => "add-k",
            Self::None => "none",
        }
    }
}

impl FromStr for Smoothing {
    type Err = BleuError;

    /// A method name with sacreBLEU's default value (`smooth_value=None`).
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "exp" => Ok(Self::Exp),
            "floor" => Ok(Self::Floor(Self::FLOOR_DEFAULT)),
            "add-k" => Ok(Self::AddK(Self::ADD_K_DEFAULT)),
            "none" => Ok(Self::None),
            _ => Err(BleuError::UnknownSmoothing {
                name: name.to_owned(),
            }),
        }
    }
}

/// BLEU's settings, like sacreBLEU's `BLEU(...)` metric object. `Bleu::default()` is
/// `sacrebleu.corpus_bleu`'s defaults; [`Bleu::sentence`] is `sacrebleu.sentence_bleu`'s.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Bleu {
    /// Tokenizer applied to hypotheses and references (`tokenize=`, default `13a`).
    pub tokenizer: Tokenizer,
    /// Lowercase hypotheses and references before tokenising (`lowercase=`, default false).
    pub lowercase: bool,
    /// Smoothing (`smooth_method=` and `smooth_value=`, default `exp`).
    pub smoothing: Smoothing,
    /// Average over the orders up to the highest one the hypothesis side has any n-gram of,
    /// instead of always over 4 (`effective_order=`; false for corpus BLEU, true for sentence
    /// BLEU).
    pub effective_order: bool,
}

impl Bleu {
    /// `sacrebleu.sentence_bleu`'s defaults: as [`Bleu::default`] but with `effective_order`.
    #[must_use]
    pub fn sentence() -> Self {
        Self {
            effective_order: true,
            ..Self::default()
        }
    }

    /// sacreBLEU's `BLEU.corpus_score(hypotheses, references)`.
    ///
    /// `references` holds reference *streams*: `references[k][i]` is the k-th reference of
    /// `hypotheses[i]`.
    ///
    /// # Errors
    ///
    /// [`BleuError::NoHypotheses`] and [`BleuError::NoReferences`] where sacreBLEU raises, and
    /// [`BleuError::LengthMismatch`] when a stream's length differs from the number of
    /// hypotheses (sacreBLEU silently truncates to the shortest).
    pub fn corpus_score<H, R, S>(
        &self,
        hypotheses: &[H],
        references: &[R],
    ) -> Result<BleuScore, BleuError>
    where
        H: AsRef<str>,
        R: AsRef<[S]>,
        S: AsRef<str>,
    {
        Ok(self.score_stats(&self.corpus_stats(hypotheses, references)?))
    }

    /// The summed [`Stats`] of a corpus, which [`Bleu::score_stats`] turns into the score
    /// [`Bleu::corpus_score`] returns. Same arguments and errors as [`Bleu::corpus_score`].
    ///
    /// # Errors
    ///
    /// As [`Bleu::corpus_score`].
    pub fn corpus_stats<H, R, S>(
        &self,
        hypotheses: &[H],
        references: &[R],
    ) -> Result<Stats, BleuError>
    where
        H: AsRef<str>,
        R: AsRef<[S]>,
        S: AsRef<str>,
    {
        if hypotheses.is_empty() {
            return Err(BleuError::NoHypotheses);
        }
        if references.is_empty() {
            return Err(BleuError::NoReferences);
        }
        for (stream, segments) in references.iter().enumerate() {
            let actual = segments.as_ref().len();
            if actual != hypotheses.len() {
                return Err(BleuError::LengthMismatch {
                    stream,
                    expected: hypotheses.len(),
                    actual,
                });
            }
        }
        let mut matcher = Matcher::default();
        let mut total = Stats::default();
        for (i, hypothesis) in hypotheses.iter().enumerate() {
            let segment_refs = references.iter().map(|stream| stream.as_ref()[i].as_ref());
            total += matcher.segment(self.settings(), hypothesis.as_ref(), segment_refs);
        }
        Ok(total)
    }

    /// sacreBLEU's `BLEU.sentence_score(hypothesis, references)`: one hypothesis against one
    /// or more references.
    ///
    /// # Errors
    ///
    /// [`BleuError::NoReferences`] when `references` is empty.
    pub fn sentence_score<S: AsRef<str>>(
        &self,
        hypothesis: &str,
        references: &[S],
    ) -> Result<BleuScore, BleuError> {
        if references.is_empty() {
            return Err(BleuError::NoReferences);
        }
        let stats = Matcher::with_thread_local(|matcher| {
            matcher.segment(
                self.settings(),
                hypothesis,
                references.iter().map(AsRef::as_ref),
            )
        });
        Ok(self.score_stats(&stats))
    }

    fn settings(&self) -> (Tokenizer, bool) {
        (self.tokenizer, self.lowercase)
    }

    /// The score of already counted statistics with these settings' smoothing and effective
    /// order (sacreBLEU's `_compute_score_from_stats`).
    #[must_use]
    pub fn score_stats(&self, stats: &Stats) -> BleuScore {
        compute_bleu(stats, self.smoothing, self.effective_order)
    }
}

/// BLEU's sufficient statistics for one segment or, summed, for a corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Stats {
    /// Hypothesis length in tokens.
    pub sys_len: u64,
    /// Length of the reference closest in length to the hypothesis (ties to the shorter).
    pub ref_len: u64,
    /// Clipped n-gram matches per order (1-grams first).
    pub counts: [u64; MAX_NGRAM_ORDER],
    /// Hypothesis n-grams per order.
    pub totals: [u64; MAX_NGRAM_ORDER],
}

impl AddAssign for Stats {
    fn add_assign(&mut self, other: Self) {
        self.sys_len += other.sys_len;
        self.ref_len += other.ref_len;
        for n in 0..MAX_NGRAM_ORDER {
            self.counts[n] += other.counts[n];
            self.totals[n] += other.totals[n];
        }
    }
}

/// A BLEU result, field for field sacreBLEU's `BLEUScore`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BleuScore {
    /// BLEU on sacreBLEU's 0..100 scale.
    pub score: f64,
    /// Clipped n-gram matches per order. Unlike sacreBLEU under `add-k`, which adds k to its
    /// copy in place, these are always the unsmoothed integers.
    pub counts: [u64; MAX_NGRAM_ORDER],
    /// Hypothesis n-grams per order (unsmoothed, as `counts`).
    pub totals: [u64; MAX_NGRAM_ORDER],
    /// Smoothed n-gram precisions on the 0..100 scale.
    pub precisions: [f64; MAX_NGRAM_ORDER],
    /// Brevity penalty.
    pub bp: f64,
    /// Total hypothesis length in tokens.
    pub sys_len: u64,
    /// Total effective reference length in tokens.
    pub ref_len: u64,
}

impl BleuScore {
    /// `sys_len / ref_len`, or 0 when `ref_len` is 0 (sacreBLEU's `ratio`).
    #[must_use]
    pub fn ratio(&self) -> f64 {
        if self.ref_len == 0 {
            0.0
        } else {
            self.sys_len as f64 / self.ref_len as f64
        }
    }
}

/// sacreBLEU's `str(BLEUScore)`, e.g.
/// `BLEU = 71.16 91.4/78.3/65.7/54.5 (BP = 1.000 ratio = 1.003 hyp_len = 238279 ref_len = 237471)`.
impl fmt::Display for BleuScore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [p1, p2, p3, p4] = self.precisions;
        write!(
            f,
            "BLEU = {:.2} {p1:.1}/{p2:.1}/{p3:.1}/{p4:.1} (BP = {:.3} ratio = {:.3} hyp_len = {} ref_len = {})",
            self.score,
            self.bp,
            self.ratio(),
            self.sys_len,
            self.ref_len
        )
    }
}

/// sacreBLEU's `BLEU.compute_bleu`, with its float operations in the same order so that the
/// result is bit-identical (CPython 3.11, whose `sum()` adds floats left to right).
#[must_use]
pub fn compute_bleu(stats: &Stats, smoothing: Smoothing, effective_order: bool) -> BleuScore {
    let (sys_len, ref_len) = (stats.sys_len, stats.ref_len);
    let mut bp = 1.0;
    if sys_len < ref_len {
        bp = if sys_len > 0 {
            (1.0 - ref_len as f64 / sys_len as f64).exp()
        } else {
            0.0
        };
    }
    let mut result = BleuScore {
        score: 0.0,
        counts: stats.counts,
        totals: stats.totals,
        precisions: [0.0; MAX_NGRAM_ORDER],
        bp,
        sys_len,
        ref_len,
    };
    // Early stop if there are no matches (sacreBLEU #141).
    if stats.counts.iter().all(|&c| c == 0) {
        return result;
    }

    let precisions = &mut result.precisions;
    let mut smooth_mteval = 1.0_f64;
    let mut eff_order = MAX_NGRAM_ORDER;
    for n in 1..=MAX_NGRAM_ORDER {
        let mut correct = stats.counts[n - 1] as f64;
        let mut total = stats.totals[n - 1] as f64;
        if let Smoothing::AddK(k) = smoothing
            && n > 1
        {
            correct += k;
            total += k;
        }
        if total == 0.0 {
            break;
        }
        if effective_order {
            eff_order = n;
        }
        if correct == 0.0 {
            match smoothing {
                Smoothing::Exp => {
                    smooth_mteval *= 2.0;
                    precisions[n - 1] = 100.0 / (smooth_mteval * total);
                }
                Smoothing::Floor(value) => precisions[n - 1] = 100.0 * value / total,
                Smoothing::AddK(_) | Smoothing::None => {}
            }
        } else {
            precisions[n - 1] = 100.0 * correct / total;
        }
    }

    let mut log_sum = 0.0;
    for &p in &precisions[..eff_order] {
        log_sum += my_log(p);
    }
    result.score = bp * (log_sum / eff_order as f64).exp();
    result
}

/// sacreBLEU's `my_log`: `log`, floored at -9999999999 for 0.
fn my_log(x: f64) -> f64 {
    if x == 0.0 { -9_999_999_999.0 } else { x.ln() }
}

/// sacreBLEU's `corpus_bleu(hypotheses, references)` with its defaults (13a, mixed case, `exp`
/// smoothing, no effective order). See [`Bleu::corpus_score`] for the shapes and errors.
///
/// # Errors
///
/// As [`Bleu::corpus_score`].
pub fn corpus_bleu<H, R, S>(hypotheses: &[H], references: &[R]) -> Result<BleuScore, BleuError>
where
    H: AsRef<str>,
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    Bleu::default().corpus_score(hypotheses, references)
}

/// sacreBLEU's `sentence_bleu(hypothesis, references)` with its defaults (13a, mixed case,
/// `exp` smoothing, effective order).
///
/// # Errors
///
/// [`BleuError::NoReferences`] when `references` is empty.
pub fn sentence_bleu<S: AsRef<str>>(
    hypothesis: &str,
    references: &[S],
) -> Result<BleuScore, BleuError> {
    Bleu::sentence().sentence_score(hypothesis, references)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFS: [&str; 2] = [
        "Naomi Osaka won the 2018 US Open, beating Serena Williams 6–2, 6–4.",
        "In 2018, Osaka defeated Serena Williams in the US Open final.",
    ];

    /// LiC's data2text call: one segment, one stream per reference.
    fn lic(hypothesis: &str) -> BleuScore {
        let streams: Vec<[&str; 1]> = REFS.iter().map(|r| [*r]).collect();
        corpus_bleu(&[hypothesis], &streams).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn spec_score_vectors() {
        // lic-evaluators.md §6.4 (sacreBLEU 2.6.0 via LiC), on the 0..100 scale.
        let s = lic("Naomi Osaka won the 2018 US Open by beating Serena Williams 6–2, 6–4.");
        assert_eq!(s.score, 80.03203203845001);
        assert_eq!(
            (s.counts, s.totals, s.ref_len),
            ([14, 12, 10, 8], [15, 14, 13, 12], 15)
        );

        let s = lic(REFS[0]);
        assert_eq!(s.score, 100.00000000000004);
        assert_eq!(s.ref_len, 15);

        let s = lic("Osaka won.");
        assert_eq!(s.score, 0.0);
        assert_eq!(
            (s.counts, s.totals, s.ref_len),
            ([3, 1, 0, 0], [3, 2, 1, 0], 13)
        );

        let s = lic("Completely unrelated sentence about cats and dogs here today.");
        assert_eq!(s.score, 3.1085583786586424);
        assert_eq!(
            (s.counts, s.totals, s.ref_len),
            ([1, 0, 0, 0], [10, 9, 8, 7], 13)
        );

        let s = lic("");
        assert_eq!((s.score, s.bp, s.sys_len, s.ref_len), (0.0, 0.0, 0, 13));
    }

    #[test]
    fn sentence_bleu_uses_effective_order() {
        // lic-evaluators.md §6.4: 2.25 under sentence_bleu, 0 under LiC's corpus_bleu.
        let s = sentence_bleu("Osaka won.", &REFS).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.score, 2.247320757600649);
    }

    /// `BLEU(smooth_method=..., smooth_value=..., effective_order=...)`
    /// `.corpus_score([hyp], [["the cat is on the mat"]])` in sacreBLEU 2.6.0: score and
    /// precisions.
    #[test]
    fn smoothing_methods_match_sacrebleu() {
        let cases = [
            (
                Smoothing::Exp,
                false,
                "the cat sat on the mat today",
                30.739407647563215,
                [71.42857142857143, 50.0, 20.0, 12.5],
            ),
            (
                Smoothing::Exp,
                false,
                "the cat sat",
                0.0,
                [66.66666666666667, 50.0, 50.0, 0.0],
            ),
            (
                Smoothing::Exp,
                true,
                "the cat sat on the mat today",
                30.739407647563215,
                [71.42857142857143, 50.0, 20.0, 12.5],
            ),
            (
                Smoothing::Exp,
                true,
                "the cat sat",
                20.24518585186855,
                [66.66666666666667, 50.0, 50.0, 0.0],
            ),
            (
                Smoothing::Floor(0.1),
                false,
                "the cat sat on the mat today",
                20.556680845025987,
                [71.42857142857143, 50.0, 20.0, 2.5],
            ),
            (
                Smoothing::Floor(0.1),
                false,
                "the cat sat",
                0.0,
                [66.66666666666667, 50.0, 10.0, 0.0],
            ),
            (
                Smoothing::Floor(0.1),
                true,
                "the cat sat on the mat today",
                20.556680845025987,
                [71.42857142857143, 50.0, 20.0, 2.5],
            ),
            (
                Smoothing::Floor(0.1),
                true,
                "the cat sat",
                11.839456508855966,
                [66.66666666666667, 50.0, 10.0, 0.0],
            ),
            (
                Smoothing::Floor(0.5),
                false,
                "the cat sat on the mat today",
                30.739407647563215,
                [71.42857142857143, 50.0, 20.0, 12.5],
            ),
            (
                Smoothing::Floor(0.5),
                false,
                "the cat sat",
                0.0,
                [66.66666666666667, 50.0, 50.0, 0.0],
            ),
            (
                Smoothing::Floor(0.5),
                true,
                "the cat sat on the mat today",
                30.739407647563215,
                [71.42857142857143, 50.0, 20.0, 12.5],
            ),
            (
                Smoothing::Floor(0.5),
                true,
                "the cat sat",
                20.24518585186855,
                [66.66666666666667, 50.0, 50.0, 0.0],
            ),
            (
                Smoothing::AddK(1.0),
                false,
                "the cat sat on the mat today",
                40.61492579932463,
                [
                    71.42857142857143,
                    57.142857142857146,
                    33.333333333333336,
                    20.0,
                ],
            ),
            (
                Smoothing::AddK(1.0),
                false,
                "the cat sat",
                25.258199528128284,
                [66.66666666666667, 66.66666666666667, 50.0, 100.0],
            ),
            (
                Smoothing::AddK(1.0),
                true,
                "the cat sat on the mat today",
                40.61492579932463,
                [
                    71.42857142857143,
                    57.142857142857146,
                    33.333333333333336,
                    20.0,
                ],
            ),
            (
                Smoothing::AddK(1.0),
                true,
                "the cat sat",
                25.258199528128284,
                [66.66666666666667, 66.66666666666667, 50.0, 100.0],
            ),
            (
                Smoothing::AddK(0.5),
                false,
                "the cat sat on the mat today",
                32.857020447977725,
                [
                    71.42857142857143,
                    53.84615384615385,
                    27.272727272727273,
                    11.11111111111111,
                ],
            ),
            (
                Smoothing::AddK(0.5),
                false,
                "the cat sat",
                22.230037854975066,
                [66.66666666666667, 60.0, 33.333333333333336, 100.0],
            ),
            (
                Smoothing::AddK(0.5),
                true,
                "the cat sat on the mat today",
                32.857020447977725,
                [
                    71.42857142857143,
                    53.84615384615385,
                    27.272727272727273,
                    11.11111111111111,
                ],
            ),
            (
                Smoothing::AddK(0.5),
                true,
                "the cat sat",
                22.230037854975066,
                [66.66666666666667, 60.0, 33.333333333333336, 100.0],
            ),
            (
                Smoothing::None,
                false,
                "the cat sat on the mat today",
                0.0,
                [71.42857142857143, 50.0, 20.0, 0.0],
            ),
            (
                Smoothing::None,
                false,
                "the cat sat",
                0.0,
                [66.66666666666667, 50.0, 0.0, 0.0],
            ),
            (
                Smoothing::None,
                true,
                "the cat sat on the mat today",
                0.0,
                [71.42857142857143, 50.0, 20.0, 0.0],
            ),
            (
                Smoothing::None,
                true,
                "the cat sat",
                0.0,
                [66.66666666666667, 50.0, 0.0, 0.0],
            ),
        ];
        for (smoothing, effective_order, hyp, score, precisions) in cases {
            let bleu = Bleu {
                smoothing,
                effective_order,
                ..Bleu::default()
            };
            let s = bleu
                .corpus_score(&[hyp], &[["the cat is on the mat"]])
                .unwrap_or_else(|e| panic!("{e}"));
            let case = format!("{smoothing:?} effective_order={effective_order} {hyp:?}");
            assert_eq!(s.score, score, "{case}");
            assert_eq!(s.precisions, precisions, "{case}");
        }
    }

    #[test]
    fn errors_where_sacrebleu_raises() {
        let no_refs: [[&str; 1]; 0] = [];
        assert_eq!(corpus_bleu(&["a"], &no_refs), Err(BleuError::NoReferences));
        let no_hyps: [&str; 0] = [];
        assert_eq!(
            corpus_bleu(&no_hyps, &[["a"]]),
            Err(BleuError::NoHypotheses)
        );
        assert_eq!(
            corpus_bleu(&["a", "b"], &[vec!["a", "b"], vec!["a"]]),
            Err(BleuError::LengthMismatch {
                stream: 1,
                expected: 2,
                actual: 1
            })
        );
        assert_eq!(
            sentence_bleu::<&str>("a", &[]),
            Err(BleuError::NoReferences)
        );
    }

    #[test]
    fn display_matches_sacrebleu_str() {
        let s = lic("Naomi Osaka won the 2018 US Open by beating Serena Williams 6–2, 6–4.");
        assert_eq!(
            s.to_string(),
            "BLEU = 80.03 93.3/85.7/76.9/66.7 (BP = 1.000 ratio = 1.000 hyp_len = 15 ref_len = 15)"
        );
    }

    #[test]
    fn smoothing_names_round_trip() {
        for name in ["exp", "floor", "add-k", "none"] {
            let parsed: Smoothing = name.parse().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(parsed.name(), name);
        }
        assert!("add_k".parse::<Smoothing>().is_err());
    }
}
