//! Differential test: the gateway against the `jsonwebtoken` crate.
//!
//! A seeded generator makes tokens: well-formed ones with varied claims and
//! headers, ones mutated claim by claim and header by header (re-signed, so
//! that the difference reaches the claims checks), ones whose JSON is mutated
//! byte by byte (re-signed), and ones whose compact form is mutated byte by
//! byte (not re-signed). Each is decided by the gateway (`common::gateways()`:
//! the real `dist/gateway.wasm` and the native rlib) and by `jsonwebtoken`
//! configured to the gateway's rules:
//!
//! | rule | gateway (`gateway.toml`) | jsonwebtoken `Validation` |
//! |---|---|---|
//! | algorithm | HS256 only | `algorithms = [HS256]` |
//! | key | the `demo` key | `DecodingKey::from_secret(demo)` |
//! | exp | required, leeway 30 s | `required_spec_claims ∋ exp`, `leeway = 30` |
//! | nbf | checked when present | `validate_nbf = true` |
//! | iss | must equal the issuer | `set_issuer([issuer])`, `required_spec_claims ∋ iss` |
//! | aud | one of the routed audiences | `set_audience(routes)`, `required_spec_claims ∋ aud` |
//!
//! Both must accept or both reject, except for the intentional differences
//! below, each recognised by [`classify`] from the token alone (never from
//! either verdict) and counted. A difference can only change a verdict when
//! the token is signed with the gateway's key, so only such tokens are
//! classified; every other token is compared.
//!
//! | reason | gateway | jsonwebtoken |
//! |---|---|---|
//! | spaces around the token | stripped by HTTP (optional whitespace) before the gateway sees it | part of the token |
//! | token over `max_token_bytes` (2048 in the fixture) | refused (fixed buffer) | no limit |
//! | invalid UTF-8 in the JSON | refused in any string | accepted in members it does not read (`sub` when not configured, unknown claims) |
//! | JSON nested deeper than 16 | refused (bounds the parser's recursion) | up to 128 levels |
//! | escape in `alg`, `typ` or `kid` | compared raw, so `"HS\u0032..."` is not HS256 | unescaped first |
//! | `typ` other than JWT / at+jwt | refused (RFC 8725 3.11) | any string |
//! | `kid` naming no configured key | refused | `kid` ignored |
//! | `crit: ["b64"]` with `b64: true` | refused: no extension is understood | accepted |
//! | `b64` not `true` | ignored | refused |
//! | header members the gateway ignores (`cty`, `jku`, `jwk`, `x5u`, `x5c`, `x5t`, `x5t#S256`, `enc`, `zip`, `url`, `nonce`) of an unexpected type or duplicated | ignored | refused |
//! | claims as a JSON array | refused | read as a sequence of (exp, nbf, sub, iss, aud) |
//! | `sub` not printable ASCII | refused (it travels in a header) | any string |
//! | `sub` with a leading or trailing space | refused (HTTP would trim it in the header) | any string |
//! | `sub` not a string | refused | ignored |
//! | `iss` as an array | refused | accepted when it contains the issuer |
//! | `aud` array of more than 8 | refused (fixed table) | any length |
//! | `iat` not a NumericDate (a string, negative, past 2^64 - 1 such as `1e400`), or duplicated | refused | ignored |
//! | `nbf: null` | read as absent | refused as malformed |
//! | `exp`/`nbf` within 3 s of the leeway boundary | decided on the same second; a fraction rounds `exp` down and `nbf` up | `jsonwebtoken` reads the system clock itself, which may tick in between, and rounds a fraction to the nearest second |
//!
//! Both decode JSON escapes (RFC 8259 section 7) in `iss`, `aud` and `sub`
//! and in member names, of the claims and of the header (so an escaped
//! `crit` is `crit`, and `"\u0061lg"` beside `"alg"` a duplicate), and read `exp`/`nbf` as any JSON number (fractions,
//! exponents, `-0`): the generator spells these claims both ways and they
//! are compared like any other. Lone surrogate escapes (`"\ud800"`) are not
//! generated: `serde_json` fails inside `jsonwebtoken`'s lenient claim
//! parsing there, and the attack corpus pins the gateway's refusal.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use testkit::gateway::{Verdict, bearer_request, config, fixture_secret, mint, sign};

