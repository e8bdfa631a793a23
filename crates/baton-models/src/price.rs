//! Price cards in LiteLLM's JSON format, and exact cost arithmetic.
//!
//! Rates are kept as integer picodollars (1e-12 USD) per token, so a call's cost is an
//! exact integer and an episode's total is the exact sum of its calls: prefix, handoff and
//! suffix reconcile to the last unit. Every LiteLLM rate with at most twelve decimal
//! places (all of them, in practice) converts without loss; a rate that does not is
//! rejected rather than rounded.

use std::collections::BTreeMap;
use std::path::Path;

use baton_types::{Cost, Usage};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ModelError;
use crate::provider::TokenClasses;

/// The price card compiled into the binary (a LiteLLM subset plus the simulated models).
pub const EMBEDDED_PRICE_CARD: &str = include_str!("../data/price_card.json");

/// One model's rates, in picodollars per token. `None` means the card has no rate for
/// that token class; using such a class is an error, never $0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Price {
    /// Uncached input.
    pub input: i64,
    /// Output, reasoning included.
    pub output: i64,
    /// Prompt-cache hits.
    pub cache_read: Option<i64>,
    /// 5-minute cache writes.
    pub cache_write_5m: Option<i64>,
    /// Long-lived cache writes: Anthropic's 1-hour TTL
    /// (`cache_creation_input_token_cost_above_1hr`) or, where the card has no such
    /// field, OpenAI's 12-hour TTL (`cache_creation_input_token_cost_above_12hr`).
    pub cache_write_1h: Option<i64>,
    /// The prompt size above which the card prices a call at other (tiered) rates,
    /// from an `input_cost_per_token_above_<N>k_tokens` field. Such a call is refused
    /// rather than mis-priced.
    pub tier_above: Option<u64>,
    /// These are Batch API rates (the card's `*_batches` fields): errors name those
    /// fields.
    #[serde(default)]
    pub batches: bool,
}

impl Price {
    /// The exact cost of one call's usage, or an error naming the token class the card
    /// has no rate for (or saying the cost does not fit: the arithmetic is checked, so
    /// absurd usage from a hostile server never wraps into a small cost).
    pub fn cost(&self, key: &str, usage: &Usage) -> Result<Cost, ModelError> {
        if let Some(threshold) = self.tier_above
            && usage.total_input() > threshold
        {
            return Err(ModelError::TieredPrice {
                key: key.to_string(),
                threshold,
                prompt: usage.total_input(),
            });
        }
        let class = |n: u64, rate: Option<i64>, field: Field| -> Result<i128, ModelError> {
            let field = self.field(field);
            match (n, rate) {
                (0, _) => Ok(0),
                (n, Some(r)) => Ok(i128::from(n) * i128::from(r)),
                (_, None) => Err(ModelError::MissingRate {
                    key: key.to_string(),
                    field,
                }),
            }
        };
        // u64 tokens times i64 rates fit in i128; the sum of five such products too.
        let total = class(usage.uncached_in, Some(self.input), Field::Input)?
            + class(usage.output, Some(self.output), Field::Output)?
            + class(usage.cache_read, self.cache_read, Field::CacheRead)?
            + class(
                usage.cache_write_5m,
                self.cache_write_5m,
                Field::CacheWrite5m,
            )?
            + class(
                usage.cache_write_1h,
                self.cache_write_1h,
                Field::CacheWrite1h,
            )?;
        i64::try_from(total)
            .map(Cost)
            .map_err(|_| ModelError::CostOverflow {
                key: key.to_string(),
                tokens: [
                    usage.uncached_in,
                    usage.output,
                    usage.cache_read,
                    usage.cache_write_5m,
                    usage.cache_write_1h,
                ]
                .iter()
                .map(|&n| u128::from(n))
                .sum(),
            })
    }

