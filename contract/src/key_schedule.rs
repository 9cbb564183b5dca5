//! When a host fetches one issuer's keys (`worker/ABI.md`, "Keys fetched
//! at run time", steps 3 and 4): at once at start, `refresh_secs` after a
//! success (sooner when the response's `Cache-Control: max-age` says so,
//! never sooner than `refetch_secs`), after a failure again in 1, 2, 4, ...
//! seconds up to `refetch_secs`, and at once when a decision asks for it
//! and no fetch started in the last `refetch_secs` (an ask within that time
//! is dropped: the next decision that needs the keys asks again). One fetch
//! at a time. host-sim, the Envoy filter and the wasi:http component keep
//! their schedules with this type, and the last two read the response's
//! `max-age` with [`max_age`]; the workerd shim (`deploy/workerd/keys.mjs`)
//! keeps the same rules in JavaScript.
//!
//! Times are milliseconds on the host's clock: a monotonic one (host-sim)
//! or the wall clock (proxy-wasm has no other), on which a clock that jumps
//! back does not stall the schedule (a wait longer than the one set is cut
//! short).

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
    /// When the last fetch started.
    started_at: Option<u64>,
    in_flight: bool,
    /// Failures since the last success.
    failures: u32,
}

/// The first retry after a failure; each further one waits twice as long.
const FIRST_RETRY_MS: u64 = 1000;

impl Schedule {
    /// A schedule whose first fetch is due at once.
    pub fn new(refresh_secs: u32, refetch_secs: u32) -> Self {
        Schedule {
            refresh_ms: u64::from(refresh_secs) * 1000,
            refetch_ms: u64::from(refetch_secs) * 1000,
            next_at: 0,
            wait_ms: 0,
            started_at: None,
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
        self.started_at.filter(|_| self.in_flight)
    }

    /// How long from `now` until the next fetch is due (0: due now, or a
    /// fetch is under way): for a host that sleeps until then.
    pub fn due_in(&self, now: u64) -> u64 {
        if self.due(now) || self.in_flight { 0 } else { self.next_at.saturating_sub(now) }
    }

    /// A fetch starts at `now`.
    pub fn start(&mut self, now: u64) {
        self.in_flight = true;
        self.started_at = Some(now);
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
        let recent =
            self.started_at.is_some_and(|at| now.checked_sub(at).is_some_and(|d| d < self.refetch_ms));
        if self.in_flight || recent {
            return false;
        }
        self.wait_until(now, 0);
        true
    }

    fn wait_until(&mut self, now: u64, wait_ms: u64) {
        self.in_flight = false;
        self.wait_ms = wait_ms;
        self.next_at = now.saturating_add(wait_ms);
    }
}

/// The `max-age` of a `Cache-Control` field value, in seconds (RFC 9111
/// section 5.2.2.1; a quoted value is read too). A number too large for
/// `u64` is `u64::MAX`.
pub fn max_age(cache_control: &str) -> Option<u64> {
    cache_control.split(',').find_map(|directive| {
        let (name, value) = directive.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("max-age") {
            return None;
        }
        let value = value.trim();
        let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
        let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
        digits.then(|| {
            value.bytes().fold(0u64, |n, b| n.saturating_mul(10).saturating_add(u64::from(b - b'0')))
        })
    })
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
    fn max_age_is_read_from_cache_control() {
        for (value, age) in [
            ("max-age=300", Some(300)),
            ("public, Max-Age = 60 , must-revalidate", Some(60)),
            ("max-age=\"15\"", Some(15)),
            ("s-maxage=5, max-age=7", Some(7)),
            ("max-age=99999999999999999999999", Some(u64::MAX)),
            ("no-store", None),
            ("max-age=", None),
            ("max-age=-1", None),
            ("max-age=1h", None),
            ("", None),
        ] {
            assert_eq!(max_age(value), age, "{value:?}");
        }
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
}