/// How many tokens to generate; the test asserts at least 10 000 are compared.
const TOKENS: usize = 24_000;
const SEED: u64 = 0x005e_ed0f_ca7e_2026;
/// The fixture's issuer (testkit/fixture.toml).
const ISS: &str = "https://issuer.test";

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A JSON object as an ordered list of members with raw values, so that
/// duplicates and exact spellings survive.
type Members = Vec<(String, String)>;

fn render(members: &Members) -> String {
    let body: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}", body.join(","))
}

fn quoted<S: std::fmt::Display + ?Sized>(s: &S) -> String {
    format!("\"{s}\"")
}

/// A time `offset` seconds from `now`, kept clear of the leeway boundaries.
fn time(now: u64, offset: i64) -> String {
    now.saturating_add_signed(offset).to_string()
}

fn gen_header(rng: &mut Rng) -> Members {
    let mut h: Members = Vec::new();
    let alg = if rng.chance(95) {
        "\"HS256\"".to_owned()
    } else {
        rng.pick(&[
            "\"none\"",
            "\"HS384\"",
            "\"RS256\"",
            "\"hs256\"",
            "\"HS\\u0032\\u0035\\u0036\"",
            "null",
            "256",
        ])
        .to_string()
    };
    if !rng.chance(3) {
        h.push(("alg".into(), alg));
    }
    if rng.chance(50) {
        let typ = if rng.chance(85) {
            rng.pick(&["\"JWT\"", "\"jwt\"", "\"at+jwt\"", "\"AT+JWT\"", "null"])
        } else {
            rng.pick(&[
                "\"JWT\"",
                "\"JWT\"",
                "\"jwt\"",
                "\"at+jwt\"",
                "\"AT+JWT\"",
                "\"JOSE\"",
                "null",
                "1",
                "\"J\\u0057T\"",
            ])
        };
        h.push(("typ".into(), typ.to_string()));
    }
    if rng.chance(70) {
        let kid = if rng.chance(90) {
            &"\"fixture\""
        } else {
            rng.pick(&["\"other\"", "\"\"", "null", "7", "\"fixtur\\u0065\"", "\"../fixture\""])
        };
        h.push(("kid".into(), kid.to_string()));
    }
    if rng.chance(8) {
        let (k, v) = *rng.pick(&[
            ("jku", "\"https://evil.example/k\""),
            ("x5u", "\"https://evil.example/c\""),
            ("cty", "\"JWT\""),
            ("cty", "1"),
            ("crit", "[\"b64\"]"),
            ("crit", "[\"exp\"]"),
            ("b64", "true"),
            ("b64", "false"),
            ("x5c", "[\"MII\"]"),
            ("x5t", "2"),
            ("zip", "\"DEF\""),
            ("nonce", "\"n\""),
            ("extra", "{\"a\":[1,2]}"),
            // Names spelled with escapes: the members they spell.
            ("\\u0063rit", "[\"exp\"]"),
            ("\\u0061lg", "\"none\""),
            ("\\u0074yp", "\"JOSE+JSON\""),
            ("\\u006bid", "\"fixture\""),
        ]);
        h.push((k.into(), v.into()));
    }
    if rng.chance(3) && !h.is_empty() {
        let dup = h[rng.below(h.len())].clone();
        h.push(dup);
    }
    // A member name spelled with an escape is the same member.
    if rng.chance(8) && !h.is_empty() {
        let at = rng.below(h.len());
        escape_first_character(&mut h[at].0);
    }
    shuffle(rng, &mut h);
    h
}

/// Spells the first character of a member name as a `\u` escape.
fn escape_first_character(name: &mut String) {
    if let Some(first) = name.chars().next().filter(|&c| c != '\\') {
        *name = format!("\\u{:04x}{}", u32::from(first), &name[first.len_utf8()..]);
    }
}