    /// Check, before any call, that the card has a rate for every token class a
    /// provider's replies can carry, and that no prompt of up to `max_prompt` tokens
    /// reaches the card's tiered rates. The error names the card key and the field.
    pub fn check(
        &self,
        key: &str,
        classes: TokenClasses,
        max_prompt: u64,
    ) -> Result<(), ModelError> {
        let needed = [
            (classes.cache_read, self.cache_read, Field::CacheRead),
            (
                classes.cache_write_5m,
                self.cache_write_5m,
                Field::CacheWrite5m,
            ),
            (
                classes.cache_write_1h,
                self.cache_write_1h,
                Field::CacheWrite1h,
            ),
        ];
        if let Some((_, _, field)) = needed
            .iter()
            .find(|(used, rate, _)| *used && rate.is_none())
        {
            return Err(ModelError::MissingRate {
                key: key.to_string(),
                field: self.field(*field),
            });
        }
        if let Some(threshold) = self.tier_above
            && max_prompt > threshold
        {
            return Err(ModelError::TieredPrice {
                key: key.to_string(),
                threshold,
                prompt: max_prompt,
            });
        }
        Ok(())
    }

    /// The card field of a token class's rate: the direct one, or its `_batches` twin.
    fn field(&self, field: Field) -> &'static str {
        let (direct, batch) = match field {
            Field::Input => ("input_cost_per_token", "input_cost_per_token_batches"),
            Field::Output => ("output_cost_per_token", "output_cost_per_token_batches"),
            Field::CacheRead => (
                "cache_read_input_token_cost",
                "cache_read_input_token_cost_batches",
            ),
            Field::CacheWrite5m => (
                "cache_creation_input_token_cost",
                "cache_creation_input_token_cost_batches",
            ),
            Field::CacheWrite1h => (
                "cache_creation_input_token_cost_above_1hr",
                "cache_creation_input_token_cost_above_1hr_batches",
            ),
        };
        if self.batches { batch } else { direct }
    }

    /// The most a call with this many prompt and output tokens can cost (every prompt
    /// token at the dearest input class).
    pub fn upper_bound(&self, input_tokens: u64, output_tokens: u64) -> Cost {
        let dearest_in = [Some(self.input), self.cache_write_5m, self.cache_write_1h]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(self.input);
        let total = i128::from(input_tokens) * i128::from(dearest_in)
            + i128::from(output_tokens) * i128::from(self.output);
        Cost(i64::try_from(total).unwrap_or(i64::MAX))
    }
}

/// A token class, for naming its rate's card field.
#[derive(Debug, Clone, Copy)]
enum Field {
    Input,
    Output,
    CacheRead,
    CacheWrite5m,
    CacheWrite1h,
}

#[derive(Deserialize)]
struct RawEntry {
    input_cost_per_token: Option<f64>,
    output_cost_per_token: Option<f64>,
    cache_read_input_token_cost: Option<f64>,
    cache_creation_input_token_cost: Option<f64>,
    cache_creation_input_token_cost_above_1hr: Option<f64>,
    cache_creation_input_token_cost_above_12hr: Option<f64>,
    input_cost_per_token_batches: Option<f64>,
    output_cost_per_token_batches: Option<f64>,
    cache_read_input_token_cost_batches: Option<f64>,
    cache_creation_input_token_cost_batches: Option<f64>,
    cache_creation_input_token_cost_above_1hr_batches: Option<f64>,
    cache_creation_input_token_cost_above_12hr_batches: Option<f64>,
}

/// A loaded price card: the embedded one, optionally overridden entry by entry by a
/// user file in the same format.
///
/// Each entry may also carry Batch API rates (LiteLLM's `*_batches` fields:
/// `input_cost_per_token_batches`, `output_cost_per_token_batches`,
/// `cache_read_input_token_cost_batches`, `cache_creation_input_token_cost_batches`,
/// `cache_creation_input_token_cost_above_1hr_batches` or `…_above_12hr_batches`), read
/// by [`PriceCard::get_batch`] for models whose calls go through a batch API. A batch
/// class without its `_batches` field has no rate (an error when used, never the direct
/// rate), and the direct entry's tier threshold applies to batched calls too.
#[derive(Debug, Clone)]
pub struct PriceCard {
    entries: BTreeMap<String, Price>,
    batch_entries: BTreeMap<String, Price>,
    sha256: String,
    sources: Vec<String>,
}

