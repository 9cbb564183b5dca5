//! The component's export, `wasi:http/incoming-handler`: each request's
//! head written into the core's input buffer, the core's decision read with
//! the contract's decoder, and carried out: a direct answer as an
//! `outgoing-response` with exactly its status, fields and body, or a
//! forward ([`crate::exchange`]). Every failure of the component's own
//! answers 500 (`gateway module failed`) and the request goes nowhere. A
//! body found to have come chunked beside its `Content-Length` (it is
//! longer or shorter than the field says) is answered with the module's
//! answer to a head carrying both ([`crate::framing`]).

#[cfg(runtime_keys)]
use contract::Answer;
use contract::fields::HostAnswer;
use contract::{Decision, DecodeError};
use worker::abi::{Instance, compiled_config};

use crate::bindings::Component;
use crate::bindings::exports::wasi::http::incoming_handler::Guest;
use crate::bindings::wasi::http::types::{IncomingRequest, Method, ResponseOutparam, Scheme};
use crate::framing;
use crate::input::{self, RequestLine};
#[cfg(runtime_keys)]
use crate::overrides::Overrides;
use crate::respond::{host_answer, log, now_secs, send_answer};
use crate::wasm::State;

impl Guest for Component {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        handle(crate::wasm::state(), request, response_out);
    }
}

/// Decides one request and carries out the decision.
fn handle(state: &mut State, request: IncomingRequest, response_out: ResponseOutparam) {
    let fields = request.headers().entries();
    let method = request.method();
    let path_with_query = request.path_with_query();
    let authority = request.authority();
    let scheme = match request.scheme() {
        Some(Scheme::Https) => input::Scheme::Https,
        _ => input::Scheme::Http,
    };
    // A request's body can be taken once, and it always can be here.
    let Ok(body) = request.consume() else { return host_answer(response_out, HostAnswer::ModuleFailed) };
    let Ok(stream) = body.stream() else { return host_answer(response_out, HostAnswer::ModuleFailed) };
    // Without a length that says content follows, the body's first bytes
    // say whether it does (an empty body ends at once); they are forwarded
    // first.
    let length = framing::content_length(&fields);
    let first = match framing::reads_ahead(length) {
        false => None,
        true => match crate::exchange::first_bytes(&stream) {
            Ok(first) => first,
            Err(answer) => return host_answer(response_out, answer),
        },
    };
    let (framing, chunked) = framing::body(length, first.as_ref().is_some_and(|bytes| !bytes.is_empty()));
    let head = matches!(method, Method::Head);
    let State { instance, overrides, .. } = state;
    if let Err(why) = overrides.load(instance) {
        log(&why);
        return host_answer(response_out, HostAnswer::ModuleFailed);
    }
    // Key fetches under way move on, without waiting for them.
    #[cfg(runtime_keys)]
    state.keys.advance(instance, overrides);
    let line = RequestLine {
        scheme,
        method: input::method_name(&method),
        path_with_query: path_with_query.as_deref(),
        authority: authority.as_deref(),
        chunked,
    };
    let len = input::write_input(&line, &fields, instance.input_mut());
    #[cfg(runtime_keys)]
    let decision = decide(instance, &mut state.keys, overrides, len);
    #[cfg(not(runtime_keys))]
    let decision = decide_once(instance, len);
    match decision {
        Ok(Decision::Answer(answer)) => send_answer(response_out, &answer, head),
        Ok(Decision::Forward(forward)) => {
            #[cfg(not(policy_limits))]
            let response_fields = alloc::vec::Vec::new();
            #[cfg(policy_limits)]
            let response_fields = match count(&mut state.counter, &forward) {
                Ok(fields) => fields,
                Err((bucket, retry_after, reset)) => {
                    let status = instance.limited(bucket, retry_after, reset, compiled_config());
                    match Decision::decode(status, instance.output()) {
                        Ok(Decision::Answer(answer)) => send_answer(response_out, &answer, head),
                        _ => host_answer(response_out, HostAnswer::ModuleFailed),
                    }
                    return;
                }
            };
            let client = crate::exchange::ClientRequest {
                method,
                fields,
                body,
                stream,
                first,
                framing,
                response_fields,
            };
            if let Err(response_out) = crate::exchange::forward(response_out, &forward, client, overrides) {
                // The head is still in the input buffer: it gets the chunked framing too.
                let len = input::add_chunked(instance.input_mut(), len);
                answer_framing(instance, len, response_out, head);
            }
        }
        Err(e) => {
            log(&["gateway: the decision cannot be read: ", e.describe()].concat());
            host_answer(response_out, HostAnswer::ModuleFailed);
        }
    }
    // With the response sent, the key refreshes that are due start (in an
    // instance the runtime reuses); the next request does not wait for them.
    #[cfg(runtime_keys)]
    state.keys.refresh_due(&mut state.instance, &state.overrides);
}

