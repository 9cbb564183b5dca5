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
//!   runtime reuses has any by then ([`Sources::refresh_due`]).
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

use crate::fetch::{self, Document};
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
}

/// The instance's key sources, read from the core's table on first use.
pub(crate) struct Sources(Option<Vec<Source>>);

impl Sources {
    /// None read yet.
    pub const fn new() -> Self {
        Sources(None)
    }

    /// A decision asked for `issuer`'s keys: a round now, if the core's
    /// schedule starts one. It writes the core's input and output buffers.
    pub fn ask(&mut self, instance: &mut Instance, overrides: &Overrides, issuer: u8) {
        let sources = self.0.get_or_insert_with(|| load(instance));
        if let Some(source) = sources.iter_mut().find(|s| s.issuer == issuer) {
            source.round(instance, overrides, ASKED);
        }
    }

    /// The rounds that are due, of the issuers this instance has run one for.
    pub fn refresh_due(&mut self, instance: &mut Instance, overrides: &Overrides) {
        for source in self.0.iter_mut().flatten().filter(|s| s.asked) {
            source.round(instance, overrides, DUE);
        }
    }
}

/// The core's key-source table. A table that cannot be read is logged and
/// fetches nothing: the core then answers 503 for tokens that need fetched
/// keys.
fn load(instance: &mut Instance) -> Vec<Source> {
    instance.key_sources(compiled_config());
    let sources = key_sources::decode(instance.output())
        .map(|source| source.map(|s| Source { issuer: s.issuer, timeout_ms: s.timeout_ms, asked: false }))
        .collect::<Result<Vec<_>, _>>();
    sources.unwrap_or_else(|_| {
        log("keys: the module's key-source table cannot be read; no keys are fetched");
        Vec::new()
    })
}

impl Source {
    /// Asks the core whether a round starts, for `why`; if it does, fetches
    /// each URL it names and hands the bodies over until the round ends.
    /// One log line per round.
    fn round(&mut self, instance: &mut Instance, overrides: &Overrides, why: u32) {
        let issuer = u32::from(self.issuer);
        let config = compiled_config();
        let answer = instance.key_fetch(issuer, now_secs(), why, config);
        let mut url = String::from_utf8_lossy(instance.output()).into_owned();
        match answer {
            1 => self.asked = true,
            0 => return,
            _ => return log(&format!("keys: issuer {issuer}: the module does not answer: {url}")),
        }
        loop {
            let document = match fetch::get(&overrides.url(&url), self.timeout_ms, DOCUMENT_CAPACITY) {
                Ok(document) => document,
                Err(failure) => {
                    self.log(&url, &format!("fetch failed: {failure}"));
                    instance.key_fetch_failed(issuer, now_secs(), config);
                    return;
                }
            };
            let answer = hand_over(instance, issuer, &document);
            let output = String::from_utf8_lossy(instance.output()).into_owned();
            match answer {
                1 => url = output,
                0 => return self.log(&url, &output),
                _ => return self.log(&url, &format!("refused: {output}")),
            }
        }
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
    // `fetch::get` read at most the buffer's size.
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
