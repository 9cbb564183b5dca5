//! A forward carried out through `wasi:http/outgoing-handler` (`ABI.md`,
//! "Forward"): the client's method to the plan's origin and path, with the
//! client's fields less the plan's drops plus its sets, the client's body
//! streamed; the upstream's status, fields (with the plan's response edits)
//! and body streamed back. The runtime frames both bodies as the component
//! hands them ([`crate::framing`]: none, chunked, or the client's
//! `Content-Length` with exactly that many bytes) and sets `Host` from the
//! authority. A failure before the upstream's response is one of
//! the answers a host makes itself (`ABI.md`, "Answers the host makes
//! itself"); after it has begun, the client's response is cut short.

use alloc::vec::Vec;

use contract::Forward;
use contract::fields::HostAnswer;

use crate::bindings::wasi::clocks::monotonic_clock;
use crate::bindings::wasi::http::outgoing_handler;
use crate::bindings::wasi::http::types::{
    ErrorCode, Fields, FutureIncomingResponse, IncomingBody, IncomingResponse, Method, OutgoingBody,
    OutgoingRequest, OutgoingResponse, RequestOptions, ResponseOutparam, Scheme,
};
use crate::bindings::wasi::io::poll;
use crate::bindings::wasi::io::streams::{InputStream, StreamError};
use crate::framing::Body;
use crate::overrides::Overrides;
use crate::plan::{self, Field};
use crate::respond::{CHUNK, host_answer, log, write_all};

/// How long connecting to the upstream may take: 502 after (as host-sim's
/// `--upstream-connect-timeout`).
const CONNECT_TIMEOUT_NS: u64 = 5_000_000_000; // 5 s
/// How long the upstream may take to its response's first byte, and
/// between two bytes of it: 504 before the response has begun (host-sim's
/// `--upstream-timeout` bounds the whole exchange at 30 s).
const RESPONSE_TIMEOUT_NS: u64 = 30_000_000_000; // 30 s
/// How long the client's body may stall (no byte arrives) while it is
/// forwarded: 408 (as host-sim's `--body-timeout`).
const BODY_STALL_NS: u64 = 10_000_000_000; // 10 s

/// What the component keeps of the client's request for its forward.
pub(crate) struct ClientRequest {
    /// The method, sent as it came.
    pub method: Method,
    /// The fields as the runtime hands them.
    pub fields: Vec<Field>,
    /// The body (its stream below is its child and goes first).
    pub body: IncomingBody,
    /// The body's bytes.
    pub stream: InputStream,
    /// Bytes already read from the stream (to see whether content follows).
    pub first: Option<Vec<u8>>,
    /// How the body is sent.
    pub framing: Body,
    /// Fields the host adds to the upstream's response after the plan's
    /// (the `RateLimit` fields of the buckets it counted).
    pub response_fields: Vec<Field>,
}

/// Why a body could not be streamed through.
enum Failure {
    /// The client's body stalled.
    Stalled,
    /// A stream failed (the client or the upstream went away).
    Broken,
    /// The body's length is not its `Content-Length`: it came chunked
    /// beside it.
    Contradicted,
}

