//! Public keys for RS256, ES256 and EdDSA, as identity providers publish
//! them: a JWKS document (RFC 7517, the file served at an issuer's
//! `jwks_uri`, saved at build time) or a PEM public key (SPKI, RFC 5280
//! section 4.1.2.7, `-----BEGIN PUBLIC KEY-----`).
//!
//! Every key is parsed and validated here, at build time, and handed to the
//! worker in the form it computes with (an RSA modulus and exponent, a P-256
//! point, an Ed25519 point): the module never parses a key. A JWKS file is
//! read by the module's own validator ([`gateway_jose::jwks`]), with the
//! same three verdicts a fetched document gets: a key the gateway verifies
//! with is read, and refused in one line naming the file and the key when it
//! is not one the gateway can trust (RSA below 2048 bits or above 4096, an
//! even or tiny exponent, a point not on its curve, an Ed25519 key of small
//! order, an `alg` of the gateway's for another key type, a missing kid); a
//! key that is not for signatures, or for a signature the gateway does not
//! verify (an encryption key, P-384, PS256, ...), is skipped, and the build
//! warns, naming it; a document in which any key, skipped or not, carries a
//! private member of RFC 7518 section 6 (`d`, `p`, `q`, `dp`, `dq`, `qi`,
//! `oth`, or a secret's `k`) is refused whole: it leaked a private key. A
//! PEM file holds one key, which must be one the gateway verifies.

use std::path::Path;

use der::Decode;
use gateway_jose::jwks::{self, Material};

/// The smallest RSA modulus accepted, in bits (RFC 7518 section 3.3).
pub const MIN_RSA_BITS: usize = jwks::MIN_RSA_BITS;

/// The largest RSA modulus accepted, in bits (the worker's widest integer).
pub const MAX_RSA_BITS: usize = jwks::MAX_RSA_BITS;

/// The most signing keys one JWKS document of a config may hold.
pub const MAX_JWKS_KEYS: usize = 64;

/// A signature algorithm beside HS256, each a build feature of the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PublicAlg {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// EdDSA on Ed25519.
    EdDsa,
}

impl PublicAlg {
    /// The JOSE name (`alg`).
    pub fn name(self) -> &'static str {
        match self {
            PublicAlg::Rs256 => "RS256",
            PublicAlg::Es256 => "ES256",
            PublicAlg::EdDsa => "EdDSA",
        }
    }

    /// The worker's cargo feature that builds it in.
    pub fn feature(self) -> &'static str {
        match self {
            PublicAlg::Rs256 => "rs256",
            PublicAlg::Es256 => "es256",
            PublicAlg::EdDsa => "eddsa",
        }
    }

    fn from_name(name: &str) -> Option<PublicAlg> {
        [PublicAlg::Rs256, PublicAlg::Es256, PublicAlg::EdDsa].into_iter().find(|alg| alg.name() == name)
    }
}

/// A validated public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    /// RSA: the modulus (big-endian, no leading zero byte) and the exponent.
    Rsa {
        /// `n`, 2048 to 4096 bits.
        modulus: Vec<u8>,
        /// `e`, odd and at least 3.
        exponent: u64,
    },
    /// P-256: the uncompressed SEC1 point `04 || x || y`, on the curve.
    P256 {
        /// `04 || x || y`.
        sec1: [u8; 65],
    },
    /// Ed25519: the compressed point, not of small order.
    Ed25519 {
        /// RFC 8032 section 5.1.2.
        public: [u8; 32],
    },
}

impl PublicKey {
    /// The one algorithm the key verifies.
    pub fn alg(&self) -> PublicAlg {
        match self {
            PublicKey::Rsa { .. } => PublicAlg::Rs256,
            PublicKey::P256 { .. } => PublicAlg::Es256,
            PublicKey::Ed25519 { .. } => PublicAlg::EdDsa,
        }
    }
}

/// A JWKS document's keys, as the build reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksKeys {
    /// Each signing key with its kid, in document order.
    pub keys: Vec<(String, PublicKey)>,
    /// Each key skipped, and why, in one line (`key 3 (kid "p384"): curve
    /// "P-384" is not verified by this gateway`): the build's warnings.
    pub skipped: Vec<String>,
}

