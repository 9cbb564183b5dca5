//! Rate limits on host-sim (`worker/ABI.md`, "Rate limits (`limited`)"):
//! the module names the buckets a forward falls in; the host counts the
//! request in each, with the limit's numbers from the module's label table,
//! in process ([`table`]) or in Redis ([`redis`]), and when one is spent
//! asks the module for its 429 (`runtime::Runtime::decide_counted`).
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | the flags, the module's limit table, [`Counting`]: one decision's buckets counted, and what came of it |
//! | [`table`] | the in-process table: sharded, bounded, evicting |
//! | [`redis`] | the shared count: one script call per decision, awaited, over each thread's own connections |
//! | [`resp`] | the Redis protocol (one parser; an async client for `serve`, a blocking one for tools and tests), every call bounded |
//!
//! When Redis fails or is slow (`--limits-timeout-ms`), `--limits-fail`
//! says what happens: `open` (the default) forwards the request uncounted,
//! `closed` answers 503 (`limit_store_unavailable`). Either way the failure
//! is counted (`gateway_limit_store_errors_total`) and logged at most once
//! every [`LOG_EVERY`].

pub mod redis;
pub mod resp;
pub mod table;

use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

pub use crate::metrics::LimitCounters;
use contract::Forward;
use contract::fields::HostAnswer;
use contract::limits::{Limit, Verdict};
use runtime::Refusal;

use self::redis::RedisStore;
use self::table::Table;

/// What `serve --help` says of rate limits.
pub const HELP: &str = "\
Rate limits: a module built with [[limits]] names the buckets each forward
falls in; serve counts the request in each (GCRA) and sends the module's
429 instead of forwarding when one is spent (outcome rate_limited).
  --limits local            count in this process (default), in at most
                            --limits-capacity buckets; a full table drops
                            buckets whose time has passed, then evicts the
                            one closest to full (gateway_limit_evictions_total)
  --limits redis://H:P      one budget shared by every gateway counting there
  --limits-timeout-ms N     the most counting one request in Redis may take
                            (default 50)
  --limits-fail open        Redis down or slow: forward uncounted (default;
                            no limit holds while it is away)
  --limits-fail closed      Redis down or slow: answer 503
                            (limit_store_unavailable)
Store failures: gateway_limit_store_errors_total, one stderr line per 10 s.";

/// How often a failing store is logged, at most.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Where buckets are counted: `local` or `redis://HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreKind {
    /// In this process's table.
    Local,
    /// In the Redis server at this address.
    Redis(SocketAddr),
}

impl FromStr for StoreKind {
    type Err = String;

    fn from_str(text: &str) -> Result<StoreKind, String> {
        if text == "local" {
            return Ok(StoreKind::Local);
        }
        let Some(authority) = text.strip_prefix("redis://") else {
            return Err(format!("unknown limit store {text:?} (local, redis://HOST:PORT)"));
        };
        let authority = authority.trim_end_matches('/');
        let with_port = if authority.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
            authority.to_owned()
        } else {
            format!("{authority}:6379")
        };
        with_port
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {authority}: {e}"))?
            .next()
            .map(StoreKind::Redis)
            .ok_or_else(|| format!("{authority} resolves to no address"))
    }
}

/// What happens to a request whose buckets could not be counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FailMode {
    /// Forward it uncounted.
    #[default]
    Open,
    /// Answer 503 (`limit_store_unavailable`).
    Closed,
}

/// The rate-limit flags of `serve` (and `eval`).
#[derive(Debug, Clone, clap::Args)]
pub struct TrafficArgs {
    /// Where a module's rate limits are counted: local (this process, the
    /// default) or redis://HOST:PORT (one budget shared by every gateway
    /// counting there).
    #[arg(long = "limits", value_name = "STORE", default_value = "local")]
    pub store: StoreKind,
    /// When Redis fails or is slow: open forwards the request uncounted,
    /// closed answers 503. Counted in gateway_limit_store_errors_total.
    #[arg(long, value_enum, default_value = "open")]
    pub limits_fail: FailMode,
    /// The most counting one request in Redis may take, in milliseconds
    /// (connecting, loading the script, the call).
    #[arg(long, default_value_t = 50)]
    pub limits_timeout_ms: u64,
    /// Buckets the local table holds; past it the entries whose time has
    /// passed go, then the one closest to full (gateway_limit_evictions_total).
    #[arg(long, default_value_t = table::DEFAULT_CAPACITY)]
    pub limits_capacity: usize,
}

