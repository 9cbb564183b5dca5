//! `serve --metrics ADDR`: what the gateway decided and how the host fared,
//! in the Prometheus text format on a listener of its own. The counters
//! share their names and labels with the Envoy filter's
//! (`deploy/envoy/filter/src/metrics/`) where they mean the same, and
//! take `jwt_authn`'s words where it has one (`allowed`, `denied`,
//! `jwks_fetch_success`, `jwks_fetch_failed`, `jwt_cache_hit`,
//! `jwt_cache_miss`).
//!
//! Labels are bounded by the module's tables: the outcome's name in the
//! contract's table (`contract::outcome::NAMES`), and the rule, route and
//! issuer named by the module's `labels` and `routes` exports (from the
//! config), never by anything a request carries. The names are read once,
//! at start, and kept for the life of the process. Each serving thread
//! counts into a shard of its own (`metrics/shard.rs`), which a scrape adds
//! up: a request is counted by its indices, and named only when scraped.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use contract::outcome::{self, Cache, Labels};
use http::{Response, StatusCode};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

mod names;
mod shard;

pub use names::{
    DecisionLabels, IssuerLabel, Names, RouteLabel, StatusLabel, UpstreamFailureLabels, UpstreamLabels, Value,
};
pub use shard::Shard;
use shard::{BUCKETS, Buckets, locked, upper_bound};

use crate::body::{Body, full};
use crate::limits::ClientLimits;
use crate::listen;

/// Every metric `serve` keeps: the serving threads' shards, the key
/// fetches, the connections, and the registry that encodes them.
#[derive(Debug)]
pub struct Metrics {
    inner: Arc<Inner>,
    registry: Registry,
    /// Connections accepted, and open now.
    pub connections: Connections,
    /// Rate-limit counting: evictions and store errors.
    pub limits: LimitCounters,
}

/// The counters rate-limit counting keeps (`crate::traffic`), registered
/// on `--metrics` when it is on.
#[derive(Debug, Clone, Default)]
pub struct LimitCounters {
    /// Live buckets the local table evicted to make room.
    pub evictions: Counter,
    /// Counts the store could not make (Redis down, slow or refusing).
    pub store_errors: Counter,
}

/// What a scrape reads: the names, every thread's shard, the key fetches.
#[derive(Debug, Default)]
struct Inner {
    names: Names,
    shards: Mutex<Vec<Arc<Shard>>>,
    keys: Mutex<HashMap<u8, KeyCounts>>,
}

/// One issuer's key fetches (rare: kept behind one mutex).
#[derive(Debug, Default, Clone, Copy)]
struct KeyCounts {
    fetched: u64,
    failed: u64,
    installed: u64,
    refused: u64,
    installed_at: Option<f64>,
}

/// The connection counters the serving threads keep.
#[derive(Debug, Clone, Default)]
pub struct Connections {
    /// Connections handed to a serving thread.
    pub accepted: Counter,
    /// Connections being served now.
    pub open: Gauge,
}

/// One thread's way to count: its own shard (see `shard.rs`).
#[derive(Debug, Clone)]
pub struct Recorder(Arc<Shard>);

impl std::ops::Deref for Recorder {
    type Target = Shard;
    fn deref(&self) -> &Shard {
        &self.0
    }
}

impl Metrics {
    /// Every metric at zero, labelled with `names`.
    pub fn new(names: Names) -> Metrics {
        let inner = Arc::new(Inner { names, ..Inner::default() });
        let connections = Connections::default();
        let mut registry = Registry::default();
        for what in View::ALL {
            let (name, help) = what.describe();
            registry.register(name, help, Viewed { inner: Arc::clone(&inner), what });
        }
        registry.register("gateway_connections", "Client connections accepted", connections.accepted.clone());
        registry.register(
            "gateway_connections_open",
            "Client connections open now",
            connections.open.clone(),
        );
        let limits = LimitCounters::default();
        registry.register(
            "gateway_limit_evictions",
            "Rate-limit buckets evicted from the full in-process table before their time (each starts full again)",
            limits.evictions.clone(),
        );
        registry.register(
            "gateway_limit_store_errors",
            "Rate-limit counts the store (Redis) could not make: forwarded uncounted (fail open) or answered 503",
            limits.store_errors.clone(),
        );
        Metrics { inner, registry, connections, limits }
    }

