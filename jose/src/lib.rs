//! The JOSE text formats the gateway reads, in one `no_std` crate with no
//! allocation, shared by the module (`worker`, at every request and when a
//! host hands it a fetched key set) and the build (`config`), so that both
//! read them with the same code:
//!
//! | module | job |
//! |---|---|
//! | [`json`] | strict JSON (RFC 8259), read in one pass; escapes decoded |
//! | [`base64url`] | canonical base64url without padding (RFC 4648 section 5) |
//! | [`jwks`] | JWK sets (RFC 7517, 7518) validated key by key |
//! | [`discovery`] | an OpenID discovery document's `jwks_uri` |
#![cfg_attr(not(test), no_std)]

pub mod base64url;
pub mod discovery;
pub mod json;
pub mod jwks;
