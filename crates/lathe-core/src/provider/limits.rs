//! Caps on what one model answer may carry, so a broken or hostile answer
//! costs bounded memory and every call in it still gets a result
//! (docs/hostile-input.md, "Hostile input").
//!
//! The assembler (`MessageAssembler`, assemble.rs) applies them while it folds the
//! stream: a `tool_use` over a cap keeps input `{}` in the transcript (the
//! oversized text is dropped as it arrives, never joined) and carries a
//! refusal, the whole model-facing text below, which the pipeline answers
//! before gate 1 (`execution::CheckedCall::new`). The answer's other calls
//! run as usual, and the turn goes on.

/// Most `tool_use` blocks one answer may run. Later ones get
/// [`TOO_MANY_TOOL_CALLS`] without running (their inputs are not kept).
/// Models send a handful at a time; 100 leaves room for wide fan-outs.
pub const MAX_TOOL_CALLS_PER_ANSWER: usize = 100;

/// Largest `tool_use` input, in bytes of JSON text (8 MiB). A model's whole
/// answer is at most a few hundred KiB of tokens, so more is a broken
/// stream; the call gets [`TOOL_INPUT_TOO_LARGE`].
pub const MAX_TOOL_INPUT_BYTES: usize = 8 * 1024 * 1024;

/// Deepest nesting of objects and arrays in a `tool_use` input. Every
/// tool's schema is at most three levels deep; the cap keeps recursive code
/// (schema checks, hooks' JSON, drops) far from any stack limit, and is
/// checked on the text before it is parsed ([`TOOL_INPUT_TOO_DEEP`]).
pub const MAX_TOOL_INPUT_DEPTH: usize = 64;

/// Longest tool name kept, in bytes: the API's limit for tool names (128).
/// A longer name is cut to this (on a character boundary) in the transcript
/// and the call gets [`TOOL_NAME_TOO_LONG`].
pub const MAX_TOOL_NAME_BYTES: usize = 128;

/// Result of each call past [`MAX_TOOL_CALLS_PER_ANSWER`]. `{n}` is the
/// call's 1-based position in the answer, `{max}` the cap.
pub const TOO_MANY_TOOL_CALLS: &str = "This answer made more than {max} tool calls, so call {n} and every later one were not run. Make at most {max} calls in one answer; after reading these results, make the calls you still need in the next answer.";

/// Result of a call whose input is over [`MAX_TOOL_INPUT_BYTES`]. `{tool}`,
/// `{max}`.
pub const TOOL_INPUT_TOO_LARGE: &str = "The input for {tool} is larger than {max} bytes, so the call was not run and its input was not kept. Send smaller inputs: write a large file as a Write of its first part followed by Edits that add the rest, and split a large new_string over several Edits.";

/// Result of a call whose input nests deeper than [`MAX_TOOL_INPUT_DEPTH`].
/// `{tool}`, `{max}`.
pub const TOOL_INPUT_TOO_DEEP: &str = "The input for {tool} nests objects and arrays more than {max} levels deep, so the call was not run. Send the flat input object the tool's schema describes.";

/// Result of a call whose tool name is over [`MAX_TOOL_NAME_BYTES`].
/// `{bytes}` is the name's length, `{start}` its first 40 characters.
pub const TOOL_NAME_TOO_LONG: &str = "A tool name of {bytes} bytes (starting \"{start}\") is longer than any tool's name can be ({max} bytes at most), so the call was not run. Call one of the available tools by its exact name.";

/// `true` when the JSON text `json` nests `[`/`{` deeper than `max`
/// (brackets inside strings do not count). One pass over the bytes, no
/// parsing and no recursion, so it is safe on any input.
pub fn json_deeper_than(json: &str, max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for b in json.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// `name` cut to at most `max` bytes on a character boundary.
pub fn cut_at_char(name: &str, max: usize) -> &str {
    if name.len() <= max {
        return name;
    }
    let mut end = max;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn golden_caps_and_texts() {
        assert_eq!(MAX_TOOL_CALLS_PER_ANSWER, 100);
        assert_eq!(MAX_TOOL_INPUT_BYTES, 8 * 1024 * 1024);
        assert_eq!(MAX_TOOL_INPUT_DEPTH, 64);
        assert_eq!(MAX_TOOL_NAME_BYTES, 128);
        assert_eq!(
            TOO_MANY_TOOL_CALLS,
            "This answer made more than {max} tool calls, so call {n} and every later one were not run. Make at most {max} calls in one answer; after reading these results, make the calls you still need in the next answer."
        );
        assert_eq!(
            TOOL_INPUT_TOO_LARGE,
            "The input for {tool} is larger than {max} bytes, so the call was not run and its input was not kept. Send smaller inputs: write a large file as a Write of its first part followed by Edits that add the rest, and split a large new_string over several Edits."
        );
        assert_eq!(
            TOOL_INPUT_TOO_DEEP,
            "The input for {tool} nests objects and arrays more than {max} levels deep, so the call was not run. Send the flat input object the tool's schema describes."
        );
        assert_eq!(
            TOOL_NAME_TOO_LONG,
            "A tool name of {bytes} bytes (starting \"{start}\") is longer than any tool's name can be ({max} bytes at most), so the call was not run. Call one of the available tools by its exact name."
        );
    }

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        assert!(!json_deeper_than(r#"{"a": [1, {"b": 2}]}"#, 3));
        assert!(json_deeper_than(r#"{"a": [1, {"b": [2]}]}"#, 3));
        assert!(!json_deeper_than(r#"{"a": "[[[[[[{{{{"}"#, 1));
        assert!(!json_deeper_than(r#"{"a": "\"[[[["}"#, 1));
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(json_deeper_than(&deep, MAX_TOOL_INPUT_DEPTH));
        assert!(!json_deeper_than("", 0));
    }

    #[test]
    fn names_are_cut_on_char_boundaries() {
        assert_eq!(cut_at_char("Read", 128), "Read");
        assert_eq!(cut_at_char("ééé", 3), "é");
        assert_eq!(cut_at_char(&"x".repeat(1 << 20), 128).len(), 128);
    }
}
