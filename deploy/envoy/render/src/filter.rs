//! Renders the Envoy bootstrap that runs the gateway itself inside Envoy:
//! the proxy-wasm filter `dist/gateway-envoy.wasm` (deploy/envoy/filter),
//! which carries the same compiled-in config as `dist/gateway.wasm`, and the
//! route table and clusters for the origins that config forwards to, so
//! that the clusters cannot drift from the routes.
//!
//! The filter decides every request and, for a forward, sets the path, the
//! fields, and `x-gateway-upstream: <origin>`. The routes here match that
//! header exactly, one route and one cluster per origin, and remove it
//! before the request leaves; a request that reaches the router without a
//! known origin (which the filter never lets happen) gets the 500 every
//! host answers for a module failure. Envoy itself is told to add nothing:
//! no `x-request-id`, no `x-envoy-*` headers, no `X-Forwarded-For` append,
//! and the client address is the connection's, never a header's.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::bootstrap::{
    EnvoyError, add_cluster, bootstrap, connection_manager, edge_settings, header_route, router_filter,
    split_upstream,
};
use crate::yaml::{Yaml, map, text, typed};
use gateway_config::{GatewayConfig, is_upstream_url};

/// The request header the filter sets to the forward's origin for the routes to match.
pub use contract::fields::UPSTREAM as UPSTREAM_HEADER;

/// The body every host answers a module failure with (`worker/ABI.md`).
const MODULE_FAILED_BODY: &str = contract::fields::HostAnswer::ModuleFailed.body();

/// The body every host answers an upstream failure with (`worker/ABI.md`).
const UPSTREAM_UNAVAILABLE_BODY: &str = contract::fields::HostAnswer::UpstreamUnavailable.body();

/// Envoy's response flags for an upstream that refused, reset or timed out
/// (or has no healthy host): answered 502 as every host does.
const UPSTREAM_FAILURE_FLAGS: [&str; 6] = ["UF", "UH", "UC", "UR", "UT", "URX"];

/// Where Envoy listens, where the filter is, and where the origins are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterOptions {
    /// The listener clients connect to.
    pub listen: SocketAddr,
    /// Envoy's admin interface; `None` renders none.
    pub admin: Option<SocketAddr>,
    /// The filter module, as Envoy opens it (relative to Envoy's working directory).
    pub module: PathBuf,
    /// An origin (or an audience, meaning its route's origin) to the origin
    /// to connect to instead, as `host-sim serve --upstream-override` takes
    /// them: tests point the clusters at their own servers. The filter's
    /// decision is unchanged; only the cluster's address and `Host` move.
    /// A key source's origin moves the same way.
    pub upstream_overrides: BTreeMap<String, String>,
    /// Origins to render a key cluster for beside the config's key sources
    /// (`--key-origin`): a `jwks_uri` on another origin than its issuer's.
    pub key_origins: Vec<String>,
    /// The CA bundle `https` key clusters verify providers with.
    pub ca_bundle: String,
    /// How many keys (dynamic descriptors) each limit's `local_ratelimit`
    /// keeps a bucket for (`--limit-buckets`).
    pub limit_buckets: u32,
    /// `HOST:PORT` of envoyproxy/ratelimit (`--global-ratelimit`): the
    /// limits are counted there instead of in Envoy's `local_ratelimit`.
    pub global_ratelimit: Option<String>,
    /// The native module (`--native`, `lib<name>.so`): rendered as Envoy's
    /// dynamic modules filter in the proxy-wasm filter's place
    /// ([`crate::native`]); `module` is then not used.
    pub native: Option<PathBuf>,
    /// TLS on the listener (`--tls-cert`, `--tls-key`, `--client-ca`).
    pub tls: Option<crate::tls::DownstreamTls>,
}

