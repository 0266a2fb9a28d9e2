//! Errors of OpenAI-compatible servers as [`ProviderError`]s: a non-2xx
//! answer (`http_error`) and an `error` object inside a 200 stream
//! (`stream_error`).
//!
//! Servers disagree on the error body. OpenAI, vLLM, llama.cpp and Ollama
//! send `{"error": {"message", "type", "code"}}` (OpenAI's
//! <https://platform.openai.com/docs/guides/error-codes>); OpenRouter
//! `{"error": {"message", "code": 429}}` with a numeric code; Gemini's
//! compatibility endpoint a one-element array of that object; FastAPI-based
//! servers `{"detail": "…"}`; some proxies `{"error": "…"}` or plain text.
//! All of them keep the server's own message.

use std::time::SystemTime;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::provider::http::{cut, retry_after, should_retry, HTTP_ERROR_KIND};
use crate::provider::ProviderError;

/// Most chars of a body that is not an error object kept in the message.
const MAX_ERROR_MESSAGE_CHARS: usize = 1000;

/// `kind` of [`ProviderError::Stream`] when an in-stream error names no
/// type or code.
pub const STREAM_ERROR_KIND: &str = "error";

/// Builds [`ProviderError::Http`] from a non-2xx answer: `kind` is the
/// error's string `code`, else its `type`, else (for a numeric code) the
/// Messages API error type of that status, else [`HTTP_ERROR_KIND`]; `message` is
/// the error's `message` (or `detail`, or the whole body cut to 1000 chars,
/// or the status reason when the body is empty); `retry_after` as
/// [`retry_after`] reads it, measured from now.
pub(crate) fn http_error(
    status: reqwest::StatusCode,
    headers: &HeaderMap,
    body: &str,
) -> ProviderError {
    let retry_after = retry_after(headers, SystemTime::now());
    let (kind, message) = match error_object(body) {
        Some(err) => {
            let (kind, message) = kind_and_message(&err);
            (kind.unwrap_or_else(|| HTTP_ERROR_KIND.to_string()), message)
        }
        None => {
            let text = body.trim();
            let message = if text.is_empty() {
                status
                    .canonical_reason()
                    .unwrap_or("no reason given")
                    .to_string()
            } else {
                cut(text, MAX_ERROR_MESSAGE_CHARS)
            };
            (HTTP_ERROR_KIND.to_string(), message)
        }
    };
    ProviderError::Http {
        status: status.as_u16(),
        kind,
        message,
        retry_after,
        should_retry: should_retry(headers),
    }
}

/// Builds [`ProviderError::Stream`] from the `error` value of a chunk (an
/// object or a string). `message` is the server's message. `kind` is put in
/// the words lathe's retry policy and hints read
/// ([`crate::provider::retry::RETRYABLE_STREAM_ERRORS`]): a numeric code 429
/// becomes `rate_limit_error`, 503 and 529 `overloaded_error`, other 5xx
/// `api_error`, 400 `invalid_request_error`; the string codes and types
/// `rate_limit_exceeded` → `rate_limit_error` and `server_error` /
/// `internal_error` → `api_error`; any other string code or type is kept;
/// nothing at all is [`STREAM_ERROR_KIND`].
pub(crate) fn stream_error(err: &Value) -> ProviderError {
    let (kind, message) = kind_and_message(err);
    let kind = match kind.as_deref() {
        Some("rate_limit_exceeded") => "rate_limit_error".to_string(),
        Some("server_error" | "internal_error" | "internal_server_error") => {
            "api_error".to_string()
        }
        Some(k) => k.to_string(),
        None => STREAM_ERROR_KIND.to_string(),
    };
    ProviderError::Stream { kind, message }
}

/// The error object of an error body: `{"error": …}`, `[{"error": …}]`,
/// `{"detail": "…"}` or `{"message": "…"}`; `None` when `body` is none of
/// these (HTML from a proxy, plain text).
fn error_object(body: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(body).ok()?;
    let value = match value {
        Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        v => v,
    };
    let obj = value.as_object()?;
    if let Some(err) = obj.get("error").filter(|e| !e.is_null()) {
        return Some(err.clone());
    }
    ["detail", "message"]
        .iter()
        .find_map(|k| obj.get(*k).filter(|v| v.is_string()))
        .map(|m| serde_json::json!({ "message": m }))
}

