//! Reads `gateway.toml`, validates it, and renders it as the Rust tables the
//! worker compiles in.
//!
//! The worker has no file system and no clock of its own, so its configuration
//! is fixed at build time: `worker/build.rs` calls [`load`] and writes
//! [`GatewayConfig::to_rust`] into the crate. Validation happens here, once, so
//! that the request path never meets a config it cannot trust: the audience
//! table is sorted, duplicates are refused, and every key is at least 32 bytes
//! (RFC 7518 section 3.2). Key material never lives in the repository: it comes
//! from an environment variable or a file, except one inline `demo` key that is
//! reported as such wherever it is compiled in.
//!
//! Errors name the file and the entry that is wrong, in one line.
//!

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub mod hmac_key;
pub mod public_keys;

pub use public_keys::{PublicAlg, PublicKey};

/// The shortest key HS256 accepts: the hash output size (RFC 7518 section 3.2).
pub const MIN_KEY_BYTES: usize = 32;

/// The longest leeway the gateway accepts; more would make `exp` meaningless.
pub const MAX_LEEWAY_SECS: u64 = 3600;

/// The most proxy hops in front of the gateway that a config may trust.
pub const MAX_TRUSTED_PROXY_HOPS: u32 = 16;

/// The token buffer's size when the config does not set `max_token_bytes`:
/// the design's 256 bytes, which holds service-to-service HS256 tokens.
pub const DEFAULT_MAX_TOKEN_BYTES: usize = 256;

/// The bounds of `max_token_bytes`. Below 256 the buffer would refuse the
/// service tokens the gateway was designed for and save nothing (memory
/// comes in 64 KiB pages). Above 8 KiB the token would crowd the 16 KiB
/// request head the module accepts, and pass the 8 KiB per-field limit that
/// proxies in front of a gateway commonly apply (NGINX's default
/// `large_client_header_buffers`); identity providers' tokens are 0.6 to
/// 1.5 KB.
pub const TOKEN_BYTES_RANGE: std::ops::RangeInclusive<usize> = 256..=8192;

/// The most characters a realm, issuer, kid, audience or upstream may have:
/// the worker writes them into fixed buffers.
pub const MAX_TEXT_LEN: usize = 200;

/// A validated gateway configuration, ready to compile into the worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// The realm named in `WWW-Authenticate` challenges.
    pub realm: String,
    /// When set, a token's `iss` must equal it exactly.
    pub issuer: Option<String>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
    /// Proxy hops in front of the gateway whose `X-Forwarded-For` is kept
    /// (the peer is appended); 0, the default, replaces it.
    pub trusted_proxy_hops: u32,
    /// The longest bearer token accepted, in bytes (in [`TOKEN_BYTES_RANGE`]).
    pub max_token_bytes: usize,
    /// HS256 secrets by key id, in config order.
    pub keys: Vec<KeyConfig>,
    /// RS256, ES256 and EdDSA public keys by key id, in config order (a
    /// JWKS entry adds each of its signing keys). Their kids and the
    /// secrets' are distinct.
    pub public_keys: Vec<PublicKeyConfig>,
    /// Routes sorted by audience (byte order), no duplicates.
    pub routes: Vec<RouteConfig>,
}

/// One HS256 key. `Debug` never prints the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyConfig {
    /// The `kid` a token names to select this key.
    pub kid: String,
    secret: Vec<u8>,
    /// Where the material came from.
    pub source: KeySource,
}

/// One public key, validated (see [`public_keys`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKeyConfig {
    /// The `kid` a token names to select this key.
    pub kid: String,
    /// The key, in the form the worker computes with.
    pub key: PublicKey,
    /// The JWKS or PEM file it came from (the resolved path).
    pub file: PathBuf,
}

/// Where a key's material came from, so that the build can watch it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// An environment variable, read at build time.
    Env(String),
    /// A file (the resolved path).
    File(PathBuf),
    /// The inline demo key: never for production.
    Demo,
}

impl KeyConfig {
    /// The key material. Handle with care: it signs tokens.
    pub fn secret(&self) -> &[u8] {
        &self.secret
    }

    /// True for the inline demo key, which must never reach production.
    pub fn is_demo(&self) -> bool {
        self.source == KeySource::Demo
    }
}

impl fmt::Debug for KeyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyConfig")
            .field("kid", &self.kid)
            .field("secret", &format_args!("{{ ... }}"))
            .field("source", &self.source)
            .finish()
    }
}

