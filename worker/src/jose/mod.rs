//! The token side of the request path (JOSE: RFC 7515, 7518, 7519): the
//! compact JWS split and decoded, its header and the key it selects, the
//! signature, and the claims, all read with one strict JSON reader.

pub mod claims;
#[cfg(policy_dpop)]
pub mod dpop;
pub mod header;
pub mod jws;
pub mod signature;

/// Strict JSON, from the crate the build reads key sets with too.
pub use gateway_jose::json;
