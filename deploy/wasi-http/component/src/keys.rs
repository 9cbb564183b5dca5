//! Keys fetched at run time (`worker/ABI.md`, "Keys fetched at run time"),
//! on requests: wasi:http has no timer, and a component instance lives as
//! long as the runtime keeps it (`wasmtime serve` and Spin: one request).
//! The schedule is the core's (`key_fetch`), the same on every host; the
//! component asks it, fetches each URL it names ([`crate::fetch`]) and
//! hands the body over (`key_fetched`), which names what comes next:
//!
//! - an answer that asks for an issuer's keys (a `~` line: "unknown kid",
//!   or keys never installed or stale) asks the core for a round at once
//!   ([`Sources::ask`]), and the request is decided again with what the
//!   core installed; a fresh instance has fetched nothing, so its first
//!   such request runs a round;
//! - after the response, the component asks whether a round is due, for
//!   the issuers this instance has run a round for: only an instance the
//!   runtime reuses has any by then ([`Sources::refresh_due`]). Such a
//!   round is started and left to the runtime: the requests that follow
//!   move it on without waiting for it ([`Sources::advance`]), so a slow or
//!   hanging provider holds up no request; a request that needs the keys
//!   while it is under way waits for it (by its `timeout_ms`).
//!
//! The component never asks for an issuer no request needed: the core's
//! first round is due at once, so a fresh instance that asked before every
//! request would make every request, even one without a token, cost the
//! provider a round.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use contract::key_sources;
use worker::abi::{Instance, compiled_config};
use worker::keys::DOCUMENT_CAPACITY;

use crate::fetch::{Document, Fetch};
use crate::overrides::Overrides;
use crate::respond::{log, now_secs};

/// `key_fetch`'s codes for why the component asks.
const DUE: u32 = 0;
const ASKED: u32 = 1;

/// One issuer's source, as far as the component needs it.
struct Source {
    issuer: u8,
    timeout_ms: u32,
    /// Whether this instance has run a round for it (then it asks again
    /// after each response whether the next one is due).
    asked: bool,
    /// The fetch of the round under way, if one is.
    pending: Option<Pending>,
}

/// A fetch of a round under way: the URL as the module names it.
struct Pending {
    url: String,
    fetch: Fetch,
}

/// The instance's key sources, read from the core's table on first use.
pub(crate) struct Sources(Option<Vec<Source>>);

impl Sources {
    /// None read yet.
    pub const fn new() -> Self {
        Sources(None)
    }

    /// A decision asked for `issuer`'s keys: the round under way is waited
    /// for, or a round is run now if the core's schedule starts one. It
    /// writes the core's input and output buffers.
    pub fn ask(&mut self, instance: &mut Instance, overrides: &Overrides, issuer: u8) {
        let sources = self.0.get_or_insert_with(|| load(instance));
        if let Some(source) = sources.iter_mut().find(|s| s.issuer == issuer) {
            if source.pending.is_none() {
                source.begin(instance, overrides, ASKED);
            }
            source.advance(instance, overrides, true);
        }
    }

    /// Moves the rounds under way on, without waiting: a document that has
    /// arrived is handed to the core, and the next one it names is fetched.
    pub fn advance(&mut self, instance: &mut Instance, overrides: &Overrides) {
        for source in self.0.iter_mut().flatten() {
            source.advance(instance, overrides, false);
        }
    }

    /// Starts the rounds that are due, of the issuers this instance has run
    /// one for and that have none under way; they are not waited for.
    pub fn refresh_due(&mut self, instance: &mut Instance, overrides: &Overrides) {
        for source in self.0.iter_mut().flatten().filter(|s| s.asked && s.pending.is_none()) {
            source.begin(instance, overrides, DUE);
            source.advance(instance, overrides, false);
        }
    }
}

