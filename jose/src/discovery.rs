//! OpenID Connect Discovery 1.0: the `jwks_uri` of an issuer's
//! configuration document (`<iss>/.well-known/openid-configuration`), read
//! by the module when a host hands it the fetched document, so that no host
//! parses it.
//!
//! The document is strict JSON of at most [`crate::jwks::MAX_DOCUMENT_BYTES`],
//! an object whose `issuer` equals the configured issuer exactly (section
//! 4.3: otherwise the document describes another issuer) and whose
//! `jwks_uri` is an absolute URL: `https`, or `http` only when the discovery
//! document itself was fetched over `http` (a test provider on loopback).
//! Other members are checked as JSON and skipped; `issuer` and `jwks_uri`
//! may appear once each. A text that is not strict JSON is refused saying
//! where ([`crate::json::check`]), as a JWKS document is.

use core::fmt;

use crate::json::{self, JsonFault, Reader, unescape};
use crate::jwks::MAX_DOCUMENT_BYTES;

/// The longest `jwks_uri` accepted, in bytes.
pub const MAX_URI_BYTES: usize = 2048;

/// Why a discovery document was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryError {
    /// Longer than [`MAX_DOCUMENT_BYTES`].
    TooLarge(usize),
    /// Not strict JSON: where, and how.
    Json(JsonFault),
    /// Not a JSON object, or `issuer` or `jwks_uri` twice or not a string.
    NotJson,
    /// No `issuer`, or one other than the configured issuer.
    WrongIssuer,
    /// No `jwks_uri`.
    NoJwksUri,
    /// A `jwks_uri` that is not an absolute http(s) URL of printable ASCII
    /// without spaces, at most [`MAX_URI_BYTES`].
    BadJwksUri,
    /// An `http` `jwks_uri` in a document fetched over `https`.
    InsecureJwksUri,
}

impl fmt::Display for DiscoveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoveryError::TooLarge(n) => {
                write!(f, "is {n} bytes; a discovery document may be at most {MAX_DOCUMENT_BYTES} bytes")
            }
            DiscoveryError::Json(fault) => write!(f, "is not an OpenID discovery document: {fault}"),
            DiscoveryError::NotJson => f.write_str(
                "is not an OpenID discovery document: not a strict JSON object with one string issuer and jwks_uri",
            ),
            DiscoveryError::WrongIssuer => f.write_str("names an issuer other than the configured iss"),
            DiscoveryError::NoJwksUri => f.write_str("has no jwks_uri"),
            DiscoveryError::BadJwksUri => f.write_str(
                "has a jwks_uri that is not an absolute http(s) URL of printable ASCII without spaces, at most 2048 bytes",
            ),
            DiscoveryError::InsecureJwksUri => {
                f.write_str("has an http:// jwks_uri, but was fetched over https: keys must come over TLS too")
            }
        }
    }
}

