//! Every way a request can be turned away, with its HTTP status, its RFC 6750
//! error code and a short reason.
//!
//! One enum for the whole request path keeps the answers consistent: each
//! phase returns `Err(Rejection::X)` and the response writer turns it into a
//! status, a `WWW-Authenticate` challenge and a JSON body.

/// The RFC 6750 section 3.1 error codes the gateway uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The request is malformed: 400.
    InvalidRequest,
    /// The token is expired, malformed, forged or not for us: 401.
    InvalidToken,
}

impl ErrorCode {
    /// The code as it appears in `error="..."`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::InvalidToken => "invalid_token",
        }
    }
}

/// Why a request was not forwarded. Variants carry no data, so a rejection is
/// one byte and its reason a static string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// The request head is not valid HTTP/1.x.
    MalformedRequest,
    /// The request head ends before its blank line.
    IncompleteRequest,
    /// The request head is larger than the module's input buffer.
    HeadTooLarge,
    /// The request head has more header fields than the parser holds.
    TooManyHeaders,
    /// No `Authorization` header.
    MissingAuthorization,
    /// An `Authorization` header with a scheme other than Bearer.
    UnsupportedScheme,
    /// More than one `Authorization` header.
    DuplicateAuthorization,
    /// `Bearer` without a token, a tab after the scheme, or characters that
    /// RFC 6750's b64token does not allow.
    MalformedAuthorization,
    /// The token is longer than the 256-byte token buffer.
    TokenTooLong,
    /// The token is not three dot-separated parts.
    MalformedToken,
    /// A part holds a character outside base64url, padding, or non-canonical bits.
    BadEncoding,
    /// The JOSE header is not strict JSON (RFC 8259, nested at most 16 deep)
    /// or not an object of the expected shape.
    MalformedHeader,
    /// `alg` is missing or not exactly `HS256`.
    UnsupportedAlgorithm,
    /// `typ` is present and neither `JWT` nor `at+jwt`.
    UnsupportedType,
    /// The header carries `crit`, which this gateway does not understand.
    CriticalHeader,
    /// `kid` names no configured key.
    UnknownKey,
    /// No `kid`, and more than one key is configured.
    KeyIdRequired,
    /// The signature part is empty.
    MissingSignature,
    /// The HMAC does not match (or is not 32 bytes).
    BadSignature,
    /// The claims are not strict JSON (RFC 8259, nested at most 16 deep) or
    /// not an object of the expected shape (wrong types, duplicate keys, too
    /// many audiences).
    MalformedClaims,
    /// A string the gateway compares or forwards uses a JSON escape, which
    /// could spell one value two ways.
    EscapedString,
    /// No `exp` claim.
    MissingExpiry,
    /// `exp` plus leeway is in the past.
    Expired,
    /// `nbf` minus leeway is in the future.
    NotYetValid,
    /// `iss` is missing or not the configured issuer.
    WrongIssuer,
    /// No `aud` claim, or an empty list.
    MissingAudience,
    /// No audience of the token has a route.
    NoRoute,
    /// `sub` holds characters that cannot travel in an HTTP header.
    SubjectNotHeaderSafe,
    /// The request-scoped arena ran out (a bug or a misconfigured build).
    ScratchExhausted,
    /// The host passed a time that is negative, not finite, or beyond 2^53.
    InvalidClock,
}

impl Rejection {
    /// Every variant, for tests and documentation.
    pub const ALL: [Rejection; 30] = [
        Rejection::MalformedRequest,
        Rejection::IncompleteRequest,
        Rejection::HeadTooLarge,
        Rejection::TooManyHeaders,
        Rejection::MissingAuthorization,
        Rejection::UnsupportedScheme,
        Rejection::DuplicateAuthorization,
        Rejection::MalformedAuthorization,
        Rejection::TokenTooLong,
        Rejection::MalformedToken,
        Rejection::BadEncoding,
        Rejection::MalformedHeader,
        Rejection::UnsupportedAlgorithm,
        Rejection::UnsupportedType,
        Rejection::CriticalHeader,
        Rejection::UnknownKey,
        Rejection::KeyIdRequired,
        Rejection::MissingSignature,
        Rejection::BadSignature,
        Rejection::MalformedClaims,
        Rejection::EscapedString,
        Rejection::MissingExpiry,
        Rejection::Expired,
        Rejection::NotYetValid,
        Rejection::WrongIssuer,
        Rejection::MissingAudience,
        Rejection::NoRoute,
        Rejection::SubjectNotHeaderSafe,
        Rejection::ScratchExhausted,
        Rejection::InvalidClock,
    ];

