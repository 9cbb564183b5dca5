//! The policies: rules per path and method, CORS, token sources, claims to
//! headers, validated and lowered into the form the worker reads (claims
//! by index, joined header values, routes by index), so the worker never
//! interprets a name or joins a list while a request waits.
//!
//! Rules are first-match in the order written. The build refuses a rule an
//! earlier one hides entirely (its methods and paths all covered), and warns
//! when two rules overlap with different outcomes, since then the order
//! decides. Every name that reaches a header is a lower-case token that the
//! module does not set itself and that no HTTP stack owns.

use crate::error::ConfigErrorKind;
use crate::raw::{RawClaimHeader, RawCors, RawLimit, RawRule, RawTokenSource, RawUpstreams};
use crate::{MAX_CLAIM_NAME, MAX_POLICY_CLAIMS, MAX_TEXT_LEN, RouteConfig};

/// The policy entries of the TOML.
pub(crate) struct Input {
    pub token_sources: Vec<RawTokenSource>,
    pub rules: Vec<RawRule>,
    pub scope_claims: Option<Vec<String>>,
    pub claim_headers: Vec<RawClaimHeader>,
    pub payload_header: Option<String>,
    pub cors: Option<RawCors>,
    pub upstreams: Option<RawUpstreams>,
    pub limits: Vec<RawLimit>,
    pub default_limits: Option<Vec<String>>,
    pub dpop_thumbprint_header: Option<String>,
}

/// The policies, in the form the worker reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Rules in the order written.
    pub rules: Vec<RuleConfig>,
    /// CORS, when configured.
    pub cors: Option<CorsConfig>,
    /// Where tokens come from; empty: `Authorization: Bearer` only.
    pub token_sources: Vec<TokenSourceConfig>,
    /// The claims the rules and claim headers read; they name them by index.
    pub claims: Vec<String>,
    /// Indices in `claims` of the claims scopes are read from.
    pub scope_claims: Vec<u8>,
    /// Claims forwarded as headers.
    pub claim_headers: Vec<ClaimHeaderConfig>,
    /// The header that carries the verified payload, when configured.
    pub payload_header: Option<String>,
    /// How the servers behind the gateway may read a request.
    pub readings: ReadingsConfig,
    /// Rate limits and the requests they apply to.
    pub limits: LimitsConfig,
    /// The header that carries a DPoP proof's key thumbprint upstream,
    /// when configured.
    pub dpop_thumbprint_header: Option<String>,
}

/// The readings of a request the rules must hold for (`[upstreams]`): each
/// on unless the config says no upstream reads a request that way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadingsConfig {
    /// Paths in any letter case (Express, ASP.NET Core).
    pub any_case: bool,
    /// A trailing slash ignored (Express, ASP.NET Core, Spring MVC before 6).
    pub trailing_slash: bool,
    /// A `.ext` suffix ignored (Spring MVC's suffix patterns).
    pub suffix: bool,
    /// `;` parameters stripped (Tomcat, Jetty, Spring).
    pub path_parameters: bool,
    /// Method-override headers and `_method` honoured.
    pub method_override: bool,
}

impl Default for ReadingsConfig {
    fn default() -> Self {
        ReadingsConfig {
            any_case: true,
            trailing_slash: true,
            suffix: true,
            path_parameters: true,
            method_override: true,
        }
    }
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleConfig {
    /// Its name for counters and logs: `name`, or `rules[i]`.
    pub name: String,
    /// Methods; empty: any.
    pub methods: Vec<String>,
    /// Which normalized paths.
    pub path: PathMatchConfig,
    /// What a matching request needs.
    pub access: AccessConfig,
}

/// Which normalized paths a rule matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathMatchConfig {
    /// Exactly this path.
    Exact(String),
    /// This path and below, on a segment boundary.
    Prefix(String),
}

impl PathMatchConfig {
    /// The path as written, exact or prefix.
    pub fn text(&self) -> &str {
        match self {
            PathMatchConfig::Exact(path) | PathMatchConfig::Prefix(path) => path,
        }
    }
}

