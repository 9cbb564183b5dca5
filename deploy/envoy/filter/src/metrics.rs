//! What the filter counts, as proxy-wasm metrics in Envoy's stats: the
//! same names and labels as `host-sim serve --metrics`
//! (`host-sim/src/metrics.rs`), and `jwt_authn`'s words where it has one
//! (`allowed`, `denied`, `jwks_fetch_success`, `jwks_fetch_failed`,
//! `jwt_cache_hit`, `jwt_cache_miss`).
//!
//! Envoy keeps a proxy-wasm metric under `wasmcustom.<name>` and, in
//! `/stats/prometheus`, names it `<name>` without Envoy's prefix. Labels
//! travel in the name, each as `;<label>=<value>`; the bootstrap's
//! `stats_tags` (`deploy/envoy/render/src/stats.rs`) take them
//! out of the name again as Prometheus labels. So
//! `wasmcustom.gateway_decisions_total;outcome=expired;rule=;route=orders;issuer=https://issuer.test`
//! is `gateway_decisions_total{outcome="expired",rule="",route="orders",issuer="https://issuer.test"}`.
//!
//! A request makes no host call to be counted: it adds one to counters in
//! the VM's own memory ([`Table`], one per VM: Envoy runs one VM per worker
//! thread). The root context's tick ([`TICK_MS`], or the key fetcher's
//! shorter one) hands Envoy what changed since the last tick: one
//! `proxy_increment_metric` per metric that changed, by the count since
//! then, and each label set's `proxy_define_metric` the first time it has a
//! count. Envoy's stats thus trail the requests by at most a tick; the
//! names and the values are the ones per-request calls gave. Counts still
//! in the table when Envoy drops the VM (a new configuration, a shutdown)
//! are lost: at most one tick's.
//!
//! Labels are bounded by the core's tables: the outcome's name in the
//! contract's table, the rule, route and issuer as the compiled config
//! names them (the same names the module's `labels` and `routes` exports
//! give other hosts).

use std::cell::OnceCell;

use contract::outcome::{self, Cache, Labels};

/// Decisions by outcome, rule, route and issuer.
pub const DECISIONS: &str = "gateway_decisions_total";
/// Requests let through (`jwt_authn`'s `allowed`).
pub const ALLOWED: &str = "gateway_allowed_total";
/// Requests turned away (`jwt_authn`'s `denied`).
pub const DENIED: &str = "gateway_denied_total";
/// Tokens found in the cache of verified tokens (`jwt_authn`'s `jwt_cache_hit`).
pub const CACHE_HIT: &str = "gateway_jwt_cache_hit_total";
/// Tokens verified now (`jwt_authn`'s `jwt_cache_miss`).
pub const CACHE_MISS: &str = "gateway_jwt_cache_miss_total";
/// Key documents fetched, per issuer.
pub const JWKS_FETCH_SUCCESS: &str = "gateway_jwks_fetch_success_total";
/// Key fetches that got no document, per issuer.
pub const JWKS_FETCH_FAILED: &str = "gateway_jwks_fetch_failed_total";
/// Key documents the core installed, per issuer.
pub const JWKS_INSTALLED: &str = "gateway_jwks_installed_total";
/// Key documents the core refused, per issuer.
pub const JWKS_REFUSED: &str = "gateway_jwks_refused_total";
/// When an issuer's keys were last installed, Unix seconds (a gauge).
pub const JWKS_INSTALLED_AT: &str = "gateway_jwks_installed_timestamp_seconds";

/// The labels of [`DECISIONS`], in order.
pub const DECISION_LABELS: [&str; 4] = ["outcome", "rule", "route", "issuer"];

/// The name Envoy keeps metric `base` with `labels` under: each label as
/// `;<label>=<value>`, a `;` in a value written `%3B` so that it cannot
/// end the value early.
pub fn stat_name(base: &str, labels: &[(&str, &str)]) -> String {
    let mut name = String::with_capacity(base.len() + 64);
    name.push_str(base);
    for (label, value) in labels {
        name.push(';');
        name.push_str(label);
        name.push('=');
        for c in value.chars() {
            match c {
                ';' => name.push_str("%3B"),
                c => name.push(c),
            }
        }
    }
    name
}

