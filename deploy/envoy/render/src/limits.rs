//! The config's rate limits as Envoy counts them (`worker/ABI.md`, "Rate
//! limits"). The gateway filter sets, on a forward, one request field per
//! bucket, `x-gateway-limit-<limit index>: <bucket key>`
//! (`deploy/envoy/filter/src/limits.rs`); each limit gets a rate limit
//! filter of its own after the gateway filter, which makes the descriptor
//! `(<limit name>, <key>)` from that field and counts it:
//!
//! - by default Envoy's `envoy.filters.http.local_ratelimit`, in process:
//!   one descriptor whose value is empty, so that each distinct key gets a
//!   token bucket of its own (a dynamic descriptor, at most
//!   [`FilterOptions::limit_buckets`](crate::filter::FilterOptions) of
//!   them per limit, the least recently used forgotten first);
//! - with `--global-ratelimit HOST:PORT`, `envoy.filters.http.ratelimit`
//!   asking envoyproxy/ratelimit at that address (gRPC), whose config
//!   [`ratelimit_service_config`] renders.
//!
//! One filter per limit, not one for all: a refusal then says which limit
//! refused ([`LIMITED_MARKER`], the limit's index), which the gateway filter
//! needs to ask the core for that bucket's 429. The rate limits are the
//! filters' own (`rate_limits` in the filter's config), not the route's.
//!
//! The token bucket: `max_tokens` = `burst`, `tokens_per_fill` =
//! `requests`, `fill_interval` = `per_secs`. Envoy refills continuously at
//! `tokens_per_fill / fill_interval` tokens a second, starting full, which
//! is GCRA's rule (a request passes when a whole token is there); GCRA
//! rounds one request's interval up to a microsecond, Envoy keeps the rate
//! as a double.

use gateway_config::GatewayConfig;

use crate::bootstrap::{EnvoyError, named_cluster};
use crate::yaml::{Yaml, map, text, typed};

/// The start of the request field that carries a bucket's key (the gateway
/// filter's `limits::LIMIT_HEADER_PREFIX`).
pub const LIMIT_HEADER_PREFIX: &str = "x-gateway-limit-";

/// The response field a limit's filter adds to its refusal, valued with the
/// limit's index (the gateway filter's `limits::LIMITED_MARKER`).
pub const LIMITED_MARKER: &str = "x-gateway-limited";

/// Dynamic descriptors (distinct keys) each limit's `local_ratelimit`
/// keeps by default; Envoy's own default is 20.
pub const DEFAULT_LIMIT_BUCKETS: u32 = 100_000;

/// The domain the rendered envoyproxy/ratelimit config and filters share.
pub const RATELIMIT_DOMAIN: &str = "gateway";

/// The cluster of envoyproxy/ratelimit's gRPC service.
pub const RATELIMIT_CLUSTER: &str = "gateway_ratelimit";

/// A limit as the rendered filters need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitSpec {
    /// Its name: the descriptor's key, and its filter's stats.
    pub name: String,
    /// Requests per `per_secs`, on average.
    pub requests: u32,
    /// The period, in seconds.
    pub per_secs: u32,
    /// At most this many at once.
    pub burst: u32,
}

/// The config's limits, in index order.
pub fn specs(config: &GatewayConfig) -> Vec<LimitSpec> {
    config
        .policy
        .limits
        .table
        .iter()
        .map(|l| LimitSpec {
            name: l.name.clone(),
            requests: l.requests,
            per_secs: l.per_secs,
            burst: l.burst,
        })
        .collect()
}

/// The request field of limit `index`'s bucket.
pub fn limit_header(index: usize) -> String {
    format!("{LIMIT_HEADER_PREFIX}{index}")
}

/// Every limit's request field: the route table removes them before a
/// request leaves Envoy.
pub fn limit_headers(limits: &[LimitSpec]) -> Vec<String> {
    (0..limits.len()).map(limit_header).collect()
}

/// The rate limit that makes limit `index`'s descriptor from its field; a
/// request without the field (no bucket of this limit) makes none and is
/// not counted.
fn rate_limits(index: usize, limit: &LimitSpec) -> Yaml {
    let action = map([(
        "request_headers",
        map([
            ("header_name", text(&limit_header(index))),
            ("descriptor_key", text(&limit.name)),
            ("skip_if_absent", Yaml::Bool(true)),
        ]),
    )]);
    Yaml::List(vec![map([("actions", Yaml::List(vec![action]))])])
}

/// [`LIMITED_MARKER`] on the filter's refusal.
fn marker(index: usize) -> Yaml {
    Yaml::List(vec![map([
        ("header", map([("key", text(LIMITED_MARKER)), ("value", text(&index.to_string()))])),
        ("append_action", text("OVERWRITE_IF_EXISTS_OR_ADD")),
    ])])
}

