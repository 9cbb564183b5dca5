//! When and what a module that fetches keys fetches (`worker/ABI.md`,
//! "Keys fetched at run time"), written once: the module keeps one
//! [`KeyFetch`] per issuer and answers its hosts' questions with it (its
//! `key_fetch` exports), so every host fetches on the same schedule and no
//! host keeps a rule of its own.
//!
//! - **When** ([`Schedule`]): at once at start; `refresh_secs` after a
//!   success (sooner when the response's `Cache-Control: max-age` says so,
//!   [`max_age`], never sooner than `refetch_secs`); after a failure again
//!   in 1, 2, 4, ... seconds up to `refetch_secs`; at once when a decision
//!   asks for it ([`Why::Asked`]) and no fetch started in the last
//!   `refetch_secs` (an ask within that time is dropped: the next decision
//!   that needs the keys asks again); at once when the host's own timer
//!   asks ([`Why::Now`], a Cron Trigger). One round at a time.
//! - **What** ([`KeyFetch`]): a round of a `jwks` source fetches its URL; a
//!   round of a `discovery` source fetches the discovery document, then the
//!   `jwks_uri` it names, on every round, so that a provider that moves its
//!   keys, or whose discovery document stops naming the configured issuer,
//!   is seen by the next round on every host. A fault of either document
//!   (a failed fetch, a refusal) is a failed round: the installed keys
//!   stay, until `max_stale_secs`.
//!
//! Times are milliseconds on the clock the host passes (Unix time): a clock
//! that jumps back does not stall the schedule (a wait longer than the one
//! set is cut short).

/// Why a host asks whether to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The host's routine look (a timer, a tick, a request): a round starts
    /// only when the schedule says it is due.
    Due,
    /// A decision asked for the issuer's keys (its `~` line): a round
    /// starts unless one is under way or started within `refetch_secs`.
    Asked,
    /// The host's own timer wants fresh keys now (a Cron Trigger): a round
    /// starts unless one is under way.
    Now,
}

impl Why {
    /// The number a host passes for it: 0, 1, 2.
    pub fn from_code(code: u32) -> Option<Why> {
        match code {
            0 => Some(Why::Due),
            1 => Some(Why::Asked),
            2 => Some(Why::Now),
            _ => None,
        }
    }
}

/// The document of a round that the host hands over next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Document {
    /// The OpenID discovery document: it names the JWKS document.
    Discovery,
    /// The JWKS document: it ends the round.
    Jwks,
}

/// One issuer's fetching: its schedule and the round under way. Every
/// field is zero in [`KeyFetch::UNSET`], so that a module's instance, which
/// holds one per issuer, stays in zeroed memory (no bytes of module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFetch {
    schedule: Schedule,
    /// Whether a round starts with the discovery document.
    discovery: bool,
    /// The document the host fetches now.
    step: Step,
}

/// Where a round is: the document fetched now, or none (zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Step {
    Idle = 0,
    Discovery = 1,
    Jwks = 2,
}

impl KeyFetch {
    /// The fetching of a source (`discovery`: its URL is a discovery
    /// document), its first round due at once.
    pub const fn new(discovery: bool, refresh_secs: u32, refetch_secs: u32) -> Self {
        KeyFetch { schedule: Schedule::new(refresh_secs, refetch_secs), discovery, step: Step::Idle }
    }

    /// A placeholder of all zeros, for memory a module zeroes: made into a
    /// source's fetching with [`KeyFetch::new`] before its first use.
    pub const UNSET: KeyFetch = KeyFetch::new(false, 0, 0);

    /// Whether a round starts at `now`, asked for `why`: when it does, the
    /// host fetches the source's URL (the document [`KeyFetch::document`]).
    pub fn start(&mut self, now: u64, why: Why) -> bool {
        match why {
            Why::Due => {}
            Why::Asked => {
                self.schedule.ask(now);
            }
            Why::Now => self.schedule.at_once(now),
        }
        if !self.schedule.due(now) {
            return false;
        }
        self.schedule.start(now);
        self.step = if self.discovery { Step::Discovery } else { Step::Jwks };
        true
    }

    /// The document the host fetches in the round under way, if one is.
    pub fn document(&self) -> Option<Document> {
        match self.step {
            Step::Idle => None,
            Step::Discovery => Some(Document::Discovery),
            Step::Jwks => Some(Document::Jwks),
        }
    }

    /// The discovery document was read: the JWKS document it names is
    /// fetched next, in the same round.
    pub fn discovered(&mut self) {
        if self.step == Step::Discovery {
            self.step = Step::Jwks;
        }
    }