/// Sends `forward`'s request upstream and the upstream's response back.
/// When the client's body turns out longer or shorter than its
/// `Content-Length`, the upstream request is abandoned before its last byte
/// (it never receives a complete request) and `response_out` is handed back
/// unanswered, for the module's answer to the framing the client used.
pub(crate) fn forward(
    response_out: ResponseOutparam,
    forward: &Forward<'_>,
    client: ClientRequest,
    overrides: &Overrides,
) -> Result<(), ResponseOutparam> {
    let ClientRequest { method, fields, body, stream, first, framing, response_fields } = client;
    let (https, authority) = plan::split_origin(overrides.origin(forward.origin));
    let Ok(headers) = Fields::from_list(&plan::request_fields(fields, forward)) else {
        log("gateway: the runtime refused the forward's fields");
        return answered(response_out, HostAnswer::ModuleFailed);
    };
    let request = OutgoingRequest::new(headers);
    let scheme = if https { Scheme::Https } else { Scheme::Http };
    let set = request
        .set_method(&method)
        .and(request.set_scheme(Some(&scheme)))
        .and(request.set_authority(Some(authority)))
        .and(request.set_path_with_query(Some(forward.path)));
    // A request without a body gets none: its body is never taken, so the
    // runtime sends it without a framing field of its own.
    let outgoing = match framing {
        Body::None => Ok(None),
        Body::Chunked | Body::Length(_) => request.body().map(Some),
    };
    let (Ok(()), Ok(outgoing)) = (set, outgoing) else {
        log("gateway: the runtime refused the forward's request line");
        return answered(response_out, HostAnswer::ModuleFailed);
    };
    let future =
        match outgoing_handler::handle(request, Some(options(CONNECT_TIMEOUT_NS, RESPONSE_TIMEOUT_NS))) {
            Ok(future) => future,
            Err(code) => return answered(response_out, upstream_failure(&code)),
        };
    let sent = match (&outgoing, framing) {
        (Some(to), Body::Length(length)) => send_exact(length, &stream, to),
        (Some(to), _) => send_body(first, &stream, to),
        (None, _) => Ok(()),
    };
    drop(stream);
    drop(body);
    match sent {
        Ok(()) => {
            // The upstream's answer says what became of a request it got incomplete.
            if let Some(outgoing) = outgoing {
                let _ = OutgoingBody::finish(outgoing, None);
            }
        }
        Err(Failure::Stalled) => return answered(response_out, HostAnswer::BodyTimedOut),
        // Dropped unfinished, the body is aborted, and the request with it.
        Err(Failure::Contradicted) => {
            drop(outgoing);
            drop(future);
            return Err(response_out);
        }
        Err(Failure::Broken) => drop(outgoing),
    }
    match response(&future) {
        Ok(upstream) => relay(response_out, forward, upstream, response_fields),
        Err(code) => host_answer(response_out, upstream_failure(&code)),
    }
    Ok(())
}

/// Sends one of the answers a host makes itself: the forward is over.
fn answered(response_out: ResponseOutparam, answer: HostAnswer) -> Result<(), ResponseOutparam> {
    host_answer(response_out, answer);
    Ok(())
}

/// The first bytes of a body, read before the decision: empty when it ends
/// at once, `None` when it cannot be read (then no content follows either);
/// the client's 408 when none come within the stall bound.
pub(crate) fn first_bytes(from: &InputStream) -> Result<Option<Vec<u8>>, HostAnswer> {
    if !readable_in_time(from) {
        return Err(HostAnswer::BodyTimedOut);
    }
    Ok(match from.read(CHUNK) {
        Ok(bytes) => Some(bytes),
        Err(StreamError::Closed) => Some(Vec::new()),
        Err(StreamError::LastOperationFailed(_)) => None,
    })
}

/// Whether `from` has bytes (or its end) before the client's body stalls
/// for `BODY_STALL_NS`.
fn readable_in_time(from: &InputStream) -> bool {
    let ready = from.subscribe();
    let stall = monotonic_clock::subscribe_duration(BODY_STALL_NS);
    poll::poll(&[&ready, &stall]).contains(&0)
}

/// Request options: the connect timeout, and the first-byte and
/// between-bytes timeouts.
pub(crate) fn options(connect_ns: u64, response_ns: u64) -> RequestOptions {
    let options = RequestOptions::new();
    // A runtime that does not take a timeout keeps its own.
    let _ = options.set_connect_timeout(Some(connect_ns));
    let _ = options.set_first_byte_timeout(Some(response_ns));
    let _ = options.set_between_bytes_timeout(Some(response_ns));
    options
}

/// Streams the client's body (`first`, then the rest of `from`) into the
/// upstream request's body, each wait for the client bounded.
fn send_body(first: Option<Vec<u8>>, from: &InputStream, to: &OutgoingBody) -> Result<(), Failure> {
    let to = to.write().map_err(|()| Failure::Broken)?;
    if !write_all(&to, &first.unwrap_or_default()) {
        return Err(Failure::Broken);
    }
    loop {
        if !readable_in_time(from) {
            return Err(Failure::Stalled);
        }
        match to.blocking_splice(from, CHUNK) {
            Ok(_) => {}
            Err(StreamError::Closed) => return to.blocking_flush().map_err(|_| Failure::Broken),
            Err(StreamError::LastOperationFailed(_)) => return Err(Failure::Broken),
        }
    }
}

