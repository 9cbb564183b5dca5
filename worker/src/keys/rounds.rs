//! What a host fetches, and when (`ABI.md`, "Keys fetched at run time"):
//! the module answers its hosts' questions with one [`KeyFetch`] per issuer
//! (the schedule and the round, written once in the contract crate), reads
//! each document of a round itself (the discovery document's `jwks_uri`,
//! the JWKS document's keys) and says what comes next. A host asks, fetches
//! and hands the bytes over; it keeps no schedule and reads no document.
//!
//! A document another instance fetched earlier (a store the instances of a
//! deployment share, such as Workers KV) is installed as of when it was
//! fetched, only when it is newer than the installed keys and not dated
//! more than [`MAX_SKEW_SECS`] ahead of the host's clock (a date ahead
//! would keep keys past `max_stale_secs`).

use core::fmt;

use contract::key_schedule::{self, Document, KeyFetch, Why};
use gateway_jose::discovery;

use super::fetched::{FetchedKeys, ISSUERS, InstallError};
use crate::config::{Config, SourceKind};

/// How far ahead of the host's clock a stored document's fetch time may be:
/// clock skew between the machines of a deployment.
pub const MAX_SKEW_SECS: u64 = 60;

/// Why a question about an issuer's fetching has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundError {
    /// The issuer index names no issuer that fetches keys.
    NotFetching(usize),
    /// The host's clock is not a time.
    Clock,
    /// A document was handed over, but no round is under way.
    NoRound(usize),
    /// The reason code is not one of [`Why`]'s.
    Why(u32),
}

impl fmt::Display for RoundError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RoundError::NotFetching(i) => write!(f, "issuer {i} fetches no keys"),
            RoundError::Clock => f.write_str("host clock invalid"),
            RoundError::NoRound(i) => write!(f, "issuer {i} has no fetch under way"),
            RoundError::Why(code) => write!(f, "{code} is not a reason to fetch (0, 1 or 2)"),
        }
    }
}

/// Why a document was refused: the one line a host logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The discovery document.
    Discovery(discovery::DiscoveryError),
    /// The JWKS document.
    Install(InstallError),
    /// A stored document dated more than [`MAX_SKEW_SECS`] ahead.
    FetchedAfterNow,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Discovery(error) => write!(f, "discovery document {error}"),
            Refusal::Install(error) => write!(f, "{error}"),
            Refusal::FetchedAfterNow => {
                write!(f, "fetched more than {MAX_SKEW_SECS} s after now, by this clock")
            }
        }
    }
}

/// What follows a document handed over in a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The host fetches the URL written out, in the same round.
    Fetch,
    /// The round ended: this many keys installed (the summary written out).
    Installed(usize),
    /// The round ended: the document was refused; the installed keys stay.
    Refused(Refusal),
}

/// What became of a stored document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Installed, this many keys (the summary written out); it ended the
    /// round under way, as of when it was fetched.
    Installed(usize),
    /// Not newer than the installed keys: nothing changed.
    NotNewer,
    /// Refused; nothing changed.
    Refused(Refusal),
}

/// The fetching of every issuer that fetches keys. All zeros until used,
/// so that the instance holding it costs the module no bytes.
pub struct Rounds {
    fetches: [KeyFetch; ISSUERS],
    /// Whether each issuer's fetching was made from the config.
    made: [bool; ISSUERS],
    /// When each issuer's installed document was fetched, in milliseconds
    /// (the install's own clock keeps whole seconds): what a stored
    /// document must be newer than.
    fetched_ms: [u64; ISSUERS],
}

impl Rounds {
    /// No round started yet: each issuer's first one is due at once.
    pub const fn new() -> Self {
        Rounds { fetches: [KeyFetch::UNSET; ISSUERS], made: [false; ISSUERS], fetched_ms: [0; ISSUERS] }
    }

    /// Issuer `issuer`'s fetching, made from the config on first use.
    fn fetch(&mut self, issuer: usize, config: &Config<'_>) -> Result<&mut KeyFetch, RoundError> {
        let source = config.issuers.get(issuer).and_then(|i| i.fetch);
        let (Some(source), Some(fetch), Some(made)) =
            (source, self.fetches.get_mut(issuer), self.made.get_mut(issuer))
        else {
            return Err(RoundError::NotFetching(issuer));
        };
        if !*made {
            let discovery = source.kind == SourceKind::Discovery;
            *fetch = KeyFetch::new(discovery, source.refresh_secs, source.refetch_secs);
            *made = true;
        }
        Ok(fetch)
    }

    /// Issuer `issuer`'s installed document was fetched at `ms`.
    fn remember(&mut self, issuer: usize, ms: u64) {
        if let Some(slot) = self.fetched_ms.get_mut(issuer) {
            *slot = ms;
        }
    }

    /// Whether a round of issuer `issuer` starts at `now` (Unix seconds),
    /// asked for `why` (`0`, `1`, `2`: [`Why`]); when it does, its URL is
    /// written to `out`.
    pub fn start(
        &mut self,
        issuer: usize,
        now: f64,
        why: u32,
        config: &Config<'_>,
        out: &mut dyn fmt::Write,
    ) -> Result<bool, RoundError> {
        let why = Why::from_code(why).ok_or(RoundError::Why(why))?;
        let now = clock_ms(now)?;
        let started = self.fetch(issuer, config)?.start(now, why);
        if let (true, Some(source)) = (started, config.issuers[issuer].fetch) {
            let _ = out.write_str(source.url);
        }
        Ok(started)
    }