    /// The names the labels come from.
    pub fn names(&self) -> &Names {
        &self.inner.names
    }

    /// A recorder for one serving thread, with a shard of its own.
    pub fn recorder(&self) -> Recorder {
        let shard = Arc::new(Shard::default());
        locked(&self.inner.shards).push(Arc::clone(&shard));
        Recorder(shard)
    }

    /// Counts a key fetch of `issuer`: a document fetched, or none.
    pub fn jwks_fetched(&self, issuer: u8, ok: bool) {
        let mut keys = locked(&self.inner.keys);
        let counts = keys.entry(issuer).or_default();
        if ok { counts.fetched += 1 } else { counts.failed += 1 }
    }

    /// Counts what the module did with a document of `issuer`'s at `now`
    /// (Unix seconds): installed or refused.
    pub fn jwks_installed(&self, issuer: u8, installed: bool, now: f64) {
        let mut keys = locked(&self.inner.keys);
        let counts = keys.entry(issuer).or_default();
        if installed {
            counts.installed += 1;
            counts.installed_at = Some(now);
        } else {
            counts.refused += 1;
        }
    }

    /// The exposition: every metric in the text format.
    pub fn render(&self) -> String {
        let mut text = String::with_capacity(8 << 10);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// Each metric made of the shards and key counts, encoded at scrape time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Decisions,
    Allowed,
    Denied,
    CacheHit,
    CacheMiss,
    JwksFetchSuccess,
    JwksFetchFailed,
    JwksInstalled,
    JwksRefused,
    JwksInstalledAt,
    DecisionSeconds,
    RequestSeconds,
    UpstreamResponses,
    UpstreamFailures,
    UpstreamSeconds,
    Instances,
    DeadlineHits,
}

impl View {
    const ALL: [View; 17] = [
        View::Decisions,
        View::Allowed,
        View::Denied,
        View::CacheHit,
        View::CacheMiss,
        View::JwksFetchSuccess,
        View::JwksFetchFailed,
        View::JwksInstalled,
        View::JwksRefused,
        View::JwksInstalledAt,
        View::DecisionSeconds,
        View::RequestSeconds,
        View::UpstreamResponses,
        View::UpstreamFailures,
        View::UpstreamSeconds,
        View::Instances,
        View::DeadlineHits,
    ];

