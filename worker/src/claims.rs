//! Phase 4, claims: the token's payload, read in one strict pass after the
//! signature has been verified, and checked against the clock and the config.
//!
//! - The text must be strict JSON (RFC 8259) in UTF-8, an object nested at
//!   most 16 deep ([`crate::json`]); members the gateway does not read are
//!   checked as JSON and skipped. A member the gateway reads may appear once:
//!   a second `exp`, `nbf`, `iat`, `iss`, `sub` or `aud` refuses the token,
//!   also when its name is spelled with escapes (`"\u0061ud"` is `aud`).
//! - Strings are decoded (RFC 8259 section 7) before they are compared or
//!   forwarded, so `"https:\/\/issuer"` is `https://issuer` and `"\u006frders"`
//!   routes exactly like `"orders"`. A decoded string is then judged like any
//!   other. A `\uXXXX` naming half a surrogate pair is no text at all: in
//!   `iss`, `sub` or `aud` it is refused ("lone surrogate escape in a claim").
//!   Escaped strings are decoded into the request arena, never a heap.
//! - `exp` is required; `nbf` and `iat` are optional; `null` reads as absent.
//!   Each is a NumericDate (RFC 7519 section 2): a JSON number, fractions
//!   and exponents allowed (`1800000600.5`, `1.8e9`), read exactly (no
//!   floating point) and rounded toward safety: `exp` down, `nbf` up. A
//!   negative value, or one past 2^64 - 1 seconds (`1e400`), is "malformed
//!   claims"; `-0` is zero. Expired means `exp + leeway < now`; not yet
//!   valid means `nbf > now + leeway`.
//! - `iss` must equal the configured issuer when one is configured.
//! - `aud` is a string or an array of at most [`MAX_AUDIENCES`] strings; the
//!   first audience, in token order, that has a route wins.
//! - `sub`, when present, is forwarded upstream as a header, so it must
//!   travel intact: visible ASCII and inner spaces only, no leading or
//!   trailing space (which HTTP would trim). It is refused, never trimmed,
//!   so a subject decoded to a control (`"\u0000"`, `"\r\n"`) is refused.
//!   An empty `sub` names no one: no subject is forwarded, as without one.

use crate::arena::Arena;
use crate::config::{Config, Route};
use crate::json::{self, RawString, Reader, Unescape};
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

/// The claims the gateway reads, as found in one pass.
#[derive(Default)]
struct Claims<'c, 'a> {
    exp: Option<u64>,
    nbf: Option<u64>,
    iss: Option<&'a str>,
    sub: Option<&'a str>,
    /// How many audiences `aud` lists (a string is one).
    audiences: usize,
    /// The route of the first audience that has one.
    route: Option<&'c Route<'c>>,
}

/// The members the gateway reads, each a bit of the set already seen.
#[derive(Clone, Copy)]
enum Member {
    Exp = 1,
    Nbf = 2,
    Iat = 4,
    Iss = 8,
    Sub = 16,
    Aud = 32,
}

/// Checks the decoded claims JSON at time `now` (Unix seconds). Escaped
/// strings are decoded into `arena`.
pub fn check<'c, 'a>(
    claims_json: &'a [u8],
    now: u64,
    config: &Config<'c>,
    arena: &mut Arena<'a>,
) -> Result<Grant<'c, 'a>, Rejection> {
    let claims = read(claims_json, config, arena)?;
    judge(&claims, now, config)
}

