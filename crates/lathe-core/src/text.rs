//! Filling message templates: the one `fill` and `plural` of the crate.
//!
//! Every text lathe shows the model or the user is a `pub const` template
//! with `{name}` placeholders next to the code that uses it, so golden tests
//! pin the constant and the filled result separately.

use std::fmt::Display;

/// `template` with every `{key}` replaced by its value. One pass over the
/// template: a value is inserted as is, never searched for placeholders
/// itself (a Grep pattern that reads `{path}` stays `{path}`). Placeholders
/// without a value, and braces that name no placeholder, stay as they are.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after.find('}').and_then(|close| {
            let key = &after[..close];
            values
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v, close))
        });
        match value {
            Some((v, close)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `1 line` / `3 lines`: `count` with `one` when it is exactly 1, else with
/// `many` (`0 lines`).
pub fn plural<N>(count: N, one: &str, many: &str) -> String
where
    N: Copy + Display + PartialEq + From<u8>,
{
    format!("{count} {}", if count == N::from(1) { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_named_placeholders() {
        assert_eq!(
            fill("{a} and {b} and {a}", &[("a", "x"), ("b", "y")]),
            "x and y and x"
        );
        assert_eq!(fill("{missing}", &[]), "{missing}");
        assert_eq!(fill("{ {a}} {", &[("a", "x")]), "{ x} {");
    }

    #[test]
    fn values_are_not_filled_again() {
        assert_eq!(
            fill("{a} in {b}", &[("a", "{b}"), ("b", "src")]),
            "{b} in src"
        );
    }

    #[test]
    fn plural_picks_the_noun_by_count() {
        assert_eq!(plural(1usize, "line", "lines"), "1 line");
        assert_eq!(plural(0usize, "line", "lines"), "0 lines");
        assert_eq!(plural(2u64, "match", "matches"), "2 matches");
    }
}
