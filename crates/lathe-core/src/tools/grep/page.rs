//! Paging and the size cap of Grep's output: `offset`/`head_limit` pick a
//! window of entries (lines in content mode, files otherwise), the text is
//! cut at [`MAX_RESULT_CHARS`], and a trailer says what was left out and
//! how to see it (Claude Code's `head_limit`/`offset` contract).

use crate::text::{fill, plural};
use std::ops::Range;

/// Largest Grep result in chars (not bytes), trailer included; matches the
/// pipeline's `max_result_size_chars` for Grep (gate 9 in
/// docs/pipeline.md, "The gates").
pub const MAX_RESULT_CHARS: usize = 20_000;

/// Chars kept free for the header and trailer around the entries.
const FRAME_RESERVE: usize = 400;

/// Trailer when `head_limit` stopped the output and more entries exist.
/// `{noun}` is `lines` or `files`; `{first}`/`{last}` are 1-based.
pub const GREP_MORE_ENTRIES: &str =
    "[Showing {noun} {first}-{last} of {total}. Pass offset: {last} to see more.]";

/// Trailer when the output reached [`MAX_RESULT_CHARS`] before the window
/// ended.
pub const GREP_OUTPUT_CUT: &str = "[Output cut at {cap} characters: showing {noun} {first}-{last} of {total}. Pass offset: {last} to see more, or narrow the search with path, glob or type.]";

/// Trailer when an `offset` was given and the window reached the end.
pub const GREP_PAGE_END: &str = "[Showing {noun} {first}-{last} of {total}; there are no more.]";

/// Result text when `offset` is at or past the last entry.
pub const GREP_OFFSET_PAST_END: &str =
    "No {noun} at offset {offset}: the search found {found}. Use a smaller offset.";

/// The entries `[start, end)` to show out of `total`, from `offset` and
/// `head_limit` (`None` or `Some(0)` = no limit). The window never holds
/// more than [`MAX_RESULT_CHARS`] entries: no more can fit in the output,
/// so nothing beyond that is ever collected.
pub fn window(total: u64, offset: u64, head_limit: Option<u64>) -> Range<u64> {
    let start = offset.min(total);
    let limit = match head_limit {
        Some(n) if n > 0 => n.min(MAX_RESULT_CHARS as u64),
        _ => MAX_RESULT_CHARS as u64,
    };
    start..start.saturating_add(limit).min(total)
}

/// `lines` joined with `\n` until the next line would pass the char budget;
/// returns the text and how many lines it holds.
pub fn fit(lines: &[String], budget: usize) -> (String, usize) {
    let mut out = String::new();
    let mut used = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let cost = line.chars().count() + usize::from(i > 0);
        if used + cost > budget {
            return (out, i);
        }
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line);
        used += cost;
    }
    (out, lines.len())
}

/// Chars available for entries once `header` (and a trailer) are placed.
pub fn entry_budget(header_chars: usize) -> usize {
    MAX_RESULT_CHARS.saturating_sub(FRAME_RESERVE + header_chars)
}

/// The trailer for showing entries `[start, start + shown)` of `total` when
/// the window asked for `[start, window_end)`; `None` when everything from
/// the start was shown and no offset was given.
pub fn trailer(noun: &str, start: u64, shown: u64, window_end: u64, total: u64) -> Option<String> {
    let last = start + shown;
    let template = if last < window_end {
        GREP_OUTPUT_CUT
    } else if last < total {
        GREP_MORE_ENTRIES
    } else if start > 0 {
        GREP_PAGE_END
    } else {
        return None;
    };
    Some(fill(
        template,
        &[
            ("cap", &MAX_RESULT_CHARS.to_string()),
            ("noun", noun),
            ("first", &(start + 1).to_string()),
            ("last", &last.to_string()),
            ("total", &total.to_string()),
        ],
    ))
}

/// [`GREP_OFFSET_PAST_END`] filled in; `noun` is singular (`line`, `file`).
pub fn offset_past_end(noun: &str, offset: u64, total: u64) -> String {
    fill(
        GREP_OFFSET_PAST_END,
        &[
            ("noun", &format!("{noun}s")),
            ("offset", &offset.to_string()),
            ("found", &plural(total, noun, &format!("{noun}s"))),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_trailers() {
        assert_eq!(
            GREP_MORE_ENTRIES,
            "[Showing {noun} {first}-{last} of {total}. Pass offset: {last} to see more.]"
        );
        assert_eq!(
            GREP_OUTPUT_CUT,
            "[Output cut at {cap} characters: showing {noun} {first}-{last} of {total}. Pass offset: {last} to see more, or narrow the search with path, glob or type.]"
        );
        assert_eq!(
            GREP_PAGE_END,
            "[Showing {noun} {first}-{last} of {total}; there are no more.]"
        );
        assert_eq!(
            GREP_OFFSET_PAST_END,
            "No {noun} at offset {offset}: the search found {found}. Use a smaller offset."
        );
        assert_eq!(MAX_RESULT_CHARS, 20_000);
    }

    #[test]
    fn trailer_says_which_entries_and_how_to_see_more() {
        assert_eq!(
            trailer("files", 0, 2, 2, 5).as_deref(),
            Some("[Showing files 1-2 of 5. Pass offset: 2 to see more.]")
        );
        assert_eq!(
            trailer("lines", 10, 3, 20, 50).as_deref(),
            Some("[Output cut at 20000 characters: showing lines 11-13 of 50. Pass offset: 13 to see more, or narrow the search with path, glob or type.]")
        );
        assert_eq!(
            trailer("files", 3, 2, 5, 5).as_deref(),
            Some("[Showing files 4-5 of 5; there are no more.]")
        );
        assert_eq!(trailer("files", 0, 5, 5, 5), None);
        assert_eq!(
            offset_past_end("file", 9, 1),
            "No files at offset 9: the search found 1 file. Use a smaller offset."
        );
    }

    #[test]
    fn window_respects_offset_limit_and_cap() {
        assert_eq!(window(10, 0, None), 0..10);
        assert_eq!(window(10, 3, Some(4)), 3..7);
        assert_eq!(window(10, 3, Some(0)), 3..10);
        assert_eq!(window(10, 30, Some(4)), 10..10);
        assert_eq!(window(1_000_000, 0, None), 0..20_000);
    }

    #[test]
    fn fit_stops_before_the_budget() {
        let lines = vec!["aaaa".to_string(), "bbbb".to_string(), "cccc".to_string()];
        assert_eq!(fit(&lines, 9), ("aaaa\nbbbb".to_string(), 2));
        assert_eq!(fit(&lines, 100).1, 3);
    }
}
