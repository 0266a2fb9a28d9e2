//! What every mock-llm test file shares: the HTTP client.

use std::sync::Arc;

/// A reqwest client for plain-http loopback requests. It carries a rustls
/// config (ring, no roots) because, when the workspace is built together,
/// lathe's `rustls-no-provider` is unified into this reqwest and a client
/// built without one panics for want of a crypto provider.
pub fn client() -> reqwest::Client {
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(rustls::RootCertStore::empty())
    .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .unwrap()
}
