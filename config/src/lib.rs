//! Reads `gateway.toml`, validates it, and renders it as the Rust tables the
//! worker compiles in.
//!
//! The worker has no file system and no clock of its own, so its
//! configuration is fixed at build time: `worker/build.rs` calls [`load`]
//! (through [`resolve_path`], the one place that reads `GATEWAY_CONFIG`) and
//! writes [`GatewayConfig::to_rust`] into the crate. Validation happens
//! here, once, so that the request path never meets a config it cannot
//! trust: the audience table is sorted, duplicates are refused, every key
//! is at least 32 bytes (RFC 7518 section 3.2), rules that can never match
//! are refused, and every name that reaches a header is a token. Key
//! material never lives in the repository: it comes from an environment
//! variable or a file, except one inline `demo` key that is reported as
//! such wherever it is compiled in.
//!
//! Errors name the file and the entry that is wrong, in one line.
//!
//! | module | job |
//! |---|---|
//! | [`error`] | the refusals, one line each |
//! | `raw` | the TOML as written (serde, unknown entries refused) |
//! | `text` | what text entries may hold; upstream URLs; key encodings |
//! | `keys` | key entries: HS256 secrets, JWKS and PEM files |
//! | [`public_keys`] | RS256, ES256 and EdDSA keys validated |
//! | [`hmac_key`] | HMAC key states computed at build time |
//! | `issuers` | one issuer or several, each with its keys |
//! | [`key_fetch`] | keys fetched at run time: where, how often |
//! | [`certificate`] | tokens bound to a client certificate (RFC 8705): per issuer |
//! | [`dpop`] | tokens bound to a DPoP key (RFC 9449): per issuer, and the replay limit |
//! | [`policy`] | rules, CORS, token sources, claim headers |
//! | `rust` | the worker's tables as Rust source |

use std::path::{Path, PathBuf};

pub mod certificate;
pub mod dpop;
pub mod error;
pub mod hmac_key;
mod issuers;
pub mod key_fetch;
mod keys;
pub mod policy;
pub mod public_keys;
mod raw;
mod rust;
mod text;

pub use error::{ConfigError, ConfigErrorKind};
pub use key_fetch::{FetchKind, KeyFetchConfig};
pub use policy::PolicyConfig;
pub use public_keys::{PublicAlg, PublicKey};
pub use text::{decode_base64url, is_upstream_url};

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

/// The most distinct claims the rules and claim headers may read (the
/// worker keeps their values in a fixed table).
pub const MAX_POLICY_CLAIMS: usize = 16;

/// The longest claim name the policy may read, in bytes.
pub const MAX_CLAIM_NAME: usize = 64;

/// A validated gateway configuration, ready to compile into the worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// The realm named in `WWW-Authenticate` challenges.
    pub realm: String,
    /// Proxy hops in front of the gateway whose `X-Forwarded-For` is kept
    /// (the peer is appended); 0, the default, replaces it.
    pub trusted_proxy_hops: u32,
    /// The longest bearer token accepted, in bytes (in [`TOKEN_BYTES_RANGE`]).
    pub max_token_bytes: usize,
    /// Who issues tokens, each with its keys: one (today's `issuer` and
    /// `[[keys]]`) or several (`[[issuers]]`).
    pub issuers: Vec<IssuerConfig>,
    /// Routes sorted by audience (byte order), no duplicates.
    pub routes: Vec<RouteConfig>,
    /// Rules, CORS, token sources, claim headers, in the form the worker reads.
    pub policy: PolicyConfig,
    /// The key and period of the DPoP nonces the module issues, when an
    /// issuer asks for them (`dpop_nonce = true`).
    pub dpop_nonce: Option<dpop::DpopNonceConfig>,
    /// Settings that are valid but probably not what was meant (one line
    /// each, naming the entries); the build prints them.
    pub warnings: Vec<String>,
}

/// One issuer of tokens and its keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerConfig {
    /// When set, a token's `iss` must equal it exactly (and selects this issuer).
    pub iss: Option<String>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
    /// HS256 secrets by key id, in config order.
    pub keys: Vec<KeyConfig>,
    /// RS256, ES256 and EdDSA public keys by key id, in config order (a
    /// JWKS entry adds each of its signing keys). Their kids and the
    /// secrets' are distinct within the issuer.
    pub public_keys: Vec<PublicKeyConfig>,
    /// The audiences its tokens may be routed by; empty: every route.
    pub audiences: Vec<String>,
    /// Where its keys are fetched at run time, if they are; compiled keys
    /// stay pinned beside them.
    pub fetch: Option<KeyFetchConfig>,
    /// Whether its DPoP-bound tokens are accepted (RFC 9449), and how.
    pub dpop: Option<dpop::DpopConfig>,
    /// Whether its certificate-bound tokens are accepted (RFC 8705), and how.
    pub certificate_bound: Option<certificate::CertificateBound>,
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

impl std::fmt::Debug for KeyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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

