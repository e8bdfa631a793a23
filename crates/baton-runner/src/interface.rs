//! The fixed texts the handoff interfaces add, from `evaluators/interfaces/`.

use std::path::Path;

use crate::RunError;

/// The placeholder in `compact_handoff.txt` that the summary replaces.
pub const SUMMARY_PLACEHOLDER: &str = "[[SUMMARY]]";

const EMBEDDED: [(&str, &str); 3] = [
    (
        "disclosure.txt",
        include_str!("../../../evaluators/interfaces/disclosure.txt"),
    ),
    (
        "compact_request.txt",
        include_str!("../../../evaluators/interfaces/compact_request.txt"),
    ),
    (
        "compact_handoff.txt",
        include_str!("../../../evaluators/interfaces/compact_handoff.txt"),
    ),
];

/// The interface templates in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceTemplates {
    /// The note put before the receiver's first turn (`disclosure`).
    pub disclosure: String,
    /// The request for a summary (`compact_pre`, `compact_suf`).
    pub compact_request: String,
    /// The receiver's first message around the summary (`compact_*`).
    pub compact_handoff: String,
}

impl InterfaceTemplates {
    /// The defaults compiled into the binary.
    pub fn embedded() -> Self {
        let t = |i: usize| drop_final_newline(EMBEDDED[i].1);
        InterfaceTemplates {
            disclosure: t(0),
            compact_request: t(1),
            compact_handoff: t(2),
        }
    }

    /// Read `<dir>/interfaces/*.txt`; every file must exist and the handoff template must
    /// keep its placeholder.
    pub fn from_dir(dir: &Path) -> Result<Self, RunError> {
        let read = |name: &str| {
            let path = dir.join("interfaces").join(name);
            std::fs::read_to_string(&path)
                .map(|s| drop_final_newline(&s))
                .map_err(|source| RunError::ReadFile { path, source })
        };
        let t = InterfaceTemplates {
            disclosure: read(EMBEDDED[0].0)?,
            compact_request: read(EMBEDDED[1].0)?,
            compact_handoff: read(EMBEDDED[2].0)?,
        };
        if !t.compact_handoff.contains(SUMMARY_PLACEHOLDER) {
            return Err(RunError::Spec {
                source_name: dir
                    .join("interfaces")
                    .join(EMBEDDED[2].0)
                    .display()
                    .to_string(),
                message: format!("must contain the placeholder {SUMMARY_PLACEHOLDER}"),
            });
        }
        Ok(t)
    }

    /// The receiver's first message before the next shard, carrying `summary`.
    pub fn handoff_message(&self, summary: &str) -> String {
        self.compact_handoff.replace(SUMMARY_PLACEHOLDER, summary)
    }
}

fn drop_final_newline(text: &str) -> String {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.strip_suffix('\r').unwrap_or(text).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_handoff_template_has_its_placeholder() {
        let t = InterfaceTemplates::embedded();
        assert!(t.handoff_message("S").contains("\n\nS\n\n"));
        assert!(!t.disclosure.is_empty() && !t.compact_request.ends_with('\n'));
    }
}