    /// How long from `now` until issuer `issuer`'s next round is due
    /// without an ask, in seconds; `None` while one is under way.
    pub fn wait(&mut self, issuer: usize, now: f64, config: &Config<'_>) -> Result<Option<f64>, RoundError> {
        let now = clock_ms(now)?;
        Ok(self.fetch(issuer, config)?.wait(now).map(|ms| ms as f64 / 1000.0))
    }

    /// The fetch of the round's document failed at `now`: the round ends.
    pub fn failed(&mut self, issuer: usize, now: f64, config: &Config<'_>) -> Result<(), RoundError> {
        let now = clock_ms(now)?;
        let fetch = self.fetch(issuer, config)?;
        fetch.document().ok_or(RoundError::NoRound(issuer))?;
        fetch.failed(now);
        Ok(())
    }

    /// The round's document, fetched at `now` with the response's
    /// `Cache-Control` value `cache_control`: read (a discovery document:
    /// its `jwks_uri` written to `out`) or installed (a JWKS document into
    /// `keys`: its summary written to `out`, which a refusal leaves cut).
    #[allow(clippy::too_many_arguments)] // the export's arguments, and the instance's parts
    pub fn fetched(
        &mut self,
        issuer: usize,
        document: &[u8],
        cache_control: &[u8],
        now: f64,
        keys: &mut FetchedKeys,
        config: &Config<'_>,
        out: &mut dyn fmt::Write,
    ) -> Result<Next, RoundError> {
        let secs = crate::decide::clock(now).map_err(|_| RoundError::Clock)?;
        let now_ms = clock_ms(now)?;
        let fetch = self.fetch(issuer, config)?;
        match fetch.document().ok_or(RoundError::NoRound(issuer))? {
            Document::Discovery => match discover(issuer, document, config, out)? {
                Ok(()) => {
                    fetch.discovered();
                    Ok(Next::Fetch)
                }
                Err(error) => {
                    fetch.failed(now_ms);
                    Ok(Next::Refused(Refusal::Discovery(error)))
                }
            },
            Document::Jwks => match keys.install(issuer, document, secs, config, out) {
                Ok(count) => {
                    fetch.installed(now_ms, key_schedule::max_age(cache_control));
                    self.remember(issuer, now_ms);
                    Ok(Next::Installed(count))
                }
                Err(error) => {
                    fetch.failed(now_ms);
                    Ok(Next::Refused(Refusal::Install(error)))
                }
            },
        }
    }

    /// A JWKS document of issuer `issuer` that another instance fetched at
    /// `fetched_at` (Unix seconds; its response's `Cache-Control` value
    /// `cache_control`), handed over at `now`: installed as of `fetched_at`
    /// when newer than the installed keys (see the module's doc).
    #[allow(clippy::too_many_arguments)] // the export's arguments, and the instance's parts
    pub fn stored(
        &mut self,
        issuer: usize,
        document: &[u8],
        cache_control: &[u8],
        fetched_at: f64,
        now: f64,
        keys: &mut FetchedKeys,
        config: &Config<'_>,
        out: &mut dyn fmt::Write,
    ) -> Result<Stored, RoundError> {
        let at = crate::decide::clock(fetched_at).map_err(|_| RoundError::Clock)?;
        let now = crate::decide::clock(now).map_err(|_| RoundError::Clock)?;
        let at_ms = clock_ms(fetched_at)?;
        let fetched_ms = self.fetched_ms.get(issuer).copied().unwrap_or(0);
        let fetch = self.fetch(issuer, config)?;
        let installed_ms = keys.installed_at(issuer).map(|secs| secs.saturating_mul(1000).max(fetched_ms));
        if installed_ms.is_some_and(|installed| at_ms <= installed) {
            return Ok(Stored::NotNewer);
        }
        if at > now.saturating_add(MAX_SKEW_SECS) {
            return Ok(Stored::Refused(Refusal::FetchedAfterNow));
        }
        match keys.install(issuer, document, at, config, out) {
            Ok(count) => {
                fetch.installed(at_ms, key_schedule::max_age(cache_control));
                self.remember(issuer, at_ms);
                Ok(Stored::Installed(count))
            }
            Err(error) => Ok(Stored::Refused(Refusal::Install(error))),
        }
    }
}

impl Default for Rounds {
    fn default() -> Self {
        Self::new()
    }
}

/// Reads issuer `issuer`'s discovery document: its `jwks_uri` written to
/// `out`, or why it is refused. An issuer without `iss` has nothing to
/// discover (the build refuses discovery without one).
fn discover(
    issuer: usize,
    document: &[u8],
    config: &Config<'_>,
    out: &mut dyn fmt::Write,
) -> Result<Result<(), discovery::DiscoveryError>, RoundError> {
    let entry = &config.issuers[issuer];
    let (Some(iss), Some(source)) = (entry.iss, entry.fetch) else {
        return Err(RoundError::NotFetching(issuer));
    };
    let mut uri = [0u8; discovery::MAX_URI_BYTES];
    let over_https = source.url.starts_with("https://");
    Ok(discovery::jwks_uri(document, iss, over_https, &mut uri).map(|uri| {
        let _ = out.write_str(uri);
    }))
}

/// The host's clock in milliseconds, refusing what is not a time.
fn clock_ms(now: f64) -> Result<u64, RoundError> {
    crate::decide::clock(now).map_err(|_| RoundError::Clock)?;
    // In range (at most 2^53 seconds) and not NaN: the product fits a u64.
    Ok((now * 1000.0) as u64)
}

#[cfg(test)]
mod tests;
