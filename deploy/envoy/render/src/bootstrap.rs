//! The pieces every rendered Envoy bootstrap shares: the options, the
//! errors, upstream URLs taken apart, clusters, the connection manager, the
//! router and the listener. The product ([`crate::filter`]) and the peer
//! ([`crate::jwt_authn`]) are both put together from these.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

use crate::yaml::{Yaml, map, text, typed};

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
    /// `--global-ratelimit` is not `HOST:PORT`.
    BadRatelimitService {
        /// The address given.
        address: String,
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
    /// `--native` names a file Envoy cannot open by name: not `lib<name>.so`.
    BadNativeModule {
        /// The path given.
        path: String,
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
            EnvoyError::BadRatelimitService { address } => {
                write!(f, "--global-ratelimit {address:?}: expected HOST:PORT")
            }
            EnvoyError::BadNativeModule { path } => {
                write!(f, "--native {path:?}: Envoy opens a dynamic module as lib<name>.so")
            }
            EnvoyError::NotMirrored { what } => {
                write!(f, "the jwt_authn peer renders one issuer and no policy; this config has {what}")
            }
        }
    }
}

impl std::error::Error for EnvoyError {}

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

/// The settings of a connection manager that faces clients directly, as
/// Envoy's "Configuring Envoy as an edge proxy" sets them: the peer is the
/// connection's, never a client's `X-Forwarded-For`, and no client is
/// internal, so Envoy strips every client's `x-envoy-*` headers and adds no
/// `x-envoy-internal`. (An empty list of ranges would mean Envoy's default,
/// private ranges and loopback, so the one range is 0.0.0.0/32, never a
/// peer.) The gateway's listener and its `jwt_authn` peer both carry them.
pub(crate) fn edge_settings() -> [(&'static str, Yaml); 2] {
    let internal_ranges = map([("address_prefix", text("0.0.0.0")), ("prefix_len", Yaml::Int(32))]);
    [
        ("use_remote_address", Yaml::Bool(true)),
        ("internal_address_config", map([("cidr_ranges", Yaml::List(vec![internal_ranges]))])),
    ]
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