/// A runtime fraction of 100%, which `runtime_key` can turn down.
fn all_requests(runtime_key: &str) -> Yaml {
    map([
        ("default_value", map([("numerator", Yaml::Int(100)), ("denominator", text("HUNDRED"))])),
        ("runtime_key", text(runtime_key)),
    ])
}

/// The token bucket of one key of `limit`.
pub fn token_bucket(limit: &LimitSpec) -> Yaml {
    map([
        ("max_tokens", Yaml::Int(limit.burst.into())),
        ("tokens_per_fill", Yaml::Int(limit.requests.into())),
        ("fill_interval", text(&format!("{}s", limit.per_secs))),
    ])
}

/// Limit `index`'s `local_ratelimit`: a token bucket per distinct key, at
/// most `buckets` keys; stats under `gateway_limit_<name>.http_local_rate_limit`.
pub fn local_ratelimit_filter(index: usize, limit: &LimitSpec, buckets: u32) -> Yaml {
    let descriptor = map([
        // An empty value: a bucket per distinct value.
        ("entries", Yaml::List(vec![map([("key", text(&limit.name)), ("value", text(""))])])),
        ("token_bucket", token_bucket(limit)),
    ]);
    let config = map([
        ("stat_prefix", text(&format!("gateway_limit_{}", limit.name))),
        ("filter_enabled", all_requests(&format!("gateway.limits.{}.enabled", limit.name))),
        ("filter_enforced", all_requests(&format!("gateway.limits.{}.enforced", limit.name))),
        ("response_headers_to_add", marker(index)),
        ("rate_limits", rate_limits(index, limit)),
        ("descriptors", Yaml::List(vec![descriptor])),
        ("max_dynamic_descriptors", Yaml::Int(buckets.into())),
    ]);
    map([
        ("name", text(&format!("gateway.limit.{}", limit.name))),
        ("typed_config", typed("envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit", config)),
    ])
}

/// Limit `index`'s `ratelimit` filter, asking envoyproxy/ratelimit
/// ([`RATELIMIT_CLUSTER`]) about its descriptor. An unreachable service lets
/// requests through (Envoy's default, `failure_mode_deny: false`).
pub fn global_ratelimit_filter(index: usize, limit: &LimitSpec) -> Yaml {
    let service = map([
        ("grpc_service", map([("envoy_grpc", map([("cluster_name", text(RATELIMIT_CLUSTER))]))])),
        ("transport_api_version", text("V3")),
    ]);
    let config = map([
        ("domain", text(RATELIMIT_DOMAIN)),
        ("stat_prefix", text(&format!("gateway_limit_{}", limit.name))),
        ("failure_mode_deny", Yaml::Bool(false)),
        ("rate_limit_service", service),
        ("response_headers_to_add", marker(index)),
        ("rate_limits", rate_limits(index, limit)),
    ]);
    map([
        ("name", text(&format!("gateway.limit.{}", limit.name))),
        ("typed_config", typed("envoy.extensions.filters.http.ratelimit.v3.RateLimit", config)),
    ])
}

/// The cluster of envoyproxy/ratelimit at `host:port`: gRPC, so HTTP/2.
pub fn ratelimit_cluster(host: &str, port: u16) -> Yaml {
    let mut cluster = named_cluster(RATELIMIT_CLUSTER, host, port);
    let http2 = typed(
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
        map([("explicit_http_config", map([("http2_protocol_options", map([]))]))]),
    );
    if let Yaml::Map(entries) = &mut cluster {
        entries.push((
            "typed_extension_protocol_options".to_owned(),
            map([("envoy.extensions.upstreams.http.v3.HttpProtocolOptions", http2)]),
        ));
    }
    cluster
}