fn gen_claims(rng: &mut Rng, now: u64) -> Members {
    let mut c: Members = Vec::new();
    let offsets = [-200_000, -3600, -100, -40, -20, 0, 20, 40, 100, 3600, 200_000];
    if !rng.chance(4) {
        let iss = if rng.chance(85) {
            quoted(ISS)
        } else {
            rng.pick(&[
                "\"https://evil.example\"",
                "\"https:\\/\\/issuer.test\"",
                "\"\\u0068ttps://issuer.test\"",
                "\"https://issuer.test\\/\"",
                "\"https://issuer.test\\u0000\"",
                "null",
                "1",
                "[\"https://issuer.test\"]",
                "\"\"",
            ])
            .to_string()
        };
        c.push(("iss".into(), iss));
    }
    if !rng.chance(4) {
        let routed = ["orders", "billing", "users"];
        let aud = match rng.below(10) {
            0..=5 => quoted(rng.pick(&routed)),
            6 => {
                let n = rng.below(10);
                let items: Vec<String> = (0..n)
                    .map(|_| quoted(rng.pick(&["orders", "billing", "users", "admin", "x", "Orders"])))
                    .collect();
                format!("[{}]", items.join(","))
            }
            7 => quoted(rng.pick(&["admin", "Orders", "orders ", ""])),
            8 => rng.pick(&["null", "1", "[]", "[1]", "{\"a\":1}"]).to_string(),
            9 if rng.chance(60) => rng
                .pick(&[
                    "\"\\u006frders\"",
                    "\"\\u006Frders\"",
                    "[\"admin\",\"bill\\u0069ng\"]",
                    "\"us\\u0065rs\"",
                    "\"\\u0075\\u0073\\u0065\\u0072\\u0073\"",
                    "\"orders\\u0000\"",
                    "\"\\/orders\"",
                    "[\"\\u004frders\",\"users\"]",
                ])
                .to_string(),
            _ => format!("[{}]", quoted(rng.pick(&routed))),
        };
        c.push(("aud".into(), aud));
    }
    if !rng.chance(5) {
        let exp = if rng.chance(85) {
            let offset = if rng.chance(70) { *rng.pick(&offsets[5..]) } else { *rng.pick(&offsets) };
            time(now, offset + rng.below(5) as i64 - 2)
        } else {
            let float = format!("{}.0", now + 100);
            let fraction = format!("{}.{}", now.saturating_add_signed(*rng.pick(&offsets)), rng.below(1000));
            let exponent = format!("{}e-3", (now + 100) * 1000 + rng.below(1000) as u64);
            let mantissa = format!("{}.{}E+{}", now / 1_000_000_000, now % 1_000_000_000 + 1000, 9);
            rng.pick(&[
                "\"1900000000\"",
                "null",
                "-1",
                "-0",
                "-0.0",
                "-0.5",
                "1e400",
                "1e-400",
                "1.9e9",
                "2E+9",
                float.as_str(),
                fraction.as_str(),
                fraction.as_str(),
                exponent.as_str(),
                mantissa.as_str(),
                "18446744073709551615",
                "18446744073709551616",
                "0",
                "true",
            ])
            .to_string()
        };
        c.push(("exp".into(), exp));
    }
    if rng.chance(35) {
        let nbf = if rng.chance(85) {
            let offset = *rng.pick(&offsets);
            time(now, offset + rng.below(5) as i64 - 2)
        } else {
            let fraction = format!("{}.{}", now.saturating_add_signed(*rng.pick(&offsets)), rng.below(1000));
            let exponent = format!("{}E-1", now.saturating_add_signed(*rng.pick(&offsets)) * 10 + 5);
            rng.pick(&[
                "\"0\"",
                "null",
                "-5",
                "1.5",
                "0",
                "-0",
                "1e400",
                fraction.as_str(),
                fraction.as_str(),
                exponent.as_str(),
            ])
            .to_string()
        };
        c.push(("nbf".into(), nbf));
    }
    if rng.chance(40) {
        let iat = if rng.chance(85) {
            time(now, -60)
        } else {
            rng.pick(&["\"now\"", "null", "1.5", "-1", "1.7e9", "1e400"]).to_string()
        };
        c.push(("iat".into(), iat));
    }
    if rng.chance(60) {
        let sub = rng.pick(&[
            "\"alice\"",
            "\"bob@example.com\"",
            "\"user 42\"",
            "\" admin\"",
            "\"admin \"",
            "\"\"",
            "\"zo\u{eb}\"",
            "\"a\\\"b\"",
            "\"a\\u0041\"",
            "\"\\u0061lice\"",
            "\"bob\\/x\"",
            "\"a\\r\\nX-Admin: 1\"",
            "\"a\\u0000\"",
            "\"\\ud83d\\ude00\"",
            "\"\\u0020admin\"",
            "7",
            "null",
            "[\"alice\"]",
        ]);
        c.push(("sub".into(), sub.to_string()));
    }
    if rng.chance(25) {
        let (k, v) = *rng.pick(&[
            ("scope", "\"read write\""),
            ("jti", "\"abc\""),
            ("n", "1.5e3"),
            ("o", "{\"p\":[true,false,null]}"),
            ("s", "\"\\u00e9\\n\""),
        ]);
        c.push((k.into(), v.into()));
    }
    if rng.chance(4) && !c.is_empty() {
        let dup = c[rng.below(c.len())].clone();
        c.push(dup);
    }
    // A member name spelled with an escape is the same member.
    if rng.chance(5) && !c.is_empty() {
        let at = rng.below(c.len());
        escape_first_character(&mut c[at].0);
    }
    shuffle(rng, &mut c);
    c
}

