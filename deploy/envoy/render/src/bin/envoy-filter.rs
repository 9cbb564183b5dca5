//! `envoy-filter`: writes the Envoy bootstrap that runs the gateway filter
//! (`dist/gateway-envoy.wasm`) with one route and cluster per origin of a
//! gateway config (see `gateway_envoy_render::filter`). `make deploy-envoy`
//! and the Envoy conformance tests run it.
//!
//! usage: envoy-filter [--config FILE] [--listen ADDR] [--admin ADDR]
//!                     [--module FILE] [--upstream-override FROM=ORIGIN]... [--out FILE]
//!
//! FROM is an origin the config forwards to, or an audience (its route's
//! origin). `--module` is the filter as Envoy opens it (default
//! `dist/gateway-envoy.wasm`). Without `--out` the YAML goes to stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use gateway_envoy_render::filter::FilterOptions;

const USAGE: &str = "usage: envoy-filter [--config FILE] [--listen ADDR] [--admin ADDR] [--module FILE] \
                     [--upstream-override FROM=ORIGIN]... [--out FILE]";

fn main() -> ExitCode {
    gateway_envoy_render::cli::main(USAGE, &["--module"], false, |config, args| {
        let options = FilterOptions {
            listen: args.listen,
            admin: args.admin,
            module: PathBuf::from(args.own.get("--module").map_or("dist/gateway-envoy.wasm", String::as_str)),
            upstream_overrides: args.upstream_overrides.clone(),
        };
        gateway_envoy_render::filter::to_yaml(config, &options).map_err(|e| e.to_string())
    })
}
