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
//! Each label set is defined once, when first seen, and counted by its id
//! afterwards: a request is one lookup and one host call per counter.
//! Labels are bounded by the core's tables: the outcome's name in the
//! contract's table, the rule, route and issuer as the compiled config
//! names them (the same names the module's `labels` and `routes` exports
//! give other hosts).

use contract::outcome::{self, Labels};

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

impl Names<'_> {
    /// The name a decision with `labels` is counted under.
    pub fn decision(&self, labels: &Labels) -> String {
        let pick = |names: &[&str], index: Option<usize>| -> String {
            index.map_or(String::new(), |i| names.get(i).map_or("unknown".to_owned(), |n| (*n).to_owned()))
        };
        stat_name(
            DECISIONS,
            &[
                ("outcome", outcome::name(labels.outcome).unwrap_or("unknown")),
                ("rule", &pick(self.rules, labels.rule.map(usize::from))),
                ("route", &pick(&self.routes, labels.route.map(usize::from))),
                ("issuer", &pick(&self.issuers, labels.issuer.map(usize::from))),
            ],
        )
    }

    /// The name of issuer `index`'s metric `base`.
    pub fn issuer(&self, base: &str, index: u8) -> String {
        stat_name(base, &[("issuer", self.issuers.get(usize::from(index)).copied().unwrap_or("unknown"))])
    }
}

#[cfg(target_arch = "wasm32")]
pub(crate) use counting::count_decision;
#[cfg(all(target_arch = "wasm32", runtime_keys))]
pub(crate) use counting::{count_key_document, count_key_fetch_failed};

/// The counting itself: the ids Envoy gave each name, and the host calls.
#[cfg(target_arch = "wasm32")]
mod counting {
    use std::cell::RefCell;

    use contract::outcome::{self, Cache, Labels};
    use worker::abi::compiled_config;

    use super::*;
    use crate::raw::{self, MetricType};

    /// A decision's labels as a key: outcome, rule, route, issuer.
    type Key = (u8, Option<u16>, Option<u16>, Option<u8>);

    /// The ids Envoy gave this VM's metrics. Plain vectors rather than maps:
    /// they stay small (label sets the config bounds), and a map's code
    /// would weigh more in the filter than the counting itself.
    #[derive(Default)]
    struct Registry {
        /// Decisions by their labels, sorted by them.
        decisions: Vec<(Key, u32)>,
        /// Every other metric by its base name and issuer.
        named: Vec<((&'static str, Option<u8>), u32)>,
    }

    thread_local! {
        /// This VM's metric ids (Envoy calls a VM from one thread).
        static REGISTRY: RefCell<Registry> = const { RefCell::new(Registry { decisions: Vec::new(), named: Vec::new() }) };
    }

    /// The names of the compiled config's rules, routes and issuers.
    fn names() -> Names<'static> {
        let config = compiled_config();
        // The filter holds its config: every issuer is named by its `iss`,
        // the one issuer of a core without a label table too (as the other
        // hosts name it from the config the module was built from).
        let issuers = config.issuers.iter().map(|issuer| issuer.iss.unwrap_or("-")).collect();
        let routes = config.routes.iter().map(|route| route.audience).collect();
        Names { rules: config.policy.rule_names, routes, issuers }
    }

    /// The id of metric `base` (of `issuer`), defined now if this VM has
    /// not seen it; `None` when Envoy refuses it (the count is then lost,
    /// never the request).
    fn id(registry: &mut Registry, kind: MetricType, base: &'static str, issuer: Option<u8>) -> Option<u32> {
        let key = (base, issuer);
        if let Some((_, id)) = registry.named.iter().find(|(k, _)| *k == key) {
            return Some(*id);
        }
        let name = match issuer {
            Some(issuer) => names().issuer(base, issuer),
            None => base.to_owned(),
        };
        let id = raw::define_metric(kind, &name).ok()?;
        registry.named.push((key, id));
        Some(id)
    }

    fn increment(id: Option<u32>) {
        if let Some(id) = id {
            let _ = raw::increment_metric(id, 1);
        }
    }

    /// Counts one decision, or the filter's own answer when the core gave none.
    pub(crate) fn count_decision(labels: &Labels) {
        // The build that measures what counting costs counts nothing.
        if cfg!(feature = "uncounted") {
            return;
        }
        REGISTRY.with(|registry| {
            let Ok(mut registry) = registry.try_borrow_mut() else { return };
            let key = (labels.outcome, labels.rule, labels.route, labels.issuer);
            let decision = match registry.decisions.binary_search_by_key(&key, |(k, _)| *k) {
                Ok(at) => Some(registry.decisions[at].1),
                Err(at) => {
                    raw::define_metric(MetricType::Counter, &names().decision(labels)).ok().inspect(|id| {
                        registry.decisions.insert(at, (key, *id));
                    })
                }
            };
            increment(decision);
            let verdict = if outcome::allowed(labels.outcome) {
                Some(ALLOWED)
            } else {
                (labels.outcome != outcome::PREFLIGHT).then_some(DENIED)
            };
            if let Some(verdict) = verdict {
                increment(id(&mut registry, MetricType::Counter, verdict, None));
            }
            let cache = match labels.cache {
                Cache::Hit => Some(CACHE_HIT),
                Cache::Miss => Some(CACHE_MISS),
                Cache::None => None,
            };
            if let Some(cache) = cache {
                increment(id(&mut registry, MetricType::Counter, cache, None));
            }
        });
    }

    /// Counts a key document of `issuer`'s fetched and installed (at Unix
    /// second `now`) or refused.
    #[cfg(runtime_keys)]
    pub(crate) fn count_key_document(issuer: u8, installed: bool, now: u64) {
        REGISTRY.with(|registry| {
            let Ok(mut registry) = registry.try_borrow_mut() else { return };
            increment(id(&mut registry, MetricType::Counter, JWKS_FETCH_SUCCESS, Some(issuer)));
            let verdict = if installed { JWKS_INSTALLED } else { JWKS_REFUSED };
            increment(id(&mut registry, MetricType::Counter, verdict, Some(issuer)));
            if installed
                && let Some(at) = id(&mut registry, MetricType::Gauge, JWKS_INSTALLED_AT, Some(issuer))
            {
                let _ = raw::record_metric(at, now);
            }
        });
    }

    /// Counts a key fetch of `issuer`'s that got no key document.
    #[cfg(runtime_keys)]
    pub(crate) fn count_key_fetch_failed(issuer: u8) {
        REGISTRY.with(|registry| {
            let Ok(mut registry) = registry.try_borrow_mut() else { return };
            increment(id(&mut registry, MetricType::Counter, JWKS_FETCH_FAILED, Some(issuer)));
        });
    }
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