fn shuffle<T>(rng: &mut Rng, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i + 1));
    }
}

/// Bytes a mutation writes: JSON structure, quotes, escapes, digits, whitespace, controls, non-ASCII.
const INTERESTING: &[u8] = b"{}[]\":,\\ 0123456789.-+eEtfnul\t\r\n\x00\x01\x7f\xc3\xa9\xffabcxyzAZ/u";

fn mutate_bytes(rng: &mut Rng, bytes: &mut Vec<u8>, alphabet: &[u8]) {
    for _ in 0..1 + rng.below(2) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(3) {
            0 if at < bytes.len() => bytes[at] = *rng.pick(alphabet),
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            _ => bytes.insert(at, *rng.pick(alphabet)),
        }
    }
}

/// Characters a token mutation writes: the base64url alphabet, dots, padding, and a few others.
const TOKEN_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_..=+/~!% ";

/// One generated token and how it was made.
fn generate(rng: &mut Rng, now: u64) -> (String, &'static str) {
    let secret = fixture_secret();
    let header = render(&gen_header(rng));
    let claims = render(&gen_claims(rng, now));
    match rng.below(10) {
        // Generated header and claims, signed with the gateway's key (or another).
        0..=3 => {
            let key: &[u8] = if rng.chance(95) { secret } else { b"another-key-of-thirty-two-bytes!" };
            (mint(header.as_bytes(), claims.as_bytes(), key), "generated")
        }
        // A valid-looking token whose header or claims JSON is mutated byte by byte, re-signed.
        4..=6 => {
            let (mut h, mut c) = (header.into_bytes(), claims.into_bytes());
            if rng.chance(30) {
                mutate_bytes(rng, &mut h, INTERESTING)
            } else {
                mutate_bytes(rng, &mut c, INTERESTING)
            }
            (mint(&h, &c, secret), "json-mutated")
        }
        // Claims as an array (serde's sequence form of a struct).
        7 if rng.chance(10) => {
            let arr = format!(r#"[{},null,"alice","{ISS}","orders"]"#, now + 600);
            (mint(header.as_bytes(), arr.as_bytes(), secret), "generated")
        }
        // Padding or the standard alphabet in the header or payload part, re-signed.
        8 if rng.chance(40) => {
            let token = mint(header.as_bytes(), claims.as_bytes(), secret);
            let dot = token.rfind('.').unwrap();
            let mut parts: Vec<String> = token[..dot].split('.').map(str::to_owned).collect();
            let part = &mut parts[rng.below(2)];
            if rng.chance(50) {
                while !part.len().is_multiple_of(4) {
                    part.push('=');
                }
                if rng.chance(30) {
                    part.push_str("==");
                }
            } else {
                *part = part.replace('-', "+").replace('_', "/");
            }
            let input = parts.join(".");
            let signature = sign(secret, input.as_bytes());
            (format!("{input}.{signature}"), "re-encoded")
        }
        // The compact form mutated character by character, not re-signed.
        _ => {
            let mut token = mint(header.as_bytes(), claims.as_bytes(), secret).into_bytes();
            match rng.below(4) {
                0 => {
                    let cut = rng.below(token.len());
                    token.truncate(cut);
                }
                1 => {
                    // Swap the signature for the one of other claims.
                    let other = mint(header.as_bytes(), b"{}", secret);
                    let sig = other.rsplit('.').next().unwrap().to_owned();
                    let dot = token.iter().rposition(|&b| b == b'.').unwrap();
                    token.truncate(dot + 1);
                    token.extend_from_slice(sig.as_bytes());
                }
                _ => mutate_bytes(rng, &mut token, TOKEN_CHARS),
            }
            (String::from_utf8(token).unwrap(), "token-mutated")
        }
    }
}

/// Why a token is left out of the comparison: an intentional difference.
fn classify(token: &str, now: u64) -> Option<&'static str> {
    // A difference can change a verdict only for a token signed with the
    // gateway's key in strict compact form; every other token both refuse.
    // HTTP drops optional whitespace around a field value, so a token with
    // spaces around it reaches the gateway without them.
    let trimmed = token.trim_matches(' ');
    if trimmed != token {
        return classify(trimmed, now).or(Some("spaces around the token (HTTP strips them)"));
    }
    let parts: Vec<&str> = token.split('.').collect();
    let [h, p, s] = parts[..] else { return None };
    let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).ok();
    let (Some(header), Some(claims), Some(_)) = (decode(h), decode(p), decode(s)) else { return None };
    if sign(fixture_secret(), format!("{h}.{p}").as_bytes()) != s {
        return None;
    }
    if token.len() > config().max_token_bytes {
        return Some("token over max_token_bytes");
    }
    let (Ok(header_text), Ok(claims_text)) = (std::str::from_utf8(&header), std::str::from_utf8(&claims))
    else {
        return Some("invalid UTF-8 in the JSON");
    };
    // Both sides refuse JSON that is not strict RFC 8259; the gateway also
    // refuses nesting deeper than 16, where serde_json allows 128.
    let too_deep = |json: &str| serde_json::from_str::<Value>(json).is_ok_and(|v| depth(&v) > 16);
    if too_deep(header_text) || too_deep(claims_text) {
        return Some("JSON nested deeper than 16");
    }
    if let Some(reason) = header_difference(&header) {
        return Some(reason);
    }
    claims_difference(&claims, now)
}

