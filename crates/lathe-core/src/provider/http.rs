//! What both providers do over HTTP the same way: the [`Endpoint`] they
//! post to (base URL, key, client, idle timeout), and what they read from
//! an answer: the server's retry advice (`retry-after-ms`, `retry-after`,
//! `x-should-retry`) and a capped, cut error body.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, RETRY_AFTER};

use super::idle::DEFAULT_IDLE_TIMEOUT;
use super::sse::chain;
use super::ProviderError;
use crate::config::Config;
use crate::text::fill;

/// TCP + TLS connect timeout (the idle timeout also bounds it, when shorter).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// User-facing: the [`ProviderError::Request`] text when the key cannot be
/// an HTTP header; `{env}` is the variable it came from.
pub const KEY_NOT_A_HEADER: &str =
    "the API key in ${env} has characters an HTTP header cannot carry";

/// Longest wait for a whole non-streaming answer, for both providers ([`super::Provider::complete`]):
/// 10 minutes, the API's own limit for non-streaming requests
/// (<https://docs.anthropic.com/en/api/errors#long-requests>). A longer
/// idle timeout wins.
pub const NON_STREAMING_TIMEOUT: Duration = Duration::from_secs(600);
/// Template of the [`ProviderError::Transport`] text when a non-streaming
/// answer took longer than its timeout; `{secs}` is the timeout in seconds.
pub const NON_STREAMING_TIMEOUT_MESSAGE: &str =
    "no complete answer from the API within {secs} s (non-streaming timeout)";
/// Where a provider sends its requests, and with what.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `scheme://host[:port][/prefix]` without a trailing `/`.
    pub base_url: String,
    /// The key, trimmed; `None` when unset, empty or blank.
    pub api_key: Option<String>,
    /// Variable the key came from (named in errors about it).
    pub api_key_env: String,
    /// Longest silence of a streaming answer (headers or body bytes).
    pub idle_timeout: Duration,
    /// The HTTP client (rustls), built on the first request ([`LazyClient`]).
    pub http: LazyClient,
    /// `temperature` of every request, when set (`setup{ temperature }`);
    /// the server's default otherwise.
    pub temperature: Option<f64>,
}

/// HTTP clients [`LazyClient`]s of this process built (a count that only
/// grows): tests check that setup builds none.
static CLIENTS_BUILT: AtomicU64 = AtomicU64::new(0);

/// How many HTTP clients [`LazyClient::get`] has built in this process.
pub fn clients_built() -> u64 {
    CLIENTS_BUILT.load(Ordering::Relaxed)
}

/// A `reqwest::Client` built on first use: building one loads the TLS root
/// certificates (milliseconds and megabytes), which `setup()` should not pay
/// before the first request (docs/testing.md, "Benchmarks"). Clones
/// share the one client.
#[derive(Debug, Clone, Default)]
pub struct LazyClient(Arc<OnceLock<Result<reqwest::Client, String>>>);

impl LazyClient {
    /// A client that is already built (tests, proxies).
    pub fn built(client: reqwest::Client) -> Self {
        Self(Arc::new(OnceLock::from(Ok(client))))
    }

    /// `true` once the client was built (tests check that setup builds none).
    pub fn is_built(&self) -> bool {
        self.0.get().is_some()
    }

