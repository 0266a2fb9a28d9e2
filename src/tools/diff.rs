//! The unified diff the permission float shows for Edit and Write, built with
//! `similar` (line diff, 3 lines of context, `git diff` style headers).

use similar::TextDiff;

/// Unified diff from `old` to `new` (logical texts) with headers
/// `--- a/{name}` / `+++ b/{name}`; a new file (`old` is `None`) gets
/// `--- /dev/null`. Empty when the texts are equal. A missing final newline
/// is marked `\ No newline at end of file`, as `diff -u` does.
pub fn unified_diff(old: Option<&str>, new: &str, name: &str) -> String {
    let before = old.unwrap_or("");
    if old.is_some() && before == new {
        return String::new();
    }
    let from = if old.is_some() {
        format!("a/{name}")
    } else {
        "/dev/null".to_string()
    };
    TextDiff::from_lines(before, new)
        .unified_diff()
        .context_radius(3)
        .missing_newline_hint(true)
        .header(&from, &format!("b/{name}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_diff_has_headers_context_and_changes() {
        let d = unified_diff(Some("a\nb\nc\n"), "a\nB\nc\n", "src/x.txt");
        assert_eq!(
            d,
            "--- a/src/x.txt\n+++ b/src/x.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
    }

    #[test]
    fn new_file_diff_and_equal_texts() {
        assert_eq!(
            unified_diff(None, "x", "n.txt"),
            "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n"
        );
        assert_eq!(unified_diff(Some("same\n"), "same\n", "s"), "");
    }
}
