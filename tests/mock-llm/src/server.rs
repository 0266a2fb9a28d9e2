//! The HTTP side: the axum router for `POST /v1/messages`, the shared state
//! (script position, request record, log file) and how each decision becomes
//! a response, including the faults.

use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use futures::StreamExt;
use serde_json::Value;

use crate::answer::{json_message, sse_error_event, sse_events, AnswerMeta};
use crate::api_error::{
    default_message, error_body, error_type_for_status, script_exhausted, status_for_error_type,
};
use crate::prompt_cache::{CacheCounts, PromptCache};
use crate::script::{Entry, FaultKind, Script};
use crate::{context_window, expect, pairing};

/// State shared by all connections of one server.
pub(crate) struct Shared {
    script: Script,
    inner: Mutex<Inner>,
}

struct Inner {
    /// Index of the next script entry to serve (= entries consumed).
    next: usize,
    /// Every request body received, in order (non-JSON bodies as strings).
    requests: Vec<Value>,
    /// Append-mode log file: one JSON line per request.
    log: Option<File>,
    /// The prompt cache simulation: prefixes written by admitted
    /// `/v1/messages` requests.
    cache: PromptCache,
}

impl Shared {
    pub(crate) fn new(script: Script, log: Option<File>) -> Shared {
        Shared {
            script,
            inner: Mutex::new(Inner {
                next: 0,
                requests: Vec::new(),
                log,
                cache: PromptCache::default(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave Inner half-updated in a
        // way that matters for a test server, so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Copies of all request bodies received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Value> {
        self.lock().requests.clone()
    }

    /// Number of script entries consumed so far.
    pub(crate) fn served(&self) -> usize {
        self.lock().next
    }

    /// Records the request, runs the checks and, when they pass, takes the
    /// next entry. All under one lock, so concurrent requests get distinct
    /// entries in arrival order.
    fn decide(&self, body: &Bytes) -> Decision {
        let parsed = serde_json::from_slice::<Value>(body);
        let recorded = match &parsed {
            Ok(v) => v.clone(),
            Err(_) => Value::String(String::from_utf8_lossy(body).into_owned()),
        };
        let mut inner = self.lock();
        if let Some(file) = inner.log.as_mut() {
            if let Err(e) = writeln!(file, "{recorded}").and_then(|_| file.flush()) {
                eprintln!("mock-llm: cannot write the request log: {e}");
            }
        }
        inner.requests.push(recorded);
        let request_number = inner.requests.len();
        let value = match parsed {
            Ok(v) => v,
            Err(e) => {
                return Decision::Reject(
                    StatusCode::BAD_REQUEST,
                    format!("mock-llm: the request body is not JSON: {e}"),
                )
            }
        };
        if let Err(message) = pairing::check(&value) {
            return Decision::Reject(StatusCode::BAD_REQUEST, message);
        }
        if let Err(message) = crate::rules::check(&value) {
            return Decision::Reject(StatusCode::BAD_REQUEST, message);
        }
        if let Some(message) = unknown_model(self.script.models.as_deref(), &value) {
            return Decision::Reject(StatusCode::NOT_FOUND, message);
        }
        let tokens = context_window::tokens(body.len());
        if let Some(window) = self.script.context_window.filter(|w| tokens > *w) {
            return Decision::Reject(
                StatusCode::BAD_REQUEST,
                context_window::prompt_too_long(tokens, window),
            );
        }
        if context_window::is_summary_request(&value) {
            // Answered by mock-llm itself: the script does not advance.
            let lookup = inner.cache.lookup(&value);
            inner.cache.write(&lookup);
            let entry = context_window::summary_answer(&value, self.script.summary.as_deref());
            return answer(entry, &value, request_number, body.len(), lookup.counts);
        }
        let index = inner.next;
        let Some(entry) = self.script.responses.get(index) else {
            return Decision::Reject(StatusCode::INTERNAL_SERVER_ERROR, script_exhausted(index));
        };
        if let Some(exp) = &entry.expect {
            if let Err(message) = expect::check(exp, index, &value) {
                return Decision::Reject(StatusCode::BAD_REQUEST, message);
            }
        }
        inner.next += 1;
        // The prompt cache: measured on every admitted request, written
        // unless the entry is an HTTP error (refused before any processing).
        let lookup = inner.cache.lookup(&value);
        let http_fault = matches!(
            entry.fault.as_ref().and_then(|f| f.kind().ok()),
            Some(FaultKind::Http { .. })
        );
        if !http_fault {
            inner.cache.write(&lookup);
        }
        answer(
            entry.clone(),
            &value,
            request_number,
            body.len(),
            lookup.counts,
        )
    }
}

/// The request's `model`, or `mock-llm`.
/// The answer `entry` to request number `request_number` (`value`, of
/// `request_bytes` bytes) with the prompt cache's `cache` counts.
fn answer(
    entry: Entry,
    value: &Value,
    request_number: usize,
    request_bytes: usize,
    cache: CacheCounts,
) -> Decision {
    Decision::Answer(Box::new(Answer {
        entry,
        stream: value.get("stream").and_then(Value::as_bool) == Some(true),
        meta: AnswerMeta {
            id: format!("msg_mock_{request_number}"),
            model: model_of(value),
            request_bytes,
            cache,
            max_tokens: value.get("max_tokens").and_then(Value::as_u64),
        },
    }))
}

fn model_of(value: &Value) -> String {
    value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock-llm")
        .to_string()
}

enum Decision {
    /// Error answer without consuming an entry: status, message.
    Reject(StatusCode, String),
    /// The entry to serve.
    Answer(Box<Answer>),
}

struct Answer {
    entry: Entry,
    stream: bool,
    meta: AnswerMeta,
}

/// The router: `POST /v1/messages`, anything else a 404 in the API's shape.
/// The body size limit is off: conversations can be large.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", axum::routing::get(models))
        .route("/props", axum::routing::get(props))
        .fallback(not_found)
        .layer(DefaultBodyLimit::disable())
        .with_state(shared)
}

/// `GET /v1/models`: the script's `models` (else one, `mock-llm`, when
/// it sets a `context_window`; 404 with neither). Asked with an
/// `anthropic-version` header, in the Anthropic API's shape, paged by
/// `limit` (default 20) and `after_id` (`has_more`, `first_id`,
/// `last_id`); else in vLLM's (OpenAI's list, each entry's
/// `max_model_len` the script's `context_window`).
async fn models(
    State(shared): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    axum::extract::Query(query): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    let window = shared.script.context_window;
    let ids: Vec<String> = match (&shared.script.models, window) {
        (Some(models), _) => models.clone(),
        (None, Some(_)) => vec!["mock-llm".to_string()],
        (None, None) => return not_found().await,
    };
    if headers.contains_key("anthropic-version") {
        let limit = query
            .get("limit")
            .and_then(|l| l.parse::<usize>().ok())
            .unwrap_or(20)
            .clamp(1, 1000);
        let start = match query.get("after_id") {
            Some(after) => ids
                .iter()
                .position(|m| m == after)
                .map_or(ids.len(), |i| i + 1),
            None => 0,
        };
        let page: Vec<&String> = ids.iter().skip(start).take(limit).collect();
        let data: Vec<Value> = page
            .iter()
            .map(|id| {
                serde_json::json!({"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"})
            })
            .collect();
        return axum::Json(serde_json::json!({
            "data": data,
            "has_more": start + page.len() < ids.len(),
            "first_id": page.first(),
            "last_id": page.last(),
        }))
        .into_response();
    }
    let data: Vec<Value> = ids
        .iter()
        .map(|id| {
            let mut entry =
                serde_json::json!({"id": id, "object": "model", "owned_by": "mock-llm"});
            if let Some(window) = window {
                entry["max_model_len"] = window.into();
            }
            entry
        })
        .collect();
    axum::Json(serde_json::json!({"object": "list", "data": data})).into_response()
}

/// `GET /props` in llama.cpp's shape: `default_generation_settings.n_ctx`
/// is the script's `context_window` (404 without one).
async fn props(State(shared): State<Arc<Shared>>) -> Response {
    match shared.script.context_window {
        Some(window) => axum::Json(serde_json::json!({
            "default_generation_settings": {"n_ctx": window},
            "total_slots": 1
        }))
        .into_response(),
        None => not_found().await,
    }
}

/// The real API's 404 message (`model: {id}`, `not_found_error`) for a
/// request whose `model` is not one of the script's `models`; `None` when
/// the script lists none or the model is listed.
pub(crate) fn unknown_model(models: Option<&[String]>, request: &Value) -> Option<String> {
    let model = request.get("model").and_then(Value::as_str).unwrap_or("");
    let models = models?;
    (!models.iter().any(|m| m == model)).then(|| format!("model: {model}"))
}

async fn not_found() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "not_found_error",
        "mock-llm serves only POST /v1/messages and POST /v1/chat/completions",
        None,
    )
}

async fn messages(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    match shared.decide(&body) {
        Decision::Reject(status, message) => {
            let error_type = error_type_for_status(status.as_u16());
            error_response(status, error_type, &message, None)
        }
        Decision::Answer(answer) => respond(*answer),
    }
}

fn error_response(
    status: StatusCode,
    error_type: &str,
    message: &str,
    retry_after_s: Option<u64>,
) -> Response {
    let mut response = (status, axum::Json(error_body(error_type, message))).into_response();
    if let Some(seconds) = retry_after_s {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

fn respond(answer: Answer) -> Response {
    let Answer {
        entry,
        stream,
        meta,
    } = answer;
    let fault = entry.fault.as_ref().and_then(|f| f.kind().ok());
    let fault_message = entry.fault.as_ref().and_then(|f| f.message.clone());
    let mut response = match (fault, stream) {
        (
            Some(FaultKind::Http {
                status,
                retry_after_s,
            }),
            _,
        ) => {
            let error_type = error_type_for_status(status);
            let message = fault_message.unwrap_or_else(|| default_message(error_type).into());
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            error_response(code, error_type, &message, retry_after_s)
        }
        (
            Some(FaultKind::SseError {
                error_type,
                after_events,
            }),
            true,
        ) => {
            let message = fault_message.unwrap_or_else(|| default_message(&error_type).into());
            let mut chunks: Vec<Result<Bytes, std::io::Error>> = sse_events(&entry, &meta)
                .into_iter()
                .take(after_events)
                .map(|e| Ok(Bytes::from(e.to_wire())))
                .collect();
            chunks.push(Ok(Bytes::from(
                sse_error_event(&error_type, &message).to_wire(),
            )));
            sse_response(chunks, entry.event_delay_ms)
        }
        (Some(FaultKind::SseError { error_type, .. }), false) => {
            let message = fault_message.unwrap_or_else(|| default_message(&error_type).into());
            let code = StatusCode::from_u16(status_for_error_type(&error_type))
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            error_response(code, &error_type, &message, None)
        }
        (Some(FaultKind::Disconnect { after_events }), true) => {
            let mut chunks: Vec<Result<Bytes, std::io::Error>> = sse_events(&entry, &meta)
                .into_iter()
                .take(after_events)
                .map(|e| Ok(Bytes::from(e.to_wire())))
                .collect();
            chunks.push(Err(disconnect_error()));
            sse_response(chunks, entry.event_delay_ms)
        }
        (Some(FaultKind::Disconnect { .. }), false) => {
            // Headers go out, then the body breaks before any byte of JSON.
            let mut response = Response::new(paced_body(vec![Err(disconnect_error())], None));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        (None, true) => {
            let chunks = sse_events(&entry, &meta)
                .into_iter()
                .map(|e| Ok(Bytes::from(e.to_wire())))
                .collect();
            sse_response(chunks, entry.event_delay_ms)
        }
        (None, false) => axum::Json(json_message(&entry, &meta)).into_response(),
    };
    if let Ok(value) = HeaderValue::from_str(&meta.id.replace("msg_", "req_")) {
        response.headers_mut().insert("request-id", value);
    }
    if let Some(verdict) = entry.fault.as_ref().and_then(|f| f.should_retry) {
        response.headers_mut().insert(
            "x-should-retry",
            HeaderValue::from_static(if verdict { "true" } else { "false" }),
        );
    }
    response
}

fn disconnect_error() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "mock-llm: scripted disconnect",
    )
}

/// How long an `Err` chunk waits before it is yielded, so hyper flushes the
/// headers and the events before it (hyper drops unflushed bytes when a body
/// fails; a pending body makes it flush). In ms.
const FLUSH_BEFORE_DISCONNECT_MS: u64 = 30;

/// A chunked body sending `chunks` in order with `delay_ms` between two
/// chunks; an `Err` chunk (after a short flush pause) makes hyper abort the
/// connection without the final empty chunk, so the client sees a transport
/// error rather than a clean end.
fn paced_body(chunks: Vec<Result<Bytes, std::io::Error>>, delay_ms: Option<u64>) -> Body {
    let delay = Duration::from_millis(delay_ms.unwrap_or(0));
    let stream =
        futures::stream::iter(chunks.into_iter().enumerate()).then(move |(i, chunk)| async move {
            if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if chunk.is_err() {
                tokio::time::sleep(Duration::from_millis(FLUSH_BEFORE_DISCONNECT_MS)).await;
            }
            chunk
        });
    Body::from_stream(stream)
}

/// A streamed `text/event-stream` response of `chunks` (see [`paced_body`]).
fn sse_response(chunks: Vec<Result<Bytes, std::io::Error>>, delay_ms: Option<u64>) -> Response {
    let mut response = Response::new(paced_body(chunks, delay_ms));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

// POST /v1/chat/completions: the same script queue in OpenAI's shape (the
// checks and answers are in openai_*.rs; only recording and I/O are here).

use crate::openai_answer::ChatMeta;
use crate::openai_reply::{self, Reply};

impl Shared {
    /// The chat completions twin of `decide`: records the body (memory + log),
    /// runs [`openai_reply::admit`] on the next entry and, when it passes,
    /// consumes the entry; all under one lock. Returns the request number and
    /// the reply.
    fn decide_chat(&self, body: &Bytes) -> (usize, Reply) {
        let parsed = serde_json::from_slice::<Value>(body);
        let recorded = match &parsed {
            Ok(v) => v.clone(),
            Err(_) => Value::String(String::from_utf8_lossy(body).into_owned()),
        };
        let mut inner = self.lock();
        if let Some(file) = inner.log.as_mut() {
            if let Err(e) = writeln!(file, "{recorded}").and_then(|_| file.flush()) {
                eprintln!("mock-llm: cannot write the request log: {e}");
            }
        }
        inner.requests.push(recorded);
        let number = inner.requests.len();
        let index = inner.next;
        let window = self.script.context_window;
        match openai_reply::admit(
            parsed,
            self.script.responses.get(index),
            index,
            window,
            body.len(),
            self.script.models.as_deref(),
        ) {
            Err(error) => (number, error.into()),
            Ok(openai_reply::Admitted::Summary(request)) => {
                // Answered by mock-llm itself: the script does not advance.
                let meta = ChatMeta::new(&request, number, body.len());
                let stream = openai_reply::wants_stream(&request);
                let entry =
                    context_window::summary_answer(&request, self.script.summary.as_deref());
                (number, openai_reply::answer(&entry, &meta, stream))
            }
            Ok(openai_reply::Admitted::Entry(request, entry)) => {
                inner.next += 1;
                let meta = ChatMeta::new(&request, number, body.len());
                let stream = openai_reply::wants_stream(&request);
                (number, openai_reply::answer(entry, &meta, stream))
            }
        }
    }
}

async fn chat_completions(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let (number, reply) = shared.decide_chat(&body);
    let mut response = match reply {
        Reply::Json {
            status,
            body,
            retry_after_s,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (status, axum::Json(body)).into_response();
            if let Some(seconds) = retry_after_s {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            response
        }
        Reply::Stream {
            pieces,
            delay_ms,
            cut,
        } => {
            let mut chunks: Vec<Result<Bytes, std::io::Error>> =
                pieces.into_iter().map(|p| Ok(Bytes::from(p))).collect();
            if cut {
                chunks.push(Err(disconnect_error()));
            }
            sse_response(chunks, delay_ms)
        }
        Reply::CutJson => {
            let mut response = Response::new(paced_body(vec![Err(disconnect_error())], None));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
    };
    if let Ok(value) = HeaderValue::from_str(&format!("req_mock_{number}")) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}
