//! Renders the gateway config as an Envoy bootstrap in which Envoy's own
//! `jwt_authn` filter does the gateway's job: the peer the gateway is measured
//! against, from the same `gateway.toml`, so that keys, issuer, leeway and
//! routes are never typed twice and cannot drift.
//!
//! The listener runs three filters, in this order:
//! 1. `header_mutation` drops every client-sent `x-gateway-*` header (Envoy
//!    drops headers spelled with `_` before any filter runs), so only Envoy
//!    can set the subject and the audience the routes match on.
//! 2. `jwt_authn` with one provider: every key as an HS256 `oct` JWK, the
//!    issuer, the route audiences, `exp` required, the leeway as clock skew,
//!    the token taken only from `Authorization: Bearer` and removed once
//!    verified, `sub` copied to `x-gateway-subject` and `aud` to
//!    `x-gateway-audience`, then the route chosen again.
//! 3. `router`: one route per audience, matching `x-gateway-audience`
//!    exactly (that header is not forwarded), and a last route that answers
//!    401 when a verified token's audience has no route of its own; one
//!    cluster per upstream host and port.
//!
//! Where Envoy answers differently from the gateway (its own reasons and
//! statuses: a disallowed audience is a 403 there; a token whose `aud` is a
//! list is refused by the last route), `deploy/envoy/README.md` says so.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

use gateway_config::{GatewayConfig, is_upstream_url};

/// The header that carries the token's subject upstream, as the gateway names it.
pub const SUBJECT_HEADER: &str = "x-gateway-subject";

/// The header Envoy copies the token's audience into, for the routes to match on.
pub const AUDIENCE_HEADER: &str = "x-gateway-audience";

/// How long Envoy may take to connect to an upstream, as `host-sim serve` allows.
const CONNECT_TIMEOUT: &str = "5s";

/// Where Envoy listens and where the routes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvoyOptions {
    /// The listener clients connect to.
    pub listen: SocketAddr,
    /// Envoy's admin interface (stats, readiness); `None` renders none.
    pub admin: Option<SocketAddr>,
    /// Audience to upstream base URL, replacing the configured upstream:
    /// tests and benchmarks point the routes at their own servers, as
    /// `host-sim serve --upstream-override AUD=URL` does.
    pub upstream_overrides: BTreeMap<String, String>,
}

/// Why the config cannot be rendered for Envoy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvoyError {
    /// An override names an audience that has no route.
    UnknownAudience {
        /// The audience named by the override.
        aud: String,
    },
    /// An override names an origin that no route forwards to.
    UnknownOrigin {
        /// The origin named by the override.
        origin: String,
    },
    /// An override's URL is not an upstream URL the config would accept.
    BadUpstream {
        /// The route's audience.
        aud: String,
        /// The URL given.
        upstream: String,
    },
    /// The peer renders one `jwt_authn` provider: a config with several
    /// issuers, or with rules, CORS or other policies, is not one it can
    /// mirror, so it refuses rather than compare two different jobs.
    NotMirrored {
        /// What the peer cannot render.
        what: &'static str,
    },
    /// An `https://` upstream: the rendered clusters speak plain HTTP, and
    /// verifying an upstream's certificate needs a CA bundle that depends on
    /// the machine, so the renderer refuses rather than connect unverified.
    TlsUpstream {
        /// The route's audience.
        aud: String,
        /// The upstream URL.
        upstream: String,
    },
    /// A `--key-origin` that is not an http(s) origin.
    BadKeyOrigin {
        /// The value given.
        origin: String,
    },
}

impl fmt::Display for EnvoyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvoyError::UnknownAudience { aud } => {
                write!(f, "upstream override for audience {aud:?}, which has no route")
            }
            EnvoyError::UnknownOrigin { origin } => {
                write!(f, "upstream override for origin {origin:?}, which no route forwards to")
            }
            EnvoyError::BadUpstream { aud, upstream } => write!(
                f,
                "upstream override for {aud:?}: {upstream:?} must be an http:// URL: host, optional port, optional path"
            ),
            EnvoyError::TlsUpstream { aud, upstream } => write!(
                f,
                "route {aud:?}: {upstream:?} is https, which the Envoy peer does not render (plain http upstreams only)"
            ),
            EnvoyError::BadKeyOrigin { origin } => {
                write!(
                    f,
                    "key origin {origin:?} must be an http:// or https:// origin: scheme, host, optional port"
                )
            }
            EnvoyError::NotMirrored { what } => {
                write!(f, "the jwt_authn peer renders one issuer and no policy; this config has {what}")
            }
        }
    }
}

