//! Header: the JOSE header, and the key it selects.
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
//! are ignored: keys come only from the config or the issuer's fetched
//! JWKS ([`crate::keys`]), never from a token.
//!
//! The header is read in one strict pass with [`crate::jose::json::Reader`]: strict
//! RFC 8259, nested at most 16 deep, unknown members checked and skipped, and
//! `alg`, `typ`, `kid` and `crit` at most once each. Member names are decoded
//! before they are compared, by the function the claims use
//! ([`crate::jose::json::member_name`]), so `"\u0063rit"` is `crit` and `"\u0061lg"`
//! beside `"alg"` is a duplicate. Values are read as written, escapes not
//! decoded, so `"HS\u0032\u0035\u0036"` is not `HS256` and an escaped `kid`
//! names no key: one spelling per value.

use crate::jose::json::{self, Reader};
use crate::keys::{self, Alg, TokenHeader, VerifyingKey};
use crate::reject::Rejection;

/// The header members the gateway reads, their values as written (escapes
/// not decoded, so an escaped `alg` is never `HS256`). Unknown members are
/// checked as JSON and skipped; a member read here may appear once, however
/// its name is spelled.
#[derive(Default)]
struct RawHeader<'a> {
    alg: Option<&'a str>,
    typ: Option<&'a str>,
    kid: Option<&'a str>,
    crit: bool,
}

/// Reads the header object in one strict pass; `None` when it is not strict
/// JSON, not an object, repeats a member read here, or gives `alg`, `typ`
/// or `kid` a value other than a string or `null` (read as absent).
fn read(json: &[u8]) -> Option<RawHeader<'_>> {
    let mut reader = Reader::new(json)?;
    let mut header = RawHeader::default();
    let mut seen = 0u8;
    reader.skip_whitespace();
    let mut more = reader.open(b'{', b'}')?;
    while more {
        let mut buf = [0u8; json::NAME_BYTES];
        let (bit, slot) = match json::member_name(reader.name()?, &mut buf) {
            Some("alg") => (1, Some(&mut header.alg)),
            Some("typ") => (2, Some(&mut header.typ)),
            Some("kid") => (4, Some(&mut header.kid)),
            Some("crit") => (8, None),
            _ => (0, None),
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        match slot {
            Some(slot) if !reader.null() => *slot = Some(reader.string()?.text),
            Some(_) => {}
            None => reader.skip_value(1).then_some(())?,
        }
        more = reader.more(b'}')?;
    }
    header.crit = seen & 8 != 0;
    reader.at_end().then_some(header)
}

/// Checks the decoded header JSON: strict, an `alg` this build verifies, a
/// `typ` of a JWT, no `crit`.
pub fn check(header_json: &[u8]) -> Result<TokenHeader<'_>, Rejection> {
    let header = read(header_json).ok_or(Rejection::MalformedHeader)?;
    let alg = header.alg.and_then(Alg::from_name).ok_or(Rejection::UnsupportedAlgorithm)?;
    if let Some(typ) = header.typ
        && !typ.eq_ignore_ascii_case("JWT")
        && !typ.eq_ignore_ascii_case("at+jwt")
    {
        return Err(Rejection::UnsupportedType);
    }
    if header.crit {
        return Err(Rejection::CriticalHeader);
    }
    Ok(TokenHeader { alg, kid: header.kid })
}

/// Checks the decoded header JSON and returns the key of `keys` it
/// selects, which is always a key of the algorithm the header names.
pub fn select_key<'c>(
    header_json: &[u8],
    keys: &'c [VerifyingKey<'c>],
) -> Result<&'c VerifyingKey<'c>, Rejection> {
    keys::pick(&check(header_json)?, keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{HmacKey, Hs256Key as Key};

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

    fn kid_of(json: &impl AsRef<str>) -> Result<&'static str, Rejection> {
        select_key(json.as_ref().as_bytes(), KEYS).map(|k| k.kid())
    }

    crate::cases::cases! { kid_of;
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
        // Member names are decoded before they are compared (RFC 8259
        // section 7), as the claims reader does: an escaped name is the member.
        escaped_crit: r#"{"alg":"HS256","\u0063rit":["exp"],"exp":1,"kid":"k1"}"# => Err(Rejection::CriticalHeader);
        crit_spelled_with_escapes_only: r#"{"alg":"HS256","\u0063\u0072\u0069\u0074":[],"kid":"k1"}"# => Err(Rejection::CriticalHeader);
        escaped_alg_duplicates_alg: r#"{"alg":"HS256","\u0061lg":"none","kid":"k1"}"# => Err(Rejection::MalformedHeader);
        escaped_alg_before_alg: r#"{"\u0061lg":"none","alg":"HS256","kid":"k1"}"# => Err(Rejection::MalformedHeader);
        escaped_typ_is_typ: r#"{"alg":"HS256","\u0074yp":"JOSE+JSON","kid":"k1"}"# => Err(Rejection::UnsupportedType);
        escaped_kid_duplicates_kid: r#"{"alg":"HS256","kid":"k1","\u006bid":"k2"}"# => Err(Rejection::MalformedHeader);
        escaped_crit_duplicates_crit: r#"{"alg":"HS256","crit":null,"cri\u0074":null,"kid":"k1"}"# => Err(Rejection::MalformedHeader);
        escaped_names_are_the_members: r#"{"\u0061lg":"HS256","\u006Bid":"k2","typ\u0000":"x"}"# => Ok("k2");
        escaped_name_of_another_member: r#"{"alg":"HS256","kid":"k1","\u0061lgx":"none","\ud800":1}"# => Ok("k1");
        too_deep: &std::format!(r#"{{"alg":"HS256","kid":"k1","x":{}{}}}"#, "[".repeat(16), "]".repeat(16)) => Err(Rejection::MalformedHeader);
    }

    #[test]
    fn a_single_key_needs_no_kid() {
        let only = &KEYS[..1];
        let key = select_key(br#"{"alg":"HS256"}"#, only).expect("single key");
        assert_eq!(key.kid(), "k1");
    }
}
