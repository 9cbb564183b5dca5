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

use gateway_config::{GatewayConfig, is_upstream_url};

use crate::bootstrap::{
    EnvoyError, EnvoyOptions, add_cluster, bootstrap, connection_manager, edge_settings, header_route,
    router_filter, split_upstream,
};
use crate::yaml::{Yaml, map, text, typed};

/// The header that carries the token's subject upstream, as the gateway names it.
pub const SUBJECT_HEADER: &str = "x-gateway-subject";

/// The header Envoy copies the token's audience into, for the routes to match on.
pub const AUDIENCE_HEADER: &str = "x-gateway-audience";

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
    // An edge proxy, as the gateway's listener is (`edge_settings`): the
    // peer is the connection's, and no client is internal.
    let mut settings = Vec::from(edge_settings());
    settings.extend([
        // The gateway's path rules: dot segments resolved, encoded slashes refused.
        ("normalize_path", Yaml::Bool(true)),
        ("path_with_escaped_slashes_action", text("REJECT_REQUEST")),
        // `x_gateway_subject` must not slip past the x-gateway- prefix.
        ("common_http_protocol_options", map([("headers_with_underscores_action", text("DROP_HEADER"))])),
    ]);
    connection_manager(
        settings,
        vec![header_mutation_filter(), jwt_authn_filter(config), router_filter()],
        // The address Envoy records for an external client, as the
        // gateway's routes remove it: no x-envoy-* field goes upstream.
        &[AUDIENCE_HEADER, "x-envoy-external-address"],
        routes,
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_config::{decode_base64url, parse};
    use std::collections::BTreeMap;
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

    use crate::yaml::tree::{HCM, at, str_at};

    #[test]
    fn the_peer_is_an_edge_proxy_as_the_gateway_is() {
        let peer = jwt_authn_bootstrap(&two_routes(), &options()).expect("renders");
        let gateway = crate::filter::filter_bootstrap(&two_routes(), &Default::default()).expect("renders");
        for setting in ["use_remote_address", "internal_address_config"] {
            let path = format!("{HCM}.{setting}");
            assert_eq!(at(&peer, &path), at(&gateway, &path), "{setting}");
        }
        assert_eq!(at(&peer, &format!("{HCM}.use_remote_address")), &Yaml::Bool(true));
    }

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