/// A limit of the module's table, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitSpec {
    name: String,
    requests: u32,
    per_secs: u32,
    burst: u32,
    fields: bool,
}

impl LimitSpec {
    /// The contract's view of it.
    pub fn limit(&self) -> Limit<'_> {
        Limit {
            name: &self.name,
            requests: self.requests,
            per_secs: self.per_secs,
            burst: self.burst,
            fields: self.fields,
        }
    }
}

/// Reads the `limit` lines of a label table; a malformed one is an error
/// (its index would shift every later limit's).
pub fn limit_table(labels: &str) -> Result<Vec<LimitSpec>, String> {
    contract::limits::limits(labels)
        .enumerate()
        .map(|(index, limit)| {
            let l = limit.ok_or_else(|| format!("limit {index} of the module's label table is malformed"))?;
            Ok(LimitSpec {
                name: l.name.to_owned(),
                requests: l.requests,
                per_secs: l.per_secs,
                burst: l.burst,
                fields: l.fields,
            })
        })
        .collect()
}

/// The counting of `runtime`'s module as the flags say, or None for a
/// module without limits. Its counters are `metrics`' when given.
pub fn for_module(
    runtime: &runtime::Runtime,
    args: &TrafficArgs,
    metrics: Option<&crate::metrics::Metrics>,
) -> Result<Option<Counting>, String> {
    let labels = runtime.labels().map_err(|e| format!("cannot read the module's label table: {e}"))?;
    let limits = limit_table(&labels)?;
    if limits.is_empty() {
        return Ok(None);
    }
    if !runtime.has_limited() {
        return Err("the module lists limits but does not export `limited` (worker/ABI.md)".into());
    }
    let counters = metrics.map(|m| m.limits.clone()).unwrap_or_default();
    Ok(Some(Counting::new(limits, args, counters)))
}

#[derive(Debug)]
enum Store {
    Local(Arc<Table>),
    Redis(RedisStore),
}

/// What counting a forward's buckets came to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Counted {
    /// The forward names no bucket (or counting is off).
    #[default]
    Unlimited,
    /// Every bucket allowed it: the `ratelimit` field values to add to the
    /// response (one per limit whose `fields` is on).
    Allowed(Vec<String>),
    /// A bucket refused it: the module writes the 429.
    Refused(Refusal),
    /// The store could not count: forward uncounted (fail open) or 503.
    StoreFailed {
        /// True when set to fail closed.
        closed: bool,
    },
    /// A bucket names a limit the table lacks: the module's fault (500).
    Invalid,
}

impl Counted {
    /// The answer the host makes itself instead of forwarding: 503 for a
    /// store that failed closed, 500 for a bucket of no limit.
    pub fn host_answer(&self) -> Option<HostAnswer> {
        match self {
            Counted::StoreFailed { closed: true } => Some(HostAnswer::LimitStoreUnavailable),
            Counted::Invalid => Some(HostAnswer::ModuleFailed),
            _ => None,
        }
    }

    /// Adds the `ratelimit` fields of the buckets a forward was counted in
    /// to the upstream's response.
    pub fn add_fields(&self, headers: &mut http::HeaderMap) {
        let Counted::Allowed(fields) = self else { return };
        for field in fields {
            if let Ok(value) = http::HeaderValue::from_str(field) {
                headers.append(contract::limits::fields::RATELIMIT, value);
            }
        }
    }
}

/// One serving thread's counting: the module's limits and the store.
#[derive(Debug)]
pub struct Counting {
    limits: Arc<[LimitSpec]>,
    store: Store,
    fail: FailMode,
    counters: LimitCounters,
    /// When a store failure was last logged (Unix µs), shared by the threads.
    logged_at: Arc<AtomicU64>,
}

