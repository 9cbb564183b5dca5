//! The gateway as a native Envoy dynamic module (`envoy.filters.http.dynamic_modules`):
//! the same core, the same compiled-in config and the same steps as the
//! proxy-wasm filter, built for the machine's target as a shared library
//! that Envoy opens (`build/envoy-native.sh`, feature `native`).
//!
//! Per request it rebuilds the module's input from Envoy's header map
//! ([`crate::input::write_fields`]), runs the core at Envoy's clock,
//! then answers with the core's reply or carries out its forward
//! ([`crate::plan`]) and lets the router choose again; a forward's response
//! edits (CORS) are kept in the stream's state for its response. Any
//! failure answers 500, as the proxy-wasm filter does: it fails closed.
//! Decisions are counted in Envoy's stats under the proxy-wasm filter's
//! names and labels ([`crate::metrics`]), on a tick as the filter counts
//! ([`tally`]): a request makes no call into Envoy to be counted.
//!
//! With rate limits, a forward's buckets go to Envoy's `local_ratelimit`
//! as request fields, and a refusal is answered with the core's 429 on the
//! response path, as the proxy-wasm filter does ([`crate::limits`]).
//!
//! With keys fetched at run time, a request that finds a round due starts
//! it and waits for it ([`keys`]: Envoy cancels a stream's fetches when the
//! stream ends).
//! `abi` holds the bindings and every `unsafe` block of this build.

mod abi;
#[cfg(runtime_keys)]
mod keys;
#[cfg(counting)]
mod tally;

use contract::fields::HostAnswer;
use contract::outcome::Labels;

use crate::decision::{self, Decision};
use crate::input;
use crate::instance::INSTANCE;
use crate::limits::{Kept, LIMITED_MARKER, refused_limit};
use crate::plan::{self, Fields, GateError, ResponseEdits};
use abi::{Attribute, ConfigHandle, LogLevel, Map, Status, Stream};

pub use abi::ABI_VERSION;

/// The filter name the rendered bootstrap gives (`filter_name`).
pub const FILTER_NAME: &str = "gateway";

/// The configuration the rendered bootstrap gives the filter: the ABI the
/// module was built for, so that Envoy refuses a bootstrap rendered for
/// another build.
pub fn filter_config() -> String {
    format!("gateway abi {ABI_VERSION}")
}

/// The filter's configuration in the module, made once when Envoy loads
/// the configuration.
pub(crate) struct Config {
    /// The counters, the counts since the last tick, and the ticker.
    #[cfg(counting)]
    tally: tally::Tally,
    /// Where the keys' URLs are fetched: the renderer's table.
    #[cfg(runtime_keys)]
    key_clusters: crate::fetch::KeyClusters,
    #[cfg(runtime_keys)]
    key_metrics: keys::KeyMetrics,
}

/// A stream's state: its configuration, and the forward's response edits
/// until the response comes.
pub(crate) struct StreamState {
    config: &'static Config,
    edits: Option<ResponseEdits>,
    /// A forward with buckets, until its response shows whether a limit's
    /// `local_ratelimit` refused it ([`crate::limits`]).
    kept: Option<Kept>,
    /// The key fetches this stream carries: each callout's id, and the
    /// fetcher's token for the call ([`keys`]).
    #[cfg(runtime_keys)]
    calls: Vec<(u64, u64)>,
    /// A request held for its fetches, decided when they end: whether
    /// content follows its head.
    #[cfg(runtime_keys)]
    held: Option<bool>,
}

impl StreamState {
    fn new(config: &'static Config) -> Self {
        StreamState {
            config,
            edits: None,
            kept: None,
            #[cfg(runtime_keys)]
            calls: Vec::new(),
            #[cfg(runtime_keys)]
            held: None,
        }
    }
}

