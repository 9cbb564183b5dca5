//! Phase 3a, header: the JOSE header, and the key it selects.
//!
//! RFC 8725 section 3.1: the algorithm is fixed, not negotiated. `alg` must
//! name an algorithm this build verifies, byte for byte (`HS256`, and with
//! their features `RS256`, `ES256`, `EdDSA`; so `none`, `None`, `hs256`,
//! `HS512` are refused), and it must equal the algorithm of the key `kid`
//! selects: each key verifies one algorithm, fixed at build time.
//! `typ`, when present, must be `JWT` or `at+jwt` (RFC 9068), compared
//! case-insensitively, and `crit` is refused because this gateway understands
//! no extension (RFC 7515 section 4.1.11). `kid` selects the key; without
//! one, a gateway with a single key uses it. Headers such as `jku` or `x5u`
//! are ignored: keys come only from the compiled-in table, never from a token.

use serde::Deserialize;

use crate::config::VerifyingKey;
use crate::json;
use crate::reject::Rejection;
use crate::signature::Alg;

/// The header members the gateway reads. Unknown members are ignored;
/// duplicate members make serde refuse the header.
#[derive(Deserialize)]
struct RawHeader<'a> {
    #[serde(borrow)]
    alg: Option<&'a str>,
    #[serde(borrow)]
    typ: Option<&'a str>,
    #[serde(borrow)]
    kid: Option<&'a str>,
    #[serde(default)]
    crit: Present,
}

/// Deserializes from any value and records only that the member was there.
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

