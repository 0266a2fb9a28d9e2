//! lathe's one TLS setup for every HTTP client it builds (the model
//! provider's, MCP's streamable HTTP servers', the checkhealth probe's):
//! rustls with the ring crypto provider and the webpki roots, handed to
//! reqwest as a preconfigured config. reqwest is built with
//! `rustls-no-provider` (Cargo.toml says why), so a client built without
//! this config would panic for want of a crypto provider; build every
//! client from [`client_builder`].

use std::sync::Arc;

/// The ALPN protocols offered, best first: HTTP/2 when the server speaks
/// it, else HTTP/1.1. reqwest sets these itself only for configs it builds,
/// not for a preconfigured one.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The rustls client config: the ring provider, its safe default protocol
/// versions (TLS 1.2 and 1.3), Mozilla's roots as compiled into
/// `webpki-roots` (no certificate files are read), no client certificate,
/// `ALPN`. Building it copies the root list (~150 entries), so callers
/// build it when a client is first needed, not at setup. Errors: the
/// provider refused the default protocol versions (never in practice), as
/// a reason.
pub fn rustls_config() -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// A reqwest client builder with [`rustls_config`] as its TLS backend; the
/// caller adds its timeouts, headers and the like. Errors: as
/// [`rustls_config`].
pub fn client_builder() -> Result<reqwest::ClientBuilder, String> {
    Ok(reqwest::Client::builder().tls_backend_preconfigured(rustls_config()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_build_with_lathes_tls_config() {
        // Without the preconfigured config reqwest (rustls-no-provider)
        // panics here: no crypto provider is installed.
        let config = rustls_config().unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(client_builder().unwrap().build().is_ok());
    }
}
