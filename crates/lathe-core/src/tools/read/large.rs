//! Read of a file too large to load whole (over
//! [`MAX_FILE_BYTES`](crate::editor::MAX_FILE_BYTES), e.g. a Bash output
//! saved under `<state>/bash-output/`, which may reach 1 GiB): with
//! `offset`/`limit` (Claude Code's contract: 1-based first line, line count)
//! the file is streamed to the wanted lines with bounded memory.
//!
//! [`scan`] reads through a `BufRead` one buffer at a time: lines before
//! `first` are only counted (`memchr`), the wanted lines are kept up to
//! [`KEEP_LINE_BYTES`] each (a longer line is cut as Read cuts every line,
//! its full length still counted), and after the page the rest is counted so
//! the result can say how many lines the file has. Memory is the reader's
//! buffer, one kept line and the page (at most [`MAX_OUTPUT_BYTES`]),
//! whatever the file holds. Time is bounded by a [`ScanBudget`]: at most
//! [`MAX_SCAN_BYTES`] bytes and [`MAX_SCAN_TIME`] per call, so a 10 GB
//! sparse file (or a 1 GiB single line) answers within seconds, saying how
//! far it looked.
//!
//! The text is read as UTF-8 (invalid bytes become U+FFFD), a UTF-8 BOM is
//! dropped and a `\r` before `\n` is not shown; a file whose first
//! [`SNIFF_BYTES`] hold a NUL byte is binary (as `git` decides). Nothing of
//! the file is kept after the call: the model saw only a part, so
//! `FileState` records no read and Edit/Write refuse such a file from its
//! size (`FILE_TOO_LARGE`).

use std::fs;
use std::io::{self, BufRead, BufReader, Read as _};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::MAX_OUTPUT_BYTES;
use crate::text::fill;
use crate::tools::support::numbered::{LINE_CUT_MARKER, MAX_LINE_CHARS};

/// Most bytes one Read scans in a file it streams (1 GiB: the largest Bash
/// output lathe saves, `MAX_SAVED_OUTPUT_BYTES`, can be paged to its end).
pub const MAX_SCAN_BYTES: u64 = 1 << 30;
/// Longest one Read scans a file it streams; past it the result says how
/// far it got.
pub const MAX_SCAN_TIME: Duration = Duration::from_secs(2);
/// Bytes kept of one shown line: enough for [`MAX_LINE_CHARS`] chars of
/// UTF-8 (4 bytes each); the rest of the line is counted, not kept.
pub const KEEP_LINE_BYTES: usize = MAX_LINE_CHARS * 4;
/// Leading bytes checked for a NUL byte to tell a binary file.
pub const SNIFF_BYTES: usize = 8000;
/// Size of the reader's buffer, in bytes.
const BUFFER_BYTES: usize = 64 * 1024;

/// How far one scan may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanBudget {
    /// Most bytes read.
    pub bytes: u64,
    /// Longest time spent.
    pub time: Duration,
}

impl ScanBudget {
    /// [`MAX_SCAN_BYTES`] and [`MAX_SCAN_TIME`].
    pub const DEFAULT: ScanBudget = ScanBudget {
        bytes: MAX_SCAN_BYTES,
        time: MAX_SCAN_TIME,
    };
}

/// How a scan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The end of the file: it has `total` lines.
    Eof {
        /// Lines in the file (a final `\n` ends the last line).
        total: usize,
    },
    /// The budget ran out (or the call was cancelled) after `scanned`
    /// bytes, in which `lines` lines had started.
    Budget {
        /// Bytes read.
        scanned: u64,
        /// Lines begun within them (at least that many in the file).
        lines: usize,
    },
}

/// What [`scan`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// The shown lines in `cat -n` form joined by `\n`; empty when `first`
    /// was not reached.
    pub text: String,
    /// Lines shown (from `first`).
    pub shown: usize,
    /// Shown lines cut at [`MAX_LINE_CHARS`].
    pub cut: usize,
    /// How the scan ended.
    pub ended: Ended,
    /// Most bytes of one line held at once (at most [`KEEP_LINE_BYTES`]):
    /// tests check memory stays bounded.
    pub most_kept: usize,
}

/// One `cat -n` entry for line `number` whose first bytes are `kept` and
/// which has `chars` chars in all (`\r` excluded); `true` when cut.
fn entry(number: usize, kept: &[u8], chars: u64) -> (String, bool) {
    let text = String::from_utf8_lossy(kept);
    let mut out = format!("{number:>6}\t");
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => {
            out.push_str(&text[..end]);
            out.push_str(&fill(LINE_CUT_MARKER, &[("total", &chars.to_string())]));
            (out, true)
        }
        None if chars > MAX_LINE_CHARS as u64 => {
            out.push_str(&text);
            out.push_str(&fill(LINE_CUT_MARKER, &[("total", &chars.to_string())]));
            (out, true)
        }
        None => {
            out.push_str(&text);
            (out, false)
        }
    }
}

