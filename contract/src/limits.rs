//! Traffic control as hosts see it (`ABI.md`, "Rate limits"): the module
//! names the buckets a forward falls in (`=` lines); the host counts each
//! with the limit's numbers from the module's label table (`limit` lines)
//! and, when one is spent, asks the module for the answer (`limited`).
//!
//! The counting rule is GCRA, the generic cell rate algorithm (ITU-T
//! I.371; what `redis-cell` and Stripe's limiter use): a bucket holds one
//! number, its theoretical arrival time (TAT), and a request is let
//! through when it does not arrive more than the burst ahead of it. It is
//! a token bucket written as one timestamp: limits are smooth (no window
//! edge where twice the budget passes, as with fixed windows), a burst is
//! allowed up to its size, and a stored value older than now carries no
//! information, so a bucket can be forgotten as soon as its TAT passes.
//! [`gcra`] is the one definition; the Redis script and the Durable
//! Object are checked against it by `contract/golden/limits.json`.

/// A limit as the module's label table lists it:
/// `limit <name> <requests> <per_secs> <burst> <fields>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit<'a> {
    /// Its name in the config, for counters, logs and the RateLimit fields.
    pub name: &'a str,
    /// Requests allowed per `per_secs`, on average.
    pub requests: u32,
    /// The period `requests` are counted over, in seconds.
    pub per_secs: u32,
    /// How many may arrive at once, after a quiet period.
    pub burst: u32,
    /// Whether forwarded responses carry the `RateLimit` field for it
    /// (`1` in the table; the forward then has its `RateLimit-Policy`).
    pub fields: bool,
}

impl<'a> Limit<'a> {
    /// Reads the rest of a `limit` line
    /// (`<name> <requests> <per> <burst> <fields>`).
    pub fn parse(rest: &'a str) -> Option<Limit<'a>> {
        let mut parts = rest.split(' ');
        let (Some(name), Some(requests), Some(per), Some(burst), Some(fields), None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let number = |text: &str| crate::key_sources::number(Some(text)).filter(|&n| n > 0);
        let fields = match fields {
            "1" => true,
            "0" => false,
            _ => return None,
        };
        let limit = Limit {
            name,
            requests: number(requests)?,
            per_secs: number(per)?,
            burst: number(burst)?,
            fields,
        };
        (!name.is_empty()).then_some(limit)
    }

    /// The time one request uses of the budget, in microseconds (at least 1).
    pub fn interval_us(&self) -> u64 {
        (u64::from(self.per_secs) * 1_000_000).div_ceil(u64::from(self.requests)).max(1)
    }

    /// Counts one request at `now_us` in a bucket whose stored TAT is
    /// `stored_tat_us` (0 for a bucket never seen).
    pub fn count(&self, stored_tat_us: u64, now_us: u64) -> Verdict {
        gcra(stored_tat_us, now_us, self.interval_us(), self.burst)
    }
}

/// One bucket a forward falls in: an `=` line, `=<limit> <key>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket<'a> {
    /// The limit's index in the module's limit table.
    pub limit: u8,
    /// The bucket's key: `<limit name>:<kind>:<value>`, printable ASCII
    /// without spaces, built by the module from what it verified (`ABI.md`).
    /// Two different callers never share a key; a host stores it as it is.
    pub key: &'a str,
}

/// What counting one request in one bucket found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The request is within the limit.
    pub allowed: bool,
    /// The bucket's new TAT (unchanged when refused): what the host stores.
    pub tat_us: u64,
    /// Requests that would still pass right now.
    pub remaining: u32,
    /// Seconds until the bucket is full again (the RateLimit field's `t`).
    pub reset_secs: u32,
    /// For a refusal, seconds until one request passes again (`Retry-After`,
    /// at least 1); 0 when allowed.
    pub retry_after_secs: u32,
}

/// Time is in microseconds (Unix time; a JavaScript number holds it exactly
/// until the year 2255), so a limit of up to a million requests a second
/// keeps its exact interval.
///
/// GCRA: a request at `now_us` passes when the bucket's TAT, advanced by
/// one `interval_us`, is at most `burst` intervals ahead of now.
pub fn gcra(stored_tat_us: u64, now_us: u64, interval_us: u64, burst: u32) -> Verdict {
    let tolerance = interval_us.saturating_mul(u64::from(burst));
    let tat = stored_tat_us.max(now_us);
    let next = tat.saturating_add(interval_us);
    let horizon = now_us.saturating_add(tolerance);
    if next > horizon {
        return Verdict {
            allowed: false,
            tat_us: stored_tat_us,
            remaining: 0,
            reset_secs: secs_up(tat - now_us),
            retry_after_secs: secs_up(next - horizon).max(1),
        };
    }
    Verdict {
        allowed: true,
        tat_us: next,
        remaining: u32::try_from((horizon - next) / interval_us).unwrap_or(u32::MAX),
        reset_secs: secs_up(next - now_us),
        retry_after_secs: 0,
    }
}

/// Microseconds as whole seconds, rounded up.
fn secs_up(us: u64) -> u32 {
    u32::try_from(us.div_ceil(1_000_000)).unwrap_or(u32::MAX)
}

