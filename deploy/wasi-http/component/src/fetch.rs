//! One key document fetched through `wasi:http/outgoing-handler`
//! (`worker/ABI.md`, "Keys fetched at run time", step 1): `GET`, no
//! redirect followed (wasi:http follows none), status 200, at most the
//! module's document buffer, the whole exchange within the source's
//! `timeout_ms` (the runtime's timeouts for connecting and for each wait,
//! and a deadline of its own for the whole). The component reads no
//! document: the core does.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use crate::bindings::wasi::clocks::monotonic_clock;
use crate::bindings::wasi::http::outgoing_handler;
use crate::bindings::wasi::http::types::{
    ErrorCode, Fields, IncomingBody, OutgoingBody, OutgoingRequest, Scheme,
};
use crate::bindings::wasi::io::poll::{self, Pollable};
use crate::bindings::wasi::io::streams::StreamError;

/// Why a fetch failed before the module read the document.
#[derive(Debug)]
pub enum Failure {
    /// A status other than 200.
    Status(u16),
    /// A body longer than the module's document buffer (its size).
    TooLarge(usize),
    /// No complete response within the source's `timeout_ms`.
    TimedOut,
    /// The runtime could not make the request or read the response: its
    /// error code (not a timeout: those are [`Failure::TimedOut`]).
    Failed(ErrorCode),
    /// The URL is not an absolute http(s) URL.
    NotUrl,
}

impl core::fmt::Display for Failure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Failure::Status(code) => write!(f, "status {code}"),
            Failure::TooLarge(capacity) => write!(f, "larger than {capacity} bytes"),
            Failure::TimedOut => f.write_str("timed out"),
            Failure::Failed(code) => f.write_str(&describe(code)),
            Failure::NotUrl => f.write_str("not an http(s) URL"),
        }
    }
}

/// A fetched document and its response's `Cache-Control` value (every such
/// field joined with `, `), which the core reads its `max-age` from.
pub struct Document {
    /// The body.
    pub bytes: Vec<u8>,
    /// The `Cache-Control` value, as its bytes.
    pub cache_control: Vec<u8>,
}

/// Fetches `url` within `timeout_ms`, reading at most `capacity` bytes.
pub fn get(url: &str, timeout_ms: u32, capacity: usize) -> Result<Document, Failure> {
    let timeout_ns = u64::from(timeout_ms) * 1_000_000;
    let deadline = monotonic_clock::now().saturating_add(timeout_ns);
    let (https, authority, path) = crate::plan::split_url(url).ok_or(Failure::NotUrl)?;
    let accept = [("accept".to_owned(), b"application/json".to_vec())];
    let headers = Fields::from_list(&accept).map_err(|_| Failure::NotUrl)?;
    let request = OutgoingRequest::new(headers);
    let scheme = if https { Scheme::Https } else { Scheme::Http };
    let set = request
        .set_scheme(Some(&scheme))
        .and(request.set_authority(Some(authority)))
        .and(request.set_path_with_query(Some(path)));
    let (Ok(()), Ok(body)) = (set, request.body()) else { return Err(Failure::NotUrl) };
    let options = crate::exchange::options(timeout_ns, timeout_ns);
    let future = outgoing_handler::handle(request, Some(options)).map_err(failed)?;
    OutgoingBody::finish(body, None).map_err(failed)?;
    wait(&future.subscribe(), deadline)?;
    let response = crate::exchange::response(&future).map_err(failed)?;
    let status = response.status();
    if status != 200 {
        return Err(Failure::Status(status));
    }
    let fields = response.headers().entries();
    let length = fields.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-length"));
    let length = length.and_then(|(_, v)| core::str::from_utf8(v).ok()?.parse::<u64>().ok());
    if length.is_some_and(|len| len > capacity as u64) {
        return Err(Failure::TooLarge(capacity));
    }
    let cache_control = fields
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("cache-control"))
        .map(|(_, v)| v.as_slice())
        .collect::<Vec<_>>()
        .join(b", ".as_slice());
    let body = response.consume().map_err(|()| Failure::Failed(ErrorCode::HttpProtocolError))?;
    let bytes = read_capped(&body, capacity, deadline)?;
    Ok(Document { bytes, cache_control })
}

/// Reads `body` to its end, at most `capacity` bytes, by `deadline`.
fn read_capped(body: &IncomingBody, capacity: usize, deadline: u64) -> Result<Vec<u8>, Failure> {
    let stream = body.stream().map_err(|()| Failure::Failed(ErrorCode::HttpProtocolError))?;
    let mut bytes = Vec::new();
    loop {
        wait(&stream.subscribe(), deadline)?;
        // One byte past the capacity is enough to know the body is too long.
        let want = (capacity + 1 - bytes.len()) as u64;
        match stream.read(want) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => return Ok(bytes),
            Err(StreamError::LastOperationFailed(_)) => {
                return Err(Failure::Failed(ErrorCode::HttpResponseIncomplete));
            }
        }
        if bytes.len() > capacity {
            return Err(Failure::TooLarge(capacity));
        }
    }
}

/// The failure for an error code: the runtime's own timeouts are timeouts.
fn failed(code: ErrorCode) -> Failure {
    match code {
        ErrorCode::ConnectionTimeout | ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout => {
            Failure::TimedOut
        }
        code => Failure::Failed(code),
    }
}

/// What went wrong, in words for the log line (wasi:http's names for the
/// rest).
fn describe(code: &ErrorCode) -> String {
    match code {
        ErrorCode::DnsError(_) => "the provider's name did not resolve".into(),
        ErrorCode::ConnectionRefused => "connection refused".into(),
        ErrorCode::ConnectionTerminated | ErrorCode::HttpResponseIncomplete => {
            "connection reset before the whole response".into()
        }
        code => alloc::format!("{code:?}"),
    }
}

/// Waits until `ready` is, or fails at `deadline` (monotonic nanoseconds).
fn wait(ready: &Pollable, deadline: u64) -> Result<(), Failure> {
    let timer = monotonic_clock::subscribe_instant(deadline);
    match poll::poll(&[ready, &timer]).contains(&0) {
        true => Ok(()),
        false => Err(Failure::TimedOut),
    }
}