    /// A JWKS document fetched at `at` was installed; `max_age_secs` is its
    /// response's `Cache-Control: max-age`. Ends the round under way, if
    /// one is.
    pub fn installed(&mut self, at: u64, max_age_secs: Option<u64>) {
        self.step = Step::Idle;
        self.schedule.succeeded(at, max_age_secs);
    }

    /// A fetch of the round failed, or its document was refused: the round
    /// ends, and the next one waits as a failure says.
    pub fn failed(&mut self, now: u64) {
        self.step = Step::Idle;
        self.schedule.failed(now);
    }

    /// How long from `now` until a round is due without an ask; `None`
    /// while one is under way.
    pub fn wait(&self, now: u64) -> Option<u64> {
        match self.step {
            Step::Idle => Some(self.schedule.due_in(now)),
            Step::Discovery | Step::Jwks => None,
        }
    }
}

/// The `max-age` of a `Cache-Control` field value, in seconds (RFC 9111
/// section 5.2.2.1; a quoted value is read too; a number past `u64` is
/// `u64::MAX`): the first directive of that name with a number, the name in
/// any case. Read as bytes, so a value that is not text has none. Several
/// fields are one value joined with `, ` (RFC 9110 section 5.3).
pub fn max_age(cache_control: &[u8]) -> Option<u64> {
    cache_control.split(|&b| b == b',').find_map(|directive| {
        let at = directive.iter().position(|&b| b == b'=')?;
        let (name, value) = (trim(&directive[..at]), trim(&directive[at + 1..]));
        if !name.eq_ignore_ascii_case(b"max-age") {
            return None;
        }
        let value = match value {
            [b'"', inner @ .., b'"'] => inner,
            value => value,
        };
        let digits = !value.is_empty() && value.iter().all(u8::is_ascii_digit);
        digits
            .then(|| value.iter().fold(0u64, |n, b| n.saturating_mul(10).saturating_add(u64::from(b - b'0'))))
    })
}

/// `bytes` without the spaces and tabs around it.
fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !matches!(b, b' ' | b'\t')).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !matches!(b, b' ' | b'\t')).map_or(start, |end| end + 1);
    &bytes[start..end]
}

/// The fetch schedule of one issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    refresh_ms: u64,
    refetch_ms: u64,
    /// When the next fetch is due.
    next_at: u64,
    /// The wait that set `next_at`: a due time further away than this means
    /// the clock went back.
    wait_ms: u64,
    /// When the last fetch started, if `started`.
    started_at: u64,
    started: bool,
    in_flight: bool,
    /// Failures since the last success.
    failures: u32,
}

/// The first retry after a failure; each further one waits twice as long.
const FIRST_RETRY_MS: u64 = 1000;

impl Schedule {
    /// A schedule whose first fetch is due at once.
    pub const fn new(refresh_secs: u32, refetch_secs: u32) -> Self {
        Schedule {
            refresh_ms: refresh_secs as u64 * 1000,
            refetch_ms: refetch_secs as u64 * 1000,
            next_at: 0,
            wait_ms: 0,
            started_at: 0,
            started: false,
            in_flight: false,
            failures: 0,
        }
    }

    /// Whether a fetch should start at `now`.
    pub fn due(&self, now: u64) -> bool {
        !self.in_flight && (now >= self.next_at || self.next_at - now > self.wait_ms)
    }

    /// Whether a fetch is under way.
    pub fn in_flight(&self) -> bool {
        self.in_flight
    }

    /// When the fetch under way started.
    pub fn started_at(&self) -> Option<u64> {
        (self.started && self.in_flight).then_some(self.started_at)
    }

    /// How long from `now` until the next fetch is due (0: due now, or a
    /// fetch is under way): for a host that sleeps until then.
    pub fn due_in(&self, now: u64) -> u64 {
        if self.due(now) || self.in_flight { 0 } else { self.next_at.saturating_sub(now) }
    }

    /// A fetch starts at `now`.
    pub fn start(&mut self, now: u64) {
        self.in_flight = true;
        self.started_at = now;
        self.started = true;
    }

    /// The fetch ended with a document installed; `max_age_secs` is the
    /// response's `Cache-Control: max-age`, if it had one.
    pub fn succeeded(&mut self, now: u64, max_age_secs: Option<u64>) {
        let wait = max_age_secs
            .map_or(self.refresh_ms, |age| age.saturating_mul(1000).clamp(self.refetch_ms, self.refresh_ms));
        self.failures = 0;
        self.wait_until(now, wait);
    }

