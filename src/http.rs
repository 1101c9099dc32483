//! The one way debussy builds an HTTP client: reqwest, async for the MCP bridge and
//! blocking for ntfy notifications, with TLS from rustls on the ring provider trusting the
//! Mozilla roots that webpki-roots carries.
//!
//! Every reqwest client is built here. reqwest is compiled with `rustls-no-provider` (its
//! `rustls` feature brings aws-lc-rs, whose build needs cmake and NASM), so a client built
//! elsewhere has no crypto provider and reqwest panics while building it. The provider is
//! handed to each client, never installed process-wide, so no client depends on which one
//! was built first.

use std::sync::Arc;

use crate::error_chain::error_chain;

/// Why an HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// rustls refused the TLS settings.
    #[error("set up TLS for the HTTP client")]
    Tls(#[source] rustls::Error),
    /// reqwest refused the client's settings.
    #[error("build the HTTP client")]
    Build(#[source] reqwest::Error),
}

impl ClientError {
    /// The error and its causes in one line, to read after "failed to".
    #[must_use]
    pub fn describe(&self) -> String {
        error_chain(self)
    }
}

/// An async client with this module's TLS, set up further by `configure` (timeouts,
/// proxies).
///
/// # Errors
/// When rustls or reqwest refuses the settings.
pub fn client(
    configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> Result<reqwest::Client, ClientError> {
    let builder = reqwest::Client::builder().tls_backend_preconfigured(tls()?);
    configure(builder).build().map_err(ClientError::Build)
}

/// A blocking client with this module's TLS, set up further by `configure`.
///
/// reqwest runs a blocking client on a thread of its own, and its handle must be built,
/// used and dropped outside an async runtime: inside one, a debug build panics and a
/// release build blocks a runtime worker. Build it on the thread that will use it.
///
/// # Errors
/// When rustls or reqwest refuses the settings.
pub fn blocking_client(
    configure: impl FnOnce(reqwest::blocking::ClientBuilder) -> reqwest::blocking::ClientBuilder,
) -> Result<reqwest::blocking::Client, ClientError> {
    let builder = reqwest::blocking::Client::builder().tls_backend_preconfigured(tls()?);
    configure(builder).build().map_err(ClientError::Build)
}

/// TLS 1.2 and 1.3 through ring, verifying servers against webpki-roots (the roots ureq,
/// the notifier's earlier client, trusted): the same on every machine, whatever its
/// certificate store holds.
fn tls() -> Result<rustls::ClientConfig, ClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(ClientError::Tls)?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_build_without_a_process_wide_provider() {
        client(|builder| builder).expect("async client");
        blocking_client(|builder| builder).expect("blocking client");
        assert!(
            rustls::crypto::CryptoProvider::get_default().is_none(),
            "building a client installed a process-wide provider"
        );
    }
}
