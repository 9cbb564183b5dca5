//! Keys fetched at run time in the native module (`worker/ABI.md`, "Keys
//! fetched at run time"), per Envoy worker thread, for that thread's core.
//!
//! Envoy 1.40's dynamic modules fetch outside a request only from the
//! filter configuration, on the main thread, whose core decides nothing;
//! a stream's callouts run on its worker thread but are cancelled when the
//! stream ends. So fetches start on requests, as the workerd shim's do: each
//! request asks the core which rounds start (`key_fetch`: due, or asked for
//! by an earlier decision's `~` line), and a request that starts one sends
//! the core's URL with a callout on the origin's cluster (the renderer's
//! table, [`KeyClusters`]) and is held until the round ends, then decided
//! with the keys it installed. Each response's body goes into the core's
//! document buffer and the core names what comes next (`key_fetched`: a
//! discovery document's `jwks_uri`, or the end of the round). Requests
//! meanwhile are decided with the keys installed now. The module keeps no
//! schedule and reads no document.

use std::cell::RefCell;

use worker::keys::DOCUMENT_CAPACITY;

use super::abi::{self, CalloutAnswer, LogLevel, Stream};
use super::{Config, StreamState};
use crate::fetch::{CallResult, Failure, Outcome, answer_fields, failure, log_line};
use crate::metrics;

/// Why a request asks the core whether a round starts: `key_fetch`'s codes.
const DUE: u32 = 0;
const ASKED: u32 = 1;

/// How long past a fetch's timeout a call never answered is given up: Envoy
/// answers every callout of a live stream (a timeout is its 504), so this
/// only keeps a lost call from stopping the issuer's fetches for good.
const LOST_CALL_GRACE_MS: u64 = 5000;

/// `envoy_dynamic_module_type_http_callout_result_Success`.
const RESPONSE_CAME: u32 = 0;
/// `envoy_dynamic_module_type_http_callout_result_ExceedResponseBufferLimit`.
const PAST_BUFFER_LIMIT: u32 = 2;

thread_local! {
    /// This worker thread's fetches, made on its first request.
    static FETCHER: RefCell<Option<Fetcher>> = const { RefCell::new(None) };
}

/// The counters and gauge a fetch sets, defined with the configuration:
/// the proxy-wasm filter's names, labeled by issuer.
#[derive(Default)]
pub(crate) struct KeyMetrics {
    success: Option<usize>,
    failed: Option<usize>,
    installed: Option<usize>,
    refused: Option<usize>,
    installed_at: Option<usize>,
}

impl KeyMetrics {
    pub(crate) fn define(handle: &abi::ConfigHandle) -> Self {
        let counter = |name| handle.define_counter(name, &["issuer"]);
        KeyMetrics {
            success: counter(metrics::JWKS_FETCH_SUCCESS),
            failed: counter(metrics::JWKS_FETCH_FAILED),
            installed: counter(metrics::JWKS_INSTALLED),
            refused: counter(metrics::JWKS_REFUSED),
            installed_at: handle.define_gauge(metrics::JWKS_INSTALLED_AT, &["issuer"]),
        }
    }
}

/// One issuer's source and the call under way.
struct Source {
    issuer: u8,
    timeout_ms: u32,
    call: Option<Call>,
}

/// A call under way: the token the stream holding it keeps, the URL it
/// fetches, and when it started.
struct Call {
    token: u64,
    url: String,
    started_at: u64,
}

/// A worker thread's fetches: the core's sources, the issuers decisions
/// asked for, and the next call's token.
struct Fetcher {
    sources: Vec<Source>,
    asked: Vec<u8>,
    next_token: u64,
}

/// Runs `f` on this thread's fetcher, made from the core's key-source table
/// the first time; `None` on a re-entrant call, which Envoy never makes.
fn with_fetcher<R>(f: impl FnOnce(&mut Fetcher) -> R) -> Option<R> {
    FETCHER.with(|cell| {
        let mut fetcher = cell.try_borrow_mut().ok()?;
        Some(f(fetcher.get_or_insert_with(Fetcher::load)))
    })
}

/// A decision asked for `issuer`'s keys (its answer had a `~` line): the
/// next request asks the core for a round, which it grants unless a fetch
/// is under way or started within the issuer's `refetch_secs`.
pub(crate) fn ask(issuer: u8) {
    with_fetcher(|fetcher| {
        if !fetcher.asked.contains(&issuer) {
            fetcher.asked.push(issuer);
        }
    });
}

