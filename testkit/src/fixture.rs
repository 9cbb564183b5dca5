//! The test fixtures: `testkit/fixture.toml` (the configuration every test
//! that drives a built module uses: its public test key, issuer and routes)
//! and `testkit/fixture-policies.toml` (the same with every policy),
//! independent of the user's `gateway.toml`. `make fixture` compiles them
//! into `target/fixture/`; here they are read for the tests' own side:
//! minting tokens with their keys, and deciding natively with the same
//! config, mapped by [`worker_config_of`], the one mapping from the config
//! crate's validated model to the worker's tables outside the build.

use std::path::PathBuf;
use std::sync::OnceLock;

use gateway_config::policy::{
    AccessConfig, ClaimType as ClaimTypeConfig, LiteralConfig, PathMatchConfig, RequirementsConfig,
    TokenSourceConfig,
};
use gateway_config::{GatewayConfig, PublicKeyConfig};
use worker::config::{
    Access, ClaimHeader, ClaimType, ClaimValue, Config, Cors, HmacKey, Hs256Key, Issuer, KeyFetch, Literal,
    PathMatch, Policy, Readings, Requirements, Roles, Route, Rule, SourceKind, TokenSource, VerifyingKey,
};

/// The fixture's configuration file.
pub fn toml_path() -> PathBuf {
    root().join("testkit/fixture.toml")
}

/// The policy fixture's configuration file.
pub fn policies_toml_path() -> PathBuf {
    root().join("testkit/fixture-policies.toml")
}

/// The module built from the fixture by `make fixture`.
pub fn wasm_path() -> PathBuf {
    root().join("target/fixture/gateway.wasm")
}

/// The module built from the policy fixture by `make fixture`.
pub fn policies_wasm_path() -> PathBuf {
    root().join("target/fixture/gateway-policies.wasm")
}

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The fixture, validated as the build validates it.
///
/// # Panics
///
/// When `testkit/fixture.toml` does not load: the tests cannot run without it.
pub fn config() -> GatewayConfig {
    gateway_config::load(&toml_path()).unwrap_or_else(|e| panic!("the test fixture: {e}"))
}

/// The fixture, validated once and kept for the process.
pub fn config_ref() -> &'static GatewayConfig {
    static CONFIG: OnceLock<GatewayConfig> = OnceLock::new();
    CONFIG.get_or_init(config)
}

/// The policy fixture, validated as the build validates it.
///
/// # Panics
///
/// When `testkit/fixture-policies.toml` does not load.
pub fn policies_config() -> GatewayConfig {
    gateway_config::load(&policies_toml_path()).unwrap_or_else(|e| panic!("the policy fixture: {e}"))
}

/// An HS256 key as the build compiles it in (its HMAC states computed by the
/// same function), kept for the process.
pub fn hs256_key(kid: &str, secret: &[u8]) -> VerifyingKey<'static> {
    let (inner, outer) = gateway_config::hmac_key::hmac_sha256_states(secret);
    VerifyingKey::Hs256(Hs256Key {
        kid: leak(kid),
        secret: leak_slice(secret),
        hmac: HmacKey { inner, outer },
    })
}

/// The fixture as the worker reads it (built once, kept for the process).
pub fn worker_config() -> &'static Config<'static> {
    static CONFIG: OnceLock<Config<'static>> = OnceLock::new();
    CONFIG.get_or_init(|| worker_config_of(&config(), &|_| None))
}

/// The policy fixture as the worker reads it (built once, kept for the process).
pub fn policies_worker_config() -> &'static Config<'static> {
    static CONFIG: OnceLock<Config<'static>> = OnceLock::new();
    CONFIG.get_or_init(|| worker_config_of(&policies_config(), &|_| None))
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

fn leak_slice<T: Clone>(items: &[T]) -> &'static [T] {
    Box::leak(items.to_vec().into_boxed_slice())
}

fn leak_strs(list: &[String]) -> &'static [&'static str] {
    Box::leak(list.iter().map(|s| leak(s)).collect::<Vec<_>>().into_boxed_slice())
}

