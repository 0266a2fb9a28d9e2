//! Filling model-facing message templates.
//!
//! Messages are `pub const` templates with `{name}` placeholders, so golden
//! tests can pin the constant text and the filled result separately.

/// `template` with every `{key}` replaced by its value, in the given order.
/// Unknown placeholders stay as they are.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    values
        .iter()
        .fold(template.to_string(), |acc, (key, value)| {
            acc.replace(&format!("{{{key}}}"), value)
        })
}

/// `1 line` / `3 lines`: a count with its noun, singular for exactly one.
pub fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
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
        assert_eq!(plural(1, "line", "lines"), "1 line");
        assert_eq!(plural(0, "line", "lines"), "0 lines");
    }
}
