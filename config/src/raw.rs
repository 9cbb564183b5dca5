//! `gateway.toml` as written: private serde structures, read strictly
//! (unknown entries refused), then validated into the public types by the
//! other modules of this crate.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::DEFAULT_MAX_TOKEN_BYTES;

/// How key material is spelled in its source.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum KeyEncoding {
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
pub(crate) struct RawConfig {
    #[serde(default = "default_realm")]
    pub realm: String,
    pub issuer: Option<String>,
    pub jwks_url: Option<String>,
    pub discovery: Option<bool>,
    pub refresh_secs: Option<u32>,
    pub refetch_secs: Option<u32>,
    pub fetch_timeout_ms: Option<u32>,
    pub max_stale_secs: Option<u32>,
    pub max_keys: Option<u16>,
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
    #[serde(default)]
    pub trusted_proxy_hops: u32,
    #[serde(default = "default_max_token_bytes")]
    pub max_token_bytes: u64,
    #[serde(default)]
    pub keys: Vec<RawKey>,
    #[serde(default)]
    pub issuers: Vec<RawIssuer>,
    #[serde(default)]
    pub routes: Vec<RawRoute>,
    #[serde(default)]
    pub token_sources: Vec<RawTokenSource>,
    #[serde(default)]
    pub rules: Vec<RawRule>,
    pub scope_claims: Option<Vec<String>>,
    #[serde(default)]
    pub claim_headers: Vec<RawClaimHeader>,
    pub payload_header: Option<String>,
    pub cors: Option<RawCors>,
    pub upstreams: Option<RawUpstreams>,
    #[serde(default)]
    pub limits: Vec<RawLimit>,
    pub default_limits: Option<Vec<String>>,
    pub dpop: Option<String>,
    pub dpop_window_secs: Option<u32>,
    pub dpop_thumbprint_header: Option<String>,
    pub dpop_nonce: Option<bool>,
    pub dpop_nonce_key: Option<RawKey>,
    pub dpop_nonce_secs: Option<u32>,
    pub certificate_bound: Option<String>,
}

/// `[[limits]]`: one rate limit.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimit {
    pub name: String,
    pub requests: u64,
    pub per_secs: u64,
    pub burst: Option<u64>,
    pub by: String,
    pub fields: Option<bool>,
}

/// `[upstreams]`: how the servers behind the gateway may read a request.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUpstreams {
    pub any_case: Option<bool>,
    pub trailing_slash: Option<bool>,
    pub suffix: Option<bool>,
    pub path_parameters: Option<bool>,
    pub method_override: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawKey {
    pub kid: Option<String>,
    pub env: Option<String>,
    pub file: Option<PathBuf>,
    pub demo: Option<String>,
    /// A JWKS document: every signing key in it, each with its own kid.
    pub jwks: Option<PathBuf>,
    /// A PEM public key (SPKI), selected by `kid`.
    pub pem: Option<PathBuf>,
    /// For a PEM key: its algorithm, which must be the key type's one.
    pub alg: Option<String>,
    #[serde(default)]
    pub encoding: KeyEncoding,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawIssuer {
    pub iss: Option<String>,
    pub leeway_secs: Option<u64>,
    #[serde(default)]
    pub audiences: Vec<String>,
    #[serde(default)]
    pub keys: Vec<RawKey>,
    pub jwks_url: Option<String>,
    pub discovery: Option<bool>,
    pub refresh_secs: Option<u32>,
    pub refetch_secs: Option<u32>,
    pub fetch_timeout_ms: Option<u32>,
    pub max_stale_secs: Option<u32>,
    pub max_keys: Option<u16>,
    pub dpop: Option<String>,
    pub dpop_window_secs: Option<u32>,
    pub dpop_nonce: Option<bool>,
    pub certificate_bound: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRoute {
    pub aud: String,
    pub upstream: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTokenSource {
    pub bearer: Option<bool>,
    pub cookie: Option<String>,
    pub header: Option<String>,
    pub prefix: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRule {
    pub name: Option<String>,
    pub path: Option<String>,
    pub prefix: Option<String>,
    #[serde(default)]
    pub methods: Vec<String>,
    pub access: Option<String>,
    pub route: Option<String>,
    pub status: Option<u16>,
    pub scopes: Option<RawSet>,
    pub roles: Option<RawRoles>,
    pub claims: Option<BTreeMap<String, toml::Value>>,
    pub issuers: Option<Vec<String>>,
    pub limits: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSet {
    #[serde(default)]
    pub all: Vec<String>,
    #[serde(default)]
    pub any: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRoles {
    pub claim: Option<String>,
    #[serde(default)]
    pub all: Vec<String>,
    #[serde(default)]
    pub any: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClaimHeader {
    pub claim: String,
    pub header: Option<String>,
    #[serde(default)]
    pub percent_encode: bool,
    #[serde(rename = "type")]
    pub value_type: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCors {
    pub allow_origins: Vec<String>,
    pub allow_methods: Vec<String>,
    #[serde(default)]
    pub allow_headers: Vec<String>,
    #[serde(default)]
    pub expose_headers: Vec<String>,
    pub max_age_secs: Option<u32>,
    #[serde(default)]
    pub allow_credentials: bool,
    pub unmatched_preflight: Option<String>,
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

/// The fetch settings of an issuer entry (or of the top level), gathered.
macro_rules! key_fetch_of {
    ($raw:expr) => {
        crate::key_fetch::RawKeyFetch {
            jwks_url: $raw.jwks_url,
            discovery: $raw.discovery,
            refresh_secs: $raw.refresh_secs,
            refetch_secs: $raw.refetch_secs,
            fetch_timeout_ms: $raw.fetch_timeout_ms,
            max_stale_secs: $raw.max_stale_secs,
            max_keys: $raw.max_keys,
        }
    };
}
pub(crate) use key_fetch_of;
