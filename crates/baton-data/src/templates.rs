//! Family prompt templates: the system prompt and the final-turn instruction.
//!
//! The defaults live in the repository's `evaluators/<family>/` folder and are
//! compiled into the binary, so baton runs from anywhere. A user who wants to
//! change them copies that folder, edits it, and points baton at the copy
//! ([`Templates::from_dir`]); every file must then be present.
//!
//! `templates = "lic"` reads LiC's own system prompts from the user's checkout instead
//! ([`Templates::lic`], [`crate::lic`]).
//!
//! File convention: one trailing newline (`\n` or `\r\n`) is dropped when a
//! template is read, so files may end with a newline as editors like.

use std::path::{Path, PathBuf};

use baton_types::Family;
use sha2::{Digest, Sha256};

use crate::error::DataError;
use crate::lic::{self, LIC_FILES, LicFile, LicRole};

/// The system-prompt file name inside `<dir>/<family>/`.
pub const SYSTEM_FILE: &str = "system.txt";
/// The final-instruction file name inside `<dir>/<family>/`.
pub const FINAL_INSTRUCTION_FILE: &str = "final_instruction.txt";
/// Placeholder in the database system prompt, replaced by `schema_sql`.
pub const SCHEMA_PLACEHOLDER: &str = "[[SCHEMA]]";
/// Placeholder in the actions system prompt, replaced by Python's `str()` of `function`.
pub const FUNCTIONS_PLACEHOLDER: &str = "[[FUNCTIONS]]";

macro_rules! embedded {
    ($family:literal) => {
        (
            include_str!(concat!("../../../evaluators/", $family, "/system.txt")),
            include_str!(concat!(
                "../../../evaluators/",
                $family,
                "/final_instruction.txt"
            )),
        )
    };
}

/// Embedded defaults, in [`Family::ALL`] order.
const EMBEDDED: [(&str, &str); 5] = [
    embedded!("code"),
    embedded!("database"),
    embedded!("actions"),
    embedded!("math"),
    embedded!("data2text"),
];

/// The prompt texts for all five families.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates {
    /// `(system, final_instruction)` per family, in [`Family::ALL`] order.
    texts: Vec<(String, String)>,
    /// The folder they were read from; `None` for the embedded defaults.
    origin: Option<PathBuf>,
    /// The LiC files the system prompts came from (empty unless [`Templates::lic`]).
    lic_files: Vec<LicFile>,
    /// LiC's single-turn templates, as read (empty unless [`Templates::lic`]).
    full: Vec<(Family, LicRole, String)>,
}

impl Templates {
    /// The defaults compiled into the binary (the repository's `evaluators/`).
    pub fn embedded() -> Templates {
        Templates {
            texts: EMBEDDED
                .iter()
                .map(|(s, f)| (drop_final_newline(s), drop_final_newline(f)))
                .collect(),
            origin: None,
            lic_files: Vec::new(),
            full: Vec::new(),
        }
    }

    /// LiC's system prompts from a `lost_in_conversation` checkout at `dir` (the files
    /// of [`LIC_FILES`], read as is), with baton's embedded final-turn instructions.
    /// See [`crate::lic`].
    pub fn lic(dir: &Path) -> Result<Templates, DataError> {
        let mut t = Templates::embedded();
        for (family, role, relative) in LIC_FILES {
            let (text, file) = lic::read(dir, relative)?;
            match role {
                LicRole::System => {
                    check_placeholder(family, &text, &dir.join(relative))?;
                    t.texts[index(family)].0 = text;
                }
                LicRole::Full | LicRole::FullHumanEval => t.full.push((family, role, text)),
            }
            t.lic_files.push(file);
        }
        t.origin = Some(dir.to_path_buf());
        Ok(t)
    }

    /// The LiC files these templates were read from, with their sha256 (empty for
    /// baton's own templates).
    pub fn lic_files(&self) -> &[LicFile] {
        &self.lic_files
    }

    /// LiC's single-turn template for `family` in `role` ([`LicRole::Full`], or
    /// [`LicRole::FullHumanEval`] for HumanEval code items), as read; `None` for baton's
    /// own templates, which have no single-turn prompts.
    pub fn full_prompt(&self, family: Family, role: LicRole) -> Option<&str> {
        self.full
            .iter()
            .find(|(f, r, _)| *f == family && *r == role)
            .map(|(_, _, text)| text.as_str())
    }