impl PriceCard {
    /// The card compiled into the binary.
    pub fn embedded() -> Self {
        Self::parse("embedded price card", EMBEDDED_PRICE_CARD)
            .expect("the embedded price card is valid (checked by a unit test)")
    }

    /// Parse a card in LiteLLM's format. Entries without both base rates (embedding
    /// models, image models, `sample_spec`) are skipped.
    pub fn parse(source: &str, text: &str) -> Result<Self, ModelError> {
        if let Some(literal) = vanishing_number(text) {
            return Err(ModelError::PriceCard {
                source_name: source.to_string(),
                message: format!(
                    "the number {literal} is not zero but too small to represent (it would be read as 0): not a price"
                ),
            });
        }
        let raw: BTreeMap<String, serde_json::Value> =
            serde_json::from_str(text).map_err(|e| ModelError::PriceCard {
                source_name: source.to_string(),
                message: e.to_string(),
            })?;
        let mut entries = BTreeMap::new();
        let mut batch_entries = BTreeMap::new();
        for (key, value) in raw {
            if key == "sample_spec" {
                continue;
            }
            if let Some(field) = value.as_object().and_then(|o| {
                o.iter()
                    .find(|(k, v)| v.is_null() && RATE_FIELDS.contains(&k.as_str()))
                    .map(|(k, _)| k.clone())
            }) {
                return Err(ModelError::PriceCard {
                    source_name: source.to_string(),
                    message: format!(
                        "entry {key:?}: {field} is null; give a rate or leave the field out"
                    ),
                });
            }
            let tier_above = tier_threshold(&value);
            let entry: RawEntry =
                serde_json::from_value(value).map_err(|e| ModelError::PriceCard {
                    source_name: source.to_string(),
                    message: format!("entry {key:?}: {e}"),
                })?;
            let (Some(input), Some(output)) =
                (entry.input_cost_per_token, entry.output_cost_per_token)
            else {
                continue;
            };
            let rate = |field: &str, v: f64| to_pico(source, &key, field, v);
            let opt = |field: &str, v: Option<f64>| v.map(|v| rate(field, v)).transpose();
            let price = Price {
                input: rate("input_cost_per_token", input)?,
                output: rate("output_cost_per_token", output)?,
                cache_read: opt(
                    "cache_read_input_token_cost",
                    entry.cache_read_input_token_cost,
                )?,
                cache_write_5m: opt(
                    "cache_creation_input_token_cost",
                    entry.cache_creation_input_token_cost,
                )?,
                cache_write_1h: match entry.cache_creation_input_token_cost_above_1hr {
                    Some(v) => Some(rate("cache_creation_input_token_cost_above_1hr", v)?),
                    None => opt(
                        "cache_creation_input_token_cost_above_12hr",
                        entry.cache_creation_input_token_cost_above_12hr,
                    )?,
                },
                tier_above,
                batches: false,
            };
            if let (Some(input), Some(output)) = (
                entry.input_cost_per_token_batches,
                entry.output_cost_per_token_batches,
            ) {
                let batch = Price {
                    input: rate("input_cost_per_token_batches", input)?,
                    output: rate("output_cost_per_token_batches", output)?,
                    cache_read: opt(
                        "cache_read_input_token_cost_batches",
                        entry.cache_read_input_token_cost_batches,
                    )?,
                    cache_write_5m: opt(
                        "cache_creation_input_token_cost_batches",
                        entry.cache_creation_input_token_cost_batches,
                    )?,
                    cache_write_1h: match entry.cache_creation_input_token_cost_above_1hr_batches {
                        Some(v) => Some(rate(
                            "cache_creation_input_token_cost_above_1hr_batches",
                            v,
                        )?),
                        None => opt(
                            "cache_creation_input_token_cost_above_12hr_batches",
                            entry.cache_creation_input_token_cost_above_12hr_batches,
                        )?,
                    },
                    tier_above,
                    batches: true,
                };
                batch_entries.insert(key.clone(), batch);
            }
            entries.insert(key, price);
        }
        Ok(PriceCard {
            entries,
            batch_entries,
            sha256: hex::encode(Sha256::digest(text.as_bytes())),
            sources: vec![source.to_string()],
        })
    }

