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
