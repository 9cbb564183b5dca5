//! `envoy-jwt-authn`: writes the Envoy bootstrap in which Envoy's native
//! `jwt_authn` filter does the gateway's job, rendered from a gateway config
//! (see `gateway_envoy_render::jwt_authn`). The benchmarks and the Envoy tests run it.
//!
//! usage: envoy-jwt-authn [--config FILE] [--listen ADDR] [--admin ADDR]
//!                        [--upstream-override AUD=URL]... [--out FILE]
//!
//! Without `--out` the YAML goes to stdout; with it, the file is created
//! readable by its owner only, since it carries the signing keys.

use std::process::ExitCode;

use gateway_envoy_render::bootstrap::EnvoyOptions;

const USAGE: &str = "usage: envoy-jwt-authn [--config FILE] [--listen ADDR] [--admin ADDR] \
                     [--upstream-override AUD=URL]... [--out FILE]";

fn main() -> ExitCode {
    gateway_envoy_render::cli::main(USAGE, &[], true, |config, args| {
        let options = EnvoyOptions {
            listen: args.listen,
            admin: args.admin,
            upstream_overrides: args.upstream_overrides.clone(),
        };
        gateway_envoy_render::jwt_authn::to_yaml(config, &options).map_err(|e| e.to_string())
    })
}