/// The names the core's indices stand for.
pub struct Names<'c> {
    /// Each rule's name (`name`, or `rules[<i>]`).
    pub rules: &'c [&'c str],
    /// Each route's audience.
    pub routes: Vec<&'c str>,
    /// Each issuer's `iss` (`-`: any), a core's without a label table too.
    pub issuers: Vec<&'c str>,
}

impl<'c> Names<'c> {
    /// A decision's label values, in the order of [`DECISION_LABELS`]:
    /// outcome, rule, route and issuer (empty for none).
    pub fn decision_values(&self, labels: &Labels) -> [&'c str; 4] {
        let pick = |names: &[&'c str], index: Option<u16>| -> &'c str {
            index.map_or("", |i| names.get(usize::from(i)).copied().unwrap_or("unknown"))
        };
        [
            outcome::name(labels.outcome).unwrap_or("unknown"),
            pick(self.rules, labels.rule),
            pick(&self.routes, labels.route),
            pick(&self.issuers, labels.issuer.map(u16::from)),
        ]
    }

    /// The name a decision with `labels` is counted under.
    pub fn decision(&self, labels: &Labels) -> String {
        let values = self.decision_values(labels);
        let labels: Vec<(&str, &str)> = DECISION_LABELS.iter().copied().zip(values).collect();
        stat_name(DECISIONS, &labels)
    }

    /// The name of issuer `index`'s metric `base`.
    pub fn issuer(&self, base: &str, index: u8) -> String {
        stat_name(base, &[("issuer", self.issuers.get(usize::from(index)).copied().unwrap_or("unknown"))])
    }
}

/// The names of the compiled config's rules, routes and issuers. The
/// filter holds its config: every issuer is named by its `iss`, the one
/// issuer of a core without a label table too (as the other hosts name it
/// from the config the module was built from).
pub fn compiled_names() -> Names<'static> {
    let config = worker::abi::compiled_config();
    let issuers = config.issuers.iter().map(|issuer| issuer.iss.unwrap_or("-")).collect();
    let routes = config.routes.iter().map(|route| route.audience).collect();
    Names { rules: config.policy.rule_names, routes, issuers }
}

/// How often (milliseconds) the root context hands Envoy the counts, when
/// the config fetches no keys (a build that does ticks at its fetcher's
/// pace, and hands them over on each of its ticks).
pub const TICK_MS: u32 = 1000;

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
    /// [`DECISIONS`], with the decision's labels.
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

#[cfg(all(target_arch = "wasm32", counting, not(runtime_keys)))]
pub(crate) use counting::start_ticks;
#[cfg(all(target_arch = "wasm32", counting))]
pub(crate) use counting::{count_decision, hand_over};
#[cfg(all(target_arch = "wasm32", runtime_keys, counting))]
pub(crate) use counting::{count_key_document, count_key_fetch_failed};
#[cfg(all(target_arch = "wasm32", not(counting)))]
pub(crate) use uncounted::count_decision;
#[cfg(all(target_arch = "wasm32", runtime_keys, not(counting)))]
pub(crate) use uncounted::{count_key_document, count_key_fetch_failed};

/// The counting itself: this VM's table, and Envoy's metric calls on its ticks.
#[cfg(all(target_arch = "wasm32", counting))]
mod counting {
    use std::cell::RefCell;

    use contract::outcome::Labels;

    #[cfg(not(runtime_keys))]
    use super::TICK_MS;
    use super::{Host, Kind, Table, compiled_names as names};
    #[cfg(not(runtime_keys))]
    use crate::raw::LogLevel;
    use crate::raw::{self, MetricType};

    thread_local! {
        /// This VM's counts (Envoy calls a VM from one thread).
        static TABLE: RefCell<Table> = const { RefCell::new(Table::new()) };
    }

    /// Envoy's metric calls. A call Envoy refuses loses that count.
    struct Envoy;