/// What a matching request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessConfig {
    /// No token; forwarded to the route at this index (in sorted route order).
    Public {
        /// The route's index.
        route: u16,
    },
    /// A valid token meeting these requirements.
    Token(RequirementsConfig),
    /// Never forwarded: 403 or 404.
    Deny {
        /// 403 or 404.
        status: u16,
    },
}

/// What a valid token must carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequirementsConfig {
    /// Every one of these scopes.
    pub scopes_all: Vec<String>,
    /// One of these scopes, when not empty.
    pub scopes_any: Vec<String>,
    /// The challenge's `scope` attribute: the scopes, space-separated.
    pub scope_attribute: String,
    /// Membership in an array claim.
    pub roles: Option<RolesConfig>,
    /// Exact claim values.
    pub claim_values: Vec<ClaimValueConfig>,
    /// The issuers (indices) whose tokens the rule accepts; empty: any.
    pub issuers: Vec<u8>,
}

/// Membership in an array claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolesConfig {
    /// The claim's index.
    pub claim: u8,
    /// Every one of these.
    pub all: Vec<String>,
    /// One of these, when not empty.
    pub any: Vec<String>,
}

/// A claim that must have exactly this value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimValueConfig {
    /// The claim's index.
    pub claim: u8,
    /// The value.
    pub value: LiteralConfig,
}

/// A claim value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiteralConfig {
    /// A string.
    String(String),
    /// An integer.
    Integer(i64),
    /// A boolean.
    Bool(bool),
}

/// A claim forwarded as a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimHeaderConfig {
    /// The claim's index.
    pub claim: u8,
    /// The header, lower case.
    pub header: String,
    /// Percent-encode a value that cannot travel intact instead of refusing it.
    pub percent_encode: bool,
    /// The JSON type the claim must have, when the config names one.
    pub value_type: Option<ClaimType>,
}

pub use contract::ClaimType;

/// Where a token may come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSourceConfig {
    /// `Authorization: Bearer`.
    Bearer,
    /// A header, lower case, and the prefix before the token.
    Header {
        /// The header.
        name: String,
        /// The prefix, possibly empty.
        prefix: String,
    },
    /// A cookie.
    Cookie(String),
}

/// CORS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsConfig {
    /// Allowed origins, or `["*"]`.
    pub origins: Vec<String>,
    /// Allowed methods.
    pub methods: Vec<String>,
    /// Allowed request headers, lower case.
    pub headers: Vec<String>,
    /// Headers the page may read, lower case.
    pub expose_headers: Vec<String>,
    /// `Access-Control-Max-Age`.
    pub max_age_secs: Option<u32>,
    /// `Access-Control-Allow-Credentials: true`.
    pub credentials: bool,
    /// Unmatched preflights go to the route at this index instead of 403.
    pub unmatched_preflight_route: Option<u16>,
}

/// Fields the module sets itself, or that an HTTP stack or the token owns:
/// no configured header may be one of them.
const RESERVED_FIELDS: [&str; 19] = [
    "x-gateway-subject",
    "x-gateway-issuer",
    "x-gateway-upstream",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-forwarded-host",
    "forwarded",
    "x-real-ip",
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "upgrade",
];

/// The longest CORS max age (a day; browsers cap it lower).
const MAX_CORS_AGE_SECS: u32 = 86_400;

pub use limits::{LimitConfig, LimitKeyConfig, LimitsConfig};