/// Envoy loads the filter's configuration: `name` and `value` must be the
/// ones [`FILTER_NAME`] and [`filter_config`] render (with a config that
/// fetches keys, the key clusters' table on the lines after it); otherwise
/// the configuration is refused, with the reason in Envoy's log.
#[cfg_attr(not(any(counting, runtime_keys)), allow(unused_variables))]
fn new_config(handle: &ConfigHandle, name: &[u8], value: &[u8]) -> Option<Config> {
    #[cfg_attr(not(runtime_keys), allow(unused_variables))]
    let (first, table) = match value.iter().position(|b| *b == b'\n') {
        Some(at) if cfg!(runtime_keys) => (&value[..at], &value[at + 1..]),
        _ => (value, &[][..]),
    };
    if name != FILTER_NAME.as_bytes() || first != filter_config().as_bytes() {
        abi::log(
            LogLevel::Error,
            &format!(
                "gateway: filter {:?} with configuration {:?} refused: this module ({}) takes filter_name \
                 {FILTER_NAME:?} and configuration {:?}",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(value),
                env!("CARGO_PKG_NAME"),
                filter_config()
            ),
        );
        return None;
    }
    Some(Config {
        #[cfg(counting)]
        tally: tally::Tally::start(handle),
        #[cfg(runtime_keys)]
        key_clusters: match crate::fetch::KeyClusters::parse(&String::from_utf8_lossy(table)) {
            Ok(clusters) => clusters,
            Err(e) => {
                abi::log(LogLevel::Error, &format!("keys: {e}"));
                return None;
            }
        },
        #[cfg(runtime_keys)]
        key_metrics: keys::KeyMetrics::define(handle),
    })
}

/// Why a request could not be decided or carried out: a refusal names the
/// field Envoy refused to change.
type FilterError = GateError<String>;

/// One of the stream's header maps, changed through Envoy's callbacks; an
/// error names the field Envoy refused.
struct Edits<'s>(&'s mut Stream, Map);

impl Fields for Edits<'_> {
    type Error = String;
    fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        // Envoy 1.40's set_header removes a field given an empty value
        // (and add_header refuses one), so a field the plan sets empty (a
        // claim whose value is "") is set to one space: the rendered
        // clusters speak HTTP/1.1, whose field values exclude the
        // whitespace around them (RFC 9110 section 5.5), so the upstream
        // reads the empty value the plan names.
        let value = if value.is_empty() { " " } else { value };
        self.0.set(self.1, name, Some(value)).then_some(()).ok_or_else(|| refused(name))
    }
    fn remove(&mut self, name: &str) -> Result<(), String> {
        self.0.set(self.1, name, None).then_some(()).ok_or_else(|| refused(name))
    }
    fn add(&mut self, name: &str, value: &str) -> Result<(), String> {
        self.0.add(self.1, name, value).then_some(()).ok_or_else(|| refused(name))
    }
}

/// Envoy's refusal to change field `name`, as the log line says it.
fn refused(name: &str) -> String {
    format!("Envoy refused to change {name}")
}

/// A request's headers: decided and carried out; any failure answers 500.
/// A request that starts a key fetch is held until the fetch ends.
fn on_request_headers(state: &mut StreamState, mut stream: Stream, content_follows: bool) -> Status {
    #[cfg(runtime_keys)]
    {
        keys::start_rounds(state, &mut stream);
        if !state.calls.is_empty() {
            state.held = Some(content_follows);
            return Status::StopAllIterationAndBuffer;
        }
    }
    decide(state, &mut stream, content_follows)
}

/// Decides the request and carries out the decision; any failure answers 500.
fn decide(state: &mut StreamState, stream: &mut Stream, content_follows: bool) -> Status {
    match gate(state, stream, content_follows) {
        Ok(status) => status,
        Err(e) => {
            abi::log(LogLevel::Error, &format!("gateway: {e}"));
            module_failed(state.config, stream)
        }
    }
}

