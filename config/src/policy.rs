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

use std::collections::BTreeMap;

use crate::error::ConfigErrorKind;
use crate::raw::{RawClaimHeader, RawCors, RawRule, RawTokenSource};
use crate::{MAX_CLAIM_NAME, MAX_POLICY_CLAIMS, MAX_TEXT_LEN, RouteConfig};

/// The policy entries of the TOML.
pub(crate) struct Input {
    pub token_sources: Vec<RawTokenSource>,
    pub rules: Vec<RawRule>,
    pub scope_claims: Option<Vec<String>>,
    pub claim_headers: Vec<RawClaimHeader>,
    pub payload_header: Option<String>,
    pub cors: Option<RawCors>,
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
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleConfig {
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
}

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
const RESERVED_FIELDS: [&str; 18] = [
    "x-gateway-subject",
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

/// Validates and lowers the policy entries; returns the warnings too.
pub(crate) fn read(
    input: Input,
    routes: &[RouteConfig],
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
    for (i, raw) in input.rules.into_iter().enumerate() {
        rules.push(rule(&format!("rules[{i}]"), raw, routes, &mut claims)?);
    }
    let warnings = order::check_order(&rules)?;
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
        claim_headers.push(ClaimHeaderConfig { claim: index, header, percent_encode: raw.percent_encode });
    }
    let payload_header = match input.payload_header {
        Some(name) => Some(header_name("payload_header", &name, &taken)?),
        None => None,
    };
    let cors = input.cors.map(|raw| cors::cors(raw, routes)).transpose()?;
    let policy = PolicyConfig {
        rules,
        cors,
        token_sources,
        claims: claims.names,
        scope_claims,
        claim_headers,
        payload_header,
    };
    Ok((policy, warnings))
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

/// A rule's path: canonical as the module normalizes paths, so that it can
/// match: starts with `/`, RFC 3986 path characters, escapes of reserved
/// bytes only (upper-case hex, never `/` or `\`), no dot or empty segments.
fn rule_path(entry: &str, path: &str) -> Result<String, ConfigErrorKind> {
    let bytes = path.as_bytes();
    let mut ok = path.starts_with('/') && path.len() <= MAX_TEXT_LEN;
    let mut i = 0;
    while ok && i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let byte = hex.filter(|h| h.bytes().all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(&c)));
            let byte = byte.and_then(|h| u8::from_str_radix(h, 16).ok());
            ok = byte.is_some_and(|v| {
                !(v.is_ascii_alphanumeric() || b"-._~/\\".contains(&v) || v < 0x20 || v == 0x7f)
            });
            i += 3;
            continue;
        }
        ok = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b);
        i += 1;
    }
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    let segments_ok = path == "/"
        || segments.iter().enumerate().all(|(i, s)| {
            let name = s.split(';').next().unwrap_or(s);
            (!s.is_empty() || i == last) && name != "." && name != ".."
        });
    match ok && segments_ok {
        true => Ok(path.to_owned()),
        false => Err(invalid(
            entry,
            format!(
                "{path:?} must be a normalized path: starting with '/', no dot or empty segments, no escapes of unreserved characters or slashes"
            ),
        )),
    }
}

fn rule(
    entry: &str,
    raw: RawRule,
    routes: &[RouteConfig],
    claims: &mut ClaimNames,
) -> Result<RuleConfig, ConfigErrorKind> {
    let path = match (raw.path, raw.prefix) {
        (Some(path), None) => PathMatchConfig::Exact(rule_path(&format!("{entry}.path"), &path)?),
        (None, Some(prefix)) => PathMatchConfig::Prefix(rule_path(&format!("{entry}.prefix"), &prefix)?),
        _ => return Err(invalid(entry, "needs exactly one of path = \"/exact\" or prefix = \"/below\"")),
    };
    let mut methods = Vec::with_capacity(raw.methods.len());
    for (i, method) in raw.methods.into_iter().enumerate() {
        if !is_token(&method) {
            return Err(invalid(
                &format!("{entry}.methods[{i}]"),
                format!("{method:?} is not an HTTP method"),
            ));
        }
        if methods.contains(&method) {
            return Err(invalid(&format!("{entry}.methods[{i}]"), format!("{method:?} is listed twice")));
        }
        methods.push(method);
    }
    let has_requirements = raw.scopes.is_some() || raw.roles.is_some() || raw.claims.is_some();
    let access = match raw.access.as_deref().unwrap_or("token") {
        "public" if has_requirements || raw.status.is_some() => {
            return Err(invalid(entry, "a public rule takes only path or prefix, methods and route"));
        }
        "public" => {
            let aud = raw
                .route
                .ok_or_else(|| invalid(entry, "a public rule needs route = \"AUD\": where it goes"))?;
            AccessConfig::Public { route: route_index(&format!("{entry}.route"), &aud, routes)? }
        }
        "deny" if has_requirements || raw.route.is_some() => {
            return Err(invalid(entry, "a deny rule takes only path or prefix, methods and status"));
        }
        "deny" => match raw.status.unwrap_or(403) {
            status @ (403 | 404) => AccessConfig::Deny { status },
            other => return Err(invalid(&format!("{entry}.status"), format!("{other} must be 403 or 404"))),
        },
        "token" if raw.route.is_some() || raw.status.is_some() => {
            return Err(invalid(entry, "a token rule is routed by the token's audience: no route or status"));
        }
        "token" => AccessConfig::Token(requirements(entry, raw.scopes, raw.roles, raw.claims, claims)?),
        other => {
            return Err(invalid(
                &format!("{entry}.access"),
                format!("{other:?} must be public, token or deny"),
            ));
        }
    };
    Ok(RuleConfig { methods, path, access })
}