/// Chars in UTF-8 `bytes` (bytes that do not continue a char: not
/// `0b10xx_xxxx`), eight bytes at a time.
fn count_chars(bytes: &[u8]) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let words = bytes.chunks_exact(8);
    let rest = words.remainder();
    let mut continuing = 0u64;
    for word in words {
        let mut b = [0u8; 8];
        b.copy_from_slice(word);
        let w = u64::from_ne_bytes(b);
        // Bit 7 of each byte set when bit 7 is 1 and bit 6 is 0.
        continuing += u64::from((w & !(w << 1) & HIGH).count_ones());
    }
    continuing += rest.iter().filter(|&&b| b & 0xC0 == 0x80).count() as u64;
    bytes.len() as u64 - continuing
}

/// `\n` bytes in `bytes`, eight at a time (fast without optimisation too:
/// a debug build counts far faster than per-match iteration).
fn count_newlines(bytes: &[u8]) -> usize {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const NEWLINES: u64 = 0x0A0A_0A0A_0A0A_0A0A;
    let words = bytes.chunks_exact(8);
    let rest = words.remainder();
    let mut n = 0usize;
    for word in words {
        let mut b = [0u8; 8];
        b.copy_from_slice(word);
        // Bytes equal to `\n` become 0; a byte's high bit of `t` is clear
        // exactly when the byte is 0.
        let x = u64::from_ne_bytes(b) ^ NEWLINES;
        let t = ((x & LOW7).wrapping_add(LOW7)) | x;
        n += (!t & !LOW7).count_ones() as usize;
    }
    n + rest.iter().filter(|&&b| b == b'\n').count()
}

/// The line being shown.
#[derive(Default)]
struct Line {
    kept: Vec<u8>,
    chars: u64,
    /// The last byte seen was `\r` (dropped when the line ends there).
    cr: bool,
    started: bool,
}

impl Line {
    fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.started = true;
        if self.cr {
            // The `\r` held back was inside the line after all.
            self.keep(b"\r");
            self.chars += 1;
        }
        let (body, cr) = match bytes.strip_suffix(b"\r") {
            Some(body) => (body, true),
            None => (bytes, false),
        };
        self.cr = cr;
        self.keep(body);
        self.chars += count_chars(body);
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = KEEP_LINE_BYTES.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// Scans `reader` from its start for lines `first..first + limit` (1-based,
/// `first` ≥ 1, `limit` ≥ 1), within `budget`, stopping early when
/// `cancelled()` says so (checked once per buffer). The page stops before
/// its text would pass [`MAX_OUTPUT_BYTES`] (at least one line is shown).
/// `first` not reached: `shown` is 0 and `ended` says why. Errors: the
/// reader's.
pub fn scan(
    reader: &mut impl BufRead,
    first: usize,
    limit: usize,
    budget: ScanBudget,
    cancelled: &dyn Fn() -> bool,
) -> io::Result<Scanned> {
    let started = Instant::now();
    let mut out = String::new();
    let (mut shown, mut cut, mut most_kept) = (0usize, 0usize, 0usize);
    // `line`: the 1-based number of the line the next byte belongs to.
    let mut line = 1usize;
    let mut scanned = 0u64;
    let mut current = Line::default();
    let mut page_done = false;
    let mut at_line_start = true;
    let mut bom_checked = false;
    loop {
        if scanned >= budget.bytes || started.elapsed() > budget.time || cancelled() {
            let lines = if at_line_start { line - 1 } else { line };
            return Ok(Scanned {
                text: out,
                shown,
                cut,
                ended: Ended::Budget { scanned, lines },
                most_kept,
            });
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let room = usize::try_from(budget.bytes - scanned).unwrap_or(usize::MAX);
        let mut chunk = &buf[..buf.len().min(room)];
        let taken = chunk.len();
        if !bom_checked {
            bom_checked = true;
            if let Some(rest) = chunk.strip_prefix(b"\xEF\xBB\xBF") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            let wanted = !page_done && line >= first;
            if !wanted {
                // Before the page (or after it): count lines only.
                let newlines = count_newlines(chunk);
                if page_done || line + newlines < first {
                    line += newlines;
                    at_line_start = chunk.last() == Some(&b'\n');
                    chunk = &[];
                    continue;
                }
                // `first` starts in this chunk: find where.
                let need = first - line;
                let mut seen = 0;
                let mut reached = None;
                for i in memchr::memchr_iter(b'\n', chunk) {
                    seen += 1;
                    if seen == need {
                        reached = Some(i);
                        break;
                    }
                }
                match reached {
                    Some(i) => {
                        line = first;
                        at_line_start = true;
                        chunk = &chunk[i + 1..];
                    }
                    None => {
                        line += seen;
                        at_line_start = chunk.last() == Some(&b'\n');
                        chunk = &[];
                    }
                }
                continue;
            }
            match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    current.push(&chunk[..i]);
                    most_kept = most_kept.max(current.kept.len());
                    let (text, was_cut) = entry(line, &current.kept, current.chars);
                    if shown > 0 && out.len() + 1 + text.len() > MAX_OUTPUT_BYTES {
                        page_done = true;
                    } else {
                        if shown > 0 {
                            out.push('\n');
                        }
                        out.push_str(&text);
                        shown += 1;
                        cut += usize::from(was_cut);
                        page_done = shown >= limit;
                    }
                    current = Line::default();
                    line += 1;
                    at_line_start = true;
                    chunk = &chunk[i + 1..];
                }
                None => {
                    current.push(chunk);
                    most_kept = most_kept.max(current.kept.len());
                    at_line_start = false;
                    chunk = &[];
                }
            }
        }
        reader.consume(taken);
        scanned += taken as u64;
    }
    // The end of the file: a last line without `\n` still counts.
    let total = if at_line_start { line - 1 } else { line };
    if !page_done && line >= first && (current.started || current.cr) && shown < limit {
        if current.cr {
            current.kept.push(b'\r');
            current.chars += 1;
        }
        let (text, was_cut) = entry(line, &current.kept, current.chars);
        if shown == 0 || out.len() + 1 + text.len() <= MAX_OUTPUT_BYTES {
            if shown > 0 {
                out.push('\n');
            }
            out.push_str(&text);
            shown += 1;
            cut += usize::from(was_cut);
        }
    }
    Ok(Scanned {
        text: out,
        shown,
        cut,
        ended: Ended::Eof { total },
        most_kept,
    })
}