/// Reads the whole object, checking it as strict JSON, and keeps the claims.
fn read<'c, 'a>(
    json: &'a [u8],
    config: &Config<'c>,
    arena: &mut Arena<'a>,
) -> Result<Claims<'c, 'a>, Rejection> {
    const MALFORMED: Rejection = Rejection::MalformedClaims;
    let mut reader = Reader::new(json).ok_or(MALFORMED)?;
    let mut claims = Claims::default();
    let mut seen = 0u8;
    reader.skip_whitespace();
    let mut more = reader.open(b'{', b'}').ok_or(MALFORMED)?;
    while more {
        let name = reader.name().ok_or(MALFORMED)?;
        match member(name) {
            Some(member) => {
                if seen & member as u8 != 0 {
                    return Err(MALFORMED);
                }
                seen |= member as u8;
                read_member(&mut reader, member, &mut claims, config, arena)?;
            }
            None if reader.skip_value(1) => {}
            None => return Err(MALFORMED),
        }
        more = reader.more(b'}').ok_or(MALFORMED)?;
    }
    if !reader.at_end() {
        return Err(MALFORMED);
    }
    Ok(claims)
}

/// The member a name stands for, its escapes decoded ([`json::member_name`],
/// which the JOSE header's names are read with too).
fn member(name: RawString<'_>) -> Option<Member> {
    let mut buf = [0u8; json::NAME_BYTES];
    Some(match json::member_name(name, &mut buf)? {
        "exp" => Member::Exp,
        "nbf" => Member::Nbf,
        "iat" => Member::Iat,
        "iss" => Member::Iss,
        "sub" => Member::Sub,
        "aud" => Member::Aud,
        _ => return None,
    })
}

/// Reads the value of `member` into `claims`. `null` leaves it absent.
fn read_member<'c, 'a>(
    reader: &mut Reader<'a>,
    member: Member,
    claims: &mut Claims<'c, 'a>,
    config: &Config<'c>,
    arena: &mut Arena<'a>,
) -> Result<(), Rejection> {
    const MALFORMED: Rejection = Rejection::MalformedClaims;
    if reader.null() {
        return Ok(());
    }
    match member {
        Member::Exp => claims.exp = Some(numeric_date(reader.number().ok_or(MALFORMED)?, Round::Down)?),
        Member::Nbf => claims.nbf = Some(numeric_date(reader.number().ok_or(MALFORMED)?, Round::Up)?),
        Member::Iat => {
            numeric_date(reader.number().ok_or(MALFORMED)?, Round::Down)?;
        }
        Member::Iss => claims.iss = Some(text(reader.string().ok_or(MALFORMED)?, arena)?),
        Member::Sub => claims.sub = Some(text(reader.string().ok_or(MALFORMED)?, arena)?),
        Member::Aud => match reader.open(b'[', b']') {
            None => audience(text(reader.string().ok_or(MALFORMED)?, arena)?, claims, config),
            Some(mut more) => {
                while more {
                    if claims.audiences == MAX_AUDIENCES {
                        return Err(MALFORMED);
                    }
                    audience(text(reader.string().ok_or(MALFORMED)?, arena)?, claims, config);
                    more = reader.more(b']').ok_or(MALFORMED)?;
                }
            }
        },
    }
    Ok(())
}

/// Counts one audience and keeps its route when it is the first routed one.
fn audience<'c>(aud: &str, claims: &mut Claims<'c, '_>, config: &Config<'c>) {
    claims.audiences += 1;
    if claims.route.is_none() {
        claims.route = route::lookup(config.routes, aud);
    }
}

/// The text a string stands for: the string itself, or its escapes decoded
/// into the arena.
fn text<'a>(raw: RawString<'a>, arena: &mut Arena<'a>) -> Result<&'a str, Rejection> {
    if !raw.escaped {
        return Ok(raw.text);
    }
    let out = arena.alloc(raw.text.len())?;
    json::unescape(raw, out).map_err(|e| match e {
        Unescape::LoneSurrogate => Rejection::LoneSurrogate,
        // The buffer is as long as the escaped text, which is never shorter.
        Unescape::TooLong => Rejection::ScratchExhausted,
    })
}

/// Which way a NumericDate with a fraction is rounded to whole seconds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Round {
    Down,
    Up,
}

