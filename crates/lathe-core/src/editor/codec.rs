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
    let mut prefix = common_prefix_len(ab, bb);
    while !a.is_char_boundary(prefix) || !b.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let max_suffix = (ab.len() - prefix).min(bb.len() - prefix);
    let mut suffix = common_suffix_len(&ab[ab.len() - max_suffix..], &bb[bb.len() - max_suffix..]);
    while !a.is_char_boundary(ab.len() - suffix) || !b.is_char_boundary(bb.len() - suffix) {
        suffix -= 1;
    }
    (
        prefix,
        ab.len() - prefix - suffix,
        bb.len() - prefix - suffix,
    )
}

/// Bytes compared at a time by [`common_prefix_len`] and
/// [`common_suffix_len`] (each block is one `memcmp`).
const AFFIX_BLOCK: usize = 256;

/// Length of the longest common prefix of `a` and `b`, block by block
/// (`memcmp`), then byte by byte in the first block that differs.
fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + AFFIX_BLOCK <= n && a[i..i + AFFIX_BLOCK] == b[i..i + AFFIX_BLOCK] {
        i += AFFIX_BLOCK;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Length of the longest common suffix of `a` and `b`, as
/// [`common_prefix_len`] from the end.
fn common_suffix_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (ea, eb) = (a.len(), b.len());
    let mut i = 0;
    while i + AFFIX_BLOCK <= n && a[ea - i - AFFIX_BLOCK..ea - i] == b[eb - i - AFFIX_BLOCK..eb - i]
    {
        i += AFFIX_BLOCK;
    }
    i + a[..ea - i]
        .iter()
        .rev()
        .zip(b[..eb - i].iter().rev())
        .take(n - i)
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many `\n` bytes `s` holds. `bytecount` (ripgrep's line counter)
/// counts 16-32 bytes at a time with SSE2/AVX2 picked at run time: a plain
/// byte filter compiles to code about 20× slower on the baseline x86-64
/// target (1 ms for a 2.6 MB text), and an Edit of a large buffer counts
/// lines several times (its span, its snippet).
pub fn count_newlines(s: &str) -> usize {
    count_byte_newlines(s.as_bytes())
}

/// [`count_newlines`] of raw bytes.
pub fn count_byte_newlines(bytes: &[u8]) -> usize {
    bytecount::count(bytes, b'\n')
}

/// The new text cannot be written in the file's encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unencodable {
    /// The encoding that failed.
    pub encoding: Encoding,
    /// Which character failed and where, e.g. `'→' (U+2192) on line 3`.
    pub detail: String,
}

const UTF8_BOM: &[u8] = &[0xEF, 0xBB, 0xBF];
const UTF16LE_BOM: &[u8] = &[0xFF, 0xFE];
const UTF16BE_BOM: &[u8] = &[0xFE, 0xFF];

/// MIME type of an image format the Messages API accepts in `image` blocks
/// (`image/png`, `image/jpeg`, `image/gif`, `image/webp`), detected from the
/// magic bytes at the start of `bytes`; `None` for anything else.
pub fn image_media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A human name for a binary format from its magic bytes (`PNG image`,
/// `PDF document`, `ZIP archive`, …), `binary` when unknown.
pub fn sniff_kind(bytes: &[u8]) -> &'static str {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (&[0xFF, 0xD8, 0xFF], "JPEG image"),
        (b"GIF87a", "GIF image"),
        (b"GIF89a", "GIF image"),
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "ZIP archive"),
        (&[0x1F, 0x8B], "gzip archive"),
        (b"\x7FELF", "ELF executable"),
        (b"\0asm", "WebAssembly module"),
        (b"SQLite format 3\0", "SQLite database"),
    ];
    if image_media_type(bytes) == Some("image/webp") {
        return "WebP image";
    }
    MAGIC
        .iter()
        .find(|(magic, _)| bytes.starts_with(magic))
        .map_or("binary", |(_, kind)| kind)
}

