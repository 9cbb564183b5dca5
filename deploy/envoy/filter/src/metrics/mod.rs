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

use contract::outcome::{self, Labels};

mod table;

pub use table::{Counted, Host, Kind, Table};

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
}