/// Reads a JWKS document with the gateway's one validator
/// ([`gateway_jose::jwks`], which the module runs on fetched documents too).
/// Every algorithm counts as verified here: a key of one the worker is
/// built without is refused later, naming the feature
/// ([`crate::GatewayConfig::check_algorithms`]). `Err` is the reason, to be
/// prefixed with the entry and the file.
pub fn read_jwks(text: &str) -> Result<JwksKeys, String> {
    const EVERY_ALGORITHM: [jwks::Alg; 3] = [jwks::Alg::Rs256, jwks::Alg::Es256, jwks::Alg::EdDsa];
    let limits = jwks::Limits { max_keys: MAX_JWKS_KEYS, built: &EVERY_ALGORITHM };
    let mut read = JwksKeys { keys: Vec::new(), skipped: Vec::new() };
    jwks::read(text.as_bytes(), &limits, |entry| {
        match entry {
            jwks::Entry::Key(jwk) => read.keys.push((jwk.kid.to_owned(), PublicKey::from(jwk.material))),
            jwks::Entry::Skipped(skip) => read.skipped.push(skip.to_string()),
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(read)
}

impl From<Material<'_>> for PublicKey {
    fn from(material: Material<'_>) -> PublicKey {
        match material {
            Material::Rsa { modulus, exponent } => PublicKey::Rsa { modulus: modulus.to_vec(), exponent },
            Material::P256 { sec1 } => PublicKey::P256 { sec1 },
            Material::Ed25519 { public } => PublicKey::Ed25519 { public },
        }
    }
}

/// `alg`, when given, must be the key's one algorithm.
pub fn check_alg(key: &PublicKey, alg: Option<&str>) -> Result<(), String> {
    match alg {
        None => Ok(()),
        Some(name) if PublicAlg::from_name(name) == Some(key.alg()) => Ok(()),
        Some(name) => Err(format!("has alg {name:?}, but the key is for {}", key.alg().name())),
    }
}

/// Reads a PEM `PUBLIC KEY` (SPKI).
pub fn read_pem(text: &str) -> Result<PublicKey, String> {
    let (label, der) = der::pem::decode_vec(pem_block(text)?.as_bytes())
        .map_err(|e| format!("is not a PEM document: {e}"))?;
    if label != "PUBLIC KEY" {
        return Err(format!("is a PEM {label:?}; a \"PUBLIC KEY\" (SPKI) is needed"));
    }
    let spki = spki::SubjectPublicKeyInfoRef::from_der(&der)
        .map_err(|e| format!("is not an SPKI public key: {e}"))?;
    let bits = spki.subject_public_key.as_bytes().ok_or("has a key that is not whole bytes")?;
    const RSA: der::asn1::ObjectIdentifier = der::asn1::ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
    const EC: der::asn1::ObjectIdentifier = der::asn1::ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
    const P256: der::asn1::ObjectIdentifier = der::asn1::ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
    const ED25519: der::asn1::ObjectIdentifier = der::asn1::ObjectIdentifier::new_unwrap("1.3.101.112");
    let oid = spki.algorithm.oid;
    if oid == RSA {
        let rsa = pkcs1::RsaPublicKey::<der::asn1::UintRef<'_>>::from_der(bits)
            .map_err(|e| format!("is not an RSA public key: {e}"))?;
        rsa_key(rsa.modulus.as_bytes().to_vec(), rsa.public_exponent.as_bytes())
    } else if oid == EC {
        let curve = spki.algorithm.parameters_oid().map_err(|_| "names no curve".to_owned())?;
        if curve != P256 {
            return Err(format!("is on curve {curve}; ES256 is P-256 (1.2.840.10045.3.1.7) only"));
        }
        p256_key(bits.try_into().map_err(|_| "is not an uncompressed P-256 point".to_owned())?)
    } else if oid == ED25519 {
        ed25519_key(bits.try_into().map_err(|_| "is not a 32-byte Ed25519 key".to_owned())?)
    } else {
        Err(format!("has algorithm {oid}, which is not RSA, P-256 or Ed25519"))
    }
}

/// The one PEM block of a key file, from its `-----BEGIN` line to the end
/// of its `-----END` line. Found here, before the PEM decoder, so that a
/// file that is not one key says so in the user's terms (an empty file, a
/// second key, text after the key) rather than in the decoder's (a NUL
/// byte, a pre-encapsulation boundary, invalid Base64). Explanatory text
/// before the block (RFC 7468 section 5.2) and blank lines after it are
/// allowed.
fn pem_block(text: &str) -> Result<&str, String> {
    const BEGIN: &str = "-----BEGIN ";
    if text.trim().is_empty() {
        return Err(
            "is empty: it holds no key (save the PEM public key, -----BEGIN PUBLIC KEY-----, in it)".into()
        );
    }
    let Some(begin) = text.find(BEGIN) else {
        return Err("is not a PEM file: it has no -----BEGIN line".into());
    };
    let blocks = text.matches(BEGIN).count();
    if blocks > 1 {
        return Err(format!(
            "holds {blocks} PEM blocks: one key per file, each in a [[keys]] entry of its own"
        ));
    }
    let Some(end) = text[begin..].find("-----END ").map(|at| begin + at) else {
        return Err("has no -----END line: the key is cut short".into());
    };
    let line_end = text[end..].find('\n').map_or(text.len(), |at| end + at + 1);
    if !text[line_end..].trim().is_empty() {
        return Err("has text after the key's -----END line: remove it".into());
    }
    Ok(&text[begin..line_end])
}

fn rsa_key(modulus: Vec<u8>, exponent: &[u8]) -> Result<PublicKey, String> {
    let error = |kind: jwks::JwksErrorKind| jwks::JwksError { key: None, kind }.to_string();
    let exponent = jwks::rsa_exponent(exponent).map_err(error)?;
    let modulus = jwks::rsa_modulus(&modulus).map_err(error)?.to_vec();
    Ok(PublicKey::Rsa { modulus, exponent })
}

fn p256_key(sec1: [u8; 65]) -> Result<PublicKey, String> {
    jwks::check_p256(&sec1).map_err(|kind| jwks::JwksError { key: None, kind }.to_string())?;
    Ok(PublicKey::P256 { sec1 })
}

fn ed25519_key(public: [u8; 32]) -> Result<PublicKey, String> {
    jwks::check_ed25519(&public).map_err(|kind| jwks::JwksError { key: None, kind }.to_string())?;
    Ok(PublicKey::Ed25519 { public })
}

/// Reads a file named by a key entry, relative to the config's folder.
pub(crate) fn read_file(
    base: &Path,
    file: &Path,
) -> Result<(std::path::PathBuf, String), (std::path::PathBuf, String)> {
    let path = base.join(file);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((path, text)),
        Err(e) => Err((path, e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ConfigErrorKind, parse};

    fn data(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
    }

    fn fixture_keys() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../testkit/keys")
    }

    /// Parses a config whose key entry is `key`, with key files relative to `dir`.
    fn config_with(key: &str, dir: &Path) -> Result<crate::GatewayConfig, crate::ConfigError> {
        let text = format!("[[keys]]\n{key}\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n");
        parse(&text, &dir.join("gw.toml"), &|_| None)
    }

    fn refusal(key: &str, dir: &Path) -> String {
        let line = config_with(key, dir).expect_err("refused").to_string();
        assert!(!line.contains('\n'), "{line}");
        line
    }

    #[test]
    fn reads_every_signing_key_of_a_jwks_and_skips_encryption_keys() {
        let config = config_with("jwks = \"idp-jwks.json\"", &fixture_keys()).expect("valid");
        let kids: Vec<(&str, PublicAlg)> =
            config.public_keys().map(|k| (k.kid.as_str(), k.key.alg())).collect();
        assert_eq!(
            kids,
            [("rsa-a2", PublicAlg::Rs256), ("ec-a3", PublicAlg::Es256), ("ed-8037", PublicAlg::EdDsa)]
        );
        assert!(config.hs256_keys().next().is_none());
        let PublicKey::Rsa { modulus, exponent } = &config.issuers[0].public_keys[0].key else {
            panic!("RSA")
        };
        assert_eq!((modulus.len(), *exponent), (256, 65537));
    }

    #[test]
    fn reads_a_pem_public_key() {
        let config =
            config_with("kid = \"r\"\npem = \"rs256-3072.pub.pem\"\nalg = \"RS256\"", &fixture_keys())
                .expect("valid");
        let PublicKey::Rsa { modulus, .. } = &config.issuers[0].public_keys[0].key else { panic!("RSA") };
        assert_eq!(modulus.len(), 384);
        let line = refusal("kid = \"r\"\npem = \"rs256-3072.pub.pem\"\nalg = \"ES256\"", &fixture_keys());
        assert!(line.contains("(kid \"r\") has alg \"ES256\", but the key is for RS256"), "{line}");
    }

    #[test]
    fn refuses_short_rsa_keys_naming_file_and_key() {
        let line = refusal("jwks = \"rsa-1024-jwks.json\"", &data(""));
        assert!(line.contains("rsa-1024-jwks.json: key 0 (kid \"short\") is a 1024-bit RSA key"), "{line}");
        let line = refusal("kid = \"short\"\npem = \"rsa-1024.pub.pem\"", &data(""));
        assert!(
            line.contains("keys[0] ") && line.contains("is a 1024-bit RSA key; RS256 needs at least 2048"),
            "{line}"
        );
    }

    #[test]
    fn refuses_curves_other_than_p256() {
        // A JWKS skips a P-384 key (and the build warns); one with no other key has none to verify with.
        let line = refusal("jwks = \"p384-jwks.json\"", &data(""));
        assert!(
            line.ends_with("p384-jwks.json: holds no signing key this gateway verifies (1 skipped; key 0: curve \"P-384\" is not verified by this gateway)"),
            "{line}"
        );
        let line = refusal("kid = \"p\"\npem = \"p384.pub.pem\"", &data(""));
        assert!(line.contains("is on curve 1.3.132.0.34"), "{line}");
    }

    #[test]
    fn pem_files_are_judged_in_the_users_terms() {
        let key = std::fs::read_to_string(fixture_keys().join("rs256-3072.pub.pem")).expect("fixture key");
        let dir = std::env::temp_dir().join(format!("gw-pem-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let verdict = |name: &str, text: &str| {
            std::fs::write(dir.join(name), text).expect("write");
            config_with(&format!("kid = \"k\"\npem = \"{name}\""), &dir)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        // Refused, each with a line saying what is wrong with the file.
        for (name, text, expected) in [
            ("empty.pem", String::new(), "(kid \"k\") is empty: it holds no key"),
            ("blank.pem", "\n  \r\n".to_owned(), "(kid \"k\") is empty: it holds no key"),
            (
                "trailing.pem",
                format!("{key}trailing text\n"),
                "(kid \"k\") has text after the key's -----END line",
            ),
            ("two.pem", format!("{key}{key}"), "(kid \"k\") holds 2 PEM blocks: one key per file"),
            (
                "no-begin.pem",
                "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAxLIJ\n".to_owned(),
                "(kid \"k\") is not a PEM file: it has no -----BEGIN line",
            ),
            ("cut.pem", key[..200].to_owned(), "(kid \"k\") has no -----END line: the key is cut short"),
        ] {
            let line = verdict(name, &text).expect_err(name);
            assert!(line.contains(&format!("{name}: {expected}")), "{name}: {line}");
            assert!(
                !line.contains('\n') && !line.contains("NUL") && !line.contains("encapsulation"),
                "{name}: {line}"
            );
        }
        // Accepted: blank lines after the key, CRLF line ends, explanatory
        // text before it (RFC 7468 section 5.2).
        for (name, text) in [
            ("blank-lines-after.pem", format!("{key}\n\n")),
            ("crlf.pem", key.replace('\n', "\r\n")),
            ("explained.pem", format!("Partner signing key, 2026\n{key}")),
        ] {
            assert_eq!(verdict(name, &text), Ok(()), "{name}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn refuses_pkcs1_pem() {
        let line = refusal("kid = \"r\"\npem = \"rsa-1024.pkcs1.pem\"", &data(""));
        assert!(line.contains("is a PEM \"RSA PUBLIC KEY\""), "{line}");
    }

    #[test]
    fn refuses_inconsistent_or_incomplete_jwks_entries() {
        let n = "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ";
        let cases = [
            (format!(r#"{{"kty":"RSA","kid":"k","alg":"ES256","n":"{n}","e":"AQAB"}}"#), "but the key is for RS256"),
            (format!(r#"{{"kty":"RSA","n":"{n}","e":"AQAB"}}"#), "key 0 has no kid"),
            (format!(r#"{{"kty":"RSA","kid":"k","use":"sig","key_ops":["encrypt"],"n":"{n}","e":"AQAB"}}"#), "has use \"sig\" and key_ops that disagree"),
            (format!(r#"{{"kty":"RSA","kid":"k","n":"{n}","e":"AQAB","d":"AQAB"}}"#), "the document leaked a private key"),
            (format!(r#"{{"kty":"RSA","kid":"k","n":"{n}","e":"AwA"}}"#), "it must be odd"),
            (format!(r#"{{"kty":"RSA","kid":"k","n":"{n}","e":"AQ"}}"#), "it must be odd and at least 3"),
            (r#"{"kty":"oct","kid":"k","k":"c2VjcmV0"}"#.to_owned(), "the document leaked a private key"),
            (r#"{"kty":"EC","kid":"k","crv":"P-256","x":"AA","y":"AA"}"#.to_owned(), "not 32 bytes"),
            (r#"{"kty":"EC","kid":"k","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"}"#.to_owned(), "is not a point on P-256"),
            // The identity point: of small order, it verifies forgeries.
            (r#"{"kty":"OKP","kid":"k","crv":"Ed25519","x":"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}"#.to_owned(), "of small order"),
            (r#"{"kid":"k"}"#.to_owned(), "has no kty"),
        ];
        for (jwk, expected) in cases {
            let why = read_jwks(&format!(r#"{{"keys":[{jwk}]}}"#)).expect_err(&jwk);
            assert!(why.contains(expected), "{jwk}: {why}");
        }
        assert!(read_jwks(r#"{"keys":[]}"#).expect_err("empty").contains("holds no signing key"));
        assert_eq!(
            read_jwks("not json").expect_err("text"),
            "is not a JWKS document: not strict JSON at byte 0"
        );
    }

    #[test]
    fn keys_the_gateway_does_not_verify_are_skipped_with_a_warning_naming_each() {
        let n = "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ";
        let document = format!(
            r#"{{"keys":[{{"kty":"RSA","kid":"a","n":"{n}","e":"AQAB"}},{{"kty":"RSA","kid":"ps","alg":"PS256","n":"{n}","e":"AQAB"}},{{"kty":"OKP","kid":"x","crv":"X25519","x":"AA"}},{{"kty":"RSA","kid":"enc","key_ops":["encrypt"],"n":"{n}","e":"AQAB"}}]}}"#
        );
        let read = read_jwks(&document).expect("one key to verify with");
        assert_eq!(read.keys.iter().map(|(kid, _)| kid.as_str()).collect::<Vec<_>>(), ["a"]);
        assert_eq!(
            read.skipped,
            [
                r#"key 1 (kid "ps"): alg "PS256" is not verified by this gateway"#,
                r#"key 2 (kid "x"): curve "X25519" is not verified by this gateway"#,
                r#"key 3 (kid "enc"): key_ops does not include "verify""#,
            ]
        );
        // The build's warning names the entry and the file.
        let config = config_with("jwks = \"idp-jwks.json\"", &fixture_keys()).expect("valid");
        assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
        assert!(
            config.warnings[0].starts_with("keys[0]: ")
                && config.warnings[0]
                    .ends_with(r#"idp-jwks.json: skipped key 3 (kid "enc-skipped"): use "enc" is not "sig""#),
            "{}",
            config.warnings[0]
        );
    }

    #[test]
    fn refuses_every_private_member_in_any_key_skipped_or_not() {
        let n = "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ";
        let rsa =
            |extra: &str| format!(r#"{{"kty":"RSA","kid":"k","use":"sig","n":"{n}","e":"AQAB"{extra}}}"#);
        let ec = r#"{"kty":"EC","kid":"e","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0""#;
        let cases = [
            // The CRT parameters rebuild the private key without "d".
            (rsa(r#","p":"AQAB","q":"AQAB","dp":"AQAB","dq":"AQAB","qi":"AQAB""#), r#"("p", "q", "dp", "dq", "qi")"#),
            (rsa(r#","d":"AQAB""#), r#"("d")"#),
            (rsa(r#","p":"AQAB""#), r#"("p")"#),
            (rsa(r#","oth":[{"r":"AQAB","d":"AQAB","t":"AQAB"}]"#), r#"("oth")"#),
            (rsa(r#","d":null"#), r#"("d")"#),
            (rsa(r#","k":"c2VjcmV0""#), r#"("k")"#),
            (format!(r#"{ec},"d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}}"#), r#"("d")"#),
            (r#"{"kty":"OKP","kid":"o","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}"#.to_owned(), r#"("d")"#),
            (r#"{"kty":"oct","kid":"s","k":"c2VjcmV0"}"#.to_owned(), r#"("k")"#),
        ];
        for (jwk, members) in &cases {
            // The key alone, after a good key, and as an encryption key (skipped, still refused).
            let good = rsa("");
            let encryption =
                jwk.replacen("\"kid\"", "\"use\":\"enc\",\"kid\"", 1).replace(r#""use":"sig","#, "");
            for (document, index) in [
                (format!(r#"{{"keys":[{jwk}]}}"#), 0),
                (format!(r#"{{"keys":[{good},{jwk}]}}"#), 1),
                (format!(r#"{{"keys":[{good},{encryption}]}}"#), 1),
            ] {
                let why = read_jwks(&document).expect_err(&document);
                assert!(why.starts_with(&format!("key {index} (kid ")), "{document}: {why}");
                assert!(
                    why.contains(&format!(
                        "holds private key material {members}: the document leaked a private key"
                    )),
                    "{document}: {why}"
                );
            }
        }
    }

    #[test]
    fn kids_are_unique_across_secrets_and_public_keys() {
        let text = "[[keys]]\nkid = \"ec-a3\"\ndemo = \"0123456789abcdef0123456789abcdef\"\n[[keys]]\njwks = \"idp-jwks.json\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n";
        let err = parse(text, &fixture_keys().join("gw.toml"), &|_| None).expect_err("duplicate");
        assert!(matches!(err.kind, ConfigErrorKind::DuplicateKid { ref kid, .. } if kid == "ec-a3"), "{err}");
    }

    #[test]
    fn a_key_entry_has_one_source() {
        for key in [
            "jwks = \"idp-jwks.json\"\nkid = \"x\"",
            "kid = \"x\"\npem = \"a.pem\"\ndemo = \"y\"",
            "jwks = \"idp-jwks.json\"\nalg = \"RS256\"",
        ] {
            let err = config_with(key, &fixture_keys()).expect_err(key);
            assert!(matches!(err.kind, ConfigErrorKind::KeySource { .. }), "{key}: {err}");
        }
    }

    #[test]
    fn refuses_algorithms_the_worker_is_built_without() {
        let path = fixture_keys().join("gw.toml");
        let config = config_with("jwks = \"idp-jwks.json\"", &fixture_keys()).expect("valid");
        assert!(
            config.check_algorithms(&path, &[PublicAlg::Rs256, PublicAlg::Es256, PublicAlg::EdDsa]).is_ok()
        );
        let line =
            config.check_algorithms(&path, &[PublicAlg::Rs256]).expect_err("es256 left out").to_string();
        assert!(
            line.ends_with(
                "key \"ec-a3\" is ES256, which this worker is built without: build with WORKER_FEATURES=es256"
            ),
            "{line}"
        );
    }

    #[test]
    fn renders_public_keys_as_constants() {
        let config = config_with("jwks = \"idp-jwks.json\"", &fixture_keys()).expect("valid");
        let rust = config.to_rust();
        assert!(rust.contains("VerifyingKey::Rs256(crate::keys::RsaKey { kid: \"rsa-a2\", len: 256, exponent: 65537, modulus: crate::keys::Modulus::Bits2048(&crate::keys::params_2048(\"a1f8160a"), "{rust}");
        assert!(
            rust.contains("VerifyingKey::Es256(crate::keys::EcKey { kid: \"ec-a3\", sec1: &[4, 127, 205,"),
            "{rust}"
        );
        assert!(
            rust.contains("VerifyingKey::EdDsa(crate::keys::EdKey { kid: \"ed-8037\", public: &[215, 90,"),
            "{rust}"
        );
    }
}