/// Checks the decoded header JSON and returns the key it selects, which is
/// always a key of the algorithm the header names.
pub fn select_key<'c>(
    header_json: &[u8],
    keys: &'c [VerifyingKey<'c>],
) -> Result<&'c VerifyingKey<'c>, Rejection> {
    if !json::is_strict(header_json) {
        return Err(Rejection::MalformedHeader);
    }
    let (header, _) =
        serde_json_core::from_slice::<RawHeader<'_>>(header_json).map_err(|_| Rejection::MalformedHeader)?;
    let alg = header.alg.and_then(Alg::from_name).ok_or(Rejection::UnsupportedAlgorithm)?;
    if let Some(typ) = header.typ
        && !typ.eq_ignore_ascii_case("JWT")
        && !typ.eq_ignore_ascii_case("at+jwt")
    {
        return Err(Rejection::UnsupportedType);
    }
    if header.crit.0 {
        return Err(Rejection::CriticalHeader);
    }
    let key = match (header.kid, keys) {
        (Some(kid), _) => keys.iter().find(|key| key.kid() == kid).ok_or(Rejection::UnknownKey)?,
        (None, [only]) => only,
        (None, _) => return Err(Rejection::KeyIdRequired),
    };
    // The key decides the algorithm; the header only has to agree with it
    // (RFC 8725 section 3.1): an HS256 header never reaches an RSA key.
    if key.alg() != alg {
        return Err(Rejection::UnsupportedAlgorithm);
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{HmacKey, Key};

    const KEYS: &[VerifyingKey<'static>] = &[
        VerifyingKey::Hs256(Key {
            kid: "k1",
            secret: b"0123456789abcdef0123456789abcdef",
            hmac: HmacKey::UNKEYED,
        }),
        VerifyingKey::Hs256(Key {
            kid: "k2",
            secret: b"fedcba9876543210fedcba9876543210",
            hmac: HmacKey::UNKEYED,
        }),
    ];

    fn kid_of(json: &str) -> Result<&'static str, Rejection> {
        select_key(json.as_bytes(), KEYS).map(|k| k.kid())
    }

    macro_rules! cases {
        ($($name:ident: $json:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(kid_of($json), $expected);
            }
        )*};
    }

    cases! {
        hs256_with_kid: r#"{"alg":"HS256","kid":"k2"}"# => Ok("k2");
        typ_jwt_any_case: r#"{"alg":"HS256","typ":"jwt","kid":"k1"}"# => Ok("k1");
        typ_at_jwt: r#"{"typ":"AT+JWT","alg":"HS256","kid":"k1"}"# => Ok("k1");
        unknown_members_ignored: r#"{"alg":"HS256","kid":"k1","jku":"https://evil/keys","x5u":"u"}"# => Ok("k1");
        rfc7515_whitespace: "{\"typ\":\"JWT\",\r\n \"alg\":\"HS256\",\"kid\":\"k1\"}" => Ok("k1");
        alg_none: r#"{"alg":"none","kid":"k1"}"# => Err(Rejection::UnsupportedAlgorithm);
        alg_none_capital: r#"{"alg":"None","kid":"k1"}"# => Err(Rejection::UnsupportedAlgorithm);
        alg_none_upper: r#"{"alg":"NONE","kid":"k1"}"# => Err(Rejection::UnsupportedAlgorithm);
        alg_lower_hs256: r#"{"alg":"hs256","kid":"k1"}"# => Err(Rejection::UnsupportedAlgorithm);
        alg_rs256: r#"{"alg":"RS256","kid":"k1"}"# => Err(Rejection::UnsupportedAlgorithm);
        alg_hs512: r#"{"alg":"HS512","kid":"k1"}"# => Err(Rejection::UnsupportedAlgorithm);
        alg_escaped: r#"{"alg":"HS\u0032\u0035\u0036","kid":"k1"}"# => Err(Rejection::UnsupportedAlgorithm);
        alg_missing: r#"{"kid":"k1"}"# => Err(Rejection::UnsupportedAlgorithm);
        alg_not_a_string: r#"{"alg":256,"kid":"k1"}"# => Err(Rejection::MalformedHeader);
        typ_other: r#"{"alg":"HS256","typ":"JOSE","kid":"k1"}"# => Err(Rejection::UnsupportedType);
        crit_present: r#"{"alg":"HS256","crit":["exp"],"exp":1,"kid":"k1"}"# => Err(Rejection::CriticalHeader);
        crit_null: r#"{"alg":"HS256","crit":null,"kid":"k1"}"# => Err(Rejection::CriticalHeader);
        kid_unknown: r#"{"alg":"HS256","kid":"k3"}"# => Err(Rejection::UnknownKey);
        kid_path_like: r#"{"alg":"HS256","kid":"../../dev/null"}"# => Err(Rejection::UnknownKey);
        kid_with_nul: r#"{"alg":"HS256","kid":"k1\u0000"}"# => Err(Rejection::UnknownKey);
        kid_missing_with_two_keys: r#"{"alg":"HS256"}"# => Err(Rejection::KeyIdRequired);
        duplicate_alg: r#"{"alg":"HS256","alg":"none","kid":"k1"}"# => Err(Rejection::MalformedHeader);
        duplicate_kid: r#"{"alg":"HS256","kid":"k1","kid":"k2"}"# => Err(Rejection::MalformedHeader);
        not_an_object: r#"["HS256"]"# => Err(Rejection::MalformedHeader);
        truncated_json: r#"{"alg":"HS256""# => Err(Rejection::MalformedHeader);
        trailing_garbage: r#"{"alg":"HS256","kid":"k1"}x"# => Err(Rejection::MalformedHeader);
        empty: "" => Err(Rejection::MalformedHeader);
        unknown_member_not_json: r#"{"alg":"HS256","kid":"k1","x":1 2 3}"# => Err(Rejection::MalformedHeader);
        too_deep: &std::format!(r#"{{"alg":"HS256","kid":"k1","x":{}{}}}"#, "[".repeat(16), "]".repeat(16)) => Err(Rejection::MalformedHeader);
    }

    #[test]
    fn a_single_key_needs_no_kid() {
        let only = &KEYS[..1];
        let key = select_key(br#"{"alg":"HS256"}"#, only).expect("single key");
        assert_eq!(key.kid(), "k1");
    }
}