    /// The fetch failed or its document was refused: retry in 1, 2, 4, ...
    /// seconds, at most `refetch_secs`.
    pub fn failed(&mut self, now: u64) {
        let doubled = FIRST_RETRY_MS.checked_shl(self.failures.min(32)).unwrap_or(u64::MAX);
        self.failures = self.failures.saturating_add(1);
        self.wait_until(now, doubled.min(self.refetch_ms));
    }

    /// A decision asked for this issuer's keys at `now` (a `~` line): the
    /// fetch is due at once unless one is under way or started within
    /// `refetch_secs`. Whether it was granted.
    pub fn ask(&mut self, now: u64) -> bool {
        let recent = self.started && now.checked_sub(self.started_at).is_some_and(|d| d < self.refetch_ms);
        if self.in_flight || recent {
            return false;
        }
        self.wait_until(now, 0);
        true
    }

    /// The host's own timer wants a fetch at `now`: due at once, unless one
    /// is under way.
    pub fn at_once(&mut self, now: u64) {
        if !self.in_flight {
            self.wait_until(now, 0);
        }
    }

    fn wait_until(&mut self, now: u64, wait_ms: u64) {
        self.in_flight = false;
        self.wait_ms = wait_ms;
        self.next_at = now.saturating_add(wait_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    const T0: u64 = 1_800_000_000_000;

    /// The fixture's discovery issuer: refresh 2 s, refetch 1 s; and the
    /// defaults: refresh 600 s, refetch 60 s.
    fn fast() -> Schedule {
        Schedule::new(2, 1)
    }

    #[test]
    fn the_first_fetch_is_due_at_once_and_one_runs_at_a_time() {
        let mut s = fast();
        assert!(s.due(T0));
        s.start(T0);
        assert!(s.in_flight());
        assert_eq!(s.started_at(), Some(T0));
        assert!(!s.due(T0 + 60_000), "never two at once");
        assert!(!s.ask(T0 + 60_000), "nor an extra one");
    }

    #[test]
    fn a_success_waits_refresh_secs_or_max_age_within_refetch_and_refresh() {
        let mut s = Schedule::new(600, 60);
        s.start(T0);
        s.succeeded(T0, None);
        assert!(!s.due(T0 + 599_999));
        assert!(s.due(T0 + 600_000));
        for (max_age, wait) in
            [(Some(120), 120_000), (Some(5), 60_000), (Some(86_400), 600_000), (Some(0), 60_000)]
        {
            s.start(T0);
            s.succeeded(T0, max_age);
            assert!(!s.due(T0 + wait - 1), "{max_age:?}");
            assert!(s.due(T0 + wait), "{max_age:?}");
        }
        s.succeeded(T0, Some(u64::MAX));
        assert!(s.due(T0 + 600_000));
    }

    #[test]
    fn failures_retry_after_1_2_4_seconds_up_to_refetch_secs() {
        let mut s = Schedule::new(600, 60);
        let mut now = T0;
        let mut waits = Vec::new();
        for _ in 0..9 {
            s.start(now);
            s.failed(now);
            let wait = (1..=600_000).find(|w| s.due(now + w)).expect("due within refresh");
            waits.push(wait / 1000);
            now += wait;
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        s.start(now);
        s.succeeded(now, None);
        s.start(now);
        s.failed(now);
        assert!(s.due(now + 1000), "a success resets the backoff");
        let mut once = fast();
        once.start(T0);
        once.failed(T0);
        once.start(T0 + 1000);
        once.failed(T0 + 1000);
        assert!(once.due(T0 + 2000), "capped at refetch_secs = 1");
    }

    #[test]
    fn an_asked_fetch_is_granted_once_per_refetch_secs() {
        let mut s = Schedule::new(600, 60);
        s.start(T0);
        s.succeeded(T0 + 100, None);
        assert!(!s.ask(T0 + 59_999), "started within refetch_secs");
        assert!(!s.due(T0 + 59_999));
        assert!(s.ask(T0 + 60_000));
        assert!(s.due(T0 + 60_000));
        s.start(T0 + 60_000);
        s.succeeded(T0 + 60_010, None);
        assert!(!s.ask(T0 + 60_020));
        // A flood of asks over 200 s, each granted one started at once.
        let mut started = Vec::new();
        for i in 0..2000 {
            let now = T0 + 60_020 + i * 100;
            if s.ask(now) {
                s.start(now);
                s.succeeded(now + 10, None);
                started.push(now);
            }
        }
        assert_eq!(
            started,
            [T0 + 120_020, T0 + 180_020, T0 + 240_020],
            "one per refetch_secs; the rest dropped"
        );
    }

    #[test]
    fn due_in_is_the_wait_until_due() {
        let mut s = Schedule::new(600, 60);
        assert_eq!(s.due_in(T0), 0, "the first fetch at once");
        s.start(T0);
        assert_eq!(s.due_in(T0 + 5), 0, "under way: nothing to wait for");
        s.succeeded(T0 + 10, Some(120));
        assert_eq!(s.due_in(T0 + 10), 120_000);
        assert_eq!(s.due_in(T0 + 100_010), 20_000);
        assert_eq!(s.due_in(T0 + 120_010), 0);
        s.start(T0 + 120_010);
        s.failed(T0 + 120_020);
        assert_eq!(s.due_in(T0 + 120_020), 1000);
    }

    #[test]
    fn a_clock_that_goes_back_does_not_stall_the_schedule() {
        let mut s = Schedule::new(600, 60);
        s.start(T0);
        s.succeeded(T0, None);
        let earlier = T0 - 3_600_000;
        assert!(s.due(earlier), "a wait longer than refresh_secs is cut short");
        assert!(s.ask(earlier), "a start in the future is no recent start");
    }

    #[test]
    fn a_discovery_round_reads_discovery_then_the_jwks_on_every_round() {
        let mut f = KeyFetch::new(true, 2, 1);
        assert_eq!(f.document(), None);
        assert_eq!(f.wait(T0), Some(0), "the first round at once");
        assert!(f.start(T0, Why::Due));
        assert_eq!(f.document(), Some(Document::Discovery));
        assert_eq!(f.wait(T0), None, "under way");
        assert!(!f.start(T0 + 10_000, Why::Now), "one round at a time");
        f.discovered();
        assert_eq!(f.document(), Some(Document::Jwks));
        f.installed(T0 + 50, None);
        assert_eq!(f.document(), None);
        assert_eq!(f.wait(T0 + 50), Some(2000));
        assert!(!f.start(T0 + 2049, Why::Due));
        assert!(f.start(T0 + 2050, Why::Due));
        assert_eq!(f.document(), Some(Document::Discovery), "the next round reads discovery again");
        // A discovery fault is a failed round: backoff, and discovery again.
        f.failed(T0 + 2060);
        assert_eq!(f.wait(T0 + 2060), Some(1000));
        assert!(f.start(T0 + 3060, Why::Due));
        assert_eq!(f.document(), Some(Document::Discovery));
        let mut jwks = KeyFetch::new(false, 600, 60);
        assert!(jwks.start(T0, Why::Due));
        assert_eq!(jwks.document(), Some(Document::Jwks));
        jwks.discovered();
        assert_eq!(jwks.document(), Some(Document::Jwks), "no discovery in a jwks round");
    }

    #[test]
    fn asked_rounds_once_per_refetch_secs_and_the_hosts_timer_at_once() {
        let mut f = KeyFetch::new(false, 600, 60);
        assert!(f.start(T0, Why::Due));
        f.installed(T0, None);
        assert!(!f.start(T0 + 1000, Why::Due));
        assert!(!f.start(T0 + 59_999, Why::Asked), "within refetch_secs of the last start");
        assert!(f.start(T0 + 60_000, Why::Asked));
        f.installed(T0 + 60_000, None);
        assert!(f.start(T0 + 60_001, Why::Now), "the host's own timer: at once");
        assert!(!f.start(T0 + 60_002, Why::Now), "not while one is under way");
        f.failed(T0 + 60_003);
        // A document another instance fetched earlier ends the round as of its fetch.
        assert!(f.start(T0 + 61_003, Why::Due));
        f.installed(T0 - 599_000, None);
        assert_eq!(f.wait(T0 + 61_003), Some(0), "fetched long ago: due again");
        assert_eq!(Why::from_code(0), Some(Why::Due));
        assert_eq!(Why::from_code(2), Some(Why::Now));
        assert_eq!(Why::from_code(3), None);
    }

    #[test]
    fn max_age_is_read_from_cache_control_as_bytes() {
        for (value, age) in [
            (&b"max-age=300"[..], Some(300)),
            (b"public, Max-Age = 60 , must-revalidate", Some(60)),
            (b"MAX-AGE = 60", Some(60)),
            (b"\tmax-age=\"15\"", Some(15)),
            (b"s-maxage=5, max-age=7", Some(7)),
            (b"max-age=x, max-age=8", Some(8)),
            (b"max-age=9, max-age=10", Some(9)),
            (b"max-age=99999999999999999999999", Some(u64::MAX)),
            (b"max-age=5\xff", None),
            (b"no-store", None),
            (b"max-age=", None),
            (b"max-age=-1", None),
            (b"max-age=1h", None),
            (b"max-age=\"", None),
            (b"", None),
        ] {
            assert_eq!(max_age(value), age, "{:?}", std::string::String::from_utf8_lossy(value));
        }
    }
}
