//! `envoy-filter`: writes the Envoy bootstrap that runs the gateway filter
//! (`dist/gateway-envoy.wasm`) with one route and cluster per origin of a
//! gateway config, and a cluster per origin it fetches signing keys from
//! (see `gateway_envoy_render::filter` and `::keys`). `make deploy-envoy`
//! and the Envoy tests run it.
//!
//! usage: envoy-filter [--config FILE] [--listen ADDR] [--admin ADDR]
//!                     [--module FILE] [--upstream-override FROM=ORIGIN]...
//!                     [--key-origin ORIGIN]... [--ca-bundle FILE]
//!                     [--limit-buckets N] [--global-ratelimit HOST:PORT]
//!                     [--ratelimit-config FILE] [--native LIBFILE] [--out FILE]
//!
//! FROM is an origin the config forwards to or fetches keys from, or an
//! audience (its route's origin). `--module` is the filter as Envoy opens it
//! (default `dist/gateway-envoy.wasm`). `--key-origin` adds a key cluster
//! for an origin a discovery document's `jwks_uri` names beside its
//! issuer's; `--ca-bundle` is what `https` key clusters verify providers
//! with (default `/etc/ssl/certs/ca-certificates.crt`). A config with rate
//! limits gets one `local_ratelimit` per limit, each keeping a bucket for
//! at most `--limit-buckets` keys (default 100000); with
//! `--global-ratelimit` the limits are counted by envoyproxy/ratelimit at
//! that address instead, and `--ratelimit-config` writes that service's
//! config for them (see `gateway_envoy_render::limits`). `--native`
//! renders the native dynamic module (`lib<name>.so`, built by
//! build/envoy-native.sh) in the proxy-wasm filter's place; Envoy then
//! needs ENVOY_DYNAMIC_MODULES_SEARCH_PATH set to the module's folder (see
//! `gateway_envoy_render::native`). Without `--out` the YAML goes to stdout.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use gateway_envoy_render::filter::FilterOptions;
use gateway_envoy_render::{cli, limits};

const USAGE: &str = "usage: envoy-filter [--config FILE] [--listen ADDR] [--admin ADDR] [--module FILE] \
                     [--upstream-override FROM=ORIGIN]... [--key-origin ORIGIN]... [--ca-bundle FILE] \
                     [--limit-buckets N] [--global-ratelimit HOST:PORT] [--ratelimit-config FILE] [--native LIBFILE] \
                     [--tls-cert PEM --tls-key PEM [--client-ca PEM]] [--out FILE]";

fn main() -> ExitCode {
    let own = [
        "--module",
        "--key-origin",
        "--ca-bundle",
        "--limit-buckets",
        "--global-ratelimit",
        "--ratelimit-config",
        "--native",
        "--tls-cert",
        "--tls-key",
        "--client-ca",
    ];
    gateway_envoy_render::cli::main(USAGE, &own, false, |config, args| {
        let defaults = FilterOptions::default();
        let options = FilterOptions {
            listen: args.listen,
            admin: args.admin,
            module: args.own_value("--module").map_or(defaults.module, PathBuf::from),
            upstream_overrides: args.upstream_overrides.clone(),
            key_origins: args.own_values("--key-origin").to_vec(),
            ca_bundle: args.own_value("--ca-bundle").map_or(defaults.ca_bundle, str::to_owned),
            limit_buckets: match args.own_value("--limit-buckets") {
                Some(n) => {
                    n.parse().ok().filter(|&n| n > 0).ok_or(format!("--limit-buckets {n}: not a count"))?
                }
                None => defaults.limit_buckets,
            },
            global_ratelimit: args.own_value("--global-ratelimit").map(str::to_owned),
            native: args.own_value("--native").map(PathBuf::from),
            tls: gateway_envoy_render::tls::from_args(args)?,
        };
        if let Some(path) = args.own_value("--ratelimit-config") {
            let text = limits::ratelimit_service_config(&limits::specs(config));
            cli::write_output(Some(Path::new(path)), &text, false)?;
        }
        gateway_envoy_render::filter::to_yaml(config, &options).map_err(|e| e.to_string())
    })
}
