//! What a terminal shows of a command's output (README: "Bash
//! output reads as a terminal shows it"): escape sequences (colours,
//! cursor moves, titles) are removed, and a line redrawn with `\r` (a
//! progress bar, a spinner) is kept as its last state, as a terminal would
//! leave it on the screen. The saved file keeps the raw bytes.
//!
//! The bytes go through alacritty's `vte` parser, which keeps its state
//! between chunks: an escape sequence, a `\r\n` or a UTF-8 character split
//! across two reads comes out the same as in one. Only the current line is
//! modelled (a cursor column over its characters): `\r` goes back to its
//! start, printing overwrites, `\b` and the cursor moves within a line
//! (CSI `C`, `D`, `G`) move the column, erase-in-line (CSI `K`) clears;
//! moves to other lines (CSI `A`, the alternate screen) are ignored.
//! Bytes that are not UTF-8 show as U+FFFD.

/// A line longer than this many characters without a `\n` is passed on as
/// it is (and a later `\r` redraws only what follows), so memory stays
/// bounded for output that never ends a line.
pub const MAX_LINE_CHARS: usize = 64 * 1024;

/// The terminal view of one stream. Feed it with [`TerminalText::push`];
/// [`TerminalText::finish`] gives the last line.
pub struct TerminalText {
    parser: vte::Parser,
    line: Line,
}

impl std::fmt::Debug for TerminalText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalText")
            .field("line", &self.line)
            .finish_non_exhaustive()
    }
}

/// The line being drawn, and the text of the lines finished since the
/// last [`TerminalText::push`].
#[derive(Debug, Default)]
struct Line {
    cells: Vec<char>,
    col: usize,
    done: String,
}

impl Default for TerminalText {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalText {
    /// A view with nothing drawn yet.
    pub fn new() -> Self {
        Self {
            parser: vte::Parser::new(),
            line: Line::default(),
        }
    }

    /// Feeds `chunk` of raw output; returns the text of the lines it
    /// finished (each with its `\n`), possibly empty.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        self.parser.advance(&mut self.line, chunk);
        std::mem::take(&mut self.line.done)
    }

    /// The line still being drawn, as it shows now (the output ended
    /// without a `\n`); the view is then empty.
    pub fn finish(&mut self) -> String {
        let mut out = std::mem::take(&mut self.line.done);
        out.extend(self.line.cells.drain(..));
        self.line.col = 0;
        out
    }

    /// The terminal view of a whole `text`.
    pub fn of(text: &[u8]) -> String {
        let mut t = Self::new();
        let mut out = t.push(text);
        out.push_str(&t.finish());
        out
    }
}

impl Line {
    fn newline(&mut self) {
        self.done.extend(self.cells.drain(..));
        self.done.push('\n');
        self.col = 0;
    }
}

impl vte::Perform for Line {
    fn print(&mut self, c: char) {
        if self.col >= self.cells.len() {
            self.cells.resize(self.col, ' ');
            self.cells.push(c);
        } else {
            self.cells[self.col] = c;
        }
        self.col += 1;
        if self.cells.len() >= MAX_LINE_CHARS {
            self.done.extend(self.cells.drain(..));
            self.col = 0;
        }
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' | 0x0B | 0x0C => self.newline(),
            b'\r' => self.col = 0,
            b'\t' => self.print('\t'),
            0x08 => self.col = self.col.saturating_sub(1),
            _ => {}
        }
    }

    fn csi_dispatch(
        &mut self,
        params: &vte::Params,
        intermediates: &[u8],
        _ignore: bool,
        action: char,
    ) {
        if !intermediates.is_empty() {
            return;
        }
        let first = params
            .iter()
            .next()
            .and_then(|p| p.first().copied())
            .unwrap_or(0);
        let n = usize::from(first.max(1));
        match action {
            'K' => match first {
                0 => self.cells.truncate(self.col),
                1 => {
                    let end = (self.col + 1).min(self.cells.len());
                    self.cells[..end].iter_mut().for_each(|c| *c = ' ');
                }
                _ => self.cells.clear(),
            },
            'C' => self.col = self.col.saturating_add(n).min(MAX_LINE_CHARS - 1),
            'D' => self.col = self.col.saturating_sub(n),
            'G' => self.col = (n - 1).min(MAX_LINE_CHARS - 1),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A colored build log with a `\r` progress bar, CRLF line ends, a
    /// title, an erase-in-line, tabs and a multi-byte character.
    const RAW: &[u8] = b"\x1b]0;cargo build\x07\x1b[1m\x1b[32m   Compiling\x1b[0m lathe v0.1\r\n\
[=>   ] 20%\r[===> ] 70%\r[=====] 100%\n\
\x1b[31merror\x1b[0m: caf\xc3\xa9\tbad\r\n\
spinner |\x08/\x08-\x08\\ done\n\
old text here\r\x1b[2Knew\n\
tail without newline";

    const SHOWN: &str = "   Compiling lathe v0.1\n\
[=====] 100%\n\
error: caf\u{e9}\tbad\n\
spinner \\ done\n\
new\n\
tail without newline";

    #[test]
    fn output_reads_as_a_terminal_shows_it() {
        assert_eq!(TerminalText::of(RAW), SHOWN);
    }

    /// The stream arrives in reads of any size: an escape sequence, a
    /// `\r\n` or a UTF-8 character split between two reads comes out the
    /// same, at every split point and every pair of them.
    #[test]
    fn every_split_of_the_stream_reads_the_same() {
        for i in 0..=RAW.len() {
            for j in i..=RAW.len() {
                let mut t = TerminalText::new();
                let mut out = t.push(&RAW[..i]);
                out.push_str(&t.push(&RAW[i..j]));
                out.push_str(&t.push(&RAW[j..]));
                out.push_str(&t.finish());
                assert_eq!(out, SHOWN, "split at {i} and {j}");
            }
        }
    }

    #[test]
    fn a_line_without_end_is_passed_on_once_it_is_long() {
        let mut t = TerminalText::new();
        let long = "x".repeat(MAX_LINE_CHARS + 10);
        let out = t.push(long.as_bytes());
        assert_eq!(out.len(), MAX_LINE_CHARS);
        assert_eq!(t.finish(), "x".repeat(10));
    }

    #[test]
    fn bytes_that_are_not_utf8_show_as_replacement_characters() {
        assert_eq!(TerminalText::of(b"a\xffb\n"), "a\u{fffd}b\n");
    }
}
