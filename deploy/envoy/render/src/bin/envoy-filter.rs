//! `envoy-filter`: writes the Envoy bootstrap that runs the gateway filter
//! (`dist/gateway-envoy.wasm`) with one route and cluster per origin of a
//! gateway config, and a cluster per origin it fetches signing keys from
//! (see `gateway_envoy_render::filter` and `::keys`). `make deploy-envoy`
//! and the Envoy tests run it.
//!
//! usage: envoy-filter [--config FILE] [--listen ADDR] [--admin ADDR]
//!                     [--module FILE] [--upstream-override FROM=ORIGIN]...
//!                     [--key-origin ORIGIN]... [--ca-bundle FILE] [--out FILE]
//!
//! FROM is an origin the config forwards to or fetches keys from, or an
//! audience (its route's origin). `--module` is the filter as Envoy opens it
//! (default `dist/gateway-envoy.wasm`). `--key-origin` adds a key cluster
//! for an origin a discovery document's `jwks_uri` names beside its
//! issuer's; `--ca-bundle` is what `https` key clusters verify providers
//! with (default `/etc/ssl/certs/ca-certificates.crt`). Without `--out` the
//! YAML goes to stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use gateway_envoy_render::filter::FilterOptions;

const USAGE: &str = "usage: envoy-filter [--config FILE] [--listen ADDR] [--admin ADDR] [--module FILE] \
                     [--upstream-override FROM=ORIGIN]... [--key-origin ORIGIN]... [--ca-bundle FILE] [--out FILE]";

fn main() -> ExitCode {
    let own = ["--module", "--key-origin", "--ca-bundle"];
    gateway_envoy_render::cli::main(USAGE, &own, false, |config, args| {
        let defaults = FilterOptions::default();
        let options = FilterOptions {
            listen: args.listen,
            admin: args.admin,
            module: args.own_value("--module").map_or(defaults.module, PathBuf::from),
            upstream_overrides: args.upstream_overrides.clone(),
            key_origins: args.own_values("--key-origin").to_vec(),
            ca_bundle: args.own_value("--ca-bundle").map_or(defaults.ca_bundle, str::to_owned),
        };
        gateway_envoy_render::filter::to_yaml(config, &options).map_err(|e| e.to_string())
    })
}
