use std::path::PathBuf;

/// Everything that can go wrong in the sandbox *infrastructure*.
///
/// A bad program is never an error: it is a failing [`baton_types::Verdict`] or a
/// [`crate::RunStatus`]. These variants mean the runtime itself is missing, broken or
/// cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// No usable Python 3 on the machine to build the runtime with.
    #[error(
        "{what} is needed to build the Python sandbox runtime but was not found ({detail}); install it, e.g. `{install}`"
    )]
    MissingTool {
        /// The tool that is missing (`python3`, `python3-venv`, `pip`).
        what: String,
        /// What was tried and what it said.
        detail: String,
        /// The command that installs it on Debian/Ubuntu.
        install: String,
    },
    /// The runtime has not been built in this sandbox folder.
    #[error("the Python sandbox runtime is not built at {path}; run `baton sandbox install`")]
    NotInstalled {
        /// Where the runner component was expected.
        path: PathBuf,
    },
    /// An external build step (`python3 -m venv`, `pip install`, `componentize-py`) failed.
    #[error("sandbox build step `{step}` failed: {detail}")]
    BuildStep {
        /// The command that failed.
        step: String,
        /// Its exit status and the tail of its output.
        detail: String,
    },
    /// A file or directory could not be read or written.
    #[error("sandbox i/o error on {path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// wasmtime refused the engine, the component or an instantiation.
    #[error("wasmtime error while {context}: {detail}")]
    Wasmtime {
        /// What the sandbox was doing.
        context: String,
        /// wasmtime's message (with its cause chain).
        detail: String,
    },
    /// The runtime was built but fails its own smoke test.
    #[error("sandbox runtime at {path} fails its smoke test `{test}`: {detail}")]
    SmokeTest {
        /// The runner component.
        path: PathBuf,
        /// Which smoke test failed.
        test: String,
        /// What happened instead.
        detail: String,
    },
}

impl SandboxError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SandboxError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn wasmtime(context: impl Into<String>, err: impl std::fmt::Debug) -> Self {
        SandboxError::Wasmtime {
            context: context.into(),
            detail: format!("{err:?}"),
        }
    }
}
