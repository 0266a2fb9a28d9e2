//! The output of one command: the head-and-tail [`OutputCap`] the model
//! reads, plus every byte in a file once the output is longer than the cap
//! (nothing is dropped, and nobody is asked to run a command
//! twice to see its middle).
//!
//! Memory stays bounded however much a command prints: until the output is
//! known to be too long it is held in `pending` (at most `threshold`
//! bytes, four bytes per shown character, so anything longer is surely
//! cut); past that the file is created, `pending` written to it, and every
//! further chunk goes straight to the file. Output that fits is never
//! written anywhere. Writes are plain blocking `write(2)`s of at most one
//! read's chunk (16 KiB) to the page cache.
//!
//! Disk is bounded too: one command's file stops growing at
//! [`MAX_SAVED_OUTPUT_BYTES`] (`yes` under a two-minute timeout would
//! otherwise write tens of gigabytes into the state directory); the result
//! then says how much of the output the file holds.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::output_cap::{CappedText, OutputCap};
use super::terminal::TerminalText;

/// The most bytes of one command's output kept in its file (1 GiB).
pub const MAX_SAVED_OUTPUT_BYTES: u64 = 1 << 30;

/// Where the full output ended up, for the result text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// Nothing was cut, so no file was needed.
    NotNeeded,
    /// Every byte is in this file.
    File(PathBuf),
    /// The first `saved_bytes` bytes are in this file; the output went on
    /// past [`MAX_SAVED_OUTPUT_BYTES`] and the rest was not kept.
    Partial {
        /// The file.
        path: PathBuf,
        /// How many bytes it holds.
        saved_bytes: u64,
    },
    /// The file could not be written; `error` is the OS error text.
    Failed {
        /// The file that was tried.
        path: PathBuf,
        /// Why it failed.
        error: String,
    },
}

/// A capped view of the output plus the full output in a file when cut.
#[derive(Debug)]
pub struct OutputSink {
    /// What a terminal shows of the output: what `cap` gets (the file
    /// gets the raw bytes).
    terminal: TerminalText,
    cap: OutputCap,
    pending: Vec<u8>,
    threshold: usize,
    path: PathBuf,
    file: Option<File>,
    error: Option<String>,
    /// Bytes written to `file` so far.
    written: u64,
    /// The file stops growing at this many bytes.
    limit: u64,
}

impl OutputSink {
    /// A sink showing `head_chars` + `tail_chars` characters that saves the
    /// full output to `path` (its directory is created when needed) once
    /// it is longer than that.
    pub fn new(head_chars: usize, tail_chars: usize, path: PathBuf) -> Self {
        Self {
            terminal: TerminalText::new(),
            cap: OutputCap::new(head_chars, tail_chars),
            pending: Vec::new(),
            threshold: head_chars.saturating_add(tail_chars).saturating_mul(4),
            path,
            file: None,
            error: None,
            written: 0,
            limit: MAX_SAVED_OUTPUT_BYTES,
        }
    }

    /// The same sink with the file bounded at `limit` bytes instead of
    /// [`MAX_SAVED_OUTPUT_BYTES`] (tests).
    pub fn with_file_limit(mut self, limit: u64) -> Self {
        self.limit = limit;
        self
    }

    /// A sink that writes every byte to `path` from the start (background
    /// commands, whose output is read from the file later). The file is
    /// created now; errors: creating the directory or the file.
    pub fn always_file(
        head_chars: usize,
        tail_chars: usize,
        path: PathBuf,
    ) -> std::io::Result<Self> {
        let file = create(&path)?;
        Ok(Self {
            file: Some(file),
            ..Self::new(head_chars, tail_chars, path)
        })
    }

    /// The file the full output goes to (it may not exist yet).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a chunk of raw output: as a terminal shows it to the cap,
    /// as it is to the file.
    pub fn push(&mut self, chunk: &[u8]) {
        let shown = self.terminal.push(chunk);
        self.cap.push(shown.as_bytes());
        if self.error.is_some() {
            return;
        }
        if self.file.is_some() {
            self.write(chunk);
            return;
        }
        self.pending.extend_from_slice(chunk);
        if self.pending.len() > self.threshold {
            self.open_and_flush();
        }
    }