impl Counting {
    /// Counting for a module with `limits`, as the flags say.
    pub fn new(limits: Vec<LimitSpec>, args: &TrafficArgs, counters: LimitCounters) -> Counting {
        let store = match &args.store {
            StoreKind::Local => {
                Store::Local(Arc::new(Table::new(args.limits_capacity, counters.evictions.clone())))
            }
            StoreKind::Redis(addr) => {
                Store::Redis(RedisStore::new(*addr, Duration::from_millis(args.limits_timeout_ms.max(1))))
            }
        };
        Counting { limits: limits.into(), store, fail: args.limits_fail, counters, logged_at: Arc::default() }
    }

    /// The same counting for another serving thread (the same table, or
    /// Redis connections of its own).
    pub fn for_thread(&self) -> Counting {
        let store = match &self.store {
            Store::Local(table) => Store::Local(Arc::clone(table)),
            Store::Redis(redis) => Store::Redis(redis.for_thread()),
        };
        Counting {
            limits: Arc::clone(&self.limits),
            store,
            fail: self.fail,
            counters: self.counters.clone(),
            logged_at: Arc::clone(&self.logged_at),
        }
    }

    /// What the startup line says of it.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.limits.iter().map(|l| l.name.as_str()).collect();
        let store = match &self.store {
            Store::Local(table) => format!("in process (capacity {} buckets)", table.capacity()),
            Store::Redis(redis) => format!(
                "in redis at {} (fail {})",
                redis.addr(),
                if self.fail == FailMode::Open { "open" } else { "closed" }
            ),
        };
        format!("limits: {} counted {store}", names.join(", "))
    }

    /// True when the buckets are counted in this process ([`Counting::count_here`]
    /// counts them); false for Redis ([`Counting::count_shared`]).
    pub fn in_process(&self) -> bool {
        matches!(self.store, Store::Local(_))
    }

    /// Counts one request at `now_us` in every bucket of `forward` in this
    /// process's table; None when the buckets are counted in Redis.
    pub fn count_here(&self, forward: &Forward<'_>, now_us: u64) -> Option<Counted> {
        let Store::Local(table) = &self.store else { return None };
        let buckets = match self.buckets(forward) {
            Ok(buckets) => buckets,
            Err(counted) => return Some(counted),
        };
        let mut verdicts = Vec::with_capacity(buckets.len());
        for (key, limit) in &buckets {
            let verdict = table.count(key, limit, now_us);
            verdicts.push(verdict);
            if !verdict.allowed {
                break;
            }
        }
        Some(fields_or_refusal(&buckets, &verdicts))
    }

    /// Counts one request in every bucket of `forward` wherever they are
    /// counted: in Redis (one script call, on the server's clock), or here.
    pub async fn count_shared(&self, forward: &Forward<'_>, now_us: u64) -> Counted {
        let Store::Redis(redis) = &self.store else {
            return self.count_here(forward, now_us).unwrap_or_default();
        };
        let buckets = match self.buckets(forward) {
            Ok(buckets) => buckets,
            Err(counted) => return counted,
        };
        match redis.count(&buckets, None).await {
            Ok(verdicts) => fields_or_refusal(&buckets, &verdicts),
            Err(e) => self.failed(&e, now_us),
        }
    }

    /// The forward's buckets with their limits; `Unlimited` when it names
    /// none, `Invalid` when one names a limit the table lacks.
    fn buckets<'f>(&'f self, forward: &Forward<'f>) -> Result<Vec<(&'f str, Limit<'f>)>, Counted> {
        let mut buckets = Vec::new();
        for bucket in forward.buckets() {
            match self.limits.get(usize::from(bucket.limit)) {
                Some(spec) => buckets.push((bucket.key, spec.limit())),
                None => return Err(Counted::Invalid),
            }
        }
        if buckets.is_empty() {
            return Err(Counted::Unlimited);
        }
        Ok(buckets)
    }

    /// Counts a store failure, logs it when none was logged lately.
    fn failed(&self, error: &redis::StoreError, now_us: u64) -> Counted {
        self.counters.store_errors.inc();
        let last = self.logged_at.load(Relaxed);
        let every = LOG_EVERY.as_micros() as u64;
        if now_us.saturating_sub(last) >= every
            && self.logged_at.compare_exchange(last, now_us, Relaxed, Relaxed).is_ok()
        {
            let then = if self.fail == FailMode::Open { "forwarding uncounted" } else { "answering 503" };
            eprintln!(
                "limits: {error}; {then} ({} store errors so far; logged at most every {}s)",
                self.counters.store_errors.get(),
                LOG_EVERY.as_secs()
            );
        }
        Counted::StoreFailed { closed: self.fail == FailMode::Closed }
    }
}

