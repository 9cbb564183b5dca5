//! The HTTP side of the request path: the head as the client sent it, the
//! target normalized, where the token is, a browser's CORS request, and
//! the request the upstream receives.

pub mod cors;
pub mod forward;
pub mod request;
pub mod target;
pub mod tokens;
