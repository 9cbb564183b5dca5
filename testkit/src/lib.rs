//! The test kit: what every test, benchmark and fuzzer of the gateway shares,
//! in one place.
//!
//! | module | what |
//! |---|---|
//! | [`fixture`] | the test fixture (`testkit/fixture.toml`): its config, as the build and as the worker read it, and the module built from it |
//! | [`tokens`] | HS256 token minting and request heads |
//! | [`mix`] | the one seeded request mix every figure is quoted for (60 % valid, 10 % each expired, bad signature, no token, unknown audience) |
//! | [`gateway`] | the gateway behind one trait for the attack corpus, the differential tests and the fuzz targets: a decision read back, the invariants every answer meets |
//!
//! Beside the crate: `conformance/`, the forwarding and policy corpora every
//! host runs (raw requests and what the upstream must receive), and `jwks/`,
//! the test identity provider and the key-fetching tests of every host. The RFC and
//! Wycheproof vectors live with the crate that uses them, in
//! `worker/tests/data/`.

pub mod fixture;
pub mod gateway;
pub mod mix;
pub mod tokens;
