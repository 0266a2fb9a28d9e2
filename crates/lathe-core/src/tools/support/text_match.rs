//! Finding Edit's `old_string` in a text (Claude Code's Edit contract).
//!
//! An exact match wins. When the exact text is absent, typographic quotes are
//! folded (‘ ’ → `'`, “ ” → `"`) on both sides and the search repeats; a match
//! found that way is replaced by `new_string` converted to the file's quote
//! style. Occurrences are counted *overlapping* (`"aaa"` occurs twice in
//! `"aaaa"`), so a match is unique only when no other occurrence even overlaps it.

use std::ops::Range;

const LEFT_SINGLE: char = '\u{2018}';
const RIGHT_SINGLE: char = '\u{2019}';
const LEFT_DOUBLE: char = '\u{201C}';
const RIGHT_DOUBLE: char = '\u{201D}';

/// One span of the text to replace (byte range) and what goes there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// Byte range in the original text, on char boundaries.
    pub range: Range<usize>,
    /// The replacement text (already in the file's quote style).
    pub with: String,
}

/// Where `old_string` matched and what to put there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Non-overlapping replacements, in text order.
    pub replacements: Vec<Replacement>,
    /// `true` when the match needed quote folding.
    pub quotes_folded: bool,
}

/// Why `old_string` cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchError {
    /// Not in the text, not even after quote folding.
    NotFound,
    /// More than one (possibly overlapping) occurrence without `replace_all`.
    Ambiguous {
        /// Number of occurrences, overlapping ones included.
        count: usize,
        /// 1-based line of each occurrence's start, sorted, without repeats.
        lines: Vec<usize>,
    },
}

