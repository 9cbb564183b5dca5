//! The counts a VM (or the native module's configuration) holds between
//! two ticks, and how they are handed to the host: [`Table`]. The names
//! and labels they are counted under are [`super`]'s.

use std::cell::OnceCell;

use contract::outcome::{self, Cache, Labels};

use super::{
    ALLOWED, CACHE_HIT, CACHE_MISS, DENIED, JWKS_FETCH_FAILED, JWKS_FETCH_SUCCESS, JWKS_INSTALLED,
    JWKS_INSTALLED_AT, JWKS_REFUSED, Names,
};

/// A metric's kind, as proxy-wasm's `MetricType` numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only ever grows.
    Counter,
    /// Set to a value.
    Gauge,
}

/// What the table hands its counts to: Envoy's metric calls (or a test's
/// record of them).
pub trait Host {
    /// Defines metric `name` of `kind`: its id, `None` when refused.
    fn define(&mut self, kind: Kind, name: &str) -> Option<u32>;
    /// Adds `delta` to counter `id`.
    fn increment(&mut self, id: u32, delta: u64);
    /// Sets gauge `id` to `value`.
    fn record(&mut self, id: u32, value: u64);
}

/// A counter in the table: Envoy's id for it once defined, and the count
/// since it was last handed over.
#[derive(Debug, Clone, Copy)]
struct Counter {
    id: Option<u32>,
    pending: u64,
}

impl Counter {
    const NEW: Counter = Counter { id: None, pending: 0 };

    /// Hands the count over: defined (named by `name`) the first time it
    /// has one. A metric Envoy refuses keeps its count for the next tick.
    fn hand_over(&mut self, host: &mut dyn Host, name: impl FnOnce() -> String) {
        if self.pending == 0 {
            return;
        }
        if self.id.is_none() {
            self.id = host.define(Kind::Counter, &name());
        }
        if let Some(id) = self.id {
            host.increment(id, self.pending);
            self.pending = 0;
        }
    }
}

/// A gauge in the table: Envoy's id for it once defined, and the value not
/// yet handed over.
#[derive(Debug, Clone, Copy)]
struct Gauge {
    id: Option<u32>,
    value: Option<u64>,
}

/// A decision's labels as a key: outcome, rule, route, issuer.
type Key = (u8, Option<u16>, Option<u16>, Option<u8>);

