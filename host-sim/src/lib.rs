//! `host-sim`: the gateway module on a developer's machine, as an edge
//! runtime would run it. The module itself runs in the `runtime` crate
//! (engine, instances, the limits of a Store, the contract's decisions);
//! this crate is what is around it: the command line, the HTTP server that
//! executes the module's decisions, and two tools for trying it.
//!
//! Why two crates: the runtime is what any Rust program embeds (the benches
//! and the tests do), and it needs no HTTP stack, config file or test kit;
//! everything here does. `main.rs` only parses the arguments and hands each
//! command to its own file, which returns an exit code.
//!
//! | module | concern |
//! |---|---|
//! | [`args`] | the flags every command shares, turned into the runtime's types |
//! | [`compile`], [`eval`], [`serve`] | the commands that run the module |
//! | [`echo`], [`mint`] | the tools: an echo upstream, and a token signed with the config's key |
//! | [`listen`] | the HTTP/1.1 server: accept loop, connection cap, head and idle timeouts, shutdown |
//! | [`threads`] | `serve`'s serving threads: each connection handed to one thread and served there to the end |
//! | [`upstream`], [`exchange`], [`gate`] | executing a forward: the request as planned, sent within the limits, at most so many connections per upstream |
//! | [`keys`] | fetching the keys of a module that fetches them, on the module's schedule |
//! | [`traffic`] | rate limits: the module's buckets counted in process or in Redis |
//! | [`limits`] | `serve`'s limit flags and the groups they are handed on in |
//! | [`body`], [`stream`] | the one body wrapper and the one IO wrapper the above share |
//! | [`access_log`] | `serve`'s access-log line, escaped, as text or JSON |
//! | [`metrics`] | `serve --metrics`: the counters and histograms, and their Prometheus listener |
//!
//! Measuring the host is the benches' job (`bench-tool host`, `make bench`).

pub mod access_log;
pub mod args;
pub mod body;
pub mod compile;
pub mod echo;
pub mod eval;
pub mod exchange;
pub mod gate;
pub mod keys;
pub mod limits;
pub mod listen;
pub mod metrics;
pub mod mint;
pub mod serve;
pub mod stream;
pub mod threads;
pub mod tls;
pub mod traffic;
pub mod upstream;
