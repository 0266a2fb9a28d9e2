//! Error answers in the Messages API shape:
//! `{"type":"error","error":{"type":"<error type>","message":"..."}}`
//! (Anthropic API docs, "Errors"), plus the texts mock-llm itself sends.

use serde_json::{json, Value};

/// End of the pairing error for a tool_use without a tool_result right after
/// it; the real API's wording.
pub const MISSING_TOOL_RESULT_TAIL: &str =
    "Each `tool_use` block must have a corresponding `tool_result` block in the next message.";

/// End of the pairing error for a tool_result whose id has no tool_use in the
/// previous assistant message; the real API's wording.
pub const UNEXPECTED_TOOL_RESULT_TAIL: &str =
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.";

/// Start of every failed-`expect` message, so a test can tell a script
/// assertion from an API-rule error.
pub const EXPECT_FAILED_PREFIX: &str = "mock-llm: script expectation failed";

/// What to do when the script runs out; ends the exhausted message.
pub const SCRIPT_EXHAUSTED_HINT: &str =
    "Add a response to the script, or find out why the client sent one request more than scripted.";

/// The body of an error answer: `{"type":"error","error":{"type","message"}}`.
pub fn error_body(error_type: &str, message: &str) -> Value {
    json!({
        "type": "error",
        "error": { "type": error_type, "message": message }
    })
}

/// The Messages API error type for an HTTP status (Anthropic API docs,
/// "HTTP errors"): 400 invalid_request_error, 401 authentication_error,
/// 403 permission_error, 404 not_found_error, 413 request_too_large,
/// 429 rate_limit_error, 529 overloaded_error, anything else api_error.
pub fn error_type_for_status(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// The HTTP status the real API uses for an error type (inverse of
/// [`error_type_for_status`]); unknown types give 500.
pub fn status_for_error_type(error_type: &str) -> u16 {
    match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}

/// A default human message for an error type, like the real API's short ones
/// (e.g. `"Overloaded"` for `overloaded_error`).
pub fn default_message(error_type: &str) -> &'static str {
    match error_type {
        "overloaded_error" => "Overloaded",
        "rate_limit_error" => "Number of requests has exceeded your rate limit (mock-llm fault)",
        "invalid_request_error" => "Invalid request (mock-llm fault)",
        "authentication_error" => "invalid x-api-key (mock-llm fault)",
        "permission_error" => "Your API key does not have permission (mock-llm fault)",
        "not_found_error" => "Not found (mock-llm fault)",
        "request_too_large" => "Request exceeds the maximum allowed size (mock-llm fault)",
        _ => "Internal server error (mock-llm fault)",
    }
}

/// The pairing error for tool_use ids (comma-separated, in order) in
/// `messages[index]` that have no tool_result at the start of the next
/// message.
pub fn missing_tool_result(index: usize, ids: &[&str]) -> String {
    format!(
        "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. {MISSING_TOOL_RESULT_TAIL}",
        ids.join(", ")
    )
}

/// The pairing error for a tool_result at `messages[index].content[block]`
/// whose id is not a tool_use of the previous assistant message.
pub fn unexpected_tool_result(index: usize, block: usize, id: &str) -> String {
    format!(
        "messages.{index}.content.{block}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. {UNEXPECTED_TOOL_RESULT_TAIL}"
    )
}

/// `messages: []`: the real API's message.
pub const NO_MESSAGES: &str = "messages: at least one message is required";

/// The first message is not a user message: the real API's message.
pub const FIRST_MESSAGE_NOT_USER: &str = "messages: first message must use the \"user\" role";

/// A message with role `system`: the real API's message (it takes the
/// system prompt as the top-level `system` field).
pub const SYSTEM_ROLE: &str = "messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role.";

/// An empty text block (a `""` string content counts as one): the real
/// API's message, which names no index.
pub const EMPTY_TEXT: &str = "messages: text content blocks must be non-empty";

/// A text block of only whitespace: the real API's message (no index).
pub const WHITESPACE_TEXT: &str = "messages: text content blocks must contain non-whitespace text";