fn route_index(entry: &str, aud: &str, routes: &[RouteConfig]) -> Result<u16, ConfigErrorKind> {
    match routes.iter().position(|r| r.aud == aud) {
        Some(index) => Ok(index as u16),
        None => Err(ConfigErrorKind::UnknownAudience { entry: entry.to_owned(), aud: aud.to_owned() }),
    }
}

fn requirements(
    entry: &str,
    scopes: Option<crate::raw::RawSet>,
    roles: Option<crate::raw::RawRoles>,
    values: Option<BTreeMap<String, toml::Value>>,
    claims: &mut ClaimNames,
) -> Result<RequirementsConfig, ConfigErrorKind> {
    let mut requirements = RequirementsConfig::default();
    if let Some(scopes) = scopes {
        for (list, which) in [(&scopes.all, "all"), (&scopes.any, "any")] {
            for (i, scope) in list.iter().enumerate() {
                // RFC 6750 section 3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
                if scope.is_empty() || !scope.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e)) {
                    let entry = format!("{entry}.scopes.{which}[{i}]");
                    return Err(invalid(
                        &entry,
                        format!("{scope:?} must be a scope token (visible ASCII, no quote or backslash)"),
                    ));
                }
            }
        }
        if scopes.all.is_empty() && scopes.any.is_empty() {
            return Err(invalid(&format!("{entry}.scopes"), "lists no scope"));
        }
        requirements.scope_attribute =
            scopes.all.iter().chain(&scopes.any).cloned().collect::<Vec<_>>().join(" ");
        requirements.scopes_all = scopes.all;
        requirements.scopes_any = scopes.any;
    }
    if let Some(roles) = roles {
        let claim_name = roles.claim.unwrap_or_else(|| "roles".into());
        let claim = claims.index(&format!("{entry}.roles.claim"), &claim_name)?;
        if roles.all.is_empty() && roles.any.is_empty() {
            return Err(invalid(&format!("{entry}.roles"), "lists no role"));
        }
        for role in roles.all.iter().chain(&roles.any) {
            if role.is_empty() || role.len() > MAX_TEXT_LEN || role.chars().any(char::is_control) {
                return Err(invalid(
                    &format!("{entry}.roles"),
                    format!("{role:?} must be 1 to 200 bytes of text"),
                ));
            }
        }
        requirements.roles = Some(RolesConfig { claim, all: roles.all, any: roles.any });
    }
    for (name, value) in values.unwrap_or_default() {
        let value_entry = format!("{entry}.claims.{name}");
        let value = match value {
            toml::Value::String(s) if s.len() <= MAX_TEXT_LEN && !s.chars().any(char::is_control) => {
                LiteralConfig::String(s)
            }
            toml::Value::Integer(n) => LiteralConfig::Integer(n),
            toml::Value::Boolean(b) => LiteralConfig::Bool(b),
            other => {
                return Err(invalid(
                    &value_entry,
                    format!(
                        "is a {}; a claim value is a string (up to 200 bytes), an integer or a boolean",
                        other.type_str()
                    ),
                ));
            }
        };
        let claim = claims.index(&value_entry, &name)?;
        requirements.claim_values.push(ClaimValueConfig { claim, value });
    }
    Ok(requirements)
}

mod cors;
mod order;

#[cfg(test)]
mod tests;
