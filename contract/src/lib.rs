//! The contract between the gateway module and its hosts (`worker/ABI.md`),
//! written once: the version, the context line a host writes before the
//! request head, the decision the module writes back (its one encoder and
//! its one decoder), the route table, and the header names every host and
//! test shares.
//!
//! The module writes its decision with [`Encoder`], which knows the wire
//! form; every reader (host-sim, the Envoy filter, the tests) reads it with
//! [`Decision::decode`], a zero-copy typed view that checks every rule of
//! the format first, so a host never executes a decision it cannot read.
//! The JavaScript shim cannot link Rust: it is checked against the golden
//! decisions in `contract/golden/decisions.json`, which this crate's tests
//! check against the decoder.
//!
//! | module | job |
//! |---|---|
//! | [`base64url`] | unpadded base64url, the encoding of thumbprints and JOSE hashes |
//! | [`claim_type`] | the JSON type a claim forwarded as a header must have |
//! | [`context`] | the line before the head: scheme, peer and client certificate |
//! | [`decision`] | the decision's typed view and its decoder |
//! | [`encode`] | the decision's encoder, used by the module |
//! | [`fields`] | header names and the answers hosts make themselves |
//! | [`key_sources`] | where and how often hosts fetch an issuer's keys |
//! | [`limits`] | rate limits: the limit table, the buckets a forward names, GCRA, the RateLimit fields |
//! | [`key_schedule`] | when and what a module that fetches keys has its hosts fetch: refresh, `max-age`, backoff, asked-for rounds, discovery on every round |
//! | [`outcome`] | what a decision was, named: the label line's outcomes and indices |
//! | [`routes`] | the route table a module lists, and upstream overrides |
//! | `owned` (feature `std`) | a decision a host keeps, and the host's own answers as decisions |
#![no_std]

#[cfg(any(feature = "std", test))]
extern crate std;

pub mod base64url;
pub mod claim_type;
pub mod context;
pub mod decision;
pub mod encode;
pub mod fields;
pub mod key_schedule;
pub mod key_sources;
pub mod limits;
pub mod outcome;
#[cfg(feature = "std")]
pub mod owned;
pub mod routes;

pub use claim_type::ClaimType;
pub use context::{Context, ContextError, Scheme};
pub use decision::{Answer, Decision, DecodeError, Forward, Operation};
pub use encode::{Encoder, Full};
pub use outcome::{Cache, Labels};

/// The contract version. A module exports it (`abi_version`); a host
/// refuses a module whose version it does not know.
pub const ABI_VERSION: u32 = 6;

/// The status of a forward decision; every other status is a direct answer.
pub const FORWARD_STATUS: u16 = 200;
