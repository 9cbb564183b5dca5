//! TLS on the listener (`--tls-cert`, `--tls-key`, `--client-ca`): Envoy
//! ends the clients' TLS and, with a client CA, asks for a client
//! certificate and verifies it. The filter reads the verified
//! certificate's digest (`connection.sha256_peer_certificate_digest`) into
//! the module's context line, where certificate-bound tokens (RFC 8705)
//! are checked against it. A client without a certificate is still served:
//! its bearer tokens pass as before, and tokens bound to a certificate are
//! refused by the module.

use std::path::PathBuf;

use crate::cli::RenderArgs;
use crate::yaml::{Yaml, map, text, typed};

/// The flags of the listener's TLS, each taking a file.
pub const FLAGS: [&str; 3] = ["--tls-cert", "--tls-key", "--client-ca"];

/// The listener's TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownstreamTls {
    /// The certificate chain Envoy presents (PEM).
    pub cert_chain: PathBuf,
    /// Its private key (PEM).
    pub private_key: PathBuf,
    /// The CAs client certificates are verified against (PEM); without it
    /// no client certificate is asked for.
    pub client_ca: Option<PathBuf>,
}

/// The TLS the command line asks for: none, or a certificate with its key
/// and perhaps a client CA. A file that cannot be read is refused here, in
/// one line, rather than by Envoy at start.
pub fn from_args(args: &RenderArgs) -> Result<Option<DownstreamTls>, String> {
    let readable = |flag: &str| -> Result<Option<PathBuf>, String> {
        let Some(path) = args.own_value(flag) else { return Ok(None) };
        std::fs::metadata(path).map_err(|e| format!("{flag} {path}: {e}"))?;
        Ok(Some(PathBuf::from(path)))
    };
    match (readable("--tls-cert")?, readable("--tls-key")?, readable("--client-ca")?) {
        (None, None, None) => Ok(None),
        (Some(cert_chain), Some(private_key), client_ca) => {
            Ok(Some(DownstreamTls { cert_chain, private_key, client_ca }))
        }
        (None, _, _) => Err("--tls-key and --client-ca need --tls-cert".into()),
        (Some(_), None, _) => Err("--tls-cert needs --tls-key".into()),
    }
}

/// The listener's `transport_socket`: Envoy's downstream TLS context with
/// the certificate, HTTP/1.1 only, and the client CA when there is one.
pub fn transport_socket(tls: &DownstreamTls) -> Yaml {
    let file = |path: &PathBuf| map([("filename", text(&path.to_string_lossy()))]);
    let certificate =
        map([("certificate_chain", file(&tls.cert_chain)), ("private_key", file(&tls.private_key))]);
    let mut common = vec![
        ("tls_certificates".to_owned(), Yaml::List(vec![certificate])),
        ("alpn_protocols".to_owned(), Yaml::List(vec![text("http/1.1")])),
    ];
    if let Some(ca) = &tls.client_ca {
        common.push(("validation_context".to_owned(), map([("trusted_ca", file(ca))])));
    }
    let context =
        map([("require_client_certificate", Yaml::Bool(false)), ("common_tls_context", Yaml::Map(common))]);
    map([
        ("name", text("envoy.transport_sockets.tls")),
        ("typed_config", typed("envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext", context)),
    ])
}

/// Adds `tls` to every filter chain of every listener in `tree`.
pub fn secure(tree: &mut Yaml, tls: &DownstreamTls) {
    let socket = transport_socket(tls);
    let Some(Yaml::Map(resources)) = entry_mut(tree, "static_resources") else { return };
    let Some((_, Yaml::List(listeners))) = resources.iter_mut().find(|(k, _)| k == "listeners") else {
        return;
    };
    for listener in listeners {
        if let Some(Yaml::List(chains)) = entry_mut(listener, "filter_chains") {
            for chain in chains {
                if let Yaml::Map(entries) = chain {
                    entries.push(("transport_socket".to_owned(), socket.clone()));
                }
            }
        }
    }
}

fn entry_mut<'y>(yaml: &'y mut Yaml, key: &str) -> Option<&'y mut Yaml> {
    match yaml {
        Yaml::Map(entries) => entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> RenderArgs {
        crate::cli::parse(text.split_whitespace().map(str::to_owned), &FLAGS).expect("parses")
    }

    #[test]
    fn the_flags_are_read_and_checked() {
        assert_eq!(from_args(&args("")), Ok(None));
        let cargo = env!("CARGO_MANIFEST_PATH");
        let tls = from_args(&args(&format!("--tls-cert {cargo} --tls-key {cargo} --client-ca {cargo}")))
            .expect("readable")
            .expect("some");
        assert_eq!(tls.client_ca.as_deref(), Some(std::path::Path::new(cargo)));
        let missing =
            from_args(&args(&format!("--tls-cert /nonexistent.pem --tls-key {cargo}"))).expect_err("refused");
        assert!(missing.starts_with("--tls-cert /nonexistent.pem: "), "{missing}");
        assert!(from_args(&args(&format!("--tls-cert {cargo}"))).is_err());
        assert!(from_args(&args(&format!("--client-ca {cargo}"))).is_err());
    }

    #[test]
    fn every_listener_gets_the_tls_context() {
        let mut tree = map([(
            "static_resources",
            map([("listeners", Yaml::List(vec![map([("filter_chains", Yaml::List(vec![map([])]))])]))]),
        )]);
        let tls = DownstreamTls {
            cert_chain: "c.pem".into(),
            private_key: "k.pem".into(),
            client_ca: Some("ca.pem".into()),
        };
        secure(&mut tree, &tls);
        let yaml = tree.to_yaml();
        for expected in [
            "DownstreamTlsContext",
            "\"c.pem\"",
            "\"k.pem\"",
            "trusted_ca",
            "\"ca.pem\"",
            "require_client_certificate: false",
        ] {
            assert!(yaml.contains(expected), "{expected} in {yaml}");
        }
    }
}
