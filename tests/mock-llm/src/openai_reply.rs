//! What `POST /v1/chat/completions` answers, as data: the checks a request
//! must pass before it consumes a script entry ([`admit`]), and the reply to a
//! consumed entry with its fault in OpenAI form ([`answer`]). The server turns
//! a [`Reply`] into the HTTP response.

use serde_json::Value;

use crate::api_error::script_exhausted;
use crate::openai_answer::{completion, stream_wire, to_wire, ChatMeta};
use crate::openai_error::OpenAiError;
use crate::script::{Entry, FaultKind};
use crate::{context_window, openai_expect, openai_pairing};

/// An answer, before it becomes an HTTP response.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A JSON body with this HTTP status (and a `retry-after` header when
    /// `retry_after_s` is set).
    Json {
        /// HTTP status.
        status: u16,
        /// The JSON body.
        body: Value,
        /// `retry-after` seconds.
        retry_after_s: Option<u64>,
    },
    /// A `text/event-stream` body of these pieces (each a whole `data:` line
    /// and its blank line), paced by `delay_ms`, then cut mid-body when `cut`.
    Stream {
        /// The wire pieces, in order.
        pieces: Vec<String>,
        /// Milliseconds between two pieces.
        delay_ms: Option<u64>,
        /// Abort the connection after the pieces (no clean end).
        cut: bool,
    },
    /// `200` with `content-type: application/json`, then the connection is
    /// cut before any byte of the body.
    CutJson,
}

impl From<OpenAiError> for Reply {
    fn from(error: OpenAiError) -> Reply {
        Reply::Json {
            status: error.status,
            body: error.body(),
            retry_after_s: None,
        }
    }
}

/// The checks on a request before it may consume `entry` (the next script
/// entry, `responses[index]`, `None` when the script is exhausted), in order:
/// the body is JSON, the pairing rule ([`openai_pairing::check`]), the model
/// is one of `models` when the script lists them (else 404
/// `model_not_found`), the context window, an entry is
/// left (else 500 `server_error` with the exhausted message), the entry's
/// `expect` ([`openai_expect::check`]).
///
/// Returns the parsed body and the entry to serve, or the error to answer
/// (the script does not advance then).
pub fn admit<'a>(
    parsed: Result<Value, serde_json::Error>,
    entry: Option<&'a Entry>,
    index: usize,
    window: Option<u64>,
    body_bytes: usize,
    models: Option<&[String]>,
) -> Result<Admitted<'a>, OpenAiError> {
    let body = parsed.map_err(|e| {
        OpenAiError::invalid_request(format!("mock-llm: the request body is not JSON: {e}"), None)
    })?;
    openai_pairing::check(&body)?;
    if crate::server::unknown_model(models, &body).is_some() {
        let model = body.get("model").and_then(Value::as_str).unwrap_or("");
        return Err(OpenAiError::model_not_found(model));
    }
    let tokens = context_window::tokens(body_bytes);
    if let Some(window) = window.filter(|w| tokens > *w) {
        return Err(OpenAiError {
            status: 400,
            message: context_window::context_length_exceeded(tokens, window),
            error_type: "invalid_request_error".into(),
            param: Some("messages".into()),
            code: Some("context_length_exceeded".into()),
        });
    }
    if context_window::is_summary_request(&body) {
        return Ok(Admitted::Summary(body));
    }
    let Some(entry) = entry else {
        return Err(OpenAiError::for_status(500, Some(script_exhausted(index))));
    };
    if let Some(expect) = &entry.expect {
        openai_expect::check(expect, index, &body)?;
    }
    Ok(Admitted::Entry(body, entry))
}

/// A request [`admit`] let through.
#[derive(Debug)]
pub enum Admitted<'a> {
    /// It consumes this script entry.
    Entry(Value, &'a Entry),
    /// A summary request, answered by mock-llm itself
    /// ([`context_window::summary_entry`]); no entry consumed.
    Summary(Value),
}