/// Counts a forward in each bucket it names (`ABI.md`, "Rate limits"), in
/// the instance's own memory: the `RateLimit` fields for its response, or
/// the first spent bucket's position, `Retry-After` and reset seconds.
#[cfg(policy_limits)]
fn count(
    counter: &mut crate::counter::Counter,
    forward: &contract::Forward<'_>,
) -> Result<alloc::vec::Vec<crate::plan::Field>, (u32, u32, u32)> {
    use alloc::borrow::ToOwned;
    counter.seed(crate::bindings::wasi::random::random::get_random_u64);
    let now = crate::bindings::wasi::clocks::wall_clock::now();
    let now_us = now.seconds * 1_000_000 + u64::from(now.nanoseconds / 1_000);
    let table = compiled_config().policy.limits.table;
    let mut fields = alloc::vec::Vec::new();
    for (position, bucket) in forward.buckets().enumerate() {
        let Some(limit) = table.get(usize::from(bucket.limit)).map(|l| l.counted()) else { continue };
        let verdict = counter.count(bucket.key, &limit, now_us);
        if !verdict.allowed {
            return Err((position as u32, verdict.retry_after_secs, verdict.reset_secs));
        }
        if limit.fields {
            let value =
                alloc::string::ToString::to_string(&contract::limits::ratelimit_field(&limit, &verdict));
            fields.push((contract::limits::fields::RATELIMIT.to_owned(), value.into_bytes()));
        }
    }
    Ok(fields)
}

/// Answers a request whose body came chunked beside its `Content-Length`
/// with the module's answer to the head that carries both (a refusal); a
/// forward of it, which the contract rules out, is not carried out.
fn answer_framing(instance: &mut Instance, len: usize, response_out: ResponseOutparam, head: bool) {
    match decide_once(instance, len) {
        Ok(Decision::Answer(answer)) => send_answer(response_out, &answer, head),
        _ => {
            log("gateway: the module did not refuse a body framed two ways; refused");
            host_answer(response_out, HostAnswer::ModuleFailed);
        }
    }
}

/// Runs the core on the first `len` bytes of the input buffer at the wall
/// clock's time and reads its decision.
fn decide_once(instance: &mut Instance, len: usize) -> Result<Decision<'_>, DecodeError> {
    let status = instance.handle(u32::try_from(len).unwrap_or(u32::MAX), now_secs(), compiled_config());
    Decision::decode(status, instance.output())
}

/// Runs the core as [`decide_once`]; when its answer asks for an issuer's
/// keys, the core's schedule is asked for a round now, and the request is
/// decided again (with the keys if the round installed them). A round
/// writes the core's output and input buffers, so the head is kept aside
/// and written back.
#[cfg(runtime_keys)]
fn decide<'i>(
    instance: &'i mut Instance,
    keys: &mut crate::keys::Sources,
    overrides: &Overrides,
    len: usize,
) -> Result<Decision<'i>, DecodeError> {
    let status = instance.handle(u32::try_from(len).unwrap_or(u32::MAX), now_secs(), compiled_config());
    let Ok(Decision::Answer(Answer { refresh_keys: Some(issuer), .. })) =
        Decision::decode(status, instance.output())
    else {
        return Decision::decode(status, instance.output());
    };
    // An input too long for the buffer was never written: nothing to keep.
    let head = instance.input_mut().get(..len).map(<[u8]>::to_vec);
    keys.ask(instance, overrides, issuer);
    if let Some(head) = head {
        instance.input_mut()[..head.len()].copy_from_slice(&head);
    }
    decide_once(instance, len)
}
