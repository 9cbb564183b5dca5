//! The table's rows: each variant's status, code and reason, as hosts and
//! clients read them.

use super::*;

/// The expected answers, written out independently of the table in `reject.rs`.
const EXPECTED: &[(Rejection, u16, &str, &str)] = &[
    (Rejection::MalformedRequest, 400, "invalid_request", "malformed request head"),
    (Rejection::IncompleteRequest, 400, "invalid_request", "incomplete request head"),
    (Rejection::HeadTooLarge, 431, "invalid_request", "request head too large"),
    (Rejection::TooManyHeaders, 431, "invalid_request", "too many header fields"),
    (Rejection::InvalidFieldValue, 400, "invalid_request", "invalid header field value"),
    (Rejection::MissingHost, 400, "invalid_request", "host header required"),
    (Rejection::DuplicateHost, 400, "invalid_request", "more than one host header"),
    (Rejection::MalformedHost, 400, "invalid_request", "malformed host header"),
    (Rejection::ConflictingFraming, 400, "invalid_request", "both content-length and transfer-encoding"),
    (Rejection::InvalidContentLength, 400, "invalid_request", "invalid content-length"),
    (Rejection::UnsupportedTransferEncoding, 400, "invalid_request", "transfer-encoding must be chunked"),
    (Rejection::ContentOnGetOrHead, 400, "invalid_request", "content on a GET or HEAD request"),
    (Rejection::MethodNotUpperCase, 400, "invalid_request", "method not in upper case"),
    (Rejection::ConnectNotAllowed, 400, "invalid_request", "CONNECT not supported"),
    (Rejection::AsteriskForm, 400, "invalid_request", "asterisk-form target not supported"),
    (Rejection::MalformedTarget, 400, "invalid_request", "malformed request target"),
    (Rejection::ControlInTarget, 400, "invalid_request", "control or non-ASCII byte in request target"),
    (Rejection::EncodedSlash, 400, "invalid_request", "encoded slash or backslash in path"),
    (Rejection::PathAboveRoot, 400, "invalid_request", "path climbs above its root"),
    (Rejection::DotSegmentParameters, 400, "invalid_request", "dot segment with parameters"),
    (Rejection::PathReadsAnotherRule, 400, "invalid_request", "path meets another rule on some servers"),
    (Rejection::MethodReadsAnotherRule, 400, "invalid_request", "method override meets another rule"),
    (Rejection::DoubleEncodedPath, 400, "invalid_request", "double-encoded character in path"),
    (
        Rejection::WhitespaceAtSegmentEdge,
        400,
        "invalid_request",
        "encoded whitespace at a path segment's edge",
    ),
    (Rejection::TargetTooLong, 414, "invalid_request", "request target too long"),
    (Rejection::MissingAuthorization, 401, "", "bearer token required"),
    (Rejection::UnsupportedScheme, 401, "", "authorization scheme must be Bearer"),
    (Rejection::DuplicateAuthorization, 400, "invalid_request", "more than one authorization header"),
    (Rejection::MalformedAuthorization, 400, "invalid_request", "malformed authorization header"),
    (Rejection::MalformedTokenField, 400, "invalid_request", "malformed token cookie or header"),
    (Rejection::ConflictingTokens, 400, "invalid_request", "more than one token"),
    (Rejection::AmbiguousTokenCookie, 400, "invalid_request", "token cookie spelled ambiguously"),
    (Rejection::TokenTooLong, 401, "invalid_token", "token longer than the gateway accepts"),
    (Rejection::MalformedToken, 401, "invalid_token", "token is not a compact JWS"),
    (Rejection::BadEncoding, 401, "invalid_token", "token is not canonical base64url"),
    (Rejection::MalformedHeader, 401, "invalid_token", "malformed token header"),
    (Rejection::UnsupportedAlgorithm, 401, "invalid_token", "alg not accepted for this key"),
    (Rejection::UnsupportedType, 401, "invalid_token", "typ must be JWT or at+jwt"),
    (Rejection::CriticalHeader, 401, "invalid_token", "crit header not supported"),
    (Rejection::UnknownKey, 401, "invalid_token", "unknown kid"),
    #[cfg(runtime_keys)]
    (Rejection::KeysUnavailable, 503, "", "signing keys unavailable"),
    (Rejection::KeyIdRequired, 401, "invalid_token", "kid required"),
    (Rejection::MissingSignature, 401, "invalid_token", "signature missing"),
    (Rejection::BadSignature, 401, "invalid_token", "signature mismatch"),
    (Rejection::MalformedClaims, 401, "invalid_token", "malformed claims"),
    (Rejection::LoneSurrogate, 401, "invalid_token", "lone surrogate escape in a claim"),
    (Rejection::BoundToken, 401, "invalid_token", "token bound to a key (cnf) not verified here"),
    (Rejection::MissingExpiry, 401, "invalid_token", "exp claim required"),
    (Rejection::Expired, 401, "invalid_token", "token expired"),
    (Rejection::NotYetValid, 401, "invalid_token", "token not yet valid"),
    (Rejection::WrongIssuer, 401, "invalid_token", "issuer not accepted"),
    (Rejection::IssuerNotAllowed, 401, "invalid_token", "issuer not accepted for this path"),
    (Rejection::MissingAudience, 401, "invalid_token", "aud claim required"),
    (Rejection::NoRoute, 401, "invalid_token", "no route for audience"),
    (Rejection::SubjectNotHeaderSafe, 401, "invalid_token", "sub cannot travel intact in a header"),
    (Rejection::ClaimNotHeaderSafe, 401, "invalid_token", "claim cannot travel intact in a header"),
    (Rejection::ClaimTypeMismatch, 401, "invalid_token", "claim is not of its header's type"),
    (Rejection::InsufficientScope, 403, "insufficient_scope", "required scope missing"),
    (Rejection::MissingRole, 403, "insufficient_scope", "required role missing"),
    (Rejection::ClaimMismatch, 403, "insufficient_scope", "required claim value missing"),
    (Rejection::Denied, 403, "", "forbidden"),
    (Rejection::NotFound, 404, "", "not found"),
    (Rejection::PreflightRefused, 403, "", "cors preflight not allowed"),
    (Rejection::PreflightWithBody, 400, "invalid_request", "preflight with a body"),
    (Rejection::ScratchExhausted, 500, "", "gateway scratch space exhausted"),
    (Rejection::InvalidClock, 500, "", "host clock invalid"),
    (Rejection::InvalidContext, 500, "", "host context invalid"),
    (Rejection::RateLimited, 429, "", "rate limit exceeded"),
    #[cfg(policy_dpop)]
    (Rejection::DpopRequired, 401, "invalid_token", "DPoP-bound token required"),
    #[cfg(policy_dpop)]
    (Rejection::DpopTokenUnbound, 401, "invalid_token", "DPoP token not bound to a key"),
    #[cfg(policy_dpop)]
    (Rejection::DpopKeyMismatch, 401, "invalid_token", "token bound to another DPoP key"),
    #[cfg(policy_dpop)]
    (Rejection::DpopProofMissing, 401, "invalid_dpop_proof", "DPoP proof required"),
    #[cfg(policy_dpop)]
    (Rejection::DpopProofRepeated, 400, "invalid_request", "more than one DPoP proof"),
    #[cfg(policy_dpop)]
    (Rejection::DpopProofWithBearer, 400, "invalid_request", "DPoP proof with a bearer token"),
    #[cfg(policy_dpop)]
    (Rejection::DpopProofMalformed, 401, "invalid_dpop_proof", "malformed DPoP proof"),
    #[cfg(policy_dpop)]
    (Rejection::DpopProofBadSignature, 401, "invalid_dpop_proof", "DPoP proof signature invalid"),
    #[cfg(policy_dpop)]
    (Rejection::DpopProofWrongMethod, 401, "invalid_dpop_proof", "DPoP proof for another method"),
    #[cfg(policy_dpop)]
    (Rejection::DpopProofWrongUri, 401, "invalid_dpop_proof", "DPoP proof for another URI"),
    #[cfg(policy_dpop)]
    (Rejection::DpopProofStale, 401, "invalid_dpop_proof", "DPoP proof outside its time window"),
    #[cfg(policy_dpop)]
    (Rejection::DpopProofWrongToken, 401, "invalid_dpop_proof", "DPoP proof for another token"),
    #[cfg(policy_dpop)]
    (Rejection::DpopProofReplayed, 401, "invalid_dpop_proof", "DPoP proof replayed"),
    #[cfg(policy_certificate)]
    (Rejection::CertificateRequired, 401, "invalid_token", "certificate-bound token required"),
    #[cfg(policy_certificate)]
    (
        Rejection::CertificateMissing,
        401,
        "invalid_token",
        "token bound to a client certificate, none presented",
    ),
    #[cfg(policy_certificate)]
    (Rejection::CertificateMismatch, 401, "invalid_token", "token bound to another client certificate"),
    #[cfg(policy_dpop)]
    (Rejection::DpopNonceRequired, 401, "use_dpop_nonce", "DPoP proof needs a fresh nonce"),
];

