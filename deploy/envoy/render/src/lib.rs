//! Renders Envoy bootstraps from the gateway config: the product (Envoy
//! running the gateway's proxy-wasm filter, [`filter`]) and its peer (Envoy's
//! native `jwt_authn` doing the same job, [`jwt_authn`]), which the
//! benchmarks and the Envoy tests compare the gateway with. Both are
//! rendered from the same `gateway.toml` through the one config crate, so
//! that keys, issuer, routes and clusters are never typed twice; the peer
//! lives beside the product because they share the YAML model.
//!
//! | module | job |
//! |---|---|
//! | [`filter`] | the bootstrap with the gateway filter: routes and clusters per origin |
//! | [`native`] | the gateway as a native dynamic module (`--native`) in the proxy-wasm filter's place |
//! | [`keys`] | the gateway filter's clusters for keys fetched at run time, and their table for the filter |
//! | [`limits`] | the config's rate limits as Envoy's `local_ratelimit` (or `ratelimit` with envoyproxy/ratelimit) counts them |
//! | [`tls`] | TLS on the listener, and client certificates for certificate-bound tokens |
//! | [`stats`] | the filter's metrics' labels as Envoy tags (`stats_config`) |
//! | [`jwt_authn`] | the peer: Envoy's `jwt_authn`, `header_mutation` and router |
//! | [`bootstrap`] | what both bootstraps share: options, errors, clusters, connection manager, listener |
//! | [`yaml`] | the YAML tree both are written in, and its one writer |
//! | [`cli`] | the command line both renderers share |

pub mod bootstrap;
pub mod cli;
pub mod filter;
pub mod jwt_authn;
pub mod keys;
pub mod limits;
pub mod native;
pub mod stats;
pub mod tls;
pub mod yaml;