/// The final assistant message (a prefill) ends with whitespace: the real
/// API's message.
pub const TRAILING_WHITESPACE: &str =
    "messages: final assistant content cannot end with trailing whitespace";

/// Two tools with one name: the real API's message.
pub const DUPLICATE_TOOL_NAMES: &str = "tools: Tool names must be unique.";

/// `max_tokens` below 1 (or not an integer): the API's validation message.
pub const MAX_TOKENS_BELOW_ONE: &str = "max_tokens: Input should be greater than or equal to 1";

/// Longest side of an image in pixels.
pub const IMAGE_MAX_SIDE: u32 = 8000;

/// Longest side of an image in pixels when the request holds more than 20
/// images.
pub const IMAGE_MAX_SIDE_MANY: u32 = 2000;

/// Most base64 bytes of one image (5 MB, measured on the base64 text).
pub const IMAGE_MAX_BASE64_BYTES: usize = 5 * 1024 * 1024;

/// Most blocks with `cache_control` in one request.
pub const CACHE_CONTROL_MAX: usize = 4;

/// A message role other than `user`, `assistant` (and `system`, see
/// [`SYSTEM_ROLE`]): the real API's message.
pub fn unexpected_role(role: &str) -> String {
    format!(
        "messages: Unexpected role \"{role}\". Allowed roles are \"user\" or \"assistant\". For instructions on how to use tools, see https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview."
    )
}

/// `messages[index]` has no content and is not the final assistant message.
pub fn empty_content(index: usize) -> String {
    format!(
        "messages.{index}: all messages must have non-empty content except for the optional final assistant message"
    )
}

/// An empty text block at `block` (e.g. `messages.0.content.1`) that has
/// `cache_control`.
pub fn cache_control_on_empty_text(block: &str) -> String {
    format!("{block}.text: cache_control cannot be set for empty text blocks")
}

/// A `tool_use` id seen before in the request, at `messages[index].content[block]`.
pub fn duplicate_tool_use_id(index: usize, block: usize) -> String {
    format!("messages.{index}.content.{block}: tool_use ids must be unique")
}

/// A `tool_use` id with characters other than `[a-zA-Z0-9_-]`.
pub fn tool_use_id_pattern(index: usize, block: usize) -> String {
    format!(
        "messages.{index}.content.{block}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
    )
}

/// A `tool_use` whose `input` is not a JSON object.
pub fn tool_use_input_not_object(index: usize, block: usize) -> String {
    format!("messages.{index}.content.{block}.tool_use.input: Input should be a valid dictionary")
}

/// A `server_tool_use` block sent back whose `input` is not a JSON object.
pub fn server_tool_use_input_not_object(index: usize, block: usize) -> String {
    format!(
        "messages.{index}.content.{block}.server_tool_use.input: Input should be a valid dictionary"
    )
}

/// A text block whose `text` is not a string.
pub fn text_not_string(index: usize, block: usize) -> String {
    format!("messages.{index}.content.{block}.text.text: Input should be a valid string")
}

