//! One file searched with ripgrep's engine: the matcher and searcher
//! settings (`rg` defaults plus the Grep parameters) and the sink that turns
//! matches into counts or `path:line:text` output lines.

use std::ops::Range;
use std::path::Path;

use crate::text::fill;
use grep_matcher::Matcher;
use grep_regex::{ErrorKind, RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use tokio_util::sync::CancellationToken;

/// Longest output line in content mode, in chars (not bytes), before it is
/// cut; ripgrep's `--max-columns` as Claude Code sets it.
pub const MAX_LINE_CHARS: usize = 500;

/// Marker that replaces the cut part of a long line. `{from}`/`{to}` are the
/// 1-based first and last char shown, `{total}` the line's length in chars.
pub const GREP_LINE_CUT: &str = " [… line cut: chars {from}-{to} of {total} shown]";

/// Largest compiled regex, in bytes (10 MiB, the regex crate's own
/// default; grep-regex's is 100 MiB). A pattern such as `(\w{100}){100}`
/// compiles past it and is refused (`PatternError::TooBig`) instead of
/// taking memory and time before the search starts.
pub const MAX_REGEX_BYTES: usize = 10 * 1024 * 1024;

/// Cache of the lazy DFA per search thread, in bytes (16 MiB; grep-regex's
/// default is 1000 MiB). When a pattern needs more, the engine clears the
/// cache or falls back to a slower engine: still linear time, bounded
/// memory.
pub const MAX_REGEX_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// Why a pattern could not become a matcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    /// The regex does not parse or compile; the regex crate's message.
    Regex(String),
    /// The regex compiles past [`MAX_REGEX_BYTES`]; the regex crate's message.
    TooBig(String),
    /// The pattern matches a line break but `multiline` is off.
    NeedsMultiline,
}

/// Builds the matcher ripgrep would for `pattern`: case-sensitive unless
/// `case_insensitive`; `^`/`$` match at line starts/ends (also before
/// `\r\n`); with `multiline`, `.` matches `\n` too (`rg -U
/// --multiline-dotall`), else a match never spans a line break.
pub fn build_matcher(
    pattern: &str,
    case_insensitive: bool,
    multiline: bool,
) -> Result<RegexMatcher, PatternError> {
    let mut b = RegexMatcherBuilder::new();
    b.case_insensitive(case_insensitive)
        .multi_line(true)
        .crlf(true)
        .ban_byte(Some(b'\x00'))
        .size_limit(MAX_REGEX_BYTES)
        .dfa_size_limit(MAX_REGEX_CACHE_BYTES);
    if multiline {
        b.line_terminator(None).dot_matches_new_line(true);
    } else {
        b.line_terminator(Some(b'\n'));
    }
    b.build(pattern).map_err(|e| match e.kind() {
        ErrorKind::NotAllowed(_) => PatternError::NeedsMultiline,
        // regex-automata's "exceeds size limit" (NFA, one-pass or DFA).
        _ if e.to_string().contains("size limit") => PatternError::TooBig(e.to_string()),
        _ => PatternError::Regex(e.to_string()),
    })
}

/// Context lines and line numbering for one search.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchShape {
    /// Lines of context before each match (`-B`).
    pub before: usize,
    /// Lines of context after each match (`-A`).
    pub after: usize,
    /// Let matches span lines.
    pub multiline: bool,
}

/// A searcher with ripgrep's defaults: line numbers, quit at the first NUL
/// byte (binary file), UTF-16 by BOM, plus `shape`.
pub fn build_searcher(shape: SearchShape) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .multi_line(shape.multiline)
        .before_context(shape.before)
        .after_context(shape.after)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

/// What one file's search produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileResult {
    /// Matching lines (each line of a multi-line match counts).
    pub matched_lines: u64,
    /// Output lines in content mode: matching lines, context lines and `--`
    /// breaks between context groups.
    pub entries: u64,
    /// Rendered output lines whose entry index fell in the requested range.
    pub lines: Vec<String>,
    /// The file holds a NUL byte; its results must be dropped.
    pub binary: bool,
}

/// How a search reports: what to render and when to stop.
pub struct Report<'a> {
    /// Path prefix of output lines (root-relative display form).
    pub label: &'a str,
    /// Prefix line numbers (`-n`).
    pub line_numbers: bool,
    /// Stop at the first match (files_with_matches).
    pub first_match_only: bool,
    /// Entry indexes (0-based, within this file) to render into `lines`;
    /// the search stops at the range's end. `None` renders nothing.
    pub keep: Option<Range<u64>>,
    /// The turn's token: the search of a file stops at its next match or
    /// context line once it fires (the walk checks it between files).
    pub cancel: Option<&'a CancellationToken>,
}