/// One route: tokens for `aud` are forwarded to `upstream`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteConfig {
    /// The audience, compared byte for byte with the token's `aud`.
    pub aud: String,
    /// The upstream base URL (`http://` or `https://`, no trailing slash).
    pub upstream: String,
}

impl RouteConfig {
    /// The scheme and authority of the upstream, without its path.
    pub fn origin(&self) -> &str {
        self.upstream.split_at(self.path_start()).0
    }

    /// The path every request forwarded on this route stays under: empty,
    /// or `/segment...` without a trailing slash.
    pub fn base_path(&self) -> &str {
        self.upstream.split_at(self.path_start()).1
    }

    fn path_start(&self) -> usize {
        let after_scheme = self.upstream.find("://").map_or(0, |i| i + 3);
        self.upstream[after_scheme..].find('/').map_or(self.upstream.len(), |i| after_scheme + i)
    }
}

/// Why a configuration was refused. `Display` gives one line naming the file and the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The configuration file.
    pub file: PathBuf,
    /// What is wrong.
    pub kind: ConfigErrorKind,
}

/// What is wrong with a configuration. `entry` names the TOML entry, such as
/// `routes[2]`; the variant's doc says what its other fields hold.
#[allow(missing_docs)] // the fields are described by the variant docs above
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigErrorKind {
    /// The file could not be read.
    Unreadable(String),
    /// The file is not valid TOML or has unknown or mistyped entries.
    Syntax(String),
    /// A text entry is empty, too long, or holds a character it may not.
    BadText { entry: String, why: &'static str },
    /// The leeway is above [`MAX_LEEWAY_SECS`].
    LeewayTooLarge(u64),
    /// `trusted_proxy_hops` is above [`MAX_TRUSTED_PROXY_HOPS`].
    TooManyTrustedHops(u32),
    /// `max_token_bytes` is outside [`TOKEN_BYTES_RANGE`].
    TokenBytesOutOfRange(u64),
    /// No `[[keys]]` entry.
    NoKeys,
    /// No `[[routes]]` entry.
    NoRoutes,
    /// A key names no source, or more than one.
    KeySource { entry: String },
    /// The environment variable a key names is not set.
    KeyEnvMissing { entry: String, var: String },
    /// The file a key names could not be read.
    KeyFileUnreadable { entry: String, path: PathBuf, why: String },
    /// The key material is not valid in its declared encoding.
    KeyEncoding { entry: String, encoding: &'static str },
    /// The key is shorter than [`MIN_KEY_BYTES`].
    KeyTooShort { entry: String, bytes: usize },
    /// A JWKS or PEM key is not one the gateway can trust; `why` names the
    /// key inside the file and what is wrong.
    PublicKey { entry: String, path: PathBuf, why: String },
    /// A key needs an algorithm the worker was built without.
    AlgorithmNotBuilt { kid: String, alg: PublicAlg },
    /// Two keys share a kid.
    DuplicateKid { entry: String, kid: String },
    /// Two routes share an audience.
    DuplicateAudience { entry: String, aud: String },
    /// An upstream is not an absolute http(s) URL.
    BadUpstream { entry: String, upstream: String },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file.display())?;
        match &self.kind {
            ConfigErrorKind::Unreadable(why) => write!(f, "cannot read: {}", OneLine(why)),
            ConfigErrorKind::Syntax(why) => write!(f, "{}", why.lines().next().unwrap_or(why)),
            ConfigErrorKind::BadText { entry, why } => write!(f, "{entry} {why}"),
            ConfigErrorKind::LeewayTooLarge(n) => {
                write!(f, "leeway_secs = {n} is above the maximum of {MAX_LEEWAY_SECS}")
            }
            ConfigErrorKind::TooManyTrustedHops(n) => {
                write!(f, "trusted_proxy_hops = {n} is above the maximum of {MAX_TRUSTED_PROXY_HOPS}")
            }
            ConfigErrorKind::TokenBytesOutOfRange(n) => write!(
                f,
                "max_token_bytes = {n} is outside {}..={}",
                TOKEN_BYTES_RANGE.start(),
                TOKEN_BYTES_RANGE.end()
            ),
            ConfigErrorKind::NoKeys => write!(f, "no [[keys]] entry: at least one key is needed"),
            ConfigErrorKind::NoRoutes => {
                write!(f, "no [[routes]] entry: at least one route is needed")
            }
            ConfigErrorKind::KeySource { entry } => write!(
                f,
                "{entry} needs exactly one of env = \"VAR\", file = \"PATH\", demo = \"...\" (HS256 secrets), jwks = \"PATH\" or pem = \"PATH\" (public keys), and a kid except with jwks"
            ),
            ConfigErrorKind::KeyEnvMissing { entry, var } => {
                write!(f, "{entry}.env names {}, which is not set", OneLine(var))
            }
            ConfigErrorKind::KeyFileUnreadable { entry, path, why } => {
                write!(f, "{entry}.file {}: {}", OneLine(&path.display().to_string()), OneLine(why))
            }
            ConfigErrorKind::KeyEncoding { entry, encoding } => {
                write!(f, "{entry} is not valid {encoding}")
            }
            ConfigErrorKind::KeyTooShort { entry, bytes } => write!(
                f,
                "{entry} is {bytes} bytes; HS256 keys must be at least {MIN_KEY_BYTES} bytes (RFC 7518 section 3.2)"
            ),
            ConfigErrorKind::PublicKey { entry, path, why } => {
                write!(f, "{entry} {}: {}", OneLine(&path.display().to_string()), OneLine(why))
            }
            ConfigErrorKind::AlgorithmNotBuilt { kid, alg } => write!(
                f,
                "key {kid:?} is {}, which this worker is built without: build with WORKER_FEATURES={}",
                alg.name(),
                alg.feature()
            ),
            ConfigErrorKind::DuplicateKid { entry, kid } => {
                write!(f, "{entry}.kid {kid:?} is already used by another key")
            }
            ConfigErrorKind::DuplicateAudience { entry, aud } => {
                write!(f, "{entry}.aud {aud:?} is already routed by another entry")
            }
            ConfigErrorKind::BadUpstream { entry, upstream } => write!(
                f,
                "{entry}.upstream {upstream:?} must be an http:// or https:// URL: host, optional port, optional path without dot segments, empty segments or escapes"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Shows text from the config or the system with control characters
/// escaped, so that an error stays one line whatever the input.
struct OneLine<'a>(&'a str);

impl fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// How key material is spelled in its source.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum KeyEncoding {
    /// The bytes of the text as written (trailing newline of a file removed).
    #[default]
    Utf8,
    /// Base64url, padding optional.
    Base64url,
    /// Hexadecimal.
    Hex,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default = "default_realm")]
    realm: String,
    issuer: Option<String>,
    #[serde(default = "default_leeway")]
    leeway_secs: u64,
    #[serde(default)]
    trusted_proxy_hops: u32,
    #[serde(default = "default_max_token_bytes")]
    max_token_bytes: u64,
    #[serde(default)]
    keys: Vec<RawKey>,
    #[serde(default)]
    routes: Vec<RawRoute>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    kid: Option<String>,
    env: Option<String>,
    file: Option<PathBuf>,
    demo: Option<String>,
    /// A JWKS document: every signing key in it, each with its own kid.
    jwks: Option<PathBuf>,
    /// A PEM public key (SPKI), selected by `kid`.
    pem: Option<PathBuf>,
    /// For a PEM key: its algorithm, which must be the key type's one.
    alg: Option<String>,
    #[serde(default)]
    encoding: KeyEncoding,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    aud: String,
    upstream: String,
}