/// Decodes a file's bytes into logical text and the [`TextFormat`] that
/// [`encode`] needs to give the same bytes back.
///
/// Detection, in order: a UTF-8 BOM (`EF BB BF`) → UTF-8; a UTF-16 BOM
/// (`FF FE` / `FE FF`) → UTF-16 LE/BE (odd length or unpaired surrogates are
/// not text); a known binary magic number (PNG, PDF, …) → not text; valid
/// UTF-8 without NUL bytes → UTF-8; bytes without NUL and without control
/// characters other than `\t \n \v \f \r`, ESC and backspace → Latin-1 (every
/// byte one char, so the bytes survive exactly). Anything else is
/// [`NotText`] with the kind from [`sniff_kind`]. The BOM is not part of the
/// text. The line ending is CRLF when the text has at least one `\n` and every
/// `\n` follows a `\r`; those `\r`s are then dropped from the text.
pub fn decode(bytes: &[u8]) -> Result<(String, TextFormat), NotText> {
    let not_text = |kind: &str| NotText {
        kind: kind.to_string(),
    };
    let (raw, bom, encoding) = if let Some(rest) = bytes.strip_prefix(UTF8_BOM) {
        let s = std::str::from_utf8(rest)
            .map_err(|_| not_text("invalid UTF-8 after a UTF-8 byte-order mark"))?;
        (s.to_string(), true, Encoding::Utf8)
    } else if let Some(rest) = bytes.strip_prefix(UTF16LE_BOM) {
        (
            decode_utf16(rest, u16::from_le_bytes).ok_or_else(|| not_text("invalid UTF-16LE"))?,
            true,
            Encoding::Utf16Le,
        )
    } else if let Some(rest) = bytes.strip_prefix(UTF16BE_BOM) {
        (
            decode_utf16(rest, u16::from_be_bytes).ok_or_else(|| not_text("invalid UTF-16BE"))?,
            true,
            Encoding::Utf16Be,
        )
    } else {
        let kind = sniff_kind(bytes);
        if kind != "binary" || bytes.contains(&0) {
            return Err(not_text(kind));
        }
        match std::str::from_utf8(bytes) {
            Ok(s) => (s.to_string(), false, Encoding::Utf8),
            Err(_)
                if bytes
                    .iter()
                    .all(|&b| b >= 0x20 || b"\t\n\x0b\x0c\r\x1b\x08".contains(&b)) =>
            {
                (
                    bytes.iter().map(|&b| char::from(b)).collect(),
                    false,
                    Encoding::Latin1,
                )
            }
            Err(_) => return Err(not_text("binary")),
        }
    };
    let crlf = raw.contains('\n') && raw.matches('\n').count() == raw.matches("\r\n").count();
    let (text, line_ending) = if crlf {
        (raw.replace("\r\n", "\n"), LineEnding::CrLf)
    } else {
        (raw, LineEnding::Lf)
    };
    Ok((
        text,
        TextFormat {
            line_ending,
            bom,
            encoding,
        },
    ))
}

fn decode_utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> Option<String> {
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    let units: Vec<u16> = bytes.chunks_exact(2).map(|c| unit([c[0], c[1]])).collect();
    String::from_utf16(&units).ok()
}

