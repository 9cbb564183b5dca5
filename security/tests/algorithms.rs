//! RS256, ES256 and EdDSA: the attack corpus of algorithm confusion and
//! malformed signatures, and the differential test against `jsonwebtoken`
//! for each algorithm, with the keys of `testkit/fixture-algorithms.toml`
//! (a JWKS document and a PEM key, the RFC 7515 and RFC 8037 test keys).
//!
//! The worker here is the native rlib built with the three features (this
//! crate's dev-dependency turns them on for the workspace's test build).
//! Tokens are decided by [`decide`], the phases of `gateway::authorize`
//! from the token on (split, header and key, signature, claims). The real
//! module built with every algorithm and `max_token_bytes = 2048`
//! (`target/fixture/gateway-algorithms.wasm`, `make fixture`) runs every
//! algorithm's cases through wasmtime.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use gateway_config::{GatewayConfig, PublicKey};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use worker::Rejection;
use worker::config::{Config, VerifyingKey};
use worker::internal::Arena;
use worker::keys;

const NOW: u64 = 1_800_000_000;
const ISSUER: &str = "https://issuer.test";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn loaded() -> &'static GatewayConfig {
    static CONFIG: OnceLock<GatewayConfig> = OnceLock::new();
    CONFIG.get_or_init(|| {
        gateway_config::load(&root().join("testkit/fixture-algorithms.toml"))
            .unwrap_or_else(|e| panic!("{e}"))
    })
}

fn leak<T: ?Sized>(value: Box<T>) -> &'static T {
    Box::leak(value)
}

/// The fixture as the worker reads it, built at run time the way the build
/// writes it at compile time (the same `const fn`s for RSA).
fn config() -> &'static Config<'static> {
    static CONFIG: OnceLock<Config<'static>> = OnceLock::new();
    CONFIG.get_or_init(|| testkit::fixture::worker_config_of(loaded(), &|public| Some(public_key(public))))
}

/// A validated public key as the worker verifies with it.
fn public_key(public: &gateway_config::PublicKeyConfig) -> VerifyingKey<'static> {
    let kid: &'static str = leak(public.kid.clone().into_boxed_str());
    match &public.key {
        PublicKey::Rsa { modulus, exponent } => {
            let width = [256, 384, 512].into_iter().find(|w| modulus.len() <= *w).unwrap();
            let hex: String = std::iter::repeat_n(0u8, width - modulus.len())
                .chain(modulus.iter().copied())
                .map(|b| format!("{b:02x}"))
                .collect();
            let modulus_params = match width {
                256 => keys::Modulus::Bits2048(leak(Box::new(keys::params_2048(&hex)))),
                384 => keys::Modulus::Bits3072(leak(Box::new(keys::params_3072(&hex)))),
                _ => keys::Modulus::Bits4096(leak(Box::new(keys::params_4096(&hex)))),
            };
            VerifyingKey::Rs256(keys::RsaKey {
                kid,
                len: modulus.len(),
                exponent: *exponent,
                modulus: modulus_params,
            })
        }
        PublicKey::P256 { sec1 } => VerifyingKey::Es256(keys::EcKey { kid, sec1: leak(Box::new(*sec1)) }),
        PublicKey::Ed25519 { public } => {
            VerifyingKey::EdDsa(keys::EdKey { kid, public: leak(Box::new(*public)) })
        }
    }
}

/// The request path from the token on: the audience it routes to, or why not.
fn decide(token: &str, now: u64) -> Result<&'static str, Rejection> {
    let mut region = vec![0u8; 16 << 10];
    let mut arena = Arena::new(&mut region);
    let mut keys = worker::keys::Lookup::new(worker::keys::FetchedKeys::none());
    worker::internal::authorize(token.as_bytes(), now, config(), &mut keys, &mut arena, None)
        .map(|v| v.route.audience)
}