/// `HOST:PORT` of `--global-ratelimit` taken apart (a host name, an IPv4
/// address, or an IPv6 address in brackets).
pub fn split_host_port(text: &str) -> Result<(String, u16), EnvoyError> {
    let bad = || EnvoyError::BadRatelimitService { address: text.to_owned() };
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().ok().filter(|&p| p != 0).ok_or_else(bad)?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let fine = |b: u8| b.is_ascii_alphanumeric() || b"-.:".contains(&b);
    if host.is_empty() || !host.bytes().all(fine) {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

/// envoyproxy/ratelimit's units, longest first, in seconds.
const UNITS: [(&str, u32); 4] = [("day", 86_400), ("hour", 3_600), ("minute", 60), ("second", 1)];

/// A limit as envoyproxy/ratelimit counts it: a fixed window of one unit
/// and the requests it allows. Exact when `per_secs` is a unit; otherwise
/// the longest unit within the period, with the requests scaled down to it
/// (at least 1). `exact` says which.
pub fn service_rate(limit: &LimitSpec) -> (&'static str, u32, bool) {
    let (unit, secs) =
        UNITS.iter().copied().find(|&(_, secs)| secs <= limit.per_secs).unwrap_or(("second", 1));
    let scaled = u64::from(limit.requests) * u64::from(secs) / u64::from(limit.per_secs);
    let requests = u32::try_from(scaled).unwrap_or(u32::MAX).max(1);
    (unit, requests, secs == limit.per_secs)
}

/// envoyproxy/ratelimit's config (YAML) for `limits`: the domain, and per
/// limit a descriptor key without a value, which counts each distinct value
/// (bucket key) apart.
pub fn ratelimit_service_config(limits: &[LimitSpec]) -> String {
    let mut out = String::from(
        "# Generated from the gateway config by `envoy-filter --ratelimit-config`. Do not edit.\n\
         # envoyproxy/ratelimit's config for the gateway's limits (deploy/envoy/README.md):\n\
         # fixed windows of one unit, no burst beyond the window's requests.\n",
    );
    let descriptors = limits
        .iter()
        .map(|limit| {
            let (unit, requests, _) = service_rate(limit);
            map([
                ("key", text(&limit.name)),
                (
                    "rate_limit",
                    map([("unit", text(unit)), ("requests_per_unit", Yaml::Int(requests.into()))]),
                ),
            ])
        })
        .collect();
    for limit in limits {
        let (unit, requests, exact) = service_rate(limit);
        if !exact {
            out.push_str(&format!(
                "# {}: {} per {} s, counted as {requests} per {unit}\n",
                limit.name, limit.requests, limit.per_secs
            ));
        }
    }
    let tree = map([("domain", text(RATELIMIT_DOMAIN)), ("descriptors", Yaml::List(descriptors))]);
    out.push_str(&tree.to_yaml());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::tree::{at, str_at};

    fn limit(name: &str, requests: u32, per_secs: u32, burst: u32) -> LimitSpec {
        LimitSpec { name: name.to_owned(), requests, per_secs, burst }
    }

    #[test]
    fn a_local_bucket_per_key_with_the_limits_numbers() {
        let filter = local_ratelimit_filter(2, &limit("per-tenant", 5, 60, 2), 500);
        assert_eq!(str_at(&filter, "name"), "gateway.limit.per-tenant");
        let config = at(&filter, "typed_config");
        let action = at(config, "rate_limits.0.actions.0.request_headers");
        assert_eq!(str_at(action, "header_name"), "x-gateway-limit-2");
        assert_eq!(str_at(action, "descriptor_key"), "per-tenant");
        assert_eq!(at(action, "skip_if_absent"), &Yaml::Bool(true));
        let descriptor = at(config, "descriptors.0");
        assert_eq!(str_at(descriptor, "entries.0.key"), "per-tenant");
        assert_eq!(str_at(descriptor, "entries.0.value"), "", "a bucket per distinct key");
        assert_eq!(at(descriptor, "token_bucket.max_tokens"), &Yaml::Int(2));
        assert_eq!(at(descriptor, "token_bucket.tokens_per_fill"), &Yaml::Int(5));
        assert_eq!(str_at(descriptor, "token_bucket.fill_interval"), "60s");
        assert_eq!(at(config, "max_dynamic_descriptors"), &Yaml::Int(500));
        assert_eq!(str_at(config, "response_headers_to_add.0.header.key"), LIMITED_MARKER);
        assert_eq!(str_at(config, "response_headers_to_add.0.header.value"), "2");
        assert!(
            config.get("token_bucket").is_none(),
            "no default bucket: a request without the field passes"
        );
        assert!(config.get("enable_x_ratelimit_headers").is_none(), "Envoy's x-ratelimit-* fields stay off");
    }

    #[test]
    fn the_service_counts_fixed_windows() {
        assert_eq!(service_rate(&limit("a", 3, 60, 3)), ("minute", 3, true));
        assert_eq!(service_rate(&limit("a", 4, 3600, 4)), ("hour", 4, true));
        assert_eq!(service_rate(&limit("a", 10, 120, 10)), ("minute", 5, false));
        assert_eq!(service_rate(&limit("a", 1, 7200, 1)), ("hour", 1, false));
        let yaml = ratelimit_service_config(&[limit("per-user", 3, 60, 3), limit("slow", 10, 120, 2)]);
        assert!(yaml.contains("domain: \"gateway\""), "{yaml}");
        assert!(yaml.contains("key: \"per-user\""), "{yaml}");
        assert!(yaml.contains("# slow: 10 per 120 s, counted as 5 per minute"), "{yaml}");
    }

    #[test]
    fn the_service_address_is_host_and_port() {
        assert_eq!(split_host_port("ratelimit:8081").ok(), Some(("ratelimit".to_owned(), 8081)));
        assert_eq!(split_host_port("[::1]:8081").ok(), Some(("::1".to_owned(), 8081)));
        for bad in ["ratelimit", "h:0", ":80", "h/x:80", "h:port"] {
            assert!(split_host_port(bad).is_err(), "{bad}");
        }
    }
}