    /// The HTTP status of the answer.
    pub const fn status(self) -> u16 {
        match self {
            Rejection::MalformedRequest
            | Rejection::IncompleteRequest
            | Rejection::DuplicateAuthorization
            | Rejection::MalformedAuthorization => 400,
            Rejection::HeadTooLarge | Rejection::TooManyHeaders => 431,
            Rejection::ScratchExhausted | Rejection::InvalidClock => 500,
            _ => 401,
        }
    }

    /// The RFC 6750 error code. None for a request with no credentials (RFC
    /// 6750 section 3.1: no error code when authentication was not attempted)
    /// and for the gateway's own failures.
    pub const fn error_code(self) -> Option<ErrorCode> {
        match self.status() {
            400 | 431 => Some(ErrorCode::InvalidRequest),
            401 => match self {
                Rejection::MissingAuthorization | Rejection::UnsupportedScheme => None,
                _ => Some(ErrorCode::InvalidToken),
            },
            _ => None,
        }
    }

    /// A short reason for `error_description`, made only of the characters
    /// RFC 6750 allows there (%x20-21 / %x23-5B / %x5D-7E).
    pub const fn reason(self) -> &'static str {
        match self {
            Rejection::MalformedRequest => "malformed request head",
            Rejection::IncompleteRequest => "incomplete request head",
            Rejection::HeadTooLarge => "request head too large",
            Rejection::TooManyHeaders => "too many header fields",
            Rejection::MissingAuthorization => "bearer token required",
            Rejection::UnsupportedScheme => "authorization scheme must be Bearer",
            Rejection::DuplicateAuthorization => "more than one authorization header",
            Rejection::MalformedAuthorization => "malformed authorization header",
            Rejection::TokenTooLong => "token longer than 256 bytes",
            Rejection::MalformedToken => "token is not a compact JWS",
            Rejection::BadEncoding => "token is not canonical base64url",
            Rejection::MalformedHeader => "malformed token header",
            Rejection::UnsupportedAlgorithm => "alg must be HS256",
            Rejection::UnsupportedType => "typ must be JWT or at+jwt",
            Rejection::CriticalHeader => "crit header not supported",
            Rejection::UnknownKey => "unknown kid",
            Rejection::KeyIdRequired => "kid required",
            Rejection::MissingSignature => "signature missing",
            Rejection::BadSignature => "signature mismatch",
            Rejection::MalformedClaims => "malformed claims",
            Rejection::EscapedString => "escaped strings not accepted in aud or sub",
            Rejection::MissingExpiry => "exp claim required",
            Rejection::Expired => "token expired",
            Rejection::NotYetValid => "token not yet valid",
            Rejection::WrongIssuer => "issuer not accepted",
            Rejection::MissingAudience => "aud claim required",
            Rejection::NoRoute => "no route for audience",
            Rejection::SubjectNotHeaderSafe => "sub not header-safe",
            Rejection::ScratchExhausted => "gateway scratch space exhausted",
            Rejection::InvalidClock => "host clock invalid",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rfc6750_description_char(b: u8) -> bool {
        matches!(b, 0x20..=0x21 | 0x23..=0x5b | 0x5d..=0x7e)
    }

    #[test]
    fn reasons_use_only_rfc6750_characters_and_are_short() {
        for rejection in Rejection::ALL {
            let reason = rejection.reason();
            assert!(reason.bytes().all(rfc6750_description_char), "{rejection:?}");
            assert!(!reason.is_empty() && reason.len() <= 64, "{rejection:?}");
        }
    }

    #[test]
    fn statuses_follow_rfc6750() {
        for rejection in Rejection::ALL {
            let expected_code = match rejection.status() {
                400 | 431 => Some(ErrorCode::InvalidRequest),
                401 if matches!(
                    rejection,
                    Rejection::MissingAuthorization | Rejection::UnsupportedScheme
                ) =>
                {
                    None
                }
                401 => Some(ErrorCode::InvalidToken),
                500 => None,
                other => panic!("unexpected status {other} for {rejection:?}"),
            };
            assert_eq!(rejection.error_code(), expected_code, "{rejection:?}");
        }
    }

    #[test]
    fn all_lists_each_variant_once() {
        for (i, a) in Rejection::ALL.iter().enumerate() {
            for b in &Rejection::ALL[i + 1..] {
                assert_ne!(a, b);
                assert_ne!(a.reason(), b.reason());
            }
        }
    }
}
