//! One key document fetched through `wasi:http/outgoing-handler`
//! (`worker/ABI.md`, "Keys fetched at run time", step 1): `GET`, no
//! redirect followed (wasi:http follows none), status 200, at most the
//! module's document buffer, the whole exchange within the source's
//! `timeout_ms` (the runtime's timeouts for connecting and for each wait,
//! and a deadline of its own for the whole). The component reads no
//! document: the core does. A [`Fetch`] is waited for (a request that
//! needs the keys) or looked at without waiting (a refresh, moved on by
//! the requests that follow).

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use crate::bindings::wasi::clocks::monotonic_clock;
use crate::bindings::wasi::http::outgoing_handler;
use crate::bindings::wasi::http::types::{
    ErrorCode, Fields, FutureIncomingResponse, IncomingBody, IncomingResponse, OutgoingRequest, Scheme,
};
use crate::bindings::wasi::io::poll::{self, Pollable};
use crate::bindings::wasi::io::streams::{InputStream, StreamError};

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

/// A fetch under way: its response awaited, then its body read, by a
/// deadline. The runtime carries the exchange on between the component's
/// calls (its own tasks), so a fetch started after one response can be
/// read on the next request, in an instance the runtime reuses, without
/// that request waiting for it.
pub struct Fetch {
    /// The monotonic clock's deadline of the whole exchange.
    deadline: u64,
    /// The most bytes the body may have.
    capacity: usize,
    stage: Stage,
}

/// Where a fetch is.
enum Stage {
    /// The response is awaited.
    Waiting(FutureIncomingResponse),
    /// The body is read.
    Reading(Reading),
    /// Ended (its outcome handed out).
    Over,
}

/// A response whose body is read. Fields drop in their order: the stream
/// before its body, the body before its response.
struct Reading {
    stream: InputStream,
    _body: IncomingBody,
    _response: IncomingResponse,
    _future: FutureIncomingResponse,
    bytes: Vec<u8>,
    cache_control: Vec<u8>,
}

impl Fetch {
    /// Sends `GET url`, to be complete within `timeout_ms`, its body at
    /// most `capacity` bytes.
    pub fn start(url: &str, timeout_ms: u32, capacity: usize) -> Result<Fetch, Failure> {
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
        if set.is_err() {
            return Err(Failure::NotUrl);
        }
        // No body: the request is complete as it is sent.
        let options = crate::exchange::options(timeout_ns, timeout_ns);
        let future = outgoing_handler::handle(request, Some(options)).map_err(failed)?;
        Ok(Fetch { deadline, capacity, stage: Stage::Waiting(future) })
    }

    /// Moves the fetch on: with `wait`, until it ends (by its deadline);
    /// without, as far as it can now. `None` while it is under way.
    pub fn advance(&mut self, wait: bool) -> Option<Result<Document, Failure>> {
        loop {
            match core::mem::replace(&mut self.stage, Stage::Over) {
                Stage::Waiting(future) => {
                    let ready = future.subscribe();
                    let arrived = match wait {
                        true => self.wait(&ready),
                        false => ready.ready(),
                    };
                    drop(ready);
                    if !arrived {
                        self.stage = Stage::Waiting(future);
                        return self.under_way();
                    }
                    match self.open(future) {
                        Ok(reading) => self.stage = Stage::Reading(reading),
                        Err(failure) => return Some(Err(failure)),
                    }
                }
                Stage::Reading(mut reading) => {
                    if wait && !self.wait(&reading.stream.subscribe()) {
                        return Some(Err(Failure::TimedOut));
                    }
                    // One byte past the capacity is enough to know the body is too long.
                    let want = (self.capacity + 1 - reading.bytes.len()) as u64;
                    match reading.stream.read(want) {
                        Ok(chunk) if chunk.is_empty() && !wait => {
                            self.stage = Stage::Reading(reading);
                            return self.under_way();
                        }
                        Ok(chunk) => reading.bytes.extend_from_slice(&chunk),
                        Err(StreamError::Closed) => {
                            let Reading { bytes, cache_control, .. } = reading;
                            return Some(Ok(Document { bytes, cache_control }));
                        }
                        Err(StreamError::LastOperationFailed(_)) => {
                            return Some(Err(Failure::Failed(ErrorCode::HttpResponseIncomplete)));
                        }
                    }
                    if reading.bytes.len() > self.capacity {
                        return Some(Err(Failure::TooLarge(self.capacity)));
                    }
                    self.stage = Stage::Reading(reading);
                }
                Stage::Over => return Some(Err(Failure::TimedOut)),
            }
        }
    }

    /// `None` (under way) before the deadline, a timeout after it.
    fn under_way(&self) -> Option<Result<Document, Failure>> {
        (monotonic_clock::now() >= self.deadline).then_some(Err(Failure::TimedOut))
    }

    /// Waits until `ready` is, or the deadline passes: whether it is.
    fn wait(&self, ready: &Pollable) -> bool {
        let timer = monotonic_clock::subscribe_instant(self.deadline);
        poll::poll(&[ready, &timer]).contains(&0)
    }

    /// The response that arrived, checked (status 200, a length within the
    /// capacity) and its body opened.
    fn open(&self, future: FutureIncomingResponse) -> Result<Reading, Failure> {
        let response = crate::exchange::response(&future).map_err(failed)?;
        let status = response.status();
        if status != 200 {
            return Err(Failure::Status(status));
        }
        let fields = response.headers().entries();
        let length = fields.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-length"));
        let length = length.and_then(|(_, v)| core::str::from_utf8(v).ok()?.parse::<u64>().ok());
        if length.is_some_and(|len| len > self.capacity as u64) {
            return Err(Failure::TooLarge(self.capacity));
        }
        let cache_control = fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("cache-control"))
            .map(|(_, v)| v.as_slice())
            .collect::<Vec<_>>()
            .join(b", ".as_slice());
        let body = response.consume().map_err(|()| Failure::Failed(ErrorCode::HttpProtocolError))?;
        let stream = body.stream().map_err(|()| Failure::Failed(ErrorCode::HttpProtocolError))?;
        Ok(Reading {
            stream,
            _body: body,
            _response: response,
            _future: future,
            bytes: Vec::new(),
            cache_control,
        })
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
