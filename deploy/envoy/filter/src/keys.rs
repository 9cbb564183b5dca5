//! Keys fetched at run time, on the root context of each VM (`worker/ABI.md`,
//! "Keys fetched at run time"). At VM start it reads the core's key-source
//! table; every tick it asks the core which rounds start (`key_fetch`: the
//! schedule is the core's, the same on every host) and fetches each URL the
//! core names with `dispatch_http_call` on the origin's cluster (the
//! renderer's table in the filter's configuration, [`KeyClusters`]); each
//! response's body goes into the core's document buffer, and the core reads
//! it and names what comes next (`key_fetched`: a discovery document's
//! `jwks_uri`, or the end of the round). The filter keeps no schedule and
//! reads no document.
//!
//! Each VM (one per Envoy worker thread) fetches and installs for its own
//! core; decisions that ask for keys (`~` lines) reach this VM's root
//! context through [`ask`], as contexts of one VM share its thread.

use std::cell::RefCell;

use worker::keys::DOCUMENT_CAPACITY;

use crate::fetch::{CallResult, Failure, KeyClusters, Outcome, answer_fields, failure, log_line};
use crate::input::HeaderMap;
use crate::metrics;
use crate::raw::{self, LogLevel};

/// How often (milliseconds) the root context asks the core which rounds
/// start, the ones decisions asked for included: the most an asked-for
/// fetch waits to start.
/// Each of these ticks hands Envoy the counts too (`metrics`).
const TICK_MS: u32 = 100;

/// How long past a fetch's timeout a call Envoy never answered is given up:
/// Envoy answers every call (a timeout is its 504), so this only keeps a
/// lost call from stopping the issuer's fetches for good.
const LOST_CALL_GRACE_MS: u64 = 5000;