/// The members of a JSON object in order, duplicates kept, values raw.
fn members(json: &[u8]) -> Option<Vec<(String, Box<RawValue>)>> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<(String, Box<RawValue>)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = map.next_entry::<String, Box<RawValue>>()? {
                out.push(entry);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(json);
    de.deserialize_map(V).ok()
}

fn header_difference(header: &[u8]) -> Option<&'static str> {
    let members = members(header)?;
    let value = |name: &str| members.iter().find(|(k, _)| k == name).map(|(_, v)| v.get());
    let parsed = |name: &str| value(name).and_then(|raw| serde_json::from_str::<Value>(raw).ok());
    let count = |name: &str| members.iter().filter(|(k, _)| k == name).count();
    if ["alg", "typ", "kid"]
        .iter()
        .any(|m| value(m).is_some_and(|raw| raw.starts_with('"') && raw.contains('\\')))
    {
        return Some("escape in alg, typ or kid");
    }
    if let Some(Value::String(typ)) = parsed("typ")
        && !typ.eq_ignore_ascii_case("JWT")
        && !typ.eq_ignore_ascii_case("at+jwt")
    {
        return Some("typ other than JWT or at+jwt");
    }
    if let Some(Value::String(kid)) = parsed("kid")
        && config().issuers[0].keys.iter().all(|k| k.kid() != kid)
    {
        return Some("kid naming no configured key");
    }
    if parsed("crit") == Some(serde_json::json!(["b64"])) && parsed("b64") == Some(Value::Bool(true)) {
        return Some("crit [b64] with b64 true");
    }
    if value("b64").is_some() && parsed("b64") != Some(Value::Bool(true)) {
        return Some("b64 other than true");
    }
    const STRINGS: [&str; 7] = ["cty", "jku", "x5u", "x5t", "x5t#S256", "url", "nonce"];
    const OTHERS: [&str; 4] = ["jwk", "x5c", "enc", "zip"];
    let odd_type = STRINGS.iter().any(|m| matches!(parsed(m), Some(v) if !v.is_string() && !v.is_null()));
    let duplicated = STRINGS.iter().chain(&OTHERS).any(|m| count(m) > 1);
    if odd_type || duplicated || OTHERS.iter().any(|m| value(m).is_some()) {
        return Some("header member the gateway ignores, typed by jsonwebtoken");
    }
    None
}