    /// Its name (counters without `_total`, which the encoder adds) and help.
    fn describe(self) -> (&'static str, &'static str) {
        match self {
            View::Decisions => ("gateway_decisions", "Decisions by outcome, rule, route and issuer"),
            View::Allowed => ("gateway_allowed", "Requests the gateway let through (jwt_authn's allowed)"),
            View::Denied => ("gateway_denied", "Requests the gateway turned away (jwt_authn's denied)"),
            View::CacheHit => ("gateway_jwt_cache_hit", "Tokens found in the cache of verified tokens"),
            View::CacheMiss => ("gateway_jwt_cache_miss", "Tokens whose signature was verified"),
            View::JwksFetchSuccess => ("gateway_jwks_fetch_success", "Key documents fetched, per issuer"),
            View::JwksFetchFailed => {
                ("gateway_jwks_fetch_failed", "Key fetches that got no document, per issuer")
            }
            View::JwksInstalled => {
                ("gateway_jwks_installed", "Key documents the module installed, per issuer")
            }
            View::JwksRefused => ("gateway_jwks_refused", "Key documents the module refused, per issuer"),
            View::JwksInstalledAt => (
                "gateway_jwks_installed_timestamp_seconds",
                "When an issuer's keys were last installed (Unix seconds)",
            ),
            View::DecisionSeconds => ("gateway_decision_duration_seconds", "Time the module took to decide"),
            View::RequestSeconds => (
                "gateway_request_duration_seconds",
                "Time from the request head to the response head, upstream included",
            ),
            View::UpstreamResponses => ("gateway_upstream_responses", "Upstream answers by route and status"),
            View::UpstreamFailures => (
                "gateway_upstream_failures",
                "Forwards without an upstream answer, by route and the host's answer",
            ),
            View::UpstreamSeconds => (
                "gateway_upstream_duration_seconds",
                "Time from sending upstream to its response head, per route",
            ),
            View::Instances => ("gateway_instances", "Module instances made"),
            View::DeadlineHits => ("gateway_deadline_hits", "Decisions stopped at the CPU deadline"),
        }
    }
}

/// A [`View`] of the counts, registered once.
#[derive(Debug)]
struct Viewed {
    inner: Arc<Inner>,
    what: View,
}

/// A histogram added up over the shards.
#[derive(Default)]
struct Merged {
    counts: [u64; BUCKETS + 1],
    sum: f64,
}

impl Merged {
    fn add(&mut self, buckets: &Buckets) {
        buckets.add_to(&mut self.counts, &mut self.sum);
    }

    fn encode(&self, encoder: &mut MetricEncoder<'_>) -> std::fmt::Result {
        let buckets: Vec<(f64, u64)> = (0..=BUCKETS).map(|i| (upper_bound(i), self.counts[i])).collect();
        encoder.encode_histogram::<NoLabelSet>(self.sum, self.counts.iter().sum(), &buckets, None)
    }
}

impl Viewed {
    /// The sum over the shards of what `pick` reads from each.
    fn total(&self, pick: impl Fn(&Shard) -> &AtomicU64) -> u64 {
        locked(&self.inner.shards).iter().map(|shard| pick(shard).load(Relaxed)).sum()
    }

    /// The sum over the shards of the map `pick` reads from each.
    fn merged<K: Copy + Eq + std::hash::Hash + Ord>(
        &self,
        pick: impl Fn(&Shard) -> &Mutex<HashMap<K, u64>>,
    ) -> Vec<(K, u64)> {
        let mut sums: HashMap<K, u64> = HashMap::new();
        for shard in locked(&self.inner.shards).iter() {
            for (key, count) in locked(pick(shard)).iter() {
                *sums.entry(*key).or_default() += count;
            }
        }
        let mut sums: Vec<_> = sums.into_iter().collect();
        sums.sort_unstable();
        sums
    }

