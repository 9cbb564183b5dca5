//! The exports of a module that fetches keys (`ABI.md`, "Keys fetched at
//! run time"): the key-source table, the document buffer, the schedule's
//! questions (what to fetch, when, and what comes after each document,
//! [`crate::keys::Rounds`]), installs, and the key store. Each answer is a
//! number and, in the output, one line: a URL, a summary or a reason.

use core::fmt::{self, Write as _};

use super::{Instance, OUTPUT_CAPACITY};
use crate::config::Config;
use crate::decide;
use crate::keys::{DOCUMENT_CAPACITY, InstallError, Next, Refusal, RoundError, Stored};
use gateway_jose::jwks::{JwksError, JwksErrorKind};

impl Instance {
    /// The buffer the host writes a fetched document into.
    pub fn keys_input_mut(&mut self) -> &mut [u8; DOCUMENT_CAPACITY] {
        &mut self.keys_input
    }

    /// Writes the key-source table into the output (`ABI.md`, "Keys
    /// fetched at run time"), so a host learns what to fetch from the module.
    pub fn key_sources(&mut self, config: &Config<'_>) -> u32 {
        let mut out = contract::Encoder::new(&mut self.scratch[..OUTPUT_CAPACITY]);
        let mut first = true;
        let mut written = Ok(());
        for (i, issuer) in config.issuers.iter().enumerate() {
            let (Some(fetch), Ok(issuer)) = (issuer.fetch, u8::try_from(i)) else { continue };
            let source = contract::key_sources::KeySource {
                issuer,
                kind: fetch.kind,
                url: fetch.url,
                refresh_secs: fetch.refresh_secs,
                refetch_secs: fetch.refetch_secs,
                timeout_ms: fetch.timeout_ms,
                max_stale_secs: fetch.max_stale_secs,
            };
            written = written.and(out.key_source(first, &source));
            first = false;
        }
        self.output_len = if written.is_ok() { out.written() } else { 0 };
        self.output_len as u32
    }

    /// Installs the JWKS document of `len` bytes in the document buffer for
    /// issuer `issuer` at `now`, outside the schedule's rounds: the number
    /// of keys installed, the output a summary; or -1, the output the
    /// reason, and nothing changed.
    pub fn install_keys(&mut self, issuer: u32, len: u32, now: f64, config: &Config<'_>) -> i32 {
        let mut line = Line::new(&mut self.scratch[..OUTPUT_CAPACITY]);
        let result = match (self.keys_input.get(..len as usize), decide::clock(now)) {
            (None, _) => Err(too_large(len)),
            (_, Err(_)) => Err(InstallError::Clock),
            (Some(document), Ok(now)) => {
                self.fetched.install(issuer as usize, document, now, config, &mut line)
            }
        };
        // The new generation empties the cache of verified tokens.
        let count = result.map(|count| i32::try_from(count).unwrap_or(i32::MAX));
        let answer = line.answer(count.map_err(Reason::Install));
        self.output_len = answer.1;
        answer.0
    }

    /// Whether a round of issuer `issuer`'s fetching starts at `now`,
    /// asked for `why` (0 due, 1 asked, 2 now): 1, its URL in the output;
    /// 0, nothing to fetch; -1, the output the reason.
    pub fn key_fetch(&mut self, issuer: u32, now: f64, why: u32, config: &Config<'_>) -> i32 {
        let mut line = Line::new(&mut self.scratch[..OUTPUT_CAPACITY]);
        let started = self.rounds.start(issuer as usize, now, why, config, &mut line);
        let answer = line.answer(started.map(i32::from).map_err(Reason::Round));
        self.output_len = answer.1;
        answer.0
    }

    /// Seconds from `now` until issuer `issuer`'s next round is due without
    /// an ask; infinity while one is under way; -1 for an issuer that
    /// fetches no keys or a clock that is not a time.
    pub fn key_fetch_wait(&mut self, issuer: u32, now: f64, config: &Config<'_>) -> f64 {
        match self.rounds.wait(issuer as usize, now, config) {
            Ok(Some(secs)) => secs,
            Ok(None) => f64::INFINITY,
            Err(_) => -1.0,
        }
    }