    /// The client, built now on the first call with lathe's TLS config
    /// ([`crate::tls::client_builder`]: rustls, ring, webpki roots, HTTP/2 by
    /// ALPN), [`CONNECT_TIMEOUT`] and lathe's user agent, no read timeout.
    /// Errors: [`ProviderError::Request`] when it cannot be built (the TLS
    /// backend failed to start), on this and every later call.
    pub fn get(&self) -> Result<&reqwest::Client, ProviderError> {
        self.0
            .get_or_init(|| {
                CLIENTS_BUILT.fetch_add(1, Ordering::Relaxed);
                crate::tls::client_builder()?
                    .connect_timeout(CONNECT_TIMEOUT)
                    .user_agent(concat!("lathe/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| chain(&e))
            })
            .as_ref()
            .map_err(|e| ProviderError::Request(e.clone()))
    }
}

impl Endpoint {
    /// An endpoint for `base_url` (a trailing `/` is ignored) with `api_key`
    /// (the value of the variable named `api_key_env`), on a client of its
    /// own with [`CONNECT_TIMEOUT`], lathe's user agent and no read timeout
    /// (silence is caught by the idle timeout, [`DEFAULT_IDLE_TIMEOUT`]),
    /// built on the first request ([`LazyClient`]). Errors: none today (a
    /// client that cannot be built fails the request,
    /// [`ProviderError::Request`]); the `Result` is kept for callers.
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
        api_key_env: impl Into<String>,
    ) -> Result<Self, ProviderError> {
        Ok(Self::on_client(
            base_url,
            api_key,
            api_key_env,
            LazyClient::default(),
        ))
    }

    /// Like [`new`](Self::new) with a caller-built client (tests, proxies).
    pub fn with_client(
        base_url: impl Into<String>,
        api_key: Option<String>,
        api_key_env: impl Into<String>,
        http: reqwest::Client,
    ) -> Self {
        Self::on_client(base_url, api_key, api_key_env, LazyClient::built(http))
    }

    fn on_client(
        base_url: impl Into<String>,
        api_key: Option<String>,
        api_key_env: impl Into<String>,
        http: LazyClient,
    ) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            api_key: api_key
                .map(|k| k.trim().to_string())
                .filter(|k| !k.is_empty()),
            api_key_env: api_key_env.into(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            http,
            temperature: None,
        }
    }

    /// The endpoint of `cfg`: `cfg.base_url`, the key read now from the
    /// variable named `cfg.api_key_env` (unset, empty or not UTF-8: no
    /// key), `cfg.idle_timeout_ms` as idle timeout (zero is 1 ms). Errors:
    /// as [`new`](Self::new).
    pub fn from_config(cfg: &Config) -> Result<Self, ProviderError> {
        let key = std::env::var(&cfg.api_key_env).ok();
        let mut e = Self::new(cfg.base_url.clone(), key, cfg.api_key_env.clone())?;
        e.idle_timeout = Duration::from_millis(cfg.idle_timeout_ms).max(Duration::from_millis(1));
        e.temperature = cfg.temperature;
        Ok(e)
    }

    /// `body` with this endpoint's `temperature`, when one is set.
    pub fn with_temperature(&self, mut body: serde_json::Value) -> serde_json::Value {
        if let (Some(t), Some(obj)) = (self.temperature, body.as_object_mut()) {
            obj.insert("temperature".into(), serde_json::json!(t));
        }
        body
    }

    /// Posts `body` as JSON to `{base_url}{path}` with `accept`, the
    /// `extra` headers, and — when a key is set — the key as header
    /// `key_header` (its value `key_prefix` + key, marked sensitive).
    /// Returns the response once its headers arrived, whatever its status.
    /// Errors: [`ProviderError::Request`] ([`KEY_NOT_A_HEADER`], or a
    /// `base_url` that is not a URL), [`ProviderError::Transport`] (DNS,
    /// refused, TLS, reset). No timeout of its own.
    pub async fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
        accept: &'static str,
        extra: &[(&'static str, &'static str)],
        key_header: HeaderName,
        key_prefix: &str,
    ) -> Result<reqwest::Response, ProviderError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ProviderError::Request(e.to_string()))?;
        self.post_bytes(path, bytes, accept, extra, key_header, key_prefix)
            .await
    }

    /// Like [`post`](Self::post) with the body's JSON already made.
    pub async fn post_bytes(
        &self,
        path: &str,
        body: Vec<u8>,
        accept: &'static str,
        extra: &[(&'static str, &'static str)],
        key_header: HeaderName,
        key_prefix: &str,
    ) -> Result<reqwest::Response, ProviderError> {
        let mut builder = self
            .http
            .get()?
            .post(format!("{}{path}", self.base_url))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .body(body);
        for (name, value) in extra {
            builder = builder.header(*name, *value);
        }
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::from_str(&format!("{key_prefix}{key}")).map_err(|_| {
                ProviderError::Request(fill(KEY_NOT_A_HEADER, &[("env", &self.api_key_env)]))
            })?;
            value.set_sensitive(true);
            builder = builder.header(key_header, value);
        }
        builder.send().await.map_err(|e| {
            if e.is_builder() {
                ProviderError::Request(format!("base_url {:?}: {}", self.base_url, chain(&e)))
            } else {
                ProviderError::Transport(chain(&e))
            }
        })
    }
}

