use std::path::Path;

use gateway_config::parse;

use super::*;
use crate::filter::{FilterOptions, filter_bootstrap};
use crate::yaml::tree::{HCM, at, str_at};

/// Two issuers that fetch keys, as testkit/fixture-jwks.toml has them (the
/// first over https here), and one route.
fn config() -> GatewayConfig {
    let text = "[[issuers]]\niss = \"https://login.example\"\ndiscovery = true\n\
                [[issuers]]\niss = \"http://jwks.test\"\njwks_url = \"http://jwks.test/keys.json\"\n\
                [[routes]]\naud = \"orders\"\nupstream = \"http://127.0.0.1:9201/orders-svc\"\n";
    parse(text, Path::new("test.toml"), &|_| None).expect("valid config")
}

fn options() -> FilterOptions {
    FilterOptions::default()
}

fn render(options: &FilterOptions) -> Yaml {
    filter_bootstrap(&config(), options).expect("renders")
}

/// The cluster named `name`.
fn cluster<'a>(tree: &'a Yaml, name: &str) -> &'a Yaml {
    let clusters = at(tree, "static_resources.clusters").items();
    clusters.iter().find(|c| str_at(c, "name") == name).unwrap_or_else(|| panic!("no cluster {name}"))
}

/// The table the filter reads from its configuration.
fn table(tree: &Yaml) -> &str {
    let config = at(tree, &format!("{HCM}.http_filters.0.typed_config.config.configuration"));
    assert_eq!(str_at(config, "@type"), "type.googleapis.com/google.protobuf.StringValue");
    str_at(config, "value")
}

const ENDPOINT: &str = "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address.socket_address";

#[test]
fn one_cluster_per_key_origin_and_the_table_the_filter_reads() {
    let tree = render(&options());
    let names: Vec<&str> =
        at(&tree, "static_resources.clusters").items().iter().map(|c| str_at(c, "name")).collect();
    assert_eq!(names, ["127.0.0.1:9201", "keys:https://login.example", "keys:http://jwks.test"]);
    assert_eq!(
        table(&tree),
        "https://login.example keys:https://login.example login.example\n\
         http://jwks.test keys:http://jwks.test jwks.test\n"
    );
    let jwks = cluster(&tree, "keys:http://jwks.test");
    assert_eq!(str_at(jwks, "type"), "LOGICAL_DNS");
    assert_eq!(str_at(jwks, &format!("{ENDPOINT}.address")), "jwks.test");
    assert_eq!(at(jwks, &format!("{ENDPOINT}.port_value")), &Yaml::Int(80));
    assert!(jwks.get("transport_socket").is_none(), "plain http");
}

#[test]
fn an_https_origin_is_verified_tls_with_sni_for_its_name() {
    let tree = render(&options());
    let login = cluster(&tree, "keys:https://login.example");
    assert_eq!(at(login, &format!("{ENDPOINT}.port_value")), &Yaml::Int(443));
    let tls = at(login, "transport_socket");
    assert_eq!(str_at(tls, "name"), "envoy.transport_sockets.tls");
    let context = at(tls, "typed_config");
    assert_eq!(
        str_at(context, "@type"),
        "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
    );
    assert_eq!(str_at(context, "sni"), "login.example");
    let validation = at(context, "common_tls_context.validation_context");
    assert_eq!(str_at(validation, "trusted_ca.filename"), DEFAULT_CA_BUNDLE);
    assert_eq!(str_at(validation, "match_typed_subject_alt_names.0.san_type"), "DNS");
    assert_eq!(str_at(validation, "match_typed_subject_alt_names.0.matcher.exact"), "login.example");

    let mut options = options();
    options.ca_bundle = "/etc/pki/tls/certs/ca-bundle.crt".into();
    options.key_origins.push("https://192.0.2.10:8443".into());
    let tree = render(&options);
    let by_ip = at(cluster(&tree, "keys:https://192.0.2.10:8443"), "transport_socket.typed_config");
    assert!(by_ip.get("sni").is_none(), "an IP address is no SNI name");
    let validation = at(by_ip, "common_tls_context.validation_context");
    assert_eq!(str_at(validation, "trusted_ca.filename"), "/etc/pki/tls/certs/ca-bundle.crt");
    assert_eq!(str_at(validation, "match_typed_subject_alt_names.0.san_type"), "IP_ADDRESS");
    assert_eq!(str_at(validation, "match_typed_subject_alt_names.0.matcher.exact"), "192.0.2.10");
}

#[test]
fn overrides_move_key_clusters_and_the_authority_follows() {
    let mut options = options();
    options.upstream_overrides.insert("https://login.example".into(), "http://127.0.0.1:4000".into());
    options.upstream_overrides.insert("http://jwks.test".into(), "https://keys.internal:8443/".into());
    let tree = render(&options);
    let login = cluster(&tree, "keys:https://login.example");
    assert_eq!(str_at(login, "type"), "STATIC");
    assert_eq!(str_at(login, &format!("{ENDPOINT}.address")), "127.0.0.1");
    assert_eq!(at(login, &format!("{ENDPOINT}.port_value")), &Yaml::Int(4000));
    assert!(login.get("transport_socket").is_none(), "moved to a plain test server");
    let jwks = cluster(&tree, "keys:http://jwks.test");
    assert_eq!(str_at(jwks, "transport_socket.typed_config.sni"), "keys.internal");
    assert_eq!(
        table(&tree),
        "https://login.example keys:https://login.example 127.0.0.1:4000\n\
         http://jwks.test keys:http://jwks.test keys.internal:8443\n"
    );
}

#[test]
fn key_origins_may_be_added_once_each_and_must_be_origins() {
    let mut options = options();
    options.key_origins = vec![
        "https://www.googleapis.example/".into(),
        "http://jwks.test".into(),
        "https://www.googleapis.example".into(),
    ];
    let tree = render(&options);
    assert_eq!(
        table(&tree).lines().map(|l| l.split(' ').next().unwrap_or("")).collect::<Vec<_>>(),
        ["https://login.example", "http://jwks.test", "https://www.googleapis.example"]
    );
    for bad in ["https://h/path", "ftp://h", "h", "https://u@h"] {
        let mut options = self::options();
        options.key_origins.push(bad.into());
        let error = filter_bootstrap(&config(), &options).expect_err(bad);
        assert!(matches!(error, EnvoyError::BadKeyOrigin { .. }), "{bad}: {error}");
    }
    let mut options = self::options();
    options.upstream_overrides.insert("http://jwks.test".into(), "http://h/path".into());
    assert!(matches!(filter_bootstrap(&config(), &options), Err(EnvoyError::BadUpstream { .. })));
    let mut options = self::options();
    options.upstream_overrides.insert("http://elsewhere.test".into(), "http://h".into());
    assert!(matches!(filter_bootstrap(&config(), &options), Err(EnvoyError::UnknownOrigin { .. })));
}

#[test]
fn a_config_that_fetches_no_keys_renders_no_key_cluster() {
    let text = "[[keys]]\nkid = \"k1\"\ndemo = \"0123456789abcdef0123456789abcdef\"\n\
                [[routes]]\naud = \"orders\"\nupstream = \"http://127.0.0.1:9201\"\n";
    let config = parse(text, Path::new("test.toml"), &|_| None).expect("valid config");
    let tree = filter_bootstrap(&config, &options()).expect("renders");
    assert_eq!(at(&tree, "static_resources.clusters").items().len(), 1);
    let filter = at(&tree, &format!("{HCM}.http_filters.0.typed_config.config"));
    assert!(filter.get("configuration").is_none());
}
