//! `check-config` as `make worker` runs it: a JWKS document that carries
//! private key material is refused in one line, whichever key carries it
//! (an encryption key the build skips included), and the same document
//! without it passes, with a warning naming each key it skips.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The RFC 7515 appendix A.2 key of `testkit/keys/idp-jwks.json`, as a JWK
/// with `extra` members spliced in.
fn rsa_jwk(kid: &str, key_use: &str, extra: &str) -> String {
    let jwks: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../testkit/keys/idp-jwks.json"))
            .expect("the fixture JWKS"),
    )
    .expect("JSON");
    let n = jwks["keys"][0]["n"].as_str().expect("n");
    format!(r#"{{"kty":"RSA","kid":"{kid}","use":"{key_use}","n":"{n}","e":"AQAB"{extra}}}"#)
}

/// Runs `check-config` on a config whose one key entry is `jwks`, saved as a
/// file beside it in a folder of its own.
fn check(name: &str, jwks: &str) -> (bool, String, String) {
    let dir: PathBuf = std::env::temp_dir().join(format!("gw-check-config-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("idp.json"), jwks).expect("write");
    let toml = "[[keys]]\njwks = \"idp.json\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n";
    std::fs::write(dir.join("gw.toml"), toml).expect("write");
    let out =
        Command::new(env!("CARGO_BIN_EXE_check-config")).arg(dir.join("gw.toml")).output().expect("run");
    std::fs::remove_dir_all(&dir).ok();
    let text = |b: Vec<u8>| String::from_utf8(b).expect("UTF-8");
    (out.status.success(), text(out.stdout), text(out.stderr))
}

#[test]
fn a_jwks_with_the_private_half_of_a_key_is_refused() {
    let crt = r#","p":"AQAB","q":"AQAB","dp":"AQAB","dq":"AQAB","qi":"AQAB""#;
    for (name, document) in [
        ("crt", format!(r#"{{"keys":[{}]}}"#, rsa_jwk("rsa-a2", "sig", crt))),
        (
            "encryption-key",
            format!(
                r#"{{"keys":[{},{}]}}"#,
                rsa_jwk("rsa-a2", "sig", ""),
                rsa_jwk("enc", "enc", r#","d":"AQAB""#)
            ),
        ),
    ] {
        let (ok, _, stderr) = check(name, &document);
        assert!(!ok, "{name}: accepted");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains("idp.json: key "), "{name}: {stderr}");
        assert!(stderr.contains("the document leaked a private key"), "{name}: {stderr}");
    }
    let (ok, stdout, stderr) = check("public", &format!(r#"{{"keys":[{}]}}"#, rsa_jwk("rsa-a2", "sig", "")));
    assert!(ok && stdout.contains("1 key(s)"), "{stdout}{stderr}");
    assert!(!stdout.contains("warning"), "{stdout}");
}

#[test]
fn a_key_the_gateway_does_not_verify_is_skipped_with_a_warning() {
    let document = format!(
        r#"{{"keys":[{},{}]}}"#,
        rsa_jwk("rsa-a2", "sig", ""),
        rsa_jwk("ps", "sig", r#","alg":"PS256""#)
    );
    let (ok, stdout, stderr) = check("skipped", &document);
    assert!(ok && stdout.contains("1 key(s)"), "{stdout}{stderr}");
    let warning = stdout.lines().find(|line| line.starts_with("config: warning: ")).expect("a warning");
    assert!(
        warning.starts_with("config: warning: keys[0]: ")
            && warning.ends_with(
                r#"idp.json: skipped key 1 (kid "ps"): alg "PS256" is not verified by this gateway"#
            ),
        "{warning}"
    );
}
