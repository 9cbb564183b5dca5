//! What the component sends of its own: the core's answers, the answers a
//! host makes itself, and its log lines (the runtime's stderr).

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use contract::Answer;
use contract::fields::HostAnswer;

use crate::bindings::wasi::clocks::wall_clock;
use crate::bindings::wasi::http::types::{
    ErrorCode, Fields, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use crate::bindings::wasi::io::streams::OutputStream;
use crate::plan::Field;

/// The most bytes read at once from a body.
pub(crate) const CHUNK: u64 = 64 << 10; // 64 KiB

/// Writes `bytes` in the 4096-byte pieces a blocking write takes; whether
/// all were written.
pub(crate) fn write_all(to: &OutputStream, bytes: &[u8]) -> bool {
    bytes.chunks(4096).all(|piece| to.blocking_write_and_flush(piece).is_ok())
}

/// The wall clock in Unix seconds.
pub(crate) fn now_secs() -> f64 {
    let now = wall_clock::now();
    now.seconds as f64 + f64::from(now.nanoseconds) / 1e9
}

/// Sends the core's answer: its status, exactly its fields, and its body
/// (none for a status without one, nor to a HEAD request).
pub(crate) fn send_answer(response_out: ResponseOutparam, answer: &Answer<'_>, head: bool) {
    let fields: Vec<Field> =
        answer.fields().map(|(name, value)| (name.to_owned(), value.as_bytes().to_vec())).collect();
    let body = match (head, answer.status) {
        (true, _) | (_, 204 | 304) => None,
        _ => Some(answer.body.as_bytes()),
    };
    respond(response_out, answer.status, fields, body);
}

/// Sends one of the answers a host makes itself.
pub(crate) fn host_answer(response_out: ResponseOutparam, answer: HostAnswer) {
    let fields = alloc::vec![("content-type".to_owned(), contract::fields::JSON.as_bytes().to_vec())];
    respond(response_out, answer.status(), fields, Some(answer.body().as_bytes()));
}

/// Sends a response with `status`, `fields` and `body` (framed with
/// Content-Length); a response the runtime refuses to make becomes the
/// runtime's own error answer.
fn respond(response_out: ResponseOutparam, status: u16, mut fields: Vec<Field>, body: Option<&[u8]>) {
    if let Some(body) = body {
        fields.push(("content-length".to_owned(), decimal(body.len())));
    }
    let Ok(headers) = Fields::from_list(&fields) else {
        return ResponseOutparam::set(response_out, Err(internal("the runtime refused an answer's fields")));
    };
    let response = OutgoingResponse::new(headers);
    let (Ok(()), Ok(outgoing)) = (response.set_status_code(status), response.body()) else {
        return ResponseOutparam::set(response_out, Err(internal("the runtime refused an answer's status")));
    };
    ResponseOutparam::set(response_out, Ok(response));
    if let (Some(body), Ok(stream)) = (body, outgoing.write()) {
        let written = write_all(&stream, body);
        drop(stream);
        if !written {
            return;
        }
    }
    let _ = OutgoingBody::finish(outgoing, None);
}

/// `n` in decimal digits.
fn decimal(mut n: usize) -> Vec<u8> {
    let mut digits = Vec::new();
    loop {
        digits.push(b'0' + (n % 10) as u8);
        n /= 10;
        if n == 0 {
            digits.reverse();
            return digits;
        }
    }
}

/// The error the runtime answers for a response it would not let the
/// component make (logged as well).
fn internal(why: &str) -> ErrorCode {
    log(&["gateway: ", why].concat());
    ErrorCode::InternalError(Some(String::from(why)))
}

/// Writes one line to the runtime's stderr (its log).
pub(crate) fn log(line: &str) {
    let stderr = crate::bindings::wasi::cli::stderr::get_stderr();
    write_all(&stderr, [line, "\n"].concat().as_bytes());
}
