//! A streamable HTTP MCP server (`type = "http"`): rmcp's streamable HTTP
//! client (MCP spec 2025-03-26, "Transports" → Streamable HTTP) over a
//! reqwest client lathe builds itself through [`crate::tls`], so TLS is
//! rustls with the ring provider and the webpki roots — the same reqwest and
//! TLS config as the model provider's client, never OpenSSL or aws-lc-rs
//! (Cargo.toml says why the crates are there).

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;

/// How long connecting to the server may take, in ms.
pub const CONNECT_TIMEOUT_MS: u64 = 10_000;

/// The reqwest client for one server: its `headers` on every request, no
/// redirects (a redirect would replay the headers elsewhere), a connect
/// timeout. Errors: a header is not valid HTTP, or the client could not be
/// built, as a reason.
pub fn client(headers: &BTreeMap<String, String>) -> Result<reqwest::Client, String> {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("header {k:?} is not a valid HTTP header name"))?;
        let mut value = HeaderValue::from_str(v)
            .map_err(|_| format!("the value of header {k} is not valid in HTTP"))?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    crate::tls::client_builder()?
        .default_headers(map)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
        // rmcp's own client does this too: no ~40 ms stalls on reused
        // connections whose last body was not read to the end.
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| format!("its HTTP client could not be built: {e}"))
}

/// Connects to the server at `url` and runs the MCP handshake, waiting
/// at most `timeout_ms`. Errors: why it failed (one line; the caller
/// names the URL).
pub async fn connect(
    url: &str,
    headers: &BTreeMap<String, String>,
    timeout_ms: u64,
) -> Result<RunningService<RoleClient, ()>, String> {
    let client = client(headers)?;
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    match tokio::time::timeout(Duration::from_millis(timeout_ms), ().serve(transport)).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(e)) => Err(format!("connecting failed: {}", reason(&one_line(&e)))),
        Err(_) => Err(format!(
            "it did not answer initialize within {timeout_ms} ms"
        )),
    }
}

/// `e` and its sources on one line (`a: b: c`), for error texts.
fn one_line(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let t = inner.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        source = inner.source();
    }
    s.replace('\n', " ")
}

/// What the model and the user see of a notice in an rmcp HTTP error
/// text: without rmcp's type names and `Send message error` wrapping, and
/// a failed connection said plainly.
pub fn reason(text: &str) -> String {
    let mut s = text.replace("Send message error ", "");
    while let Some(start) = s.find("Transport [") {
        let Some(end) = s[start..].find("] error: ") else {
            break;
        };
        s.replace_range(start..start + end + "] error: ".len(), "");
    }
    for tail in [
        ", when send initialize request",
        ", when send initialized notification",
    ] {
        s = s.replace(tail, "");
    }
    if let Some(start) = s.find("Client error: error sending request for url (") {
        let end = s[start..].find(')').map_or(s.len(), |e| start + e + 1);
        s.replace_range(start..end, CONNECTION_FAILED);
    }
    s.trim().to_string()
}

/// Model- and user-facing: no HTTP answer came (refused, DNS, TLS, reset).
pub const CONNECTION_FAILED: &str =
    "no answer (the connection was refused or broke: is the server running at that URL?)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_builds_with_lathes_tls_and_refuses_bad_headers() {
        // reqwest 0.13 without a crypto provider would panic here if the
        // preconfigured rustls config were not taken.
        let headers = [("Authorization".to_string(), "Bearer x".to_string())].into();
        assert!(client(&headers).is_ok());
        let bad = [("Bad Header".to_string(), "x".to_string())].into();
        assert_eq!(
            client(&bad).unwrap_err(),
            "header \"Bad Header\" is not a valid HTTP header name"
        );
    }

    #[test]
    fn rmcp_errors_read_plainly() {
        assert_eq!(
            reason("Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::async_impl::client::Client>>] error: Client error: error sending request for url (http://127.0.0.1:1/mcp), when send initialize request"),
            "no answer (the connection was refused or broke: is the server running at that URL?)"
        );
        assert_eq!(
            reason("Transport [rmcp::transport::worker::WorkerTransport<x<y>>] error: unexpected server response: HTTP 401 Unauthorized: bad token"),
            "unexpected server response: HTTP 401 Unauthorized: bad token"
        );
    }
}