/// The config file the build compiles: `GATEWAY_CONFIG` when set (relative
/// to `workspace`), `gateway.toml` in `workspace` otherwise. The one place
/// that reads the variable; the build scripts and tools call it.
pub fn resolve_path(workspace: &Path) -> PathBuf {
    match std::env::var_os("GATEWAY_CONFIG") {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            if p.is_absolute() { p } else { workspace.join(p) }
        }
        _ => workspace.join("gateway.toml"),
    }
}

/// What the build script of a host crate that embeds the core (the Envoy
/// filter, the wasi:http component) compiles against: the config's policy
/// cfgs (empty when it does not load: `worker/build.rs` stops the build
/// with the reason), and whether the core fetches keys at run time, which
/// needs a JWKS source and a public-key algorithm among the crate's
/// features (the same test as `worker/build.rs`). Prints the
/// `rerun-if` lines for the config. `workspace` is the workspace's root.
pub fn embedded_core_cfgs(workspace: &Path) -> (Vec<&'static str>, bool) {
    println!("cargo:rerun-if-env-changed=GATEWAY_CONFIG");
    let path = resolve_path(workspace);
    println!("cargo:rerun-if-changed={}", path.display());
    let public_keys = ["RS256", "ES256", "EDDSA"]
        .iter()
        .any(|alg| std::env::var_os(format!("CARGO_FEATURE_{alg}")).is_some());
    let cfgs = load(&path).map(|c| c.policy_cfgs()).unwrap_or_default();
    let runtime_keys = public_keys && cfgs.contains(&"runtime_keys");
    (cfgs, runtime_keys)
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
    let raw: raw::RawConfig =
        toml::from_str(text).map_err(|e| fail(ConfigErrorKind::Syntax(e.message().to_owned())))?;
    text::check_text("realm", &raw.realm, text::TextRule::QuotedString).map_err(fail)?;
    if raw.trusted_proxy_hops > MAX_TRUSTED_PROXY_HOPS {
        return Err(fail(ConfigErrorKind::TooManyTrustedHops(raw.trusted_proxy_hops)));
    }
    let max_token_bytes = usize::try_from(raw.max_token_bytes)
        .ok()
        .filter(|n| TOKEN_BYTES_RANGE.contains(n))
        .ok_or_else(|| fail(ConfigErrorKind::TokenBytesOutOfRange(raw.max_token_bytes)))?;
    if raw.routes.is_empty() {
        return Err(fail(ConfigErrorKind::NoRoutes));
    }
    let routes = read_routes(raw.routes).map_err(fail)?;
    let base = origin.parent().unwrap_or(Path::new("."));
    let mut key_warnings = Vec::new();
    let issuers = issuers::read(
        issuers::Forms {
            issuer: raw.issuer,
            leeway_secs: raw.leeway_secs,
            keys: raw.keys,
            fetch: raw::key_fetch_of!(raw),
            issuers: raw.issuers,
            dpop: (raw.dpop, raw.dpop_window_secs),
            dpop_nonce: raw.dpop_nonce,
            certificate_bound: raw.certificate_bound,
        },
        &routes,
        base,
        env,
        &mut key_warnings,
    )
    .map_err(fail)?;
    let policy_input = policy::Input {
        token_sources: raw.token_sources,
        rules: raw.rules,
        scope_claims: raw.scope_claims,
        claim_headers: raw.claim_headers,
        payload_header: raw.payload_header,
        cors: raw.cors,
        upstreams: raw.upstreams,
        limits: raw.limits,
        default_limits: raw.default_limits,
        dpop_thumbprint_header: raw.dpop_thumbprint_header,
    };
    let iss: Vec<Option<&str>> = issuers.iter().map(|i| i.iss.as_deref()).collect();
    let (mut policy, policy_warnings) = policy::read(policy_input, &routes, &iss).map_err(fail)?;
    dpop::add_replay_limit(&issuers, &mut policy.limits).map_err(fail)?;
    if policy.dpop_thumbprint_header.is_some() && issuers.iter().all(|i| i.dpop.is_none()) {
        return Err(fail(ConfigErrorKind::Invalid {
            entry: "dpop_thumbprint_header".into(),
            why: "is set, but no issuer accepts DPoP (dpop = \"accept\" or \"require\")".into(),
        }));
    }
    let dpop_nonce =
        dpop::read_nonce(raw.dpop_nonce_key, raw.dpop_nonce_secs, &issuers, base, env).map_err(fail)?;
    let warnings = key_warnings.into_iter().chain(policy_warnings).collect();
    Ok(GatewayConfig {
        realm: raw.realm,
        trusted_proxy_hops: raw.trusted_proxy_hops,
        max_token_bytes,
        issuers,
        routes,
        policy,
        dpop_nonce,
        warnings,
    })
}

