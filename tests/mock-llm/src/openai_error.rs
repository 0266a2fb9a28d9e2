//! Error answers of `POST /v1/chat/completions` in OpenAI's shape,
//! `{"error":{"message","type","param","code"}}`, with OpenAI's own texts for
//! the checks it makes on every request (for golden assertions).
//!
//! Sources: OpenAI's "Error codes" guide for the status texts; the pairing and
//! empty-`messages` texts are the ones the real API answers (quoted verbatim,
//! typo "preceeding" included, in many public bug reports).

use serde_json::{json, Value};

use crate::api_error::status_for_error_type;

/// End of the 400 for an assistant `tool_calls` id that no `tool` message
/// right after answers; the ids (joined by `", "`) follow it.
pub const MISSING_TOOL_MESSAGES: &str = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ";

/// The 400 for a `tool` message with no assistant `tool_calls` message before
/// its run of tool messages (OpenAI's spelling, "preceeding").
pub const TOOL_WITHOUT_TOOL_CALLS: &str = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

/// The 400 for a `tool` message without a `tool_call_id`.
pub const MISSING_TOOL_CALL_ID: &str =
    "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.";

/// The 400 for a request whose `messages` is an empty array.
pub const EMPTY_MESSAGES: &str = "[] is too short - 'messages'";

/// The 400 for a request without a `messages` array.
pub const MISSING_MESSAGES: &str = "Missing required parameter: 'messages'.";

/// Start of the message sent when an entry's `expect` cannot be checked on a
/// chat completions request (a mistake in the script, not in the request).
pub const SCRIPT_ERROR_PREFIX: &str = "mock-llm: script error";

/// One error as OpenAI sends it: the HTTP status and the fields of `error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiError {
    /// HTTP status of the answer (for a mid-stream error: the status the same
    /// error has on a non-streaming request).
    pub status: u16,
    /// `error.message`.
    pub message: String,
    /// `error.type`, e.g. `invalid_request_error`, `server_error`.
    pub error_type: String,
    /// `error.param`, e.g. `messages.[2].role`; `null` when `None`.
    pub param: Option<String>,
    /// `error.code`, e.g. `rate_limit_exceeded`; `null` when `None`.
    pub code: Option<String>,
}

/// The 404 for a request whose `model` the server does not serve
/// (OpenAI's text). `{model}`.
pub const MODEL_NOT_FOUND: &str =
    "The model `{model}` does not exist or you do not have access to it.";

impl OpenAiError {
    /// The 404 `model_not_found` for `model` ([`MODEL_NOT_FOUND`]).
    pub fn model_not_found(model: &str) -> OpenAiError {
        OpenAiError {
            status: 404,
            message: MODEL_NOT_FOUND.replace("{model}", model),
            error_type: "invalid_request_error".into(),
            param: None,
            code: Some("model_not_found".into()),
        }
    }

    /// A 400 `invalid_request_error` with this message and param, code `null`.
    pub fn invalid_request(message: impl Into<String>, param: Option<String>) -> OpenAiError {
        OpenAiError {
            status: 400,
            message: message.into(),
            error_type: "invalid_request_error".into(),
            param,
            code: None,
        }
    }

    /// The body: `{"error":{"message","type","param","code"}}` (the same
    /// object is the `data:` of a mid-stream error chunk).
    pub fn body(&self) -> Value {
        json!({
            "error": {
                "message": self.message,
                "type": self.error_type,
                "param": self.param,
                "code": self.code,
            }
        })
    }

    /// The error of an `http_status` fault: type, code and default message of
    /// the status (see [`kind_for_status`]); `message` replaces the default.
    pub fn for_status(status: u16, message: Option<String>) -> OpenAiError {
        let (error_type, code, default) = kind_for_status(status);
        OpenAiError {
            status,
            message: message.unwrap_or_else(|| default.into()),
            error_type: error_type.into(),
            param: None,
            code: code.map(Into::into),
        }
    }

    /// The error of an `sse_error` fault whose script type is `script_type`.
    /// A Messages API type (`overloaded_error`, `rate_limit_error`, …) becomes
    /// the OpenAI error of its status (529, 429, …, see [`kind_for_status`]);
    /// any other type is sent verbatim as `error.type` (e.g. `server_error`,
    /// `insufficient_quota`), code `null`, status 500.
    pub fn for_script_type(script_type: &str, message: Option<String>) -> OpenAiError {
        let status = status_for_error_type(script_type);
        if status != 500 || script_type == "api_error" {
            return OpenAiError::for_status(status, message);
        }
        OpenAiError {
            status,
            message: message.unwrap_or_else(|| format!("mock-llm fault: {script_type}")),
            error_type: script_type.into(),
            param: None,
            code: None,
        }
    }
}

