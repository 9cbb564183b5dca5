//! The attack corpus: for each threat of RFC 8725 (JWT Best Current
//! Practices) section 2, and each rule of its section 3, requests that must
//! be answered with a given status and reason. Every case runs through every
//! gateway of `common::gateways()`: the real `dist/gateway.wasm` in wasmtime,
//! and the native rlib (the same code), and both must agree with the table.
//!
//! The corpus is data (`corpus()`); the assertions are in the tests at the end.
//! `FUZZ_SEED_DIR=dir cargo test --release -p gateway-security --test attacks
//! -- --ignored write_fuzz_seeds` writes every case as a seed for the fuzzers.

#![allow(clippy::unwrap_used)]

mod common;

use testkit::gateway::{
    Gateway as _, HEAD_CAPACITY, NOW, Verdict, authorization_request, b64, bearer_request, mint,
    mint_fixture, sign,
};
use worker::Rejection::{self, *};

/// What a case must produce.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    /// Forwarded to the route of this audience, with this subject.
    Forward(&'static str, &'static str),
    /// Rejected for this reason (the reason fixes the status and error code).
    Reject(Rejection),
}

struct Case {
    name: String,
    head: Vec<u8>,
    now: f64,
    expect: Expect,
}

/// The fixture's issuer (testkit/fixture.toml).
const ISS: &str = "https://issuer.test";
const HEADER: &str = r#"{"alg":"HS256","typ":"JWT","kid":"fixture"}"#;
thread_local! {
    /// The time the corpus is minted around: [`NOW`] for the in-process
    /// tests, which give the gateway that clock; the real time when the corpus
    /// is written for the hosts, which read the real clock.
    static CORPUS_NOW: std::cell::Cell<u64> = const { std::cell::Cell::new(NOW) };
}

fn corpus_now() -> u64 {
    CORPUS_NOW.with(std::cell::Cell::get)
}

/// An RSA public key in PEM, as an attacker would find it published: the
/// key-confusion attack uses its text as an HMAC secret.
const RSA_PUBLIC_PEM: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAxLIJaXprsWR8X2N4WxpC
Gb3aNqILUvhvjsrxY2UdBRKPUmYYl1pzA/SpHXbAALMykekZF/ecStf3Z0VsY+e+
IJUZCc2G9jlxORqayrm8KmRHka0L3RoQfNDN0+Ht3ZUQqVZ66rdFPsLohZVwzYQl
a2650pzk/qwVZjPPIx20doLtiPeIJrpkls2mN/S2QU8ZfnOt6EvzOHQHuX2iHSOJ
8z5e1vN1ZXRKJvYhNk8kCqK+6kQ5JuWhgYqN2KOSiF8JKfEOf3BHuy9GucOnO86N
nxmXbiXrWzW9PG0Y5DZ/1/DufLmUndnGhkKAFFTxdDoXiLgah5dGu/xCmxWFzCdU
BQIDAQAB
-----END PUBLIC KEY-----
";

/// An attacker's own HMAC key, 32 bytes.
const ATTACKER_KEY: &[u8] = b"attacker-controlled-key-32-bytes";