/// The core's key-source table. A table that cannot be read is logged and
/// fetches nothing: the core then answers 503 for tokens that need fetched
/// keys.
fn load(instance: &mut Instance) -> Vec<Source> {
    instance.key_sources(compiled_config());
    let sources = key_sources::decode(instance.output())
        .map(|source| {
            source.map(|s| Source { issuer: s.issuer, timeout_ms: s.timeout_ms, asked: false, pending: None })
        })
        .collect::<Result<Vec<_>, _>>();
    sources.unwrap_or_else(|_| {
        log("keys: the module's key-source table cannot be read; no keys are fetched");
        Vec::new()
    })
}

impl Source {
    /// Asks the core whether a round starts, for `why`; if it does, starts
    /// the fetch of the URL it names.
    fn begin(&mut self, instance: &mut Instance, overrides: &Overrides, why: u32) {
        let issuer = u32::from(self.issuer);
        let answer = instance.key_fetch(issuer, now_secs(), why, compiled_config());
        let url = String::from_utf8_lossy(instance.output()).into_owned();
        match answer {
            1 => {
                self.asked = true;
                self.start(instance, overrides, url);
            }
            0 => {}
            _ => log(&format!("keys: issuer {issuer}: the module does not answer: {url}")),
        }
    }

    /// Starts the fetch of `url` in the round under way.
    fn start(&mut self, instance: &mut Instance, overrides: &Overrides, url: String) {
        match Fetch::start(&overrides.url(&url), self.timeout_ms, DOCUMENT_CAPACITY) {
            Ok(fetch) => self.pending = Some(Pending { url, fetch }),
            Err(failure) => self.failed(instance, &url, &failure),
        }
    }

    /// Moves the round under way on (with `wait`, until it ends): each
    /// document that arrives is handed to the core, which ends the round or
    /// names the next URL, fetched at once. One log line per round.
    fn advance(&mut self, instance: &mut Instance, overrides: &Overrides, wait: bool) {
        while let Some(pending) = &mut self.pending {
            let Some(outcome) = pending.fetch.advance(wait) else { return };
            let Some(Pending { url, .. }) = self.pending.take() else { return };
            let document = match outcome {
                Ok(document) => document,
                Err(failure) => return self.failed(instance, &url, &failure),
            };
            let answer = hand_over(instance, u32::from(self.issuer), &document);
            let output = String::from_utf8_lossy(instance.output()).into_owned();
            match answer {
                1 => self.start(instance, overrides, output),
                0 => return self.log(&url, &output),
                _ => return self.log(&url, &format!("refused: {output}")),
            }
        }
    }

    /// A fetch that failed ends the round: logged, and the core told.
    fn failed(&mut self, instance: &mut Instance, url: &str, failure: &crate::fetch::Failure) {
        self.log(url, &format!("fetch failed: {failure}"));
        instance.key_fetch_failed(u32::from(self.issuer), now_secs(), compiled_config());
    }

    /// The log line every host writes: `keys: issuer <n> <url>: <outcome>`,
    /// the URL as the module names it.
    fn log(&self, url: &str, outcome: &str) {
        log(&format!("keys: issuer {} {url}: {outcome}", self.issuer));
    }
}

/// Gives the core a fetched document, and the response's `Cache-Control`
/// value in its input buffer (one longer than the buffer counts as none):
/// `key_fetched`'s answer.
fn hand_over(instance: &mut Instance, issuer: u32, document: &Document) -> i32 {
    // A fetch reads at most the buffer's size.
    let len = document.bytes.len().min(DOCUMENT_CAPACITY);
    instance.keys_input_mut()[..len].copy_from_slice(&document.bytes[..len]);
    let field = match instance.input_mut().get_mut(..document.cache_control.len()) {
        Some(slot) => {
            slot.copy_from_slice(&document.cache_control);
            document.cache_control.len()
        }
        None => 0,
    };
    instance.key_fetched(issuer, len as u32, field as u32, now_secs(), compiled_config())
}