    /// Read a user card and lay its entries over this one. The combined sha256 covers
    /// both files, so a run records exactly which prices it used.
    pub fn with_override_file(mut self, path: &Path) -> Result<Self, ModelError> {
        let text = baton_types::input::read_text_bounded(
            path,
            baton_types::input::PRICE_CARD_LIMIT,
            "price card",
        )
        .map_err(|e| ModelError::PriceCard {
            source_name: path.display().to_string(),
            message: e.to_string(),
        })?;
        let over = Self::parse(&path.display().to_string(), &text)?;
        // an overriding entry replaces the batch rates too (absent ones included)
        for key in over.entries.keys() {
            self.batch_entries.remove(key);
        }
        self.entries.extend(over.entries);
        self.batch_entries.extend(over.batch_entries);
        let mut h = Sha256::new();
        h.update(self.sha256.as_bytes());
        h.update(over.sha256.as_bytes());
        self.sha256 = hex::encode(h.finalize());
        self.sources.extend(over.sources);
        Ok(self)
    }

    /// The rates for a card key, or an error that names the key and the card.
    pub fn get(&self, key: &str) -> Result<Price, ModelError> {
        self.entries
            .get(key)
            .copied()
            .ok_or_else(|| ModelError::NoPrice {
                key: key.to_string(),
                sources: self.sources.join(", "),
                similar: self.closest(key),
            })
    }

    /// Up to three card keys closest to `key` (normalized Damerau-Levenshtein over the
    /// key and over its part after the provider prefix), close enough to be a typo.
    fn closest(&self, key: &str) -> Vec<String> {
        let bare = |k: &str| {
            k.rsplit_once('/')
                .map_or(k, |(_, id)| id)
                .to_ascii_lowercase()
        };
        let wanted = bare(key);
        let mut scored: Vec<(f64, &String)> = self
            .entries
            .keys()
            .map(|k| {
                let whole = strsim::normalized_damerau_levenshtein(
                    &key.to_ascii_lowercase(),
                    &k.to_ascii_lowercase(),
                );
                let id = strsim::normalized_damerau_levenshtein(&wanted, &bare(k));
                (whole.max(id), k)
            })
            .filter(|(score, _)| *score >= 0.8)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored.into_iter().take(3).map(|(_, k)| k.clone()).collect()
    }

    /// The Batch API rates for a card key (its `*_batches` fields), or an error naming
    /// the key and the fields it lacks.
    pub fn get_batch(&self, key: &str) -> Result<Price, ModelError> {
        self.get(key)?;
        self.batch_entries
            .get(key)
            .copied()
            .ok_or_else(|| ModelError::NoBatchPrice {
                key: key.to_string(),
                sources: self.sources.join(", "),
            })
    }

    /// The sha256 of the card text (combined with any override).
    pub fn sha256(&self) -> &str {
        &self.sha256
    }
}

/// The rate fields a card entry is read for (a `null` in one is refused: it reads as
/// no rate, which would silently keep an overridden entry's or price the class as
/// missing).
const RATE_FIELDS: [&str; 12] = [
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
    "cache_creation_input_token_cost_above_1hr",
    "cache_creation_input_token_cost_above_12hr",
    "input_cost_per_token_batches",
    "output_cost_per_token_batches",
    "cache_read_input_token_cost_batches",
    "cache_creation_input_token_cost_batches",
    "cache_creation_input_token_cost_above_1hr_batches",
    "cache_creation_input_token_cost_above_12hr_batches",
];

