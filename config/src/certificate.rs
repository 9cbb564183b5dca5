//! Certificate-bound tokens (RFC 8705) per issuer: `certificate_bound =
//! "accept"` (a token whose `cnf["x5t#S256"]` names a client certificate
//! passes when the request came over TLS with that certificate; tokens
//! without `cnf` as before) or `"require"` (only certificate-bound tokens,
//! over TLS with their certificate).
//!
//! The host verifies the certificate in the TLS handshake and writes its
//! thumbprint into the context line (`worker/ABI.md`); a host that does not
//! see client certificates (wasi:http) writes none, so such tokens are
//! refused there.

use crate::error::ConfigErrorKind;

/// An issuer's `certificate_bound`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CertificateBound {
    /// Only certificate-bound tokens, with their certificate.
    pub required: bool,
}

/// An issuer's `certificate_bound`, read.
pub(crate) fn read(prefix: &str, mode: Option<&str>) -> Result<Option<CertificateBound>, ConfigErrorKind> {
    match mode {
        None => Ok(None),
        Some("accept") => Ok(Some(CertificateBound { required: false })),
        Some("require") => Ok(Some(CertificateBound { required: true })),
        Some(other) => Err(ConfigErrorKind::Invalid {
            entry: format!("{prefix}certificate_bound"),
            why: format!("{other:?} must be \"accept\" or \"require\""),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    const ISSUER: &str = "[[issuers]]\niss = \"https://a.test\"\nkeys = [{ kid = \"k\", demo = \"0123456789abcdef0123456789abcdef\" }]\n";
    const ROUTE: &str = "[[routes]]\naud = \"orders\"\nupstream = \"http://127.0.0.1:1\"\n";

    fn parse(text: &str) -> Result<crate::GatewayConfig, String> {
        crate::parse(text, Path::new("gw.toml"), &|_| None).map_err(|e| e.to_string())
    }

    #[test]
    fn per_issuer_and_at_the_top_level() {
        let config = parse(&format!("{ISSUER}certificate_bound = \"require\"\n{ROUTE}")).expect("valid");
        assert_eq!(config.issuers[0].certificate_bound, Some(super::CertificateBound { required: true }));
        assert!(config.policy_cfgs().contains(&"policy_certificate"));
        let top = "certificate_bound = \"accept\"\nkeys = [{ kid = \"k\", demo = \"0123456789abcdef0123456789abcdef\" }]\n";
        let config = parse(&format!("{top}{ROUTE}")).expect("valid");
        assert_eq!(config.issuers[0].certificate_bound, Some(super::CertificateBound { required: false }));
        let config = parse(&format!("{ISSUER}{ROUTE}")).expect("valid");
        assert!(!config.policy_cfgs().contains(&"policy_certificate"));
    }

    #[test]
    fn refuses_other_values_in_one_line() {
        let error = parse(&format!("{ISSUER}certificate_bound = \"yes\"\n{ROUTE}")).expect_err("refused");
        assert!(
            error.contains("issuers[0].certificate_bound") && error.contains("\"accept\" or \"require\""),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
        let top = format!("certificate_bound = \"accept\"\n{ISSUER}{ROUTE}");
        assert!(parse(&top).is_err(), "the top-level form beside [[issuers]]");
    }
}