/// One VM's counts since the last tick, and the ids Envoy gave their
/// metrics. Plain vectors rather than maps: they stay small (label sets the
/// config bounds), and a map's code would weigh more in the filter than the
/// counting itself.
#[derive(Debug)]
pub struct Table {
    /// Decisions by their labels, sorted by them.
    decisions: Vec<(Key, Counter)>,
    allowed: Counter,
    denied: Counter,
    cache_hit: Counter,
    cache_miss: Counter,
    /// The key fetcher's counters by base name and issuer.
    keys: Vec<((&'static str, u8), Counter)>,
    /// When each issuer's keys were last installed.
    installed_at: Vec<(u8, Gauge)>,
}

impl Default for Table {
    fn default() -> Self {
        Self::new()
    }
}

impl Table {
    /// An empty table (const: a thread-local's initializer).
    pub const fn new() -> Self {
        Table {
            decisions: Vec::new(),
            allowed: Counter::NEW,
            denied: Counter::NEW,
            cache_hit: Counter::NEW,
            cache_miss: Counter::NEW,
            keys: Vec::new(),
            installed_at: Vec::new(),
        }
    }

    /// Counts one decision, or the filter's own answer when the core gave
    /// none: its labels, allowed or denied (a preflight is neither), and
    /// the token cache's hit or miss.
    pub fn count_decision(&mut self, labels: &Labels) {
        let key = (labels.outcome, labels.rule, labels.route, labels.issuer);
        match self.decisions.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(at) => self.decisions[at].1.pending += 1,
            Err(at) => self.decisions.insert(at, (key, Counter { id: None, pending: 1 })),
        }
        if outcome::allowed(labels.outcome) {
            self.allowed.pending += 1;
        } else if labels.outcome != outcome::PREFLIGHT {
            self.denied.pending += 1;
        }
        match labels.cache {
            Cache::Hit => self.cache_hit.pending += 1,
            Cache::Miss => self.cache_miss.pending += 1,
            Cache::None => {}
        }
    }

    /// Counts a key document of `issuer`'s fetched and installed (at Unix
    /// second `now`) or refused.
    pub fn count_key_document(&mut self, issuer: u8, installed: bool, now: u64) {
        self.count_key(JWKS_FETCH_SUCCESS, issuer);
        self.count_key(if installed { JWKS_INSTALLED } else { JWKS_REFUSED }, issuer);
        if installed {
            match self.installed_at.iter_mut().find(|(i, _)| *i == issuer) {
                Some((_, gauge)) => gauge.value = Some(now),
                None => self.installed_at.push((issuer, Gauge { id: None, value: Some(now) })),
            }
        }
    }

    /// Counts a key fetch of `issuer`'s that got no key document.
    pub fn count_key_fetch_failed(&mut self, issuer: u8) {
        self.count_key(JWKS_FETCH_FAILED, issuer);
    }

    fn count_key(&mut self, base: &'static str, issuer: u8) {
        match self.keys.iter_mut().find(|(k, _)| *k == (base, issuer)) {
            Some((_, counter)) => counter.pending += 1,
            None => self.keys.push(((base, issuer), Counter { id: None, pending: 1 })),
        }
    }

    /// Hands `host` every count since the last call: one increment per
    /// metric that changed, its definition first if it has none yet (named
    /// from `make_names`, called only then, once). The decisions go last, so that a
    /// reader who sees a decision's count sees the allowed, denied and
    /// cache counts of the same requests.
    pub fn hand_over<'c>(&mut self, host: &mut dyn Host, make_names: impl Fn() -> Names<'c>) {
        let made = OnceCell::new();
        let names = || made.get_or_init(&make_names);
        for ((base, issuer), counter) in &mut self.keys {
            counter.hand_over(host, || names().issuer(base, *issuer));
        }
        for (issuer, gauge) in &mut self.installed_at {
            let Some(value) = gauge.value else { continue };
            if gauge.id.is_none() {
                gauge.id = host.define(Kind::Gauge, &names().issuer(JWKS_INSTALLED_AT, *issuer));
            }
            if let Some(id) = gauge.id {
                host.record(id, value);
                gauge.value = None;
            }
        }
        self.allowed.hand_over(host, || ALLOWED.to_owned());
        self.denied.hand_over(host, || DENIED.to_owned());
        self.cache_hit.hand_over(host, || CACHE_HIT.to_owned());
        self.cache_miss.hand_over(host, || CACHE_MISS.to_owned());
        for ((outcome, rule, route, issuer), counter) in &mut self.decisions {
            let labels =
                Labels { outcome: *outcome, rule: *rule, route: *route, issuer: *issuer, cache: Cache::None };
            counter.hand_over(host, || names().decision(&labels));
        }
    }
}

/// What a decision's count is of, for a host that defines its metrics once
/// and names the labels' values with each increment (the native module's
/// labeled counters): [`Table::take_decision_counts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// [`super::DECISIONS`], with the decision's labels.
    Decision(Labels),
    /// [`ALLOWED`].
    Allowed,
    /// [`DENIED`].
    Denied,
    /// [`CACHE_HIT`].
    CacheHit,
    /// [`CACHE_MISS`].
    CacheMiss,
}