/// The value of the `RateLimit` field (draft-ietf-httpapi-ratelimit-headers)
/// a host adds to a forwarded response for a limit whose policy field the
/// forward carries: `"<name>";r=<remaining>;t=<reset>`. A `Display`, so
/// that hosts with and without `std` write it alike (`to_string()`).
pub fn ratelimit_field<'a>(limit: &Limit<'a>, verdict: &Verdict) -> RateLimitField<'a> {
    RateLimitField { name: limit.name, remaining: verdict.remaining, reset: verdict.reset_secs }
}

/// The `RateLimit` field's value for one bucket ([`ratelimit_field`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitField<'a> {
    name: &'a str,
    remaining: u32,
    reset: u32,
}

impl core::fmt::Display for RateLimitField<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "\"{}\";r={};t={}", self.name, self.remaining, self.reset)
    }
}

/// The field names of the RateLimit fields.
pub mod fields {
    /// The remaining budget, on forwards and refusals.
    pub const RATELIMIT: &str = "ratelimit";
    /// The limit's policy (quota and window).
    pub const RATELIMIT_POLICY: &str = "ratelimit-policy";
}

impl crate::Encoder<'_> {
    /// Adds `ratelimit-policy: "<name>";q=<requests>;w=<per_secs>` to the
    /// response fields.
    pub fn ratelimit_policy_field(
        &mut self,
        name: &str,
        requests: u32,
        per_secs: u32,
    ) -> Result<(), crate::Full> {
        self.add_response_field(fields::RATELIMIT_POLICY, &[b"\"", name.as_bytes(), b"\";q="])?;
        self.extend_decimal(requests)?;
        self.extend_value(&[b";w="])?;
        self.extend_decimal(per_secs)
    }

    /// Adds `ratelimit: "<name>";r=<remaining>;t=<reset>` to the response
    /// fields.
    pub fn ratelimit_field(&mut self, name: &str, remaining: u32, reset: u32) -> Result<(), crate::Full> {
        self.add_response_field(fields::RATELIMIT, &[b"\"", name.as_bytes(), b"\";r="])?;
        self.extend_decimal(remaining)?;
        self.extend_value(&[b";t="])?;
        self.extend_decimal(reset)
    }

    /// One `limit` line of the label table, after a separator unless `first`.
    pub fn limit_line(&mut self, first: bool, limit: &Limit<'_>) -> Result<(), crate::Full> {
        let separator: &[u8] = if first { b"" } else { b"\n" };
        self.extend_value(&[separator, b"limit ", limit.name.as_bytes(), b" "])?;
        self.extend_decimal(limit.requests)?;
        self.extend_value(&[b" "])?;
        self.extend_decimal(limit.per_secs)?;
        self.extend_value(&[b" "])?;
        self.extend_decimal(limit.burst)?;
        self.extend_value(&[if limit.fields { b" 1" } else { b" 0" }])
    }
}

/// The limits of a module's label table, in index order.
pub fn limits(table: &str) -> impl Iterator<Item = Option<Limit<'_>>> {
    table.split('\n').filter_map(|line| line.strip_prefix("limit ").map(Limit::parse))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn limit(requests: u32, per_secs: u32, burst: u32) -> Limit<'static> {
        Limit { name: "l", requests, per_secs, burst, fields: true }
    }

    #[test]
    fn a_burst_passes_then_one_request_per_interval() {
        let l = limit(10, 1, 3); // 100 ms per request, 3 at once
        let mut tat = 0;
        let now = 1_765_000_000_000_000;
        for remaining in [2, 1, 0] {
            let v = l.count(tat, now);
            assert!(v.allowed);
            assert_eq!(v.remaining, remaining);
            tat = v.tat_us;
        }
        let refused = l.count(tat, now);
        assert!(!refused.allowed);
        assert_eq!(refused.tat_us, tat, "a refusal stores nothing");
        assert_eq!(refused.retry_after_secs, 1);
        assert!(!l.count(tat, now + 99_999).allowed);
        assert!(l.count(tat, now + 100_000).allowed);
    }

    #[test]
    fn no_window_edge_lets_twice_the_budget_through() {
        // A fixed window of 60 s lets 2 x 60 through around its edge; GCRA
        // lets at most burst + elapsed / interval.
        let l = limit(60, 60, 60);
        let (mut tat, mut passed) = (0, 0);
        for ms in (0..2_000).step_by(10) {
            let v = l.count(tat, (59_000 + ms) * 1000);
            if v.allowed {
                passed += 1;
                tat = v.tat_us;
            }
        }
        assert_eq!(passed, 61);
    }

    #[test]
    fn limit_lines_read_back() {
        let table = "rule a\nlimit per-user 100 60 20 1\nissuer -\nlimit x 0 1 1 1\nlimit y 1 1 1 2";
        let read: Vec<_> = limits(table).collect();
        let per_user = Limit { name: "per-user", requests: 100, per_secs: 60, burst: 20, fields: true };
        assert_eq!(read, [Some(per_user), None, None]);
        assert_eq!(read[0].expect("a limit").interval_us(), 600_000);
        let mut buf = [0u8; 64];
        let mut out = crate::Encoder::new(&mut buf);
        out.limit_line(true, &per_user).expect("room");
        assert_eq!(out.as_bytes(), b"limit per-user 100 60 20 1");
    }
}
