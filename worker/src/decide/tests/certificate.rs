//! Certificate-bound tokens (RFC 8705) on the request path: the token's
//! `cnf["x5t#S256"]` against the thumbprint the host put in the context
//! line, per issuer.

use super::*;
use crate::config::BindingMode;

/// The test config, its issuer accepting certificate-bound tokens (or
/// requiring them).
fn config(required: bool) -> Config<'static> {
    let modes = std::vec![BindingMode { accept: true, required }].leak();
    Config { policy: Policy { certificate_bound: modes, ..Policy::NONE }, ..*CONFIG }
}

const THUMBPRINT: &str = "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2";
const OTHER: &str = "AwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2";

fn bound_token(x5t: &str) -> String {
    let claims = std::format!(
        r#"{{"iss":"iss","sub":"alice","aud":"b","exp":{},"cnf":{{"x5t#S256":"{x5t}"}}}}"#,
        NOW + 60
    );
    token(HEADER, &claims)
}

/// Decides `head` at `context` with `config`: the status and the reason.
fn decided(config: &Config<'_>, context: &str, head: &str) -> (u16, Option<Rejection>) {
    let mut scratch = scratch();
    let input = std::format!("{context}\n{head}");
    let answer = handle(input.as_bytes(), NOW as f64, config, &mut scratch);
    let output = String::from_utf8(answer.output.to_vec()).expect("ASCII output");
    let reason =
        Rejection::ALL.iter().copied().find(|r| output.contains(&std::format!("\"{}\"", r.reason())));
    (answer.status, reason)
}

#[test]
fn a_bound_token_passes_only_with_its_certificate() {
    let config = config(false);
    let head = request(&bound_token(THUMBPRINT));
    assert_eq!(decided(&config, &std::format!("https 192.0.2.1 {THUMBPRINT}"), &head), (200, None));
    assert_eq!(
        decided(&config, &std::format!("https 192.0.2.1 {OTHER}"), &head),
        (401, Some(Rejection::CertificateMismatch))
    );
    assert_eq!(decided(&config, "https 192.0.2.1", &head), (401, Some(Rejection::CertificateMissing)));
    // No certificate comes over plain HTTP: the line itself is refused.
    assert_eq!(
        decided(&config, &std::format!("http 192.0.2.1 {THUMBPRINT}"), &head),
        (500, Some(Rejection::InvalidContext))
    );
}

#[test]
fn a_bearer_token_passes_unless_the_issuer_requires_the_binding() {
    let head = request(&token(HEADER, &valid_claims()));
    let context = std::format!("https 192.0.2.1 {THUMBPRINT}");
    assert_eq!(decided(&config(false), &context, &head), (200, None));
    assert_eq!(decided(&config(true), &context, &head), (401, Some(Rejection::CertificateRequired)));
    assert_eq!(decided(&config(true), &context, &request(&bound_token(THUMBPRINT))), (200, None));
}

#[test]
fn a_binding_the_issuer_does_not_accept_is_refused() {
    let head = request(&bound_token(THUMBPRINT));
    let context = std::format!("https 192.0.2.1 {THUMBPRINT}");
    assert_eq!(decided(&CONFIG, &context, &head), (401, Some(Rejection::BoundToken)));
    // A confirmation with another member beside the thumbprint, or a DPoP
    // key the issuer does not accept, is not verified here.
    let config = config(false);
    for cnf in [
        std::format!(r#"{{"x5t#S256":"{THUMBPRINT}","jkt":"x"}}"#),
        std::format!(r#"{{"x5t#S256":"{THUMBPRINT}","x5t":"y"}}"#),
        r#"{"jkt":"0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}"#.into(),
        // The name spelled with an escape is the same member (RFC 8259).
        std::format!(r#"{{"x5t\u0023S256":"{OTHER}"}}"#),
    ] {
        let claims = std::format!(r#"{{"iss":"iss","aud":"b","exp":{},"cnf":{cnf}}}"#, NOW + 60);
        let (status, reason) = decided(&config, &context, &request(&token(HEADER, &claims)));
        assert_eq!(status, 401, "{cnf}");
        assert!(
            matches!(reason, Some(Rejection::BoundToken | Rejection::CertificateMismatch)),
            "{cnf}: {reason:?}"
        );
    }
    // Two thumbprints in one confirmation: malformed.
    let claims = std::format!(
        r#"{{"iss":"iss","aud":"b","exp":{},"cnf":{{"x5t#S256":"a","x5t#S256":"b"}}}}"#,
        NOW + 60
    );
    assert_eq!(
        decided(&config, &context, &request(&token(HEADER, &claims))),
        (401, Some(Rejection::MalformedClaims))
    );
}
