//! Counting on a tick in the native module, as the proxy-wasm filter
//! counts: a decision adds one to its configuration's table
//! ([`crate::metrics::Table`], behind a lock the worker threads share; no
//! call into Envoy), and once a tick ([`TICK_MS`]) a thread of the
//! module's commits the configuration's scheduler, so that Envoy's main
//! thread hands Envoy what changed: one counter call per metric that
//! changed, whatever the request rate ([`super::on_tick`]). Envoy's stats
//! trail the requests by at most a tick; the counts of the last tick are
//! lost when Envoy drops the configuration.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use contract::outcome::Labels;

use super::abi::{self, ConfigHandle, LogLevel, Scheduler};
use crate::metrics::{self, Counted, DECISION_LABELS, Names, TICK_MS, Table};

/// A configuration's counters, its counts since the last tick, and its ticker.
pub(crate) struct Tally {
    /// Envoy's ids for the counters, defined with the configuration.
    decisions: Option<usize>,
    allowed: Option<usize>,
    denied: Option<usize>,
    cache_hit: Option<usize>,
    cache_miss: Option<usize>,
    /// The names the labels' indices stand for.
    names: Names<'static>,
    table: Mutex<Table>,
    /// `None` when Envoy gave no scheduler or no thread could start: then
    /// nothing reaches Envoy's stats, which the log says once.
    _ticker: Option<Ticker>,
}

impl Tally {
    /// The counters defined on `handle` (a counter Envoy refuses is never
    /// handed a count), an empty table, and the ticker that hands it over
    /// on `handle`'s scheduler.
    pub(crate) fn start(handle: &ConfigHandle) -> Tally {
        let ticker = handle.scheduler().and_then(Ticker::start);
        if ticker.is_none() {
            abi::log(
                LogLevel::Error,
                "metrics: no tick could be scheduled; no decision is counted in Envoy's stats",
            );
        }
        Tally {
            decisions: handle.define_counter(metrics::DECISIONS, &DECISION_LABELS),
            allowed: handle.define_counter(metrics::ALLOWED, &[]),
            denied: handle.define_counter(metrics::DENIED, &[]),
            cache_hit: handle.define_counter(metrics::CACHE_HIT, &[]),
            cache_miss: handle.define_counter(metrics::CACHE_MISS, &[]),
            names: metrics::compiled_names(),
            table: Mutex::new(Table::new()),
            _ticker: ticker,
        }
    }

    /// Counts one decision, or the module's own answer: in the table.
    pub(crate) fn count(&self, labels: &Labels) {
        self.table.lock().unwrap_or_else(PoisonError::into_inner).count_decision(labels);
    }

    /// A tick, on Envoy's main thread (`handle` is the configuration's):
    /// every count since the last tick goes to Envoy, by its labels,
    /// allowed or denied (a preflight is neither), and the token cache's
    /// hit or miss; the lock is released before the first call into
    /// Envoy. A count Envoy refuses is lost.
    pub(crate) fn hand_over(&self, handle: &ConfigHandle) {
        let mut taken = Vec::new();
        self.table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take_decision_counts(|counted, delta| taken.push((counted, delta)));
        for (counted, delta) in taken {
            let decision;
            let (id, values): (Option<usize>, &[&str]) = match counted {
                Counted::Decision(labels) => {
                    decision = self.names.decision_values(&labels);
                    (self.decisions, &decision)
                }
                Counted::Allowed => (self.allowed, &[]),
                Counted::Denied => (self.denied, &[]),
                Counted::CacheHit => (self.cache_hit, &[]),
                Counted::CacheMiss => (self.cache_miss, &[]),
            };
            if let Some(id) = id {
                handle.increment(id, values, delta);
            }
        }
    }
}

/// The thread that commits the scheduler once a tick, until dropped.
struct Ticker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<Scheduler>>,
}

impl Ticker {
    /// Starts the thread; `None` when the system refuses one.
    fn start(scheduler: Scheduler) -> Option<Ticker> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = Arc::clone(&stop);
        let tick = Duration::from_millis(u64::from(TICK_MS));
        let thread = std::thread::Builder::new()
            .name("gateway-ticks".into())
            .spawn(move || {
                let (stopped, wake) = &*signal;
                let mut guard = stopped.lock().unwrap_or_else(PoisonError::into_inner);
                while !*guard {
                    guard = wake.wait_timeout(guard, tick).unwrap_or_else(PoisonError::into_inner).0;
                    if !*guard {
                        scheduler.commit();
                    }
                }
                // Handed back, so that the configuration deletes it on Envoy's thread.
                scheduler
            })
            .ok()?;
        Some(Ticker { stop, thread: Some(thread) })
    }
}

impl Drop for Ticker {
    /// Stops the thread before the configuration goes: no commit follows,
    /// and the scheduler is deleted here.
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            drop(thread.join());
        }
    }
}
