//! Why a configuration was refused, in one line that names the file and
//! the entry.

use std::fmt;
use std::path::PathBuf;

use crate::{MAX_LEEWAY_SECS, MAX_TRUSTED_PROXY_HOPS, MIN_KEY_BYTES, PublicAlg, TOKEN_BYTES_RANGE};

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
    /// A top-level `issuer` or `[[keys]]` beside `[[issuers]]`.
    IssuerForms,
    /// Two issuers name the same `iss`, or several issuers one without `iss`.
    IssuerIss { entry: String, why: &'static str },
    /// An entry names an audience no route has.
    UnknownAudience { entry: String, aud: String },
    /// A rule, CORS, token source or claim header setting is not valid;
    /// `why` says what it must be.
    Invalid { entry: String, why: String },
    /// A rule that an earlier rule hides entirely.
    UnreachableRule { entry: String, hidden_by: String },
    /// The policy reads more claims than the module keeps.
    TooManyClaims(usize),
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
            ConfigErrorKind::NoKeys => write!(
                f,
                "no [[keys]] entry and no jwks_url or discovery: an issuer needs keys, compiled in or fetched"
            ),
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
            ConfigErrorKind::IssuerForms => write!(
                f,
                "[[issuers]] replaces the top-level issuer and [[keys]]: move them into an [[issuers]] entry"
            ),
            ConfigErrorKind::IssuerIss { entry, why } => write!(f, "{entry}.iss {why}"),
            ConfigErrorKind::UnknownAudience { entry, aud } => {
                write!(f, "{entry} names audience {aud:?}, which no [[routes]] entry routes")
            }
            ConfigErrorKind::Invalid { entry, why } => write!(f, "{entry} {}", OneLine(why)),
            ConfigErrorKind::UnreachableRule { entry, hidden_by } => write!(
                f,
                "{entry} can never match: {hidden_by} comes first and matches every request it would"
            ),
            ConfigErrorKind::TooManyClaims(n) => write!(
                f,
                "the rules and claim headers read {n} distinct claims; at most {} are supported",
                crate::MAX_POLICY_CLAIMS
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Shows text from the config or the system with control characters
/// escaped, so that an error stays one line whatever the input.
pub(crate) struct OneLine<'a>(&'a str);

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