thread_local! {
    /// Issuers whose keys decisions asked for since the last tick.
    static ASKED_ISSUERS: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// Each root context's fetches, by its context id: one per filter
    /// configuration that shares this VM (in practice one).
    static FETCHERS: RefCell<Vec<(u32, KeyFetcher)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on root context `root`'s fetcher, made (empty) if it has none;
/// `None` on a re-entrant call, which Envoy never makes (it defers a
/// call's answer until the VM call under way returns).
fn with_fetcher<R>(root: u32, f: impl FnOnce(&mut KeyFetcher) -> R) -> Option<R> {
    FETCHERS.with(|fetchers| {
        let mut fetchers = fetchers.try_borrow_mut().ok()?;
        let i = match fetchers.iter().position(|(id, _)| *id == root) {
            Some(i) => i,
            None => {
                fetchers.push((root, KeyFetcher::default()));
                fetchers.len() - 1
            }
        };
        Some(f(&mut fetchers[i].1))
    })
}

/// Envoy's `proxy_on_vm_start` for root context `root`: its sources.
pub(crate) fn on_vm_start(root: u32) -> bool {
    with_fetcher(root, |fetcher| *fetcher = KeyFetcher::load()).is_some()
}

/// Envoy's `proxy_on_configure` for root context `root`: its clusters,
/// and the ticks. False fails the configuration.
pub(crate) fn on_configure(root: u32) -> bool {
    with_fetcher(root, KeyFetcher::configure).unwrap_or(false)
}

/// Why the filter asks the core whether a round starts: `key_fetch`'s codes.
const DUE: u32 = 0;
const ASKED: u32 = 1;

/// Envoy's `proxy_on_tick` for root context `root`.
pub(crate) fn on_tick(root: u32) {
    with_fetcher(root, KeyFetcher::tick);
}

/// Envoy's `proxy_on_http_call_response` for a call root context `root` made.
pub(crate) fn on_http_call_response(root: u32, token: u32, num_headers: usize, body_size: usize) {
    with_fetcher(root, |fetcher| fetcher.response(token, num_headers, body_size));
}

/// A decision asked for `issuer`'s keys (its answer had a `~` line): the
/// next tick asks the core for a round, which it grants unless a fetch is
/// under way or started within the issuer's `refetch_secs`.
pub(crate) fn ask(issuer: u8) {
    ASKED_ISSUERS.with(|asked| {
        let mut asked = asked.borrow_mut();
        if !asked.contains(&issuer) {
            asked.push(issuer);
        }
    });
}

/// One issuer's source and the call under way.
struct Source {
    issuer: u8,
    timeout_ms: u32,
    call: Option<Call>,
}

/// A call under way: its token, the URL it fetches, and when it started.
struct Call {
    token: u32,
    url: String,
    started_at: u64,
}

/// The VM's fetches: the core's sources and the renderer's clusters.
#[derive(Default)]
pub(crate) struct KeyFetcher {
    sources: Vec<Source>,
    clusters: KeyClusters,
}

impl KeyFetcher {
    /// The sources the core lists. A table that cannot be read is logged
    /// and fetches nothing: the core then answers 503 for tokens that need
    /// fetched keys.
    pub(crate) fn load() -> Self {
        let sources = crate::instance::key_sources().map(|sources| {
            sources
                .into_iter()
                .map(|(issuer, timeout_ms)| Source { issuer, timeout_ms, call: None })
                .collect()
        });
        let sources = sources.unwrap_or_else(|e| {
            raw::log(
                LogLevel::Error,
                &format!("keys: the module's key-source table: {e}; no keys are fetched"),
            );
            Vec::new()
        });
        KeyFetcher { sources, clusters: KeyClusters::default() }
    }

    /// Reads the renderer's cluster table from the filter's configuration
    /// and starts the ticks. A table that cannot be read fails the
    /// configuration: Envoy refuses it with the line.
    pub(crate) fn configure(&mut self) -> bool {
        let text = raw::buffer(raw::PLUGIN_CONFIGURATION, usize::MAX).ok().flatten().unwrap_or_default();
        match KeyClusters::parse(&String::from_utf8_lossy(&text)) {
            Ok(clusters) => self.clusters = clusters,
            Err(e) => {
                raw::log(LogLevel::Error, &format!("keys: {e}"));
                return false;
            }
        }
        raw::set_tick_period(TICK_MS).is_ok()
    }

    /// Gives up the calls Envoy lost, then starts every round the core
    /// grants: asked for by a decision, or due.
    pub(crate) fn tick(&mut self) {
        let now = now_ms();
        for i in 0..self.sources.len() {
            let limit = u64::from(self.sources[i].timeout_ms) + LOST_CALL_GRACE_MS;
            let lost =
                self.sources[i].call.as_ref().filter(|call| now.saturating_sub(call.started_at) > limit);
            if let Some(url) = lost.map(|call| call.url.clone()) {
                self.finish(i, &url, Outcome::Failed(Failure::TimedOut), now);
            }
        }
        for issuer in ASKED_ISSUERS.with(|asked| std::mem::take(&mut *asked.borrow_mut())) {
            if let Some(i) = self.sources.iter().position(|s| s.issuer == issuer) {
                self.start(i, ASKED, now);
            }
        }
        for i in 0..self.sources.len() {
            self.start(i, DUE, now);
        }
    }

    /// Asks the core whether source `i`'s round starts now, for `why`, and
    /// fetches its URL when it does.
    fn start(&mut self, i: usize, why: u32, now: u64) {
        if self.sources[i].call.is_some() {
            return;
        }
        let issuer = self.sources[i].issuer;
        let (answer, output) = crate::instance::ask_key_fetch(issuer, why, now);
        match answer {
            1 => self.dispatch(i, output, now),
            0 => {}
            _ => raw::log(
                LogLevel::Error,
                &format!("keys: issuer {issuer}: the module does not answer: {output}"),
            ),
        }
    }

    /// Envoy's answer to call `token`: `num_headers` 0 when it failed.
    pub(crate) fn response(&mut self, token: u32, num_headers: usize, body_size: usize) {
        let Some(i) = self.sources.iter().position(|s| s.call.as_ref().is_some_and(|c| c.token == token))
        else {
            return;
        };
        let Some(call) = self.sources[i].call.take() else { return };
        let now = now_ms();
        match read_answer(num_headers, body_size) {
            Ok((document, cache_control)) => self.hand_over(i, call, &document, &cache_control, now),
            Err(failure) => self.finish(i, &call.url, Outcome::Failed(failure), now),
        }
    }

    /// Gives the core the document `call` fetched, with the response's
    /// `Cache-Control` value: the URL it names next is fetched; an install
    /// or a refusal ends the round.
    fn hand_over(&mut self, i: usize, call: Call, document: &[u8], cache_control: &[u8], now: u64) {
        let issuer = self.sources[i].issuer;
        let (answer, output) = crate::instance::hand_key_document(issuer, document, cache_control, now);
        match answer {
            1 => self.dispatch(i, output, now),
            0 => {
                metrics::count_key_document(issuer, true, now / 1000);
                self.log(i, &call.url, &Outcome::Installed(output));
            }
            _ => {
                metrics::count_key_document(issuer, false, now / 1000);
                self.log(i, &call.url, &Outcome::Refused(output));
            }
        }
    }

    /// Sends the `GET` for `url` on source `i`'s behalf; a call Envoy
    /// cannot make fails the round.
    fn dispatch(&mut self, i: usize, url: String, now: u64) {
        let timeout_ms = self.sources[i].timeout_ms;
        let token = self.clusters.request(&url).and_then(|request| {
            raw::dispatch_http_call(request.cluster, &request.fields(), timeout_ms)
                .map_err(|status| Failure::Dispatch(request.cluster.to_owned(), status))
        });
        match token {
            Ok(token) => self.sources[i].call = Some(Call { token, url, started_at: now }),
            Err(failure) => self.finish(i, &url, Outcome::Failed(failure), now),
        }
    }

    /// A fetch of source `i`'s round failed: logged, and the core told.
    fn finish(&mut self, i: usize, url: &str, outcome: Outcome, now: u64) {
        self.sources[i].call = None;
        self.log(i, url, &outcome);
        metrics::count_key_fetch_failed(self.sources[i].issuer);
        crate::instance::key_fetch_failed(self.sources[i].issuer, now);
    }

    /// The fetch's one log line.
    fn log(&self, i: usize, url: &str, outcome: &Outcome) {
        let level = if outcome.is_warning() { LogLevel::Warn } else { LogLevel::Info };
        raw::log(level, &log_line(self.sources[i].issuer, url, outcome));
    }
}

/// The document of the answer to a call, and its `Cache-Control` value; or
/// why there is none. Read as bytes with the raw host calls: nothing a
/// provider sends can make the filter trap.
fn read_answer(num_headers: usize, body_size: usize) -> Result<(Vec<u8>, Vec<u8>), Failure> {
    // No fields: Envoy reports the call failed (a reset).
    let fields = match num_headers {
        0 => Vec::new(),
        _ => raw::header_map(raw::HTTP_CALL_RESPONSE_HEADERS).map_err(Failure::HostCall)?,
    };
    let answer = HeaderMap::parse(&fields).map(|m| answer_fields(m.fields())).unwrap_or_default();
    let body = |max| {
        raw::buffer(raw::HTTP_CALL_RESPONSE_BODY, max)
            .map(Option::unwrap_or_default)
            .map_err(Failure::HostCall)
    };
    let envoy_text;
    let result = match answer.status {
        None => CallResult::Reset,
        Some(code) if answer.from_provider => CallResult::Provider(code, body_size),
        Some(code) => {
            envoy_text = String::from_utf8_lossy(&body(200)?).into_owned();
            CallResult::Envoy(code, &envoy_text)
        }
    };
    match failure(result, DOCUMENT_CAPACITY) {
        Some(failure) => Err(failure),
        None => Ok((body(body_size)?, answer.cache_control)),
    }
}

/// Envoy's clock in milliseconds since the epoch (0 when it cannot be read).
fn now_ms() -> u64 {
    raw::now_nanos().map_or(0, |ns| ns / 1_000_000)
}