impl std::error::Error for EnvoyError {}

/// A YAML value: the little an Envoy bootstrap needs. Built as a tree so
/// that tests check the structure and one writer does all the quoting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Yaml {
    /// A mapping, in the order written.
    Map(Vec<(String, Yaml)>),
    /// A sequence.
    List(Vec<Yaml>),
    /// A string, always written double-quoted.
    Str(String),
    /// An unsigned integer.
    Int(u64),
    /// A boolean.
    Bool(bool),
}

impl Yaml {
    /// The value under `key` when this is a mapping.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text when this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The items when this is a sequence (empty otherwise).
    pub fn items(&self) -> &[Yaml] {
        match self {
            Yaml::List(items) => items,
            _ => &[],
        }
    }

    /// Block-style YAML text, two spaces per level.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        self.write_block(&mut out, 0, false);
        out
    }

    /// Writes a mapping or sequence one entry per line at `indent`; with
    /// `continues_line`, the first entry goes on the current line (after `- `).
    fn write_block(&self, out: &mut String, indent: usize, continues_line: bool) {
        let pad = |out: &mut String, first: bool| {
            if !(first && continues_line) {
                out.push_str(&" ".repeat(indent));
            }
        };
        match self {
            Yaml::Map(entries) if !entries.is_empty() => {
                for (i, (key, value)) in entries.iter().enumerate() {
                    pad(out, i == 0);
                    write_key(out, key);
                    out.push(':');
                    value.write_after(out, indent + 2, false);
                }
            }
            Yaml::List(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    pad(out, i == 0);
                    out.push('-');
                    item.write_after(out, indent + 2, true);
                }
            }
            _ => {
                pad(out, true);
                self.write_inline(out);
                out.push('\n');
            }
        }
    }

    /// Writes this value after `key:` or, for a sequence item, `-`: a scalar
    /// on the same line, a mapping starting on the same line only after `-`.
    fn write_after(&self, out: &mut String, indent: usize, after_dash: bool) {
        match self {
            Yaml::Map(entries) if !entries.is_empty() && after_dash => {
                out.push(' ');
                self.write_block(out, indent, true);
            }
            Yaml::Map(entries) if !entries.is_empty() => {
                out.push('\n');
                self.write_block(out, indent, false);
            }
            Yaml::List(items) if !items.is_empty() => {
                out.push('\n');
                self.write_block(out, indent, false);
            }
            _ => {
                out.push(' ');
                self.write_inline(out);
                out.push('\n');
            }
        }
    }

    fn write_inline(&self, out: &mut String) {
        match self {
            Yaml::Map(_) => out.push_str("{}"),
            Yaml::List(_) => out.push_str("[]"),
            Yaml::Str(text) => write_quoted(out, text),
            Yaml::Int(n) => out.push_str(&n.to_string()),
            Yaml::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        }
    }
}

/// A key as written: bare when it is a plain identifier, quoted otherwise (`"@type"`).
fn write_key(out: &mut String, key: &str) {
    if !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        out.push_str(key);
    } else {
        write_quoted(out, key);
    }
}

/// A YAML double-quoted scalar: `\` and `"` escaped, control characters as `\uXXXX`.
fn write_quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

pub(crate) fn map<const N: usize>(entries: [(&str, Yaml); N]) -> Yaml {
    Yaml::Map(entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

pub(crate) fn text(value: &str) -> Yaml {
    Yaml::Str(value.to_owned())
}

pub(crate) fn typed(type_name: &str, mut fields: Yaml) -> Yaml {
    if let Yaml::Map(entries) = &mut fields {
        entries.insert(0, ("@type".to_owned(), text(&format!("type.googleapis.com/{type_name}"))));
    }
    fields
}

pub(crate) fn socket_address(address: &str, port: u16) -> Yaml {
    map([("socket_address", map([("address", text(address)), ("port_value", Yaml::Int(port.into()))]))])
}

/// An upstream base URL taken apart: where the cluster connects and the path prefix.
pub(crate) struct Upstream<'a> {
    /// `https`: the cluster speaks TLS (only key origins may; routes refuse it).
    pub(crate) tls: bool,
    /// `host[:port]` as written, for the cluster's name and the `Host` header.
    pub(crate) authority: &'a str,
    /// The host without IPv6 brackets.
    pub(crate) host: &'a str,
    pub(crate) port: u16,
    /// The base path without a trailing slash; empty for none.
    pub(crate) base_path: &'a str,
}

/// Splits an `http://` or `https://` URL that [`is_upstream_url`] accepted.
pub(crate) fn split_upstream(url: &str) -> Option<Upstream<'_>> {
    let (tls, rest) = match url.strip_prefix("https://") {
        Some(rest) => (true, rest),
        None => (false, url.strip_prefix("http://")?),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => (&authority[..i], authority[i + 1..].parse().ok()?),
        _ => (authority, if tls { 443 } else { 80 }),
    };
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    Some(Upstream { tls, authority, host, port, base_path: path.trim_end_matches('/') })
}