/// The routes, checked and sorted by audience.
fn read_routes(raw: Vec<raw::RawRoute>) -> Result<Vec<RouteConfig>, ConfigErrorKind> {
    let mut routes: Vec<RouteConfig> = Vec::with_capacity(raw.len());
    for (i, route) in raw.into_iter().enumerate() {
        let entry = format!("routes[{i}]");
        text::check_text(&format!("{entry}.aud"), &route.aud, text::TextRule::JsonPlain)?;
        let upstream = route.upstream.trim_end_matches('/').to_owned();
        if !is_upstream_url(&upstream) {
            return Err(ConfigErrorKind::BadUpstream { entry, upstream: route.upstream });
        }
        if routes.iter().any(|r| r.aud == route.aud) {
            return Err(ConfigErrorKind::DuplicateAudience { entry, aud: route.aud });
        }
        routes.push(RouteConfig { aud: route.aud, upstream });
    }
    routes.sort_by(|a, b| a.aud.as_bytes().cmp(b.aud.as_bytes()));
    Ok(routes)
}

impl GatewayConfig {
    /// True when any compiled-in key is the inline demo key.
    pub fn has_demo_key(&self) -> bool {
        self.hs256_keys().any(KeyConfig::is_demo) || self.dpop_nonce.as_ref().is_some_and(|n| n.key.is_demo())
    }

    /// Every HS256 key of every issuer.
    pub fn hs256_keys(&self) -> impl Iterator<Item = &KeyConfig> {
        self.issuers.iter().flat_map(|issuer| &issuer.keys)
    }

    /// Every public key of every issuer.
    pub fn public_keys(&self) -> impl Iterator<Item = &PublicKeyConfig> {
        self.issuers.iter().flat_map(|issuer| &issuer.public_keys)
    }

    /// The issuer tokens of a single-issuer config carry (the first one's `iss`).
    pub fn first_iss(&self) -> Option<&str> {
        self.issuers.first().and_then(|issuer| issuer.iss.as_deref())
    }

    /// Looks up an HS256 key by kid, in any issuer.
    pub fn key(&self, kid: &str) -> Option<&KeyConfig> {
        self.hs256_keys().find(|k| k.kid == kid)
    }

    /// Refuses the first public key whose algorithm is not in `built` (the
    /// worker's features), so that a build never drops a configured key.
    pub fn check_algorithms(&self, file: &Path, built: &[PublicAlg]) -> Result<(), ConfigError> {
        if built.is_empty()
            && let Some(i) = self.issuers.iter().position(|issuer| issuer.fetch.is_some())
        {
            let entry = if self.issuers.len() > 1 { format!("issuers[{i}].") } else { String::new() };
            return Err(ConfigError {
                file: file.to_owned(),
                kind: ConfigErrorKind::Invalid {
                    entry: format!("{entry}jwks_url"),
                    why: "fetches public keys, but this worker verifies none: build with WORKER_FEATURES=rs256 (or es256, eddsa)".into(),
                },
            });
        }
        if self.issuers.iter().any(|i| i.dpop.is_some())
            && !built.iter().any(|alg| matches!(alg, PublicAlg::Es256 | PublicAlg::EdDsa))
        {
            return Err(ConfigError {
                file: file.to_owned(),
                kind: ConfigErrorKind::Invalid {
                    entry: "dpop".into(),
                    why: "verifies DPoP proofs (ES256, EdDSA), but this worker verifies neither: build with WORKER_FEATURES=es256,eddsa".into(),
                },
            });
        }
        match self.public_keys().find(|k| !built.contains(&k.key.alg())) {
            None => Ok(()),
            Some(k) => Err(ConfigError {
                file: file.to_owned(),
                kind: ConfigErrorKind::AlgorithmNotBuilt { kid: k.kid.clone(), alg: k.key.alg() },
            }),
        }
    }

    /// The `policy_*` cfgs a wasm build of this config needs: a policy the
    /// config does not use is compiled out of the module (`worker/build.rs`).
    pub fn policy_cfgs(&self) -> Vec<&'static str> {
        let policy = &self.policy;
        let reads_claims = !policy.claims.is_empty() || policy.payload_header.is_some();
        [
            ("policy_rules", !policy.rules.is_empty()),
            ("policy_cors", policy.cors.is_some()),
            ("policy_claims", reads_claims),
            ("policy_sources", !policy.token_sources.is_empty()),
            (
                "policy_issuers",
                self.issuers.len() > 1 || self.issuers.iter().any(|i| !i.audiences.is_empty()),
            ),
            ("runtime_keys", self.issuers.iter().any(|i| i.fetch.is_some())),
            ("policy_limits", !policy.limits.table.is_empty()),
            ("policy_dpop", self.issuers.iter().any(|i| i.dpop.is_some())),
            ("policy_certificate", self.issuers.iter().any(|i| i.certificate_bound.is_some())),
        ]
        .into_iter()
        .filter_map(|(cfg, used)| used.then_some(cfg))
        .collect()
    }

    /// The Rust source of the worker's compiled-in `Config` (`COMPILED`)
    /// and the token buffer's size: literals of the worker's `config` and
    /// `keys` types only.
    pub fn to_rust(&self) -> String {
        rust::render(self)
    }
}

#[cfg(test)]
mod tests;
