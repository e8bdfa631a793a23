use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// A file or folder could not be read or written.
    #[error("cannot access {}: {source}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// An input file is not a regular file, or is past its size bound.
    #[error(transparent)]
    Input(#[from] baton_types::input::InputError),

    /// A JSON-array dataset is not valid JSON.
    #[error("{file}: invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// The dataset name (usually its path).
        file: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// serde_json's description.
        message: String,
    },

    /// The dataset parsed but some items break the schema. Every problem found
    /// is listed (up to [`Problems::CAP`]), each naming the file, the item
    /// index or line, the task id when readable, and the key.
    #[error("dataset {file} is invalid: {problems}")]
    Invalid {
        /// The dataset name (usually its path).
        file: String,
        /// The problems found.
        problems: Problems,
    },

    /// A dataset file that starts like Parquet but cannot be read as Parquet.
    #[error("{file}: not a readable Parquet file: {message}")]
    Parquet {
        /// The dataset name (usually its path).
        file: String,
        /// What the reader said.
        message: String,
    },

    /// A template file is missing from a user's template folder.
    #[error("template file {} is missing (a template folder must hold system.txt and final_instruction.txt for every family)", path.display())]
    TemplateMissing {
        /// The file that was expected.
        path: PathBuf,
    },

    /// A template is present but unusable (e.g. the placeholder is missing).
    #[error("template {}: {message}", path.display())]
    Template {
        /// The template file (or its embedded name).
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },

    /// A task lacks what an operation needs (building a schedule or an answer).
    #[error("task {task_id:?}: key {key:?}: {message}")]
    Task {
        /// The task's id.
        task_id: String,
        /// The key involved.
        key: String,
        /// What is wrong.
        message: String,
    },

    /// Building a sample SQLite database failed.
    #[error("cannot build sample database {}: {source}", path.display())]
    Sqlite {
        /// The database file being built.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },
}

impl DataError {
    pub(crate) fn task(task_id: &str, key: &str, message: impl Into<String>) -> Self {
        DataError::Task {
            task_id: task_id.to_owned(),
            key: key.to_owned(),
            message: message.into(),
        }
    }
}

/// The validation problems of one dataset, kept in file order.
///
/// At most [`Problems::CAP`] messages are stored; `total` counts them all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problems {
    /// The stored messages, one complete sentence each, in file order.
    pub messages: Vec<String>,
    /// How many problems were found in total (may exceed `messages.len()`).
    pub total: usize,
}

impl Problems {
    /// How many problem messages are kept; the rest are only counted.
    pub const CAP: usize = 50;

    pub(crate) fn push(&mut self, message: String) {
        self.total += 1;
        if self.messages.len() < Self::CAP {
            self.messages.push(message);
        }
    }

    /// True when no problem was found.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = if self.total == 1 {
            "problem"
        } else {
            "problems"
        };
        write!(f, "{} {noun} found", self.total)?;
        for message in &self.messages {
            write!(f, "\n  {message}")?;
        }
        let hidden = self.total - self.messages.len();
        if hidden > 0 {
            write!(f, "\n  ... and {hidden} more")?;
        }
        Ok(())
    }
}