/// Claims that pass every check, with `extra` members spliced in at the end.
fn claims_with(extra: &str) -> String {
    let exp_at = corpus_now() + 600;
    format!(r#"{{"iss":"{ISS}","aud":"orders","exp":{exp_at},"sub":"alice"{extra}}}"#)
}

fn good_claims() -> String {
    claims_with("")
}

fn good_token() -> String {
    mint_fixture(HEADER, &good_claims())
}

/// The fixture's `max_token_bytes`.
fn max_token_bytes() -> usize {
    testkit::gateway::config().max_token_bytes
}

/// The three parts of the good token.
fn parts() -> (String, String, String) {
    let token = good_token();
    let mut it = token.split('.').map(str::to_owned);
    (it.next().unwrap(), it.next().unwrap(), it.next().unwrap())
}

/// A token whose header is `header`, signed with the demo key.
fn with_header(header: &str) -> String {
    mint_fixture(header, &good_claims())
}

/// A token whose claims are `claims`, signed with the demo key.
fn with_claims(claims: &str) -> String {
    mint_fixture(HEADER, claims)
}

/// The "none" algorithm: header and claims, an empty signature.
fn unsigned(header: &str) -> String {
    format!("{}.{}.", b64(header.as_bytes()), b64(good_claims().as_bytes()))
}

fn corpus() -> Vec<Case> {
    let now = corpus_now();
    let exp_at = now + 600;
    let mut cases = Vec::new();
    let mut add = |name: &str, head: Vec<u8>, expect: Expect| {
        cases.push(Case { name: name.to_owned(), head, now: now as f64, expect });
    };
    let bearer = |token: &str| bearer_request(token);
    let (h, p, s) = parts();
    use Expect::{Forward, Reject};

    // The baseline: what a good request gets.
    add("a valid token", bearer(&good_token()), Forward("orders", "alice"));
    add(
        "a token without kid (one key configured)",
        bearer(&with_header(r#"{"alg":"HS256"}"#)),
        Forward("orders", "alice"),
    );
    add(
        "typ at+jwt",
        bearer(&with_header(r#"{"alg":"HS256","typ":"at+jwt","kid":"fixture"}"#)),
        Forward("orders", "alice"),
    );

    // RFC 8725 2.1 / 3.1: alg none and its case variants, signed or not.
    for alg in ["none", "None", "NONE", "nOnE", "none ", ""] {
        let header = format!(r#"{{"alg":"{alg}","typ":"JWT"}}"#);
        add(&format!("alg {alg:?}, empty signature"), bearer(&unsigned(&header)), Reject(MissingSignature));
        add(&format!("alg {alg:?}, signed"), bearer(&with_header(&header)), Reject(UnsupportedAlgorithm));
    }
    add(
        "alg none, no signature part",
        bearer(unsigned(r#"{"alg":"none"}"#).trim_end_matches('.')),
        Reject(MalformedToken),
    );
    // Case variants and look-alikes of HS256 itself: the comparison is exact.
    for alg in
        ["hs256", "Hs256", "HS256 ", " HS256", "HS2560", "HS25", "HS384", "HS512", "ES256", "PS256", "EdDSA"]
    {
        let header = format!(r#"{{"alg":"{alg}","kid":"fixture"}}"#);
        add(&format!("alg {alg:?}"), bearer(&with_header(&header)), Reject(UnsupportedAlgorithm));
    }
    add(
        "alg escaped HS256",
        bearer(&with_header(r#"{"alg":"HS\u0032\u0035\u0036","kid":"fixture"}"#)),
        Reject(UnsupportedAlgorithm),
    );
    add(
        "alg with an escaped NUL",
        bearer(&with_header(r#"{"alg":"HS256\u0000","kid":"fixture"}"#)),
        Reject(UnsupportedAlgorithm),
    );
    add("alg missing", bearer(&with_header(r#"{"kid":"fixture"}"#)), Reject(UnsupportedAlgorithm));
    add("alg null", bearer(&with_header(r#"{"alg":null,"kid":"fixture"}"#)), Reject(UnsupportedAlgorithm));
    add(
        "alg as an array",
        bearer(&with_header(r#"{"alg":["HS256"],"kid":"fixture"}"#)),
        Reject(MalformedHeader),
    );
    add("alg as a number", bearer(&with_header(r#"{"alg":256,"kid":"fixture"}"#)), Reject(MalformedHeader));

    // RFC 8725 2.1 / 3.1: HS/RS key confusion.
    // An RS256 header over an HMAC made with the gateway's own key: the alg is refused.
    add(
        "RS256 header, HMAC with the gateway key",
        bearer(&with_header(r#"{"alg":"RS256","typ":"JWT","kid":"fixture"}"#)),
        Reject(UnsupportedAlgorithm),
    );
    // An HS256 token whose HMAC key is the text of a published RSA public key:
    // the gateway never takes a key from the token, so the HMAC does not match.
    let pem_signed = mint(HEADER.as_bytes(), good_claims().as_bytes(), RSA_PUBLIC_PEM.as_bytes());
    add("HS256 signed with a PEM public key as secret", bearer(&pem_signed), Reject(BadSignature));
    let pem_signed_nokid = mint(br#"{"alg":"HS256"}"#, good_claims().as_bytes(), RSA_PUBLIC_PEM.as_bytes());
    add("HS256 without kid signed with a PEM public key", bearer(&pem_signed_nokid), Reject(BadSignature));
    let der_signed =
        mint(HEADER.as_bytes(), good_claims().as_bytes(), RSA_PUBLIC_PEM.lines().nth(1).unwrap().as_bytes());
    add("HS256 signed with base64 of the public key", bearer(&der_signed), Reject(BadSignature));

    // RFC 8725 2.1 / 3.3: signature stripping, truncation, corruption.
    add("signature stripped (trailing dot)", bearer(&format!("{h}.{p}.")), Reject(MissingSignature));
    add("signature stripped (no dot)", bearer(&format!("{h}.{p}")), Reject(MalformedToken));
    for len in [1, 20, 42] {
        add(
            &format!("signature truncated to {len} characters"),
            bearer(&format!("{h}.{p}.{}", &s[..len])),
            Reject(BadSignature),
        );
    }
    add("signature with one character more", bearer(&format!("{h}.{p}.{s}A")), Reject(BadSignature));
    add(
        "signature of 64 bytes (HS512 length)",
        bearer(&format!("{h}.{p}.{}", "A".repeat(86))),
        Reject(BadSignature),
    );
    add("signature all zero bits", bearer(&format!("{h}.{p}.{}", "A".repeat(43))), Reject(BadSignature));
    let mut flipped = s.clone().into_bytes();
    flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
    add(
        "signature with its first character changed",
        bearer(&format!("{h}.{p}.{}", String::from_utf8(flipped).unwrap())),
        Reject(BadSignature),
    );
    // The last of 43 characters carries 4 bits and 2 spare bits: setting a spare
    // bit spells the same bytes another way, which is refused.
    let last = s.as_bytes()[42];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let index = alphabet.iter().position(|&c| c == last).unwrap();
    let respelled = format!("{}{}", &s[..42], alphabet[index ^ 1] as char);
    add(
        "signature with non-canonical trailing bits",
        bearer(&format!("{h}.{p}.{respelled}")),
        Reject(BadEncoding),
    );
    add(
        "signature from another token",
        bearer(&format!("{h}.{}.{s}", b64(claims_with(r#","x":1"#).as_bytes()))),
        Reject(BadSignature),
    );
    add(
        "signature by an unknown key",
        bearer(&mint(HEADER.as_bytes(), good_claims().as_bytes(), ATTACKER_KEY)),
        Reject(BadSignature),
    );
    add(
        "header swapped after signing",
        bearer(&format!("{}.{p}.{s}", b64(br#"{"alg":"HS256","kid":"fixture"}"#))),
        Reject(BadSignature),
    );

    // RFC 8725 2.9 / 3.10: kid tricks. Keys come only from the compiled-in table.
    for kid in [
        "../../../../dev/null",
        "/etc/passwd",
        "fixture/../fixture",
        "x' UNION SELECT 'key",
        "FIXTURE",
        "fixture ",
        " fixture",
        "",
        "fixtur\\u0065",
        "fixture\\u0000",
        "\\u0000",
        "%00fixture",
    ] {
        let header = format!(r#"{{"alg":"HS256","kid":"{kid}"}}"#);
        add(&format!("kid {kid:?}"), bearer(&with_header(&header)), Reject(UnknownKey));
    }
    add(
        "kid of 150 characters",
        bearer(&format!(
            "{}.e30.AAAA",
            b64(format!(r#"{{"alg":"HS256","kid":"{}"}}"#, "k".repeat(150)).as_bytes())
        )),
        Reject(UnknownKey),
    );
    add(
        "kid that makes the token too long",
        bearer(&with_header(&format!(r#"{{"alg":"HS256","kid":"{}"}}"#, "k".repeat(max_token_bytes())))),
        Reject(TokenTooLong),
    );
    add("kid as a number", bearer(&with_header(r#"{"alg":"HS256","kid":7}"#)), Reject(MalformedHeader));
    add(
        "kid as an object",
        bearer(&with_header(r#"{"alg":"HS256","kid":{"k":"demo"}}"#)),
        Reject(MalformedHeader),
    );
    add(
        "kid null (as if absent)",
        bearer(&with_header(r#"{"alg":"HS256","kid":null}"#)),
        Forward("orders", "alice"),
    );
    add(
        "kid with a raw NUL byte (not JSON)",
        bearer(&mint(
            b"{\"alg\":\"HS256\",\"kid\":\"fixture\0\"}",
            good_claims().as_bytes(),
            testkit::gateway::fixture_secret(),
        )),
        Reject(MalformedHeader),
    );

    // RFC 8725 2.9 / 3.10: jku, x5u, jwk, x5c point at (or carry) the attacker's key.
    let attacker = |header: &str| mint(header.as_bytes(), good_claims().as_bytes(), ATTACKER_KEY);
    add(
        "jku to an attacker's key set",
        bearer(&attacker(r#"{"alg":"HS256","jku":"https://evil.example/k"}"#)),
        Reject(BadSignature),
    );
    add(
        "x5u to an attacker's certificate",
        bearer(&attacker(r#"{"alg":"HS256","x5u":"https://evil.example/c"}"#)),
        Reject(BadSignature),
    );
    add(
        "embedded jwk with the attacker's key",
        bearer(&attacker(r#"{"alg":"HS256","jwk":{"kty":"oct","k":"YQ"}}"#)),
        Reject(BadSignature),
    );
    add(
        "jku with kid demo",
        bearer(&attacker(r#"{"alg":"HS256","kid":"fixture","jku":"https://e.x/k"}"#)),
        Reject(BadSignature),
    );

    // RFC 7515 4.1.11: crit names extensions the gateway does not understand.
    add(
        "crit [b64] with b64 true",
        bearer(&with_header(r#"{"alg":"HS256","kid":"fixture","b64":true,"crit":["b64"]}"#)),
        Reject(CriticalHeader),
    );
    add(
        "crit [exp]",
        bearer(&with_header(r#"{"alg":"HS256","crit":["exp"],"exp":1}"#)),
        Reject(CriticalHeader),
    );
    add("crit empty", bearer(&with_header(r#"{"alg":"HS256","crit":[]}"#)), Reject(CriticalHeader));
    add("crit null", bearer(&with_header(r#"{"alg":"HS256","crit":null}"#)), Reject(CriticalHeader));
    // Header member names are decoded before they are compared (RFC 8259
    // section 7), as in the claims: an escaped name is the member itself.
    add(
        "crit with an escaped name",
        bearer(&with_header(r#"{"alg":"HS256","\u0063rit":["exp"]}"#)),
        Reject(CriticalHeader),
    );
    add(
        "crit spelled with escapes only",
        bearer(&with_header(
            r#"{"alg":"HS256","kid":"fixture","\u0063\u0072\u0069\u0074":["b64"],"b64":true}"#,
        )),
        Reject(CriticalHeader),
    );

    // RFC 8725 2.8 / 3.11: explicit typing.
    for typ in ["JOSE", "JOSE+JSON", "secevent+jwt", "dpop+jwt", "application/jwt", "JWT ", "jwt+at"] {
        add(
            &format!("typ {typ:?}"),
            bearer(&with_header(&format!(r#"{{"alg":"HS256","typ":"{typ}"}}"#))),
            Reject(UnsupportedType),
        );
    }
    add(
        "typ with an escaped name",
        bearer(&with_header(r#"{"alg":"HS256","\u0074yp":"JOSE+JSON"}"#)),
        Reject(UnsupportedType),
    );
    add(
        "typ escaped JWT",
        bearer(&with_header(r#"{"alg":"HS256","typ":"J\u0057T"}"#)),
        Reject(UnsupportedType),
    );
    add("typ as a number", bearer(&with_header(r#"{"alg":"HS256","typ":1}"#)), Reject(MalformedHeader));

    // RFC 8725 2.6 / 3.7: one spelling per value. Duplicate members.
    add(
        "duplicate alg (HS256 then none)",
        bearer(&with_header(r#"{"alg":"HS256","alg":"none"}"#)),
        Reject(MalformedHeader),
    );
    add(
        "duplicate alg (none then HS256)",
        bearer(&with_header(r#"{"alg":"none","alg":"HS256"}"#)),
        Reject(MalformedHeader),
    );
    add(
        "duplicate kid",
        bearer(&with_header(r#"{"alg":"HS256","kid":"fixture","kid":"x"}"#)),
        Reject(MalformedHeader),
    );
    add(
        "escaped alg none beside alg HS256",
        bearer(&with_header(r#"{"alg":"HS256","\u0061lg":"none"}"#)),
        Reject(MalformedHeader),
    );
    add(
        "escaped alg none before alg HS256",
        bearer(&with_header(r#"{"\u0061lg":"none","alg":"HS256","kid":"fixture"}"#)),
        Reject(MalformedHeader),
    );
    add(
        "escaped kid beside kid",
        bearer(&with_header(r#"{"alg":"HS256","kid":"fixture","\u006bid":"other"}"#)),
        Reject(MalformedHeader),
    );
    add(
        "escaped typ beside typ",
        bearer(&with_header(r#"{"alg":"HS256","typ":"JWT","\u0074yp":"JOSE"}"#)),
        Reject(MalformedHeader),
    );
    add(
        "alg and kid names spelled with escapes are alg and kid",
        bearer(&with_header(r#"{"\u0061lg":"HS256","typ":"JWT","\u006Bid":"fixture"}"#)),
        Forward("orders", "alice"),
    );
    add(
        "duplicate typ",
        bearer(&with_header(r#"{"alg":"HS256","typ":"JWT","typ":"JOSE"}"#)),
        Reject(MalformedHeader),
    );
    for (claim, value) in [("exp", "1"), ("aud", r#""billing""#), ("iss", r#""x""#), ("sub", r#""root""#)] {
        add(
            &format!("duplicate {claim} claim"),
            bearer(&with_claims(&claims_with(&format!(r#","{claim}":{value}"#)))),
            Reject(MalformedClaims),
        );
    }
    for claim in ["nbf", "iat"] {
        add(
            &format!("duplicate {claim} claim"),
            bearer(&with_claims(&claims_with(&format!(r#","{claim}":1,"{claim}":2"#)))),
            Reject(MalformedClaims),
        );
    }
    // Escapes (RFC 8259 section 7) are decoded before a claim is compared,
    // routed or forwarded: an escaped spelling goes exactly where the plain
    // one goes, and a decoded subject is judged like any other.
    for (aud, routed) in [
        (r#""\u006frders""#, "orders"),
        (r#""ord\u0065rs""#, "orders"),
        (r#""\u006F\u0072\u0064\u0065\u0072\u0073""#, "orders"),
        (r#"["\u006frders"]"#, "orders"),
        (r#"["admin","bill\u0069ng"]"#, "billing"),
        (r#"["\u0075sers","orders"]"#, "users"),
    ] {
        add(
            &format!("escaped aud {aud} routes like its plain spelling"),
            bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":{aud},"exp":{exp_at}}}"#))),
            Forward(routed, ""),
        );
    }
    for aud in [r#""orders\u0000""#, r#""\/orders""#, r#""orders\/""#, r#""Orders""#, r#""\u004frders""#] {
        add(
            &format!("escaped aud {aud} spells another audience"),
            bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":{aud},"exp":{exp_at}}}"#))),
            Reject(NoRoute),
        );
    }
    add(
        "aud name spelled with escapes duplicates aud",
        bearer(&with_claims(&format!(
            r#"{{"iss":"{ISS}","aud":"admin","\u0061ud":"orders","exp":{exp_at}}}"#
        ))),
        Reject(MalformedClaims),
    );
    add(
        "aud name spelled with escapes is aud",
        bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","\u0061\u0075\u0064":"billing","exp":{exp_at}}}"#))),
        Forward("billing", ""),
    );
    for (name, sub) in [
        ("CRLF injection", r#"a\r\nX-Admin: 1"#),
        ("CRLF as \\u escapes", r#"a\u000d\u000aX-Admin: 1"#),
        ("NUL", r#"alice\u0000"#),
        ("a tab", r#"a\tb"#),
        ("DEL", r#"a\u007fb"#),
        ("a leading space", r#"\u0020admin"#),
        ("a surrogate pair (not ASCII)", r#"\ud83d\ude00"#),
        ("U+2028", r#"a\u2028b"#),
    ] {
        add(
            &format!("escaped sub with {name}"),
            bearer(&with_claims(&format!(
                r#"{{"iss":"{ISS}","aud":"orders","exp":{exp_at},"sub":"{sub}"}}"#
            ))),
            Reject(SubjectNotHeaderSafe),
        );
    }
    add(
        "escaped sub decodes to a header-safe subject",
        bearer(&with_claims(&format!(
            r#"{{"iss":"{ISS}","aud":"orders","exp":{exp_at},"sub":"\u0061lice\/\u0040example.com"}}"#
        ))),
        Forward("orders", "alice/@example.com"),
    );
    for (claim, claims) in [
        ("aud", format!(r#"{{"iss":"{ISS}","aud":"\ud800","exp":{exp_at}}}"#)),
        ("aud list", format!(r#"{{"iss":"{ISS}","aud":["orders","\udfff"],"exp":{exp_at}}}"#)),
        ("sub", format!(r#"{{"iss":"{ISS}","aud":"orders","exp":{exp_at},"sub":"a\udc00"}}"#)),
        ("iss", format!(r#"{{"iss":"\ud834\u0041","aud":"orders","exp":{exp_at}}}"#)),
    ] {
        add(
            &format!("lone surrogate escape in {claim}"),
            bearer(&with_claims(&claims)),
            Reject(LoneSurrogate),
        );
    }
    add(
        "escaped iss (slashes, PHP json_encode)",
        bearer(&with_claims(&format!(r#"{{"iss":"https:\/\/issuer.test","aud":"orders","exp":{exp_at}}}"#))),
        Forward("orders", ""),
    );
    add(
        "escaped iss spelling another issuer",
        bearer(&with_claims(&format!(
            r#"{{"iss":"https:\/\/issuer.test\u0000","aud":"orders","exp":{exp_at}}}"#
        ))),
        Reject(WrongIssuer),
    );
    add(
        "sub with UTF-8",
        bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":"orders","exp":{exp_at},"sub":"zoë"}}"#))),
        Reject(SubjectNotHeaderSafe),
    );
    add(
        "sub with a raw tab (not JSON)",
        bearer(&with_claims(&format!(
            "{{\"iss\":\"{ISS}\",\"aud\":\"orders\",\"exp\":{exp_at},\"sub\":\"a\tb\"}}"
        ))),
        Reject(MalformedClaims),
    );
    add(
        "sub with a raw newline (not JSON)",
        bearer(&with_claims(&format!(
            "{{\"iss\":\"{ISS}\",\"aud\":\"orders\",\"exp\":{exp_at},\"sub\":\"a\nb\"}}"
        ))),
        Reject(MalformedClaims),
    );
    add(
        "sub with DEL",
        bearer(&with_claims(&format!(
            "{{\"iss\":\"{ISS}\",\"aud\":\"orders\",\"exp\":{exp_at},\"sub\":\"a\u{7f}b\"}}"
        ))),
        Reject(SubjectNotHeaderSafe),
    );
    for (name, member) in [
        ("a bad literal", r#""x":tru"#),
        ("a bad escape", r#""x":"a\qb""#),
        ("numbers in a row", r#""x":1 2 3"#),
        ("a leading zero", r#""x":01"#),
        ("a trailing comma", r#""x":[1,]"#),
    ] {
        add(
            &format!("an unknown claim with {name} (not JSON)"),
            bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":"orders","exp":{exp_at},{member}}}"#))),
            Reject(MalformedClaims),
        );
        add(
            &format!("an unknown header member with {name} (not JSON)"),
            bearer(&with_header(&format!(r#"{{"alg":"HS256",{member}}}"#))),
            Reject(MalformedHeader),
        );
    }
    add(
        "sub as a number",
        bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":"orders","exp":{exp_at},"sub":7}}"#))),
        Reject(MalformedClaims),
    );
    add(
        "sub with a DEL character",
        bearer(&with_claims(&format!(
            "{{\"iss\":\"{ISS}\",\"aud\":\"orders\",\"exp\":{exp_at},\"sub\":\"a\u{7f}\"}}"
        ))),
        Reject(SubjectNotHeaderSafe),
    );
    let mut bad_utf8 = claims_with("").into_bytes();
    let at = bad_utf8.iter().position(|&b| b == b'l').unwrap(); // in "alice"
    bad_utf8[at] = 0xff;
    add(
        "sub with an invalid UTF-8 byte",
        bearer(&mint(HEADER.as_bytes(), &bad_utf8, testkit::gateway::fixture_secret())),
        Reject(MalformedClaims),
    );
    add(
        "header with a BOM",
        bearer(&mint(
            "\u{feff}{\"alg\":\"HS256\"}".as_bytes(),
            good_claims().as_bytes(),
            testkit::gateway::fixture_secret(),
        )),
        Reject(MalformedHeader),
    );
    add("header not an object", bearer(&with_header(r#"["HS256"]"#)), Reject(MalformedHeader));
    add(
        "header with trailing data",
        bearer(&with_header(r#"{"alg":"HS256"}{"alg":"none"}"#)),
        Reject(MalformedHeader),
    );
    add("claims not an object", bearer(&with_claims("[]")), Reject(MalformedClaims));
    add(
        "claims with trailing data",
        bearer(&with_claims(&format!("{}{{}}", good_claims()))),
        Reject(MalformedClaims),
    );

    // RFC 8725 2.7 / 3.9: audience substitution.
    for aud in
        [r#""admin""#, r#""Orders""#, r#""orders ""#, r#""""#, r#"[]"#, r#"["admin","root"]"#, r#"null"#]
    {
        let expect = if matches!(aud, "[]" | "null") { MissingAudience } else { NoRoute };
        add(
            &format!("aud {aud}"),
            bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":{aud},"exp":{exp_at}}}"#))),
            Reject(expect),
        );
    }
    add(
        "no aud",
        bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","exp":{exp_at}}}"#))),
        Reject(MissingAudience),
    );
    add(
        "aud list, first routed wins",
        bearer(&with_claims(&format!(
            r#"{{"iss":"{ISS}","aud":["admin","users","orders"],"exp":{exp_at}}}"#
        ))),
        Forward("users", ""),
    );
    add(
        "aud list of nine",
        bearer(&with_claims(&format!(
            r#"{{"iss":"{ISS}","aud":["1","2","3","4","5","6","7","8","orders"],"exp":{exp_at}}}"#
        ))),
        Reject(MalformedClaims),
    );
    add(
        "aud as a number",
        bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":1,"exp":{exp_at}}}"#))),
        Reject(MalformedClaims),
    );
    add(
        "aud list with a number",
        bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":["orders",1],"exp":{exp_at}}}"#))),
        Reject(MalformedClaims),
    );

    // RFC 8725 3.8: issuer.
    add(
        "wrong iss",
        bearer(&with_claims(&format!(r#"{{"iss":"https://evil.example","aud":"orders","exp":{exp_at}}}"#))),
        Reject(WrongIssuer),
    );
    add(
        "no iss",
        bearer(&with_claims(&format!(r#"{{"aud":"orders","exp":{exp_at}}}"#))),
        Reject(WrongIssuer),
    );
    add(
        "iss as a list",
        bearer(&with_claims(&format!(r#"{{"iss":["{ISS}"],"aud":"orders","exp":{exp_at}}}"#))),
        Reject(MalformedClaims),
    );
    add(
        "iss with a trailing slash",
        bearer(&with_claims(&format!(r#"{{"iss":"{ISS}/","aud":"orders","exp":{exp_at}}}"#))),
        Reject(WrongIssuer),
    );

    // Tokens shaped like identity providers' (800 to 1,400 bytes; the
    // fixture's max_token_bytes is 2048): scope, azp, nested claims, long
    // subjects, and their encoders' spellings.
    let keycloak = format!(
        r#"{{"exp":{exp_at},"iat":{now},"jti":"5b0f7c9e-3a61-4d2b-9a8e-1f2c3d4e5f60","iss":"{ISS}","aud":["account","orders"],"sub":"f3c2a1b0-9d8e-4f7a-8b6c-5d4e3f2a1b0c","typ":"Bearer","azp":"orders-web","session_state":"8f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","acr":"1","allowed-origins":["https://orders.example.com"],"realm_access":{{"roles":["offline_access","uma_authorization","default-roles-example"]}},"resource_access":{{"orders-web":{{"roles":["viewer","editor"]}},"account":{{"roles":["manage-account","view-profile"]}}}},"scope":"openid profile email orders:read orders:write","email_verified":true,"name":"Alice Example","preferred_username":"alice","email":"alice@example.com"}}"#
    );
    let auth0 = format!(
        r#"{{"iss":"{ISS}","sub":"auth0|64f1c2d3e4b5a69788796a5b","aud":["https://tenant.eu.auth0.com/userinfo","billing"],"iat":{now},"exp":{exp_at}.25,"azp":"Zx8Kq3Lm9Np2Rs7Tv4Wy6Ab1Cd5Ef0Gh","scope":"openid profile email read:invoices write:invoices offline_access","permissions":["read:invoices","write:invoices","read:customers","read:reports","write:reports"],"https://example.com/claims":{{"roles":["finance","auditor"],"org":{{"id":"org_7Hk2Lm9Np3Qr","name":"Example Ltd","tier":"enterprise"}}}},"org_id":"org_7Hk2Lm9Np3Qr"}}"#
    )
    .replace('/', "\\/");
    let entra = format!(
        r#"{{"aud":"users","iss":"{ISS}","iat":{now},"nbf":{now}.9,"exp":{exp_at}e0,"aio":"AWQAm/8YAAAA3xk9Lm2Np8Qr4St6Uv1Wx3Yz5Ab7Cd9Ef0Gh2Ij4Kl6Mn8Op0Qr2St4Uv6Wx8Yz0Ab==","azp":"6e74172b-be56-4843-9ff4-e66a39bb12e3","name":"Carol Example","oid":"00000000-0000-0000-66f3-3332eca7ea81","preferred_username":"carol@example.com","rh":"0.AQEAv4j5cvGGr0GRqy180BHbR-ZNsJ9jFjVBlYpTjqk8qYcBAAA.","roles":["Users.Read.All","Users.Write"],"scp":"access_as_user User.Read","sub":"AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ","tid":"9188040d-6c67-4c5b-b112-36a304b66dad","uti":"fqiBqXLPj0eQa82S-IYFAA","ver":"2.0"}}"#
    );
    for (name, claims, expect) in [
        ("Keycloak", &keycloak, Forward("orders", "f3c2a1b0-9d8e-4f7a-8b6c-5d4e3f2a1b0c")),
        (
            "Auth0 (escaped slashes, fractional exp)",
            &auth0,
            Forward("billing", "auth0|64f1c2d3e4b5a69788796a5b"),
        ),
        (
            "Entra ID (nbf rounded up, exp in exponent form)",
            &entra,
            Forward("users", "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ"),
        ),
    ] {
        let token = with_claims(claims);
        assert!((800..=1400).contains(&token.len()), "{name}: {} bytes", token.len());
        add(&format!("{name}-shaped token of {} bytes", token.len()), bearer(&token), expect);
    }

    // Time (RFC 7519 4.1.4-5), with the configured 30 s leeway.
    let timed = |exp: &str, nbf: &str| {
        bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":"orders","exp":{exp}{nbf}}}"#)))
    };
    add(
        "no exp",
        bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":"orders"}}"#))),
        Reject(MissingExpiry),
    );
    add("exp null", timed("null", ""), Reject(MissingExpiry));
    // A token bound to its sender's key (`cnf`, RFC 7800: DPoP's `jkt`, a
    // client certificate's `x5t#S256`) is never taken as a bearer token.
    let bound = |cnf: &str| {
        bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":"orders","exp":{exp_at},"cnf":{cnf}}}"#)))
    };
    add(
        "DPoP-bound token as a bearer token",
        bound(r#"{"jkt":"0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}"#),
        Reject(BoundToken),
    );
    add(
        "certificate-bound token as a bearer token",
        bound(r#"{"x5t#S256":"bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}"#),
        Reject(BoundToken),
    );
    add(
        "bound token, cnf name escaped",
        bearer(&with_claims(&format!(
            r#"{{"iss":"{ISS}","aud":"orders","exp":{exp_at},"\u0063nf":{{"jkt":"x"}}}}"#
        ))),
        Reject(BoundToken),
    );
    add("bound token, an empty cnf", bound("{}"), Reject(BoundToken));
    add("cnf null is no binding", bound("null"), Forward("orders", ""));
    add("exp 31 s ago (beyond leeway)", timed(&(now - 31).to_string(), ""), Reject(Expired));
    // RFC 7519 section 4.1.4: valid only before exp (+ leeway), so a token
    // is expired from that second on.
    add("exp 30 s ago (the leeway's end)", timed(&(now - 30).to_string(), ""), Reject(Expired));
    add("exp 29 s ago (within leeway)", timed(&(now - 29).to_string(), ""), Forward("orders", ""));
    add("exp 0", timed("0", ""), Reject(Expired));
    add("exp u64 max", timed("18446744073709551615", ""), Forward("orders", ""));
    add("exp beyond u64", timed("18446744073709551616", ""), Reject(MalformedClaims));
    add("exp as a string", timed(&format!("\"{exp_at}\""), ""), Reject(MalformedClaims));
    // NumericDate (RFC 7519 section 2) is any JSON number: read exactly,
    // `exp` rounded down and `nbf` up, nothing negative or past 2^64 - 1.
    add("exp with a zero fraction", timed(&format!("{exp_at}.0"), ""), Forward("orders", ""));
    add("exp in exponent form", timed(&format!("{exp_at}e0"), ""), Forward("orders", ""));
    add("exp 1.9e9", timed("1.9e9", ""), Forward("orders", ""));
    add("exp 1.7e9 (before the test clock)", timed("1.7e9", ""), Reject(Expired));
    add("exp 2e9 in exponent form", timed("2E+9", ""), Forward("orders", ""));
    add(
        "exp half a second into the leeway's last second",
        timed(&format!("{}.5", now - 31), ""),
        Reject(Expired),
    );
    add(
        "exp half a second before the leeway's end: rounded down, so expired",
        timed(&format!("{}.5", now - 30), ""),
        Reject(Expired),
    );
    add("exp a fraction within the leeway", timed(&format!("{}.5", now - 29), ""), Forward("orders", ""));
    add("exp -0", timed("-0", ""), Reject(Expired));
    add("exp -0.0e10", timed("-0.0e10", ""), Reject(Expired));
    add("exp negative", timed("-1", ""), Reject(MalformedClaims));
    add("exp negative fraction", timed("-0.5", ""), Reject(MalformedClaims));
    add("exp 1e400", timed("1e400", ""), Reject(MalformedClaims));
    add("exp 1e20", timed("1e20", ""), Reject(MalformedClaims));
    add("exp with a huge exponent", timed("1e999999999999999999999999", ""), Reject(MalformedClaims));
    add("exp with a huge negative exponent", timed("1e-999999999999999999999999", ""), Reject(Expired));
    add("exp 0e999999999", timed("0e999999999", ""), Reject(Expired));
    add("exp u64 max in exponent form", timed("1.8446744073709551615e19", ""), Forward("orders", ""));
    add("exp past u64 in exponent form", timed("1.8446744073709551616e19", ""), Reject(MalformedClaims));
    add("exp with a leading zero", timed(&format!("0{exp_at}"), ""), Reject(MalformedClaims));
    add(
        "nbf 31 s ahead (beyond leeway)",
        timed(&exp_at.to_string(), &format!(r#","nbf":{}"#, now + 31)),
        Reject(NotYetValid),
    );
    add(
        "nbf 30 s ahead (within leeway)",
        timed(&exp_at.to_string(), &format!(r#","nbf":{}"#, now + 30)),
        Forward("orders", ""),
    );
    add("nbf u64 max", timed(&exp_at.to_string(), r#","nbf":18446744073709551615"#), Reject(NotYetValid));
    add(
        "nbf a fraction past the leeway rounds up",
        timed(&exp_at.to_string(), &format!(r#","nbf":{}.01"#, now + 30)),
        Reject(NotYetValid),
    );
    add(
        "nbf in exponent form",
        timed(&exp_at.to_string(), &format!(r#","nbf":{}0e-1"#, now + 30)),
        Forward("orders", ""),
    );
    add("nbf -0", timed(&exp_at.to_string(), r#","nbf":-0"#), Forward("orders", ""));
    add("nbf 1e400", timed(&exp_at.to_string(), r#","nbf":1e400"#), Reject(MalformedClaims));
    add("iat 1e400", timed(&exp_at.to_string(), r#","iat":1e400"#), Reject(MalformedClaims));
    add("iat with a fraction", timed(&exp_at.to_string(), r#","iat":1.5"#), Forward("orders", ""));
    add("nbf as a string", timed(&exp_at.to_string(), r#","nbf":"0""#), Reject(MalformedClaims));
    add("iat as a string", timed(&exp_at.to_string(), r#","iat":"now""#), Reject(MalformedClaims));

    // RFC 7515 7.1 / RFC 8725 3.11 (strict base64url): padding and non-alphabet characters in each part.
    let spots: [(&str, Place<'_>); 3] = [
        ("header", Box::new(|x: &str| format!("{h}{x}.{p}.{s}"))),
        ("payload", Box::new(|x: &str| format!("{h}.{p}{x}.{s}"))),
        ("signature", Box::new(|x: &str| format!("{h}.{p}.{s}{x}"))),
    ];
    for (part, place) in &spots {
        // '=' inside the token is not RFC 6750 b64token; at its very end it is, and the split refuses it.
        let pad_expect = if *part == "signature" { BadEncoding } else { MalformedAuthorization };
        add(&format!("padding after the {part}"), bearer(&place("=")), Reject(pad_expect));
        add(&format!("double padding after the {part}"), bearer(&place("==")), Reject(pad_expect));
        for c in ["+", "/", "~"] {
            add(&format!("{c:?} in the {part}"), bearer(&place(c)), Reject(BadEncoding));
        }
        for c in ["%", "!", "*", "\"", ",", ";", "\\", "\u{e9}"] {
            add(&format!("{c:?} in the {part}"), bearer(&place(c)), Reject(MalformedAuthorization));
        }
        add(&format!("a DEL in the {part}"), bearer(&place("\u{7f}")), Reject(MalformedRequest));
        add(&format!("a space in the {part}"), bearer(&place(" x")), Reject(MalformedAuthorization));
        add(&format!("a tab in the {part}"), bearer(&place("\tx")), Reject(MalformedAuthorization));
    }
    // A standard-alphabet token (+ and / instead of - and _).
    let standard = good_token().replace('-', "+").replace('_', "/");
    if standard != good_token() {
        add("standard base64 alphabet", bearer(&standard), Reject(BadEncoding));
    }
    add(
        "a NUL byte in the token",
        authorization_request(format!("Bearer {h}.\0{p}.{s}").as_bytes()),
        Reject(MalformedRequest),
    );
    add(
        "a CR in the token",
        authorization_request(format!("Bearer {h}.\r{p}.{s}").as_bytes()),
        Reject(MalformedRequest),
    );
    add(
        "a bare LF in the token",
        authorization_request(format!("Bearer {h}.\n{p}.{s}").as_bytes()),
        Reject(MalformedRequest),
    );
    add(
        "a trailing space after the token",
        authorization_request(format!("Bearer {}   ", good_token()).as_bytes()),
        Forward("orders", "alice"),
    );
    add("non-canonical header base64", bearer(&format!("{}.{p}.{s}", respell_last(&h))), Reject(BadEncoding));
    add("a header part of one character", bearer(&format!("e.{p}.{s}")), Reject(BadEncoding));

    // Many dots, or too few.
    add("four parts", bearer(&format!("{h}.{p}.{s}.{s}")), Reject(MalformedToken));
    add("a JWE (five parts)", bearer(&format!("{h}.e30.e30.e30.AAAA")), Reject(MalformedToken));
    add("a hundred dots", bearer(&".".repeat(100)), Reject(MalformedToken));
    add("only dots", bearer(".."), Reject(MalformedToken));
    add("empty header part", bearer(&format!(".{p}.{s}")), Reject(MalformedToken));
    add("empty payload part", bearer(&format!("{h}..{s}")), Reject(MalformedToken));
    add("one part", bearer(&h), Reject(MalformedToken));

    // RFC 8725 2.5 is about ECDH; 2.3 about JWE: a token whose payload is not JSON.
    add(
        "deflated claims (zip DEF)",
        bearer(&mint(
            br#"{"alg":"HS256","zip":"DEF"}"#,
            [0x78, 0x9c, 0xab, 0xae, 0x05, 0x00],
            testkit::gateway::fixture_secret(),
        )),
        Reject(MalformedClaims),
    );

    // Where the token is and how it is introduced (RFC 6750 2.1).
    let token = good_token();
    add(
        "token in the query string only",
        format!("GET /v1/orders?access_token={token} HTTP/1.1\r\nHost: gw\r\n\r\n").into_bytes(),
        Reject(MissingAuthorization),
    );
    add(
        "token in a cookie only",
        format!("GET / HTTP/1.1\r\nHost: gw\r\nCookie: access_token={token}\r\n\r\n").into_bytes(),
        Reject(MissingAuthorization),
    );
    add(
        "token in another header",
        format!("GET / HTTP/1.1\r\nHost: gw\r\nX-Authorization: Bearer {token}\r\n\r\n").into_bytes(),
        Reject(MissingAuthorization),
    );
    add("token without a scheme", authorization_request(token.as_bytes()), Reject(UnsupportedScheme));
    for scheme in ["Basic", "Token", "JWT", "Bearer:", "Bearer-", "Beare", "Bearerr", "DPoP", "MAC"] {
        add(
            &format!("scheme {scheme:?}"),
            authorization_request(format!("{scheme} {token}").as_bytes()),
            Reject(UnsupportedScheme),
        );
    }
    for scheme in ["bearer", "BEARER", "bEaReR"] {
        add(
            &format!("scheme {scheme:?} is accepted"),
            authorization_request(format!("{scheme} {token}").as_bytes()),
            Forward("orders", "alice"),
        );
    }
    add(
        "two spaces after the scheme",
        authorization_request(format!("Bearer  {token}").as_bytes()),
        Forward("orders", "alice"),
    );
    add(
        "a tab after the scheme",
        authorization_request(format!("Bearer\t{token}").as_bytes()),
        Reject(MalformedAuthorization),
    );
    add(
        "a space then a tab after the scheme",
        authorization_request(format!("Bearer \t{token}").as_bytes()),
        Reject(MalformedAuthorization),
    );
    add("scheme alone", authorization_request(b"Bearer"), Reject(MalformedAuthorization));
    add("scheme and spaces", authorization_request(b"Bearer   "), Reject(MalformedAuthorization));
    add("empty Authorization", authorization_request(b""), Reject(UnsupportedScheme));
    add(
        "two Authorization headers",
        format!("GET / HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {token}\r\nAuthorization: Bearer {token}\r\n\r\n")
            .into_bytes(),
        Reject(DuplicateAuthorization),
    );
    add(
        "two Authorization headers, one empty",
        format!("GET / HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {token}\r\nAUTHORIZATION:\r\n\r\n")
            .into_bytes(),
        Reject(DuplicateAuthorization),
    );
    // A runtime that joins repeated fields with ", " (fetch, workerd) makes one value of two tokens.
    add(
        "two tokens joined with a comma",
        authorization_request(format!("Bearer {token}, Bearer {token}").as_bytes()),
        Reject(MalformedAuthorization),
    );
    add(
        "a token then a Basic header",
        format!(
            "GET / HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {token}\r\nAuthorization: Basic YTpi\r\n\r\n"
        )
        .into_bytes(),
        Reject(DuplicateAuthorization),
    );
    add(
        "a folded Authorization header",
        format!("GET / HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer\r\n {token}\r\n\r\n").into_bytes(),
        Reject(MalformedRequest),
    );
    add(
        "a space before the colon",
        format!("GET / HTTP/1.1\r\nHost: gw\r\nAuthorization : Bearer {token}\r\n\r\n").into_bytes(),
        Reject(MalformedRequest),
    );

    // Size limits: the token buffer, the header count, the input buffer.
    add("a token filling max_token_bytes", bearer(&"a".repeat(max_token_bytes())), Reject(MalformedToken));
    add(
        "a token one byte over max_token_bytes",
        bearer(&"a".repeat(max_token_bytes() + 1)),
        Reject(TokenTooLong),
    );
    add("a 10 000-byte token", bearer(&"a".repeat(10_000)), Reject(TokenTooLong));
    add(
        "a 10 000-byte other header",
        format!(
            "GET / HTTP/1.1\r\nHost: gw\r\nX-Big: {}\r\nAuthorization: Bearer {token}\r\n\r\n",
            "x".repeat(10_000)
        )
        .into_bytes(),
        Forward("orders", "alice"),
    );
    add(
        "a head one byte over the input buffer",
        pad_head(&bearer(&token), HEAD_CAPACITY + 1),
        Reject(HeadTooLarge),
    );
    add(
        "a head exactly the input buffer",
        pad_head(&bearer(&token), HEAD_CAPACITY),
        Forward("orders", "alice"),
    );
    add("a 1 MiB head", pad_head(&bearer(&token), 1 << 20), Reject(HeadTooLarge));
    add(
        "65 header fields",
        format!(
            "GET / HTTP/1.1\r\nHost: gw\r\n{}Authorization: Bearer {token}\r\n\r\n",
            "X-A: 1\r\n".repeat(64)
        )
        .into_bytes(),
        Reject(TooManyHeaders),
    );
    add(
        "64 header fields",
        format!(
            "GET / HTTP/1.1\r\nHost: gw\r\n{}Authorization: Bearer {token}\r\n\r\n",
            "X-A: 1\r\n".repeat(62)
        )
        .into_bytes(),
        Forward("orders", "alice"),
    );

    // Malformed heads.
    add("an empty head", Vec::new(), Reject(IncompleteRequest));
    add("a head without the blank line", bearer(&token)[..40].to_vec(), Reject(IncompleteRequest));
    add(
        "garbage bytes",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n".to_vec(),
        Reject(MalformedRequest),
    );
    add("an HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(), Reject(MalformedRequest));
    add(
        "LF-only line ends",
        format!("GET / HTTP/1.1\nHost: gw\nAuthorization: Bearer {token}\n\n").into_bytes(),
        Forward("orders", "alice"),
    );

    // Deep nesting: JSON may nest at most 16 deep, checked before any parser
    // recurses, both before the signature (any client can send it) and after
    // (in an ignored claim).
    let deep = format!(r#"{{"alg":"HS256","x":{}"#, "[".repeat(160));
    add(
        "160 unclosed brackets in the header",
        bearer(&format!("{}.e30.AAAA", b64(deep.as_bytes()))),
        Reject(MalformedHeader),
    );
    let deep = format!(r#"{{"alg":"HS256","x":{}{}}}"#, "[".repeat(80), "]".repeat(80));
    add(
        "80 nested arrays in the header",
        bearer(&format!("{}.e30.AAAA", b64(deep.as_bytes()))),
        Reject(MalformedHeader),
    );
    let deep = format!(r#"{{"x":{}1{}}}"#, "{\"a\":".repeat(28), "}".repeat(28));
    add(
        "28 nested objects in the header",
        bearer(&format!("{}.e30.AAAA", b64(deep.as_bytes()))),
        Reject(MalformedHeader),
    );
    // The claims object is level 1, so a claim may hold 15 more levels.
    for (levels, expect) in [(15, Forward("orders", "alice")), (16, Reject(MalformedClaims))] {
        let nested = claims_with(&format!(r#","x":{}{}"#, "[".repeat(levels), "]".repeat(levels)));
        add(
            &format!("{levels} nested arrays in a claim"),
            bearer(&mint(br#"{"alg":"HS256"}"#, nested.as_bytes(), testkit::gateway::fixture_secret())),
            expect,
        );
    }

    // The host's clock (ABI.md): nonsense is the gateway's own failure.
    let good = bearer(&token);
    for (name, now) in
        [("NaN", f64::NAN), ("negative", -1.0), ("infinite", f64::INFINITY), ("beyond 2^53", 9.1e15)]
    {
        cases.push(Case {
            name: format!("clock {name}"),
            head: good.clone(),
            now,
            expect: Reject(InvalidClock),
        });
    }
    cases.push(Case {
        name: "clock past 2038".into(),
        head: bearer(&with_claims(&format!(r#"{{"iss":"{ISS}","aud":"billing","exp":4102444800}}"#))),
        now: 2_200_000_000.0,
        expect: Forward("billing", ""),
    });
    cases.push(Case {
        name: "clock a fraction of a second past exp + leeway".into(),
        head: timed(&(now - 30).to_string(), ""),
        now: now as f64 + 0.999,
        expect: Reject(Expired),
    });
    cases.push(Case {
        name: "clock a fraction of a second before exp + leeway".into(),
        head: timed(&(now - 29).to_string(), ""),
        now: now as f64 + 0.999,
        expect: Forward("orders", ""),
    });

    // What reaches the upstream (SECURITY.md, "Forwarding"): a valid token
    // does not carry a request out of its route, past the framing rules, or
    // with a target the upstream could read another way.
    let valid = bearer_request(&good_token());
    let with_target = |target: &str| {
        let text = String::from_utf8(valid.clone()).unwrap();
        text.replacen("/v1/orders?id=7", target, 1).into_bytes()
    };
    let with_line = |line: &str| {
        let text = String::from_utf8(valid.clone()).unwrap();
        text.replacen("GET /v1/orders?id=7", line, 1).into_bytes()
    };
    let with_field = |field: &str| {
        let text = String::from_utf8(valid.clone()).unwrap();
        text.replacen("\r\n\r\n", &format!("\r\n{field}\r\n\r\n"), 1).into_bytes()
    };
    let forwarding: Vec<(&str, Vec<u8>, Rejection)> = vec![
        ("dot-dot above the base path", with_target("/../billing/x"), PathAboveRoot),
        ("encoded dot-dot", with_target("/%2e%2E/billing"), PathAboveRoot),
        ("climb after a descent", with_target("/a/../../x"), PathAboveRoot),
        ("encoded slash", with_target("/..%2fbilling"), EncodedSlash),
        ("encoded backslash", with_target("/..%5Cbilling"), EncodedSlash),
        ("raw backslash", with_target("/a\\..\\..\\b"), EncodedSlash),
        ("dot-dot with parameters", with_target("/..;/billing"), DotSegmentParameters),
        ("double-encoded dot-dot", with_target("/%252e%252e/billing-svc/x"), DoubleEncodedPath),
        ("double-encoded dot-dot, upper case", with_target("/%252E%252E/billing-svc/x"), DoubleEncodedPath),
        ("double-encoded slash", with_target("/..%252fbilling-svc/x"), DoubleEncodedPath),
        ("double-encoded backslash", with_target("/..%255Cbilling-svc/x"), DoubleEncodedPath),
        ("triple-encoded dot-dot", with_target("/%25252e%25252e/billing-svc/x"), DoubleEncodedPath),
        ("double-encoded letter", with_target("/%2561dmin"), DoubleEncodedPath),
        ("double-encoded NUL", with_target("/x%2500"), DoubleEncodedPath),
        ("encoded NUL in the path", with_target("/a%00.json"), ControlInTarget),
        ("raw non-ASCII in the path", with_target("/caf\u{e9}"), ControlInTarget),
        ("broken escape", with_target("/a%zz"), MalformedTarget),
        ("user info in absolute-form", with_target("http://u:p@gw/x"), MalformedTarget),
        ("authority-form without CONNECT", with_line("GET gw.example:443"), MalformedTarget),
        ("CONNECT", with_line("CONNECT gw.example:443"), ConnectNotAllowed),
        ("method in lower case", with_line("get /v1/orders?id=7"), MethodNotUpperCase),
        ("method in mixed case", with_line("Delete /v1/orders?id=7"), MethodNotUpperCase),
        ("OPTIONS *", with_line("OPTIONS *"), AsteriskForm),
        ("target over 8 KiB", with_target(&format!("/{}", "a".repeat(8192))), TargetTooLong),
        (
            "no Host",
            String::from_utf8(valid.clone())
                .unwrap()
                .replacen("Host: gateway.example\r\n", "", 1)
                .into_bytes(),
            MissingHost,
        ),
        ("two Host fields", with_field("host: other.example"), DuplicateHost),
        (
            "Host with user info",
            String::from_utf8(valid.clone())
                .unwrap()
                .replacen("Host: gateway.example", "Host: u@gateway.example", 1)
                .into_bytes(),
            MalformedHost,
        ),
        (
            "Content-Length beside chunked",
            with_field("Content-Length: 4\r\nTransfer-Encoding: chunked"),
            ConflictingFraming,
        ),
        (
            "chunked beside Content-Length",
            with_field("Transfer-Encoding: chunked\r\nContent-Length: 4"),
            ConflictingFraming,
        ),
        ("two Content-Length", with_field("Content-Length: 4\r\nContent-Length: 5"), InvalidContentLength),
        ("Content-Length not a number", with_field("Content-Length: 0x10"), InvalidContentLength),
        (
            "chunked, identity",
            with_field("Transfer-Encoding: chunked, identity"),
            UnsupportedTransferEncoding,
        ),
        ("identity", with_field("Transfer-Encoding: identity"), UnsupportedTransferEncoding),
        ("Content-Length on a GET", with_field("Content-Length: 4"), ContentOnGetOrHead),
        (
            "chunked on a HEAD",
            String::from_utf8(with_field("Transfer-Encoding: chunked"))
                .unwrap()
                .replacen("GET ", "HEAD ", 1)
                .into_bytes(),
            ContentOnGetOrHead,
        ),
    ];
    for (name, head, rejection) in forwarding {
        cases.push(Case { name: name.into(), head, now: now as f64, expect: Reject(rejection) });
    }
    cases.push(Case {
        name: "sub with a leading space".into(),
        head: bearer(&with_claims(&format!(
            r#"{{"iss":"{ISS}","aud":"orders","exp":{exp_at},"sub":" admin"}}"#
        ))),
        now: now as f64,
        expect: Reject(SubjectNotHeaderSafe),
    });
    cases
}

/// The request target on the first line of `head`, as the module forwards
/// an ordinary one: unchanged.
fn target_of(head: &[u8]) -> String {
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    String::from_utf8_lossy(line).split(' ').nth(1).unwrap_or("/").to_owned()
}

/// Puts a string somewhere in a token.
type Place<'a> = Box<dyn Fn(&str) -> String + 'a>;

/// The same bytes with another spelling: the last character's spare bits set.
fn respell_last(part: &str) -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let last = *part.as_bytes().last().unwrap();
    let index = alphabet.iter().position(|&c| c == last).unwrap();
    format!("{}{}", &part[..part.len() - 1], alphabet[index ^ 1] as char)
}

/// `head` grown to exactly `len` bytes with a filler header before the blank line.
fn pad_head(head: &[u8], len: usize) -> Vec<u8> {
    let body = &head[..head.len() - 2]; // without the final CRLF
    let filler_len = len - head.len() - "X-Pad: \r\n".len();
    let mut out = body.to_vec();
    out.extend_from_slice(b"X-Pad: ");
    out.extend(std::iter::repeat_n(b'p', filler_len));
    out.extend_from_slice(b"\r\n\r\n");
    assert_eq!(out.len(), len);
    out
}

fn expected_verdict(case: &Case) -> Verdict {
    match &case.expect {
        Expect::Forward(aud, subject) => {
            let route = testkit::gateway::config().routes.iter().find(|r| r.audience == *aud).unwrap();
            let upstream = format!("{}{}{}", route.origin, route.base_path, target_of(&case.head));
            Verdict::Forward { upstream, subject: (*subject).to_owned() }
        }
        Expect::Reject(rejection) => Verdict::Reject(*rejection),
    }
}

#[test]
fn every_attack_gets_its_status_and_reason() {
    let corpus = corpus();
    let mut failures = Vec::new();
    for mut gateway in common::gateways() {
        for case in &corpus {
            let decision = gateway.decide(&case.head, case.now);
            let want = expected_verdict(case);
            match decision.verdict() {
                Ok(got) if got == want => {}
                Ok(got) => {
                    failures.push(format!("[{}] {}: want {want:?}, got {got:?}", gateway.name(), case.name))
                }
                Err(why) => failures.push(format!("[{}] {}: {why}", gateway.name(), case.name)),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        corpus.len(),
        failures.join("\n")
    );
}

#[test]
fn the_corpus_covers_every_rejection_the_request_path_can_give() {
    let corpus = corpus();
    // ScratchExhausted needs a misbuilt module; every other reason has a case.
    let missing: Vec<Rejection> = Rejection::ALL
        .iter()
        .copied()
        // KeyIdRequired needs a build with two keys, InvalidContext a host that
        // breaks the contract, and InvalidFieldValue a parser more lenient
        // than httparse, which refuses control bytes first (the worker's unit
        // tests have each).
        .filter(|r| !matches!(r, ScratchExhausted | KeyIdRequired | InvalidContext | InvalidFieldValue))
        // The policies' rejections need the policy fixture: the policy corpus
        // (testkit/conformance/policies.jsonl) covers each.
        .filter(|r| {
            !matches!(
                r,
                MalformedTokenField
                    | ConflictingTokens
                    | AmbiguousTokenCookie
                    | IssuerNotAllowed
                    | ClaimNotHeaderSafe
                    | ClaimTypeMismatch
                    | InsufficientScope
                    | MissingRole
                    | ClaimMismatch
                    | Denied
                    | NotFound
                    | PreflightRefused
                    | PreflightWithBody
                    | PathReadsAnotherRule
                    | MethodReadsAnotherRule
                    | WhitespaceAtSegmentEdge
            )
        })
        // Keys fetched at run time need a module that fetches them: the
        // tests of testkit/jwks/ cover it on every host.
        .filter(|r| !matches!(r, KeysUnavailable))
        // A rate limit is answered by `limited` when a host's count refuses,
        // and DPoP and certificate bindings need an issuer that accepts
        // them: the rate-limit, DPoP and certificate conformance scripts
        // (testkit/conformance/limits-script.mjs, dpop-script.mjs,
        // certificate-script.mjs, with their own fixtures) cover each on
        // every host.
        .filter(|r| {
            let name = format!("{r:?}");
            !matches!(r, RateLimited) && !name.starts_with("Dpop") && !name.starts_with("Certificate")
        })
        .filter(|r| !corpus.iter().any(|c| c.expect == Expect::Reject(*r)))
        .collect();
    assert!(missing.is_empty(), "no case for {missing:?}");
    assert!(corpus.len() >= 250, "{} cases", corpus.len());
}

#[test]
fn an_instance_answers_the_whole_corpus_in_a_row_then_a_good_request() {
    // Reuse mode: no state leaks from one request into the next.
    let corpus = corpus();
    for mut gateway in common::gateways() {
        for case in &corpus {
            gateway.decide(&case.head, case.now);
        }
        let decision = gateway.decide(&bearer_request(&good_token()), NOW as f64);
        // The label line's cache letter says whether this instance had seen
        // the token (`h`), verified it now (`m`) or keeps no cache (`-`):
        // the rest is the same.
        let shown = decision.shown();
        let letter = [" m\n-host", " h\n-host", " -\n-host"].iter().find_map(|at| shown.find(at));
        let cache_blind = match letter {
            Some(at) => format!("{} ?{}", &shown[..at], &shown[at + 2..]),
            None => shown,
        };
        assert_eq!(
            cache_blind,
            "http://127.0.0.1:9201\n/orders-svc/v1/orders?id=7\n#00ffff000100 ?\n-host\n-authorization\n+x-gateway-subject:alice\n\
             +x-gateway-issuer:https://issuer.test\n+x-forwarded-for:127.0.0.1\n+x-forwarded-proto:http\n+x-forwarded-host:gateway.example",
            "[{}]",
            gateway.name()
        );
    }
}

#[test]
fn the_deepest_json_a_token_can_carry_fits_in_a_32_kib_wasm_stack() {
    // The header is parsed before the signature is checked, so any client can
    // send the deepest nesting 256 bytes allow: 166 unclosed brackets. The
    // strict JSON check refuses anything nested deeper than 16 before a
    // parser recurses, so even a 32 KiB host wasm stack answers 401, not a
    // trap (host-sim gives 64 KiB).
    use runtime::{EngineOptions, ModuleSource};
    let options = EngineOptions { no_deadline: true, max_wasm_stack: 32 << 10, ..EngineOptions::default() };
    let runtime = runtime::Runtime::load(&options, &ModuleSource::Wasm(common::module_path()), 2).unwrap();
    let prefix = r#"{"alg":"HS256","x":"#;
    let depth = (0..)
        .take_while(|n| b64(format!("{prefix}{}", "[".repeat(*n)).as_bytes()).len() + 9 <= 256)
        .last()
        .unwrap();
    assert!(depth >= 160, "{depth}");
    for (header, expect) in [
        (format!("{prefix}{}", "[".repeat(depth)), 401),
        (format!(r#"{{"alg":"HS256","x":{}{}}}"#, "[".repeat(82), "]".repeat(82)), 401),
    ] {
        let token = format!("{}.e30.AAAA", b64(header.as_bytes()));
        assert!(token.len() <= 256);
        let outcome = runtime.decide_fresh(&bearer_request(&token), NOW as f64);
        assert_eq!(outcome.map(|d| d.status()), Ok(expect), "{header}");
    }
}

#[test]
fn the_build_refuses_weak_keys() {
    // RFC 8725 3.5 / RFC 7518 3.2: an HS256 key shorter than 32 bytes never compiles in.
    let text = |key: &str| {
        format!("[[keys]]\nkid = \"k\"\ndemo = \"{key}\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n")
    };
    let parse = |key: &str| gateway_config::parse(&text(key), std::path::Path::new("t.toml"), &|_| None);
    assert!(parse(&"k".repeat(31)).is_err());
    assert!(parse(&"k".repeat(32)).is_ok());
    assert!(parse("").is_err());
}

#[test]
fn the_signing_key_is_never_in_an_answer() {
    let secret = String::from_utf8_lossy(testkit::gateway::fixture_secret()).into_owned();
    for mut gateway in common::gateways() {
        for case in corpus() {
            let shown = gateway.decide(&case.head, case.now).shown();
            assert!(!shown.contains(&secret), "[{}] {}", gateway.name(), case.name);
        }
    }
}

#[test]
#[ignore = "writes fuzz seeds; run by fuzz/run.sh"]
fn write_fuzz_seeds() {
    // One folder per fuzz target, in the input format of each.
    let Some(dir) = std::env::var_os("FUZZ_SEED_DIR") else { return };
    let dir = std::path::PathBuf::from(dir);
    let write = |target: &str, name: String, bytes: &[u8]| {
        let folder = dir.join(target);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join(name), bytes).unwrap();
    };
    for (i, case) in corpus().iter().enumerate() {
        // handler: 8 bytes of clock, then the head.
        let mut seed = case.now.to_le_bytes().to_vec();
        seed.extend_from_slice(&case.head);
        write("handler", format!("attack-{i:04}"), &seed);
        let Some(token) = testkit::gateway::bearer_token_of(&case.head) else { continue };
        // token: the credentials.
        write("token", format!("attack-{i:04}"), token);
        // signed_token: header JSON, 0xFF, claims JSON.
        let text = String::from_utf8_lossy(token);
        let mut parts = text.split('.');
        let decode = |part: Option<&str>| {
            base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, part.unwrap_or("")).ok()
        };
        if let (Some(header), Some(claims)) = (decode(parts.next()), decode(parts.next())) {
            let mut seed = header;
            seed.push(0xff);
            seed.extend_from_slice(&claims);
            write("signed_token", format!("attack-{i:04}"), &seed);
        }
    }
    // jwks: JWKS documents, the test provider's keys, good and refused.
    let jwks = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../testkit/keys/idp-jwks.json"))
        .unwrap();
    write("jwks", "idp-jwks".into(), jwks.as_bytes());
    let set: serde_json::Value = serde_json::from_str(&jwks).unwrap();
    for (i, key) in set["keys"].as_array().unwrap().iter().enumerate() {
        write("jwks", format!("key-{i}"), serde_json::json!({ "keys": [key] }).to_string().as_bytes());
        let mut leaked = key.clone();
        leaked["d"] = "AQAB".into();
        write("jwks", format!("leaked-{i}"), serde_json::json!({ "keys": [leaked] }).to_string().as_bytes());
    }
    // forward: target, '\n', then fields one per line; from the forwarding
    // conformance corpus's requests (their targets and fields, token aside).
    for (i, (_, target, fields)) in conformance_requests("forwarding.jsonl").iter().enumerate() {
        write("forward", format!("conformance-{i:04}"), format!("{target}\n{fields}").as_bytes());
    }
    // policy: a method, a token kind (a bearer token), claim bits, then the
    // target and fields as above; from the policy corpus's requests, whose
    // readings (case, slashes, parameters, overrides) the target explores.
    const METHODS: [&str; 8] = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "PROPFIND"];
    for (i, (method, target, fields)) in conformance_requests("policies.jsonl").iter().enumerate() {
        let Some(m) = METHODS.iter().position(|known| known == method) else { continue };
        let mut seed = vec![m as u8, 1, (i * 37) as u8, (i * 11) as u8];
        seed.extend_from_slice(format!("{target}\n{fields}").as_bytes());
        write("policy", format!("conformance-{i:04}"), &seed);
    }
    // config: the example config and variants of it.
    let example = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../gateway.toml")).unwrap();
    let variants = [
        example.clone(),
        example.replace("demo = \"DEMO-ONLY-gateway-signing-key-not-a-secret\"", "env = \"KEY_PROD\""),
        example.replace("demo = \"DEMO-ONLY-gateway-signing-key-not-a-secret\"", "env = \"SHORT\""),
        example.replace(
            "demo = \"DEMO-ONLY-gateway-signing-key-not-a-secret\"",
            "file = \"key.hex\"\nencoding = \"hex\"",
        ),
        example.replace(
            "demo = \"DEMO-ONLY-gateway-signing-key-not-a-secret\"",
            "demo = \"q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s\"\nencoding = \"base64url\"",
        ),
        example.replace("aud = \"users\"", "aud = \"orders\""),
        example.replace("leeway_secs = 30", "leeway_secs = 3601"),
        example.replace("http://127.0.0.1:9103", "ftp://x"),
    ];
    for (i, text) in variants.iter().enumerate() {
        write("config", format!("config-{i:02}"), text.as_bytes());
    }
}

/// The method, target and fields (one per line, without `Authorization`
/// and `Host`) of each request of a conformance corpus file.
fn conformance_requests(file: &str) -> Vec<(String, String, String)> {
    let path = testkit::fixture::root().join("testkit/conformance").join(file);
    let corpus = std::fs::read_to_string(path).unwrap();
    corpus
        .lines()
        .map(|line| {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            let request: Vec<u8> = case["request"].as_str().unwrap().chars().map(|c| c as u8).collect();
            let text = String::from_utf8_lossy(&request).into_owned();
            let head = text.split("\r\n\r\n").next().unwrap_or("");
            let mut lines = head.split("\r\n");
            let mut request_line = lines.next().unwrap_or("").split(' ');
            let method = request_line.next().unwrap_or("GET").to_owned();
            let target = request_line.next().unwrap_or("/").to_owned();
            let fields: Vec<&str> = lines
                .filter(|l| !l.to_ascii_lowercase().starts_with("authorization:") && !l.starts_with("Host:"))
                .collect();
            (method, target, fields.join("\n"))
        })
        .collect()
}

#[test]
fn signing_helpers_match_rfc7515_appendix_a1() {
    // The minting code the corpus relies on, checked against RFC 7515 A.1.
    let key = base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow",
    )
    .unwrap();
    let input = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ";
    assert_eq!(sign(&key, input.as_bytes()), "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
}

/// The committed HTTP corpus, which the hosts' runner reads
/// (`testkit/conformance/hosts.test.mjs`).
const HTTP_CORPUS: &str = "testkit/conformance/attacks.jsonl";

/// The time the HTTP corpus is minted around: ten minutes before
/// 2100-01-01, so its tokens expire when the forwarding corpus's do.
const HTTP_CORPUS_NOW: u64 = 4_102_444_200;

/// The corpus for the hosts over HTTP (`testkit/conformance/hosts.test.mjs`
/// replays it through host-sim serve, workerd and Envoy), one case a line,
/// minted around [`HTTP_CORPUS_NOW`]. The hosts give the module their own
/// clocks, so a case is kept only when its verdict is the same at `now`
/// (the real time), at `HTTP_CORPUS_NOW` and two minutes after it: `exp`
/// and `nbf` each bound one side of the time a token is valid, so a verdict
/// that holds at both ends holds at every time between them, whenever the
/// hosts run. Cases about the host's clock, and those at the edges of the
/// leeway, stay in the in-process tests above.
///
/// A host's HTTP/1 front end owns the syntax of the request: it may answer
/// an odd head itself, or pass on a reshaped one (joined fields, a re-framed
/// body, a rebuilt target). So only a canonical request (the fixture's
/// request line and fields around one well-formed token) must get the
/// module's exact answer on every host; any other case must be refused, or,
/// when forwarded, carry a token that verifies once what HTTP lets a front
/// end strip (a bare CR, an obs-fold) is gone: nothing unauthorised may reach
/// the upstream.
fn http_corpus(now: u64) -> (String, usize, usize) {
    CORPUS_NOW.with(|clock| clock.set(HTTP_CORPUS_NOW));
    let mut native = testkit::gateway::Native::new();
    let mut verdict_at = |head: &[u8], t: u64| native.decide(head, t as f64).verdict().unwrap();
    let (mut lines, mut kept, mut left) = (String::new(), 0, 0);
    for case in corpus() {
        let at_corpus_time = verdict_at(&case.head, HTTP_CORPUS_NOW);
        if case.now != HTTP_CORPUS_NOW as f64
            || verdict_at(&case.head, now) != at_corpus_time
            || verdict_at(&case.head, HTTP_CORPUS_NOW + 120) != at_corpus_time
        {
            left += 1;
            continue;
        }
        let expect = match expected_verdict(&case) {
            Verdict::Forward { subject, .. } => {
                let Expect::Forward(aud, _) = case.expect else { unreachable!() };
                let route = testkit::gateway::config().routes.iter().find(|r| r.audience == aud).unwrap();
                let subject = (!subject.is_empty()).then_some(subject);
                serde_json::json!({ "forwarded": { "origin": route.origin, "subject": subject } })
            }
            Verdict::Reject(r) => {
                serde_json::json!({ "refused": { "status": r.status(), "reason": r.reason() } })
            }
        };
        let canonical = testkit::gateway::bearer_token_of(&case.head).is_some_and(|token| {
            token.iter().all(|&b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
                && case.head == bearer_request(&String::from_utf8_lossy(token))
        });
        let front_end = (!canonical).then(|| {
            let valid_token = strippable_tokens(&case.head).iter().any(|token| {
                matches!(verdict_at(&bearer_request(token), HTTP_CORPUS_NOW), Verdict::Forward { .. })
            });
            serde_json::json!({ "valid_token": valid_token })
        });
        // Each byte as one character, which the harness sends back as latin1.
        let request: String = case.head.iter().map(|&b| char::from(b)).collect();
        let line = serde_json::json!({ "name": case.name, "request": request, "expect": [expect], "front_end": front_end });
        lines.push_str(&format!("{line}\n"));
        kept += 1;
    }
    CORPUS_NOW.with(|clock| clock.set(NOW));
    (lines, kept, left)
}

fn real_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// The committed HTTP corpus is what the corpus above gives: a case added
/// or changed here reaches the hosts only once the file is written again.
#[test]
fn committed_http_corpus_is_current() {
    let (lines, kept, _) = http_corpus(real_now());
    assert!(kept > 200, "only {kept} cases can go over HTTP");
    let committed = std::fs::read_to_string(testkit::fixture::root().join(HTTP_CORPUS)).unwrap_or_default();
    assert!(
        committed == lines,
        "{HTTP_CORPUS} is not the corpus of security/tests/attacks.rs: write it again with \
         `cargo test --release -p gateway-security --test attacks -- --ignored --exact write_http_corpus`"
    );
}

/// Writes the HTTP corpus to [`HTTP_CORPUS`].
#[test]
#[ignore = "writes testkit/conformance/attacks.jsonl"]
fn write_http_corpus() {
    let (lines, kept, left) = http_corpus(real_now());
    std::fs::write(testkit::fixture::root().join(HTTP_CORPUS), lines).unwrap();
    eprintln!("{kept} cases written to {HTTP_CORPUS}, {left} left to the in-process tests");
}

/// The compact tokens in `head` once a bare CR and an obs-fold are gone,
/// which an HTTP/1 front end may strip (RFC 9112 sections 2.2 and 5.2).
fn strippable_tokens(head: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(head).replace("\r\n ", " ").replace("\r\n\t", " ");
    let mut stripped = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\r' || chars.peek() == Some(&'\n') {
            stripped.push(c);
        }
    }
    stripped
        .split(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .filter(|word| word.matches('.').count() == 2)
        .map(str::to_owned)
        .collect()
}