    /// The document of `len` bytes in the document buffer, fetched for
    /// issuer `issuer`'s round at `now`, with its response's
    /// `Cache-Control` value in the first `field_len` bytes of the input
    /// buffer: 1, the round's next URL in the output; 0, the keys
    /// installed, the summary in the output; -1, refused, the reason.
    pub fn key_fetched(
        &mut self,
        issuer: u32,
        len: u32,
        field_len: u32,
        now: f64,
        config: &Config<'_>,
    ) -> i32 {
        let mut line = Line::new(&mut self.scratch[..OUTPUT_CAPACITY]);
        let field = self.input.get(..field_len as usize).unwrap_or_default();
        let next = match self.keys_input.get(..len as usize) {
            Some(document) => {
                let keys = &mut self.fetched;
                self.rounds.fetched(issuer as usize, document, field, now, keys, config, &mut line)
            }
            // The host hands over no document longer than the buffer; one
            // that does ends the round as a refused document.
            None => self
                .rounds
                .failed(issuer as usize, now, config)
                .map(|()| Next::Refused(Refusal::Install(too_large(len)))),
        };
        let answer = line.answer(next.map_err(Reason::Round).and_then(|next| match next {
            Next::Fetch => Ok(1),
            Next::Installed(_) => Ok(0),
            Next::Refused(refusal) => Err(Reason::Refused(refusal)),
        }));
        self.output_len = answer.1;
        answer.0
    }

    /// The fetch of issuer `issuer`'s round failed at `now` (the host logs
    /// why): 0; or -1, the output the reason.
    pub fn key_fetch_failed(&mut self, issuer: u32, now: f64, config: &Config<'_>) -> i32 {
        let line = Line::new(&mut self.scratch[..OUTPUT_CAPACITY]);
        let failed = self.rounds.failed(issuer as usize, now, config);
        let answer = line.answer(failed.map(|()| 0).map_err(Reason::Round));
        self.output_len = answer.1;
        answer.0
    }

    /// The JWKS document of `len` bytes in the document buffer, for issuer
    /// `issuer`, that another instance fetched at `fetched_at`, with its
    /// response's `Cache-Control` value in the input buffer, handed over at
    /// `now`: 0, installed, the summary in the output; 1, not newer than
    /// the installed keys; -1, refused, the reason.
    pub fn key_stored(
        &mut self,
        issuer: u32,
        len: u32,
        field_len: u32,
        fetched_at: f64,
        now: f64,
        config: &Config<'_>,
    ) -> i32 {
        let mut line = Line::new(&mut self.scratch[..OUTPUT_CAPACITY]);
        let field = self.input.get(..field_len as usize).unwrap_or_default();
        let stored = match self.keys_input.get(..len as usize) {
            Some(document) => {
                let keys = &mut self.fetched;
                self.rounds.stored(issuer as usize, document, field, fetched_at, now, keys, config, &mut line)
            }
            None => Ok(Stored::Refused(Refusal::Install(too_large(len)))),
        };
        let answer = line.answer(stored.map_err(Reason::Round).and_then(|stored| match stored {
            Stored::Installed(_) => Ok(0),
            Stored::NotNewer => Ok(1),
            Stored::Refused(refusal) => Err(Reason::Refused(refusal)),
        }));
        self.output_len = answer.1;
        answer.0
    }

    /// The installed keys, as bytes another instance of this module can
    /// take at the same address (`key_store_ptr`).
    pub fn key_store(&self) -> (*const u8, usize) {
        (core::ptr::addr_of!(self.fetched).cast(), self.fetched.used_len())
    }
}

/// A document longer than the document buffer, refused unread.
fn too_large(len: u32) -> InstallError {
    InstallError::Document(JwksError { key: None, kind: JwksErrorKind::TooLarge(len as usize) })
}

/// One line of text written into the output, cut short rather than overrun.
struct Line<'o> {
    buf: &'o mut [u8],
    len: usize,
}

impl<'o> Line<'o> {
    fn new(buf: &'o mut [u8]) -> Self {
        Line { buf, len: 0 }
    }

    /// An export's answer and its output's length: the number, the line as
    /// written; or -1, the line replaced by the reason.
    fn answer(mut self, result: Result<i32, Reason>) -> (i32, usize) {
        match result {
            Ok(answer) => (answer, self.len),
            Err(reason) => {
                self.len = 0;
                let _ = write!(self, "{reason}");
                (-1, self.len)
            }
        }
    }
}

/// Why an export answers -1: the line it writes.
enum Reason {
    Round(RoundError),
    Refused(Refusal),
    Install(InstallError),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Round(error) => error.fmt(f),
            Reason::Refused(refusal) => refusal.fmt(f),
            Reason::Install(error) => error.fmt(f),
        }
    }
}

impl fmt::Write for Line<'_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        // Only printable ASCII reaches the output: a kid or a member in a
        // message is escaped by `Debug`, and anything else is replaced.
        for &b in text.as_bytes() {
            if let Some(slot) = self.buf.get_mut(self.len) {
                *slot = if (0x20..0x7f).contains(&b) { b } else { b'?' };
                self.len += 1;
            }
        }
        Ok(())
    }
}