fn default_realm() -> String {
    "gateway".to_owned()
}

fn default_leeway() -> u64 {
    30
}

fn default_max_token_bytes() -> u64 {
    DEFAULT_MAX_TOKEN_BYTES as u64
}

/// Reads and validates the configuration at `path`, taking key material from
/// the process environment and from files relative to the config's folder.
pub fn load(path: &Path) -> Result<GatewayConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_owned(),
        kind: ConfigErrorKind::Unreadable(e.to_string()),
    })?;
    parse(&text, path, &|var| std::env::var(var).ok())
}

/// Validates configuration `text` read from `origin`; `env` looks up
/// environment variables. Separate from [`load`] so that tests and fuzzers can
/// drive it without touching the process environment.
pub fn parse(
    text: &str,
    origin: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<GatewayConfig, ConfigError> {
    let fail = |kind| ConfigError { file: origin.to_owned(), kind };
    let raw: RawConfig =
        toml::from_str(text).map_err(|e| fail(ConfigErrorKind::Syntax(e.message().to_owned())))?;

    check_text("realm", &raw.realm, TextRule::QuotedString).map_err(fail)?;
    if let Some(issuer) = &raw.issuer {
        check_text("issuer", issuer, TextRule::JsonPlain).map_err(fail)?;
    }
    if raw.leeway_secs > MAX_LEEWAY_SECS {
        return Err(fail(ConfigErrorKind::LeewayTooLarge(raw.leeway_secs)));
    }
    if raw.trusted_proxy_hops > MAX_TRUSTED_PROXY_HOPS {
        return Err(fail(ConfigErrorKind::TooManyTrustedHops(raw.trusted_proxy_hops)));
    }
    let max_token_bytes = usize::try_from(raw.max_token_bytes)
        .ok()
        .filter(|n| TOKEN_BYTES_RANGE.contains(n))
        .ok_or_else(|| fail(ConfigErrorKind::TokenBytesOutOfRange(raw.max_token_bytes)))?;
    if raw.keys.is_empty() {
        return Err(fail(ConfigErrorKind::NoKeys));
    }
    if raw.routes.is_empty() {
        return Err(fail(ConfigErrorKind::NoRoutes));
    }

    let base = origin.parent().unwrap_or(Path::new("."));
    let mut kids = BTreeSet::new();
    let mut keys = Vec::with_capacity(raw.keys.len());
    let mut public_keys = Vec::new();
    for (i, key) in raw.keys.into_iter().enumerate() {
        let entry = format!("keys[{i}]");
        let mut new_kid = |kid: &str| -> Result<(), ConfigErrorKind> {
            check_text(&format!("{entry}.kid"), kid, TextRule::JsonPlain)?;
            match kids.insert(kid.to_owned()) {
                true => Ok(()),
                false => Err(ConfigErrorKind::DuplicateKid { entry: entry.clone(), kid: kid.to_owned() }),
            }
        };
        if key.jwks.is_some() || key.pem.is_some() {
            for public in read_public_keys(&entry, key, base).map_err(fail)? {
                new_kid(&public.kid).map_err(fail)?;
                public_keys.push(public);
            }
            continue;
        }
        let kid = key.kid.clone().ok_or_else(|| fail(ConfigErrorKind::KeySource { entry: entry.clone() }))?;
        new_kid(&kid).map_err(fail)?;
        keys.push(read_key(&entry, kid, key, base, env).map_err(fail)?);
    }

    let mut routes = Vec::with_capacity(raw.routes.len());
    for (i, route) in raw.routes.into_iter().enumerate() {
        let entry = format!("routes[{i}]");
        check_text(&format!("{entry}.aud"), &route.aud, TextRule::JsonPlain).map_err(fail)?;
        let upstream = route.upstream.trim_end_matches('/').to_owned();
        if !is_upstream_url(&upstream) {
            return Err(fail(ConfigErrorKind::BadUpstream { entry, upstream: route.upstream }));
        }
        if routes.iter().any(|(_, r): &(String, RouteConfig)| r.aud == route.aud) {
            return Err(fail(ConfigErrorKind::DuplicateAudience { entry, aud: route.aud }));
        }
        routes.push((entry, RouteConfig { aud: route.aud, upstream }));
    }
    let mut routes: Vec<RouteConfig> = routes.into_iter().map(|(_, r)| r).collect();
    routes.sort_by(|a, b| a.aud.as_bytes().cmp(b.aud.as_bytes()));

    Ok(GatewayConfig {
        realm: raw.realm,
        issuer: raw.issuer,
        leeway_secs: raw.leeway_secs,
        trusted_proxy_hops: raw.trusted_proxy_hops,
        max_token_bytes,
        keys,
        public_keys,
        routes,
    })
}

/// Reads a `jwks` or `pem` entry: its keys, validated.
fn read_public_keys(entry: &str, key: RawKey, base: &Path) -> Result<Vec<PublicKeyConfig>, ConfigErrorKind> {
    let only_source =
        key.env.is_none() && key.file.is_none() && key.demo.is_none() && key.encoding == KeyEncoding::Utf8;
    let (file, kid) = match (key.jwks, key.pem, key.kid) {
        (Some(file), None, None) if only_source && key.alg.is_none() => (file, None),
        (None, Some(file), Some(kid)) if only_source => (file, Some(kid)),
        _ => return Err(ConfigErrorKind::KeySource { entry: entry.to_owned() }),
    };
    let (path, text) = public_keys::read_file(base, &file)
        .map_err(|(path, why)| ConfigErrorKind::KeyFileUnreadable { entry: entry.to_owned(), path, why })?;
    let refuse =
        |why: String| ConfigErrorKind::PublicKey { entry: entry.to_owned(), path: path.clone(), why };
    match kid {
        None => Ok(public_keys::read_jwks(&text)
            .map_err(refuse)?
            .into_iter()
            .map(|(kid, key)| PublicKeyConfig { kid, key, file: path.clone() })
            .collect()),
        Some(kid) => {
            let public =
                public_keys::read_pem(&text).map_err(|why| refuse(format!("(kid {kid:?}) {why}")))?;
            public_keys::check_alg(&public, key.alg.as_deref())
                .map_err(|why| refuse(format!("(kid {kid:?}) {why}")))?;
            Ok(vec![PublicKeyConfig { kid, key: public, file: path.clone() }])
        }
    }
}

/// Which characters a text entry may hold.
#[derive(Clone, Copy)]
enum TextRule {
    /// Appears inside a quoted-string of a `WWW-Authenticate` header.
    QuotedString,
    /// Compared with an unescaped JSON string from a token, and echoed in headers.
    JsonPlain,
}

fn check_text(entry: &str, text: &str, rule: TextRule) -> Result<(), ConfigErrorKind> {
    let bad = |why| Err(ConfigErrorKind::BadText { entry: entry.to_owned(), why });
    if text.is_empty() {
        return bad("is empty");
    }
    if text.len() > MAX_TEXT_LEN {
        return bad("is longer than 200 bytes");
    }
    let allowed = |b: u8| match rule {
        TextRule::QuotedString => (0x20..=0x7e).contains(&b) && b != b'"' && b != b'\\',
        TextRule::JsonPlain => (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\',
    };
    if !text.bytes().all(allowed) {
        return bad(match rule {
            TextRule::QuotedString => "may hold only printable ASCII without '\"' or '\\'",
            TextRule::JsonPlain => "may hold only visible ASCII without '\"' or '\\'",
        });
    }
    Ok(())
}

/// `http://` or `https://`, a host (a DNS name, an IPv4 address, or an IPv6
/// address in brackets), an optional port, and an optional base path. No
/// user info, query or fragment: the request's normalized path and query are
/// appended to it. The base path is what confines forwarded requests, so it
/// must already be canonical: unreserved characters, sub-delimiters, `:` and
/// `@` only (no `%` escapes), no empty segments, no `.` or `..` segments,
/// with or without `;` parameters.
pub fn is_upstream_url(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")) else {
        return false;
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    // The port follows the last ':' outside an IPv6 address's brackets.
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => (&authority[..i], Some(&authority[i + 1..])),
        _ => (authority, None),
    };
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        !v6.is_empty() && v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
    } else {
        !host.is_empty()
            && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
            && !host.starts_with(['.', '-'])
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.parse::<u16>().is_ok_and(|n| n > 0));
    let path_ok = path.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b))
        && path.split('/').skip(1).all(|segment| {
            let name = segment.split(';').next().unwrap_or(segment);
            !name.is_empty() && name != "." && name != ".."
        });
    url.len() <= MAX_TEXT_LEN && host_ok && port_ok && path_ok
}

