//! All user-facing output goes through a `Printer`, so that commands never print
//! directly and a closed pipe is not an error.

use std::io::Write;

/// Writes command output to stdout and messages to stderr.
pub struct Printer {
    _private: (),
}

impl Printer {
    /// A printer on the process's stdout and stderr.
    pub fn stdout() -> Self {
        Printer { _private: () }
    }

    /// Write text to stdout as is (add the newline yourself).
    pub fn out(&self, text: &str) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()
    }

    /// Write one line to stdout.
    pub fn line(&self, text: &str) -> std::io::Result<()> {
        self.out(&format!("{text}\n"))
    }

    /// Write one line to stderr (status and errors).
    pub fn error(&self, text: &str) {
        let _ = writeln!(std::io::stderr().lock(), "{text}");
    }
}

/// Whether an error chain ends in a broken pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
