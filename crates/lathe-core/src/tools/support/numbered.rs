//! `cat -n` style numbering shared by Read and the snippets of Edit/Write
//! (Claude Code's Read output): each line is its 1-based number right-aligned
//! to width 6, a TAB, then the text. Lines longer than [`MAX_LINE_CHARS`]
//! chars are cut on a char boundary and end with [`LINE_CUT_MARKER`].

use crate::text::fill;

/// Longest line shown in full, in chars (not bytes).
pub const MAX_LINE_CHARS: usize = 2000;

/// Appended to a cut line; `{total}` is the line's full length in chars.
pub const LINE_CUT_MARKER: &str = "… [line cut: {total} chars in full]";

/// The lines of a logical text: split on `\n`, where a final `\n` ends the
/// last line instead of starting an empty one. `""` has no lines; `"\n"` has
/// one empty line.
pub fn split_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
}

/// `split_lines(text).len()` without making the lines: a byte count of
/// `\n` (vectorised), for texts of any size.
pub fn line_count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    crate::editor::codec::count_newlines(body) + 1
}

/// The byte offset where 0-based line `line` of `text` starts (`text.len()`
/// when it has fewer lines): newlines are counted a block at a time, so a
/// line deep in a large text is found at memory speed.
pub fn line_start(text: &str, line: usize) -> usize {
    const BLOCK: usize = 4096;
    let b = text.as_bytes();
    let (mut seen, mut i) = (0, 0);
    while seen < line && i < b.len() {
        let end = (i + BLOCK).min(b.len());
        let here = crate::editor::codec::count_byte_newlines(&b[i..end]);
        if seen + here < line {
            seen += here;
            i = end;
            continue;
        }
        for (j, &x) in b[i..end].iter().enumerate() {
            if x == b'\n' {
                seen += 1;
                if seen == line {
                    return i + j + 1;
                }
            }
        }
    }
    if seen < line {
        b.len()
    } else {
        i
    }
}

/// Numbered lines and what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numbered {
    /// The `cat -n` text, lines joined with `\n`, no trailing newline.
    pub text: String,
    /// How many of `lines` were emitted (the budget may stop early).
    pub shown: usize,
    /// How many emitted lines were cut at [`MAX_LINE_CHARS`].
    pub cut: usize,
}

/// Numbers `lines`, the first being line `first` (1-based), stopping before
/// the output would pass `budget` bytes (at least one line is always shown).
pub fn number_lines(lines: &[&str], first: usize, budget: usize) -> Numbered {
    let mut out = String::new();
    let (mut shown, mut cut) = (0, 0);
    for (i, line) in lines.iter().enumerate() {
        let mut entry = format!("{:>6}\t", first + i);
        match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((end, _)) => {
                entry.push_str(&line[..end]);
                entry.push_str(&fill(
                    LINE_CUT_MARKER,
                    &[("total", &line.chars().count().to_string())],
                ));
                cut += 1;
            }
            None => entry.push_str(line),
        }
        if shown > 0 && out.len() + 1 + entry.len() > budget {
            break;
        }
        if shown > 0 {
            out.push('\n');
        }
        out.push_str(&entry);
        shown += 1;
    }
    Numbered {
        text: out,
        shown,
        cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_marker() {
        assert_eq!(LINE_CUT_MARKER, "… [line cut: {total} chars in full]");
    }

    #[test]
    fn splits_like_an_editor_counts_lines() {
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("\n"), vec![""]);
        assert_eq!(split_lines("a\nb"), vec!["a", "b"]);
        assert_eq!(split_lines("a\nb\n\n"), vec!["a", "b", ""]);
    }

    #[test]
    fn numbers_right_aligned_with_tab() {
        let n = number_lines(&["x", "\ty"], 9, usize::MAX);
        assert_eq!(n.text, "     9\tx\n    10\t\ty");
        assert_eq!((n.shown, n.cut), (2, 0));
    }

    #[test]
    fn long_line_cut_on_char_boundary() {
        let line = "é".repeat(MAX_LINE_CHARS + 5);
        let n = number_lines(&[&line], 1, usize::MAX);
        assert_eq!(n.cut, 1);
        let expected = format!(
            "     1\t{}… [line cut: 2005 chars in full]",
            "é".repeat(MAX_LINE_CHARS)
        );
        assert_eq!(n.text, expected);
    }

    #[test]
    fn budget_stops_early_but_shows_one_line() {
        let n = number_lines(&["aaaa", "bbbb", "cccc"], 1, 25);
        assert_eq!(
            (n.shown, n.text.as_str()),
            (2, "     1\taaaa\n     2\tbbbb")
        );
        assert_eq!(number_lines(&["long line"], 1, 3).shown, 1);
    }
}