/// A custom tool named outside `^[a-zA-Z0-9_-]{1,128}$`, at `tools[index]`.
pub fn tool_name_pattern(index: usize) -> String {
    format!("tools.{index}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
}

/// A custom tool at `tools[index]` whose `input_schema` has `anyOf`,
/// `oneOf` or `allOf` at its top level.
pub fn tool_schema_top_level_combinator(index: usize) -> String {
    format!("tools.{index}.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level")
}

/// An image at `block` (e.g. `messages.0.content.1`, or
/// `messages.2.content.0.tool_result.content.1`) with a media type the API
/// does not take.
pub fn image_media_type(block: &str) -> String {
    format!(
        "{block}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
    )
}

/// An image at `block` whose base64 text is `bytes` long, over
/// [`IMAGE_MAX_BASE64_BYTES`].
pub fn image_too_large(block: &str, bytes: usize) -> String {
    format!(
        "{block}.image.source.base64: image exceeds 5 MB maximum: {bytes} bytes > {IMAGE_MAX_BASE64_BYTES} bytes"
    )
}

/// An image at `block` declared `declared` whose bytes are `actual`.
pub fn image_media_type_mismatch(block: &str, declared: &str, actual: &str) -> String {
    format!(
        "{block}.image.source.base64: The image was specified using the {declared} media type, but the image appears to be a {actual} image"
    )
}

/// An image at `block` with a side over [`IMAGE_MAX_SIDE`], or over
/// [`IMAGE_MAX_SIDE_MANY`] when `many` (more than 20 images in the request).
pub fn image_too_wide(block: &str, many: bool) -> String {
    if many {
        format!(
            "{block}.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: {IMAGE_MAX_SIDE_MANY} pixels"
        )
    } else {
        format!(
            "{block}.image.source.base64.data: At least one of the image dimensions exceed max allowed size: {IMAGE_MAX_SIDE} pixels"
        )
    }
}

/// `found` blocks with `cache_control` (more than [`CACHE_CONTROL_MAX`]).
pub fn too_many_cache_control(found: usize) -> String {
    format!("A maximum of {CACHE_CONTROL_MAX} blocks with cache_control may be provided. Found {found}.")
}

/// A `thinking` block without a `signature` field.
pub fn thinking_signature_missing(index: usize, block: usize) -> String {
    format!("messages.{index}.content.{block}.thinking.signature: Field required")
}

/// A `thinking` block whose `signature` is empty (mock-llm cannot check a
/// real signature, so only an empty one is invalid here).
pub fn thinking_signature_invalid(index: usize, block: usize) -> String {
    format!("messages.{index}.content.{block}: Invalid `signature` in `thinking` block")
}

/// The message of the HTTP 500 sent when the script has no entry left:
/// `served` entries were used and this is request number `served + 1` to get
/// past the checks.
pub fn script_exhausted(served: usize) -> String {
    format!(
        "mock-llm: the script is exhausted: all {served} scripted responses were already served. {SCRIPT_EXHAUSTED_HINT}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairing_messages_match_the_real_api() {
        assert_eq!(
            missing_tool_result(1, &["toolu_a", "toolu_b"]),
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a, toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
        );
        assert_eq!(
            unexpected_tool_result(2, 0, "toolu_x"),
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
        );
    }

    #[test]
    fn rule_messages_match_the_real_api() {
        assert_eq!(
            empty_content(3),
            "messages.3: all messages must have non-empty content except for the optional final assistant message"
        );
        assert_eq!(
            tool_name_pattern(7),
            "tools.7.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"
        );
        assert_eq!(
            image_too_large("messages.2.content.0", 8259148),
            "messages.2.content.0.image.source.base64: image exceeds 5 MB maximum: 8259148 bytes > 5242880 bytes"
        );
        assert_eq!(
            image_too_wide("messages.7.content.2", false),
            "messages.7.content.2.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels"
        );
        assert_eq!(
            too_many_cache_control(5),
            "A maximum of 4 blocks with cache_control may be provided. Found 5."
        );
        assert_eq!(
            unexpected_role("tool"),
            "messages: Unexpected role \"tool\". Allowed roles are \"user\" or \"assistant\". For instructions on how to use tools, see https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview."
        );
    }

    #[test]
    fn exhausted_message_says_so() {
        assert_eq!(
            script_exhausted(3),
            "mock-llm: the script is exhausted: all 3 scripted responses were already served. Add a response to the script, or find out why the client sent one request more than scripted."
        );
    }

    #[test]
    fn status_and_type_map_both_ways() {
        for status in [400, 401, 403, 404, 413, 429, 529] {
            assert_eq!(status_for_error_type(error_type_for_status(status)), status);
        }
        assert_eq!(error_type_for_status(503), "api_error");
        assert_eq!(status_for_error_type("api_error"), 500);
        assert_eq!(
            error_body("overloaded_error", "Overloaded"),
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})
        );
    }
}
