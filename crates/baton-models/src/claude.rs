//! What a Claude model id says about the settings the Anthropic Messages API takes for
//! it, in one place: the wire format builds requests by it, the simulated server refuses
//! by it, and the runner checks an experiment by it before the first call.
//!
//! The rules follow the current SDK's typed parameters (`anthropic` 2.14.0), which have
//! no `temperature`, `top_p` or `top_k`, and reasoning through `output_config.effort`
//! and `thinking`. Ids that are not Claude version names (the simulated models `lc`,
//! `hc`) are treated as the current API.

/// The `(major, minor)` version in a Claude model id: `claude-opus-4-7` and
/// `claude-opus-4-7-20260416` are (4, 7), `claude-opus-4-20250514` is (4, 0),
/// `claude-3-7-sonnet-latest` is (3, 7). `None` for other ids.
pub fn version(model: &str) -> Option<(u32, u32)> {
    let rest = model.strip_prefix("claude-")?;
    // `claude-opus-4-7` names the family first; `claude-3-7-sonnet` the version
    let named_first = !rest.starts_with(|c: char| c.is_ascii_digit());
    let mut numbers = rest
        .split('-')
        .skip(usize::from(named_first))
        .map_while(|p| p.parse::<u32>().ok().filter(|_| p.len() <= 2));
    let major = numbers.next()?;
    Some((major, numbers.next().unwrap_or(0)))
}

/// Whether the model thinks only when asked with `thinking: {type: "adaptive"}`, its
/// effort then bounding how much: Claude models from 4.6 on, and the current API. On
/// earlier models an effort alone shapes the reply without thinking, and extended
/// thinking needs an explicit `thinking_budget`.
pub fn adaptive_thinking(model: &str) -> bool {
    version(model).is_none_or(|v| v >= (4, 6))
}

/// Whether the API takes `temperature` and `top_p` for the model: Claude models before
/// 4.7 (the paper ran Haiku 4.5 at temperature 0); from 4.7 on, and in the current API,
/// there are none, and a request carrying one is refused.
pub fn takes_temperature(model: &str) -> bool {
    version(model).is_some_and(|v| v < (4, 7))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_what_they_take() {
        for (m, v, adaptive, temperature) in [
            ("claude-opus-4-7", Some((4, 7)), true, false),
            ("claude-opus-4-7-20260416", Some((4, 7)), true, false),
            ("claude-sonnet-4-6", Some((4, 6)), true, true),
            ("claude-opus-5", Some((5, 0)), true, false),
            ("claude-haiku-4-5", Some((4, 5)), false, true),
            ("claude-haiku-4-5-20251001", Some((4, 5)), false, true),
            ("claude-opus-4-1", Some((4, 1)), false, true),
            ("claude-opus-4-20250514", Some((4, 0)), false, true),
            ("claude-3-7-sonnet-latest", Some((3, 7)), false, true),
            ("lc", None, true, false),
        ] {
            assert_eq!(version(m), v, "{m}");
            assert_eq!(adaptive_thinking(m), adaptive, "{m}");
            assert_eq!(takes_temperature(m), temperature, "{m}");
        }
    }
}
