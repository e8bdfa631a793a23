//! The viewer's one error type.

use std::path::PathBuf;

/// What can stop the viewer from being written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The store could not be read.
    #[error("reading the store")]
    Store(#[from] baton_store::StoreError),
    /// A stored JSON text (a request, a cell) could not be read.
    #[error("episode {episode}: {what} is not valid JSON")]
    Json {
        /// The episode.
        episode: i64,
        /// Which text.
        what: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A file of the site could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The output folder holds something that is not a viewer baton wrote.
    #[error(
        "{} exists and is not a viewer baton wrote (no index.html with baton's marker); choose another --out",
        path.display()
    )]
    NotAViewer {
        /// The folder.
        path: PathBuf,
    },
}
