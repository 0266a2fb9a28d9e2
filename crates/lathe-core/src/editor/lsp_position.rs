//! From "the symbol `name` on line 12" to an LSP position: the column of the
//! symbol's n-th whole-word occurrence on the line, in the units the
//! client's `offset_encoding` counts (LSP `PositionEncodingKind`:
//! UTF-16 code units by default, or UTF-8 bytes, or UTF-32 code points;
//! `:help vim.lsp.ClientConfig`). Pure.

/// How a client counts characters in a line (`client.offset_encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetEncoding {
    /// UTF-8 bytes (`"utf-8"`).
    Utf8,
    /// UTF-16 code units (`"utf-16"`, LSP's default).
    Utf16,
    /// Unicode code points (`"utf-32"`).
    Utf32,
}

impl OffsetEncoding {
    /// The encoding Neovim names `name`; anything else is UTF-16 (the LSP
    /// default).
    pub fn from_name(name: &str) -> Self {
        match name {
            "utf-8" => OffsetEncoding::Utf8,
            "utf-32" => OffsetEncoding::Utf32,
            _ => OffsetEncoding::Utf16,
        }
    }
}

/// `true` for characters identifiers are made of (letters, digits, `_`, in
/// any script).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte offsets in `line` where `symbol` occurs as a whole word: not
/// directly preceded or followed by a word character (checked only on the
/// sides where `symbol` itself starts or ends with one, so `+=` or
/// `$var` are found too). When there is no whole-word occurrence, the plain
/// substring occurrences (so `foo` is found inside `self.foo_bar` only when
/// nothing better exists). Empty `symbol`: none.
pub fn symbol_columns(line: &str, symbol: &str) -> Vec<usize> {
    if symbol.is_empty() {
        return Vec::new();
    }
    let starts_word = symbol.chars().next().is_some_and(is_word);
    let ends_word = symbol.chars().next_back().is_some_and(is_word);
    let all: Vec<usize> = line.match_indices(symbol).map(|(i, _)| i).collect();
    let whole: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&i| {
            let before = line[..i].chars().next_back();
            let after = line[i + symbol.len()..].chars().next();
            let glued_before = starts_word && before.is_some_and(is_word);
            let glued_after = ends_word && after.is_some_and(is_word);
            !glued_before && !glued_after
        })
        .collect();
    if whole.is_empty() {
        all
    } else {
        whole
    }
}

/// The column (in `encoding`'s units) of the `byte` offset in `line`.
/// `byte` past the end or inside a character counts up to the character
/// boundary before it.
pub fn character_at(line: &str, byte: usize, encoding: OffsetEncoding) -> usize {
    let mut end = byte.min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    let head = &line[..end];
    match encoding {
        OffsetEncoding::Utf8 => head.len(),
        OffsetEncoding::Utf16 => head.encode_utf16().count(),
        OffsetEncoding::Utf32 => head.chars().count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words_first_then_substrings() {
        assert_eq!(symbol_columns("x = helper(x) + helpers", "helper"), [4]);
        assert_eq!(symbol_columns("helper(helper)", "helper"), [0, 7]);
        // Only inside longer words: the substrings.
        assert_eq!(symbol_columns("self.helpers()", "helper"), [5]);
        assert!(symbol_columns("nothing here", "helper").is_empty());
        assert!(symbol_columns("abc", "").is_empty());
        // Non-word edges are not checked.
        assert_eq!(symbol_columns("a += b", "+="), [2]);
        assert_eq!(symbol_columns("echo $HOME/x", "$HOME"), [5]);
        // Word characters of any script count.
        assert_eq!(symbol_columns("großartig groß", "groß"), [11]);
    }

    #[test]
    fn columns_in_each_encoding() {
        // "é" is 2 bytes, 1 UTF-16 unit; "😀" is 4 bytes, 2 UTF-16 units.
        let line = "s = \"é😀\"; name";
        let byte = symbol_columns(line, "name")[0];
        assert_eq!(byte, 14);
        assert_eq!(character_at(line, byte, OffsetEncoding::Utf8), 14);
        assert_eq!(character_at(line, byte, OffsetEncoding::Utf16), 11);
        assert_eq!(character_at(line, byte, OffsetEncoding::Utf32), 10);
        // Inside a character: the boundary before it.
        assert_eq!(character_at("é", 1, OffsetEncoding::Utf16), 0);
        assert_eq!(character_at("ab", 9, OffsetEncoding::Utf16), 2);
        assert_eq!(OffsetEncoding::from_name("utf-8"), OffsetEncoding::Utf8);
        assert_eq!(OffsetEncoding::from_name("utf-32"), OffsetEncoding::Utf32);
        assert_eq!(OffsetEncoding::from_name("utf-16"), OffsetEncoding::Utf16);
        assert_eq!(OffsetEncoding::from_name("?"), OffsetEncoding::Utf16);
    }
}
