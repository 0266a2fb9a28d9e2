//! Bytes ⇄ logical text (see the `editor` module docs for "logical text").
//!
//! `decode` detects the encoding (UTF-8, UTF-8 with BOM, UTF-16 with BOM,
//! else Latin-1 for text that is not UTF-8 but has no NUL bytes) and the line
//! ending; `encode` reverses it exactly, so an unchanged text round-trips to
//! the same bytes.

use std::fmt;

/// The file's line terminator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineEnding {
    /// `\n` (Neovim `fileformat=unix`).
    #[default]
    Lf,
    /// `\r\n` (Neovim `fileformat=dos`).
    CrLf,
}

/// The file's character encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// UTF-8.
    #[default]
    Utf8,
    /// ISO-8859-1: every byte is one char U+0000..U+00FF.
    Latin1,
    /// UTF-16 little endian (only with a BOM).
    Utf16Le,
    /// UTF-16 big endian (only with a BOM).
    Utf16Be,
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Latin1 => "Latin-1",
            Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
        })
    }
}

/// How logical text maps to a file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextFormat {
    /// Line terminator used when encoding.
    pub line_ending: LineEnding,
    /// `true` when the file starts with a byte-order mark.
    pub bom: bool,
    /// Character encoding.
    pub encoding: Encoding,
}

/// Why bytes are not text lathe can show or edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotText {
    /// What the bytes look like: `PNG image`, `binary`, …
    pub kind: String,
}

/// Common prefix and suffix of `a` and `b` in bytes, both on char boundaries
/// and never overlapping: returns `(prefix_len, a_mid_len, b_mid_len)` where
/// `a = a[..prefix] + a_mid + suffix` and likewise for `b`.
pub fn common_affixes(a: &str, b: &str) -> (usize, usize, usize) {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let mut prefix = ab.iter().zip(bb).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(prefix) || !b.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let max_suffix = (ab.len() - prefix).min(bb.len() - prefix);
    let mut suffix = ab
        .iter()
        .rev()
        .zip(bb.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    while !a.is_char_boundary(ab.len() - suffix) || !b.is_char_boundary(bb.len() - suffix) {
        suffix -= 1;
    }
    (
        prefix,
        ab.len() - prefix - suffix,
        bb.len() - prefix - suffix,
    )
}
