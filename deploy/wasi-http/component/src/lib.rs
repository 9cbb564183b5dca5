//! The gateway as a `wasi:http` 0.2 component: the same core as
//! `dist/gateway.wasm` (the `worker` crate, its config compiled in from
//! `GATEWAY_CONFIG`), behind the standard interface's
//! `wasi:http/incoming-handler`, so that `wasmtime serve`, Spin, wasmCloud
//! and any other runtime of the `wasi:http/proxy` world can run it. It adds
//! no rule of its own: it gives the core the request head rebuilt from the
//! request's parts, then carries out the decision literally, as any host of
//! `worker/ABI.md` does, through `wasi:http/outgoing-handler`.
//!
//! | module | job |
//! |---|---|
//! | [`input`] | the context line and the request head, from the request's parts into the core's input buffer |
//! | [`counter`] | rate limits counted in the instance's own memory |
//! | [`framing`] | the request body's framing as wasi:http shows it, and how a forward frames it |
//! | [`plan`] | a forward's fields: the upstream request's and the upstream response's |
//! | `handler` (wasm32) | the export: a request decided, an answer sent, a forward handed to `exchange` |
//! | `respond` (wasm32) | what the component sends of its own: the core's answers, the host's own answers, log lines |
//! | `exchange` (wasm32) | a forward: the upstream request, both bodies streamed, the upstream's failures |
//! | `keys`, `fetch` (wasm32, a config that fetches keys) | key documents fetched on requests, on the contract's schedule, into the core |
//! | `overrides` (wasm32) | upstream overrides (feature `upstream-override`) |
//! | `bindings` (wasm32) | the guest bindings of `wit/`, by `wit-bindgen` |
//! | `wasm` (wasm32) | the instance's state, the allocator, the panic handler: the component is `no_std` |
//!
//! `deploy/wasi-http/README.md` says what wasi:http shows a component and
//! what it does not (the client's address, some fields), and what a fresh
//! instance per request means for fetched keys.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

pub mod counter;
pub mod framing;
pub mod input;
pub mod plan;

#[cfg(target_arch = "wasm32")]
mod bindings;
#[cfg(target_arch = "wasm32")]
mod exchange;
#[cfg(all(target_arch = "wasm32", runtime_keys))]
mod fetch;
#[cfg(target_arch = "wasm32")]
mod handler;
#[cfg(all(target_arch = "wasm32", runtime_keys))]
mod keys;
#[cfg(target_arch = "wasm32")]
mod overrides;
#[cfg(target_arch = "wasm32")]
mod respond;
#[cfg(target_arch = "wasm32")]
mod wasm;
