//! LiC's own prompt files, read from the user's `lost_in_conversation` checkout.
//!
//! baton never contains LiC's texts: `templates = "lic"` with `lic_dir = PATH` (the clone
//! a user makes anyway to get `data/sharded_instructions_600.json`) reads them from
//! there. Each family's system prompt is built the way LiC's
//! `tasks/<family>/task_<family>.py` `generate_system_prompt` builds it: the file as is
//! (no newline dropped), `[[SCHEMA]]` replaced by the item's `schema_sql` for database,
//! `[[FUNCTIONS]]` by Python's `str()` of the item's `function` list for actions
//! (`baton_py::json_repr`); code uses the LiveCodeBench prompt for HumanEval and
//! LiveCodeBench items alike. The final-turn instructions and the handoff interface
//! texts stay baton's: LiC finds answers with an LLM, baton reads them by rule, and the
//! instructions ask for the form the rules read.
//!
//! [`LIC_FILES`] is the one table of files read, each with the role it plays: the system
//! prompts and the templates of LiC's single-turn `full` and `concat` baselines
//! (`*_full_prompt.txt`, filled by [`crate::baseline_prompt`]). Every file read is hashed
//! ([`LicFile`]), and a run stores the hashes. With `extraction = "lic"` the run also
//! reads LiC's two answer-extraction prompts ([`ExtractionPrompts`]).

use std::path::{Path, PathBuf};

use baton_types::{ExtractionStrategy, Family};
use sha2::{Digest, Sha256};

use crate::error::DataError;

/// The `templates` value that selects LiC's prompt files.
pub const LIC_TEMPLATES: &str = "lic";

/// What a LiC prompt file is used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LicRole {
    /// The family's system prompt (`generate_system_prompt`).
    System,
    /// The family's single-turn template (`*_full_prompt.txt`), behind both baselines;
    /// for code, the LiveCodeBench one.
    Full,
    /// Code only: the HumanEval single-turn template, for items whose `source` is
    /// `humaneval`.
    FullHumanEval,
}

/// The LiC files baton reads, relative to the checkout: (family, role, path).
pub const LIC_FILES: [(Family, LicRole, &str); 11] = [
    (
        Family::Code,
        LicRole::System,
        "prompts/lcb/lcb_system_prompt.txt",
    ),
    (
        Family::Database,
        LicRole::System,
        "prompts/database/database_system_prompt.txt",
    ),
    (
        Family::Actions,
        LicRole::System,
        "prompts/actions/actions_system_prompt.txt",
    ),
    (
        Family::Math,
        LicRole::System,
        "prompts/math/math_system_prompt.txt",
    ),
    (
        Family::Data2Text,
        LicRole::System,
        "prompts/data2text/data2text_system_prompt.txt",
    ),
    (
        Family::Code,
        LicRole::Full,
        "prompts/lcb/lcb_full_prompt.txt",
    ),
    (
        Family::Code,
        LicRole::FullHumanEval,
        "prompts/humaneval/humaneval_full_prompt.txt",
    ),
    (
        Family::Database,
        LicRole::Full,
        "prompts/database/database_full_prompt.txt",
    ),
    (
        Family::Actions,
        LicRole::Full,
        "prompts/actions/actions_full_prompt.txt",
    ),
    (
        Family::Math,
        LicRole::Full,
        "prompts/math/math_full_prompt.txt",
    ),
    (
        Family::Data2Text,
        LicRole::Full,
        "prompts/data2text/data2text_full_prompt.txt",
    ),
];

/// One LiC file as read: its path relative to the checkout and the sha256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LicFile {
    /// The path relative to the checkout, e.g. `prompts/math/math_system_prompt.txt`.
    pub path: String,
    /// Hex sha256 of the file's bytes.
    pub sha256: String,
}

/// LiC's answer-extraction prompts (`extraction = "lic"`), as read from the checkout:
/// one per [`ExtractionStrategy`], each with the hash a run stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractionPrompts {
    /// (strategy, template, file), for `gen` and `prefix_suffix`.
    prompts: Vec<(ExtractionStrategy, String, LicFile)>,
}

impl ExtractionPrompts {
    /// Read `prompts/system_answer_extraction_gen.txt` and
    /// `…_prefix_suffix.txt` from the checkout at `dir`, as is. Each must hold LiC's two
    /// placeholders, `[[ANSWER_DESCRIPTION]]` and `[[ASSISTANT_RESPONSE]]`.
    pub fn read(dir: &Path) -> Result<ExtractionPrompts, DataError> {
        let mut prompts = Vec::new();
        for strategy in [ExtractionStrategy::Gen, ExtractionStrategy::PrefixSuffix] {
            let (text, file) = read(dir, strategy.prompt_file())?;
            for needed in ["[[ANSWER_DESCRIPTION]]", "[[ASSISTANT_RESPONSE]]"] {
                if !text.contains(needed) {
                    return Err(DataError::Template {
                        path: dir.join(strategy.prompt_file()),
                        message: format!(
                            "an answer-extraction prompt must contain the placeholder {needed}"
                        ),
                    });
                }
            }
            prompts.push((strategy, text, file));
        }
        Ok(ExtractionPrompts { prompts })
    }

    /// The template of `strategy`, placeholders not yet filled.
    pub fn template(&self, strategy: ExtractionStrategy) -> &str {
        self.prompts
            .iter()
            .find(|(s, _, _)| *s == strategy)
            .map(|(_, t, _)| t.as_str())
            .expect("both strategies are read")
    }

    /// The files read, with their sha256.
    pub fn files(&self) -> impl Iterator<Item = &LicFile> {
        self.prompts.iter().map(|(_, _, f)| f)
    }
}

/// Read one LiC file (as is) and hash it. A missing file names the checkout and says
/// what `lic_dir` must be.
pub(crate) fn read(dir: &Path, relative: &str) -> Result<(String, LicFile), DataError> {
    let path: PathBuf = dir.join(relative);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(DataError::Template {
                path,
                message: format!(
                    "missing: lic_dir ({}) must be a lost_in_conversation checkout with its prompts/ folder",
                    dir.display()
                ),
            });
        }
        Err(source) => return Err(DataError::Io { path, source }),
    };
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let text = String::from_utf8(bytes).map_err(|_| DataError::Template {
        path: path.clone(),
        message: "not UTF-8".into(),
    })?;
    Ok((
        text,
        LicFile {
            path: relative.to_string(),
            sha256,
        },
    ))
}
