//! Minting HS256 tokens and building request heads, for tests, benchmarks,
//! the fuzzers, the demo and host-sim's `token` command.
//!
//! The signing uses the same crates as the worker (hmac 0.13, sha2 0.11,
//! base64 0.23), so a token minted here with the configured key is one the
//! module accepts, and any byte changed is one it refuses.
//!
//! ```
//! use testkit::tokens::{Claims, mint, request_head};
//! let key = b"DEMO-ONLY-gateway-signing-key-not-a-secret";
//! let claims = Claims::new("orders", 1_900_000_000).issuer("https://auth.example.com").subject("alice");
//! let token = mint(&Claims::header("demo"), &claims.to_json(), key);
//! let head = request_head("GET", "/v1/orders?page=2", Some(&token));
//! assert!(head.ends_with("\r\n\r\n"));
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};

/// Base64url without padding, as JWS uses.
pub fn b64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The HS256 signature (base64url) of `signing_input` with `key`.
pub fn sign(key: &[u8], signing_input: impl AsRef<[u8]>) -> String {
    let mut mac = match Hmac::<sha2::Sha256>::new_from_slice(key) {
        Ok(mac) => mac,
        // HMAC accepts keys of any length; this arm is never taken.
        Err(_) => return String::new(),
    };
    mac.update(signing_input.as_ref());
    b64url(&mac.finalize().into_bytes())
}

/// A compact JWS: `b64(header).b64(claims).b64(HMAC-SHA256(key, ...))`.
/// `header_json` and `claims_json` are used byte for byte (any bytes, not
/// only JSON or UTF-8), so tests and fuzzers can mint malformed or unusual
/// tokens too.
pub fn mint(header_json: impl AsRef<[u8]>, claims_json: impl AsRef<[u8]>, key: &[u8]) -> String {
    let input = format!("{}.{}", b64url(header_json.as_ref()), b64url(claims_json.as_ref()));
    let signature = sign(key, &input);
    format!("{input}.{signature}")
}

/// A token's claims, rendered as compact JSON with the keys in alphabetical order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// `aud` (one audience).
    pub aud: String,
    /// `exp`, Unix seconds.
    pub exp: u64,
    /// `iss`, when set.
    pub iss: Option<String>,
    /// `sub`, when set.
    pub sub: Option<String>,
    /// `nbf`, when set.
    pub nbf: Option<u64>,
    /// `iat`, when set.
    pub iat: Option<u64>,
    /// Any other claims (scopes, roles, tenant), in order.
    pub extra: Vec<(String, serde_json::Value)>,
}

impl Claims {
    /// Claims for audience `aud` expiring at `exp`.
    pub fn new(aud: &str, exp: u64) -> Claims {
        Claims { aud: aud.into(), exp, iss: None, sub: None, nbf: None, iat: None, extra: Vec::new() }
    }

    /// With `iss`.
    pub fn issuer(mut self, iss: &str) -> Claims {
        self.iss = Some(iss.into());
        self
    }

    /// With `sub`.
    pub fn subject(mut self, sub: &str) -> Claims {
        self.sub = Some(sub.into());
        self
    }

    /// With `nbf`.
    pub fn not_before(mut self, nbf: u64) -> Claims {
        self.nbf = Some(nbf);
        self
    }

    /// With `iat`.
    pub fn issued_at(mut self, iat: u64) -> Claims {
        self.iat = Some(iat);
        self
    }

    /// With another claim.
    pub fn claim(mut self, name: &str, value: serde_json::Value) -> Claims {
        self.extra.push((name.into(), value));
        self
    }

    /// The claims as JSON.
    pub fn to_json(&self) -> String {
        let mut map = serde_json::Map::new();
        if let Some(iss) = &self.iss {
            map.insert("iss".into(), iss.as_str().into());
        }
        if let Some(sub) = &self.sub {
            map.insert("sub".into(), sub.as_str().into());
        }
        map.insert("aud".into(), self.aud.as_str().into());
        map.insert("exp".into(), self.exp.into());
        if let Some(nbf) = self.nbf {
            map.insert("nbf".into(), nbf.into());
        }
        if let Some(iat) = self.iat {
            map.insert("iat".into(), iat.into());
        }
        for (name, value) in &self.extra {
            map.insert(name.clone(), value.clone());
        }
        serde_json::Value::Object(map).to_string()
    }

    /// The usual JOSE header for key `kid`: `{"alg":"HS256","typ":"JWT","kid":...}`.
    pub fn header(kid: &str) -> String {
        serde_json::json!({ "alg": "HS256", "typ": "JWT", "kid": kid }).to_string()
    }
}

/// A request head (CRLF line ends, blank line at the end) with `Host: gateway`
/// and, when `token` is given, `Authorization: Bearer <token>`.
pub fn request_head(method: &str, path_and_query: &str, token: Option<&str>) -> String {
    let mut head = format!(
        "{method} {path_and_query} HTTP/1.1\r\nHost: gateway\r\nUser-Agent: host-sim\r\nAccept: */*\r\n"
    );
    if let Some(token) = token {
        head.push_str("Authorization: Bearer ");
        head.push_str(token);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}

/// The signing key a gateway config names first, with its kid.
pub fn first_key(config: &gateway_config::GatewayConfig) -> Option<(&str, &[u8])> {
    config.issuers.first()?.keys.first().map(|k| (k.kid.as_str(), k.secret()))
}

/// Mints a valid token for `aud` with the config's first key and issuer,
/// expiring `exp_in` seconds after `now`.
pub fn mint_for(
    config: &gateway_config::GatewayConfig,
    aud: &str,
    sub: Option<&str>,
    now: u64,
    exp_in: u64,
) -> Option<String> {
    let (kid, key) = first_key(config)?;
    let mut claims = Claims::new(aud, now.saturating_add(exp_in)).issued_at(now);
    if let Some(iss) = config.first_iss() {
        claims = claims.issuer(iss);
    }
    if let Some(sub) = sub {
        claims = claims.subject(sub);
    }
    Some(mint(Claims::header(kid), claims.to_json(), key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7515_a1_signature() {
        // RFC 7515 appendix A.1's signing input and key give its signature.
        let key = URL_SAFE_NO_PAD
            .decode("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")
            .expect("key");
        let input = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ";
        assert_eq!(sign(&key, input), "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
    }

    #[test]
    fn claims_render_in_order() {
        let c = Claims::new("orders", 5).issuer("i").subject("s");
        assert_eq!(c.to_json(), r#"{"aud":"orders","exp":5,"iss":"i","sub":"s"}"#);
    }
}