#[test]
fn every_variant_answers_as_the_expected_table_says() {
    assert_eq!(Rejection::ALL.len(), EXPECTED.len(), "a variant is missing from EXPECTED");
    for (&rejection, &(expected, status, code, reason)) in Rejection::ALL.iter().zip(EXPECTED) {
        assert_eq!(rejection, expected, "table order");
        assert_eq!(rejection.status(), status, "{rejection:?}");
        assert_eq!(rejection.error_code().map_or("", ErrorCode::as_str), code, "{rejection:?}");
        assert_eq!(rejection.reason(), reason, "{rejection:?}");
    }
}

#[test]
fn reasons_use_only_rfc6750_characters_are_short_and_distinct() {
    let rfc6750 = |b: u8| matches!(b, 0x20..=0x21 | 0x23..=0x5b | 0x5d..=0x7e);
    for (i, rejection) in Rejection::ALL.iter().enumerate() {
        let reason = rejection.reason();
        assert!(reason.bytes().all(rfc6750), "{rejection:?}");
        assert!(!reason.is_empty() && reason.len() <= 64, "{rejection:?}");
        assert!(Rejection::ALL[i + 1..].iter().all(|other| other.reason() != reason), "{rejection:?}");
    }
}

#[test]
fn codes_follow_rfc6750_by_status() {
    for rejection in Rejection::ALL {
        match (rejection.status(), rejection.error_code()) {
            (400 | 414 | 431, Some(ErrorCode::InvalidRequest)) => {}
            (401, Some(ErrorCode::InvalidToken)) => {}
            (403, Some(ErrorCode::InsufficientScope)) => {}
            (403 | 404, None) => {
                assert!(matches!(
                    rejection,
                    Rejection::Denied | Rejection::NotFound | Rejection::PreflightRefused
                ))
            }
            (401, None) => {
                assert!(matches!(rejection, Rejection::MissingAuthorization | Rejection::UnsupportedScheme))
            }
            #[cfg(runtime_keys)]
            (503, None) => assert_eq!(*rejection, Rejection::KeysUnavailable),
            #[cfg(policy_dpop)]
            (401, Some(ErrorCode::InvalidDpopProof)) => assert!(rejection.is_dpop()),
            #[cfg(policy_dpop)]
            (401, Some(ErrorCode::UseDpopNonce)) => assert_eq!(*rejection, Rejection::DpopNonceRequired),
            (429, None) => assert_eq!(*rejection, Rejection::RateLimited),
            (500, None) => {}
            other => panic!("{rejection:?}: {other:?}"),
        }
    }
}
