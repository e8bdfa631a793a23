//! Unified diffs of whole files, in the form `git apply` reads (`diff --git` headers,
//! `new file mode` for added files, `\ No newline at end of file` where needed).

use similar::TextDiff;

/// The diff that turns `old` (or no file) into `new` at `path`; empty when they are equal.
pub fn unified_diff(path: &str, old: Option<&str>, new: &str) -> String {
    if old == Some(new) {
        return String::new();
    }
    let before = old.unwrap_or("");
    let diff = TextDiff::from_lines(before, new);
    let from = if old.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_string()
    };
    let body = diff
        .unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{path}"))
        .to_string();
    let mut out = format!("diff --git a/{path} b/{path}\n");
    if old.is_none() {
        out.push_str("new file mode 100644\n");
    }
    out.push_str(&body);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_and_new_files() {
        let d = unified_diff("m.py", Some("a = 1\nb = 2\n"), "a = 1\nb = 3\n");
        assert!(
            d.starts_with("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n"),
            "{d}"
        );
        assert!(d.contains("-b = 2\n+b = 3\n"), "{d}");
        let d = unified_diff("new.py", None, "x = 1\n");
        assert!(
            d.contains(
                "new file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x = 1\n"
            ),
            "{d}"
        );
        assert_eq!(unified_diff("same.py", Some("x\n"), "x\n"), "");
        let d = unified_diff("nonl.py", Some("x"), "y");
        assert!(d.contains("\\ No newline at end of file"), "{d}");
    }
}