/// The refusal among `verdicts`, or the RateLimit fields of the allowed.
fn fields_or_refusal(buckets: &[(&str, Limit<'_>)], verdicts: &[Verdict]) -> Counted {
    let mut fields = Vec::new();
    for (index, ((_, limit), verdict)) in buckets.iter().zip(verdicts).enumerate() {
        if !verdict.allowed {
            return Counted::Refused(Refusal {
                bucket: u32::try_from(index).unwrap_or(u32::MAX),
                retry_after_secs: verdict.retry_after_secs,
                reset_secs: verdict.reset_secs,
            });
        }
        if limit.fields {
            fields.push(contract::limits::ratelimit_field(limit, verdict).to_string());
        }
    }
    if verdicts.len() < buckets.len() {
        // A store that stopped early without a refusal: count it as failed.
        return Counted::Invalid;
    }
    Counted::Allowed(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_are_named() {
        assert_eq!("local".parse(), Ok(StoreKind::Local));
        assert_eq!("redis://127.0.0.1:7000".parse(), Ok(StoreKind::Redis(([127, 0, 0, 1], 7000).into())));
        assert_eq!("redis://127.0.0.1".parse(), Ok(StoreKind::Redis(([127, 0, 0, 1], 6379).into())));
        assert!("memcached://x".parse::<StoreKind>().is_err());
    }

    #[test]
    fn the_limit_table_is_read_in_order() {
        let table = "rule a\nlimit per-user 3 60 3 1\nissuer x\nlimit search 2 60 2 0";
        let limits = limit_table(table).unwrap_or_default();
        assert_eq!(limits.len(), 2);
        assert_eq!(limits[1].limit().name, "search");
        assert!(limit_table("limit bad 0 1 1 1").is_err());
    }

    fn counting() -> Counting {
        let limits = limit_table("limit per-user 3 60 3 1\nlimit quiet 1 60 1 0").unwrap_or_default();
        let args = TrafficArgs {
            store: StoreKind::Local,
            limits_fail: FailMode::Open,
            limits_timeout_ms: 50,
            limits_capacity: 1000,
        };
        Counting::new(limits, &args, LimitCounters::default())
    }

    fn forward(buckets: &str) -> contract::owned::DecisionBuf {
        let text = format!("http://u\n/\n#00ffff000000 m{buckets}");
        contract::owned::DecisionBuf::decode(200, text.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_forward_is_counted_in_each_bucket_until_one_refuses() {
        let counting = counting();
        let now = 1_800_000_000_000_000;
        let decision = forward("\n=00 per-user:s:0.alice\n=01 quiet:s:0.alice");
        let contract::Decision::Forward(f) = decision.view() else { panic!("a forward") };
        let allowed = Counted::Allowed(vec!["\"per-user\";r=2;t=20".into()]);
        assert_eq!(counting.count_here(&f, now), Some(allowed));
        // `quiet` is spent: the second bucket refuses.
        let refused = Counted::Refused(Refusal { bucket: 1, retry_after_secs: 60, reset_secs: 60 });
        assert_eq!(counting.count_here(&f, now), Some(refused));
        let unknown = forward("\n=07 x:s:0.a");
        let contract::Decision::Forward(f) = unknown.view() else { panic!("a forward") };
        assert_eq!(counting.count_here(&f, now), Some(Counted::Invalid));
        let none = forward("");
        let contract::Decision::Forward(f) = none.view() else { panic!("a forward") };
        assert_eq!(counting.count_here(&f, now), Some(Counted::Unlimited));
    }
}