impl Default for FilterOptions {
    /// `envoy-filter`'s defaults: 127.0.0.1:10000, no admin interface,
    /// `dist/gateway-envoy.wasm`, no override, the system CA bundle.
    fn default() -> Self {
        FilterOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 10000)),
            admin: None,
            module: PathBuf::from("dist/gateway-envoy.wasm"),
            upstream_overrides: BTreeMap::new(),
            key_origins: Vec::new(),
            ca_bundle: crate::keys::DEFAULT_CA_BUNDLE.to_owned(),
            limit_buckets: crate::limits::DEFAULT_LIMIT_BUCKETS,
            global_ratelimit: None,
            native: None,
            tls: None,
        }
    }
}

/// Every origin the bootstrap connects to, each with the origin Envoy
/// connects to instead (itself unless overridden).
struct Origins {
    /// The routes' origins, in route order without repeats.
    routes: Vec<(String, String)>,
    /// The key sources' origins and `--key-origin`s.
    keys: Vec<(String, String)>,
}

/// The origins the config forwards to and fetches keys from, with the
/// overrides applied. A route's origin is moved to a plain `http` origin
/// only; a key origin to any origin (`https` is verified).
fn origins(
    config: &GatewayConfig,
    overrides: &BTreeMap<String, String>,
    extra_key_origins: &[String],
) -> Result<Origins, EnvoyError> {
    let key_origins = crate::keys::key_origins(config, extra_key_origins)?;
    // The contract's parser resolves an audience to its route's origin,
    // as host-sim and the workerd shim do.
    let routes: Vec<(String, String)> =
        config.routes.iter().map(|r| (r.aud.clone(), r.upstream.clone())).collect();
    let mut moved = BTreeMap::new();
    for (key, to) in overrides {
        let pair = format!("{key}={to}");
        let resolved = contract::routes::parse_overrides([pair.as_str()], &routes).map_err(|e| match e {
            contract::routes::OverrideError::Unknown { .. } if !key.contains("://") => {
                EnvoyError::UnknownAudience { aud: key.clone() }
            }
            _ => EnvoyError::BadUpstream { aud: key.clone(), upstream: to.clone() },
        })?;
        for (from, to) in resolved {
            let routed = config.routes.iter().any(|r| r.origin() == from);
            if !routed && !key_origins.contains(&from) {
                return Err(EnvoyError::UnknownOrigin { origin: key.clone() });
            }
            // The contract's parser checked that `to` is an origin.
            if !routed {
                moved.insert(from, to);
                continue;
            }
            if to.starts_with("https://") {
                return Err(EnvoyError::TlsUpstream { aud: key.clone(), upstream: to });
            }
            if !is_upstream_url(&to) || split_upstream(&to).is_none_or(|u| !u.base_path.is_empty()) {
                return Err(EnvoyError::BadUpstream { aud: key.clone(), upstream: to });
            }
            moved.insert(from, to);
        }
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for route in &config.routes {
        let origin = route.origin();
        if out.iter().any(|(o, _)| o == origin) {
            continue;
        }
        let target = moved.get(origin).cloned().unwrap_or_else(|| origin.to_owned());
        if target.starts_with("https://") {
            return Err(EnvoyError::TlsUpstream { aud: route.aud.clone(), upstream: target });
        }
        out.push((origin.to_owned(), target));
    }
    let keys = key_origins
        .into_iter()
        .map(|origin| {
            let target = moved.get(&origin).cloned().unwrap_or_else(|| origin.clone());
            (origin, target)
        })
        .collect();
    Ok(Origins { routes: out, keys })
}

/// The gateway filter; `configuration`, when there is one, is the key
/// clusters' table ([`crate::keys`]), which the filter reads as a string.
fn wasm_filter(module: &str, configuration: Option<String>) -> Yaml {
    let vm_config = map([
        ("vm_id", text("gateway")),
        // V8: the runtime in Envoy's release builds that runs proxy-wasm code.
        ("runtime", text("envoy.wasm.runtime.v8")),
        ("code", map([("local", map([("filename", text(module))]))])),
    ]);
    let mut config = vec![("name".to_owned(), text("gateway")), ("vm_config".to_owned(), vm_config)];
    if let Some(table) = configuration {
        let value = typed("google.protobuf.StringValue", map([("value", text(&table))]));
        config.push(("configuration".to_owned(), value));
    }
    map([
        ("name", text("envoy.filters.http.wasm")),
        (
            "typed_config",
            typed("envoy.extensions.filters.http.wasm.v3.Wasm", map([("config", Yaml::Map(config))])),
        ),
    ])
}

fn module_failed() -> Yaml {
    map([
        ("match", map([("prefix", text("/"))])),
        (
            "direct_response",
            map([("status", Yaml::Int(500)), ("body", map([("inline_string", text(MODULE_FAILED_BODY))]))]),
        ),
        (
            "response_headers_to_add",
            Yaml::List(vec![map([(
                "header",
                map([("key", text("content-type")), ("value", text("application/json"))]),
            )])]),
        ),
    ])
}

/// Envoy's own answer to an upstream failure (a 503 or 504 in text) as the
/// hosts' 502 with a JSON reason. Only those answers: the filter's replies
/// carry none of the flags and pass unchanged.
fn upstream_failure_reply() -> Yaml {
    let flags = Yaml::List(UPSTREAM_FAILURE_FLAGS.iter().map(|f| text(f)).collect());
    map([(
        "mappers",
        Yaml::List(vec![map([
            ("filter", map([("response_flag_filter", map([("flags", flags)]))])),
            ("status_code", Yaml::Int(502)),
            ("body", map([("inline_string", text(UPSTREAM_UNAVAILABLE_BODY))])),
            (
                "body_format_override",
                map([
                    ("text_format_source", map([("inline_string", text("%LOCAL_REPLY_BODY%"))])),
                    ("content_type", text("application/json")),
                ]),
            ),
        ])]),
    )])
}

/// The connection manager: the gateway filter (proxy-wasm or native), then each limit's rate limit
/// filter (`limit_filters`), then the router; the routes remove the
/// upstream header and every limit's field (`limit_headers`).
fn http_connection_manager(
    gateway_filter: Yaml,
    limit_filters: Vec<Yaml>,
    limit_headers: &[String],
    routes: Vec<Yaml>,
) -> Yaml {
    // The edge's settings: the peer is the connection's (what the filter
    // reads as source.address), and X-Forwarded-For is the module's alone.
    let mut settings = Vec::from(edge_settings());
    settings
        .extend([("skip_xff_append", Yaml::Bool(true)), ("local_reply_config", upstream_failure_reply())]);
    connection_manager(
        settings,
        std::iter::once(gateway_filter).chain(limit_filters).chain([router_filter()]).collect(),
        // The route's header, the buckets' fields, and the address Envoy
        // records for an external client: the upstream gets the plan only.
        &[UPSTREAM_HEADER, "x-envoy-external-address"]
            .into_iter()
            .chain(limit_headers.iter().map(String::as_str))
            .collect::<Vec<_>>(),
        routes,
    )
}

/// The Envoy bootstrap running the gateway filter for `config`, as a tree.
pub fn filter_bootstrap(config: &GatewayConfig, options: &FilterOptions) -> Result<Yaml, EnvoyError> {
    let mut routes = Vec::new();
    let mut clusters: Vec<Yaml> = Vec::new();
    let origins = origins(config, &options.upstream_overrides, &options.key_origins)?;
    for (origin, target) in origins.routes {
        let bad = || EnvoyError::BadUpstream { aud: origin.clone(), upstream: target.clone() };
        let upstream = split_upstream(&target).ok_or_else(bad)?;
        // The Host the upstream sees is its own, as every host sends it.
        let action =
            map([("cluster", text(upstream.authority)), ("host_rewrite_literal", text(upstream.authority))]);
        routes.push(header_route(UPSTREAM_HEADER, &origin, action));
        add_cluster(&mut clusters, &upstream);
    }
    routes.push(module_failed());
    for (origin, target) in &origins.keys {
        clusters.push(crate::keys::key_cluster(origin, target, &options.ca_bundle)?);
    }
    let table = (!origins.keys.is_empty()).then(|| crate::keys::cluster_table(&origins.keys));
    let limits = crate::limits::specs(config);
    let limit_filters = match &options.global_ratelimit {
        Some(address) if !limits.is_empty() => {
            let (host, port) = crate::limits::split_host_port(address)?;
            clusters.push(crate::limits::ratelimit_cluster(&host, port));
            limits.iter().enumerate().map(|(i, l)| crate::limits::global_ratelimit_filter(i, l)).collect()
        }
        _ => limits
            .iter()
            .enumerate()
            .map(|(i, l)| crate::limits::local_ratelimit_filter(i, l, options.limit_buckets))
            .collect(),
    };
    let limit_headers = crate::limits::limit_headers(&limits);
    let gateway_filter = match &options.native {
        Some(path) => crate::native::native_filter(path, table.as_deref())?,
        None => wasm_filter(&options.module.to_string_lossy(), table),
    };
    let manager = http_connection_manager(gateway_filter, limit_filters, &limit_headers, routes);
    let mut tree = bootstrap(options.listen, options.admin, manager, clusters);
    if let Some(tls) = &options.tls {
        crate::tls::secure(&mut tree, tls);
    }
    // The filter's metrics' labels, as Prometheus labels in the admin's scrape.
    if let Yaml::Map(entries) = &mut tree {
        entries.push(("stats_config".to_owned(), crate::stats::stats_config()));
    }
    Ok(tree)
}

/// The Envoy bootstrap (YAML) that runs the gateway filter with routes and
/// clusters for `config`'s origins; see the module's docs. It holds no
/// keys: they are compiled into the filter.
pub fn to_yaml(config: &GatewayConfig, options: &FilterOptions) -> Result<String, EnvoyError> {
    let mut out = String::from(
        "# Generated from the gateway config by `envoy-filter`. Do not edit.\n\
         # Envoy running the gateway filter, dist/gateway-envoy.wasm (deploy/envoy/README.md).\n",
    );
    out.push_str(&filter_bootstrap(config, options)?.to_yaml());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::tree::{HCM, at, str_at};
    use gateway_config::parse;
    use std::path::Path;

    fn config() -> GatewayConfig {
        let text = "issuer = \"https://issuer.test\"\n[[keys]]\nkid = \"k1\"\n\
                    demo = \"0123456789abcdef0123456789abcdef\"\n\
                    [[routes]]\naud = \"orders\"\nupstream = \"http://127.0.0.1:9201/orders-svc\"\n\
                    [[routes]]\naud = \"billing\"\nupstream = \"http://127.0.0.1:9201/billing-svc\"\n\
                    [[routes]]\naud = \"users\"\nupstream = \"http://users.internal\"\n";
        parse(text, Path::new("test.toml"), &|_| None).expect("valid config")
    }

    fn options() -> FilterOptions {
        FilterOptions::default()
    }

    #[test]
    fn the_filter_runs_in_v8_before_the_router() {
        let tree = filter_bootstrap(&config(), &options()).expect("renders");
        let filters = at(&tree, &format!("{HCM}.http_filters"));
        assert_eq!(str_at(filters, "0.name"), "envoy.filters.http.wasm");
        assert_eq!(str_at(filters, "0.typed_config.config.vm_config.runtime"), "envoy.wasm.runtime.v8");
        assert_eq!(
            str_at(filters, "0.typed_config.config.vm_config.code.local.filename"),
            "dist/gateway-envoy.wasm"
        );
        assert_eq!(str_at(filters, "1.name"), "envoy.filters.http.router");
        assert_eq!(at(&tree, &format!("{HCM}.use_remote_address")), &Yaml::Bool(true));
        assert_eq!(at(&tree, &format!("{HCM}.skip_xff_append")), &Yaml::Bool(true));
        assert_eq!(at(&tree, &format!("{HCM}.generate_request_id")), &Yaml::Bool(false));
        let mapper = at(&tree, &format!("{HCM}.local_reply_config.mappers.0"));
        assert_eq!(str_at(mapper, "filter.response_flag_filter.flags.0"), "UF");
        assert_eq!(at(mapper, "status_code"), &Yaml::Int(502));
        assert_eq!(str_at(mapper, "body_format_override.content_type"), "application/json");
    }

    #[test]
    fn the_native_module_takes_the_filters_place_and_nothing_else_changes() {
        let native = FilterOptions { native: Some("/m/libgateway_envoy.so".into()), ..options() };
        let tree = filter_bootstrap(&config(), &native).expect("renders");
        let wasm = filter_bootstrap(&config(), &options()).expect("renders");
        let filters = at(&tree, &format!("{HCM}.http_filters"));
        assert_eq!(str_at(filters, "0.name"), "envoy.filters.http.dynamic_modules");
        assert_eq!(str_at(filters, "0.typed_config.dynamic_module_config.name"), "gateway_envoy");
        assert_eq!(str_at(filters, "1.name"), "envoy.filters.http.router");
        assert_eq!(at(&tree, "static_resources.clusters"), at(&wasm, "static_resources.clusters"));
        assert_eq!(
            at(&tree, &format!("{HCM}.route_config")),
            at(&wasm, &format!("{HCM}.route_config")),
            "the same routes"
        );
        // Rate limits: the same filters after the module as after the filter.
        let limited = filter_bootstrap(&limited_config(), &native).expect("renders");
        let names = |tree: &Yaml| -> Vec<String> {
            at(tree, &format!("{HCM}.http_filters"))
                .items()
                .iter()
                .map(|f| str_at(f, "name").to_owned())
                .collect()
        };
        let with_filter = filter_bootstrap(&limited_config(), &options()).expect("renders");
        assert_eq!(names(&limited)[1..], names(&with_filter)[1..]);
    }

    #[test]
    fn one_route_and_cluster_per_origin_matched_by_the_upstream_header() {
        let tree = filter_bootstrap(&config(), &options()).expect("renders");
        let host = at(&tree, &format!("{HCM}.route_config.virtual_hosts.0"));
        assert_eq!(str_at(host, "request_headers_to_remove.0"), UPSTREAM_HEADER);
        let routes = at(host, "routes").items();
        assert_eq!(routes.len(), 3, "two origins and the module-failed answer");
        assert_eq!(str_at(&routes[0], "match.headers.0.name"), UPSTREAM_HEADER);
        assert_eq!(str_at(&routes[0], "match.headers.0.string_match.exact"), "http://127.0.0.1:9201");
        assert_eq!(str_at(&routes[0], "route.cluster"), "127.0.0.1:9201");
        assert_eq!(str_at(&routes[1], "match.headers.0.string_match.exact"), "http://users.internal");
        assert_eq!(str_at(&routes[1], "route.host_rewrite_literal"), "users.internal");
        assert!(
            routes[0].get("route").and_then(|r| r.get("prefix_rewrite")).is_none(),
            "the plan has the path"
        );
        assert_eq!(at(&routes[2], "direct_response.status"), &Yaml::Int(500));
        let names: Vec<&str> =
            at(&tree, "static_resources.clusters").items().iter().map(|c| str_at(c, "name")).collect();
        assert_eq!(names, ["127.0.0.1:9201", "users.internal"]);
    }

    fn limited_config() -> GatewayConfig {
        let text = "issuer = \"https://issuer.test\"\n[[keys]]\nkid = \"k1\"\n\
                    demo = \"0123456789abcdef0123456789abcdef\"\n\
                    [[routes]]\naud = \"orders\"\nupstream = \"http://127.0.0.1:9201\"\n\
                    [[limits]]\nname = \"per-user\"\nrequests = 3\nper_secs = 60\nby = \"subject\"\n\
                    [[limits]]\nname = \"search\"\nrequests = 2\nper_secs = 60\nby = \"route\"\n\
                    [[rules]]\nname = \"search\"\nprefix = \"/search\"\nlimits = [\"search\", \"per-user\"]\n";
        parse(text, Path::new("test.toml"), &|_| None).expect("valid config")
    }

    #[test]
    fn a_rate_limit_filter_per_limit_between_the_gateway_and_the_router() {
        let tree = filter_bootstrap(&limited_config(), &options()).expect("renders");
        let filters = at(&tree, &format!("{HCM}.http_filters"));
        let names: Vec<&str> = filters.items().iter().map(|f| str_at(f, "name")).collect();
        assert_eq!(
            names,
            [
                "envoy.filters.http.wasm",
                "gateway.limit.per-user",
                "gateway.limit.search",
                "envoy.filters.http.router"
            ]
        );
        assert!(str_at(filters, "1.typed_config.@type").ends_with("local_ratelimit.v3.LocalRateLimit"));
        assert_eq!(
            str_at(filters, "2.typed_config.rate_limits.0.actions.0.request_headers.header_name"),
            "x-gateway-limit-1"
        );
        let removed = at(&tree, &format!("{HCM}.route_config.virtual_hosts.0.request_headers_to_remove"));
        let removed: Vec<&str> = removed.items().iter().filter_map(Yaml::as_str).collect();
        assert!(
            removed.contains(&"x-gateway-limit-0") && removed.contains(&"x-gateway-limit-1"),
            "{removed:?}"
        );

        let global = FilterOptions { global_ratelimit: Some("127.0.0.1:8081".into()), ..options() };
        let tree = filter_bootstrap(&limited_config(), &global).expect("renders");
        let filters = at(&tree, &format!("{HCM}.http_filters"));
        assert!(str_at(filters, "1.typed_config.@type").ends_with("ratelimit.v3.RateLimit"));
        assert_eq!(str_at(filters, "1.typed_config.domain"), "gateway");
        let clusters = at(&tree, "static_resources.clusters").items();
        assert!(clusters.iter().any(|c| str_at(c, "name") == crate::limits::RATELIMIT_CLUSTER));
        let bad = FilterOptions { global_ratelimit: Some("nowhere".into()), ..options() };
        assert!(matches!(
            filter_bootstrap(&limited_config(), &bad),
            Err(EnvoyError::BadRatelimitService { .. })
        ));

        // A config without limits: no rate limit filter, even with the option.
        let tree = filter_bootstrap(&config(), &global).expect("renders");
        assert_eq!(at(&tree, &format!("{HCM}.http_filters")).items().len(), 2);
    }

    #[test]
    fn overrides_move_an_origin_by_origin_or_audience() {
        let mut options = options();
        options.upstream_overrides.insert("http://127.0.0.1:9201".into(), "http://127.0.0.1:40001".into());
        options.upstream_overrides.insert("users".into(), "http://[::1]:40002/".into());
        let tree = filter_bootstrap(&config(), &options).expect("renders");
        let routes = at(&tree, &format!("{HCM}.route_config.virtual_hosts.0.routes")).items();
        assert_eq!(str_at(&routes[0], "match.headers.0.string_match.exact"), "http://127.0.0.1:9201");
        assert_eq!(str_at(&routes[0], "route.host_rewrite_literal"), "127.0.0.1:40001");
        assert_eq!(str_at(&routes[1], "route.cluster"), "[::1]:40002");

        let refuse = |key: &str, url: &str| {
            let mut options = self::options();
            options.upstream_overrides.insert(key.into(), url.into());
            filter_bootstrap(&config(), &options).expect_err("refused")
        };
        assert!(matches!(refuse("http://10.0.0.1", "http://h"), EnvoyError::UnknownOrigin { .. }));
        assert!(matches!(refuse("nobody", "http://h"), EnvoyError::UnknownAudience { .. }));
        assert!(matches!(refuse("orders", "http://h/with-path"), EnvoyError::BadUpstream { .. }));
        assert!(matches!(refuse("orders", "https://h"), EnvoyError::TlsUpstream { .. }));
    }
}