/// The whole seconds of a JSON number `literal` (already checked against the
/// grammar), computed exactly from its digits: no float rounding, whatever
/// the exponent. Negative values and values past `u64::MAX` are refused.
fn numeric_date(literal: &[u8], round: Round) -> Result<u64, Rejection> {
    const MALFORMED: Rejection = Rejection::MalformedClaims;
    let (negative, literal) = match literal.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, literal),
    };
    let mantissa_len = literal.iter().position(|&b| b == b'e' || b == b'E').unwrap_or(literal.len());
    let (mantissa, exponent) = literal.split_at(mantissa_len);
    let integer_len = mantissa.iter().position(|&b| b == b'.').unwrap_or(mantissa.len());
    // How many digits stand before the decimal point once the exponent moved it.
    let point = integer_len as i64 + exponent_value(exponent);
    let (mut whole, mut count, mut fraction) = (0u64, 0i64, false);
    for &digit in mantissa.iter().filter(|&&b| b != b'.') {
        if count < point {
            whole = whole
                .checked_mul(10)
                .and_then(|w| w.checked_add(u64::from(digit - b'0')))
                .ok_or(MALFORMED)?;
        } else {
            fraction |= digit != b'0';
        }
        count += 1;
    }
    if whole == 0 && !fraction {
        return Ok(0); // zero, however written (`-0`, `0.0e9`)
    }
    if negative {
        return Err(MALFORMED);
    }
    // Zeros the exponent adds after the last digit (zero stays zero; past
    // 20 digits it overflows, so this loop is short).
    if whole != 0 {
        for _ in count..point {
            whole = whole.checked_mul(10).ok_or(MALFORMED)?;
        }
    }
    match (round, fraction) {
        (Round::Up, true) => whole.checked_add(1).ok_or(MALFORMED),
        _ => Ok(whole),
    }
}

/// The value of an exponent part (`e+12`, `E-3`, or empty), clamped to
/// ±1,000,000, far past any exponent that leaves a representable time.
fn exponent_value(exponent: &[u8]) -> i64 {
    let Some((_, rest)) = exponent.split_first() else { return 0 };
    let (sign, digits) = match rest.split_first() {
        Some((b'-', digits)) => (-1, digits),
        Some((b'+', digits)) => (1, digits),
        _ => (1, rest),
    };
    let magnitude = digits.iter().fold(0i64, |acc, &d| (acc * 10 + i64::from(d - b'0')).min(1_000_000));
    sign * magnitude
}