impl Table {
    /// Takes every decision count since the last call (the key fetcher's
    /// are [`Table::hand_over`]'s alone): `give` gets each metric that
    /// changed with its count, the decisions last, as `hand_over` gives
    /// them.
    pub fn take_decision_counts(&mut self, mut give: impl FnMut(Counted, u64)) {
        let totals = [
            (Counted::Allowed, &mut self.allowed),
            (Counted::Denied, &mut self.denied),
            (Counted::CacheHit, &mut self.cache_hit),
            (Counted::CacheMiss, &mut self.cache_miss),
        ];
        for (counted, counter) in totals {
            if counter.pending > 0 {
                give(counted, std::mem::take(&mut counter.pending));
            }
        }
        for ((outcome, rule, route, issuer), counter) in &mut self.decisions {
            if counter.pending > 0 {
                let labels = Labels {
                    outcome: *outcome,
                    rule: *rule,
                    route: *route,
                    issuer: *issuer,
                    cache: Cache::None,
                };
                give(Counted::Decision(labels), std::mem::take(&mut counter.pending));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Envoy's metric calls, recorded: each metric's name and value as its
    /// stats would show them.
    #[derive(Default)]
    struct Recorded {
        names: Vec<(Kind, String)>,
        values: Vec<u64>,
        calls: Vec<String>,
        refuse: bool,
    }

    impl Host for Recorded {
        fn define(&mut self, kind: Kind, name: &str) -> Option<u32> {
            self.calls.push(format!("define {name}"));
            if self.refuse {
                return None;
            }
            self.names.push((kind, name.to_owned()));
            self.values.push(0);
            Some(self.names.len() as u32 - 1)
        }

        fn increment(&mut self, id: u32, delta: u64) {
            self.calls.push(format!("increment {} {delta}", self.names[id as usize].1));
            self.values[id as usize] += delta;
        }

        fn record(&mut self, id: u32, value: u64) {
            self.calls.push(format!("record {} {value}", self.names[id as usize].1));
            self.values[id as usize] = value;
        }
    }

    impl Recorded {
        fn value(&self, name: &str) -> Option<u64> {
            self.names.iter().position(|(_, n)| n == name).map(|i| self.values[i])
        }
    }

    fn names() -> Names<'static> {
        Names { rules: &["admin"], routes: vec!["orders"], issuers: vec!["https://idp.test"] }
    }

    #[test]
    fn decision_counts_are_taken_once_each_with_their_labels() {
        let mut table = Table::new();
        let expired = Labels { outcome: outcome::id("expired"), route: Some(1), ..Labels::default() };
        let forwarded =
            Labels { outcome: outcome::FORWARDED, route: Some(0), cache: Cache::Hit, ..Labels::default() };
        for labels in [&expired, &forwarded, &expired, &Labels::of(outcome::PREFLIGHT)] {
            table.count_decision(labels);
        }
        let mut taken = Vec::new();
        table.take_decision_counts(|counted, delta| taken.push((counted, delta)));
        let unlabelled = |labels: Labels| Counted::Decision(Labels { cache: Cache::None, ..labels });
        // The totals first, then the decisions in the table's order (by outcome, rule, route, issuer).
        let mut decisions = vec![
            (unlabelled(forwarded), 1),
            (unlabelled(expired), 2),
            (unlabelled(Labels::of(outcome::PREFLIGHT)), 1),
        ];
        decisions.sort_by_key(|(counted, _)| match counted {
            Counted::Decision(l) => (l.outcome, l.rule, l.route, l.issuer),
            _ => unreachable!("only decisions here"),
        });
        let mut expected = vec![(Counted::Allowed, 1), (Counted::Denied, 2), (Counted::CacheHit, 1)];
        expected.extend(decisions);
        assert_eq!(taken, expected);
        let mut again = 0;
        table.take_decision_counts(|_, _| again += 1);
        assert_eq!(again, 0, "each count is taken once");
        table.count_decision(&expired);
        let mut next = Vec::new();
        table.take_decision_counts(|counted, delta| next.push((counted, delta)));
        assert_eq!(next, [(Counted::Denied, 1), (unlabelled(expired), 1)]);
    }

    #[test]
    fn counts_stay_in_the_table_until_a_tick_hands_over_one_call_per_changed_metric() {
        let mut table = Table::new();
        let expired = Labels {
            outcome: outcome::id("expired"),
            rule: None,
            route: Some(0),
            issuer: Some(0),
            cache: Cache::Miss,
        };
        let forwarded = Labels {
            outcome: outcome::FORWARDED,
            rule: Some(0),
            route: Some(0),
            issuer: Some(0),
            cache: Cache::Hit,
        };
        let preflight = Labels::of(outcome::PREFLIGHT);
        for _ in 0..3 {
            table.count_decision(&expired);
        }
        table.count_decision(&forwarded);
        table.count_decision(&preflight);

        let mut envoy = Recorded::default();
        table.hand_over(&mut envoy, names);
        let expired_name =
            "gateway_decisions_total;outcome=expired;rule=;route=orders;issuer=https://idp.test";
        let forwarded_name =
            "gateway_decisions_total;outcome=forwarded;rule=admin;route=orders;issuer=https://idp.test";
        let preflight_name = "gateway_decisions_total;outcome=preflight;rule=;route=;issuer=";
        assert_eq!(envoy.value(expired_name), Some(3));
        assert_eq!(envoy.value(forwarded_name), Some(1));
        assert_eq!(envoy.value(preflight_name), Some(1));
        assert_eq!(envoy.value(ALLOWED), Some(1));
        assert_eq!(envoy.value(DENIED), Some(3), "a preflight is neither allowed nor denied");
        assert_eq!(envoy.value(CACHE_HIT), Some(1));
        assert_eq!(envoy.value(CACHE_MISS), Some(3));
        // One definition and one increment per metric; the decisions last.
        let increments = envoy.calls.iter().filter(|c| c.starts_with("increment")).count();
        assert_eq!((envoy.names.len(), increments), (7, 7));
        assert!(envoy.calls.last().is_some_and(|c| c.starts_with("increment gateway_decisions_total")));
        assert!(envoy.names.iter().all(|(kind, _)| *kind == Kind::Counter));

        // Nothing new: no call at all.
        envoy.calls.clear();
        table.hand_over(&mut envoy, || panic!("no name is needed"));
        assert!(envoy.calls.is_empty(), "{:?}", envoy.calls);

        // Only what changed, by its count since the last tick, without defining it again.
        table.count_decision(&expired);
        table.count_decision(&expired);
        table.hand_over(&mut envoy, || panic!("no name is needed"));
        assert_eq!(
            envoy.calls,
            [
                format!("increment {DENIED} 2"),
                format!("increment {CACHE_MISS} 2"),
                format!("increment {expired_name} 2")
            ]
        );
        assert_eq!(envoy.value(expired_name), Some(5));
        assert_eq!(envoy.value(DENIED), Some(5));
    }

    #[test]
    fn a_metric_envoy_refuses_keeps_its_count_for_the_next_tick() {
        let mut table = Table::new();
        table.count_decision(&Labels::of(outcome::id("missing_authorization")));
        let mut envoy = Recorded { refuse: true, ..Recorded::default() };
        table.hand_over(&mut envoy, names);
        assert!(envoy.names.is_empty());
        envoy.refuse = false;
        table.count_decision(&Labels::of(outcome::id("missing_authorization")));
        table.hand_over(&mut envoy, names);
        assert_eq!(
            envoy.value("gateway_decisions_total;outcome=missing_authorization;rule=;route=;issuer="),
            Some(2)
        );
        assert_eq!(envoy.value(DENIED), Some(2));
    }

    #[test]
    fn key_fetches_are_counted_per_issuer_and_the_install_time_is_the_last() {
        let mut table = Table::new();
        table.count_key_document(0, true, 1000);
        table.count_key_fetch_failed(0);
        table.count_key_document(0, false, 1001);
        table.count_key_document(0, true, 1002);
        let mut envoy = Recorded::default();
        table.hand_over(&mut envoy, names);
        let of = |base| names().issuer(base, 0);
        assert_eq!(envoy.value(&of(JWKS_FETCH_SUCCESS)), Some(3));
        assert_eq!(envoy.value(&of(JWKS_INSTALLED)), Some(2));
        assert_eq!(envoy.value(&of(JWKS_REFUSED)), Some(1));
        assert_eq!(envoy.value(&of(JWKS_FETCH_FAILED)), Some(1));
        assert_eq!(envoy.value(&of(JWKS_INSTALLED_AT)), Some(1002));
        assert!(envoy.names.contains(&(Kind::Gauge, of(JWKS_INSTALLED_AT))));
        envoy.calls.clear();
        table.hand_over(&mut envoy, names);
        assert!(envoy.calls.is_empty(), "the gauge is recorded once per install: {:?}", envoy.calls);
    }
}