/// `loaded` as the worker reads it, kept for the process: the same tables
/// the build writes as Rust source (`GatewayConfig::to_rust`), built at run
/// time. HS256 keys are built here; `public_key` builds each public key (the
/// algorithms are features of the worker the caller builds with), and a
/// key it gives `None` for is left out.
pub fn worker_config_of(
    loaded: &GatewayConfig,
    public_key: &dyn Fn(&PublicKeyConfig) -> Option<VerifyingKey<'static>>,
) -> Config<'static> {
    let issuers: Vec<Issuer<'static>> = loaded
        .issuers
        .iter()
        .map(|issuer| {
            let mut keys: Vec<VerifyingKey<'static>> =
                issuer.keys.iter().map(|k| hs256_key(&k.kid, k.secret())).collect();
            keys.extend(issuer.public_keys.iter().filter_map(public_key));
            Issuer {
                iss: issuer.iss.as_deref().map(leak),
                leeway_secs: issuer.leeway_secs,
                keys: Box::leak(keys.into_boxed_slice()),
                audiences: leak_strs(&issuer.audiences),
                fetch: issuer.fetch.as_ref().map(|f| {
                    &*Box::leak(Box::new(KeyFetch {
                        kind: match f.kind {
                            gateway_config::FetchKind::Jwks => SourceKind::Jwks,
                            gateway_config::FetchKind::Discovery => SourceKind::Discovery,
                        },
                        url: leak(&f.url),
                        refresh_secs: f.refresh_secs,
                        refetch_secs: f.refetch_secs,
                        timeout_ms: f.timeout_ms,
                        max_stale_secs: f.max_stale_secs,
                        max_keys: f.max_keys,
                    }))
                }),
            }
        })
        .collect();
    let routes: Vec<Route<'static>> = loaded
        .routes
        .iter()
        .map(|r| Route { audience: leak(&r.aud), origin: leak(r.origin()), base_path: leak(r.base_path()) })
        .collect();
    Config {
        realm: leak(&loaded.realm),
        max_token_bytes: loaded.max_token_bytes,
        trusted_proxy_hops: loaded.trusted_proxy_hops,
        issuers: Box::leak(issuers.into_boxed_slice()),
        routes: Box::leak(routes.into_boxed_slice()),
        policy: policy_of(loaded),
    }
}

fn policy_of(loaded: &GatewayConfig) -> Policy<'static> {
    let policy = &loaded.policy;
    let rules: Vec<Rule<'static>> = policy
        .rules
        .iter()
        .map(|rule| Rule {
            methods: leak_strs(&rule.methods),
            path: match &rule.path {
                PathMatchConfig::Exact(p) => PathMatch::Exact(leak(p)),
                PathMatchConfig::Prefix(p) => PathMatch::Prefix(leak(p)),
            },
            access: match &rule.access {
                AccessConfig::Public { route } => Access::Public { route: *route },
                AccessConfig::Deny { status } => Access::Deny { status: *status },
                AccessConfig::Token(requirements) => Access::Token(requirements_of(requirements)),
            },
        })
        .collect();
    let cors = policy.cors.as_ref().map(|cors| Cors {
        origins: leak_strs(&cors.origins),
        methods: leak_strs(&cors.methods),
        methods_joined: leak(&cors.methods.join(", ")),
        headers: leak_strs(&cors.headers),
        headers_joined: leak(&cors.headers.join(", ")),
        expose_headers: leak(&cors.expose_headers.join(", ")),
        max_age: leak(&cors.max_age_secs.map(|age| age.to_string()).unwrap_or_default()),
        credentials: cors.credentials,
        unmatched_preflight_route: cors.unmatched_preflight_route,
    });
    let token_sources: Vec<TokenSource<'static>> = policy
        .token_sources
        .iter()
        .map(|source| match source {
            TokenSourceConfig::Bearer => TokenSource::Bearer,
            TokenSourceConfig::Cookie(name) => TokenSource::Cookie(leak(name)),
            TokenSourceConfig::Header { name, prefix } => {
                TokenSource::Header { name: leak(name), prefix: leak(prefix) }
            }
        })
        .collect();
    let claim_headers: Vec<ClaimHeader<'static>> = policy
        .claim_headers
        .iter()
        .map(|h| ClaimHeader {
            claim: h.claim,
            header: leak(&h.header),
            percent_encode: h.percent_encode,
            value_type: h.value_type.map(|t| match t {
                ClaimTypeConfig::String => ClaimType::String,
                ClaimTypeConfig::Number => ClaimType::Number,
                ClaimTypeConfig::Boolean => ClaimType::Boolean,
                ClaimTypeConfig::List => ClaimType::List,
            }),
        })
        .collect();
    let r = &policy.readings;
    Policy {
        rules: Box::leak(rules.into_boxed_slice()),
        cors,
        token_sources: Box::leak(token_sources.into_boxed_slice()),
        claims: leak_strs(&policy.claims),
        scope_claims: leak_slice(&policy.scope_claims),
        claim_headers: Box::leak(claim_headers.into_boxed_slice()),
        payload_header: policy.payload_header.as_deref().map(leak),
        rule_names: Box::leak(
            policy
                .rules
                .iter()
                .map(|rule| leak(&rule.name))
                .collect::<Vec<&'static str>>()
                .into_boxed_slice(),
        ),
        readings: Readings {
            any_case: r.any_case,
            trailing_slash: r.trailing_slash,
            suffix: r.suffix,
            path_parameters: r.path_parameters,
            method_override: r.method_override,
            rules_have_upper_case: policy
                .rules
                .iter()
                .any(|rule| rule.path.text().bytes().any(|b| b.is_ascii_uppercase())),
            exact_rules_end_with_slash: policy.rules.iter().any(
                |rule| matches!(&rule.path, PathMatchConfig::Exact(p) if p.len() > 1 && p.ends_with('/')),
            ),
        },
        limits: limits_of(&policy.limits),
        dpop: dpop_of(loaded),
        certificate_bound: Box::leak(
            loaded
                .issuers
                .iter()
                .map(|i| match i.certificate_bound {
                    Some(c) => worker::config::BindingMode { accept: true, required: c.required },
                    None => worker::config::BindingMode::OFF,
                })
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        ),
    }
}

