//! The proxy-wasm side: Envoy's calls in, header edits and local replies
//! out. Every failure here answers 500 ("gateway module failed") and the
//! request goes nowhere: the filter fails closed.

use std::time::UNIX_EPOCH;

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, ContextType, MapType, Status};

use contract::fields::HostAnswer;

use crate::UPSTREAM_HEADER;
use crate::decision::{self, Answer, Decision, Forward, Operation};
use crate::input::{self, HeaderMap, Scheme};
use crate::instance::INSTANCE;
use crate::raw;

proxy_wasm::main! {{
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(Root::default()) });
}}

/// Why a request could not be decided or carried out.
#[derive(Debug, thiserror::Error)]
enum FilterError {
    /// Envoy refused a host call.
    #[error("host call failed: {0:?}")]
    Host(Status),
    /// Envoy refused a host call made without the SDK: its status code.
    #[error("host call failed: status {0}")]
    HostCode(u32),
    /// The header map cannot be written as a request head.
    #[error(transparent)]
    Input(#[from] input::InputError),
    /// The core's output cannot be carried out.
    #[error("the decision cannot be read: {0}")]
    Decision(#[from] decision::DecodeError),
    /// The instance was in use: a re-entrant call, which Envoy never makes.
    #[error("the core's instance is busy")]
    Busy,
    /// The forward changes the upstream's response, which this build has no
    /// response callback for: its config has no CORS, the only policy that
    /// changes responses, so the core never asks. Refused, not ignored.
    #[cfg(not(response_edits))]
    #[error("the decision changes the response, which this build of the filter cannot")]
    ResponseEdits,
}

impl From<Status> for FilterError {
    fn from(status: Status) -> Self {
        FilterError::Host(status)
    }
}

/// The VM's root context: it makes the request contexts and, when the core
/// fetches keys at run time, fetches them (`crate::keys`).
#[derive(Default)]
struct Root {
    #[cfg(runtime_keys)]
    keys: crate::keys::KeyFetcher,
}

impl Context for Root {
    #[cfg(runtime_keys)]
    fn on_http_call_response(
        &mut self,
        token_id: u32,
        num_headers: usize,
        body_size: usize,
        _trailers: usize,
    ) {
        self.keys.response(token_id, num_headers, body_size);
    }
}

impl RootContext for Root {
    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }

    #[cfg(runtime_keys)]
    fn on_vm_start(&mut self, _vm_configuration_size: usize) -> bool {
        self.keys = crate::keys::KeyFetcher::load();
        true
    }

    #[cfg(runtime_keys)]
    fn on_configure(&mut self, _plugin_configuration_size: usize) -> bool {
        self.keys.configure()
    }

    #[cfg(runtime_keys)]
    fn on_tick(&mut self) {
        self.keys.tick();
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Gateway::default()))
    }
}

/// One request's filter: what the forward changes in the upstream's
/// response, kept from the request's decision until the response comes.
/// A build whose config never changes a response (no CORS) keeps nothing
/// and has no response callback: Envoy skips a callback the module does not
/// export (`build/envoy-filter.sh` keeps it only when this one is compiled).
#[derive(Default)]
struct Gateway {
    #[cfg(response_edits)]
    response_drops: Vec<String>,
    #[cfg(response_edits)]
    response_adds: Vec<(String, String)>,
}

impl Context for Gateway {}

impl HttpContext for Gateway {
    fn on_http_request_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        match self.gate() {
            Ok(action) => action,
            Err(e) => {
                let _ = hostcalls::log(proxy_wasm::types::LogLevel::Error, &format!("gateway: {e}"));
                host_answer(HostAnswer::ModuleFailed)
                    // Not even the 500 could be sent: trapping makes Envoy fail the request.
                    .unwrap_or_else(|e| panic!("gateway: cannot answer 500: {e}"))
            }
        }
    }

    #[cfg(response_edits)]
    fn on_http_response_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        let headers = MapType::HttpResponseHeaders;
        let changed = self
            .response_drops
            .iter()
            .try_for_each(|name| hostcalls::remove_map_value(headers, name))
            .and_then(|()| {
                self.response_adds
                    .iter()
                    .try_for_each(|(name, value)| hostcalls::add_map_value(headers, name, value))
            });
        if let Err(status) = changed {
            let _ = hostcalls::log(
                proxy_wasm::types::LogLevel::Error,
                &format!("gateway: cannot change the response: {status:?}"),
            );
        }
        Action::Continue
    }
}

