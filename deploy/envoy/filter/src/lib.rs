//! The gateway inside Envoy: a proxy-wasm HTTP filter (and, with the
//! feature `native`, a native dynamic module) around the same core
//! as `dist/gateway.wasm` (the `worker` crate, its config compiled in from
//! `GATEWAY_CONFIG`). It adds no rule of its own: it gives the core the
//! request head rebuilt from Envoy's header map, then carries out the
//! decision literally, as any host of `worker/ABI.md` does.
//!
//! | module | job |
//! |---|---|
//! | [`input`] | the context line and the request head, from Envoy's serialized header map into the core's input buffer |
//! | [`decision`] | the core's decision, read with the contract's decoder: an answer or a forward |
//! | [`limits`] | rate limits counted by Envoy's `local_ratelimit`: a bucket per request field, its refusal turned into the module's 429 (the refusal's decision shared by both fronts) |
//! | [`metrics`] | what the filter counts in Envoy's stats: decisions by outcome, rule, route and issuer, `jwt_authn`'s counters, key fetches per issuer; counted in the VM's memory, handed to Envoy on the root context's ticks |
//! | [`plan`] | a forward's plan carried out on Envoy's header maps, and its response edits: the same steps in both fronts |
//! | [`fetch`] | a key fetch through Envoy: the cluster for a URL, what a response amounts to, the log line |
//! | `callbacks` (wasm32 only) | the proxy-wasm ABI 0.2.1 callbacks Envoy calls, without an SDK: only those the build uses are exported |
//! | `raw` (wasm32 only) | the host calls without an SDK: the header map and properties without copies, a fetch's answer without panics; the allocator Envoy writes them with |
//! | `filter` (wasm32 only) | a request's decision carried out: header edits or a local reply; a forward's response edits, kept per stream only when the config has CORS or rate limits |
//! | `reply` (wasm32 only) | the local replies: the module's answer as it is, and the host's own answers |
//! | `keys` (wasm32, a config that fetches keys) | the root context's fetches: `dispatch_http_call` out, the documents into the core |
//! | `instance` (wasm32, and the native module) | the VM's one core instance, for both; natively one per Envoy worker thread |
//! | [`native`] (feature `native`, not wasm32) | the same core as a native Envoy dynamic module: its hooks, the ABI bindings, the decision carried out, keys fetched on requests |
//!
//! A build whose config changes no response keeps nothing per stream: a
//! request is one call into the VM, `proxy_on_request_headers` (`callbacks` says
//! why Envoy needs no other, and how it still fails closed).
//!
//! How the upstream is chosen (a header the route table matches) and why is
//! in `deploy/envoy/README.md`.

pub mod decision;
pub mod fetch;
pub mod input;
pub mod limits;
pub mod metrics;
pub mod plan;

#[cfg(target_arch = "wasm32")]
mod callbacks;
#[cfg(target_arch = "wasm32")]
mod filter;
#[cfg(any(target_arch = "wasm32", feature = "native"))]
mod instance;
#[cfg(all(target_arch = "wasm32", runtime_keys))]
mod keys;
#[cfg(all(feature = "native", not(target_arch = "wasm32")))]
pub mod native;
#[cfg(target_arch = "wasm32")]
mod raw;
#[cfg(target_arch = "wasm32")]
mod reply;

/// The request header the filter sets to the forward's origin; the rendered
/// route table matches it exactly to pick the origin's cluster, and removes
/// it before the request leaves Envoy.
pub use contract::fields::UPSTREAM as UPSTREAM_HEADER;