    /// Read edited templates from `dir`, laid out like `evaluators/`:
    /// `<dir>/<family>/system.txt` and `<dir>/<family>/final_instruction.txt`
    /// for all five families. A missing file is an error naming it, and the
    /// database and actions system prompts must keep their placeholders.
    pub fn from_dir(dir: &Path) -> Result<Templates, DataError> {
        let mut texts = Vec::with_capacity(Family::ALL.len());
        for family in Family::ALL {
            let read = |file: &str| -> Result<String, DataError> {
                let path = dir.join(family.as_str()).join(file);
                match std::fs::read_to_string(&path) {
                    Ok(text) => Ok(drop_final_newline(&text)),
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                        Err(DataError::TemplateMissing { path })
                    }
                    Err(source) => Err(DataError::Io { path, source }),
                }
            };
            let system = read(SYSTEM_FILE)?;
            let final_instruction = read(FINAL_INSTRUCTION_FILE)?;
            check_placeholder(
                family,
                &system,
                &dir.join(family.as_str()).join(SYSTEM_FILE),
            )?;
            texts.push((system, final_instruction));
        }
        Ok(Templates {
            texts,
            origin: Some(dir.to_path_buf()),
            lic_files: Vec::new(),
            full: Vec::new(),
        })
    }

    /// Write these templates as files under `dir` (the layout
    /// [`Templates::from_dir`] reads), e.g. to start editing the defaults.
    /// Existing files are overwritten.
    pub fn write_dir(&self, dir: &Path) -> Result<(), DataError> {
        for family in Family::ALL {
            let folder = dir.join(family.as_str());
            std::fs::create_dir_all(&folder).map_err(|source| DataError::Io {
                path: folder.clone(),
                source,
            })?;
            for (file, text) in [
                (SYSTEM_FILE, self.system(family)),
                (FINAL_INSTRUCTION_FILE, self.final_instruction(family)),
            ] {
                let path = folder.join(file);
                std::fs::write(&path, format!("{text}\n"))
                    .map_err(|source| DataError::Io { path, source })?;
            }
        }
        Ok(())
    }

    /// The family's system-prompt template (placeholders not yet filled).
    pub fn system(&self, family: Family) -> &str {
        &self.texts[index(family)].0
    }

    /// The instruction appended to the family's last user turn.
    pub fn final_instruction(&self, family: Family) -> &str {
        &self.texts[index(family)].1
    }

    /// The folder the templates came from (the LiC checkout for [`Templates::lic`]);
    /// `None` for the embedded defaults.
    pub fn origin(&self) -> Option<&Path> {
        self.origin.as_deref()
    }

    /// Hex sha256 over every template text, for run metadata: the JSON array
    /// `[[family, system, final_instruction], ...]` in [`Family::ALL`] order.
    pub fn sha256(&self) -> String {
        let entries: Vec<[&str; 3]> = Family::ALL
            .iter()
            .map(|&f| [f.as_str(), self.system(f), self.final_instruction(f)])
            .collect();
        let canonical = serde_json::to_string(&entries).unwrap_or_default();
        hex::encode(Sha256::digest(canonical.as_bytes()))
    }
}

impl Default for Templates {
    fn default() -> Self {
        Templates::embedded()
    }
}

fn index(family: Family) -> usize {
    Family::ALL
        .iter()
        .position(|&f| f == family)
        .unwrap_or_default()
}

fn drop_final_newline(text: &str) -> String {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.strip_suffix('\r').unwrap_or(text).to_owned()
}

fn check_placeholder(family: Family, system: &str, path: &Path) -> Result<(), DataError> {
    let needed = match family {
        Family::Database => SCHEMA_PLACEHOLDER,
        Family::Actions => FUNCTIONS_PLACEHOLDER,
        _ => return Ok(()),
    };
    if system.contains(needed) {
        Ok(())
    } else {
        Err(DataError::Template {
            path: path.to_path_buf(),
            message: format!("the {family} system prompt must contain the placeholder {needed}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_templates_keep_lic_layout() {
        let t = Templates::embedded();
        let db = t.system(Family::Database);
        assert!(
            db.ends_with("\n        \n[[SCHEMA]]"),
            "database prompt must end with newline, 8 spaces, newline, placeholder: {db:?}"
        );
        assert_eq!(db.lines().next().map(|l| l.contains("SQL")), Some(true));
        let actions = t.system(Family::Actions);
        assert!(actions.ends_with("\n\n[[FUNCTIONS]]"), "{actions:?}");
        for family in Family::ALL {
            assert!(!t.system(family).is_empty(), "{family} system prompt");
            assert!(
                !t.final_instruction(family).is_empty(),
                "{family} final instruction"
            );
            assert!(!t.final_instruction(family).ends_with('\n'));
            for placeholder in [SCHEMA_PLACEHOLDER, FUNCTIONS_PLACEHOLDER] {
                let expected = matches!(
                    (family, placeholder),
                    (Family::Database, SCHEMA_PLACEHOLDER)
                        | (Family::Actions, FUNCTIONS_PLACEHOLDER)
                );
                assert_eq!(t.system(family).contains(placeholder), expected, "{family}");
            }
        }
    }

    #[test]
    fn round_trip_through_a_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = Templates::embedded();
        t.write_dir(dir.path()).expect("write");
        let back = Templates::from_dir(dir.path()).expect("read");
        assert_eq!(back.sha256(), t.sha256());
        assert_eq!(back.origin(), Some(dir.path()));
    }

    #[test]
    fn missing_file_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        Templates::embedded().write_dir(dir.path()).expect("write");
        let gone = dir.path().join("data2text").join(FINAL_INSTRUCTION_FILE);
        std::fs::remove_file(&gone).expect("remove");
        let err = Templates::from_dir(dir.path()).expect_err("must fail");
        assert!(
            matches!(&err, DataError::TemplateMissing { path } if *path == gone),
            "{err}"
        );
        assert!(err.to_string().contains("data2text/final_instruction.txt"));
    }

    #[test]
    fn lost_placeholder_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        Templates::embedded().write_dir(dir.path()).expect("write");
        std::fs::write(
            dir.path().join("actions").join(SYSTEM_FILE),
            "no list here\n",
        )
        .expect("write");
        let err = Templates::from_dir(dir.path()).expect_err("must fail");
        assert!(err.to_string().contains("[[FUNCTIONS]]"), "{err}");
    }

    #[test]
    fn sha_changes_with_any_text() {
        let a = Templates::embedded();
        let mut b = a.clone();
        b.texts[3].1.push('!');
        assert_ne!(a.sha256(), b.sha256());
    }
}
