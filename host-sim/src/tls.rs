//! TLS for `serve`'s clients (rustls on ring): a certificate and key from
//! PEM files, and, with a client CA, client certificates verified in the
//! handshake. A verified certificate's SHA-256 thumbprint goes into the
//! module's context line (`worker/ABI.md`), where certificate-bound tokens
//! (RFC 8705) are checked against it. Clients without a certificate are
//! still served: their bearer tokens pass as before, and tokens bound to a
//! certificate are refused by the module.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::Digest as _;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig, server::WebPkiClientVerifier};
use tokio_rustls::server::TlsStream;

/// `serve`'s TLS arguments.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Ask clients for a certificate and verify it against these CA
    /// certificates (PEM); its thumbprint reaches the module for
    /// certificate-bound tokens. Clients without one are still served.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
}

/// What a TLS connection established, given to each of its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session {
    /// The SHA-256 of the client certificate's DER bytes, when the client
    /// presented one and it was verified.
    pub client_certificate: Option<[u8; 32]>,
}

/// Why the TLS settings cannot be used: one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read or holds no PEM item of the kind needed.
    #[error("{what} {}: {why}", path.display())]
    File {
        /// What the file was for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it cannot be used.
        why: String,
    },
    /// rustls refused the certificate, key or CA set.
    #[error("TLS settings refused: {0}")]
    Settings(String),
}

/// The acceptor `args` describe, or `None` without `--tls-cert`.
pub fn acceptor(args: &TlsArgs) -> Result<Option<TlsAcceptor>, TlsError> {
    let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else { return Ok(None) };
    let chain = certificates("--tls-cert", cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| file_error("--tls-key", key, e))?;
    // ring: no C build beyond `cc` (aws-lc-rs needs CMake). rustls marks it
    // deprecated for want of post-quantum key exchange, which this
    // loopback and test server does without.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Settings(e.to_string()))?;
    let builder = match &args.tls_client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let mut roots = RootCertStore::empty();
            for ca in certificates("--tls-client-ca", path)? {
                roots.add(ca).map_err(|e| file_error("--tls-client-ca", path, e))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| TlsError::Settings(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Settings(format!("--tls-cert and --tls-key: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}

/// The handshake on `stream`, bounded by `timeout`: the TLS stream and its
/// session, or `None` for a client that failed it or took too long.
pub async fn handshake(
    acceptor: &TlsAcceptor,
    stream: TcpStream,
    timeout: Duration,
) -> Option<(TlsStream<TcpStream>, Session)> {
    let stream = tokio::time::timeout(timeout, acceptor.accept(stream)).await.ok()?.ok()?;
    let client_certificate =
        stream.get_ref().1.peer_certificates().and_then(|chain| chain.first()).map(|leaf| thumbprint(leaf));
    Some((stream, Session { client_certificate }))
}

/// The SHA-256 of a certificate's DER bytes (RFC 8705 section 3.1).
pub fn thumbprint(certificate: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(certificate).into()
}

fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain = CertificateDer::pem_file_iter(path)
        .and_then(|items| items.collect::<Result<Vec<_>, _>>())
        .map_err(|e| file_error(what, path, e))?;
    match chain.is_empty() {
        true => Err(TlsError::File { what, path: path.to_owned(), why: "holds no certificate".into() }),
        false => Ok(chain),
    }
}

fn file_error(what: &'static str, path: &Path, error: impl std::fmt::Display) -> TlsError {
    TlsError::File { what, path: path.to_owned(), why: error.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_files_are_one_line_errors_naming_them() {
        let dir = std::env::temp_dir().join(format!("host-sim-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a pem file\n").expect("write");
        let missing = dir.join("missing.pem");
        for (cert, key) in [(&missing, &empty), (&empty, &empty)] {
            let args =
                TlsArgs { tls_cert: Some(cert.clone()), tls_key: Some(key.clone()), tls_client_ca: None };
            let Err(error) = acceptor(&args) else { panic!("{} refused", cert.display()) };
            let error = error.to_string();
            assert!(
                error.starts_with("--tls-cert ") && error.contains(&cert.display().to_string()),
                "{error}"
            );
            assert!(!error.contains('\n'), "{error}");
        }
        assert!(acceptor(&TlsArgs::default()).expect("no TLS").is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
