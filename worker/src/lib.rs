//! The gateway worker: for each HTTP request head, decide either to answer
//! it directly (a rejection with the right status, a CORS preflight), or to
//! forward it, and then exactly what the upstream receives.
//!
//! `no_std`, no heap, no imports: request scratch lives in a bump arena over
//! a fixed region. The request path runs in named phases, grouped by the
//! protocol they read:
//!
//! | phase | module | job |
//! |---|---|---|
//! | context | `contract::context` | the host's facts: scheme and peer address |
//! | parse | `http::request` | request head (httparse, zero-copy), framing and `Host` checks |
//! | target | `http::target` | the request target normalized, confined, or refused |
//! | cors | `http::cors` | a browser's origin, and its preflight answered |
//! | rule | `policy` | the first rule for the method and path: public, token (with requirements), deny |
//! | token | `http::tokens` | the one token: `Authorization: Bearer`, a cookie or a header |
//! | split, header, verify | `jose::{jws, header, signature}` | compact JWS, canonical base64url; header member names decoded as the claims'; key by `kid` within the token's issuer, `alg` exactly that key's; the signature; [`cache`] remembers verified tokens per instance |
//! | claims | `jose::claims` | strict JSON; `exp`/`nbf`/`iat`, `iss`, `aud` (the route), `sub`, the claims the policy reads |
//! | requirements | `policy::requirements` | scopes, roles, claim values: 403 `insufficient_scope` |
//! | forward | `http::forward` | the upstream request: origin, path, fields dropped and set, claims as headers, the response's CORS fields |
//! | answer | [`answer`] | a rejection or a preflight, as a direct answer |
//!
//! [`decide`] runs them in order; [`abi`] is the host contract (`ABI.md`).
//! The surface: [`handle`] and [`handle_cached`] for native embedders,
//! [`abi::Instance`] for hosts of the module's contract, [`config`] and
//! [`keys`] for configurations, [`Rejection`] for what can go wrong. The
//! phases are private; [`internal`] exposes them to the benches and fuzz
//! targets only, with no promise of stability.
#![cfg_attr(not(test), no_std)]
#![doc = ""]
#![doc = include_str!("../ABI.md")]

pub mod abi;
pub mod answer;
mod arena;
pub mod cache;
pub mod config;
mod ct;
pub mod decide;
mod http;
mod jose;
pub mod keys;
pub mod limits;
mod policy;
mod reject;
mod route;

pub use decide::{Outcome, handle, handle_cached};
pub use reject::{ErrorCode, Rejection};

/// The phases, for the benches and fuzz targets that measure or drive one
/// alone. Not a stable API.
#[doc(hidden)]
pub mod internal {
    pub use crate::arena::Arena;
    pub use crate::decide::authorize;
    pub use crate::http::cors::CrossOrigin;
    pub use crate::http::{forward, request, target, tokens};
    pub use crate::jose::{claims, header, json, jws, signature};
    /// The route table's lookup.
    pub mod route {
        pub use crate::route::lookup;
    }
}

#[cfg(test)]
mod cases;