    /// Bytes held in memory (cap plus pending), for the bounded-memory test.
    pub fn held_bytes(&self) -> usize {
        self.cap.held_bytes() + self.pending.len()
    }

    /// The capped text and where the full output is. When text was cut but
    /// the file was not written yet, it is written now.
    pub fn finish(&mut self) -> (CappedText, Saved) {
        let last = self.terminal.finish();
        self.cap.push(last.as_bytes());
        let text = self.cap.finish();
        if !text.is_complete() && self.file.is_none() && self.error.is_none() {
            self.open_and_flush();
        }
        if let Some(f) = &mut self.file {
            if let Err(e) = f.flush() {
                self.error = Some(e.to_string());
            }
        }
        let saved = match (&self.error, &self.file) {
            (Some(error), _) => Saved::Failed {
                path: self.path.clone(),
                error: error.clone(),
            },
            (None, Some(_)) if !text.is_complete() && self.written >= self.limit => {
                Saved::Partial {
                    path: self.path.clone(),
                    saved_bytes: self.written,
                }
            }
            (None, Some(_)) if !text.is_complete() => Saved::File(self.path.clone()),
            _ => Saved::NotNeeded,
        };
        (text, saved)
    }

    fn open_and_flush(&mut self) {
        match create(&self.path) {
            Ok(file) => {
                self.file = Some(file);
                let pending = std::mem::take(&mut self.pending);
                self.write(&pending);
            }
            Err(e) => {
                self.error = Some(e.to_string());
                self.pending = Vec::new();
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        let room = usize::try_from(self.limit.saturating_sub(self.written)).unwrap_or(usize::MAX);
        let bytes = &bytes[..bytes.len().min(room)];
        if bytes.is_empty() {
            return;
        }
        if let Some(f) = &mut self.file {
            self.written += bytes.len() as u64;
            if let Err(e) = f.write_all(bytes) {
                self.error = Some(e.to_string());
                self.file = None;
            }
        }
    }
}

/// Creates `path` (and its directory), truncating an old file.
fn create(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    File::create(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_writes_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/x.log");
        let mut sink = OutputSink::new(10, 10, path.clone());
        sink.push(b"hello\n");
        let (text, saved) = sink.finish();
        assert_eq!(text.head, "hello\n");
        assert_eq!(saved, Saved::NotNeeded);
        assert!(!path.exists());
    }

    #[test]
    fn cut_output_is_saved_in_full_with_bounded_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/x.log");
        let mut sink = OutputSink::new(100, 100, path.clone());
        let mut all = Vec::new();
        for i in 0..100_000 {
            let line = format!("line {i}\n");
            sink.push(line.as_bytes());
            all.extend_from_slice(line.as_bytes());
            assert!(sink.held_bytes() <= 800 + 600 + 20, "{}", sink.held_bytes());
        }
        let (text, saved) = sink.finish();
        assert!(!text.is_complete());
        assert_eq!(saved, Saved::File(path.clone()));
        assert_eq!(std::fs::read(&path).unwrap(), all);
    }

    #[test]
    fn cut_below_the_threshold_is_saved_at_finish() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let mut sink = OutputSink::new(3, 3, path.clone());
        sink.push(b"0123456789");
        let (text, saved) = sink.finish();
        assert_eq!(text.omitted_bytes, 4);
        assert_eq!(saved, Saved::File(path.clone()));
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789");
    }

    #[test]
    fn unwritable_place_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        let mut sink = OutputSink::new(3, 3, blocker.join("x.log"));
        sink.push(b"0123456789");
        let (_, saved) = sink.finish();
        assert!(matches!(saved, Saved::Failed { .. }), "{saved:?}");
    }

    #[test]
    fn the_file_stops_growing_at_its_limit_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let mut sink = OutputSink::new(3, 3, path.clone()).with_file_limit(25);
        for _ in 0..10 {
            sink.push(b"0123456789");
        }
        let (text, saved) = sink.finish();
        assert_eq!(text.total_bytes, 100);
        assert_eq!(
            saved,
            Saved::Partial {
                path: path.clone(),
                saved_bytes: 25
            }
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789012345678901234");
    }
}