/// A key fetch of the stream's is answered: once its last one ends, a held
/// request is decided, and let go on when forwarded.
#[cfg(runtime_keys)]
fn on_callout_done(state: &mut StreamState, mut stream: Stream, id: u64, answer: &abi::CalloutAnswer<'_>) {
    keys::answered(state, &mut stream, id, answer);
    if state.calls.is_empty()
        && let Some(content_follows) = state.held.take()
        && decide(state, &mut stream, content_follows) == Status::Continue
    {
        stream.continue_decoding();
    }
}

/// The 500 every host answers a module failure with, counted as such.
fn module_failed(config: &Config, stream: &mut Stream) -> Status {
    count(config, &Labels::of(HostAnswer::ModuleFailed.outcome()));
    let answer = HostAnswer::ModuleFailed;
    stream.send_response(
        answer.status(),
        &[("content-type", contract::fields::JSON)],
        answer.body().as_bytes(),
    );
    Status::StopIteration
}

/// A hook panicked (a bug): the request is answered 500, never forwarded.
fn panicked(stream: Stream) -> Status {
    abi::log(LogLevel::Error, "gateway: the module failed on this request");
    let answer = HostAnswer::ModuleFailed;
    let mut stream = stream;
    stream.send_response(
        answer.status(),
        &[("content-type", contract::fields::JSON)],
        answer.body().as_bytes(),
    );
    Status::StopIteration
}

/// Decides the stream's request and carries out the decision.
fn gate(state: &mut StreamState, stream: &mut Stream, content_follows: bool) -> Result<Status, FilterError> {
    // The connection's facts, never the client's headers: TLS on the
    // downstream connection, and its peer address (with use_remote_address,
    // Envoy does not take it from X-Forwarded-For).
    let tls = stream.attribute(Attribute::ConnectionTlsVersion);
    let source = stream.attribute(Attribute::SourceAddress);
    // Asked only over TLS: a plain connection has no certificate.
    let digest = tls
        .is_some_and(|version| !version.is_empty())
        .then(|| stream.attribute(Attribute::ConnectionSha256PeerCertificateDigest))
        .flatten();
    let connection = input::Connection::of(tls, source, digest);
    // A clock before 1970 is NaN, which the core answers with 500.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(f64::NAN, |since| since.as_secs_f64());
    INSTANCE.with(|cell| {
        let mut instance = cell.try_borrow_mut().map_err(|_| GateError::Busy)?;
        let (len, path) = {
            let fields = stream.fields(Map::Request);
            let all = || fields.iter().copied();
            let len = input::write_fields(&connection, all, content_follows, instance.input_mut())?;
            let path = all().find(|(name, _)| *name == b":path").map(|(_, value)| value.to_vec());
            (len, path)
        };
        // With rate limits, the input is kept for a forward with buckets: a
        // refusal decides it again (`crate::limits::refusal`).
        let input = cfg!(limits).then(|| instance.input_mut().get(..len).map(<[u8]>::to_vec)).flatten();
        let decision = decision::decide_written(&mut instance, len, now)?;
        // A forward with buckets is counted when its response shows whether
        // a limit refused it.
        let counted_later =
            cfg!(limits) && matches!(&decision, Decision::Forward(f) if f.buckets().next().is_some());
        if !counted_later {
            count(
                state.config,
                match &decision {
                    Decision::Forward(forward) => &forward.labels,
                    Decision::Answer(answer) => &answer.labels,
                },
            );
        }
        match decision {
            Decision::Forward(forward) => {
                let mut request = Edits(stream, Map::Request);
                let edits = plan::apply_forward(
                    &mut request,
                    &forward,
                    path.as_deref(),
                    cfg!(response_edits),
                    cfg!(limits),
                )?;
                if !edits.is_empty() {
                    state.edits = Some(edits);
                }
                if counted_later && let Some(input) = input {
                    state.kept = Some(Kept { input, now, labels: forward.labels });
                }
                // The route was chosen before this filter ran: the router
                // chooses again, by the origin's header.
                stream.clear_route_cache();
                Ok(Status::Continue)
            }
            Decision::Answer(answer) => {
                // The core asks for this issuer's keys: the next request
                // asks for a round.
                #[cfg(runtime_keys)]
                if let Some(issuer) = answer.refresh_keys {
                    keys::ask(issuer);
                }
                let fields: Vec<(&str, &str)> = answer.fields().collect();
                stream.send_response(answer.status, &fields, answer.body.as_bytes());
                Ok(Status::StopIteration)
            }
        }
    })
}