/// Streams a body of `length` bytes: all but its last byte as they come,
/// the last only once the client's body has ended at exactly `length`
/// bytes, so that a body longer or shorter than its `Content-Length` never
/// gives the upstream a complete request. Each wait for the client is
/// bounded.
fn send_exact(length: u64, from: &InputStream, to: &OutgoingBody) -> Result<(), Failure> {
    let to = to.write().map_err(|()| Failure::Broken)?;
    let mut sent = 0;
    while sent + 1 < length {
        if !readable_in_time(from) {
            return Err(Failure::Stalled);
        }
        match to.blocking_splice(from, CHUNK.min(length - 1 - sent)) {
            Ok(moved) => sent += moved,
            Err(StreamError::Closed) => return Err(Failure::Contradicted),
            Err(StreamError::LastOperationFailed(_)) => return Err(Failure::Broken),
        }
    }
    // The last byte, and one more if the body has it.
    let mut rest = Vec::new();
    loop {
        if !readable_in_time(from) {
            return Err(Failure::Stalled);
        }
        match from.read(length - sent + 1 - rest.len() as u64) {
            Ok(bytes) => rest.extend_from_slice(&bytes),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(_)) => return Err(Failure::Broken),
        }
        if sent + rest.len() as u64 > length {
            return Err(Failure::Contradicted);
        }
    }
    if sent + rest.len() as u64 != length {
        return Err(Failure::Contradicted);
    }
    match write_all(&to, &rest) && to.blocking_flush().is_ok() {
        true => Ok(()),
        false => Err(Failure::Broken),
    }
}

/// Waits for the upstream's response (the runtime enforces the timeouts).
pub(crate) fn response(future: &FutureIncomingResponse) -> Result<IncomingResponse, ErrorCode> {
    loop {
        match future.get() {
            Some(Ok(result)) => return result,
            Some(Err(())) => return Err(ErrorCode::InternalError(None)),
            None => future.subscribe().block(),
        }
    }
}

/// Sends the upstream's status and fields, with the plan's response
/// edits, and streams its body; a body that breaks off cuts the client's
/// response short (it is not finished).
fn relay(
    response_out: ResponseOutparam,
    forward: &Forward<'_>,
    upstream: IncomingResponse,
    extra: Vec<Field>,
) {
    let mut fields = plan::response_fields(upstream.headers().entries(), forward);
    fields.extend(extra);
    let Ok(headers) = Fields::from_list(&fields) else {
        log("gateway: the runtime refused the upstream response's fields");
        return host_answer(response_out, HostAnswer::ModuleFailed);
    };
    let response = OutgoingResponse::new(headers);
    let (Ok(()), Ok(to), Ok(from)) =
        (response.set_status_code(upstream.status()), response.body(), upstream.consume())
    else {
        return host_answer(response_out, HostAnswer::UpstreamUnavailable);
    };
    ResponseOutparam::set(response_out, Ok(response));
    let copied = copy(&from, &to);
    if copied.is_ok() {
        let _ = OutgoingBody::finish(to, None);
    }
}

/// Streams an upstream body into the client's response body.
fn copy(from: &IncomingBody, to: &OutgoingBody) -> Result<(), Failure> {
    let from = from.stream().map_err(|()| Failure::Broken)?;
    let to = to.write().map_err(|()| Failure::Broken)?;
    loop {
        match to.blocking_splice(&from, CHUNK) {
            Ok(_) => {}
            Err(StreamError::Closed) => return to.blocking_flush().map_err(|_| Failure::Broken),
            Err(StreamError::LastOperationFailed(_)) => return Err(Failure::Broken),
        }
    }
}

/// The answer for an upstream that could not be reached or did not answer
/// in time.
fn upstream_failure(code: &ErrorCode) -> HostAnswer {
    match code {
        ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout => HostAnswer::UpstreamTimedOut,
        _ => HostAnswer::UpstreamUnavailable,
    }
}