/// Validates and lowers the policy entries; returns the warnings too.
pub(crate) fn read(
    input: Input,
    routes: &[RouteConfig],
    issuers: &[Option<&str>],
) -> Result<(PolicyConfig, Vec<String>), ConfigErrorKind> {
    let mut claims = ClaimNames::default();
    let token_sources = token_sources(input.token_sources)?;
    let any_scopes = input.rules.iter().any(|r| r.scopes.is_some());
    let scope_claims = match any_scopes {
        false => Vec::new(),
        true => {
            let names = input.scope_claims.unwrap_or_else(|| vec!["scope".into(), "scp".into()]);
            if names.is_empty() {
                return Err(invalid(
                    "scope_claims",
                    "must name at least one claim when a rule requires scopes",
                ));
            }
            names.iter().map(|name| claims.index("scope_claims", name)).collect::<Result<_, _>>()?
        }
    };
    let mut rules = Vec::with_capacity(input.rules.len());
    let mut rule_limits = Vec::with_capacity(input.rules.len());
    for (i, mut raw) in input.rules.into_iter().enumerate() {
        rule_limits.push(raw.limits.take());
        rules.push(rules::rule(&format!("rules[{i}]"), raw, routes, issuers, &mut claims)?);
    }
    let limits = limits::read(input.limits, input.default_limits, &rules, rule_limits, &mut claims)?;
    if let Some((i, rule)) =
        rules.iter().enumerate().find(|(i, r)| rules[..*i].iter().any(|o| o.name == r.name))
    {
        return Err(invalid(&format!("rules[{i}].name"), format!("{:?} names another rule too", rule.name)));
    }
    let readings = readings(input.upstreams);
    let warnings = order::check_order(&rules, &readings)?;
    let mut taken: Vec<String> = token_sources
        .iter()
        .filter_map(|s| match s {
            TokenSourceConfig::Header { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let mut claim_headers = Vec::with_capacity(input.claim_headers.len());
    for (i, raw) in input.claim_headers.into_iter().enumerate() {
        let entry = format!("claim_headers[{i}]");
        let index = claims.index(&format!("{entry}.claim"), &raw.claim)?;
        let header = raw.header.unwrap_or_else(|| default_header(&raw.claim));
        let header = header_name(&format!("{entry}.header"), &header, &taken)?;
        taken.push(header.clone());
        let value_type = match raw.value_type.as_deref() {
            None => None,
            Some(name) => Some(ClaimType::from_name(name).ok_or_else(|| {
                invalid(&format!("{entry}.type"), format!("{name:?} must be string, number, boolean or list"))
            })?),
        };
        claim_headers.push(ClaimHeaderConfig {
            claim: index,
            header,
            percent_encode: raw.percent_encode,
            value_type,
        });
    }
    let payload_header = match input.payload_header {
        Some(name) => Some(header_name("payload_header", &name, &taken)?),
        None => None,
    };
    if let Some(name) = &payload_header {
        taken.push(name.clone());
    }
    let dpop_thumbprint_header = match input.dpop_thumbprint_header {
        Some(name) => Some(header_name("dpop_thumbprint_header", &name, &taken)?),
        None => None,
    };
    let cors = input.cors.map(|raw| cors::cors(raw, routes)).transpose()?;
    if let Some(route) = cors.as_ref().and_then(|c| c.unmatched_preflight_route) {
        cors::check_unmatched_preflight(route, &rules, routes)?;
    }
    let policy = PolicyConfig {
        rules,
        cors,
        token_sources,
        claims: claims.names,
        scope_claims,
        claim_headers,
        payload_header,
        readings,
        limits,
        dpop_thumbprint_header,
    };
    Ok((policy, warnings))
}

/// `[upstreams]`, each reading on unless turned off.
fn readings(raw: Option<RawUpstreams>) -> ReadingsConfig {
    let all = ReadingsConfig::default();
    let Some(raw) = raw else { return all };
    ReadingsConfig {
        any_case: raw.any_case.unwrap_or(all.any_case),
        trailing_slash: raw.trailing_slash.unwrap_or(all.trailing_slash),
        suffix: raw.suffix.unwrap_or(all.suffix),
        path_parameters: raw.path_parameters.unwrap_or(all.path_parameters),
        method_override: raw.method_override.unwrap_or(all.method_override),
    }
}

fn invalid(entry: &str, why: impl Into<String>) -> ConfigErrorKind {
    ConfigErrorKind::Invalid { entry: entry.to_owned(), why: why.into() }
}

/// The claims the policy reads, in order of first use.
#[derive(Default)]
struct ClaimNames {
    names: Vec<String>,
}

impl ClaimNames {
    /// The index of `name`, added when new.
    fn index(&mut self, entry: &str, name: &str) -> Result<u8, ConfigErrorKind> {
        if name.is_empty() || name.len() > MAX_CLAIM_NAME || name.chars().any(char::is_control) {
            return Err(invalid(
                entry,
                format!("{name:?} must be a claim name of 1 to {MAX_CLAIM_NAME} bytes"),
            ));
        }
        let index = match self.names.iter().position(|n| n == name) {
            Some(index) => index,
            None => {
                self.names.push(name.to_owned());
                self.names.len() - 1
            }
        };
        if self.names.len() > MAX_POLICY_CLAIMS {
            return Err(ConfigErrorKind::TooManyClaims(self.names.len()));
        }
        Ok(index as u8)
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token(text: &str) -> bool {
    !text.is_empty() && text.len() <= MAX_TEXT_LEN && text.bytes().all(is_tchar)
}

/// `x-gateway-` and the claim's name, lower-cased, other characters as `-`.
fn default_header(claim: &str) -> String {
    let name: String =
        claim.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    format!("{}{name}", contract::fields::GATEWAY_PREFIX)
}

/// A configured header name: lower-case letters, digits and `-`, none the
/// module or an HTTP stack owns, none taken already.
fn header_name(entry: &str, name: &str, taken: &[String]) -> Result<String, ConfigErrorKind> {
    let lower = name.to_ascii_lowercase();
    if lower.is_empty()
        || lower.len() > MAX_TEXT_LEN
        || !lower.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(invalid(entry, format!("{name:?} must be a header name of letters, digits and '-'")));
    }
    if RESERVED_FIELDS.contains(&lower.as_str())
        || lower.starts_with("x-forwarded-")
        || lower.starts_with("proxy-")
    {
        return Err(invalid(entry, format!("{name:?} is a field the gateway or the HTTP stack sets itself")));
    }
    if taken.contains(&lower) {
        return Err(invalid(entry, format!("{name:?} is already configured for another value")));
    }
    Ok(lower)
}

fn token_sources(raw: Vec<RawTokenSource>) -> Result<Vec<TokenSourceConfig>, ConfigErrorKind> {
    let mut sources = Vec::with_capacity(raw.len());
    for (i, source) in raw.into_iter().enumerate() {
        let entry = format!("token_sources[{i}]");
        let source = match (source.bearer, source.cookie, source.header, source.prefix) {
            (Some(true), None, None, None) => TokenSourceConfig::Bearer,
            (None, Some(cookie), None, None) if is_token(&cookie) => TokenSourceConfig::Cookie(cookie),
            (None, Some(cookie), None, None) => {
                return Err(invalid(
                    &entry,
                    format!("cookie {cookie:?} must be a cookie name (RFC 6265 token)"),
                ));
            }
            (None, None, Some(header), prefix) => {
                let name = header_name(&format!("{entry}.header"), &header, &[])?;
                let prefix = prefix.unwrap_or_default();
                if prefix.len() > MAX_TEXT_LEN || !prefix.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                    return Err(invalid(&entry, "prefix must be printable ASCII"));
                }
                TokenSourceConfig::Header { name, prefix }
            }
            _ => {
                return Err(invalid(
                    &entry,
                    "needs exactly one of bearer = true, cookie = \"NAME\", header = \"NAME\" (prefix only with header)",
                ));
            }
        };
        if sources.contains(&source) {
            return Err(invalid(&entry, "repeats another token source"));
        }
        sources.push(source);
    }
    Ok(sources)
}

fn route_index(entry: &str, aud: &str, routes: &[RouteConfig]) -> Result<u16, ConfigErrorKind> {
    match routes.iter().position(|r| r.aud == aud) {
        Some(index) => Ok(index as u16),
        None => Err(ConfigErrorKind::UnknownAudience { entry: entry.to_owned(), aud: aud.to_owned() }),
    }
}

mod cors;
pub mod limits;
mod order;
mod rules;

#[cfg(test)]
mod tests;
#[cfg(test)]
use tests as tests_support;