/// A request came: gives up calls never answered, then starts every round
/// the core grants, on `stream`, which keeps the calls' tokens.
pub(crate) fn start_rounds(state: &mut StreamState, stream: &mut Stream) {
    let config = state.config;
    with_fetcher(|fetcher| {
        let now = now_ms();
        for i in 0..fetcher.sources.len() {
            let limit = u64::from(fetcher.sources[i].timeout_ms) + LOST_CALL_GRACE_MS;
            let lost =
                fetcher.sources[i].call.as_ref().filter(|call| now.saturating_sub(call.started_at) > limit);
            if let Some(url) = lost.map(|call| call.url.clone()) {
                fetcher.finish(config, stream, i, &url, Outcome::Failed(Failure::TimedOut), now);
            }
        }
        for issuer in std::mem::take(&mut fetcher.asked) {
            if let Some(i) = fetcher.sources.iter().position(|s| s.issuer == issuer) {
                fetcher.start(state, stream, i, ASKED, now);
            }
        }
        for i in 0..fetcher.sources.len() {
            fetcher.start(state, stream, i, DUE, now);
        }
    });
}

/// Envoy's answer to callout `id` of `stream`'s.
pub(crate) fn answered(state: &mut StreamState, stream: &mut Stream, id: u64, answer: &CalloutAnswer<'_>) {
    let Some(at) = state.calls.iter().position(|(callout, _)| *callout == id) else { return };
    let (_, token) = state.calls.remove(at);
    with_fetcher(|fetcher| {
        let found = fetcher.sources.iter().position(|s| s.call.as_ref().is_some_and(|c| c.token == token));
        let Some(i) = found else { return };
        let Some(call) = fetcher.sources[i].call.take() else { return };
        let now = now_ms();
        match read_answer(answer) {
            Ok(cache_control) => {
                fetcher.hand_over(state, stream, i, &call, &answer.body, &cache_control, now)
            }
            Err(failure) => fetcher.finish(state.config, stream, i, &call.url, Outcome::Failed(failure), now),
        }
    });
}

/// The stream ends with calls under way, which Envoy cancels: their rounds
/// failed.
pub(crate) fn abandoned(state: &mut StreamState, stream: &mut Stream) {
    let calls = std::mem::take(&mut state.calls);
    let config = state.config;
    with_fetcher(|fetcher| {
        let now = now_ms();
        for (_, token) in calls {
            let found =
                fetcher.sources.iter().position(|s| s.call.as_ref().is_some_and(|c| c.token == token));
            if let Some(i) = found
                && let Some(call) = fetcher.sources[i].call.take()
            {
                fetcher.finish(config, stream, i, &call.url, Outcome::Failed(Failure::Reset), now);
            }
        }
    });
}

impl Fetcher {
    /// The sources the core lists. A table that cannot be read is logged
    /// and fetches nothing: the core then answers 503 for tokens that need
    /// fetched keys.
    fn load() -> Self {
        let sources = crate::instance::key_sources().map(|sources| {
            sources
                .into_iter()
                .map(|(issuer, timeout_ms)| Source { issuer, timeout_ms, call: None })
                .collect()
        });
        let sources = sources.unwrap_or_else(|e| {
            abi::log(
                LogLevel::Error,
                &format!("keys: the module's key-source table: {e}; no keys are fetched"),
            );
            Vec::new()
        });
        Fetcher { sources, asked: Vec::new(), next_token: 0 }
    }

    /// Asks the core whether source `i`'s round starts now, for `why`, and
    /// fetches its URL when it does.
    fn start(&mut self, state: &mut StreamState, stream: &mut Stream, i: usize, why: u32, now: u64) {
        if self.sources[i].call.is_some() {
            return;
        }
        let issuer = self.sources[i].issuer;
        let (answer, output) = crate::instance::ask_key_fetch(issuer, why, now);
        match answer {
            1 => self.dispatch(state, stream, i, output, now),
            0 => {}
            _ => abi::log(
                LogLevel::Error,
                &format!("keys: issuer {issuer}: the module does not answer: {output}"),
            ),
        }
    }

