//! Phase 4, claims: the token's payload, read with `serde-json-core` after the
//! signature has been verified, and checked against the clock and the config.
//!
//! - `exp` is required; `nbf` and `iat` are optional. All are integer seconds
//!   as unsigned 64-bit numbers, so they stay right past 2038 and past 2^32.
//!   Expired means `exp + leeway < now`; not yet valid means
//!   `nbf > now + leeway`.
//! - `iss` must equal the configured issuer when one is configured.
//! - `aud` is a string or an array of at most [`MAX_AUDIENCES`] strings; the
//!   first audience, in token order, that has a route wins.
//! - `sub`, when present, is forwarded upstream as a header, so it must
//!   travel intact: visible ASCII and inner spaces only, no leading or
//!   trailing space (which HTTP would trim). It is refused, never trimmed.
//!   An empty `sub` names no one: no subject is forwarded, as without one.
//! - Strings are read raw, without unescaping. An escape in `aud` or `sub` is
//!   refused, so that one audience can never be spelled two ways; an escape in
//!   `iss` simply fails to match the configured issuer.
//! - The text must be strict JSON nested at most 16 deep ([`crate::json`]);
//!   duplicate members are refused (serde's derive reports them).

use heapless::Vec;
use serde::Deserialize;

use crate::config::{Config, Route};
use crate::json;
use crate::reject::Rejection;
use crate::route;

/// The most audiences an `aud` array may list.
pub const MAX_AUDIENCES: usize = 8;

/// What an accepted token grants: where to go and who is asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant<'c, 'a> {
    /// The route chosen by the token's audience.
    pub route: &'c Route<'c>,
    /// The token's subject, when it has one.
    pub subject: Option<&'a str>,
}

#[derive(Deserialize)]
struct RawClaims<'a, A> {
    exp: Option<u64>,
    nbf: Option<u64>,
    #[allow(dead_code)] // read only to check its type
    iat: Option<u64>,
    #[serde(borrow)]
    iss: Option<&'a str>,
    #[serde(borrow)]
    sub: Option<&'a str>,
    aud: Option<A>,
}

/// Reads `aud` either as one string or as a list of strings.
trait Audiences<'a> {
    fn list(&self) -> &[&'a str];
}

impl<'a> Audiences<'a> for &'a str {
    fn list(&self) -> &[&'a str] {
        core::slice::from_ref(self)
    }
}

impl<'a> Audiences<'a> for Vec<&'a str, MAX_AUDIENCES> {
    fn list(&self) -> &[&'a str] {
        self
    }
}

/// Checks the decoded claims JSON at time `now` (Unix seconds).
pub fn check<'c, 'a>(
    claims_json: &'a [u8],
    now: u64,
    config: &Config<'c>,
) -> Result<Grant<'c, 'a>, Rejection> {
    if !json::is_strict(claims_json) {
        return Err(Rejection::MalformedClaims);
    }
    // serde-json-core has no `deserialize_any`, so "string or array" is read
    // as a string first and, when the value is an array, read again as one.
    match serde_json_core::from_slice::<RawClaims<'a, &'a str>>(claims_json) {
        Ok((claims, _)) => grant(claims, now, config),
        Err(serde_json_core::de::Error::InvalidType) => {
            match serde_json_core::from_slice::<RawClaims<'a, Vec<&'a str, MAX_AUDIENCES>>>(claims_json) {
                Ok((claims, _)) => grant(claims, now, config),
                Err(_) => Err(Rejection::MalformedClaims),
            }
        }
        Err(_) => Err(Rejection::MalformedClaims),
    }
}

fn grant<'c, 'a, A: Audiences<'a>>(
    claims: RawClaims<'a, A>,
    now: u64,
    config: &Config<'c>,
) -> Result<Grant<'c, 'a>, Rejection> {
    let exp = claims.exp.ok_or(Rejection::MissingExpiry)?;
    if exp.saturating_add(config.leeway_secs) < now {
        return Err(Rejection::Expired);
    }
    if let Some(nbf) = claims.nbf
        && nbf > now.saturating_add(config.leeway_secs)
    {
        return Err(Rejection::NotYetValid);
    }
    if let Some(issuer) = config.issuer
        && claims.iss != Some(issuer)
    {
        return Err(Rejection::WrongIssuer);
    }
    let subject = match claims.sub {
        Some(sub) if sub.contains('\\') => return Err(Rejection::EscapedString),
        Some("") => None,
        Some(sub) if !travels_intact(sub) => return Err(Rejection::SubjectNotHeaderSafe),
        other => other,
    };
    let audiences = claims.aud.as_ref().map(Audiences::list).unwrap_or(&[]);
    if audiences.is_empty() {
        return Err(Rejection::MissingAudience);
    }
    if audiences.iter().any(|aud| aud.contains('\\')) {
        return Err(Rejection::EscapedString);
    }
    let route =
        audiences.iter().find_map(|aud| route::lookup(config.routes, aud)).ok_or(Rejection::NoRoute)?;
    Ok(Grant { route, subject })
}