impl Endpoint {
    /// `GET {url}` (a whole URL) with the key as `post` sends it, the JSON
    /// of a 2xx answer read within `timeout`; `None` on any failure (a
    /// server that does not publish it, a body that is not JSON).
    pub async fn get_json(
        &self,
        url: &str,
        key_header: HeaderName,
        key_prefix: &str,
        timeout: Duration,
    ) -> Option<serde_json::Value> {
        self.get_json_with(url, &[], key_header, key_prefix, timeout)
            .await
    }

    /// [`Endpoint::get_json`] with `headers` besides the key (the
    /// Anthropic API's `anthropic-version`).
    pub async fn get_json_with(
        &self,
        url: &str,
        headers: &[(&'static str, &'static str)],
        key_header: HeaderName,
        key_prefix: &str,
        timeout: Duration,
    ) -> Option<serde_json::Value> {
        let mut builder = self
            .http
            .get()
            .ok()?
            .get(url)
            .header(ACCEPT, "application/json")
            .timeout(timeout);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::from_str(&format!("{key_prefix}{key}")).ok()?;
            value.set_sensitive(true);
            builder = builder.header(key_header, value);
        }
        let resp = builder.send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        resp.json().await.ok()
    }
}

/// Header the Anthropic API and OpenAI (and their SDKs) use for a retry
/// wait in milliseconds; preferred over `retry-after` when both are sent.
pub const RETRY_AFTER_MS: &str = "retry-after-ms";
/// Header by which the server says whether a retry may help (`"true"` or
/// `"false"`); the official SDKs obey it before their own status rules
/// (anthropic-sdk-python `_should_retry`, openai-python likewise).
pub const X_SHOULD_RETRY: &str = "x-should-retry";
/// `kind` of [`ProviderError::Http`] when the
/// error body is not a known error shape.
pub const HTTP_ERROR_KIND: &str = "http_error";
/// Most bytes of an error body that are read and shown (64 KiB).
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// The server's retry wait from `headers`, measured from `now`: a readable
/// [`RETRY_AFTER_MS`] (milliseconds, may be fractional) wins, else
/// `retry-after` by [`parse_retry_after`]; `None` when neither is readable.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    text(headers, RETRY_AFTER_MS)
        .and_then(non_negative_f64)
        .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
        .or_else(|| text(headers, RETRY_AFTER.as_str()).and_then(|v| parse_retry_after(v, now)))
}

