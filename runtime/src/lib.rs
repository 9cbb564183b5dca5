//! The gateway module (`dist/gateway.wasm`, contract in `worker/ABI.md`) in
//! wasmtime, for any Rust program that embeds it: `host-sim` (the command
//! line and HTTP server), the benches and the tests.
//!
//! Why a crate of its own: an embedder needs the engine, the instances and
//! their limits, and the contract's decisions, and nothing of a command
//! line, an HTTP stack, a config file or a test kit. It depends on wasmtime
//! and the `contract` crate only, so what it does can be read in five files:
//!
//! | module | concern |
//! |---|---|
//! | [`engine`] | the engine's `Config` line by line; loading a `.wasm` (JIT) or a `.cwasm`; precompiling |
//! | `exports` | the contract's exports, checked once per module |
//! | `instance` | [`Runtime`]: the `InstancePre`, a Store per instance, deciding a request fresh or reused; a sibling on an engine of its own per serving thread |
//! | `keys` | keys fetched at run time: the keeper instance that installs documents, the key image every instance receives |
//! | `limited` | rate limits: [`Runtime::decide_counted`] lets the host count a forward's buckets and asks the same instance for the 429 (`limited`) |
//! | `limits` | the limits of a Store: the memory cap, the CPU deadline, the epoch ticker |
//! | `warm` | a cold start's first request: [`Runtime::warm_up`] (a fixed request decided before serving), the first instance's memory made resident |
//! | `input` | what the host writes into the module: [`Input`] (context line and head) and the time |
//! | `error` | [`LoadError`] (refuse to start) and [`GuestError`] (500/503 for one request) |
//!
//! The decision it reads back is the `contract` crate's `DecisionBuf`.
//!
//! ```no_run
//! use runtime::{EngineOptions, ModuleSource, Runtime};
//! let runtime = Runtime::load(&EngineOptions::default(), &ModuleSource::Wasm("dist/gateway.wasm".into()), 2)?;
//! let head: &[u8] = b"GET / HTTP/1.1\r\nHost: gw\r\n\r\n";
//! let outcome = runtime.decide_fresh(head, 1.8e9);
//! assert_eq!(outcome.map(|d| d.status()), Ok(401));
//! # Ok::<(), runtime::LoadError>(())
//! ```

pub mod engine;
mod error;
mod exports;
mod input;
mod instance;
mod keys;
mod limited;
mod limits;
mod warm;

pub use contract::key_schedule::Why;
pub use contract::key_sources::SourceKind;
pub use engine::{Compiler, EngineOptions, MemoryReset, ModuleSource};
pub use error::{GuestError, LoadError};
pub use input::{Input, MAX_CONTEXT_LINE, Scheme, unix_now, unix_seconds};
pub use instance::{Isolation, Layout, Outcome, Prepared, Reusable, Runtime, precompile_file};
pub use keys::{KeySourceBuf, RoundStep, Verdict};
pub use limited::Refusal;
pub use warm::WARM_UP_HEAD;
