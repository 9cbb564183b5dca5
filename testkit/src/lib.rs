//! The test kit: what every test, benchmark and fuzzer of the gateway shares,
//! in one place.
//!
//! | module | what |
//! |---|---|
//! | [`fixture`] | the test fixture (`testkit/fixture.toml`): its config, as the build and as the worker read it, and the module built from it |
//! | [`tokens`] | HS256 token minting and request heads |
//! | [`mix`] | the one seeded request mix every figure is quoted for (60 % valid, 10 % each expired, bad signature, no token, unknown audience) |
//!
//! Beside the crate: `conformance/`, the forwarding corpus every host runs
//! (raw requests and what the upstream must receive). The RFC and
//! Wycheproof vectors live with the crate that uses them, in
//! `worker/tests/data/`.

pub mod fixture;
pub mod mix;
pub mod tokens;