    /// One issuer-labelled family from the key counts.
    fn per_issuer<V>(
        &self,
        encoder: &mut MetricEncoder<'_>,
        pick: impl Fn(&KeyCounts) -> Option<V>,
        each: impl Fn(MetricEncoder<'_>, V) -> std::fmt::Result,
    ) -> std::fmt::Result {
        let keys = locked(&self.inner.keys);
        let mut issuers: Vec<_> = keys.iter().collect();
        issuers.sort_unstable_by_key(|(issuer, _)| **issuer);
        for (issuer, counts) in issuers {
            if let Some(value) = pick(counts) {
                let label = IssuerLabel { issuer: Value(self.inner.names.issuer(*issuer)) };
                each(encoder.encode_family(&label)?, value)?;
            }
        }
        Ok(())
    }
}

fn counter(mut encoder: MetricEncoder<'_>, value: u64) -> std::fmt::Result {
    encoder.encode_counter::<NoLabelSet, _, u64>(&value, None)
}

impl EncodeMetric for Viewed {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> std::fmt::Result {
        let names = &self.inner.names;
        let route = |index: Option<u16>| Value(names.route(index));
        match self.what {
            View::Decisions => {
                for ((outcome, rule, route, issuer), count) in self.merged(|s| &s.decisions) {
                    let labels = Labels { outcome, rule, route, issuer, cache: Cache::None };
                    counter(encoder.encode_family(&names.decision(&labels))?, count)?;
                }
                Ok(())
            }
            View::Allowed => counter(encoder, self.total(|s| &s.allowed)),
            View::Denied => counter(encoder, self.total(|s| &s.denied)),
            View::CacheHit => counter(encoder, self.total(|s| &s.cache_hit)),
            View::CacheMiss => counter(encoder, self.total(|s| &s.cache_miss)),
            View::Instances => counter(encoder, self.total(|s| &s.instances)),
            View::DeadlineHits => counter(encoder, self.total(|s| &s.deadline_hits)),
            View::JwksFetchSuccess => {
                self.per_issuer(&mut encoder, |k| Some(k.fetched).filter(|n| *n > 0), counter)
            }
            View::JwksFetchFailed => {
                self.per_issuer(&mut encoder, |k| Some(k.failed).filter(|n| *n > 0), counter)
            }
            View::JwksInstalled => {
                self.per_issuer(&mut encoder, |k| Some(k.installed).filter(|n| *n > 0), counter)
            }
            View::JwksRefused => {
                self.per_issuer(&mut encoder, |k| Some(k.refused).filter(|n| *n > 0), counter)
            }
            View::JwksInstalledAt => {
                self.per_issuer(&mut encoder, |k| k.installed_at, |mut e, at| e.encode_gauge(&at))
            }
            View::DecisionSeconds | View::RequestSeconds => {
                let mut merged = Merged::default();
                for shard in locked(&self.inner.shards).iter() {
                    merged.add(if self.what == View::DecisionSeconds {
                        &shard.decision_time
                    } else {
                        &shard.request_time
                    });
                }
                merged.encode(&mut encoder)
            }
            View::UpstreamResponses => {
                for ((index, answer), count) in self.merged(|s| &s.upstream) {
                    if let Ok(status) = answer {
                        counter(
                            encoder.encode_family(&UpstreamLabels { route: route(index), status })?,
                            count,
                        )?;
                    }
                }
                Ok(())
            }
            View::UpstreamFailures => {
                for ((index, answer), count) in self.merged(|s| &s.upstream) {
                    if let Err(id) = answer {
                        let outcome = Value(outcome::name(id).unwrap_or("unknown"));
                        counter(
                            encoder.encode_family(&UpstreamFailureLabels { route: route(index), outcome })?,
                            count,
                        )?;
                    }
                }
                Ok(())
            }
            View::UpstreamSeconds => {
                let mut per_route: BTreeMap<Option<u16>, Merged> = BTreeMap::new();
                for shard in locked(&self.inner.shards).iter() {
                    for (index, buckets) in locked(&shard.upstream_time).iter() {
                        per_route.entry(*index).or_default().add(buckets);
                    }
                }
                for (index, merged) in per_route {
                    merged.encode(&mut encoder.encode_family(&RouteLabel { route: route(index) })?)?;
                }
                Ok(())
            }
        }
    }

