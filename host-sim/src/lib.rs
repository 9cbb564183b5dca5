//! The wasmtime host that plays the edge runtime for the gateway module
//! (`dist/gateway.wasm`, contract in `worker/ABI.md`).
//!
//! | module | concern |
//! |---|---|
//! | [`engine`] | the engine's configuration, loading `.wasm` (JIT) or `.cwasm`, the epoch ticker |
//! | [`instance`] | the contract check, `InstancePre`, per-Store limits, deciding a request (fresh or reused instance) |
//! | [`input`] | what the host writes into the module: the [`input::Input`] (context line and head); the decision it reads back is the `contract` crate's |
//! | [`error`] | [`error::LoadError`] (refuse to start) and [`error::GuestError`] (500/503 for one request) |
//! | [`compile`], [`eval`], [`bench`], [`serve`], [`echo`], [`mint`] | the commands |
//! | [`listen`], [`upstream`] | HTTP server plumbing and forwarding upstream |
//! | [`limits`], [`exchange`], [`gate`] | `serve`'s limits: the flags, an upstream exchange within them, the per-upstream connection cap |
//! | [`access_log`] | `serve`'s access-log line, escaped |
//!
//! Deciding requests from Rust:
//!
//! ```no_run
//! use host_sim::engine::{EngineOptions, ModuleSource};
//! use host_sim::instance::{Reusable, Runtime};
//! let runtime = Runtime::load(&EngineOptions::default(), &ModuleSource::Wasm("dist/gateway.wasm".into()), 2)?;
//! let head: &[u8] = b"GET / HTTP/1.1\r\nHost: gw\r\n\r\n";
//! let outcome = runtime.decide_fresh(head, 1.8e9);
//! assert_eq!(outcome.map(|d| d.status()), Ok(401));
//! # Ok::<(), host_sim::error::LoadError>(())
//! ```

pub mod access_log;
pub mod bench;
pub mod compile;
pub mod echo;
pub mod engine;
pub mod error;
pub mod eval;
pub mod exchange;
pub mod gate;
pub mod input;
pub mod instance;
pub mod limits;
pub mod listen;
pub mod mint;
pub mod serve;
pub mod upstream;
