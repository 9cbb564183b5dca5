//! The gateway inside Envoy: a proxy-wasm HTTP filter around the same core
//! as `dist/gateway.wasm` (the `worker` crate, its config compiled in from
//! `GATEWAY_CONFIG`). It adds no rule of its own: it gives the core the
//! request head rebuilt from Envoy's header map, then carries out the
//! decision literally, as any host of `worker/ABI.md` does.
//!
//! | module | job |
//! |---|---|
//! | [`input`] | the context line and the request head, from Envoy's serialized header map into the core's input buffer |
//! | [`decision`] | the core's decision, read with the contract's decoder: an answer or a forward |
//! | `filter` (wasm32 only) | the proxy-wasm contexts: Envoy's calls in, header edits and replies out |
//! | `raw` (wasm32 only) | the per-request host calls that read the header map and properties without copies |
//!
//! How the upstream is chosen (a header the route table matches) and why is
//! in `deploy/envoy/README.md`.

pub mod decision;
pub mod input;

#[cfg(target_arch = "wasm32")]
mod filter;
#[cfg(target_arch = "wasm32")]
mod raw;

/// The request header the filter sets to the forward's origin; the rendered
/// route table matches it exactly to pick the origin's cluster, and removes
/// it before the request leaves Envoy.
pub use contract::fields::UPSTREAM as UPSTREAM_HEADER;