/// A response's headers: the edits the request's forward asked for.
fn on_response_headers(state: &mut StreamState, mut stream: Stream) -> Status {
    let edits = state.edits.take();
    if let Some(kept) = state.kept.take() {
        // A limit's refusal: Envoy's reply with the marker and its details.
        let marker = stream
            .fields(Map::Response)
            .iter()
            .find(|(n, _)| *n == LIMITED_MARKER.as_bytes())
            .map(|(_, v)| v.to_vec());
        let details = stream.attribute(Attribute::ResponseCodeDetails).map(<[u8]>::to_vec);
        match refused_limit(marker.as_deref(), details.as_deref()) {
            // Only a build with rate limits keeps a forward.
            #[cfg(limits)]
            Some(limit) => return answer_refusal(state.config, stream, &kept, limit),
            _ => count(state.config, &kept.labels),
        }
    }
    if let Some(edits) = edits
        && let Err(field) = edits.apply(&mut Edits(&mut stream, Map::Response))
    {
        abi::log(LogLevel::Error, &format!("gateway: cannot change the response: {field}"));
    }
    Status::Continue
}

/// A limit refused the kept forward: the core's answer for its bucket (a
/// 429, or a DPoP replay's 401) in place of Envoy's, counted; a failure is
/// the 500.
#[cfg(limits)]
fn answer_refusal(config: &Config, mut stream: Stream, kept: &Kept, limit: u8) -> Status {
    let answered = INSTANCE.with(|cell| {
        let mut instance = cell.try_borrow_mut().map_err(|_| crate::limits::RefusalError::Busy)?;
        let answer = crate::limits::refusal(&mut instance, kept, limit)?;
        count(config, &answer.labels);
        let fields: Vec<(&str, &str)> = answer.fields().collect();
        stream.send_response(answer.status, &fields, answer.body.as_bytes());
        Ok::<_, crate::limits::RefusalError>(())
    });
    match answered {
        Ok(()) => Status::StopIteration,
        Err(e) => {
            abi::log(LogLevel::Error, &format!("gateway: rate limit refusal: {e}"));
            module_failed(config, &mut stream)
        }
    }
}

/// The stream is over: a forward with buckets whose response never came is
/// counted as the forward it was; key fetches it carried failed (Envoy
/// cancels them).
#[cfg_attr(not(runtime_keys), allow(unused_mut, unused_variables))]
fn on_stream_complete(state: &mut StreamState, mut stream: Stream) {
    #[cfg(runtime_keys)]
    keys::abandoned(state, &mut stream);
    if let Some(kept) = state.kept.take() {
        count(state.config, &kept.labels);
    }
}

/// Counts a decision, or the filter's own answer, in the configuration's
/// table: Envoy gets it on the next tick ([`on_tick`]).
fn count(config: &Config, labels: &Labels) {
    #[cfg(counting)]
    config.tally.count(labels);
    #[cfg(not(counting))]
    let _ = (config, labels);
}

/// A tick, on Envoy's main thread: Envoy gets what the configuration's
/// streams counted since the last one ([`tally::Tally::hand_over`]).
#[cfg(counting)]
pub(crate) fn on_tick(handle: &ConfigHandle, config: &Config) {
    config.tally.hand_over(handle);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The renderer writes this configuration (`FILTER_CONFIG` in
    /// `deploy/envoy/render/src/native.rs`): a change to the ABI changes both.
    #[test]
    fn the_configuration_names_the_abi() {
        assert_eq!(filter_config(), "gateway abi v0.2.0");
        assert_eq!(FILTER_NAME, "gateway");
    }
}