/// Encodes logical `text` into file bytes with `format`: `\n` becomes `\r\n`
/// for CRLF, the BOM is prepended when `format.bom` (UTF-16 always gets one),
/// then the text is encoded. The exact inverse of [`decode`] for text that
/// decode produced.
///
/// Errors: [`Unencodable`] when `format` is Latin-1 and `text` has a char above
/// U+00FF (nothing is lost silently: no replacement characters, ever).
pub fn encode(text: &str, format: &TextFormat) -> Result<Vec<u8>, Unencodable> {
    let text = match format.line_ending {
        LineEnding::Lf => std::borrow::Cow::Borrowed(text),
        LineEnding::CrLf => std::borrow::Cow::Owned(text.replace('\n', "\r\n")),
    };
    let mut out = Vec::with_capacity(text.len() + 3);
    match format.encoding {
        Encoding::Utf8 => {
            if format.bom {
                out.extend_from_slice(UTF8_BOM);
            }
            out.extend_from_slice(text.as_bytes());
        }
        Encoding::Latin1 => {
            for (line_no, line) in text.split('\n').enumerate() {
                if line_no > 0 {
                    out.push(b'\n');
                }
                for c in line.chars() {
                    let byte = u8::try_from(u32::from(c)).map_err(|_| Unencodable {
                        encoding: Encoding::Latin1,
                        detail: format!("'{c}' (U+{:04X}) on line {}", u32::from(c), line_no + 1),
                    })?;
                    out.push(byte);
                }
            }
        }
        Encoding::Utf16Le | Encoding::Utf16Be => {
            let le = format.encoding == Encoding::Utf16Le;
            out.extend_from_slice(if le { UTF16LE_BOM } else { UTF16BE_BOM });
            for unit in text.encode_utf16() {
                out.extend_from_slice(&if le {
                    unit.to_le_bytes()
                } else {
                    unit.to_be_bytes()
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectorised newline count agrees with a plain byte count at every
    /// length and offset around its 16-byte lanes and 4080-byte blocks,
    /// also with 255+ matches in one lane and bytes that differ from `\n`
    /// only in their high bits.
    #[test]
    fn count_newlines_matches_a_plain_count() {
        let mut bytes = Vec::new();
        for i in 0..20_000u32 {
            bytes.push(match i % 7 {
                0 | 3 => b'\n',
                1 => 0x8A,
                2 => 0x0B,
                _ => b'x',
            });
        }
        bytes.extend(std::iter::repeat_n(b'\n', 9000));
        let plain = |b: &[u8]| b.iter().filter(|&&x| x == b'\n').count();
        for start in [0, 1, 7, 15, 16, 17, 4079, 4080, 4081] {
            for len in [0, 1, 8, 15, 16, 17, 31, 4080, 4097, 8191, 20_000] {
                let end = (start + len).min(bytes.len());
                let b = &bytes[start..end];
                assert_eq!(count_byte_newlines(b), plain(b), "{start}+{len}");
            }
        }
        assert_eq!(count_byte_newlines(&bytes), plain(&bytes));
        assert_eq!(count_newlines("a\nb\n\n"), 3);
    }

    /// The block-wise affixes agree with a byte-by-byte reference on texts
    /// around the block size, with the change at the start, middle and end,
    /// and never split a UTF-8 character.
    #[test]
    fn common_affixes_match_the_byte_by_byte_reference() {
        fn reference(a: &str, b: &str) -> (usize, usize, usize) {
            let (ab, bb) = (a.as_bytes(), b.as_bytes());
            let mut p = ab.iter().zip(bb).take_while(|(x, y)| x == y).count();
            while !a.is_char_boundary(p) || !b.is_char_boundary(p) {
                p -= 1;
            }
            let max = (ab.len() - p).min(bb.len() - p);
            let mut s = ab
                .iter()
                .rev()
                .zip(bb.iter().rev())
                .take(max)
                .take_while(|(x, y)| x == y)
                .count();
            while !a.is_char_boundary(ab.len() - s) || !b.is_char_boundary(bb.len() - s) {
                s -= 1;
            }
            (p, ab.len() - p - s, bb.len() - p - s)
        }
        for len in [0, 1, 255, 256, 257, 1000, 3000] {
            let base: String = (0..len)
                .map(|i| if i % 7 == 0 { 'é' } else { 'a' })
                .collect();
            for at in [0, len / 2, len] {
                let cut = base.char_indices().nth(at).map_or(base.len(), |(i, _)| i);
                for insert in ["", "x", "é", "bb\n"] {
                    let changed = format!("{}{insert}{}", &base[..cut], &base[cut..]);
                    assert_eq!(common_affixes(&base, &changed), reference(&base, &changed));
                    assert_eq!(common_affixes(&changed, &base), reference(&changed, &base));
                }
            }
        }
        assert_eq!(count_newlines("a\nb\n\nc"), 3);
    }

    fn round_trip(bytes: &[u8]) -> (String, TextFormat) {
        let (text, format) = decode(bytes).expect("text");
        assert_eq!(
            encode(&text, &format).expect("encodes"),
            bytes,
            "round trip of {bytes:?}"
        );
        (text, format)
    }

    #[test]
    fn utf8_lf_and_missing_final_newline() {
        let (text, f) = round_trip(b"a\nb");
        assert_eq!(text, "a\nb");
        assert_eq!(f, TextFormat::default());
        assert_eq!(round_trip(b"").0, "");
        assert_eq!(round_trip(b"x\n\n").0, "x\n\n");
    }

    #[test]
    fn crlf_only_when_every_newline_has_cr() {
        let (text, f) = round_trip(b"a\r\nb\r\n");
        assert_eq!((text.as_str(), f.line_ending), ("a\nb\n", LineEnding::CrLf));
        let (text, f) = round_trip(b"a\r\nb\n");
        assert_eq!((text.as_str(), f.line_ending), ("a\r\nb\n", LineEnding::Lf));
        let (text, f) = round_trip(b"a\r\r\nb\r\n");
        assert_eq!(
            (text.as_str(), f.line_ending),
            ("a\r\nb\n", LineEnding::CrLf)
        );
        assert_eq!(round_trip(b"lone\rcr").1.line_ending, LineEnding::Lf);
    }

    #[test]
    fn utf8_bom_is_not_text() {
        let (text, f) = round_trip(b"\xEF\xBB\xBFhello\n");
        assert_eq!(text, "hello\n");
        assert!(f.bom);
        assert_eq!(f.encoding, Encoding::Utf8);
    }

    #[test]
    fn utf16_with_bom_both_orders() {
        let le = b"\xFF\xFEh\0i\0\r\0\n\0";
        let (text, f) = round_trip(le);
        assert_eq!(text, "hi\n");
        assert_eq!(
            (f.encoding, f.line_ending),
            (Encoding::Utf16Le, LineEnding::CrLf)
        );
        let be = b"\xFE\xFF\0h\0\xE9\0\n";
        let (text, f) = round_trip(be);
        assert_eq!(text, "h\u{e9}\n");
        assert_eq!(f.encoding, Encoding::Utf16Be);
        assert!(decode(b"\xFF\xFEh").is_err(), "odd UTF-16 length");
    }

    #[test]
    fn latin1_bytes_survive_and_never_become_replacement_chars() {
        let bytes = b"const x = 1;\n// caf\xE9 note\n";
        let (text, f) = round_trip(bytes);
        assert_eq!(text, "const x = 1;\n// caf\u{e9} note\n");
        assert_eq!(f.encoding, Encoding::Latin1);
        let edited = text.replace("1;", "2;");
        assert_eq!(
            encode(&edited, &f).expect("latin1"),
            b"const x = 2;\n// caf\xE9 note\n"
        );
        let err = encode("a\nb \u{2192}", &f).expect_err("arrow is not Latin-1");
        assert_eq!(err.detail, "'\u{2192}' (U+2192) on line 2");
    }

    #[test]
    fn binary_is_not_text_with_its_kind() {
        assert_eq!(
            decode(b"\x89PNG\r\n\x1a\n\0\0").unwrap_err().kind,
            "PNG image"
        );
        assert_eq!(decode(b"%PDF-1.7\n").unwrap_err().kind, "PDF document");
        assert_eq!(decode(b"abc\0def").unwrap_err().kind, "binary");
        assert_eq!(decode(b"\x01\x02\xff\xfe\x03").unwrap_err().kind, "binary");
        assert_eq!(
            image_media_type(b"RIFF\0\0\0\0WEBPVP8 "),
            Some("image/webp")
        );
        assert_eq!(image_media_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_media_type(b"hello"), None);
    }
}
