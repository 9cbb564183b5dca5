//! The gateway's side of Envoy's callbacks (`callbacks` exports them): the
//! request's decision carried out as header edits or a local reply, and,
//! when the config changes responses, the response's edits. Every failure
//! here answers 500 ("gateway module failed") and the request goes
//! nowhere: the filter fails closed. With rate limits, a forward's buckets
//! go to Envoy's `local_ratelimit` as request fields, and its refusal is
//! turned into the module's 429 on the response path (`crate::limits`).

use contract::fields::HostAnswer;
use contract::outcome::Labels;

use crate::decision::{self, Decision, Forward};
use crate::input::{self, HeaderMap};
use crate::instance::INSTANCE;
use crate::metrics;
#[cfg(response_edits)]
use crate::plan::ResponseEdits;
use crate::plan::{self, Fields, GateError, PlanError};
use crate::raw::{self, Action, LogLevel};
use crate::reply::{answer_with, host_answer};

/// A host call Envoy refused: its status code.
#[derive(Debug)]
struct Status(u32);

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "status {}", self.0)
    }
}

/// Why a request could not be decided or carried out.
type FilterError = GateError<Status>;

impl From<u32> for FilterError {
    fn from(status: u32) -> Self {
        GateError::Host(Status(status))
    }
}

impl From<PlanError<u32>> for FilterError {
    fn from(error: PlanError<u32>) -> Self {
        match error {
            PlanError::Host(status) => GateError::Host(Status(status)),
            PlanError::ResponseEdits => GateError::ResponseEdits,
        }
    }
}

/// One of Envoy's header maps, changed through the host calls.
struct Map(u32);

impl Fields for Map {
    type Error = u32;
    fn set(&mut self, name: &str, value: &str) -> Result<(), u32> {
        raw::replace_header(self.0, name, value)
    }
    fn remove(&mut self, name: &str) -> Result<(), u32> {
        raw::remove_header(self.0, name)
    }
    fn add(&mut self, name: &str, value: &str) -> Result<(), u32> {
        // Only a response gets fields added, and only a build with a
        // response callback has the host call; the plan never asks
        // another (`plan::PlanError::ResponseEdits`).
        #[cfg(response_edits)]
        return raw::add_header(self.0, name, value);
        #[cfg(not(response_edits))]
        {
            let _ = (name, value);
            Err(u32::MAX)
        }
    }
}

#[cfg(response_edits)]
std::thread_local! {
    /// The response edits of this VM's streams whose response has not come
    /// yet, by context id: only streams whose forward has some (a CORS
    /// request, a forward with a limit's `ratelimit-policy`). Taken by the response callback, or dropped by the delete
    /// callback for a stream that ends without a response. A build whose
    /// config never changes a response keeps nothing per stream and has
    /// neither callback (Envoy skips a callback the module does not
    /// export; `callbacks`).
    static RESPONSE_EDITS: std::cell::RefCell<std::collections::BTreeMap<u32, ResponseEdits>> =
        const { std::cell::RefCell::new(std::collections::BTreeMap::new()) };
}

/// Envoy's `proxy_on_request_headers`: decides the request of stream
/// `context_id` and carries out the decision; any failure answers 500.
pub(crate) fn on_request_headers(context_id: u32, content_follows: bool) -> Action {
    match gate(context_id, content_follows) {
        Ok(action) => action,
        Err(e) => {
            raw::log(LogLevel::Error, &format!("gateway: {e}"));
            metrics::count_decision(&Labels::of(HostAnswer::ModuleFailed.outcome()));
            host_answer(HostAnswer::ModuleFailed)
                // Not even the 500 could be sent: trapping makes Envoy fail the request.
                .unwrap_or_else(|e| panic!("gateway: cannot answer 500: {e}"))
        }
    }
}

/// Envoy's `proxy_on_response_headers`: a rate limit's refusal of stream
/// `context_id`'s forward becomes the module's 429; any other response
/// gets the edits the forward asked for, if any.
#[cfg(any(response_edits, limits))]
pub(crate) fn on_response_headers(context_id: u32) -> Action {
    #[cfg(response_edits)]
    let edits = RESPONSE_EDITS.with(|edits| edits.borrow_mut().remove(&context_id));
    #[cfg(limits)]
    if let Some(refused) = crate::limits::on_response_headers(context_id) {
        return refused;
    }
    #[cfg(response_edits)]
    if let Some(edits) = edits {
        apply_response_edits(&edits);
    }
    Action::Continue
}

