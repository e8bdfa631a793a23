//! Integration tests for baton-spider: LiC's conformance vectors and hostile SQL.

mod conformance;
mod hostile;

use std::path::PathBuf;

/// The shared conformance folder (`BATON_CONFORMANCE_DIR` overrides it), or
/// `None` after a loud message when it is absent.
pub fn conformance_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("BATON_CONFORMANCE_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/conformance"
            ))
        },
        PathBuf::from,
    );
    if dir.join("database.jsonl").is_file() && dir.join("databases").is_dir() {
        Some(dir)
    } else {
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "SKIPPED: conformance folder {} not found (set BATON_CONFORMANCE_DIR)",
                dir.display()
            );
        }
        None
    }
}