fn read_key(
    entry: &str,
    kid: String,
    key: RawKey,
    base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<KeyConfig, ConfigErrorKind> {
    let (text, source) = match (key.env, key.file, key.demo) {
        (Some(var), None, None) => match env(&var) {
            Some(value) => (value, KeySource::Env(var)),
            None => {
                return Err(ConfigErrorKind::KeyEnvMissing { entry: entry.to_owned(), var });
            }
        },
        (None, Some(file), None) => {
            let path = base.join(&file);
            let text = std::fs::read_to_string(&path).map_err(|e| ConfigErrorKind::KeyFileUnreadable {
                entry: entry.to_owned(),
                path: path.clone(),
                why: e.to_string(),
            })?;
            (text.trim_end_matches(['\r', '\n']).to_owned(), KeySource::File(path))
        }
        (None, None, Some(demo)) => (demo, KeySource::Demo),
        _ => return Err(ConfigErrorKind::KeySource { entry: entry.to_owned() }),
    };
    let secret = decode_key(&text, key.encoding).ok_or(ConfigErrorKind::KeyEncoding {
        entry: entry.to_owned(),
        encoding: match key.encoding {
            KeyEncoding::Utf8 => "utf8",
            KeyEncoding::Base64url => "base64url",
            KeyEncoding::Hex => "hex",
        },
    })?;
    if secret.len() < MIN_KEY_BYTES {
        return Err(ConfigErrorKind::KeyTooShort { entry: entry.to_owned(), bytes: secret.len() });
    }
    Ok(KeyConfig { kid, secret, source })
}

fn decode_key(text: &str, encoding: KeyEncoding) -> Option<Vec<u8>> {
    match encoding {
        KeyEncoding::Utf8 => Some(text.as_bytes().to_vec()),
        KeyEncoding::Hex => {
            let digits = text.as_bytes();
            if !digits.len().is_multiple_of(2) {
                return None;
            }
            digits
                .chunks(2)
                .map(|pair| {
                    let hi = (pair[0] as char).to_digit(16)?;
                    let lo = (pair[1] as char).to_digit(16)?;
                    Some((hi * 16 + lo) as u8)
                })
                .collect()
        }
        KeyEncoding::Base64url => decode_base64url(text.trim_end_matches('=')),
    }
}

/// Base64url without padding. Written out here (twelve lines) rather than
/// pulling a second base64 dependency into the build script's graph.
pub fn decode_base64url(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    };
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        acc = (acc << 6) | u32::from(value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

impl GatewayConfig {
    /// True when any compiled-in key is the inline demo key.
    pub fn has_demo_key(&self) -> bool {
        self.keys.iter().any(KeyConfig::is_demo)
    }

    /// Refuses the first public key whose algorithm is not in `built` (the
    /// worker's features), so that a build never drops a configured key.
    pub fn check_algorithms(&self, file: &Path, built: &[PublicAlg]) -> Result<(), ConfigError> {
        match self.public_keys.iter().find(|k| !built.contains(&k.key.alg())) {
            None => Ok(()),
            Some(k) => Err(ConfigError {
                file: file.to_owned(),
                kind: ConfigErrorKind::AlgorithmNotBuilt { kid: k.kid.clone(), alg: k.key.alg() },
            }),
        }
    }

    /// Looks up a key by kid.
    pub fn key(&self, kid: &str) -> Option<&KeyConfig> {
        self.keys.iter().find(|k| k.kid == kid)
    }

    /// The Rust source of a `worker::config::Config` static named `COMPILED`.
    pub fn to_rust(&self) -> String {
        let mut out = String::from("// Generated by worker/build.rs from the gateway config. Do not edit.\n");
        out.push_str("/// The configuration compiled into this build.\n");
        out.push_str("pub static COMPILED: Config<'static> = Config {\n");
        out.push_str(&format!("    realm: {:?},\n", self.realm));
        out.push_str(&format!("    issuer: {:?},\n", self.issuer.as_deref()));
        out.push_str(&format!("    leeway_secs: {},\n", self.leeway_secs));
        out.push_str(&format!("    trusted_proxy_hops: {},\n", self.trusted_proxy_hops));
        out.push_str(&format!("    max_token_bytes: {},\n", self.max_token_bytes));
        out.push_str("    keys: &[\n");
        for key in &self.keys {
            let (inner, outer) = hmac_key::hmac_sha256_states(&key.secret);
            out.push_str(&format!(
                "        VerifyingKey::Hs256(Key {{ kid: {:?}, secret: &{:?}, hmac: HmacKey {{ inner: {inner:?}, outer: {outer:?} }} }}),\n",
                key.kid, key.secret
            ));
        }
        for key in &self.public_keys {
            out.push_str(&format!("        {},\n", public_key_rust(key)));
        }
        out.push_str("    ],\n    routes: &[\n");
        for route in &self.routes {
            out.push_str(&format!(
                "        Route {{ audience: {:?}, origin: {:?}, base_path: {:?} }},\n",
                route.aud,
                route.origin(),
                route.base_path()
            ));
        }
        out.push_str("    ],\n};\n");
        out.push_str(&format!(
            "/// The token buffer's size (`max_token_bytes`).\npub const MAX_TOKEN_BYTES: usize = {};\n",
            self.max_token_bytes
        ));
        out.push_str(&format!(
            "/// The largest `max_token_bytes` any config may set.\npub const MAX_TOKEN_BYTES_LIMIT: usize = {};\n",
            TOKEN_BYTES_RANGE.end()
        ));
        out.push_str(&format!(
            "/// True when this build carries the inline demo key.\npub const DEMO_KEY_COMPILED: bool = {};\n",
            self.has_demo_key()
        ));
        out
    }
}

/// One public key as a `VerifyingKey` expression. An RSA modulus is
/// written as a call to the worker's `const fn` that computes its
/// Montgomery parameters, so the compiler, not the request, does it.
fn public_key_rust(key: &PublicKeyConfig) -> String {
    match &key.key {
        PublicKey::Rsa { modulus, exponent } => {
            let width = [2048, 3072, 4096].into_iter().find(|w| modulus.len() * 8 <= *w).unwrap_or(4096);
            let hex: String = std::iter::repeat_n(0u8, width / 8 - modulus.len())
                .chain(modulus.iter().copied())
                .map(|b| format!("{b:02x}"))
                .collect();
            format!(
                "VerifyingKey::Rs256(crate::signature::rs256::RsaKey {{ kid: {:?}, len: {}, exponent: {exponent}, modulus: crate::signature::rs256::Modulus::Bits{width}(&crate::signature::rs256::params_{width}({hex:?})) }})",
                key.kid,
                modulus.len()
            )
        }
        PublicKey::P256 { sec1 } => format!(
            "VerifyingKey::Es256(crate::signature::es256::EcKey {{ kid: {:?}, sec1: &{sec1:?} }})",
            key.kid
        ),
        PublicKey::Ed25519 { public } => format!(
            "VerifyingKey::EdDsa(crate::signature::eddsa::EdKey {{ kid: {:?}, public: &{public:?} }})",
            key.kid
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY32: &str = "0123456789abcdef0123456789abcdef";

    fn parse_with(text: &str, env: &[(&str, &str)]) -> Result<GatewayConfig, ConfigError> {
        let env: Vec<(String, String)> =
            env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        parse(text, Path::new("test.toml"), &move |var| {
            env.iter().find(|(k, _)| k == var).map(|(_, v)| v.clone())
        })
    }

    fn err_line(text: &str) -> String {
        match parse_with(text, &[]) {
            Ok(config) => panic!("accepted: {config:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn minimal(extra_routes: &str) -> String {
        format!(
            "[[keys]]\nkid = \"k1\"\ndemo = \"{KEY32}\"\n[[routes]]\naud = \"b\"\nupstream = \"http://127.0.0.1:1/\"\n{extra_routes}"
        )
    }

    #[test]
    fn sorts_routes_and_trims_upstream_slash() {
        let text = minimal("[[routes]]\naud = \"a\"\nupstream = \"https://x.example/api\"\n");
        let config = parse_with(&text, &[]).expect("valid");
        let auds: Vec<&str> = config.routes.iter().map(|r| r.aud.as_str()).collect();
        assert_eq!(auds, ["a", "b"]);
        assert_eq!(config.routes[1].upstream, "http://127.0.0.1:1");
        assert_eq!(config.realm, "gateway");
        assert_eq!(config.leeway_secs, 30);
        assert!(config.has_demo_key());
    }

    #[test]
    fn splits_upstreams_into_origin_and_base_path() {
        let text = minimal("[[routes]]\naud = \"a\"\nupstream = \"https://x.example:8443/api/v1/\"\n");
        let config = parse_with(&text, &[]).expect("valid");
        assert_eq!(config.routes[0].origin(), "https://x.example:8443");
        assert_eq!(config.routes[0].base_path(), "/api/v1");
        assert_eq!(config.routes[1].origin(), "http://127.0.0.1:1");
        assert_eq!(config.routes[1].base_path(), "");
    }

    #[test]
    fn max_token_bytes_defaults_to_256_and_is_bounded() {
        assert_eq!(parse_with(&minimal(""), &[]).expect("valid").max_token_bytes, 256);
        for n in [256, 2048, 8192] {
            let text = format!("max_token_bytes = {n}\n{}", minimal(""));
            assert_eq!(parse_with(&text, &[]).expect("valid").max_token_bytes, n);
        }
        for n in ["255", "8193", "0", "18446744073709551615"] {
            let text = format!("max_token_bytes = {n}\n{}", minimal(""));
            assert_eq!(err_line(&text), format!("test.toml: max_token_bytes = {n} is outside 256..=8192"));
        }
        assert!(err_line(&format!("max_token_bytes = -1\n{}", minimal(""))).starts_with("test.toml: "));
    }

    #[test]
    fn trusted_proxy_hops_default_to_zero_and_are_bounded() {
        assert_eq!(parse_with(&minimal(""), &[]).expect("valid").trusted_proxy_hops, 0);
        let two = format!("trusted_proxy_hops = 2\n{}", minimal(""));
        assert_eq!(parse_with(&two, &[]).expect("valid").trusted_proxy_hops, 2);
        let many = format!("trusted_proxy_hops = 99\n{}", minimal(""));
        assert!(err_line(&many).contains("trusted_proxy_hops = 99 is above"));
    }

    #[test]
    fn refuses_duplicate_audience_naming_the_entry() {
        let text = minimal("[[routes]]\naud = \"b\"\nupstream = \"http://h\"\n");
        assert_eq!(err_line(&text), "test.toml: routes[1].aud \"b\" is already routed by another entry");
    }

    #[test]
    fn refuses_short_keys() {
        let text =
            "[[keys]]\nkid = \"k\"\ndemo = \"short\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n";
        assert!(err_line(text).contains("keys[0] is 5 bytes"), "{}", err_line(text));
    }

    #[test]
    fn reads_keys_from_env_and_reports_missing_variables() {
        let text =
            "[[keys]]\nkid = \"k\"\nenv = \"GW_KEY\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n";
        let config = parse_with(text, &[("GW_KEY", KEY32)]).expect("valid");
        assert_eq!(config.keys[0].secret(), KEY32.as_bytes());
        assert!(!config.has_demo_key());
        assert_eq!(err_line(text), "test.toml: keys[0].env names GW_KEY, which is not set");
    }

    #[test]
    fn reads_keys_from_files_relative_to_the_config() {
        let dir = std::env::temp_dir().join(format!("gw-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("key.hex"), format!("{}\n", "ab".repeat(32))).expect("write");
        let text = "[[keys]]\nkid = \"k\"\nfile = \"key.hex\"\nencoding = \"hex\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n";
        let config = parse(text, &dir.join("gw.toml"), &|_| None).expect("valid");
        assert_eq!(config.keys[0].secret(), [0xab; 32]);
        let missing = text.replace("key.hex", "nope.hex");
        let err = parse(&missing, &dir.join("gw.toml"), &|_| None).expect_err("missing file");
        assert!(err.to_string().contains("keys[0].file"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn decodes_base64url_keys() {
        let text = "[[keys]]\nkid = \"k\"\ndemo = \"q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s\"\nencoding = \"base64url\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n";
        let config = parse_with(text, &[]).expect("valid");
        assert_eq!(config.keys[0].secret(), [0xab; 32]);
    }

    #[test]
    fn refuses_bad_entries_in_one_line() {
        let cases = [
            ("realm = \"a\\\"b\"\n", "realm may hold only"),
            ("leeway_secs = 99999\n", "leeway_secs = 99999 is above"),
            ("surprise = 1\n", "unknown field"),
        ];
        for (prefix, expected) in cases {
            let line = err_line(&format!("{prefix}{}", minimal("")));
            assert!(line.contains(expected), "{line}");
            assert!(!line.contains('\n'), "{line}");
        }
        assert!(err_line("[[routes]]\naud=\"a\"\nupstream=\"http://h\"\n").contains("no [[keys]]"));
        for bad in [
            "ftp://h",
            "http://",
            "http://12pt7//12:.0.0.1:9L\\\\",
            "http://h:0",
            "http://h:99999",
            "http://h:x",
            "http://u@h",
            "http://h/a?b",
            "http://h/a#b",
            "http://[zz]",
            "http://.h",
            "http://h\\ny",
            "http://h/a/../b",
            "http://h/./b",
            "http://h/a//b",
            "http://h/a/..;x",
            "http://h/a%2fb",
            "http://h/%2e%2e",
        ] {
            let bad_upstream = minimal("").replace("http://127.0.0.1:1/", bad);
            let line = err_line(&bad_upstream);
            assert!(line.contains("routes[0].upstream"), "{bad}: {line}");
            assert!(!line.contains('\n'), "{line}");
        }
        for good in
            ["http://h", "https://api.example.com:8443/v1/", "http://[::1]:9000", "http://10.0.0.1/a/b"]
        {
            assert!(parse_with(&minimal("").replace("http://127.0.0.1:1/", good), &[]).is_ok(), "{good}");
        }
        let two_sources = minimal("").replace("demo =", "env = \"X\"\ndemo =");
        assert!(err_line(&two_sources).contains("keys[0] needs exactly one of"));
    }

    #[test]
    fn debug_never_prints_the_secret() {
        let config = parse_with(&minimal(""), &[]).expect("valid");
        let shown = format!("{:?}", config.keys[0]);
        assert!(!shown.contains(KEY32), "{shown}");
        assert!(shown.contains("{ ... }"), "{shown}");
    }

    #[test]
    fn renders_rust_tables() {
        let config = parse_with(&minimal(""), &[]).expect("valid");
        let rust = config.to_rust();
        assert!(rust.contains("Route { audience: \"b\", origin: \"http://127.0.0.1:1\", base_path: \"\" }"));
        assert!(rust.contains("trusted_proxy_hops: 0,"));
        assert!(rust.contains("DEMO_KEY_COMPILED: bool = true"));
        assert!(rust.contains("MAX_TOKEN_BYTES: usize = 256;"));
        assert!(rust.contains("max_token_bytes: 256,"));
        assert!(rust.contains("MAX_TOKEN_BYTES_LIMIT: usize = 8192;"));
    }
}