/// Applies a forward's edits to the upstream's response.
#[cfg(response_edits)]
fn apply_response_edits(edits: &ResponseEdits) {
    if let Err(status) = edits.apply(&mut Map(raw::HTTP_RESPONSE_HEADERS)) {
        raw::log(LogLevel::Error, &format!("gateway: cannot change the response: status {status}"));
    }
}

/// Envoy's `proxy_on_delete`: stream `context_id` ended; edits for a
/// response that never came are dropped, and a forward with buckets whose
/// response never came is counted.
#[cfg(any(response_edits, limits))]
pub(crate) fn on_delete(context_id: u32) {
    #[cfg(response_edits)]
    RESPONSE_EDITS.with(|edits| edits.borrow_mut().remove(&context_id));
    #[cfg(limits)]
    crate::limits::on_delete(context_id);
}

/// Decides stream `context_id`'s request and carries out the decision.
fn gate(context_id: u32, content_follows: bool) -> Result<Action, FilterError> {
    let headers = raw::header_map(raw::HTTP_REQUEST_HEADERS)?;
    let headers = HeaderMap::parse(&headers)?;
    let tls = raw::property(raw::TLS_VERSION)?;
    let source = raw::property(raw::SOURCE_ADDRESS)?;
    // Asked only over TLS: a plain connection has no certificate.
    let digest = match tls.as_deref().is_some_and(|v| !v.is_empty()) {
        true => raw::property(raw::PEER_CERTIFICATE_DIGEST)?,
        false => None,
    };
    let connection = input::Connection::of(tls.as_deref(), source.as_deref(), digest.as_deref());
    // A clock that cannot be read is NaN, which the core answers with 500.
    let now = raw::now_nanos().map_or(f64::NAN, |ns| std::time::Duration::from_nanos(ns).as_secs_f64());
    INSTANCE.with(|cell| {
        let mut instance = cell.try_borrow_mut().map_err(|_| GateError::Busy)?;
        // The head goes straight into the core's input buffer.
        let len = input::write_input(&connection, &headers, content_follows, instance.input_mut())?;
        // With rate limits, the input is kept for a forward with buckets: a
        // refusal decides it again (`crate::limits`).
        #[cfg(limits)]
        let input = instance.input_mut().get(..len).map(<[u8]>::to_vec);
        let decision = decision::decide_written(&mut instance, len, now)?;
        // A forward with buckets is counted when its response shows whether
        // a limit refused it.
        let counted_later =
            cfg!(limits) && matches!(&decision, Decision::Forward(f) if f.buckets().next().is_some());
        // Counted once the decision is read: one that cannot be read is
        // counted as the 500 it gets.
        if !counted_later {
            metrics::count_decision(match &decision {
                Decision::Forward(forward) => &forward.labels,
                Decision::Answer(answer) => &answer.labels,
            });
        }
        match decision {
            Decision::Forward(forward) => {
                let action = apply_forward(context_id, &forward, headers.path())?;
                #[cfg(limits)]
                if counted_later && let Some(input) = input {
                    crate::limits::keep(context_id, input, now, forward.labels);
                }
                Ok(action)
            }
            Decision::Answer(answer) => {
                // The core asks for this issuer's keys: the root context fetches them.
                #[cfg(runtime_keys)]
                if let Some(issuer) = answer.refresh_keys {
                    crate::keys::ask(issuer);
                }
                Ok(answer_with(&answer)?)
            }
        }
    })
}

/// Applies the forward to Envoy's header map (`path` is its `:path` now),
/// keeps its response changes for stream `context_id`'s response, and lets
/// the request go on to the router, which picks the origin's cluster by
/// [`crate::UPSTREAM_HEADER`].
#[cfg_attr(not(response_edits), allow(unused_variables))]
fn apply_forward(context_id: u32, forward: &Forward<'_>, path: Option<&[u8]>) -> Result<Action, FilterError> {
    let mut headers = Map(raw::HTTP_REQUEST_HEADERS);
    let edits = plan::apply_forward(&mut headers, forward, path, cfg!(response_edits), cfg!(limits))?;
    // Kept only once the request goes on: a request answered 500 instead
    // gets none of them.
    #[cfg(response_edits)]
    if !edits.is_empty() {
        RESPONSE_EDITS.with(|kept| kept.borrow_mut().insert(context_id, edits));
    }
    #[cfg(not(response_edits))]
    let _ = edits;
    // The route was chosen before this filter ran; Envoy clears it on
    // every change this filter makes to the request's fields, so the
    // router chooses again with the new header.
    Ok(Action::Continue)
}
