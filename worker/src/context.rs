//! Phase 0, context: what only the host knows about the connection, read
//! from the first line of the input with the contract's reader
//! ([`contract::context`]): the scheme the client used and the peer
//! address, for `X-Forwarded-Proto` and `X-Forwarded-For`.

pub use contract::context::Context;

use crate::reject::Rejection;

/// Splits the input into the context line and the request head; a
/// malformed line is the host's failure (500).
pub fn split(input: &[u8]) -> Result<(Context<'_>, &[u8]), Rejection> {
    contract::context::split(input).map_err(|_| Rejection::InvalidContext)
}