/// `(kind, message)` of an error value. `kind`: a (non-numeric) string
/// `code`, else `type`, else a numeric `code` (or `status`) mapped by
/// [`status_kind`].
/// `message`: `message`, else the value itself when it is a string, else its
/// JSON text.
fn kind_and_message(err: &Value) -> (Option<String>, String) {
    let text = |k: &str| {
        err.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let number = |k: &str| {
        err.get(k).and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
    };
    let kind = text("code")
        .filter(|c| c.parse::<u64>().is_err())
        .or_else(|| text("type"))
        .or_else(|| {
            number("code")
                .or_else(|| number("status"))
                .and_then(status_kind)
                .map(str::to_string)
        });
    let message = text("message")
        .or_else(|| err.as_str().map(str::to_string))
        .unwrap_or_else(|| err.to_string());
    (kind, message)
}

/// The Messages API error type for an HTTP status used as an error code
/// (<https://docs.anthropic.com/en/api/errors>); `None` for statuses without one.
fn status_kind(code: u64) -> Option<&'static str> {
    Some(match code {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        500..=599 => "api_error",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use reqwest::StatusCode;
    use serde_json::json;

    fn http(status: u16, body: &str) -> ProviderError {
        http_error(
            StatusCode::from_u16(status).unwrap(),
            &HeaderMap::new(),
            body,
        )
    }

    fn parts(e: ProviderError) -> (u16, String, String) {
        match e {
            ProviderError::Http {
                status,
                kind,
                message,
                ..
            } => (status, kind, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn error_bodies_of_several_servers() {
        // OpenAI
        assert_eq!(
            parts(http(
                401,
                r#"{"error":{"message":"Incorrect API key provided: sk-x.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#
            )),
            (
                401,
                "invalid_api_key".into(),
                "Incorrect API key provided: sk-x.".into()
            )
        );
        // llama.cpp / vLLM: numeric code and a type
        assert_eq!(
            parts(http(
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}"#
            )),
            (
                400,
                "exceed_context_size_error".into(),
                "the request exceeds the available context size".into()
            )
        );
        // OpenRouter
        assert_eq!(
            parts(http(
                429,
                r#"{"error":{"message":"Rate limit exceeded","code":429,"metadata":{}}}"#
            )),
            (429, "rate_limit_error".into(), "Rate limit exceeded".into())
        );
        // Gemini's compatibility endpoint: an array
        assert_eq!(
            parts(http(
                400,
                r#"[{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}]"#
            )),
            (
                400,
                "invalid_request_error".into(),
                "API key not valid.".into()
            )
        );
        // FastAPI, a bare string, plain text, nothing
        assert_eq!(
            parts(http(404, r#"{"detail":"Not Found"}"#)),
            (404, HTTP_ERROR_KIND.into(), "Not Found".into())
        );
        assert_eq!(
            parts(http(404, r#"{"error":"model 'qwen3' not found"}"#)),
            (
                404,
                HTTP_ERROR_KIND.into(),
                "model 'qwen3' not found".into()
            )
        );
        assert_eq!(
            parts(http(502, "<html>bad gateway</html>\n")),
            (
                502,
                HTTP_ERROR_KIND.into(),
                "<html>bad gateway</html>".into()
            )
        );
        assert_eq!(
            parts(http(503, "")),
            (503, HTTP_ERROR_KIND.into(), "Service Unavailable".into())
        );
    }

    #[test]
    fn stream_error_kinds_are_what_retry_reads() {
        let kind = |v: Value| match stream_error(&v) {
            ProviderError::Stream { kind, .. } => kind,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            kind(json!({"code": 429, "message": "m"})),
            "rate_limit_error"
        );
        assert_eq!(kind(json!({"code": 502, "message": "m"})), "api_error");
        assert_eq!(
            kind(json!({"code": "503", "message": "m"})),
            "overloaded_error"
        );
        assert_eq!(
            kind(json!({"type": "server_error", "message": "m"})),
            "api_error"
        );
        assert_eq!(
            kind(json!({"code": "rate_limit_exceeded", "type": "tokens"})),
            "rate_limit_error"
        );
        assert_eq!(kind(json!({"code": "tool_use_failed"})), "tool_use_failed");
        assert_eq!(kind(json!("boom")), STREAM_ERROR_KIND);
        assert_eq!(
            stream_error(&json!({"code": 400, "message": "Token limit reached"})),
            ProviderError::Stream {
                kind: "invalid_request_error".into(),
                message: "Token limit reached".into()
            }
        );
        assert_eq!(
            stream_error(&json!("boom")),
            ProviderError::Stream {
                kind: STREAM_ERROR_KIND.into(),
                message: "boom".into()
            }
        );
    }
}