/// What [`open`] found at the start of the file.
#[derive(Debug)]
pub enum Opened {
    /// Text (no NUL byte in the first [`SNIFF_BYTES`]): scan it.
    Text(BufReader<fs::File>),
    /// A NUL byte in the first [`SNIFF_BYTES`]: the kind from its magic
    /// bytes ([`crate::editor::codec::sniff_kind`]).
    Binary(&'static str),
}

/// Opens the regular file `path` for [`scan`] with `O_NONBLOCK` and checks
/// it is still a regular file on the handle (a path swapped for a FIFO
/// cannot block); looks at its first [`SNIFF_BYTES`] bytes. Errors: the
/// OS's, and `InvalidInput` when the handle is not a regular file.
pub fn open(path: &Path) -> io::Result<Opened> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut reader = BufReader::with_capacity(BUFFER_BYTES, file);
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    reader
        .get_mut()
        .by_ref()
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)?;
    if memchr::memchr(0, &head).is_some() {
        return Ok(Opened::Binary(crate::editor::codec::sniff_kind(&head)));
    }
    let mut file = reader.into_inner();
    io::Seek::rewind(&mut file)?;
    Ok(Opened::Text(BufReader::with_capacity(BUFFER_BYTES, file)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Cursor;

    /// No time limit that a loaded test machine could reach: results
    /// must not depend on its speed.
    pub(crate) const UNTIMED: ScanBudget = ScanBudget {
        bytes: MAX_SCAN_BYTES,
        time: Duration::from_secs(600),
    };

    fn page(text: &[u8], first: usize, limit: usize) -> Scanned {
        let mut r = BufReader::with_capacity(7, Cursor::new(text.to_vec()));
        scan(&mut r, first, limit, UNTIMED, &|| false).expect("scan")
    }

    #[test]
    fn counts_newlines_as_a_byte_search_does() {
        let text = "a\n\n\nbc\n\u{e9}\n\u{8a}\n".repeat(5) + "\n\n\nx";
        for start in 0..8 {
            let bytes = &text.as_bytes()[start..];
            let expected = bytes.iter().filter(|&&b| b == b'\n').count();
            assert_eq!(count_newlines(bytes), expected, "{start}");
        }
        assert_eq!(
            count_newlines(&[0x8A, 0x0A, 0xFF, 0x0B, 0x09, 0x0A, 0, 0x8A, 0x0A]),
            3
        );
    }

    #[test]
    fn counts_chars_as_utf8_does() {
        for text in [
            "",
            "abc",
            "héllo wörld, ça va? 日本語テキスト 🎉🎉",
            &"é".repeat(37),
        ] {
            assert_eq!(
                count_chars(text.as_bytes()),
                text.chars().count() as u64,
                "{text}"
            );
        }
    }

    #[test]
    fn pages_like_read_renders_a_loaded_text() {
        let text = "a\nb\r\nc\n";
        let s = page(text.as_bytes(), 2, 1);
        assert_eq!(s.text, "     2\tb");
        assert_eq!((s.shown, s.ended), (1, Ended::Eof { total: 3 }));
        // The same as the loaded path shows (CRLF dropped there by the codec).
        let (loaded, _) = super::super::render("a\nb\nc\n", 2, 1);
        assert!(loaded.starts_with(&s.text));
        let s = page(b"\xEF\xBB\xBFone\ntwo", 1, 10);
        assert_eq!(s.text, "     1\tone\n     2\ttwo");
        assert_eq!(s.ended, Ended::Eof { total: 2 });
        let s = page(b"x\r", 1, 1);
        assert_eq!(s.text, "     1\tx\r");
    }

    #[test]
    fn offset_past_the_end_shows_nothing_and_counts() {
        let s = page(b"1\n2\n3\n", 4, 2);
        assert_eq!((s.shown, s.text.as_str()), (0, ""));
        assert_eq!(s.ended, Ended::Eof { total: 3 });
        assert_eq!(page(b"", 1, 1).ended, Ended::Eof { total: 0 });
    }

    #[test]
    fn a_long_line_is_cut_and_only_its_head_is_kept() {
        // 50 MiB in one line, then a short one: never held whole.
        let long = io::repeat(b'x').take(50 << 20);
        let tail = Cursor::new(b"\nshort\n".to_vec());
        let mut r = BufReader::new(long.chain(tail));
        let s = scan(&mut r, 1, 2, UNTIMED, &|| false).expect("scan");
        assert!(s.most_kept <= KEEP_LINE_BYTES, "{}", s.most_kept);
        assert_eq!(s.cut, 1);
        let expected = format!(
            "     1\t{}… [line cut: {} chars in full]\n     2\tshort",
            "x".repeat(MAX_LINE_CHARS),
            50 << 20
        );
        assert_eq!(s.text, expected);
        assert_eq!(s.ended, Ended::Eof { total: 2 });
    }

    #[test]
    fn the_byte_budget_stops_the_scan_and_says_how_far() {
        let text = "line\n".repeat(1000);
        let budget = ScanBudget {
            bytes: 100,
            time: UNTIMED.time,
        };
        let mut r = BufReader::with_capacity(16, Cursor::new(text.clone().into_bytes()));
        let s = scan(&mut r, 500, 5, budget, &|| false).expect("scan");
        assert_eq!(s.shown, 0);
        assert_eq!(
            s.ended,
            Ended::Budget {
                scanned: 100,
                lines: 20
            }
        );
        // A page inside the budget, then counting stops at it.
        let mut r = BufReader::with_capacity(16, Cursor::new(text.into_bytes()));
        let s = scan(&mut r, 2, 2, budget, &|| false).expect("scan");
        assert_eq!(s.text, "     2\tline\n     3\tline");
        assert_eq!(
            s.ended,
            Ended::Budget {
                scanned: 100,
                lines: 20
            }
        );
        // Cancelled: stops at once.
        let mut r = Cursor::new(b"a\n".to_vec());
        let s = scan(&mut r, 1, 1, ScanBudget::DEFAULT, &|| true).expect("scan");
        assert_eq!(
            s.ended,
            Ended::Budget {
                scanned: 0,
                lines: 0
            }
        );
    }

    #[test]
    fn the_output_budget_stops_the_page() {
        let text = format!("{}\n", "y".repeat(1500)).repeat(200);
        let s = page(text.as_bytes(), 1, 2000);
        let (loaded, shown) = super::super::render(&text, 1, 2000);
        assert_eq!(s.shown, shown);
        assert!(loaded.starts_with(&s.text));
        assert_eq!(s.ended, Ended::Eof { total: 200 });
    }

    #[test]
    fn open_tells_binary_from_text() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("b");
        std::fs::write(&bin, b"\x7FELF\x02\0\0").expect("write");
        assert!(matches!(open(&bin), Ok(Opened::Binary("ELF executable"))));
        let txt = dir.path().join("t");
        std::fs::write(&txt, b"hello\n").expect("write");
        let Ok(Opened::Text(mut r)) = open(&txt) else {
            panic!("text")
        };
        let s = scan(&mut r, 1, 1, UNTIMED, &|| false).expect("scan");
        assert_eq!(s.text, "     1\thello");
    }
}
