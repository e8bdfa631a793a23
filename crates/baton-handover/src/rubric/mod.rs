//! The two rubrics. `compat` is Handover 0.4.1's, line for line; `baton` closes its holes.
//! Both read the same parse (YAML header, CommonMark body with masked regions).

pub mod baton;
pub mod compat;

/// The header keys every handoff needs.
pub const REQUIRED: [&str; 7] = [
    "handoff",
    "iso_date",
    "true_at_sha",
    "shape",
    "first_action",
    "verify_cmd",
    "status",
];
/// The optional keys.
pub const OPTIONAL: [&str; 5] = [
    "protocol_version",
    "author",
    "supersedes",
    "suggested_effort",
    "suggested_model",
];
/// Values of `shape`.
pub const SHAPES: [&str; 3] = ["handoff", "delegation", "broadcast"];
/// Values of `status`.
pub const STATUSES: [&str; 2] = ["in_progress", "done"];
/// Values of `suggested_effort`.
pub const EFFORTS: [&str; 4] = ["low", "medium", "high", "xhigh"];
/// Protocol versions this tool knows.
pub const PROTOCOL_VERSIONS: [&str; 1] = ["1"];

/// Whether `s` is `YYYY-MM-DD` by shape (digits and dashes).
pub fn date_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

/// Whether `s` is 7–40 hex digits.
pub fn sha_shaped(s: &str) -> bool {
    (7..=40).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_hexdigit())
}
