//! Keys fetched at run time (`worker/ABI.md`, "Keys fetched at run time"),
//! on requests: wasi:http has no timer, and a component instance lives as
//! long as the runtime keeps it (`wasmtime serve` and Spin: one request).
//! Each issuer's fetches follow the one schedule every host keeps
//! ([`contract::key_schedule`]), held in the instance:
//!
//! - an answer that asks for an issuer's keys (a `~` line: "unknown kid",
//!   or keys never installed or stale) starts a fetch when the schedule
//!   grants it, and the request is decided again with the document the core
//!   installs ([`fetch_asked`]); a fresh instance has fetched nothing, so
//!   its first such request always fetches;
//! - after the response, the refreshes the schedule says are due (only in
//!   an instance that has fetched before, so one the runtime reuses)
//!   ([`refresh_due`]).
//!
//! A source is never fetched before a request needs it: a fresh instance
//! that fetched every source first would make every request, even one
//! without a token, cost the provider a fetch.

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use contract::key_schedule::Schedule;
use contract::key_sources::{self, SourceKind};
use worker::abi::{Instance, compiled_config};
use worker::keys::DOCUMENT_CAPACITY;

use crate::fetch::{self, Document};
use crate::handler::{log, now_secs};
use crate::overrides::Overrides;

/// One issuer's source, its schedule and what discovery found.
struct Source {
    issuer: u8,
    kind: SourceKind,
    url: String,
    timeout_ms: u32,
    /// The JWKS document a discovery document named, kept while it serves:
    /// a fetch that fails or is refused forgets it, so that the next one
    /// asks the discovery document again.
    jwks_uri: Option<String>,
    schedule: Schedule,
    /// Whether this instance has fetched the source (then its refreshes
    /// are kept on schedule).
    fetched: bool,
}

/// The instance's key sources, read from the core's table on first use.
pub(crate) struct Sources(Option<Vec<Source>>);

/// How one fetch ended: installed (with the response's `max-age`) or not.
enum Outcome {
    Installed(Option<u64>),
    Failed,
}

impl Sources {
    /// None read yet.
    pub const fn new() -> Self {
        Sources(None)
    }

    /// A decision asked for `issuer`'s keys: fetches and installs them now
    /// if the schedule grants it.
    pub fn fetch_asked(&mut self, instance: &mut Instance, overrides: &Overrides, issuer: u8) {
        let now = now_ms();
        let sources = self.0.get_or_insert_with(|| load(instance));
        if let Some(source) = sources.iter_mut().find(|s| s.issuer == issuer)
            && source.schedule.ask(now)
        {
            source.fetch(instance, overrides, now);
        }
    }

    /// The scheduled refreshes that are due, of the sources this instance
    /// has fetched.
    pub fn refresh_due(&mut self, instance: &mut Instance, overrides: &Overrides) {
        let now = now_ms();
        for source in self.0.iter_mut().flatten().filter(|s| s.fetched && s.schedule.due(now)) {
            source.fetch(instance, overrides, now);
        }
    }
}

/// The core's key-source table.
fn load(instance: &mut Instance) -> Vec<Source> {
    instance.key_sources(compiled_config());
    let sources = key_sources::decode(instance.output())
        .map(|source| {
            source.map(|s| Source {
                issuer: s.issuer,
                kind: s.kind,
                url: s.url.to_owned(),
                timeout_ms: s.timeout_ms,
                jwks_uri: None,
                schedule: Schedule::new(s.refresh_secs, s.refetch_secs),
                fetched: false,
            })
        })
        .collect::<Result<Vec<_>, _>>();
    sources.unwrap_or_else(|_| {
        log("keys: the module's key-source table cannot be read; no keys are fetched");
        Vec::new()
    })
}

impl Source {
    /// Fetches the source's document (its discovery document first when
    /// no `jwks_uri` is known), hands it to the core, logs one line and
    /// schedules the next fetch.
    fn fetch(&mut self, instance: &mut Instance, overrides: &Overrides, now: u64) -> Outcome {
        self.schedule.start(now);
        self.fetched = true;
        let discovered = match (self.kind, &self.jwks_uri) {
            (SourceKind::Jwks, _) => Some(self.url.clone()),
            (SourceKind::Discovery, Some(uri)) => Some(uri.clone()),
            (SourceKind::Discovery, None) => self.discover(instance, overrides),
        };
        let outcome = match discovered {
            Some(url) => self.install(instance, overrides, &url),
            None => Outcome::Failed,
        };
        let now = now_ms();
        match outcome {
            Outcome::Installed(max_age) => self.schedule.succeeded(now, max_age),
            Outcome::Failed => {
                self.jwks_uri = None;
                self.schedule.failed(now);
            }
        }
        outcome
    }

    /// The `jwks_uri` the discovery document names, or `None` (logged).
    fn discover(&mut self, instance: &mut Instance, overrides: &Overrides) -> Option<String> {
        let document = self.get(overrides, &self.url)?;
        let (accepted, output) = self.hand_over(instance, &document, false);
        if !accepted {
            self.log(&self.url, &format!("refused: {output}"));
            return None;
        }
        self.jwks_uri = Some(output.clone());
        Some(output)
    }

    /// Fetches the JWKS document at `url` and has the core install it.
    fn install(&mut self, instance: &mut Instance, overrides: &Overrides, url: &str) -> Outcome {
        let Some(document) = self.get(overrides, url) else { return Outcome::Failed };
        let (installed, output) = self.hand_over(instance, &document, true);
        match installed {
            true => {
                self.log(url, &output);
                Outcome::Installed(document.max_age)
            }
            false => {
                self.log(url, &format!("refused: {output}"));
                Outcome::Failed
            }
        }
    }

    /// Fetches `url` (moved by the upstream overrides); a failure is logged.
    fn get(&self, overrides: &Overrides, url: &str) -> Option<Document> {
        let fetched = fetch::get(&overrides.url(url), self.timeout_ms, DOCUMENT_CAPACITY);
        fetched.map_err(|failure| self.log(url, &format!("fetch failed: {failure}"))).ok()
    }

    /// Gives the core a fetched document: `install_keys` for a JWKS
    /// document, `discovered` for a discovery document. Whether it accepted
    /// it, and its output (the summary, the `jwks_uri` or the reason).
    fn hand_over(&self, instance: &mut Instance, document: &Document, jwks: bool) -> (bool, String) {
        // `get` read at most the buffer's size.
        let len = document.bytes.len().min(DOCUMENT_CAPACITY);
        instance.keys_input_mut()[..len].copy_from_slice(&document.bytes[..len]);
        let (issuer, len, config) = (u32::from(self.issuer), len as u32, compiled_config());
        let result = match jwks {
            true => instance.install_keys(issuer, len, now_secs(), config),
            false => instance.discovered(issuer, len, config),
        };
        (result >= 0, String::from_utf8_lossy(instance.output()).into_owned())
    }

    /// The log line every host writes: `keys: issuer <n> <url>: <outcome>`,
    /// the URL as the module names it.
    fn log(&self, url: &str, outcome: &str) {
        log(&format!("keys: issuer {} {url}: {outcome}", self.issuer));
    }
}

/// The wall clock in milliseconds since the epoch (the schedule's clock).
fn now_ms() -> u64 {
    (now_secs() * 1000.0) as u64
}