/// The first number literal of the JSON `text` (outside strings) that is not zero but
/// reads as 0.0 (`1e-400`): JSON parsing loses it silently.
fn vanishing_number(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        if b == b'-' || b.is_ascii_digit() {
            let start = i;
            while i < bytes.len()
                && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
            {
                i += 1;
            }
            let literal = &text[start..i];
            let mantissa = literal.split(['e', 'E']).next().unwrap_or("");
            if mantissa.bytes().any(|d| matches!(d, b'1'..=b'9'))
                && literal.parse::<f64>().is_ok_and(|v| v == 0.0)
            {
                return Some(literal.to_string());
            }
            continue;
        }
        i += 1;
    }
    None
}

/// The lowest `N * 1000` over the entry's `input_cost_per_token_above_<N>k_tokens`
/// fields (the service-tier variants with a suffix included).
fn tier_threshold(entry: &serde_json::Value) -> Option<u64> {
    let map = entry.as_object()?;
    map.keys()
        .filter_map(|k| {
            let rest = k.strip_prefix("input_cost_per_token_above_")?;
            let (n, tail) = rest.split_once("k_tokens")?;
            (tail.is_empty() || tail.starts_with('_'))
                .then(|| n.parse::<u64>().ok())
                .flatten()
        })
        .min()
        .map(|n| n * 1000)
}

/// The dearest rate a card may give one token, in US dollars: a hundred times the dearest
/// model sold today. A rate past it is a typo (or a hostile card), refused by name.
const MAX_USD_PER_TOKEN: f64 = 0.01;