/// True when `value` reaches the upstream as the same bytes in a header:
/// visible ASCII with inner spaces, nothing an HTTP parser would trim.
fn travels_intact(value: &str) -> bool {
    let bytes = value.as_bytes();
    let visible = |b: Option<&u8>| b.is_some_and(|b| (0x21..=0x7e).contains(b));
    visible(bytes.first()) && visible(bytes.last()) && bytes.iter().all(|b| (0x20..=0x7e).contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{HmacKey, Key, VerifyingKey};

    const NOW: u64 = 1_800_000_000;
    const CONFIG: Config<'static> = Config {
        realm: "test",
        issuer: Some("https://issuer.example"),
        leeway_secs: 30,
        trusted_proxy_hops: 0,
        keys: &[VerifyingKey::Hs256(Key {
            kid: "k",
            secret: b"0123456789abcdef0123456789abcdef",
            hmac: HmacKey::UNKEYED,
        })],
        routes: &[
            Route { audience: "billing", origin: "http://b", base_path: "" },
            Route { audience: "orders", origin: "http://o", base_path: "" },
        ],
    };

    fn upstream_of(json: &str) -> Result<(&'static str, Option<std::string::String>), Rejection> {
        check(json.as_bytes(), NOW, &CONFIG).map(|g| (g.route.origin, g.subject.map(Into::into)))
    }

    /// Claims with `extra` members spliced in after a valid iss.
    fn claims(extra: &str) -> std::string::String {
        std::format!(r#"{{"iss":"https://issuer.example"{extra}}}"#)
    }

    macro_rules! cases {
        ($($name:ident: $json:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(upstream_of(&$json), $expected);
            }
        )*};
    }

    cases! {
        string_aud: claims(r#","exp":1800000100,"aud":"orders","sub":"alice""#) => Ok(("http://o", Some("alice".into())));
        array_aud_first_routed_wins: claims(r#","exp":1800000100,"aud":["nope","billing","orders"]"#) => Ok(("http://b", None));
        exp_above_2_pow_32: claims(r#","exp":9007199254740991,"aud":"orders""#) => Ok(("http://o", None));
        exp_within_leeway: claims(r#","exp":1799999980,"aud":"orders""#) => Ok(("http://o", None));
        nbf_within_leeway: claims(r#","exp":1800000100,"nbf":1800000020,"aud":"orders""#) => Ok(("http://o", None));
        iat_any_time: claims(r#","exp":1800000100,"iat":1,"aud":"orders""#) => Ok(("http://o", None));
        unknown_claims_ignored: claims(r#","exp":1800000100,"aud":"orders","scope":"a b","x":{"y":[1,2]}"#) => Ok(("http://o", None));
        expired: claims(r#","exp":1799999969,"aud":"orders""#) => Err(Rejection::Expired);
        not_yet_valid: claims(r#","exp":1800000100,"nbf":1800000031,"aud":"orders""#) => Err(Rejection::NotYetValid);
        no_exp: claims(r#","aud":"orders""#) => Err(Rejection::MissingExpiry);
        exp_as_string: claims(r#","exp":"1800000100","aud":"orders""#) => Err(Rejection::MalformedClaims);
        exp_negative: claims(r#","exp":-1,"aud":"orders""#) => Err(Rejection::MalformedClaims);
        exp_fraction: claims(r#","exp":1800000100.5,"aud":"orders""#) => Err(Rejection::MalformedClaims);
        iat_as_string: claims(r#","exp":1800000100,"iat":"x","aud":"orders""#) => Err(Rejection::MalformedClaims);
        wrong_iss: r#"{"iss":"https://evil.example","exp":1800000100,"aud":"orders"}"# => Err(Rejection::WrongIssuer);
        missing_iss: r#"{"exp":1800000100,"aud":"orders"}"# => Err(Rejection::WrongIssuer);
        escaped_iss: r#"{"iss":"https:\/\/issuer.example","exp":1800000100,"aud":"orders"}"# => Err(Rejection::WrongIssuer);
        no_aud: claims(r#","exp":1800000100"#) => Err(Rejection::MissingAudience);
        empty_aud_list: claims(r#","exp":1800000100,"aud":[]"#) => Err(Rejection::MissingAudience);
        aud_without_route: claims(r#","exp":1800000100,"aud":"admin""#) => Err(Rejection::NoRoute);
        aud_list_without_route: claims(r#","exp":1800000100,"aud":["admin","root"]"#) => Err(Rejection::NoRoute);
        aud_case_differs: claims(r#","exp":1800000100,"aud":"Orders""#) => Err(Rejection::NoRoute);
        escaped_aud: claims(r#","exp":1800000100,"aud":"\u006frders""#) => Err(Rejection::EscapedString);
        escaped_aud_in_list: claims(r#","exp":1800000100,"aud":["admin","ord\u0065rs"]"#) => Err(Rejection::EscapedString);
        escaped_sub: claims(r#","exp":1800000100,"aud":"orders","sub":"a\"b""#) => Err(Rejection::EscapedString);
        sub_with_utf8: claims(r#","exp":1800000100,"aud":"orders","sub":"zoë""#) => Err(Rejection::SubjectNotHeaderSafe);
        sub_with_leading_space: claims(r#","exp":1800000100,"aud":"orders","sub":" admin""#) => Err(Rejection::SubjectNotHeaderSafe);
        sub_with_trailing_space: claims(r#","exp":1800000100,"aud":"orders","sub":"admin ""#) => Err(Rejection::SubjectNotHeaderSafe);
        sub_with_tab: claims(r#","exp":1800000100,"aud":"orders","sub":"ad	min""#) => Err(Rejection::MalformedClaims);
        sub_empty_is_no_subject: claims(r#","exp":1800000100,"aud":"orders","sub":"""#) => Ok(("http://o", None));
        sub_with_inner_space: claims(r#","exp":1800000100,"aud":"orders","sub":"Ada Lovelace""#) => Ok(("http://o", Some("Ada Lovelace".into())));
        too_many_audiences: claims(r#","exp":1800000100,"aud":["1","2","3","4","5","6","7","8","orders"]"#) => Err(Rejection::MalformedClaims);
        aud_number: claims(r#","exp":1800000100,"aud":7"#) => Err(Rejection::MalformedClaims);
        duplicate_exp: claims(r#","exp":1800000100,"exp":1,"aud":"orders""#) => Err(Rejection::MalformedClaims);
        duplicate_aud: claims(r#","exp":1800000100,"aud":"admin","aud":"orders""#) => Err(Rejection::MalformedClaims);
        duplicate_aud_as_array: claims(r#","exp":1800000100,"aud":["orders"],"aud":"admin""#) => Err(Rejection::MalformedClaims);
        malformed_json: claims(r#","exp":1800000100,"aud":"orders""#).replace('}', "") => Err(Rejection::MalformedClaims);
        not_an_object: "[1,2,3]" => Err(Rejection::MalformedClaims);
        unknown_member_not_json: claims(r#","exp":1800000100,"aud":"orders","x":tru"#) => Err(Rejection::MalformedClaims);
        bad_escape_in_unknown_member: claims(r#","exp":1800000100,"aud":"orders","x":"a\qb""#) => Err(Rejection::MalformedClaims);
        trailing_garbage: claims(r#","exp":1800000100,"aud":"orders""#) + "}" => Err(Rejection::MalformedClaims);
    }

    #[test]
    fn no_issuer_configured_accepts_any_iss() {
        let config = Config { issuer: None, ..CONFIG };
        let grant = check(br#"{"exp":1800000100,"aud":"orders"}"#, NOW, &config).expect("accepted");
        assert_eq!(grant.route.audience, "orders");
    }

    #[test]
    fn clock_past_2038_and_near_u64_max_never_overflows() {
        let json = br#"{"iss":"https://issuer.example","exp":18446744073709551615,"aud":"orders"}"#;
        assert!(check(json, u64::MAX, &CONFIG).is_ok());
        let json =
            br#"{"iss":"https://issuer.example","exp":2200000000,"nbf":18446744073709551615,"aud":"orders"}"#;
        assert_eq!(check(json, 2_147_483_648, &CONFIG).map(|_| ()), Err(Rejection::NotYetValid));
        let json = br#"{"iss":"https://issuer.example","exp":2200000000,"aud":"orders"}"#;
        assert!(check(json, 2_147_483_648, &CONFIG).is_ok(), "a 2038+ clock");
        assert_eq!(check(json, 2_200_000_031, &CONFIG).map(|_| ()), Err(Rejection::Expired));
    }
}