/// `(type, code, default message)` for an HTTP status, after OpenAI's "Error
/// codes" guide: 400 `invalid_request_error`; 401 `invalid_request_error` /
/// `invalid_api_key`; 403 `invalid_request_error` /
/// `unsupported_country_region_territory`; 404 `invalid_request_error`;
/// 429 `requests` / `rate_limit_exceeded`; 503 and 529 `server_error`
/// ("The engine is currently overloaded…"); other 4xx
/// `invalid_request_error`; other 5xx `server_error`.
pub fn kind_for_status(status: u16) -> (&'static str, Option<&'static str>, &'static str) {
    match status {
        401 => (
            "invalid_request_error",
            Some("invalid_api_key"),
            "Incorrect API key provided (mock-llm fault)",
        ),
        403 => (
            "invalid_request_error",
            Some("unsupported_country_region_territory"),
            "Country, region, or territory not supported (mock-llm fault)",
        ),
        404 => ("invalid_request_error", None, "Not found (mock-llm fault)"),
        429 => (
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached for requests (mock-llm fault)",
        ),
        503 | 529 => (
            "server_error",
            None,
            "The engine is currently overloaded, please try again later.",
        ),
        500..=599 => (
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        _ => (
            "invalid_request_error",
            None,
            "Invalid request (mock-llm fault)",
        ),
    }
}

/// The 400 for a request without a `messages` array (missing, `null` or not
/// an array).
pub fn missing_messages() -> OpenAiError {
    OpenAiError::invalid_request(MISSING_MESSAGES, Some("messages".into()))
}

/// The 400 for a request whose `messages` is `[]` (param `null`, as OpenAI).
pub fn empty_messages() -> OpenAiError {
    OpenAiError::invalid_request(EMPTY_MESSAGES, None)
}

/// The pairing 400 for the assistant `tool_calls` ids in `ids` (in order)
/// that have no `tool` message in the run right after the assistant message.
/// `param` is `messages.[i].role` of the first message after that run, or
/// `messages` when the run ends the conversation.
pub fn missing_tool_messages(ids: &[&str], next_message: Option<usize>) -> OpenAiError {
    let param = match next_message {
        Some(i) => format!("messages.[{i}].role"),
        None => "messages".into(),
    };
    OpenAiError::invalid_request(
        format!("{MISSING_TOOL_MESSAGES}{}", ids.join(", ")),
        Some(param),
    )
}

/// The pairing 400 for the `tool` message `messages[index]` whose run of
/// tool messages follows no assistant message with `tool_calls`.
pub fn tool_without_tool_calls(index: usize) -> OpenAiError {
    OpenAiError::invalid_request(
        TOOL_WITHOUT_TOOL_CALLS,
        Some(format!("messages.[{index}].role")),
    )
}

/// The pairing 400 for the `tool` message `messages[index]` answering `id`,
/// which the assistant message before its run did not call.
pub fn unknown_tool_call_id(index: usize, id: &str) -> OpenAiError {
    OpenAiError::invalid_request(
        format!("Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."),
        Some(format!("messages.[{index}].tool_call_id")),
    )
}

/// The 400 for the `tool` message `messages[index]` without a `tool_call_id`.
pub fn missing_tool_call_id(index: usize) -> OpenAiError {
    OpenAiError::invalid_request(
        MISSING_TOOL_CALL_ID,
        Some(format!("messages.[{index}].tool_call_id")),
    )
}

/// The message of the 400 sent when entry `responses[index]` sets
/// `expect.tool_result_is_error` and is asked for on `/v1/chat/completions`,
/// whose tool messages have no error flag.
pub fn is_error_cannot_apply(index: usize) -> String {
    format!(
        "{SCRIPT_ERROR_PREFIX} in responses[{index}]: expect.tool_result_is_error cannot be checked \
         on POST /v1/chat/completions: OpenAI tool messages have no is_error field. \
         Check the tool message's text with expect.tool_result_contains instead."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairing_texts_are_openai_s() {
        assert_eq!(
            missing_tool_messages(&["call_a", "call_b"], Some(3)).body(),
            json!({"error":{
                "message":"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_a, call_b",
                "type":"invalid_request_error","param":"messages.[3].role","code":null}})
        );
        assert_eq!(
            missing_tool_messages(&["x"], None).param.as_deref(),
            Some("messages")
        );
        assert_eq!(
            tool_without_tool_calls(2).body(),
            json!({"error":{
                "message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                "type":"invalid_request_error","param":"messages.[2].role","code":null}})
        );
    }

    #[test]
    fn statuses_and_script_types_map_to_openai_kinds() {
        let e = OpenAiError::for_status(429, None);
        assert_eq!(
            (e.error_type.as_str(), e.code.as_deref()),
            ("requests", Some("rate_limit_exceeded"))
        );
        assert_eq!(
            OpenAiError::for_status(502, None).error_type,
            "server_error"
        );
        assert_eq!(
            OpenAiError::for_status(418, None).error_type,
            "invalid_request_error"
        );
        let e = OpenAiError::for_script_type("overloaded_error", Some("busy".into()));
        assert_eq!(
            (e.status, e.error_type.as_str(), e.message.as_str()),
            (529, "server_error", "busy")
        );
        assert_eq!(
            OpenAiError::for_script_type("api_error", None).error_type,
            "server_error"
        );
        let e = OpenAiError::for_script_type("insufficient_quota", None);
        assert_eq!(
            (e.status, e.error_type.as_str(), e.message.as_str()),
            (
                500,
                "insufficient_quota",
                "mock-llm fault: insufficient_quota"
            )
        );
    }
}
