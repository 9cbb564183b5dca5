//! The gateway worker: for each HTTP request head, verify its HS256 bearer
//! token and decide to forward it to the upstream its audience names, or to
//! reject it with the right status.
//!
//! `no_std`, no heap, no imports: request scratch lives in a bump arena over
//! a fixed region. The request path runs in named phases, one module each:
//!
//! | phase | module | job |
//! |---|---|---|
//! | parse | [`request`] | request head (httparse, zero-copy) and its one bearer token |
//! | split | [`jws`] | compact JWS parts, canonical base64url |
//! | header | [`header`] | strict JSON ([`json`]); `alg` exactly HS256, `typ`, `crit`, key by `kid` |
//! | verify | [`signature`] | HMAC-SHA256, constant-time comparison |
//! | claims | [`claims`] | strict JSON; `exp`/`nbf`/`iat`, `iss`, `aud`, `sub` |
//! | route | [`route`] | binary search of the sorted audience table |
//! | respond | [`response`] | the decision in the output format |
//!
//! [`gateway`] runs them in order; [`abi`] is the host contract (`ABI.md`).
#![cfg_attr(not(test), no_std)]
#![doc = ""]
#![doc = include_str!("../ABI.md")]

pub mod abi;
pub mod arena;
pub mod claims;
pub mod config;
pub mod gateway;
pub mod header;
pub mod json;
pub mod jws;
pub mod reject;
pub mod request;
pub mod response;
pub mod route;
pub mod signature;

pub use config::Config;
pub use gateway::{Answer, handle};
pub use reject::{ErrorCode, Rejection};
