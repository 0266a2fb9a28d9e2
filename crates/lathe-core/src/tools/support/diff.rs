//! The unified diff the permission float shows for Edit and Write, built with
//! `similar` (line diff, 3 lines of context, `git diff` style headers), and
//! the text that results when the user keeps only some of its hunks.

use similar::{DiffOp, TextDiff};

/// Lines of context around each change: a hunk of [`unified_diff`] is one
/// group of [`apply_hunks`] because both use this radius.
pub const CONTEXT_LINES: usize = 3;

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
        .context_radius(CONTEXT_LINES)
        .missing_newline_hint(true)
        .header(&from, &format!("b/{name}"))
        .to_string()
}

/// Lines of a [`bounded_diff`] at most (the chat folds it; the rest is
/// counted in [`DIFF_MORE_LINES`]).
pub const DIFF_MAX_LINES: usize = 300;
/// Characters of a [`bounded_diff`] line at most (a minified line is cut
/// with `…`).
pub const DIFF_MAX_LINE_CHARS: usize = 500;
/// The last line of a [`bounded_diff`] cut at [`DIFF_MAX_LINES`]
/// (user-facing, in the chat).
pub const DIFF_MORE_LINES: &str = "… {n} more lines of the diff not shown";

/// [`unified_diff`] bounded for the chat: at most [`DIFF_MAX_LINES`] lines
/// of at most [`DIFF_MAX_LINE_CHARS`] characters, a cut diff ending with
/// [`DIFF_MORE_LINES`] (how many lines were left out).
pub fn bounded_diff(old: Option<&str>, new: &str, name: &str) -> String {
    let full = unified_diff(old, new, name);
    let total = full.lines().count();
    let mut out = String::with_capacity(full.len().min(DIFF_MAX_LINES * 100));
    for line in full.lines().take(DIFF_MAX_LINES) {
        if line.chars().count() > DIFF_MAX_LINE_CHARS {
            out.extend(line.chars().take(DIFF_MAX_LINE_CHARS - 1));
            out.push('…');
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    if total > DIFF_MAX_LINES {
        let n = (total - DIFF_MAX_LINES).to_string();
        out.push_str(&crate::text::fill(DIFF_MORE_LINES, &[("n", &n)]));
        out.push('\n');
    }
    out
}

/// How many hunks [`unified_diff`] shows for `before` → `after`.
pub fn hunk_count(before: &str, after: &str) -> usize {
    TextDiff::from_lines(before, after)
        .grouped_ops(CONTEXT_LINES)
        .len()
}

/// The text that results from `before` when only the hunks of
/// [`unified_diff`]`(before, after)` whose entry in `keep` is `true` are
/// applied (hunks are numbered in diff order; a missing entry keeps the
/// hunk). Keeping every hunk gives `after`, keeping none gives `before`;
/// line endings are copied from whichever side a line comes from.
pub fn apply_hunks(before: &str, after: &str, keep: &[bool]) -> String {
    let diff = TextDiff::from_lines(before, after);
    let old = diff.old_slices();
    let new = diff.new_slices();
    let groups = diff.grouped_ops(CONTEXT_LINES);
    // The hunk an op's old range falls in, if any (equal runs between
    // hunks belong to none).
    let hunk_of = |op: &DiffOp| {
        groups.iter().position(|g| {
            g.iter()
                .any(|o| o.old_range() == op.old_range() && o.new_range() == op.new_range())
        })
    };
    let mut out = String::with_capacity(after.len().max(before.len()));
    for op in diff.ops() {
        let kept = match op {
            DiffOp::Equal { .. } => false,
            _ => hunk_of(op).is_none_or(|h| keep.get(h).copied().unwrap_or(true)),
        };
        let lines: &[&str] = if kept {
            &new[op.new_range()]
        } else {
            &old[op.old_range()]
        };
        for l in lines {
            out.push_str(l);
        }
    }
    out
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

    #[test]
    fn a_bounded_diff_says_how_many_lines_it_left_out() {
        let big: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let d = bounded_diff(None, &big, "big.txt");
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines.len(), DIFF_MAX_LINES + 1);
        assert_eq!(lines[0], "--- /dev/null");
        // 3 header lines + 1000 added lines in all.
        assert_eq!(
            lines[DIFF_MAX_LINES],
            format!(
                "… {} more lines of the diff not shown",
                1003 - DIFF_MAX_LINES
            )
        );
        let wide = "x".repeat(2000);
        let d = bounded_diff(Some("a\n"), &format!("{wide}\n"), "w");
        let added = d
            .lines()
            .find(|l| l.starts_with('+') && !l.starts_with("+++"));
        assert_eq!(added.map(|l| l.chars().count()), Some(DIFF_MAX_LINE_CHARS));
        let small = bounded_diff(Some("a\n"), "b\n", "s");
        assert_eq!(small, unified_diff(Some("a\n"), "b\n", "s"));
    }

    #[test]
    fn keeping_some_hunks_applies_only_those() {
        let before: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let after = before
            .replace("line 2\n", "line two\n")
            .replace("line 18\n", "line eighteen\nline 18b\n");
        assert_eq!(hunk_count(&before, &after), 2);
        assert_eq!(
            unified_diff(Some(&before), &after, "f")
                .matches("\n@@")
                .count(),
            2
        );
        assert_eq!(apply_hunks(&before, &after, &[true, true]), after);
        assert_eq!(apply_hunks(&before, &after, &[false, false]), before);
        let first_only = apply_hunks(&before, &after, &[true, false]);
        assert!(first_only.contains("line two\n") && first_only.contains("line 18\n"));
        assert!(!first_only.contains("eighteen"));
        let second_only = apply_hunks(&before, &after, &[false, true]);
        assert!(second_only.contains("line 2\n") && second_only.contains("line 18b\n"));
    }

    #[test]
    fn hunks_keep_a_missing_final_newline_and_crlf_free_text_exact() {
        assert_eq!(apply_hunks("a\nb", "a\nc", &[false]), "a\nb");
        assert_eq!(apply_hunks("a\nb", "a\nc", &[true]), "a\nc");
        assert_eq!(apply_hunks("", "new\n", &[true]), "new\n");
    }
}