fn claims_difference(claims: &[u8], now: u64) -> Option<&'static str> {
    if serde_json::from_slice::<Value>(claims).is_ok_and(|v| v.is_array()) {
        return Some("claims as a JSON array");
    }
    let members = members(claims)?;
    let value = |name: &str| members.iter().find(|(k, _)| k == name).map(|(_, v)| v.get());
    let parsed = |name: &str| value(name).and_then(|raw| serde_json::from_str::<Value>(raw).ok());
    let count = |name: &str| members.iter().filter(|(k, _)| k == name).count();
    match parsed("sub") {
        Some(Value::String(sub)) if !sub.bytes().all(|b| (0x20..=0x7e).contains(&b)) => {
            return Some("sub not printable ASCII");
        }
        Some(Value::String(sub)) if sub.starts_with(' ') || sub.ends_with(' ') => {
            return Some("sub with a leading or trailing space");
        }
        Some(Value::Null | Value::String(_)) | None => {}
        Some(_) => return Some("sub not a string"),
    }
    if parsed("iss").is_some_and(|v| v.is_array()) {
        return Some("iss as an array");
    }
    if parsed("aud").is_some_and(|v| v.as_array().is_some_and(|a| a.len() > 8)) {
        return Some("aud array longer than 8");
    }
    if value("nbf") == Some("null") {
        return Some("nbf null");
    }
    if count("iat") > 1 || value("iat").is_some_and(|raw| raw != "null" && numeric_date(raw).is_none()) {
        return Some("iat not a NumericDate, or duplicated");
    }
    let leeway = config().issuers[0].leeway_secs as f64;
    let near = |t: f64, boundary: f64| (t - boundary).abs() <= 3.0;
    let (now, date) = (now as f64, |name: &str| value(name).and_then(numeric_date));
    let exp_near = date("exp").is_some_and(|exp| near(exp + leeway, now));
    let nbf_near = date("nbf").is_some_and(|nbf| near(nbf, now + leeway));
    if exp_near || nbf_near {
        return Some("exp or nbf within 3 s of the leeway boundary");
    }
    None
}

/// The shapes RFC 7519 and RFC 8259 allow that `token`'s claims use:
/// escaped strings and names, NumericDates with a fraction or an exponent.
fn standard_shapes(token: &str) -> Vec<&'static str> {
    let header = URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap();
    let payload = URL_SAFE_NO_PAD.decode(token.split('.').nth(1).unwrap()).unwrap();
    let text = String::from_utf8_lossy(&payload);
    let Some(members) = members(&payload) else { return Vec::new() };
    let raw = |name: &str| members.iter().find(|(k, _)| k == name).map(|(_, v)| v.get().to_owned());
    let escaped = |name: &str| raw(name).is_some_and(|v| v.contains('\\'));
    let mut found = Vec::new();
    for (name, shape) in [("iss", "escape in iss"), ("aud", "escape in aud"), ("sub", "escape in sub")] {
        if escaped(name) {
            found.push(shape);
        }
    }
    // The generator escapes a name's first character (`"\u0061ud":`).
    let escaped_name = |name: &str| format!("\"\\u{:04x}{}\":", u32::from(name.as_bytes()[0]), &name[1..]);
    if ["exp", "nbf", "iat", "iss", "sub", "aud"].iter().any(|name| text.contains(&escaped_name(name))) {
        found.push("escaped member name");
    }
    let header = String::from_utf8_lossy(&header);
    if ["alg", "typ", "kid"].iter().any(|name| header.contains(&escaped_name(name))) {
        found.push("escaped header member name");
    }
    if ["exp", "nbf"].iter().any(|m| raw(m).is_some_and(|v| v.contains(['.', 'e', 'E']))) {
        found.push("exp or nbf not an integer");
    }
    found
}

/// A JSON number literal as a NumericDate the gateway reads: not negative
/// (`-0` is zero) and below 2^64 (`1e400` is not).
fn numeric_date(raw: &str) -> Option<f64> {
    let value = raw.parse::<f64>().ok().filter(|v| v.is_finite())?;
    (value == 0.0 || (value > 0.0 && value < 18_446_744_073_709_551_615.0)).then_some(value)
}