    impl Host for Envoy {
        fn define(&mut self, kind: Kind, name: &str) -> Option<u32> {
            let kind = match kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
            };
            raw::define_metric(kind, name).ok()
        }

        fn increment(&mut self, id: u32, delta: u64) {
            let _ = raw::increment_metric(id, i64::try_from(delta).unwrap_or(i64::MAX));
        }

        fn record(&mut self, id: u32, value: u64) {
            let _ = raw::record_metric(id, value);
        }
    }

    /// Runs `f` on this VM's table; not at all on a re-entrant call, which
    /// Envoy never makes.
    fn with_table(f: impl FnOnce(&mut Table)) {
        TABLE.with(|table| {
            if let Ok(mut table) = table.try_borrow_mut() {
                f(&mut table);
            }
        });
    }

    /// Counts one decision, or the filter's own answer when the core gave
    /// none: in the table, no host call.
    pub(crate) fn count_decision(labels: &Labels) {
        with_table(|table| table.count_decision(labels));
    }

    /// Counts a key document of `issuer`'s fetched and installed (at Unix
    /// second `now`) or refused.
    #[cfg(runtime_keys)]
    pub(crate) fn count_key_document(issuer: u8, installed: bool, now: u64) {
        with_table(|table| table.count_key_document(issuer, installed, now));
    }

    /// Counts a key fetch of `issuer`'s that got no key document.
    #[cfg(runtime_keys)]
    pub(crate) fn count_key_fetch_failed(issuer: u8) {
        with_table(|table| table.count_key_fetch_failed(issuer));
    }

    /// Asks Envoy for the root context's ticks, which hand it the counts.
    /// Envoy refusing is logged, and the filter still decides every
    /// request: only its counts never reach Envoy's stats. (A build that
    /// fetches keys asks for its fetcher's ticks instead.)
    #[cfg(not(runtime_keys))]
    pub(crate) fn start_ticks() {
        if raw::set_tick_period(TICK_MS).is_err() {
            raw::log(
                LogLevel::Error,
                "metrics: Envoy refused the tick period; no decision is counted in its stats",
            );
        }
    }

    /// A tick: Envoy gets what this VM counted since the last one.
    pub(crate) fn hand_over() {
        with_table(|table| table.hand_over(&mut Envoy, names));
    }
}

/// The build that measures what counting costs (feature `uncounted`)
/// counts nothing.
#[cfg(all(target_arch = "wasm32", not(counting)))]
mod uncounted {
    use contract::outcome::Labels;

    #[inline(always)]
    pub(crate) fn count_decision(_labels: &Labels) {}

    #[cfg(runtime_keys)]
    #[inline(always)]
    pub(crate) fn count_key_document(_issuer: u8, _installed: bool, _now: u64) {}

    #[cfg(runtime_keys)]
    #[inline(always)]
    pub(crate) fn count_key_fetch_failed(_issuer: u8) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use contract::outcome::Cache;

    #[test]
    fn labels_travel_in_the_name_one_per_tag() {
        let names =
            Names { rules: &["admin"], routes: vec!["orders"], issuers: vec!["https://a.example/x;y"] };
        let labels = Labels {
            outcome: outcome::id("expired"),
            rule: Some(0),
            route: Some(0),
            issuer: Some(0),
            cache: Cache::Miss,
        };
        assert_eq!(
            names.decision(&labels),
            "gateway_decisions_total;outcome=expired;rule=admin;route=orders;issuer=https://a.example/x%3By"
        );
        let none = names.decision(&Labels::of(outcome::id("missing_authorization")));
        assert_eq!(none, "gateway_decisions_total;outcome=missing_authorization;rule=;route=;issuer=");
        assert_eq!(
            names.issuer(JWKS_FETCH_FAILED, 0),
            "gateway_jwks_fetch_failed_total;issuer=https://a.example/x%3By"
        );
        assert_eq!(names.issuer(JWKS_FETCH_FAILED, 3), "gateway_jwks_fetch_failed_total;issuer=unknown");
    }

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