fn to_pico(source: &str, key: &str, field: &str, usd: f64) -> Result<i64, ModelError> {
    if !usd.is_finite() || usd > MAX_USD_PER_TOKEN {
        return Err(ModelError::PriceCard {
            source_name: source.to_string(),
            message: format!(
                "entry {key:?}: {field} = {usd:e} USD per token is not a price (at most {MAX_USD_PER_TOKEN})"
            ),
        });
    }
    let pico = usd * 1e12;
    let rounded = pico.round();
    if usd > 0.0 && rounded == 0.0 {
        return Err(ModelError::PriceCard {
            source_name: source.to_string(),
            message: format!(
                "entry {key:?}: {field} = {usd:e} is not zero but finer than 1e-12 USD per token"
            ),
        });
    }
    if usd.is_nan() || usd < 0.0 || (pico - rounded).abs() > 1e-6 * rounded.abs().max(1.0) {
        return Err(ModelError::PriceCard {
            source_name: source.to_string(),
            message: format!(
                "entry {key:?}: {field} = {usd} is negative or finer than 1e-12 USD per token"
            ),
        });
    }
    Ok(rounded as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// See: issue 35, item 5: a model id with a typo reads as one, not as a price error.
    #[test]
    fn issue_35_a_missing_price_names_the_closest_card_keys() {
        let card = PriceCard::embedded();
        let err = card.get("claude-haiku-4.5").unwrap_err().to_string();
        assert!(
            err.contains("the closest card keys: \"claude-haiku-4-5\""),
            "{err}"
        );
        assert!(
            err.contains("`prices` key") && !err.contains("--prices"),
            "{err}"
        );
        let far = card.get("no-such-model-at-all").unwrap_err().to_string();
        assert!(!far.contains("closest"), "{far}");
    }

    /// See: issue 35, item 5: `baton run` has no `--prices`; the card is the `prices` key.
    #[test]
    fn issue_35_a_missing_batch_price_names_the_prices_key() {
        let text = r#"{"m": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06}}"#;
        let card = PriceCard::parse("card.json", text).unwrap();
        assert_eq!(
            card.get_batch("m").unwrap_err().to_string(),
            "price card entry \"m\" has no input_cost_per_token_batches and \
             output_cost_per_token_batches (card.json), which a batched model needs; add them \
             in LiteLLM's format to a card the experiment's `prices` key names"
        );
    }

    #[test]
    fn issue_23_a_rate_past_any_real_price_is_refused_by_name() {
        for rate in ["1e308", "0.5"] {
            let text = format!(
                r#"{{"m": {{"input_cost_per_token": 1e-06, "output_cost_per_token": {rate}}}}}"#
            );
            let err = PriceCard::parse("card.json", &text)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("card.json")
                    && err.contains("\"m\"")
                    && err.contains("output_cost_per_token")
                    && err.contains("is not a price"),
                "{err}"
            );
        }
    }

    #[test]
    fn issue_32_a_vanishing_or_null_rate_is_refused() {
        // See: issue 32 (rates `1e-400` and `null` were accepted)
        for (rate, says) in [
            ("1e-400", "too small to represent"),
            ("1E-330", "too small to represent"),
            ("1e-20", "finer than 1e-12"),
            ("null", "is null"),
        ] {
            let card = format!(
                r#"{{"m": {{"input_cost_per_token": 1e-06, "output_cost_per_token": {rate}}}}}"#
            );
            let err = PriceCard::parse("card.json", &card)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(says) && err.contains("card.json"),
                "{rate}: {err}"
            );
        }
        // zero, and tiny numbers inside strings, are fine
        let card = r#"{"m": {"input_cost_per_token": 0, "output_cost_per_token": 0.0e-5, "note": "1e-400"}}"#;
        assert_eq!(
            PriceCard::parse("card.json", card)
                .unwrap()
                .get("m")
                .unwrap()
                .output,
            0
        );
    }

    #[test]
    fn embedded_card_parses_and_has_the_sim_models() {
        let card = PriceCard::embedded();
        assert_eq!(card.get("sim/lc").unwrap().input, 200_000);
        assert_eq!(card.get("gpt-4o-mini").unwrap().cache_read, Some(75_000));
        assert!(card.get("no-such-model").is_err());
    }

    #[test]
    fn cost_is_exact_and_never_double_counts_cache() {
        let card = PriceCard::embedded();
        let p = card.get("claude-sonnet-4-5").unwrap();
        let u = Usage {
            uncached_in: 9,
            cache_read: 17_102,
            cache_write_5m: 100,
            cache_write_1h: 0,
            output: 120,
            reasoning: 0,
        };
        // 9*3e-6 + 17102*3e-7 + 100*3.75e-6 + 120*1.5e-5 USD
        let expected = 9 * 3_000_000 + 17_102 * 300_000 + 100 * 3_750_000 + 120 * 15_000_000;
        assert_eq!(p.cost("claude-sonnet-4-5", &u).unwrap(), Cost(expected));
    }

    #[test]
    fn a_used_token_class_without_a_rate_is_an_error() {
        let card = PriceCard::embedded();
        let p = card.get("gpt-4o").unwrap();
        let u = Usage {
            cache_write_5m: 10,
            ..Usage::default()
        };
        let err = p.cost("gpt-4o", &u).unwrap_err().to_string();
        assert!(err.contains("cache_creation_input_token_cost"), "{err}");
    }

    #[test]
    fn the_card_carries_the_papers_models_and_refuses_tiered_prompts() {
        let card = PriceCard::embedded();
        let luna = card.get("gpt-5.6-luna").unwrap();
        assert_eq!(
            (
                luna.input,
                luna.output,
                luna.cache_read,
                luna.cache_write_5m
            ),
            (200_000, 1_200_000, Some(20_000), Some(250_000))
        );
        assert_eq!(luna.tier_above, Some(272_000));
        let opus = card.get("claude-opus-4-7-20260416").unwrap();
        assert_eq!(opus.cache_write_1h, Some(10_000_000));
        assert_eq!(opus.tier_above, None);
        for key in [
            "gpt-4.1-mini",
            "gpt-5",
            "o4-mini",
            "claude-haiku-4-5-20251001",
        ] {
            assert!(card.get(key).is_ok(), "{key}");
        }
        let big = Usage {
            uncached_in: 272_001,
            ..Usage::default()
        };
        let err = luna.cost("gpt-5.6-luna", &big).unwrap_err().to_string();
        assert!(err.contains("272000"), "{err}");
        let ok = Usage {
            uncached_in: 272_000,
            ..Usage::default()
        };
        assert_eq!(
            luna.cost("gpt-5.6-luna", &ok).unwrap(),
            Cost(272_000 * 200_000)
        );
    }

    #[test]
    fn absurd_usage_is_refused_not_wrapped() {
        let p = PriceCard::embedded().get("sim/hc").unwrap();
        let u = Usage {
            uncached_in: u64::MAX,
            output: u64::MAX,
            ..Usage::default()
        };
        let err = p.cost("sim/hc", &u).unwrap_err().to_string();
        assert!(err.contains("does not fit"), "{err}");
        assert_eq!(p.upper_bound(u64::MAX, u64::MAX), Cost(i64::MAX));
    }

    #[test]
    fn the_pre_check_names_a_rate_a_provider_can_incur() {
        let card = PriceCard::embedded();
        let old = card.get("gpt-4o-2024-05-13").unwrap();
        let reads = TokenClasses {
            cache_read: true,
            ..TokenClasses::default()
        };
        let err = old
            .check("gpt-4o-2024-05-13", reads, 10)
            .unwrap_err()
            .to_string();
        assert!(err.contains("cache_read_input_token_cost"), "{err}");
        assert!(
            old.check("gpt-4o-2024-05-13", TokenClasses::default(), 10)
                .is_ok()
        );
        let luna = card.get("gpt-5.6-luna").unwrap();
        assert!(luna.check("gpt-5.6-luna", reads, 272_000).is_ok());
        let err = luna
            .check("gpt-5.6-luna", reads, 272_001)
            .unwrap_err()
            .to_string();
        assert!(err.contains("tiered"), "{err}");
    }

    #[test]
    fn override_file_replaces_entries_and_changes_the_hash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        std::fs::write(
            &path,
            r#"{"sim/lc": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06}}"#,
        )
        .unwrap();
        let base = PriceCard::embedded();
        let sha = base.sha256().to_string();
        let card = base.with_override_file(&path).unwrap();
        assert_eq!(card.get("sim/lc").unwrap().input, 1_000_000);
        assert_ne!(card.sha256(), sha);
    }

    #[test]
    fn batch_rates_come_from_the_batches_fields_and_name_them_when_missing() {
        let card = PriceCard::embedded();
        let lc = card.get_batch("sim/lc").unwrap();
        assert_eq!(
            (lc.input, lc.output, lc.cache_read, lc.cache_write_5m),
            (100_000, 600_000, Some(10_000), Some(125_000))
        );
        assert!(lc.batches);
        // Anthropic: cache reads and writes at the batch discount, the 1-hour write too
        let opus = card.get_batch("claude-opus-4-7").unwrap();
        assert_eq!(
            (
                opus.input,
                opus.cache_read,
                opus.cache_write_5m,
                opus.cache_write_1h
            ),
            (2_500_000, Some(250_000), Some(3_125_000), Some(5_000_000))
        );
        // OpenAI: the 12-hour write's batch rate where the card has one
        let luna = card.get_batch("gpt-5.6-luna").unwrap();
        assert_eq!(luna.cache_write_1h, Some(250_000));
        assert_eq!(luna.tier_above, Some(272_000));
        // no *_batches fields: an error naming the key and the fields
        let err = card.get_batch("gpt-5-chat").unwrap_err().to_string();
        assert!(
            err.contains("\"gpt-5-chat\"") && err.contains("input_cost_per_token_batches"),
            "{err}"
        );
        assert!(
            card.get_batch("no-such-model")
                .unwrap_err()
                .to_string()
                .contains("no price")
        );
        // a used class without a batch rate names the batch field, not the direct one
        let mini = card.get_batch("gpt-4o-mini").unwrap();
        let err = mini
            .cost(
                "gpt-4o-mini",
                &Usage {
                    cache_read: 5,
                    ..Usage::default()
                },
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("cache_read_input_token_cost_batches"), "{err}");
    }

    #[test]
    fn an_override_entry_without_batch_rates_drops_the_embedded_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        std::fs::write(
            &path,
            r#"{"sim/lc": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06}}"#,
        )
        .unwrap();
        let card = PriceCard::embedded().with_override_file(&path).unwrap();
        assert!(card.get_batch("sim/lc").is_err());
        assert!(card.get_batch("sim/hc").is_ok());
    }
}