impl Gateway {
    /// Decides the request and carries out the decision.
    fn gate(&mut self) -> Result<Action, FilterError> {
        let headers = raw::header_map(raw::HTTP_REQUEST_HEADERS).map_err(FilterError::HostCode)?;
        let headers = HeaderMap::parse(&headers)?;
        // The connection's facts, never the client's headers: TLS on the
        // downstream connection, and its peer address (with use_remote_address,
        // Envoy does not take it from X-Forwarded-For).
        let tls = raw::property(raw::TLS_VERSION).map_err(FilterError::HostCode)?;
        let scheme = if tls.is_some_and(|v| !v.is_empty()) { Scheme::Https } else { Scheme::Http };
        let source = raw::property(raw::SOURCE_ADDRESS).map_err(FilterError::HostCode)?;
        let peer = source.and_then(|s| contract::context::peer_of_socket_address(&s));
        // A clock that cannot be read is NaN, which the core answers with 500.
        let now = hostcalls::get_current_time()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(f64::NAN, |d| d.as_secs_f64());
        INSTANCE.with(|cell| {
            let mut instance = cell.try_borrow_mut().map_err(|_| FilterError::Busy)?;
            // The head goes straight into the core's input buffer.
            let len = input::write_input(scheme, peer, &headers, instance.input_mut())?;
            match decision::decide_written(&mut instance, len, now)? {
                Decision::Forward(forward) => self.forward(&forward, headers.path()),
                Decision::Answer(answer) => {
                    // The core asks for this issuer's keys: the root context fetches them.
                    #[cfg(runtime_keys)]
                    if let Some(issuer) = answer.refresh_keys {
                        crate::keys::ask(issuer);
                    }
                    answer_with(&answer)
                }
            }
        })
    }

    /// Applies the forward to Envoy's header map (`path` is its `:path`
    /// now), keeps its response changes for the response, and lets the
    /// request go on to the router, which picks the origin's cluster by
    /// [`UPSTREAM_HEADER`].
    fn forward(&mut self, forward: &Forward<'_>, path: Option<&[u8]>) -> Result<Action, FilterError> {
        let headers = MapType::HttpRequestHeaders;
        // The same bytes need no host call (a route without a base path).
        if path != Some(forward.path.as_bytes()) {
            hostcalls::set_map_value(headers, ":path", Some(forward.path))?;
        }
        // Two passes over the plan's lines, not one per kind: the drops and
        // the response's changes (kept for the response), then the sets,
        // which ABI.md applies after the drops.
        for operation in forward.operations() {
            match operation {
                Operation::DropRequestField(name) => hostcalls::remove_map_value(headers, name)?,
                #[cfg(response_edits)]
                Operation::DropResponseField(name) => self.response_drops.push(name.to_owned()),
                #[cfg(response_edits)]
                Operation::AddResponseField(name, value) => {
                    self.response_adds.push((name.to_owned(), value.to_owned()));
                }
                #[cfg(not(response_edits))]
                Operation::DropResponseField(_) | Operation::AddResponseField(..) => {
                    return Err(FilterError::ResponseEdits);
                }
                Operation::SetRequestField(..) => {}
            }
        }
        for operation in forward.operations() {
            if let Operation::SetRequestField(name, value) = operation {
                hostcalls::set_map_value(headers, name, Some(value))?;
            }
        }
        hostcalls::set_map_value(headers, UPSTREAM_HEADER, Some(forward.origin))?;
        // The route was chosen before this filter ran; Envoy clears it on
        // every change this filter makes to the request's fields, so the
        // router chooses again with the new header.
        Ok(Action::Continue)
    }
}

/// Sends the answer from Envoy, with exactly its fields and body; the
/// request goes no further.
fn answer_with(answer: &Answer<'_>) -> Result<Action, FilterError> {
    let fields: Vec<(&str, &str)> = answer.fields().collect();
    hostcalls::send_http_response(u32::from(answer.status), fields, Some(answer.body.as_bytes()))?;
    Ok(Action::Pause)
}

/// Sends one of the answers a host makes itself.
fn host_answer(answer: HostAnswer) -> Result<Action, FilterError> {
    let fields = vec![("content-type", contract::fields::JSON)];
    hostcalls::send_http_response(u32::from(answer.status()), fields, Some(answer.body().as_bytes()))?;
    Ok(Action::Pause)
}