/// Judges the claims read against the clock and the config.
fn judge<'c, 'a>(claims: &Claims<'c, 'a>, now: u64, config: &Config<'c>) -> Result<Grant<'c, 'a>, Rejection> {
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
        Some("") => None,
        Some(sub) if !travels_intact(sub) => return Err(Rejection::SubjectNotHeaderSafe),
        other => other,
    };
    if claims.audiences == 0 {
        return Err(Rejection::MissingAudience);
    }
    let route = claims.route.ok_or(Rejection::NoRoute)?;
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
        max_token_bytes: 256,
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
        checked(json.as_bytes(), NOW, &CONFIG)
    }

    /// `check` with an arena of its own: the route's origin and the subject.
    fn checked(
        json: &[u8],
        now: u64,
        config: &Config<'static>,
    ) -> Result<(&'static str, Option<std::string::String>), Rejection> {
        let mut region = std::vec![0u8; json.len()];
        let mut arena = Arena::new(&mut region);
        check(json, now, config, &mut arena).map(|g| (g.route.origin, g.subject.map(Into::into)))
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
        iat_as_string: claims(r#","exp":1800000100,"iat":"x","aud":"orders""#) => Err(Rejection::MalformedClaims);
        wrong_iss: r#"{"iss":"https://evil.example","exp":1800000100,"aud":"orders"}"# => Err(Rejection::WrongIssuer);
        missing_iss: r#"{"exp":1800000100,"aud":"orders"}"# => Err(Rejection::WrongIssuer);
        no_aud: claims(r#","exp":1800000100"#) => Err(Rejection::MissingAudience);
        empty_aud_list: claims(r#","exp":1800000100,"aud":[]"#) => Err(Rejection::MissingAudience);
        aud_without_route: claims(r#","exp":1800000100,"aud":"admin""#) => Err(Rejection::NoRoute);
        aud_list_without_route: claims(r#","exp":1800000100,"aud":["admin","root"]"#) => Err(Rejection::NoRoute);
        aud_case_differs: claims(r#","exp":1800000100,"aud":"Orders""#) => Err(Rejection::NoRoute);
        escaped_slash_in_iss: r#"{"iss":"https:\/\/issuer.example","exp":1800000100,"aud":"orders"}"# => Ok(("http://o", None));
        escaped_aud: claims(r#","exp":1800000100,"aud":"\u006frders""#) => Ok(("http://o", None));
        escaped_aud_in_list: claims(r#","exp":1800000100,"aud":["admin","ord\u0065rs"]"#) => Ok(("http://o", None));
        escaped_aud_upper_hex: claims(r#","exp":1800000100,"aud":"\u006Frders""#) => Ok(("http://o", None));
        escaped_name_is_the_member: claims(r#","exp":1800000100,"\u0061ud":"orders""#) => Ok(("http://o", None));
        escaped_name_duplicates_the_member: claims(r#","exp":1800000100,"aud":"admin","\u0061ud":"orders""#) => Err(Rejection::MalformedClaims);
        escaped_sub: claims(r#","exp":1800000100,"aud":"orders","sub":"a\u0041\"b\/""#) => Ok(("http://o", Some("aA\"b/".into())));
        escaped_sub_astral: claims(r#","exp":1800000100,"aud":"orders","sub":"\ud834\udd1e""#) => Err(Rejection::SubjectNotHeaderSafe);
        escaped_sub_nul: claims(r#","exp":1800000100,"aud":"orders","sub":"a\u0000""#) => Err(Rejection::SubjectNotHeaderSafe);
        escaped_sub_crlf: claims(r#","exp":1800000100,"aud":"orders","sub":"a\r\nX-Admin: 1""#) => Err(Rejection::SubjectNotHeaderSafe);
        escaped_sub_crlf_as_u: claims(r#","exp":1800000100,"aud":"orders","sub":"a\u000d\u000aX-Admin: 1""#) => Err(Rejection::SubjectNotHeaderSafe);
        escaped_sub_tab: claims(r#","exp":1800000100,"aud":"orders","sub":"a\tb""#) => Err(Rejection::SubjectNotHeaderSafe);
        escaped_aud_nul_routes_nowhere: claims(r#","exp":1800000100,"aud":"orders\u0000""#) => Err(Rejection::NoRoute);
        lone_surrogate_in_aud: claims(r#","exp":1800000100,"aud":"\ud800orders""#) => Err(Rejection::LoneSurrogate);
        lone_surrogate_in_sub: claims(r#","exp":1800000100,"aud":"orders","sub":"\udc00""#) => Err(Rejection::LoneSurrogate);
        lone_surrogate_in_iss: r#"{"iss":"\ud834","exp":1800000100,"aud":"orders"}"# => Err(Rejection::LoneSurrogate);
        lone_surrogate_in_other_member: claims(r#","exp":1800000100,"aud":"orders","x":"\ud800""#) => Ok(("http://o", None));
        exp_fraction_rounds_down: claims(r#","exp":1799999970.9,"aud":"orders""#) => Ok(("http://o", None));
        exp_fraction_rounds_down_to_expired: claims(r#","exp":1799999969.9,"aud":"orders""#) => Err(Rejection::Expired);
        exp_exponent: claims(r#","exp":1.8000001e9,"aud":"orders""#) => Ok(("http://o", None));
        exp_exponent_exactly_now: claims(r#","exp":1.8e9,"aud":"orders""#) => Ok(("http://o", None));
        exp_exponent_upper_signed: claims(r#","exp":18000001E+2,"aud":"orders""#) => Ok(("http://o", None));
        exp_negative_exponent: claims(r#","exp":18000001000e-1,"aud":"orders""#) => Ok(("http://o", None));
        exp_tiny: claims(r#","exp":1e-400,"aud":"orders""#) => Err(Rejection::Expired);
        exp_huge_exponent: claims(r#","exp":1e400,"aud":"orders""#) => Err(Rejection::MalformedClaims);
        exp_past_u64: claims(r#","exp":18446744073709551616,"aud":"orders""#) => Err(Rejection::MalformedClaims);
        exp_exponent_past_u64: claims(r#","exp":1.8446744073709551616e19,"aud":"orders""#) => Err(Rejection::MalformedClaims);
        exp_giant_exponent_digits: claims(r#","exp":1e99999999999999999999999,"aud":"orders""#) => Err(Rejection::MalformedClaims);
        exp_negative_zero_is_zero: claims(r#","exp":-0,"aud":"orders""#) => Err(Rejection::Expired);
        exp_negative_fraction: claims(r#","exp":-0.5,"aud":"orders""#) => Err(Rejection::MalformedClaims);
        nbf_fraction_rounds_up: claims(r#","exp":1800000100,"nbf":1800000030.1,"aud":"orders""#) => Err(Rejection::NotYetValid);
        nbf_whole_with_zero_fraction: claims(r#","exp":1800000100,"nbf":1800000030.000,"aud":"orders""#) => Ok(("http://o", None));
        nbf_negative_zero: claims(r#","exp":1800000100,"nbf":-0.0e5,"aud":"orders""#) => Ok(("http://o", None));
        nbf_exponent_rounds_up: claims(r#","exp":1800000100,"nbf":18000000301e-1,"aud":"orders""#) => Err(Rejection::NotYetValid);
        iat_fraction: claims(r#","exp":1800000100,"iat":1799999999.25,"aud":"orders""#) => Ok(("http://o", None));
        iat_huge: claims(r#","exp":1800000100,"iat":1e400,"aud":"orders""#) => Err(Rejection::MalformedClaims);
        nulls_read_as_absent: claims(r#","exp":1800000100,"nbf":null,"iat":null,"sub":null,"aud":"orders""#) => Ok(("http://o", None));
        null_aud: claims(r#","exp":1800000100,"aud":null"#) => Err(Rejection::MissingAudience);
        whitespace_everywhere: " {\n \"iss\" : \"https://issuer.example\" ,\t\"exp\" : 1800000100 , \"aud\" : [ \"orders\" ] }\r\n" => Ok(("http://o", None));
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
        let grant = checked(br#"{"exp":1800000100,"aud":"orders"}"#, NOW, &config).expect("accepted");
        assert_eq!(grant.0, "http://o");
    }

    #[test]
    fn clock_past_2038_and_near_u64_max_never_overflows() {
        let json = br#"{"iss":"https://issuer.example","exp":18446744073709551615,"aud":"orders"}"#;
        assert!(checked(json, u64::MAX, &CONFIG).is_ok());
        let json =
            br#"{"iss":"https://issuer.example","exp":2200000000,"nbf":18446744073709551615,"aud":"orders"}"#;
        assert_eq!(checked(json, 2_147_483_648, &CONFIG).map(|_| ()), Err(Rejection::NotYetValid));
        let json = br#"{"iss":"https://issuer.example","exp":2200000000,"aud":"orders"}"#;
        assert!(checked(json, 2_147_483_648, &CONFIG).is_ok(), "a 2038+ clock");
        assert_eq!(checked(json, 2_200_000_031, &CONFIG).map(|_| ()), Err(Rejection::Expired));
    }
}