    /// Gives the core the document `call` fetched, with the response's
    /// `Cache-Control` value: the URL it names next is fetched; an install
    /// or a refusal ends the round.
    #[allow(clippy::too_many_arguments)]
    fn hand_over(
        &mut self,
        state: &mut StreamState,
        stream: &mut Stream,
        i: usize,
        call: &Call,
        document: &[u8],
        cache_control: &[u8],
        now: u64,
    ) {
        let (answer, output) =
            crate::instance::hand_key_document(self.sources[i].issuer, document, cache_control, now);
        let metrics = &state.config.key_metrics;
        let values = [issuer_name(self.sources[i].issuer)];
        match answer {
            1 => self.dispatch(state, stream, i, output, now),
            0 => {
                for id in [metrics.success, metrics.installed].into_iter().flatten() {
                    stream.increment(id, &values);
                }
                if let Some(id) = metrics.installed_at {
                    stream.set_gauge(id, &values, now / 1000);
                }
                self.log(i, &call.url, &Outcome::Installed(output));
            }
            _ => {
                for id in [metrics.success, metrics.refused].into_iter().flatten() {
                    stream.increment(id, &values);
                }
                self.log(i, &call.url, &Outcome::Refused(output));
            }
        }
    }

    /// Sends the `GET` for `url` on source `i`'s behalf from `stream`; a
    /// call Envoy cannot make fails the round.
    fn dispatch(&mut self, state: &mut StreamState, stream: &mut Stream, i: usize, url: String, now: u64) {
        let timeout_ms = self.sources[i].timeout_ms;
        let id = state.config.key_clusters.request(&url).and_then(|request| {
            stream
                .callout(request.cluster, &request.fields(), timeout_ms)
                .map_err(|code| Failure::Dispatch(request.cluster.to_owned(), code))
        });
        match id {
            Ok(id) => {
                self.next_token += 1;
                let token = self.next_token;
                state.calls.push((id, token));
                self.sources[i].call = Some(Call { token, url, started_at: now });
            }
            Err(failure) => self.finish(state.config, stream, i, &url, Outcome::Failed(failure), now),
        }
    }

    /// A fetch of source `i`'s round failed: logged, counted, and the core told.
    fn finish(&mut self, config: &Config, stream: &Stream, i: usize, url: &str, outcome: Outcome, now: u64) {
        self.sources[i].call = None;
        self.log(i, url, &outcome);
        if let Some(id) = config.key_metrics.failed {
            stream.increment(id, &[issuer_name(self.sources[i].issuer)]);
        }
        crate::instance::key_fetch_failed(self.sources[i].issuer, now);
    }

    /// The fetch's one log line.
    fn log(&self, i: usize, url: &str, outcome: &Outcome) {
        let level = if outcome.is_warning() { LogLevel::Warn } else { LogLevel::Info };
        abi::log(level, &log_line(self.sources[i].issuer, url, outcome));
    }
}

/// Issuer `index`'s label value: its `iss`, as [`metrics::compiled_names`]
/// names it.
fn issuer_name(index: u8) -> &'static str {
    let issuers = &worker::abi::compiled_config().issuers;
    issuers.get(usize::from(index)).map_or("unknown", |issuer| issuer.iss.unwrap_or("-"))
}

/// The answer's `Cache-Control` value, when its body goes to the core; or
/// why it does not.
fn read_answer(answer: &CalloutAnswer<'_>) -> Result<Vec<u8>, Failure> {
    let fields = answer_fields(answer.fields.iter().copied());
    let envoy_text;
    let result = match fields.status {
        _ if answer.result == PAST_BUFFER_LIMIT => return Err(Failure::TooLarge(DOCUMENT_CAPACITY)),
        _ if answer.result != RESPONSE_CAME => CallResult::Reset,
        None => CallResult::Reset,
        Some(code) if fields.from_provider => CallResult::Provider(code, answer.body.len()),
        Some(code) => {
            let start = &answer.body[..answer.body.len().min(200)];
            envoy_text = String::from_utf8_lossy(start).into_owned();
            CallResult::Envoy(code, &envoy_text)
        }
    };
    match failure(result, DOCUMENT_CAPACITY) {
        Some(failure) => Err(failure),
        None => Ok(fields.cache_control),
    }
}

/// The clock in Unix milliseconds (0 before 1970).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}