/// Where an accepted token goes: the route of its first routed audience, in
/// token order, with its subject.
fn expected_forward(token: &str) -> Verdict {
    /// Only the members a forward depends on: other members are skipped
    /// unread (a `Value` would refuse a number such as `1e400`).
    #[derive(serde::Deserialize)]
    struct Routing {
        aud: Option<Value>,
        sub: Option<Value>,
    }
    let payload = URL_SAFE_NO_PAD.decode(token.split('.').nth(1).unwrap()).unwrap();
    let claims: Routing = serde_json::from_slice(&payload).unwrap();
    let audiences: Vec<&str> = match &claims.aud {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let route = audiences.iter().find_map(|a| config().routes.iter().find(|r| r.audience == *a)).unwrap();
    let subject = claims.sub.as_ref().and_then(Value::as_str).unwrap_or("").to_owned();
    // Every request of this test asks for the path of `bearer_request`.
    Verdict::Forward { upstream: format!("{}{}/v1/orders?id=7", route.origin, route.base_path), subject }
}

fn reference_accepts(token: &str, validation: &Validation, key: &DecodingKey) -> bool {
    jsonwebtoken::decode::<IgnoredAny>(token, key, validation).is_ok()
}

fn validation() -> Validation {
    let config = config();
    let mut v = Validation::new(Algorithm::HS256);
    v.leeway = config.issuers[0].leeway_secs;
    v.validate_exp = true;
    v.validate_nbf = true;
    v.validate_aud = true;
    v.set_issuer(&[config.issuers[0].iss.unwrap()]);
    let audiences: Vec<&str> = config.routes.iter().map(|r| r.audience).collect();
    v.set_audience(&audiences);
    v.set_required_spec_claims(&["exp", "iss", "aud"]);
    v
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

#[test]
fn gateway_and_jsonwebtoken_agree_on_every_token_but_the_documented_differences() {
    let validation = validation();
    let key = DecodingKey::from_secret(fixture_secret()).unwrap();
    let mut gateways = common::gateways();
    let now = now_secs();
    let mut rng = Rng(SEED);
    let mut excluded: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_kind: BTreeMap<&str, [usize; 2]> = BTreeMap::new();
    let mut shapes: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut compared, mut accepted) = (0usize, 0usize);
    let mut mismatches = Vec::new();
    for _ in 0..TOKENS {
        let (token, kind) = generate(&mut rng, now);
        // The clock of this token's verdicts: jsonwebtoken reads the system
        // clock itself, within the same second or the next (the 3 s margin).
        let clock = now_secs();
        if let Some(reason) = classify(&token, clock) {
            *excluded.entry(reason).or_default() += 1;
            continue;
        }
        let reference = reference_accepts(&token, &validation, &key);
        let head = bearer_request(&token);
        for gateway in gateways.iter_mut() {
            let decision = gateway.decide(&head, clock as f64);
            decision.check().unwrap_or_else(|why| panic!("[{}] {token}: {why}", gateway.name()));
            if decision.accepted() && reference {
                let want = expected_forward(&token);
                let got = decision.verdict().ok();
                assert_eq!(got.as_ref(), Some(&want), "[{}] {token}", gateway.name());
            }
            if decision.accepted() != reference {
                mismatches.push(format!(
                    "[{}] {kind} token {token}\n  gateway {} {:?}, jsonwebtoken {}",
                    gateway.name(),
                    decision.status,
                    decision.verdict().ok(),
                    if reference { "accepts" } else { "rejects" },
                ));
            }
        }
        compared += 1;
        accepted += usize::from(reference);
        if reference {
            for shape in standard_shapes(&token) {
                *shapes.entry(shape).or_default() += 1;
            }
        }
        by_kind.entry(kind).or_default()[usize::from(reference)] += 1;
    }
    let names: Vec<&str> = gateways.iter().map(|g| g.name()).collect();
    println!("generated {TOKENS} tokens (seed {SEED:#x}, clock {now}), through {names:?}");
    println!("compared {compared}: both accept {accepted}, both reject {}", compared - accepted);
    println!("by kind (rejected, accepted): {by_kind:?}");
    println!("accepted by both, by shape: {shapes:?}");
    for (reason, n) in &excluded {
        println!("excluded {n:>5}: {reason}");
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(compared >= 10_000, "only {compared} tokens compared");
    for shape in [
        "escape in iss",
        "escape in aud",
        "escape in sub",
        "escaped member name",
        "escaped header member name",
        "exp or nbf not an integer",
    ] {
        assert!(
            shapes.get(shape).is_some_and(|&n| n >= 20),
            "too few accepted tokens with {shape}: {shapes:?}"
        );
    }
    assert!(
        accepted >= 1_000,
        "only {accepted} accepted tokens: the generator is too hostile to test acceptance"
    );
}

/// How deeply arrays and objects nest in `value` (a scalar is 0).
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}
