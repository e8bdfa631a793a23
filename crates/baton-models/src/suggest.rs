//! Did-you-mean: the closest of the names a setting accepts to a misspelt one
//! (`compact-pre` for `compact_pre`, `temprature` for `temperature`).

/// The one of `candidates` closest to `wanted`, if it is close enough to be a typo:
/// normalized Damerau-Levenshtein of at least 0.7, ignoring case and reading `-` as `_`.
pub fn closest<'a, I>(wanted: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let norm = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let wanted = norm(wanted);
    candidates
        .into_iter()
        .map(|c| (strsim::normalized_damerau_levenshtein(&wanted, &norm(c)), c))
        .filter(|(score, _)| *score >= 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// `message` (a serde error: ``unknown field `x`, expected one of `a`, `b` ``, or
/// ``unknown variant …``) with `; did you mean `a`?` after the list on its line when
/// one of the expected names is close to the unknown one; else as it is.
pub fn with_did_you_mean(message: &str) -> String {
    let lines: Vec<String> = message
        .split('\n')
        .map(|line| {
            let Some(rest) = ["unknown field `", "unknown variant `"]
                .iter()
                .find_map(|p| line.find(p).map(|at| &line[at + p.len()..]))
            else {
                return line.to_string();
            };
            let Some((unknown, expected)) = rest.split_once('`') else {
                return line.to_string();
            };
            let names = expected.split('`').skip(1).step_by(2);
            match closest(unknown, names) {
                Some(name) => format!("{line}; did you mean `{name}`?"),
                None => line.to_string(),
            }
        })
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_35_a_misspelt_name_gets_the_closest_expected_one() {
        assert_eq!(
            with_did_you_mean(
                "unknown variant `compact-pre`, expected one of `raw`, `disclosure`, `compact_pre`, `compact_suf`, `traj_drop`\nin `handoff.interfaces`"
            ),
            "unknown variant `compact-pre`, expected one of `raw`, `disclosure`, `compact_pre`, `compact_suf`, `traj_drop`; did you mean `compact_pre`?\nin `handoff.interfaces`"
        );
        assert_eq!(
            with_did_you_mean("unknown field `temprature`, expected one of `model`, `temperature`"),
            "unknown field `temprature`, expected one of `model`, `temperature`; did you mean `temperature`?"
        );
        // nothing close: the message as it was
        assert_eq!(
            with_did_you_mean("unknown field `zzz`, expected `model` or `price`"),
            "unknown field `zzz`, expected `model` or `price`"
        );
        assert_eq!(closest("Seed", ["seed", "name"]), Some("seed"));
    }
}