fn dpop_of(loaded: &GatewayConfig) -> worker::config::Dpop<'static> {
    use worker::config::{Dpop, DpopIssuer};
    let issuers: Vec<DpopIssuer> = loaded
        .issuers
        .iter()
        .map(|i| match i.dpop {
            Some(d) => {
                DpopIssuer { accept: true, required: d.required, window_secs: d.window_secs, nonce: d.nonce }
            }
            None => DpopIssuer::OFF,
        })
        .collect();
    let replay = loaded.policy.limits.table.iter().position(|l| l.name == gateway_config::dpop::REPLAY_LIMIT);
    Dpop {
        issuers: Box::leak(issuers.into_boxed_slice()),
        replay_limit: replay.unwrap_or(0) as u8,
        thumbprint_header: loaded.policy.dpop_thumbprint_header.as_deref().map(leak),
        nonce: loaded.dpop_nonce.as_ref().map(|n| {
            let (inner, outer) = gateway_config::hmac_key::hmac_sha256_states(n.key.secret());
            worker::config::DpopNonce { secs: n.secs, key: worker::keys::HmacKey { inner, outer } }
        }),
    }
}

fn limits_of(limits: &gateway_config::policy::LimitsConfig) -> worker::config::Limits<'static> {
    use gateway_config::policy::LimitKeyConfig;
    use worker::config::{Limit, LimitKey};
    let table: Vec<Limit<'static>> = limits
        .table
        .iter()
        .map(|l| Limit {
            name: leak(&l.name),
            requests: l.requests,
            per_secs: l.per_secs,
            burst: l.burst,
            by: match l.by {
                LimitKeyConfig::Subject => LimitKey::Subject,
                LimitKeyConfig::Claim(claim) => LimitKey::Claim(claim),
                LimitKeyConfig::ClientAddress => LimitKey::ClientAddress,
                LimitKeyConfig::Route => LimitKey::Route,
                LimitKeyConfig::ProofId => LimitKey::ProofId,
            },
            fields: l.fields,
        })
        .collect();
    let by_rule: Vec<&'static [u8]> = limits.by_rule.iter().map(|l| leak_slice(l)).collect();
    worker::config::Limits {
        table: Box::leak(table.into_boxed_slice()),
        by_rule: Box::leak(by_rule.into_boxed_slice()),
        unmatched: leak_slice(&limits.unmatched),
    }
}

fn requirements_of(requirements: &RequirementsConfig) -> Requirements<'static> {
    let claim_values: Vec<ClaimValue<'static>> = requirements
        .claim_values
        .iter()
        .map(|v| ClaimValue {
            claim: v.claim,
            value: match &v.value {
                LiteralConfig::String(s) => Literal::String(leak(s)),
                LiteralConfig::Integer(n) => Literal::Integer(*n),
                LiteralConfig::Bool(b) => Literal::Bool(*b),
            },
        })
        .collect();
    Requirements {
        scopes_all: leak_strs(&requirements.scopes_all),
        scopes_any: leak_strs(&requirements.scopes_any),
        scope_attribute: leak(&requirements.scope_attribute),
        roles: requirements.roles.as_ref().map(|roles| Roles {
            claim: roles.claim,
            all: leak_strs(&roles.all),
            any: leak_strs(&roles.any),
        }),
        claim_values: Box::leak(claim_values.into_boxed_slice()),
        issuers: leak_slice(&requirements.issuers),
    }
}