    fn metric_type(&self) -> MetricType {
        match self.what {
            View::JwksInstalledAt => MetricType::Gauge,
            View::DecisionSeconds | View::RequestSeconds | View::UpstreamSeconds => MetricType::Histogram,
            _ => MetricType::Counter,
        }
    }
}

/// Serves `metrics` at `GET /metrics` on `addr` until `shutdown` resolves.
pub async fn serve(
    metrics: Arc<Metrics>,
    listener: tokio::net::TcpListener,
    limits: ClientLimits,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let handler = move |request: http::Request<hyper::body::Incoming>, _remote: SocketAddr| {
        let metrics = Arc::clone(&metrics);
        async move { exposition(&metrics, request.uri().path()) }
    };
    listen::serve(listener, limits, handler, shutdown).await;
}

/// The answer to a scrape of `path`.
fn exposition(metrics: &Metrics, path: &str) -> Response<Body> {
    let (status, content_type, body) = match path {
        "/metrics" => {
            (StatusCode::OK, "application/openmetrics-text; version=1.0.0; charset=utf-8", metrics.render())
        }
        _ => (StatusCode::NOT_FOUND, "text/plain", "metrics are at /metrics\n".to_owned()),
    };
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    if let Ok(value) = http::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(http::header::CONTENT_TYPE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn names() -> Names {
        Names {
            rules: vec!["admin", "rules[1]"],
            routes: vec!["orders"],
            issuers: vec![names::kept("https://a.example/\"x")],
            unnamed_issuer: false,
        }
    }

    #[test]
    fn labels_name_what_the_indices_stand_for() {
        let labels = Labels {
            outcome: outcome::id("expired"),
            rule: Some(1),
            route: Some(0),
            issuer: Some(0),
            cache: Cache::Miss,
        };
        let got = names().decision(&labels);
        let expected = ["expired", "rules[1]", "orders", "https://a.example/\"x"].map(Value);
        assert_eq!([got.outcome, got.rule, got.route, got.issuer], expected);
        let none = names().decision(&Labels::of(outcome::id("missing_authorization")));
        assert_eq!([none.rule, none.route, none.issuer], ["", "", ""].map(Value));
        assert_eq!(names().route(Some(9)), "unknown");
    }

    #[test]
    fn the_exposition_counts_each_decision_once_by_its_labels() {
        let metrics = Metrics::new(names());
        // Two threads' shards, added up by the scrape.
        let (first, second) = (metrics.recorder(), metrics.recorder());
        let forwarded = Labels {
            outcome: outcome::FORWARDED,
            rule: None,
            route: Some(0),
            issuer: Some(0),
            cache: Cache::Hit,
        };
        first.decided(&forwarded, Duration::from_micros(20));
        second.decided(&forwarded, Duration::from_micros(20));
        second.decided(&Labels::of(outcome::id("expired")), Duration::from_micros(20));
        first.upstream(Some(0), Ok(200), Duration::from_millis(1));
        // Unregistered statuses are counted by class.
        for odd in [299, 298, 599, 799] {
            second.upstream(Some(0), Ok(odd), Duration::from_millis(1));
        }
        second.upstream(Some(0), Err(outcome::id("upstream_unavailable")), Duration::from_millis(1));
        metrics.jwks_installed(0, true, 1.8e9);
        let text = metrics.render();
        let line = "gateway_decisions_total{outcome=\"forwarded\",rule=\"\",route=\"orders\",issuer=\"https://a.example/\\\"x\"} 2";
        assert!(text.contains(line), "{text}");
        assert!(
            text.contains("gateway_allowed_total 2\n") && text.contains("gateway_denied_total 1\n"),
            "{text}"
        );
        assert!(text.contains("gateway_jwt_cache_hit_total 2\n"), "{text}");
        assert!(
            text.contains("gateway_upstream_responses_total{route=\"orders\",status=\"200\"} 1"),
            "{text}"
        );
        for (class, count) in [("2xx", 2), ("5xx", 1), ("7xx", 1)] {
            let line =
                format!("gateway_upstream_responses_total{{route=\"orders\",status=\"{class}\"}} {count}\n");
            assert!(text.contains(&line), "{text}");
        }
        assert!(
            text.contains(
                "gateway_upstream_failures_total{route=\"orders\",outcome=\"upstream_unavailable\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains("gateway_decision_duration_seconds_count 3\n"), "{text}");
        assert!(text.contains("gateway_decision_duration_seconds_bucket{le=\"0.00002\"} 3\n"), "{text}");
        assert!(text.contains("gateway_upstream_duration_seconds_count{route=\"orders\"} 6\n"), "{text}");
        assert!(
            text.contains("gateway_jwks_installed_total{issuer=\"https://a.example/\\\"x\"} 1\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