/// The fixture's issuer with no compiled key, fetching its keys instead.
fn fetching_config() -> &'static Config<'static> {
    static CONFIG: OnceLock<Config<'static>> = OnceLock::new();
    CONFIG.get_or_init(|| {
        static FETCH: worker::config::KeyFetch<'static> = worker::config::KeyFetch {
            kind: worker::config::SourceKind::Jwks,
            url: "https://issuer.test/jwks",
            refresh_secs: 600,
            refetch_secs: 60,
            timeout_ms: 5000,
            max_stale_secs: 86_400,
            max_keys: 8,
        };
        let issuers: Vec<worker::config::Issuer<'static>> = config()
            .issuers
            .iter()
            .map(|issuer| worker::config::Issuer { keys: &[], fetch: Some(&FETCH), ..*issuer })
            .collect();
        Config { issuers: leak(issuers.into_boxed_slice()), ..*config() }
    })
}

/// The fixture's public keys installed at run time from one JWKS document:
/// idp-jwks.json and the 3072-bit PEM key as a JWK.
fn fetched() -> &'static worker::keys::FetchedKeys {
    static STORE: OnceLock<Box<worker::keys::FetchedKeys>> = OnceLock::new();
    STORE.get_or_init(|| {
        let mut set: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root().join("testkit/keys/idp-jwks.json")).unwrap())
                .unwrap();
        let Ok(PublicKey::Rsa { modulus, exponent }) =
            gateway_config::public_keys::read_pem(std::str::from_utf8(&pem("rs256-3072.pub.pem")).unwrap())
        else {
            panic!("the 3072-bit fixture key")
        };
        let e: Vec<u8> = exponent.to_be_bytes().into_iter().skip_while(|&b| b == 0).collect();
        set["keys"].as_array_mut().unwrap().push(serde_json::json!({
            "kty": "RSA", "kid": "rsa-3072", "use": "sig", "n": b64(&modulus), "e": b64(&e),
        }));
        let mut store = Box::new(worker::keys::FetchedKeys::new());
        let mut summary = String::new();
        // Installed now: the differential test decides at the real clock.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let count = store.install(0, set.to_string().as_bytes(), now, fetching_config(), &mut summary);
        assert_eq!(count, Ok(4), "{summary}");
        store
    })
}

/// [`decide`] with the keys installed at run time instead of compiled in.
fn decide_fetched(token: &str, now: u64) -> Result<&'static str, Rejection> {
    let mut region = vec![0u8; 16 << 10];
    let mut arena = Arena::new(&mut region);
    let mut keys = worker::keys::Lookup::new(fetched());
    worker::internal::authorize(token.as_bytes(), now, fetching_config(), &mut keys, &mut arena, None)
        .map(|v| v.route.audience)
}

fn pem(name: &str) -> Vec<u8> {
    std::fs::read(root().join("testkit/keys").join(name)).unwrap()
}

/// The DER inside a PEM file (PKCS#1 for the RSA private keys, PKCS#8 for
/// the others, as `jsonwebtoken`'s `from_*_der` take them).
fn der(name: &str) -> Vec<u8> {
    use base64::engine::general_purpose::STANDARD;
    let text = String::from_utf8(pem(name)).unwrap();
    let body: String = text.lines().filter(|line| !line.starts_with("-----")).collect();
    STANDARD.decode(body).unwrap()
}

/// One algorithm under test: its kid, `jsonwebtoken`'s keys for it.
struct Signer {
    alg: Algorithm,
    kid: &'static str,
    encoding: EncodingKey,
    decoding: DecodingKey,
}

fn signers() -> Vec<Signer> {
    let jwks: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root().join("testkit/keys/idp-jwks.json")).unwrap()).unwrap();
    let jwk = |kid: &str| jwks["keys"].as_array().unwrap().iter().find(|k| k["kid"] == kid).unwrap().clone();
    let s = |v: &serde_json::Value| v.as_str().unwrap().to_owned();
    let (rsa, ec, ed) = (jwk("rsa-a2"), jwk("ec-a3"), jwk("ed-8037"));
    vec![
        Signer {
            alg: Algorithm::RS256,
            kid: "rsa-a2",
            encoding: EncodingKey::from_rsa_der(&der("rs256-rfc7515.key.pem")),
            decoding: DecodingKey::from_rsa_components(&s(&rsa["n"]), &s(&rsa["e"])).unwrap(),
        },
        Signer {
            alg: Algorithm::RS256,
            kid: "rsa-3072",
            encoding: EncodingKey::from_rsa_der(&der("rs256-3072.key.pem")),
            decoding: match gateway_config::public_keys::read_pem(
                std::str::from_utf8(&pem("rs256-3072.pub.pem")).unwrap(),
            ) {
                Ok(PublicKey::Rsa { modulus, exponent }) => {
                    DecodingKey::from_rsa_raw_components(&modulus, &exponent.to_be_bytes())
                }
                other => panic!("{other:?}"),
            },
        },
        Signer {
            alg: Algorithm::ES256,
            kid: "ec-a3",
            encoding: EncodingKey::from_ec_der(&der("es256-rfc7515.key.pem")),
            decoding: DecodingKey::from_ec_components(&s(&ec["x"]), &s(&ec["y"])).unwrap(),
        },
        Signer {
            alg: Algorithm::EdDSA,
            kid: "ed-8037",
            encoding: EncodingKey::from_ed_der(&der("eddsa-rfc8037.key.pem")),
            decoding: DecodingKey::from_ed_components(&s(&ed["x"])).unwrap(),
        },
    ]
}