/// Byte offsets of every occurrence of `needle` in `text`, overlapping ones
/// included. `needle` must not be empty.
///
/// Searched with `memchr::memmem` (SIMD, chosen at run time), several times
/// faster than `str::find` on a large text; a UTF-8 needle only matches at
/// char boundaries, as with `str::find`.
pub fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(pos) = text
        .as_bytes()
        .get(from..)
        .and_then(|rest| finder.find(rest))
    {
        let start = from + pos;
        found.push(start);
        // Step one char, not one match, so overlapping occurrences count.
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// 1-based line number of byte offset `at` in `text`.
pub fn line_of(text: &str, at: usize) -> usize {
    crate::editor::codec::count_newlines(&text[..at]) + 1
}

/// Plans replacing `old` (non-empty) by `new` in `text`: exactly one
/// occurrence, or every non-overlapping one with `replace_all`; exact text
/// first, then with typographic quotes folded.
pub fn plan(text: &str, old: &str, new: &str, replace_all: bool) -> Result<Plan, MatchError> {
    let exact = occurrences(text, old);
    if !exact.is_empty() {
        let ranges = choose(text, old, &exact, replace_all)?;
        return Ok(Plan {
            replacements: ranges
                .into_iter()
                .map(|range| Replacement {
                    range,
                    with: new.to_string(),
                })
                .collect(),
            quotes_folded: false,
        });
    }
    let (folded_text, offsets) = fold_quotes(text);
    let (folded_old, _) = fold_quotes(old);
    if folded_text == text && folded_old == old {
        return Err(MatchError::NotFound);
    }
    let starts = occurrences(&folded_text, &folded_old);
    if starts.is_empty() {
        return Err(MatchError::NotFound);
    }
    let ranges = choose(&folded_text, &folded_old, &starts, replace_all)?;
    Ok(Plan {
        replacements: ranges
            .into_iter()
            .map(|r| {
                let range = offsets[r.start]..offsets[r.end];
                let with = quote_style_of(&text[range.clone()], new);
                Replacement { range, with }
            })
            .collect(),
        quotes_folded: true,
    })
}

/// The ranges to replace among `starts` (occurrences of `old` in `text`).
fn choose(
    text: &str,
    old: &str,
    starts: &[usize],
    replace_all: bool,
) -> Result<Vec<Range<usize>>, MatchError> {
    if replace_all {
        let mut ranges: Vec<Range<usize>> = Vec::new();
        for &s in starts {
            if ranges.last().is_none_or(|r| s >= r.end) {
                ranges.push(s..s + old.len());
            }
        }
        Ok(ranges)
    } else if starts.len() == 1 {
        Ok(std::iter::once(starts[0]..starts[0] + old.len()).collect())
    } else {
        let mut lines: Vec<usize> = starts.iter().map(|&s| line_of(text, s)).collect();
        lines.dedup();
        Err(MatchError::Ambiguous {
            count: starts.len(),
            lines,
        })
    }
}

/// `text` with the planned replacements applied.
pub fn apply(text: &str, plan: &Plan) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in &plan.replacements {
        out.push_str(&text[at..r.range.start]);
        out.push_str(&r.with);
        at = r.range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// `s` with ‘ ’ → `'` and “ ” → `"`, plus for every byte offset of the
/// folded string that is a char boundary, the matching byte offset in `s`
/// (including the end). Other bytes map to 0 and are never looked up.
pub fn fold_quotes(s: &str) -> (String, Vec<usize>) {
    let mut folded = String::with_capacity(s.len());
    let mut offsets = Vec::with_capacity(s.len() + 1);
    for (i, c) in s.char_indices() {
        let f = match c {
            LEFT_SINGLE | RIGHT_SINGLE => '\'',
            LEFT_DOUBLE | RIGHT_DOUBLE => '"',
            other => other,
        };
        offsets.push(i);
        offsets.extend(std::iter::repeat_n(0, f.len_utf8() - 1));
        folded.push(f);
    }
    offsets.push(s.len());
    (folded, offsets)
}

/// `new` converted to the quote style of `matched` (the file's text that
/// `old_string` matched after folding): when `matched` has curly double quotes,
/// straight `"` in `new` become “ or ” (opening after start, whitespace or an
/// opening bracket, else closing); likewise for single quotes, where a `'`
/// between two letters is an apostrophe (’).
pub fn quote_style_of(matched: &str, new: &str) -> String {
    let curly_double = matched.contains([LEFT_DOUBLE, RIGHT_DOUBLE]);
    let curly_single = matched.contains([LEFT_SINGLE, RIGHT_SINGLE]);
    let chars: Vec<char> = new.chars().collect();
    let opening = |i: usize| {
        i == 0
            || matches!(
                chars[i - 1],
                ' ' | '\t' | '\n' | '\r' | '(' | '[' | '{' | '\u{2014}' | '\u{2013}'
            )
    };
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| match c {
            '"' if curly_double => {
                if opening(i) {
                    LEFT_DOUBLE
                } else {
                    RIGHT_DOUBLE
                }
            }
            '\'' if curly_single => {
                let letter = |j: Option<usize>| {
                    j.and_then(|j| chars.get(j))
                        .is_some_and(|c| c.is_alphabetic())
                };
                if letter(i.checked_sub(1)) && letter(Some(i + 1)) {
                    RIGHT_SINGLE
                } else if opening(i) {
                    LEFT_SINGLE
                } else {
                    RIGHT_SINGLE
                }
            }
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_occurrences_are_ambiguous() {
        assert_eq!(occurrences("aaaa", "aaa"), vec![0, 1]);
        assert_eq!(
            plan("aaaa", "aaa", "b", false),
            Err(MatchError::Ambiguous {
                count: 2,
                lines: vec![1]
            })
        );
        // replace_all takes non-overlapping ones, left to right.
        let p = plan("aaaa", "aaa", "b", true).expect("plan");
        assert_eq!(apply("aaaa", &p), "ba");
    }

    #[test]
    fn ambiguous_reports_lines() {
        let text = "function a() {\n  return 1;\n}\nfunction b() {\n  return 1;\n}\n";
        assert_eq!(
            plan(text, "  return 1;", "  return 2;", false),
            Err(MatchError::Ambiguous {
                count: 2,
                lines: vec![2, 5]
            })
        );
        let p = plan(text, "  return 1;", "  return 2;", true).expect("all");
        assert_eq!(apply(text, &p), text.replace("return 1", "return 2"));
    }

    #[test]
    fn unique_exact_match_replaces_only_its_span() {
        let p = plan("héllo wörld", "wö", "WO", false).expect("plan");
        assert_eq!(p.replacements[0].range, 7..10);
        assert!(!p.quotes_folded);
        assert_eq!(apply("héllo wörld", &p), "héllo WOrld");
        assert_eq!(plan("abc", "x", "y", false), Err(MatchError::NotFound));
    }

    #[test]
    fn folded_quotes_match_and_new_string_takes_file_style() {
        let text = "say(\u{201C}hello\u{201D});\nlet s = \u{2018}it\u{2019}s\u{2019};\n";
        let p = plan(text, "say(\"hello\");", "say(\"goodbye\");", false).expect("folded");
        assert!(p.quotes_folded);
        assert_eq!(
            apply(text, &p),
            "say(\u{201C}goodbye\u{201D});\nlet s = \u{2018}it\u{2019}s\u{2019};\n"
        );
        let p = plan(text, "'it's'", "'don't'", false).expect("single");
        assert!(apply(text, &p).contains("\u{2018}don\u{2019}t\u{2019}"));
    }

    #[test]
    fn fold_offsets_map_back() {
        let (f, offs) = fold_quotes("a\u{201C}b");
        assert_eq!(f, "a\"b");
        assert_eq!((offs[0], offs[1], offs[2], offs[3]), (0, 1, 4, 5));
    }
}