/// The server's [`X_SHOULD_RETRY`] verdict: `Some(true)` / `Some(false)`
/// for `"true"` / `"false"` (any case, spaces ignored), `None` when the
/// header is missing or says anything else.
pub fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match text(headers, X_SHOULD_RETRY)?
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// A `retry-after` value (RFC 9110 §10.2.3) as a wait from `now`:
/// delay-seconds (`"7"` → 7 s; a fractional `"1.5"` → 1.5 s, as some
/// servers send) or an HTTP-date (`"Wed, 21 Oct 2099 07:28:00 GMT"` → that
/// moment minus `now`, zero when it already passed, via `httpdate`).
/// Negative numbers and garbage → `None`.
pub fn parse_retry_after(v: &str, now: SystemTime) -> Option<Duration> {
    let v = v.trim();
    if let Some(secs) = non_negative_f64(v) {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Reads at most `cap` bytes of the body as lossy UTF-8; a read error ends
/// the text early (the status already tells what went wrong).
pub async fn read_capped(resp: reqwest::Response, cap: usize) -> String {
    let mut bytes = Vec::new();
    let mut body = resp.bytes_stream();
    while let Some(Ok(chunk)) = body.next().await {
        let room = cap.saturating_sub(bytes.len());
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if bytes.len() >= cap {
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The first `max` chars of `s`, with `…` when cut.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The value of header `name` when it is visible ASCII.
fn text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|v: &HeaderValue| v.to_str().ok())
}

/// `v` as a finite, non-negative number.
fn non_negative_f64(v: &str) -> Option<f64> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && *f >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn retry_after_seconds_and_http_date() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2099 07:27:30 GMT").unwrap();
        let p = |v| parse_retry_after(v, now);
        assert_eq!(p("7"), Some(Duration::from_secs(7)));
        assert_eq!(p(" 30 "), Some(Duration::from_secs(30)));
        assert_eq!(p("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(p("0"), Some(Duration::ZERO));
        assert_eq!(p("-1"), None);
        assert_eq!(p("soon"), None);
        assert_eq!(p("inf"), None);
        assert_eq!(
            p("Wed, 21 Oct 2099 07:28:00 GMT"),
            Some(Duration::from_secs(30))
        );
        // RFC 850 and asctime forms are HTTP-dates too (RFC 9110 §5.6.7).
        assert_eq!(
            p("Wednesday, 21-Oct-99 07:28:10 GMT"),
            httpdate::parse_http_date("Wednesday, 21-Oct-99 07:28:10 GMT")
                .ok()
                .map(|t| t.duration_since(now).unwrap_or(Duration::ZERO))
        );
        assert_eq!(p("Wed Oct 21 07:29:00 2099"), Some(Duration::from_secs(90)));
        // A date already past: retry now.
        assert_eq!(p("Wed, 21 Oct 2099 07:00:00 GMT"), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_ms_header_wins() {
        let now = SystemTime::UNIX_EPOCH;
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, now), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(7)));
        h.insert(RETRY_AFTER_MS, HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(250)));
        h.insert(RETRY_AFTER_MS, HeaderValue::from_static("garbage"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(7)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("-3"));
        assert_eq!(retry_after(&h, now), None);
    }

    #[test]
    fn should_retry_reads_true_false_and_nothing_else() {
        let mut h = HeaderMap::new();
        assert_eq!(should_retry(&h), None);
        h.insert(X_SHOULD_RETRY, HeaderValue::from_static("false"));
        assert_eq!(should_retry(&h), Some(false));
        h.insert(X_SHOULD_RETRY, HeaderValue::from_static(" True "));
        assert_eq!(should_retry(&h), Some(true));
        h.insert(X_SHOULD_RETRY, HeaderValue::from_static("maybe"));
        assert_eq!(should_retry(&h), None);
    }

    #[test]
    fn golden_texts() {
        assert_eq!(
            fill(KEY_NOT_A_HEADER, &[("env", "MY_KEY")]),
            "the API key in $MY_KEY has characters an HTTP header cannot carry"
        );
    }

    #[test]
    fn an_endpoint_trims_its_url_and_key() {
        let e = Endpoint::new("http://h:1/v1/", Some("  ".into()), "K").unwrap();
        assert!(!e.http.is_built(), "the client waits for the first request");
        assert_eq!(e.base_url, "http://h:1/v1");
        assert_eq!(e.api_key, None);
        let e = Endpoint::new("http://h", Some(" sk \n".into()), "K").unwrap();
        assert_eq!(e.api_key.as_deref(), Some("sk"));
        assert_eq!(e.idle_timeout, DEFAULT_IDLE_TIMEOUT);
    }

    #[test]
    fn cut_keeps_char_boundaries() {
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(cut("hé", 2), "hé");
    }
}