fn claims(aud: &str, exp: u64) -> serde_json::Value {
    serde_json::json!({"iss": ISSUER, "aud": aud, "sub": "user-1", "exp": exp, "iat": NOW - 10})
}

fn mint(signer: &Signer, claims: &serde_json::Value) -> String {
    let mut header = Header::new(signer.alg);
    header.kid = Some(signer.kid.to_owned());
    jsonwebtoken::encode(&header, claims, &signer.encoding).unwrap()
}

/// A token whose header is the JSON text `header`, as written (escapes
/// and all), signed by `signer`.
fn mint_raw(signer: &Signer, header: &str, claims: &serde_json::Value) -> String {
    let input = format!("{}.{}", b64(header.as_bytes()), b64(&serde_json::to_vec(claims).unwrap()));
    let signature = jsonwebtoken::crypto::sign(input.as_bytes(), &signer.encoding, signer.alg).unwrap();
    format!("{input}.{signature}")
}

/// The JOSE name of a signer's algorithm.
fn alg_name(signer: &Signer) -> &'static str {
    match signer.alg {
        Algorithm::RS256 => "RS256",
        Algorithm::ES256 => "ES256",
        _ => "EdDSA",
    }
}

/// Headers with member names spelled with escapes, for `signer`'s key, and
/// what the gateway answers: an escaped name is the member it spells
/// (RFC 8259 section 7), so escaped `crit` and escaped duplicates are refused.
fn escaped_header_cases(signer: &Signer) -> Vec<(String, Result<&'static str, Rejection>)> {
    let (alg, kid) = (alg_name(signer), signer.kid);
    vec![
        (format!(r#"{{"alg":"{alg}","kid":"{kid}","\u0063rit":["exp"]}}"#), Err(Rejection::CriticalHeader)),
        (format!(r#"{{"alg":"{alg}","kid":"{kid}","\u0061lg":"none"}}"#), Err(Rejection::MalformedHeader)),
        (
            format!(r#"{{"alg":"{alg}","kid":"{kid}","\u0074yp":"JOSE+JSON"}}"#),
            Err(Rejection::UnsupportedType),
        ),
        (format!(r#"{{"alg":"{alg}","kid":"{kid}","\u006bid":"{kid}"}}"#), Err(Rejection::MalformedHeader)),
        (format!(r#"{{"\u0061lg":"{alg}","\u006bid":"{kid}"}}"#), Ok("orders")),
    ]
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `token` with its header replaced (not re-signed).
fn with_header(token: &str, header: &str) -> String {
    let (_, rest) = token.split_once('.').unwrap();
    format!("{}.{rest}", b64(header.as_bytes()))
}

/// `token` with its signature replaced.
fn with_signature(token: &str, signature: &[u8]) -> String {
    let (input, _) = token.rsplit_once('.').unwrap();
    format!("{input}.{}", b64(signature))
}

fn signature_of(token: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(token.rsplit_once('.').unwrap().1).unwrap()
}

fn hmac(secret: &[u8], input: &str) -> Vec<u8> {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
    mac.update(input.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

#[test]
fn every_algorithm_verifies_its_own_tokens() {
    for signer in signers() {
        let token = mint(&signer, &claims("orders", NOW + 600));
        assert_eq!(decide(&token, NOW), Ok("orders"), "{}", signer.kid);
        assert_eq!(decide(&token, NOW + 700), Err(Rejection::Expired), "{}", signer.kid);
    }
}

#[test]
fn algorithm_confusion_is_refused() {
    let rsa = &signers()[0];
    let good = mint(rsa, &claims("orders", NOW + 600));
    let payload = good.split('.').nth(1).unwrap().to_owned();
    // The classic attack: HS256 with the RSA public key (PEM, JWK n, or
    // DER bytes) as the HMAC secret, naming the RSA key's kid.
    let jwks = std::fs::read(root().join("testkit/keys/idp-jwks.json")).unwrap();
    let n = URL_SAFE_NO_PAD
        .decode(serde_json::from_slice::<serde_json::Value>(&jwks).unwrap()["keys"][0]["n"].as_str().unwrap())
        .unwrap();
    for secret in [jwks.clone(), n.clone(), pem("rs256-3072.pub.pem")] {
        for kid in ["rsa-a2", "rsa-3072"] {
            let input =
                format!("{}.{payload}", b64(format!(r#"{{"alg":"HS256","kid":"{kid}"}}"#).as_bytes()));
            let token = format!("{input}.{}", b64(&hmac(&secret, &input)));
            assert_eq!(decide(&token, NOW), Err(Rejection::UnsupportedAlgorithm), "HS256 by {kid}");
        }
    }
    // A kid naming a key of another type, whatever the signature.
    let cases = [
        (r#"{"alg":"RS256","kid":"ec-a3"}"#, "RS256 naming the P-256 key"),
        (r#"{"alg":"ES256","kid":"rsa-a2"}"#, "ES256 naming the RSA key"),
        (r#"{"alg":"EdDSA","kid":"rsa-a2"}"#, "EdDSA naming the RSA key"),
        (r#"{"alg":"RS256","kid":"fixture"}"#, "RS256 naming the HMAC secret"),
        (r#"{"alg":"ES256","kid":"fixture"}"#, "ES256 naming the HMAC secret"),
        (r#"{"alg":"HS256","kid":"ed-8037"}"#, "HS256 naming the Ed25519 key"),
        (r#"{"alg":"none","kid":"rsa-a2"}"#, "none"),
        (r#"{"alg":"RS384","kid":"rsa-a2"}"#, "RS384"),
        (r#"{"alg":"PS256","kid":"rsa-a2"}"#, "PS256"),
        (r#"{"alg":"ES384","kid":"ec-a3"}"#, "ES384"),
        (r#"{"alg":"Ed25519","kid":"ed-8037"}"#, "Ed25519 is not a JWS alg name here"),
        (r#"{"alg":"rs256","kid":"rsa-a2"}"#, "lower case"),
    ];
    for (header, name) in cases {
        assert_eq!(decide(&with_header(&good, header), NOW), Err(Rejection::UnsupportedAlgorithm), "{name}");
    }
    // An HMAC secret never verifies a public-key algorithm: an RS256 token
    // "signed" with the HMAC of the fixture secret names the HMAC key.
    let input = format!("{}.{payload}", b64(br#"{"alg":"RS256","kid":"fixture"}"#));
    let token = format!("{input}.{}", b64(&hmac(loaded().issuers[0].keys[0].secret(), &input)));
    assert_eq!(decide(&token, NOW), Err(Rejection::UnsupportedAlgorithm));
}

#[test]
fn escaped_header_member_names_are_the_members_for_every_algorithm() {
    for signer in signers() {
        for (header, expected) in escaped_header_cases(&signer) {
            let token = mint_raw(&signer, &header, &claims("orders", NOW + 600));
            assert_eq!(decide(&token, NOW), expected, "{header}");
            // jsonwebtoken decodes names too, and agrees on each but a typ
            // other than JWT, which it accepts (SECURITY.md, "Intentional
            // differences").
            if expected == Err(Rejection::UnsupportedType) {
                continue;
            }
            let mut validation = validation(&signer);
            validation.validate_exp = false;
            let reference = jsonwebtoken::decode::<serde_json::Value>(&token, &signer.decoding, &validation);
            assert_eq!(reference.is_ok(), expected.is_ok(), "{header}: jsonwebtoken {reference:?}");
        }
    }
}

#[test]
fn ecdsa_signatures_must_be_jose_r_s_in_range() {
    let signers = signers();
    let ec = &signers[2];
    let token = mint(ec, &claims("orders", NOW + 600));
    let sig = signature_of(&token);
    let n = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
    // Psychic signatures (CVE-2022-21449): r = s = 0, and r or s = n.
    let zero_r: Vec<u8> = [&[0u8; 32][..], &sig[32..]].concat();
    let zero_s: Vec<u8> = [&sig[..32], &[0u8; 32][..]].concat();
    let r_n: Vec<u8> = [&n[..], &sig[32..]].concat();
    let s_n: Vec<u8> = [&sig[..32], &n[..]].concat();
    for (bad, name) in
        [(vec![0u8; 64], "r = s = 0"), (zero_r, "r = 0"), (zero_s, "s = 0"), (r_n, "r = n"), (s_n, "s = n")]
    {
        assert_eq!(decide(&with_signature(&token, &bad), NOW), Err(Rejection::BadSignature), "{name}");
    }
    // DER (what a JCA or OpenSSL signer gives) is refused by its length.
    let der = der_of(&sig);
    assert_eq!(decide(&with_signature(&token, &der), NOW), Err(Rejection::BadSignature));
    // High S: n - s verifies as well (RFC 7518 does not forbid it; jsonwebtoken accepts).
    let high = [&sig[..32], &sub_mod_n(&n, &sig[32..])[..]].concat();
    assert_eq!(decide(&with_signature(&token, &high), NOW), Ok("orders"));
    let verdict = jsonwebtoken::decode::<serde_json::Value>(
        &with_signature(&token, &high),
        &ec.decoding,
        &validation(ec),
    );
    assert!(verdict.is_ok(), "{verdict:?}");
}

#[test]
fn signatures_of_the_wrong_size_are_refused() {
    for signer in signers() {
        let token = mint(&signer, &claims("orders", NOW + 600));
        let sig = signature_of(&token);
        for bad in [&sig[..sig.len() - 1], &[&sig[..], &[0][..]].concat()[..], &[][..]] {
            let verdict = decide(&with_signature(&token, bad), NOW);
            let expected = if bad.is_empty() { Rejection::MissingSignature } else { Rejection::BadSignature };
            assert_eq!(verdict, Err(expected), "{} {} bytes", signer.kid, bad.len());
        }
    }
    // An RSA signature at or above the modulus is refused before exponentiation.
    let signers = signers();
    let token = mint(&signers[0], &claims("orders", NOW + 600));
    assert_eq!(decide(&with_signature(&token, &[0xff; 256]), NOW), Err(Rejection::BadSignature));
}

#[test]
fn the_build_refuses_short_rsa_keys_and_other_curves() {
    let dir = std::env::temp_dir().join(format!("gw-alg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = root().join("config/tests/data");
    for (file, entry, expected) in [
        ("rsa-1024-jwks.json", "jwks = \"rsa-1024-jwks.json\"", "is a 1024-bit RSA key"),
        ("rsa-1024.pub.pem", "kid = \"k\"\npem = \"rsa-1024.pub.pem\"", "is a 1024-bit RSA key"),
        // A JWKS skips a P-384 key (jose/src/jwks.rs); one that holds nothing else has no key.
        (
            "p384-jwks.json",
            "jwks = \"p384-jwks.json\"",
            "holds no signing key this gateway verifies (1 skipped; key 0: curve \"P-384\"",
        ),
        ("p384.pub.pem", "kid = \"k\"\npem = \"p384.pub.pem\"", "is on curve 1.3.132.0.34"),
    ] {
        std::fs::copy(data.join(file), dir.join(file)).unwrap();
        let toml = format!("[[keys]]\n{entry}\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n");
        std::fs::write(dir.join("gw.toml"), toml).unwrap();
        let line = gateway_config::load(&dir.join("gw.toml")).unwrap_err().to_string();
        assert!(line.contains(file) && line.contains(expected) && !line.contains('\n'), "{line}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn validation(signer: &Signer) -> Validation {
    let mut validation = Validation::new(signer.alg);
    validation.leeway = 30;
    validation.validate_nbf = true;
    validation.set_issuer(&[ISSUER]);
    validation.set_audience(&["orders", "billing", "users"]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation
}

/// A seeded xorshift: the same tokens on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// 10,000 tokens per algorithm, each decided by the gateway and by
/// `jsonwebtoken` (with the gateway's rules and the key the token names):
/// valid ones with varied claims, expired, not yet valid, other audiences
/// and issuers, signatures with a flipped bit, truncated or signed by
/// another key, and payloads changed after signing. Every verdict agrees,
/// and the same keys installed at run time give the same verdicts as
/// compiled in.
#[test]
fn differential_against_jsonwebtoken_10000_tokens_per_algorithm() {
    let signers = signers();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    for (i, signer) in signers.iter().enumerate() {
        let other = &signers[(i + 1) % signers.len()];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ i as u64);
        let (mut accepted, mut total) = (0, 0);
        // Minting is the slow part (RSA private keys); each minted token
        // yields several cases.
        while total < 10_000 {
            let aud = ["orders", "billing", "users", "nobody"][rng.below(4)];
            // Away from the leeway boundary: jsonwebtoken reads the clock itself.
            let exp = match rng.below(4) {
                0 => now - 3_600,
                _ => now + 60 + rng.below(86_400) as u64,
            };
            let mut body = claims(aud, exp);
            body["iat"] = now.into();
            match rng.below(6) {
                0 => body["iss"] = "https://other.test".into(),
                1 => body["nbf"] = (now + 3_600).into(),
                2 => body["scope"] = "read write".into(),
                _ => {}
            }
            let token = mint(signer, &body);
            let (input, _) = token.rsplit_once('.').unwrap();
            let payload = token.split('.').nth(1).unwrap();
            let mut cases = vec![token.clone()];
            for _ in 0..9 {
                let case = match rng.below(5) {
                    0 => {
                        let mut sig = signature_of(&token);
                        let at = rng.below(sig.len());
                        sig[at] ^= 1 << rng.below(8);
                        with_signature(&token, &sig)
                    }
                    1 => {
                        let sig = signature_of(&token);
                        with_signature(&token, &sig[..rng.below(sig.len())])
                    }
                    2 => {
                        // Signed by another key under this key's kid and alg.
                        let forged = mint(other, &body);
                        format!("{input}.{}", forged.rsplit_once('.').unwrap().1)
                    }
                    3 => {
                        let mut changed = body.clone();
                        changed["sub"] = "admin".into();
                        let changed = b64(&serde_json::to_vec(&changed).unwrap());
                        token.replacen(payload, &changed, 1)
                    }
                    _ => token.clone(),
                };
                cases.push(case);
            }
            for case in cases {
                // Keys installed at run time decide exactly as compiled ones.
                assert_eq!(decide_fetched(&case, now), decide(&case, now), "{} fetched: {case}", signer.kid);
                let gateway = decide(&case, now).is_ok();
                let reference =
                    jsonwebtoken::decode::<serde_json::Value>(&case, &signer.decoding, &validation(signer));
                assert_eq!(
                    gateway,
                    reference.is_ok(),
                    "{} disagrees on {case}: gateway {:?}, jsonwebtoken {:?}",
                    signer.kid,
                    decide(&case, now),
                    reference.err()
                );
                accepted += usize::from(gateway);
                total += 1;
            }
        }
        assert!(accepted > 500 && accepted < 9_000, "{}: {accepted} of {total} accepted", signer.kid);
        eprintln!("{}: {total} tokens, {accepted} accepted by both, 0 disagreements", signer.kid);
    }
}

/// The real module built with every algorithm, in wasmtime: RS256 (2048 and
/// 3072 bits), ES256 and EdDSA tokens forward, and the confusion cases are
/// refused with their reason.
#[test]
fn the_module_with_every_algorithm_decides_in_wasmtime() {
    use contract::Decision;
    use runtime::Runtime;
    use runtime::{EngineOptions, ModuleSource};

    let path = root().join("target/fixture/gateway-algorithms.wasm");
    if !path.exists() {
        assert!(
            std::env::var_os("REQUIRE_HOST_SIM").is_none(),
            "{} is missing: run `make fixture`",
            path.display()
        );
        eprintln!("skipped: {} is missing (make fixture builds it)", path.display());
        return;
    }
    let options = EngineOptions { no_deadline: true, ..EngineOptions::default() };
    let runtime = Runtime::load(&options, &ModuleSource::Wasm(path.clone()), 1).unwrap();
    let signers = signers();
    let now = NOW as f64;
    let short = serde_json::json!({"iss": ISSUER, "aud": "users", "exp": NOW + 600});
    for signer in &signers {
        let token = mint(signer, &short);
        assert!(token.len() <= 2048, "{} bytes", token.len());
        let head = format!("GET /x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {token}\r\n\r\n");
        match runtime.decide_fresh(head.as_bytes(), now).unwrap().view() {
            Decision::Forward(plan) => assert_eq!(plan.origin, "http://127.0.0.1:9202", "{}", signer.kid),
            Decision::Answer(r) => panic!("{}: {} {}", signer.kid, r.status, r.reason),
        }
        let mut sig = signature_of(&token);
        sig[5] ^= 1;
        let mut refused = vec![
            (with_signature(&token, &sig), "signature mismatch"),
            (
                with_header(&token, &format!(r#"{{"alg":"HS256","kid":"{}"}}"#, signer.kid)),
                "alg not accepted for this key",
            ),
        ];
        for (header, expected) in escaped_header_cases(signer) {
            if let Err(rejection) = expected {
                refused.push((mint_raw(signer, &header, &short), rejection.reason()));
            }
        }
        for (bad, reason) in refused {
            let head = format!("GET /x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {bad}\r\n\r\n");
            match runtime.decide_fresh(head.as_bytes(), now).unwrap().view() {
                Decision::Answer(r) => assert_eq!((r.status, r.reason), (401, reason), "{}", signer.kid),
                Decision::Forward(_) => panic!("{} forwarded {bad}", signer.kid),
            }
        }
    }
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

/// `n - s` for 32-byte big-endian numbers with s < n.
fn sub_mod_n(n: &[u8], s: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let mut d = i16::from(n[i]) - i16::from(s[i]) - borrow;
        borrow = i16::from(d < 0);
        if d < 0 {
            d += 256;
        }
        out[i] = d as u8;
    }
    out
}

/// The DER `SEQUENCE { INTEGER r, INTEGER s }` of a JOSE `r || s`.
fn der_of(sig: &[u8]) -> Vec<u8> {
    let int = |x: &[u8]| {
        let x = &x[x.iter().take_while(|&&b| b == 0).count()..];
        let mut v = if x[0] & 0x80 != 0 { vec![0u8] } else { vec![] };
        v.extend_from_slice(x);
        [vec![0x02, v.len() as u8], v].concat()
    };
    let body = [int(&sig[..32]), int(&sig[32..])].concat();
    [vec![0x30, body.len() as u8], body].concat()
}

/// Per-token time of each algorithm, the gateway's verification beside
/// `jsonwebtoken`'s, natively. A measurement, not a check (it asserts
/// nothing about time): `cargo test --release -p gateway-security --test
/// algorithms -- --ignored --nocapture per_token_time`.
#[test]
#[ignore = "a measurement: run it by name"]
fn per_token_time() {
    use std::time::Instant;
    let rounds = 2_000;
    let hs = testkit::gateway::mint_fixture(
        r#"{"alg":"HS256","kid":"fixture"}"#,
        &serde_json::json!({"iss": ISSUER, "aud": "orders", "sub": "user-1", "exp": NOW + 600}).to_string(),
    );
    let mut tokens = vec![(
        "HS256",
        hs,
        Validation::new(Algorithm::HS256),
        DecodingKey::from_secret(loaded().issuers[0].keys[0].secret()).unwrap(),
    )];
    for signer in signers() {
        let name = match signer.kid {
            "rsa-a2" => "RS256 (2048)",
            "rsa-3072" => "RS256 (3072)",
            "ec-a3" => "ES256",
            _ => "EdDSA",
        };
        tokens.push((
            name,
            mint(&signer, &claims("orders", NOW + 600)),
            validation(&signer),
            signer.decoding,
        ));
    }
    for (name, token, mut validation, key) in tokens {
        validation.validate_exp = false;
        validation.set_audience(&["orders"]);
        validation.set_issuer(&[ISSUER]);
        assert_eq!(decide(&token, NOW), Ok("orders"), "{name}");
        let start = Instant::now();
        for _ in 0..rounds {
            std::hint::black_box(decide(std::hint::black_box(&token), NOW)).unwrap();
        }
        let gateway = start.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
        let start = Instant::now();
        for _ in 0..rounds {
            std::hint::black_box(jsonwebtoken::decode::<serde_json::Value>(&token, &key, &validation))
                .unwrap();
        }
        let reference = start.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
        eprintln!(
            "{name:<14} gateway {gateway:>8.1} us   jsonwebtoken {reference:>8.1} us   ({} token bytes)",
            token.len()
        );
    }
}

/// Per-request time of each algorithm through the real module in wasmtime
/// (a fresh instance per request, and one instance reused), with the whole
/// request path. A measurement, not a check: `cargo test --release -p
/// gateway-security --test algorithms -- --ignored --nocapture
/// per_request_time_in_wasmtime`; `GATEWAY_ALGORITHMS_WASM` names another
/// module built from `testkit/fixture-algorithms.toml`. An algorithm whose
/// token does not fit the module's token buffer is reported as such.
#[test]
#[ignore = "a measurement: run it by name"]
fn per_request_time_in_wasmtime() {
    use contract::Decision;
    use runtime::{EngineOptions, ModuleSource};
    use runtime::{Reusable, Runtime};
    use std::time::Instant;

    let path = std::env::var_os("GATEWAY_ALGORITHMS_WASM")
        .map_or_else(|| root().join("target/fixture/gateway-algorithms.wasm"), PathBuf::from);
    let options = EngineOptions { no_deadline: true, ..EngineOptions::default() };
    let runtime = Runtime::load(&options, &ModuleSource::Wasm(path), 1).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let rounds = 300;
    // Each request carries a token never seen before (its own `jti`), so a
    // reused instance's cache of verified tokens never answers; the last
    // column presents one token again and again, which the cache answers
    // when the token is short enough for it.
    let claims =
        |i: u32| serde_json::json!({"iss": ISSUER, "aud": "users", "exp": now + 600, "jti": i}).to_string();
    let mut kinds: Vec<(String, Vec<String>)> = vec![(
        "HS256".to_owned(),
        (0..rounds)
            .map(|i| testkit::gateway::mint_fixture(r#"{"alg":"HS256","kid":"fixture"}"#, &claims(i)))
            .collect(),
    )];
    for signer in signers() {
        let tokens = (0..rounds).map(|i| mint(&signer, &serde_json::from_str(&claims(i)).unwrap())).collect();
        kinds.push((signer.kid.to_owned(), tokens));
    }
    let head = |token: &str| format!("GET /x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {token}\r\n\r\n");
    for (name, tokens) in kinds {
        let heads: Vec<String> = tokens.iter().map(|t| head(t)).collect();
        match runtime.decide_fresh(heads[0].as_bytes(), now as f64).unwrap().view() {
            Decision::Forward(_) => {}
            Decision::Answer(r) => {
                eprintln!(
                    "{name:<9} not measured: {} {} ({} token bytes)",
                    r.status,
                    r.reason,
                    tokens[0].len()
                );
                continue;
            }
        }
        let per_request = |run: &mut dyn FnMut(&str)| {
            let start = Instant::now();
            for head in &heads {
                run(head);
            }
            start.elapsed().as_secs_f64() * 1e6 / heads.len() as f64
        };
        let fresh = per_request(&mut |head| {
            std::hint::black_box(runtime.decide_fresh(head.as_bytes(), now as f64).unwrap());
        });
        let mut reusable = Reusable::default();
        let reused = per_request(&mut |head| {
            std::hint::black_box(runtime.decide_reused(&mut reusable, head.as_bytes(), now as f64).unwrap());
        });
        let again = per_request(&mut |_| {
            std::hint::black_box(
                runtime.decide_reused(&mut reusable, heads[0].as_bytes(), now as f64).unwrap(),
            );
        });
        eprintln!(
            "{name:<9} fresh {fresh:>8.1} us   reused {reused:>8.1} us   reused, same token again {again:>8.1} us   ({} token bytes)",
            tokens[0].len()
        );
    }
}
