//! The gateway worker: for each HTTP request head, verify its bearer token
//! (HS256; RS256, ES256 and EdDSA as build features) and decide either to
//! reject it with the right status, or to forward it, and then exactly what
//! the upstream its audience names receives.
//!
//! `no_std`, no heap, no imports: request scratch lives in a bump arena over
//! a fixed region. The request path runs in named phases, one module each:
//!
//! | phase | module | job |
//! |---|---|---|
//! | context | [`context`] | the host's facts: scheme and peer address |
//! | parse | [`request`] | request head (httparse, zero-copy), framing and `Host` checks, the one bearer token |
//! | target | [`target`] | the request target normalized, confined, or refused |
//! | split | [`jws`] | compact JWS parts, canonical base64url |
//! | header | [`header`] | strict JSON ([`json`]), member names decoded as in the claims; key by `kid`, `alg` exactly that key's algorithm, `typ`, `crit` |
//! | verify | [`signature`] | by the key's algorithm: HMAC-SHA256 (constant-time comparison); RS256, ES256, EdDSA as build features; [`cache`] remembers verified tokens per instance |
//! | claims | [`claims`] | strict JSON; `exp`/`nbf`/`iat`, `iss`, `aud`, `sub` |
//! | route | [`route`] | binary search of the sorted audience table |
//! | forward | [`forward`] | the upstream request: origin, path, fields dropped and set |
//! | respond | [`response`] | a rejection in the output format |
//!
//! [`gateway`] runs them in order; [`abi`] is the host contract (`ABI.md`).
#![cfg_attr(not(test), no_std)]
#![doc = ""]
#![doc = include_str!("../ABI.md")]

pub mod abi;
pub mod arena;
pub mod cache;
pub mod claims;
pub mod config;
pub mod context;
pub mod forward;
pub mod gateway;
pub mod header;
pub mod json;
pub mod jws;
pub mod reject;
pub mod request;
pub mod response;
pub mod route;
pub mod signature;
pub mod target;

pub use config::Config;
pub use gateway::{Answer, handle};
pub use reject::{ErrorCode, Rejection};