/// Base64url without padding, for the JWK's `k` (RFC 7518 section 6.4.1).
fn encode_base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// The JWKS Envoy verifies with: every key as an HS256 `oct` JWK.
/// Kids and key material are JSON-safe (visible ASCII without `"` or `\`,
/// and base64url), so they are written as they are.
fn jwks(config: &GatewayConfig) -> String {
    let keys: Vec<String> = config
        .hs256_keys()
        .map(|key| {
            format!(
                r#"{{"kty":"oct","alg":"HS256","kid":"{}","k":"{}"}}"#,
                key.kid,
                encode_base64url(key.secret())
            )
        })
        .collect();
    format!(r#"{{"keys":[{}]}}"#, keys.join(","))
}

fn jwt_authn_filter(config: &GatewayConfig) -> Yaml {
    let mut provider = Vec::new();
    if let Some(issuer) = config.first_iss() {
        provider.push(("issuer", text(issuer)));
    }
    provider.extend([
        ("audiences", Yaml::List(config.routes.iter().map(|r| text(&r.aud)).collect())),
        ("require_expiration", Yaml::Bool(true)),
        ("clock_skew_seconds", Yaml::Int(config.issuers.first().map_or(0, |i| i.leeway_secs))),
        (
            "from_headers",
            Yaml::List(vec![map([("name", text("Authorization")), ("value_prefix", text("Bearer "))])]),
        ),
        ("forward", Yaml::Bool(false)),
        (
            "claim_to_headers",
            Yaml::List(vec![
                map([("header_name", text(SUBJECT_HEADER)), ("claim_name", text("sub"))]),
                map([("header_name", text(AUDIENCE_HEADER)), ("claim_name", text("aud"))]),
            ]),
        ),
        ("clear_route_cache", Yaml::Bool(true)),
        ("local_jwks", map([("inline_string", text(&jwks(config)))])),
    ]);
    let provider = Yaml::Map(provider.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
    map([
        ("name", text("envoy.filters.http.jwt_authn")),
        (
            "typed_config",
            typed(
                "envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication",
                map([
                    ("providers", map([("gateway", provider)])),
                    (
                        "rules",
                        Yaml::List(vec![map([
                            ("match", map([("prefix", text("/"))])),
                            ("requires", map([("provider_name", text("gateway"))])),
                        ])]),
                    ),
                ]),
            ),
        ),
    ])
}

fn header_mutation_filter() -> Yaml {
    let remove = map([("remove_on_match", map([("key_matcher", map([("prefix", text("x-gateway-"))]))]))]);
    map([
        ("name", text("envoy.filters.http.header_mutation")),
        (
            "typed_config",
            typed(
                "envoy.extensions.filters.http.header_mutation.v3.HeaderMutation",
                map([("mutations", map([("request_mutations", Yaml::List(vec![remove]))]))]),
            ),
        ),
    ])
}

pub(crate) fn router_filter() -> Yaml {
    map([
        ("name", text("envoy.filters.http.router")),
        (
            "typed_config",
            // No x-envoy-* headers upstream: the gateway adds none either.
            typed(
                "envoy.extensions.filters.http.router.v3.Router",
                map([("suppress_envoy_headers", Yaml::Bool(true))]),
            ),
        ),
    ])
}

/// The answer for a verified token whose audience has no route of its own,
/// in the gateway's words.
fn no_route(realm: &str) -> Yaml {
    let header =
        |key: &str, value: &str| map([("header", map([("key", text(key)), ("value", text(value))]))]);
    map([
        ("match", map([("prefix", text("/"))])),
        (
            "direct_response",
            map([
                ("status", Yaml::Int(401)),
                (
                    "body",
                    map([(
                        "inline_string",
                        text(r#"{"error":"invalid_token","error_description":"no route for audience"}"#),
                    )]),
                ),
            ]),
        ),
        (
            "response_headers_to_add",
            Yaml::List(vec![
                header("www-authenticate", &format!(r#"Bearer realm="{realm}", error="invalid_token""#)),
                header("content-type", "application/json"),
            ]),
        ),
    ])
}

fn http_connection_manager(config: &GatewayConfig, routes: Vec<Yaml>) -> Yaml {
    connection_manager(
        vec![
            // The gateway's path rules: dot segments resolved, encoded slashes refused.
            ("normalize_path", Yaml::Bool(true)),
            ("path_with_escaped_slashes_action", text("REJECT_REQUEST")),
            // `x_gateway_subject` must not slip past the x-gateway- prefix.
            ("common_http_protocol_options", map([("headers_with_underscores_action", text("DROP_HEADER"))])),
        ],
        vec![header_mutation_filter(), jwt_authn_filter(config), router_filter()],
        &[AUDIENCE_HEADER],
        routes,
    )
}

/// An HTTP connection manager with `settings`, `filters`, and one virtual
/// host for every domain holding `routes` and removing `headers_to_remove`
/// from forwarded requests. It never generates an `x-request-id`: the
/// gateway generates none.
pub(crate) fn connection_manager(
    settings: Vec<(&str, Yaml)>,
    filters: Vec<Yaml>,
    headers_to_remove: &[&str],
    routes: Vec<Yaml>,
) -> Yaml {
    let mut fields = vec![("stat_prefix", text("gateway")), ("codec_type", text("AUTO"))];
    fields.extend(settings);
    fields.extend([
        ("generate_request_id", Yaml::Bool(false)),
        ("http_filters", Yaml::List(filters)),
        (
            "route_config",
            map([
                ("name", text("gateway")),
                (
                    "virtual_hosts",
                    Yaml::List(vec![map([
                        ("name", text("gateway")),
                        ("domains", Yaml::List(vec![text("*")])),
                        (
                            "request_headers_to_remove",
                            Yaml::List(headers_to_remove.iter().map(|h| text(h)).collect()),
                        ),
                        ("routes", Yaml::List(routes)),
                    ])]),
                ),
            ]),
        ),
    ]);
    map([
        ("name", text("envoy.filters.network.http_connection_manager")),
        (
            "typed_config",
            typed(
                "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                Yaml::Map(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
            ),
        ),
    ])
}

/// A route for requests whose `header` is exactly `value`, with `action`.
pub(crate) fn header_route(header: &str, value: &str, action: Yaml) -> Yaml {
    map([
        (
            "match",
            map([
                ("prefix", text("/")),
                (
                    "headers",
                    Yaml::List(vec![map([
                        ("name", text(header)),
                        ("string_match", map([("exact", text(value))])),
                    ])]),
                ),
            ]),
        ),
        ("route", action),
    ])
}

/// Adds the cluster for `upstream` unless one of that name is there already.
pub(crate) fn add_cluster(clusters: &mut Vec<Yaml>, upstream: &Upstream<'_>) {
    if clusters.iter().all(|c| c.get("name").and_then(Yaml::as_str) != Some(upstream.authority)) {
        clusters.push(cluster(upstream));
    }
}

/// The bootstrap: an admin interface when asked for, one listener on
/// `listen` running `connection_manager`, and `clusters`.
pub(crate) fn bootstrap(
    listen: SocketAddr,
    admin: Option<SocketAddr>,
    connection_manager: Yaml,
    clusters: Vec<Yaml>,
) -> Yaml {
    let listener = map([
        ("name", text("gateway")),
        ("address", socket_address(&listen.ip().to_string(), listen.port())),
        ("filter_chains", Yaml::List(vec![map([("filters", Yaml::List(vec![connection_manager]))])])),
    ]);
    let mut bootstrap = Vec::new();
    if let Some(admin) = admin {
        bootstrap.push((
            "admin".to_owned(),
            map([("address", socket_address(&admin.ip().to_string(), admin.port()))]),
        ));
    }
    bootstrap.push((
        "static_resources".to_owned(),
        map([("listeners", Yaml::List(vec![listener])), ("clusters", Yaml::List(clusters))]),
    ));
    Yaml::Map(bootstrap)
}

pub(crate) fn cluster(upstream: &Upstream<'_>) -> Yaml {
    named_cluster(upstream.authority, upstream.host, upstream.port)
}

/// A cluster `name` with the one endpoint `host:port` (`host` without IPv6
/// brackets), plain HTTP.
pub(crate) fn named_cluster(name: &str, host: &str, port: u16) -> Yaml {
    // An IP address needs no resolver; a name is looked up as Envoy does for one host.
    let kind = if host.parse::<IpAddr>().is_ok() { "STATIC" } else { "LOGICAL_DNS" };
    map([
        ("name", text(name)),
        ("type", text(kind)),
        ("connect_timeout", text(CONNECT_TIMEOUT)),
        (
            "load_assignment",
            map([
                ("cluster_name", text(name)),
                (
                    "endpoints",
                    Yaml::List(vec![map([(
                        "lb_endpoints",
                        Yaml::List(vec![map([("endpoint", map([("address", socket_address(host, port))]))])]),
                    )])]),
                ),
            ]),
        ),
    ])
}

/// The Envoy bootstrap for `config` with `options`, as a tree.
pub fn jwt_authn_bootstrap(config: &GatewayConfig, options: &EnvoyOptions) -> Result<Yaml, EnvoyError> {
    if config.issuers.len() > 1 {
        return Err(EnvoyError::NotMirrored { what: "several issuers" });
    }
    if config.policy != gateway_config::PolicyConfig::default() {
        return Err(EnvoyError::NotMirrored {
            what: "policies (rules, CORS, token sources or claim headers)",
        });
    }
    if let Some(aud) =
        options.upstream_overrides.keys().find(|aud| config.routes.iter().all(|r| &r.aud != *aud))
    {
        return Err(EnvoyError::UnknownAudience { aud: aud.clone() });
    }
    let mut routes = Vec::with_capacity(config.routes.len() + 1);
    let mut clusters: Vec<Yaml> = Vec::new();
    for route in &config.routes {
        let (url, overridden) = match options.upstream_overrides.get(&route.aud) {
            Some(url) => (url.trim_end_matches('/'), true),
            None => (route.upstream.as_str(), false),
        };
        let bad = || EnvoyError::BadUpstream { aud: route.aud.clone(), upstream: url.to_owned() };
        // The configured upstreams passed this check when the config was read.
        if overridden && !is_upstream_url(url) {
            return Err(bad());
        }
        if url.starts_with("https://") {
            return Err(EnvoyError::TlsUpstream { aud: route.aud.clone(), upstream: url.to_owned() });
        }
        let upstream = split_upstream(url).ok_or_else(bad)?;
        let mut action = vec![
            ("cluster".to_owned(), text(upstream.authority)),
            // The Host the upstream sees is its own, as the gateway sends it.
            ("host_rewrite_literal".to_owned(), text(upstream.authority)),
        ];
        if !upstream.base_path.is_empty() {
            action.push(("prefix_rewrite".to_owned(), text(&format!("{}/", upstream.base_path))));
        }
        routes.push(header_route(AUDIENCE_HEADER, &route.aud, Yaml::Map(action)));
        add_cluster(&mut clusters, &upstream);
    }
    routes.push(no_route(&config.realm));
    Ok(bootstrap(options.listen, options.admin, http_connection_manager(config, routes), clusters))
}

/// The Envoy bootstrap (YAML) in which Envoy's native `jwt_authn` filter
/// does `config`'s job; see the module's docs. The text carries the signing
/// keys: keep it as private as they are.
pub fn to_yaml(config: &GatewayConfig, options: &EnvoyOptions) -> Result<String, EnvoyError> {
    let mut out = String::from(
        "# Generated from the gateway config by `envoy-jwt-authn`. Do not edit.\n\
         # Envoy's native jwt_authn filter doing the gateway's job (deploy/envoy/README.md).\n\
         # It carries the signing keys: keep it as private as they are.\n",
    );
    out.push_str(&jwt_authn_bootstrap(config, options)?.to_yaml());
    Ok(out)
}

/// Test helpers: paths into a rendered tree.
#[cfg(test)]
pub(crate) mod tree {
    use super::Yaml;

    /// Where the connection manager's settings are in a rendered bootstrap.
    pub(crate) const HCM: &str = "static_resources.listeners.0.filter_chains.0.filters.0.typed_config";

    /// Follows `path` (`key` or list index, dot-separated) from `root`.
    pub(crate) fn at<'a>(root: &'a Yaml, path: &str) -> &'a Yaml {
        path.split('.').fold(root, |node, step| match step.parse::<usize>() {
            Ok(i) => node.items().get(i).unwrap_or_else(|| panic!("no item {i} at {path}")),
            Err(_) => node.get(step).unwrap_or_else(|| panic!("no {step:?} at {path}")),
        })
    }

    /// The string at `path`.
    pub(crate) fn str_at<'a>(root: &'a Yaml, path: &str) -> &'a str {
        at(root, path).as_str().unwrap_or_else(|| panic!("{path} is not a string"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_config::{decode_base64url, parse};
    use std::path::Path;

    const KEY: &str = "0123456789abcdef0123456789abcdef";

    fn config(routes: &str) -> GatewayConfig {
        let text = format!(
            "issuer = \"https://issuer.test\"\nleeway_secs = 7\n[[keys]]\nkid = \"k1\"\ndemo = \"{KEY}\"\n{routes}"
        );
        parse(&text, Path::new("test.toml"), &|_| None).expect("valid config")
    }

    fn two_routes() -> GatewayConfig {
        config(
            "[[routes]]\naud = \"orders\"\nupstream = \"http://127.0.0.1:9101\"\n\
             [[routes]]\naud = \"billing\"\nupstream = \"http://billing.internal/v1/\"\n\
             [[routes]]\naud = \"users\"\nupstream = \"http://127.0.0.1:9101/users\"\n",
        )
    }

    fn options() -> EnvoyOptions {
        EnvoyOptions {
            listen: "127.0.0.1:10000".parse().expect("address"),
            admin: None,
            upstream_overrides: BTreeMap::new(),
        }
    }

    use super::tree::{HCM, at, str_at};

    #[test]
    fn the_provider_holds_the_key_issuer_audiences_and_leeway() {
        let tree = jwt_authn_bootstrap(&two_routes(), &options()).expect("renders");
        let filters = at(&tree, &format!("{HCM}.http_filters"));
        let names: Vec<&str> = filters.items().iter().map(|f| str_at(f, "name")).collect();
        assert_eq!(
            names,
            [
                "envoy.filters.http.header_mutation",
                "envoy.filters.http.jwt_authn",
                "envoy.filters.http.router"
            ]
        );
        let provider = at(filters, "1.typed_config.providers.gateway");
        assert_eq!(str_at(provider, "issuer"), "https://issuer.test");
        let audiences: Vec<&str> =
            at(provider, "audiences").items().iter().filter_map(Yaml::as_str).collect();
        assert_eq!(audiences, ["billing", "orders", "users"]);
        assert_eq!(at(provider, "clock_skew_seconds"), &Yaml::Int(7));
        assert_eq!(at(provider, "forward"), &Yaml::Bool(false));
        assert_eq!(at(provider, "require_expiration"), &Yaml::Bool(true));
        assert_eq!(str_at(provider, "from_headers.0.value_prefix"), "Bearer ");
        assert_eq!(str_at(provider, "claim_to_headers.0.claim_name"), "sub");
        assert_eq!(str_at(provider, "claim_to_headers.0.header_name"), SUBJECT_HEADER);
        assert_eq!(str_at(provider, "claim_to_headers.1.claim_name"), "aud");

        let jwks = str_at(provider, "local_jwks.inline_string");
        let k = jwks.split(r#""k":""#).nth(1).and_then(|rest| rest.split('"').next()).expect("k in JWKS");
        assert_eq!(decode_base64url(k).as_deref(), Some(KEY.as_bytes()));
        assert!(jwks.starts_with(r#"{"keys":[{"kty":"oct","alg":"HS256","kid":"k1","#), "{jwks}");
    }

    #[test]
    fn routes_choose_a_cluster_by_audience_and_keep_the_base_path() {
        let tree = jwt_authn_bootstrap(&two_routes(), &options()).expect("renders");
        let routes = at(&tree, &format!("{HCM}.route_config.virtual_hosts.0.routes"));
        assert_eq!(routes.items().len(), 4, "one per audience and the no-route answer");
        let billing = &routes.items()[0];
        assert_eq!(str_at(billing, "match.headers.0.name"), AUDIENCE_HEADER);
        assert_eq!(str_at(billing, "match.headers.0.string_match.exact"), "billing");
        assert_eq!(str_at(billing, "route.cluster"), "billing.internal");
        assert_eq!(str_at(billing, "route.prefix_rewrite"), "/v1/");
        assert_eq!(str_at(&routes.items()[1], "route.host_rewrite_literal"), "127.0.0.1:9101");
        assert!(routes.items()[1].get("route").and_then(|r| r.get("prefix_rewrite")).is_none());
        assert_eq!(str_at(&routes.items()[2], "route.prefix_rewrite"), "/users/");
        assert_eq!(at(&routes.items()[3], "direct_response.status"), &Yaml::Int(401));

        let clusters = at(&tree, "static_resources.clusters").items();
        let names: Vec<&str> = clusters.iter().map(|c| str_at(c, "name")).collect();
        assert_eq!(names, ["billing.internal", "127.0.0.1:9101"], "one cluster per host and port");
        assert_eq!(str_at(&clusters[0], "type"), "LOGICAL_DNS");
        assert_eq!(
            at(
                &clusters[0],
                "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address.socket_address.port_value"
            ),
            &Yaml::Int(80)
        );
        assert_eq!(str_at(&clusters[1], "type"), "STATIC");
        assert!(tree.get("admin").is_none());
    }

    #[test]
    fn overrides_point_routes_elsewhere_and_are_checked() {
        let mut options = options();
        options.admin = Some("127.0.0.1:9901".parse().expect("address"));
        options.upstream_overrides.insert("orders".into(), "http://[::1]:7000/".into());
        let tree = jwt_authn_bootstrap(&two_routes(), &options).expect("renders");
        let orders = at(&tree, &format!("{HCM}.route_config.virtual_hosts.0.routes.1"));
        assert_eq!(str_at(orders, "route.cluster"), "[::1]:7000");
        let cluster = &at(&tree, "static_resources.clusters").items()[1];
        assert_eq!(
            str_at(
                cluster,
                "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address.socket_address.address"
            ),
            "::1"
        );
        assert_eq!(at(&tree, "admin.address.socket_address.port_value"), &Yaml::Int(9901));

        let refuse = |aud: &str, url: &str| {
            let mut options = self::options();
            options.upstream_overrides.insert(aud.into(), url.into());
            jwt_authn_bootstrap(&two_routes(), &options).expect_err("refused")
        };
        assert_eq!(refuse("nobody", "http://h"), EnvoyError::UnknownAudience { aud: "nobody".into() });
        assert!(matches!(refuse("orders", "ftp://h"), EnvoyError::BadUpstream { .. }));
        assert!(matches!(refuse("orders", "http://u@h"), EnvoyError::BadUpstream { .. }));
        assert!(matches!(refuse("orders", "https://h"), EnvoyError::TlsUpstream { .. }));
        let tls = config("[[routes]]\naud = \"a\"\nupstream = \"https://h\"\n");
        assert!(matches!(jwt_authn_bootstrap(&tls, &self::options()), Err(EnvoyError::TlsUpstream { .. })));
    }

    #[test]
    fn writes_block_yaml_with_every_string_quoted() {
        let tree = map([
            ("@type", text("a\"b\\c\n")),
            ("list", Yaml::List(vec![map([("x", Yaml::Int(1)), ("y", Yaml::Bool(false))]), text("z")])),
            ("empty", Yaml::List(vec![])),
            ("nested", map([("deep", map([("n", Yaml::Int(2))]))])),
        ]);
        assert_eq!(
            tree.to_yaml(),
            "\"@type\": \"a\\\"b\\\\c\\u000a\"\n\
             list:\n  - x: 1\n    y: false\n  - \"z\"\nempty: []\nnested:\n  deep:\n    n: 2\n"
        );
    }

    #[test]
    fn base64url_round_trips() {
        for n in 0..70 {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            let encoded = encode_base64url(&bytes);
            assert!(!encoded.contains('='));
            assert_eq!(decode_base64url(&encoded), Some(bytes));
        }
        assert_eq!(encode_base64url(b"\xfb\xff"), "-_8");
    }

    #[test]
    fn the_text_says_it_is_generated_and_private() {
        let yaml = to_yaml(&two_routes(), &options()).expect("renders");
        assert!(yaml.starts_with("# Generated from the gateway config"));
        assert!(yaml.contains("keep it as private"));
        assert!(yaml.contains(
            "\"@type\": \"type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication\""
        ));
    }
}
