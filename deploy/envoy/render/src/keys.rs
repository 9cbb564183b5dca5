//! The clusters the gateway filter fetches signing keys on (`worker/ABI.md`,
//! "Keys fetched at run time"): one per origin of an issuer's `jwks_url` or
//! discovery document, named `keys:<origin>`, plus the origins an operator
//! adds with `--key-origin` (a `jwks_uri` that a discovery document names
//! on another origin than the issuer's). The filter learns them from the
//! table this module writes into its configuration, one line per origin:
//! `<origin> <cluster> <authority>`, so that it never guesses a cluster's
//! name and says which origin lacks one.
//!
//! A cluster connects to its origin, or to the origin an
//! `--upstream-override` moves it to; an `https` one speaks TLS with SNI
//! and verifies the certificate against the CA bundle (`--ca-bundle`,
//! default Debian's) for the host's name: keys must come from the provider.

use gateway_config::GatewayConfig;

use crate::bootstrap::{EnvoyError, named_cluster, split_upstream};
use crate::yaml::{Yaml, map, text, typed};

/// The CA bundle an `https` key cluster verifies its provider with, unless
/// `--ca-bundle` names another: Debian's and Ubuntu's system bundle.
pub const DEFAULT_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The origins the filter fetches key documents from: each fetching
/// issuer's URL's origin, then `extra` (`--key-origin`), without repeats.
pub fn key_origins(config: &GatewayConfig, extra: &[String]) -> Result<Vec<String>, EnvoyError> {
    let mut origins: Vec<String> = Vec::new();
    let configured = config.issuers.iter().filter_map(|i| i.fetch.as_ref()).map(|fetch| {
        // The config accepted the URL as an absolute http(s) URL.
        contract::routes::origin_of(&fetch.url)
            .map(str::to_owned)
            .ok_or(EnvoyError::BadKeyOrigin { origin: fetch.url.clone() })
    });
    let added = extra.iter().map(|origin| {
        let origin = origin.trim_end_matches('/');
        match contract::routes::origin_of(origin) {
            Some(o) if o == origin => Ok(origin.to_owned()),
            _ => Err(EnvoyError::BadKeyOrigin { origin: origin.to_owned() }),
        }
    });
    for origin in configured.chain(added) {
        let origin = origin?;
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    Ok(origins)
}

/// The name of the cluster for key origin `origin`.
pub fn cluster_name(origin: &str) -> String {
    format!("keys:{origin}")
}

/// The cluster for key origin `origin`, connecting to `target` (an origin:
/// `origin` itself unless overridden), with TLS for an `https` target.
pub(crate) fn key_cluster(origin: &str, target: &str, ca_bundle: &str) -> Result<Yaml, EnvoyError> {
    let bad = || EnvoyError::BadKeyOrigin { origin: target.to_owned() };
    let endpoint = split_upstream(target).filter(|u| u.base_path.is_empty()).ok_or_else(bad)?;
    let mut cluster = named_cluster(&cluster_name(origin), endpoint.host, endpoint.port);
    if let (true, Yaml::Map(entries)) = (endpoint.tls, &mut cluster) {
        entries.push(("transport_socket".to_owned(), tls_socket(endpoint.host, ca_bundle)));
    }
    Ok(cluster)
}

/// TLS to a provider: SNI for a name, and its certificate verified against
/// `ca_bundle` for that name (or IP address): Envoy checks no name by itself.
fn tls_socket(host: &str, ca_bundle: &str) -> Yaml {
    let ip = host.parse::<std::net::IpAddr>().is_ok();
    let san = map([
        ("san_type", text(if ip { "IP_ADDRESS" } else { "DNS" })),
        ("matcher", map([("exact", text(host))])),
    ]);
    let validation = map([
        ("trusted_ca", map([("filename", text(ca_bundle))])),
        ("match_typed_subject_alt_names", Yaml::List(vec![san])),
    ]);
    let mut context = vec![("common_tls_context".to_owned(), map([("validation_context", validation)]))];
    // SNI names a host; an IP address is not sent as one (RFC 6066 section 3).
    if !ip {
        context.insert(0, ("sni".to_owned(), text(host)));
    }
    map([
        ("name", text("envoy.transport_sockets.tls")),
        (
            "typed_config",
            typed("envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext", Yaml::Map(context)),
        ),
    ])
}

/// The table the filter reads from its configuration: per (origin, target),
/// `<origin> <cluster> <authority>`, the authority the target's.
pub(crate) fn cluster_table(origins: &[(String, String)]) -> String {
    origins
        .iter()
        .map(|(origin, target)| {
            let authority = target.split_once("://").map_or(target.as_str(), |(_, a)| a);
            format!("{origin} {} {authority}\n", cluster_name(origin))
        })
        .collect()
}

#[cfg(test)]
mod tests;