/// The reply to a consumed `entry`: the chat completion (streamed when
/// `stream`), or its fault in OpenAI form. Stream faults count the answer's
/// `data:` pieces (the final `[DONE]` included): `sse_error` sends the first
/// K, then a `data: {"error":…}` piece, then ends cleanly; a disconnect sends
/// the first K, then cuts. On a non-streaming request `sse_error` answers the
/// error's HTTP status with the error body and a disconnect cuts the body.
pub fn answer(entry: &Entry, meta: &ChatMeta, stream: bool) -> Reply {
    let fault = entry.fault.as_ref().and_then(|f| f.kind().ok());
    let message = entry.fault.as_ref().and_then(|f| f.message.clone());
    let delay_ms = entry.event_delay_ms;
    match (fault, stream) {
        (
            Some(FaultKind::Http {
                status,
                retry_after_s,
            }),
            _,
        ) => Reply::Json {
            status,
            body: OpenAiError::for_status(status, message).body(),
            retry_after_s,
        },
        (
            Some(FaultKind::SseError {
                error_type,
                after_events,
            }),
            true,
        ) => {
            let mut pieces: Vec<String> = stream_wire(entry, meta)
                .into_iter()
                .take(after_events)
                .collect();
            let error = OpenAiError::for_script_type(&error_type, message);
            pieces.push(to_wire(&error.body()));
            Reply::Stream {
                pieces,
                delay_ms,
                cut: false,
            }
        }
        (Some(FaultKind::SseError { error_type, .. }), false) => {
            OpenAiError::for_script_type(&error_type, message).into()
        }
        (Some(FaultKind::Disconnect { after_events }), true) => Reply::Stream {
            pieces: stream_wire(entry, meta)
                .into_iter()
                .take(after_events)
                .collect(),
            delay_ms,
            cut: true,
        },
        (Some(FaultKind::Disconnect { .. }), false) => Reply::CutJson,
        (None, true) => Reply::Stream {
            pieces: stream_wire(entry, meta),
            delay_ms,
            cut: false,
        },
        (None, false) => Reply::Json {
            status: 200,
            body: completion(entry, meta),
            retry_after_s: None,
        },
    }
}

/// Whether the request asks for a streamed answer (`"stream": true`).
pub fn wants_stream(request: &Value) -> bool {
    request.get("stream").and_then(Value::as_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Script;
    use serde_json::json;

    fn entries(json: &str) -> Vec<Entry> {
        Script::from_json(json).unwrap().responses
    }

    fn meta() -> ChatMeta {
        ChatMeta::new(&json!({"model":"m"}), 1, 40)
    }

    #[test]
    fn checks_run_in_order_and_the_exhausted_script_is_a_500() {
        let ok = json!({"messages":[{"role":"user","content":"hi"}]});
        let e = entries(r#"{"responses":[{"expect":{"last_user_text_contains":"yo"}}]}"#);
        let bad_json = serde_json::from_str::<Value>("{");
        assert!(admit(bad_json, Some(&e[0]), 0, None, 1, None)
            .unwrap_err()
            .message
            .starts_with("mock-llm: the request body is not JSON"));
        let err = admit(Ok(json!({"messages":[]})), None, 0, None, 14, None).unwrap_err();
        assert_eq!(err.message, "[] is too short - 'messages'");
        let err = admit(Ok(ok.clone()), None, 3, None, 40, None).unwrap_err();
        assert_eq!(
            (err.status, err.error_type.as_str(), err.message),
            (500, "server_error", script_exhausted(3))
        );
        let err = admit(Ok(ok.clone()), Some(&e[0]), 0, None, 40, None).unwrap_err();
        assert!(err
            .message
            .starts_with("mock-llm: script expectation failed"));
        let with_yo = json!({"messages":[{"role":"user","content":"yo"}]});
        assert!(matches!(
            admit(Ok(with_yo.clone()), Some(&e[0]), 0, None, 40, None).unwrap(),
            Admitted::Entry(body, _) if body == with_yo
        ));
        // Over the window: OpenAI's context_length_exceeded, before the
        // script is even looked at.
        let err = admit(Ok(with_yo.clone()), None, 0, Some(9), 40, None).unwrap_err();
        assert_eq!(
            (err.status, err.code.as_deref(), err.param.as_deref()),
            (400, Some("context_length_exceeded"), Some("messages"))
        );
        assert!(err.message.starts_with("This model's maximum context length is 9 tokens. However, your messages resulted in 10 tokens."));
    }

    #[test]
    fn faults_become_openai_replies() {
        let e = entries(
            r#"{"responses":[
                {"fault":{"http_status":429,"retry_after_s":2}},
                {"content":[{"type":"text","text":"abc"}],"text_chunk_chars":1,
                 "fault":{"sse_error":"overloaded_error","after_events":2}},
                {"fault":{"disconnect_after_events":1}}]}"#,
        );
        let m = meta();
        match answer(&e[0], &m, true) {
            Reply::Json {
                status: 429,
                body,
                retry_after_s: Some(2),
            } => assert_eq!(body["error"]["code"], "rate_limit_exceeded"),
            other => panic!("{other:?}"),
        }
        match answer(&e[1], &m, true) {
            Reply::Stream {
                pieces, cut: false, ..
            } => {
                assert_eq!(pieces.len(), 3);
                assert_eq!(
                    pieces[2],
                    "data: {\"error\":{\"code\":null,\"message\":\"The engine is currently overloaded, please try again later.\",\"param\":null,\"type\":\"server_error\"}}\n\n"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            answer(&e[1], &m, false),
            Reply::Json { status: 529, .. }
        ));
        assert!(
            matches!(answer(&e[2], &m, true), Reply::Stream { cut: true, ref pieces, .. } if pieces.len() == 1)
        );
        assert_eq!(answer(&e[2], &m, false), Reply::CutJson);
    }
}