/// The `jwks_uri` of the discovery `document` of issuer `iss`, decoded into
/// `buf`. `fetched_over_https` is whether the document came over TLS.
pub fn jwks_uri<'b>(
    document: &[u8],
    iss: &str,
    fetched_over_https: bool,
    buf: &'b mut [u8; MAX_URI_BYTES],
) -> Result<&'b str, DiscoveryError> {
    if document.len() > MAX_DOCUMENT_BYTES {
        return Err(DiscoveryError::TooLarge(document.len()));
    }
    json::check(document).map_err(DiscoveryError::Json)?;
    let not_json = DiscoveryError::NotJson;
    let mut reader = Reader::new(document).ok_or(not_json)?;
    let (mut issuer_matches, mut uri) = (None, None);
    reader.skip_whitespace();
    let mut more = reader.open(b'{', b'}').ok_or(not_json)?;
    while more {
        // Long enough for `jwks_uri`: a longer name is none the reader reads.
        let mut name = [0u8; 8];
        match json::member_name(reader.name().ok_or(not_json)?, &mut name) {
            Some("issuer") if issuer_matches.is_none() => {
                let value = reader.string().ok_or(not_json)?;
                issuer_matches = Some(json::decoded_eq(value, iss) == Ok(true));
            }
            Some("jwks_uri") if uri.is_none() => uri = Some(reader.string().ok_or(not_json)?),
            Some("issuer" | "jwks_uri") => return Err(not_json),
            _ if reader.skip_value(1) => {}
            _ => return Err(not_json),
        }
        more = reader.more(b'}').ok_or(not_json)?;
    }
    if !reader.at_end() {
        return Err(not_json);
    }
    if issuer_matches != Some(true) {
        return Err(DiscoveryError::WrongIssuer);
    }
    let uri = unescape(uri.ok_or(DiscoveryError::NoJwksUri)?, buf).map_err(|_| DiscoveryError::BadJwksUri)?;
    let (https, rest) = match (uri.strip_prefix("https://"), uri.strip_prefix("http://")) {
        (Some(rest), _) => (true, rest),
        (None, Some(rest)) => (false, rest),
        (None, None) => return Err(DiscoveryError::BadJwksUri),
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || host.contains('@') || !uri.bytes().all(|b| (0x21..0x7f).contains(&b)) {
        return Err(DiscoveryError::BadJwksUri);
    }
    if fetched_over_https && !https {
        return Err(DiscoveryError::InsecureJwksUri);
    }
    Ok(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(document: &str, https: bool) -> Result<std::string::String, DiscoveryError> {
        let mut buf = [0u8; MAX_URI_BYTES];
        jwks_uri(document.as_bytes(), "https://idp.example", https, &mut buf)
            .map(std::borrow::ToOwned::to_owned)
    }

    #[test]
    fn reads_the_jwks_uri_of_the_configured_issuer() {
        let document = r#"{"issuer":"https://idp.example","authorization_endpoint":"https://idp.example/a",
            "jwks_uri":"https:\/\/idp.example\/keys","scopes_supported":["openid"],"x":{"y":[1,2]}}"#;
        assert_eq!(uri(document, true).as_deref(), Ok("https://idp.example/keys"));
        let plain = r#"{"jwks_uri":"http://127.0.0.1:9/keys","issuer":"https://idp.example"}"#;
        assert_eq!(uri(plain, false).as_deref(), Ok("http://127.0.0.1:9/keys"));
    }

    #[test]
    fn refuses_documents_it_cannot_trust() {
        for (document, https, expected) in [
            (
                r#"{"issuer":"https://evil.example","jwks_uri":"https://evil.example/k"}"#,
                true,
                DiscoveryError::WrongIssuer,
            ),
            (r#"{"jwks_uri":"https://idp.example/k"}"#, true, DiscoveryError::WrongIssuer),
            (
                r#"{"issuer":"https://idp.example/","jwks_uri":"https://idp.example/k"}"#,
                true,
                DiscoveryError::WrongIssuer,
            ),
            (r#"{"issuer":"https://idp.example"}"#, true, DiscoveryError::NoJwksUri),
            (
                r#"{"issuer":"https://idp.example","jwks_uri":"http://idp.example/k"}"#,
                true,
                DiscoveryError::InsecureJwksUri,
            ),
            (r#"{"issuer":"https://idp.example","jwks_uri":"/k"}"#, true, DiscoveryError::BadJwksUri),
            (
                r#"{"issuer":"https://idp.example","jwks_uri":"https://a b/k"}"#,
                true,
                DiscoveryError::BadJwksUri,
            ),
            (
                r#"{"issuer":"https://idp.example","jwks_uri":"https://u@h/k"}"#,
                true,
                DiscoveryError::BadJwksUri,
            ),
            (
                r#"{"issuer":"https://idp.example","jwks_uri":"https://h/\u0000"}"#,
                true,
                DiscoveryError::BadJwksUri,
            ),
            (r#"{"issuer":"https://idp.example","jwks_uri":7}"#, true, DiscoveryError::NotJson),
            (
                r#"{"issuer":"https://idp.example","issuer":"https://idp.example","jwks_uri":"https://h/k"}"#,
                true,
                DiscoveryError::NotJson,
            ),
            (
                r#"{"issuer":"https://idp.example","jwks_uri":"https://h/k","\u006a\u0077ks_uri":"https://e/k"}"#,
                true,
                DiscoveryError::NotJson,
            ),
            (
                r#"{"issuer":"https://idp.example","jwks_uri":"https://h/k"} x"#,
                true,
                DiscoveryError::Json(JsonFault::Syntax(58)),
            ),
            ("[]", true, DiscoveryError::NotJson),
            ("", true, DiscoveryError::Json(JsonFault::Empty)),
            (
                r#"{"issuer":"https://idp.example","jwks_u"#,
                true,
                DiscoveryError::Json(JsonFault::CutShort(39)),
            ),
        ] {
            assert_eq!(uri(document, https), Err(expected), "{document}");
        }
        let long =
            std::format!(r#"{{"issuer":"https://idp.example","jwks_uri":"https://h/{}"}}"#, "a".repeat(2100));
        assert_eq!(uri(&long, true), Err(DiscoveryError::BadJwksUri));
        let huge = std::format!(r#"{{"pad":"{}"}}"#, "a".repeat(MAX_DOCUMENT_BYTES));
        assert!(matches!(uri(&huge, true), Err(DiscoveryError::TooLarge(_))));
    }

    #[test]
    fn a_document_cut_short_anywhere_says_so() {
        let document =
            r#"{"issuer":"https://idp.example","jwks_uri":"https://idp.example/keys","x":[true,null,1.5]}"#;
        assert!(uri(document, true).is_ok());
        for cut in 1..document.len() {
            assert_eq!(
                uri(&document[..cut], true),
                Err(DiscoveryError::Json(JsonFault::CutShort(cut))),
                "{}",
                &document[..cut]
            );
        }
        assert_eq!(
            DiscoveryError::Json(JsonFault::CutShort(20)).to_string(),
            "is not an OpenID discovery document: its JSON is cut short after 20 bytes"
        );
    }
}