/// What one search reads: a file on disk, or the unsaved text a buffer
/// holds for it.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// The file at this path.
    File(&'a Path),
    /// This text (a buffer's logical text, `\n` line ends).
    Text(&'a str),
}

impl<'a> Source<'a> {
    /// `text` when a buffer has one for `path`, else the file.
    pub fn of(path: &'a Path, text: Option<&'a str>) -> Self {
        match text {
            Some(t) => Source::Text(t),
            None => Source::File(path),
        }
    }
}

/// Searches `source` and reports per `report`. I/O errors (unreadable or
/// vanished file) come back as `Err`; callers skip such files like ripgrep.
pub fn search(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    source: Source<'_>,
    report: &Report<'_>,
) -> std::io::Result<FileResult> {
    let mut sink = FileSink {
        matcher,
        report,
        out: FileResult::default(),
    };
    match source {
        Source::File(path) => searcher.search_path(matcher, path, &mut sink)?,
        Source::Text(text) => searcher.search_slice(matcher, text.as_bytes(), &mut sink)?,
    }
    Ok(sink.out)
}

struct FileSink<'a, 'r> {
    matcher: &'a RegexMatcher,
    report: &'a Report<'r>,
    out: FileResult,
}

impl FileSink<'_, '_> {
    fn cancelled(&self) -> bool {
        self.report
            .cancel
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Counts one entry and renders it when wanted; `false` stops the search.
    fn entry(&mut self, render: impl FnOnce(&Self) -> String) -> bool {
        let index = self.out.entries;
        self.out.entries += 1;
        match &self.report.keep {
            Some(keep) => {
                if keep.contains(&index) {
                    let line = render(self);
                    self.out.lines.push(line);
                }
                index + 1 < keep.end
            }
            None => true,
        }
    }

    fn render_line(&self, sep: char, number: Option<u64>, raw: &[u8], is_match: bool) -> String {
        let text = line_text(raw);
        let text = if text.chars().count() > MAX_LINE_CHARS {
            let focus = if is_match {
                self.matcher
                    .find(text.as_bytes())
                    .ok()
                    .flatten()
                    .map(|m| m.start())
            } else {
                None
            };
            cut_long_line(&text, focus)
        } else {
            text
        };
        let label = self.report.label;
        match (self.report.line_numbers, number) {
            (true, Some(n)) => format!("{label}{sep}{n}{sep}{text}"),
            _ => format!("{label}{sep}{text}"),
        }
    }
}

impl Sink for FileSink<'_, '_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.cancelled() {
            return Ok(false);
        }
        let first = mat.line_number();
        for (i, raw) in mat.bytes().split_inclusive(|b| *b == b'\n').enumerate() {
            self.out.matched_lines += 1;
            let number = first.map(|n| n + i as u64);
            if !self.entry(|s| s.render_line(':', number, raw, true)) {
                return Ok(false);
            }
        }
        Ok(!self.report.first_match_only)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.cancelled() {
            return Ok(false);
        }
        let number = ctx.line_number();
        let raw = ctx.bytes();
        Ok(self.entry(|s| s.render_line('-', number, raw, false)))
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        Ok(self.entry(|_| "--".to_string()))
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.out.binary = true;
        Ok(false)
    }
}

/// A line's text without its terminator; invalid UTF-8 shows as U+FFFD.
fn line_text(raw: &[u8]) -> String {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    String::from_utf8_lossy(raw).into_owned()
}

/// [`MAX_LINE_CHARS`] chars of `text` around byte offset `focus` (the first
/// match; `None` = the start), with [`GREP_LINE_CUT`] appended.
pub fn cut_long_line(text: &str, focus: Option<usize>) -> String {
    let total = text.chars().count();
    let focus_char = focus.map_or(0, |byte| text[..byte.min(text.len())].chars().count());
    // Show a little lead-in before the match, but keep the window full.
    let start = focus_char
        .saturating_sub(MAX_LINE_CHARS / 5)
        .min(total.saturating_sub(MAX_LINE_CHARS));
    let shown: String = text.chars().skip(start).take(MAX_LINE_CHARS).collect();
    let marker = fill(
        GREP_LINE_CUT,
        &[
            ("from", &(start + 1).to_string()),
            ("to", &(start + MAX_LINE_CHARS).to_string()),
            ("total", &total.to_string()),
        ],
    );
    format!("{shown}{marker}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_in_pattern_needs_multiline() {
        assert_eq!(
            build_matcher("a\\nb", false, false).err(),
            Some(PatternError::NeedsMultiline)
        );
        assert_eq!(
            build_matcher("a\nb", false, false).err(),
            Some(PatternError::NeedsMultiline)
        );
        assert!(build_matcher("a\\nb", false, true).is_ok());
    }

    #[test]
    fn bad_regex_keeps_the_regex_message() {
        match build_matcher("foo(", false, false) {
            Err(PatternError::Regex(msg)) => assert!(msg.contains("unclosed group"), "{msg}"),
            other => panic!("expected a regex error, got {other:?}"),
        }
    }

    #[test]
    fn a_regex_that_compiles_too_big_is_refused_quickly() {
        let started = std::time::Instant::now();
        match build_matcher("(\\w{100}){100}", false, false) {
            Err(PatternError::TooBig(msg)) => assert!(msg.contains("size limit"), "{msg}"),
            other => panic!("expected TooBig, got {other:?}"),
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(build_matcher("\\w{1,50}", false, false).is_ok());
    }

    #[test]
    fn long_line_is_cut_around_the_match() {
        let text = format!("{}needle{}", "a".repeat(1000), "b".repeat(1000));
        let cut = cut_long_line(&text, Some(1000));
        assert!(cut.starts_with(&"a".repeat(100)));
        assert!(cut.contains("needle"));
        assert!(
            cut.ends_with(" [… line cut: chars 901-1400 of 2006 shown]"),
            "{cut}"
        );
        let head = cut_long_line(&"x".repeat(600), None);
        assert!(
            head.ends_with(" [… line cut: chars 1-500 of 600 shown]"),
            "{head}"
        );
    }

    #[test]
    fn golden_line_cut_marker() {
        assert_eq!(
            GREP_LINE_CUT,
            " [… line cut: chars {from}-{to} of {total} shown]"
        );
        assert_eq!(MAX_LINE_CHARS, 500);
    }
}
