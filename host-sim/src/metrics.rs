//! `serve --metrics ADDR`: what the gateway decided and how the host fared,
//! in the Prometheus text format on a listener of its own. The counters
//! share their names and labels with the Envoy filter's
//! (`deploy/envoy/filter/src/metrics.rs`) where they mean the same, and
//! take `jwt_authn`'s words where it has one (`allowed`, `denied`,
//! `jwks_fetch_success`, `jwks_fetch_failed`, `jwt_cache_hit`,
//! `jwt_cache_miss`).
//!
//! Labels are bounded by the module's tables: the outcome's name in the
//! contract's table (`contract::outcome::NAMES`), and the rule, route and
//! issuer named by the module's `labels` and `routes` exports (from the
//! config), never by anything a request carries. The names are read once,
//! at start, and kept for the life of the process, so a request counts
//! without allocating.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use contract::outcome::{self, Cache, LabelName, Labels};
use http::{Response, StatusCode};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use runtime::Runtime;

use crate::body::{Body, full};
use crate::limits::ClientLimits;
use crate::listen;

/// What a decision is counted by: the outcome's name, and the names of
/// the rule, route and issuer (empty when none applied).
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    /// `forwarded`, `public`, `preflight`, or why the request was turned away.
    pub outcome: Value,
    /// The rule that applied.
    pub rule: Value,
    /// The route the request went, or would have gone, to.
    pub route: Value,
    /// The issuer whose token was verified.
    pub issuer: Value,
}

/// An issuer's key fetches are counted by its name.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IssuerLabel {
    /// The issuer's `iss` (`-`: it accepts any), or its index without a label table.
    pub issuer: Value,
}

/// An upstream's answers are counted by route and status.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamLabels {
    /// The route the request was forwarded on.
    pub route: Value,
    /// The upstream's status.
    pub status: u16,
}

/// Forwards that got no upstream answer are counted by route and by the
/// host's own answer.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamFailureLabels {
    /// The route the request was forwarded on.
    pub route: Value,
    /// The host's answer: `upstream_unavailable`, `upstream_timed_out`, ...
    pub outcome: Value,
}

/// An upstream's latency is measured per route.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabel {
    /// The route the request was forwarded on.
    pub route: Value,
}

/// The names the module's indices stand for, read once from the module.
#[derive(Debug, Clone, Default)]
pub struct Names {
    rules: Vec<&'static str>,
    routes: Vec<&'static str>,
    issuers: Vec<&'static str>,
}

/// A name kept for the life of the process. Called once per name of the
/// module's tables, at start.
fn kept(name: &str) -> &'static str {
    Box::leak(name.to_owned().into_boxed_str())
}

/// A label value, escaped as the text format wants it (the encoder
/// writes values as they are): `\`, `"` and a line end escaped.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub struct Value(pub &'static str);

impl EncodeLabelValue for Value {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> std::fmt::Result {
        use std::fmt::Write as _;
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

impl Names {
    /// The names of `runtime`'s module: its routes' audiences, and its
    /// rules and issuers from its label table (a module without one has a
    /// single issuer, `0`).
    pub fn of(runtime: &Runtime) -> Result<Names, runtime::GuestError> {
        let routes = runtime.routes()?.iter().map(|(aud, _)| kept(aud)).collect();
        let table = runtime.labels()?;
        let mut names = Names { routes, ..Names::default() };
        for name in outcome::label_names(&table) {
            match name {
                LabelName::Rule(name) => names.rules.push(kept(name)),
                LabelName::Issuer(name) => names.issuers.push(kept(name)),
            }
        }
        if table.is_empty() {
            names.issuers.push("0");
        }
        Ok(names)
    }

    /// The labels a decision with `labels` is counted by.
    pub fn decision(&self, labels: &Labels) -> DecisionLabels {
        DecisionLabels {
            outcome: Value(outcome::name(labels.outcome).unwrap_or("unknown")),
            rule: Value(pick(&self.rules, labels.rule.map(usize::from))),
            route: Value(self.route(labels.route)),
            issuer: Value(pick(&self.issuers, labels.issuer.map(usize::from))),
        }
    }

    /// The name of route `index`, empty for none.
    pub fn route(&self, index: Option<u16>) -> &'static str {
        pick(&self.routes, index.map(usize::from))
    }

    /// The name of issuer `index`.
    pub fn issuer(&self, index: u8) -> &'static str {
        pick(&self.issuers, Some(usize::from(index)))
    }
}

/// The name at `index`, empty for none, `unknown` past the table's end.
fn pick(names: &[&'static str], index: Option<usize>) -> &'static str {
    index.map_or("", |i| names.get(i).copied().unwrap_or("unknown"))
}

/// Every metric `serve` keeps, shared by its threads.
#[derive(Debug)]
pub struct Metrics {
    /// The names the labels come from.
    pub names: Names,
    registry: Registry,
    decisions: Family<DecisionLabels, Counter>,
    allowed: Counter,
    denied: Counter,
    cache_hit: Counter,
    cache_miss: Counter,
    jwks_fetch_success: Family<IssuerLabel, Counter>,
    jwks_fetch_failed: Family<IssuerLabel, Counter>,
    jwks_installed: Family<IssuerLabel, Counter>,
    jwks_refused: Family<IssuerLabel, Counter>,
    jwks_installed_at: Family<IssuerLabel, Gauge<f64, AtomicU64>>,
    decision_seconds: Histogram,
    request_seconds: Histogram,
    upstream_responses: Family<UpstreamLabels, Counter>,
    upstream_failures: Family<UpstreamFailureLabels, Counter>,
    upstream_seconds: Family<RouteLabel, Histogram>,
    /// Connections accepted, and open now.
    pub connections: Connections,
    instances: Counter,
    deadline_hits: Counter,
}

/// The connection counters the serving threads keep.
#[derive(Debug, Clone, Default)]
pub struct Connections {
    /// Connections handed to a serving thread.
    pub accepted: Counter,
    /// Connections being served now.
    pub open: Gauge,
}

/// Latency buckets from 10 µs to about 10 s, doubling.
fn latency_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(10e-6, 2.0, 21)
}

impl Metrics {
    /// Every metric at zero, labelled with `names`.
    pub fn new(names: Names) -> Metrics {
        let mut registry = Registry::default();
        let latency = || Histogram::new(latency_buckets());
        let metrics = Metrics {
            names,
            decisions: Family::default(),
            allowed: Counter::default(),
            denied: Counter::default(),
            cache_hit: Counter::default(),
            cache_miss: Counter::default(),
            jwks_fetch_success: Family::default(),
            jwks_fetch_failed: Family::default(),
            jwks_installed: Family::default(),
            jwks_refused: Family::default(),
            jwks_installed_at: Family::default(),
            decision_seconds: latency(),
            request_seconds: latency(),
            upstream_responses: Family::default(),
            upstream_failures: Family::default(),
            upstream_seconds: Family::new_with_constructor(|| Histogram::new(latency_buckets())),
            connections: Connections::default(),
            instances: Counter::default(),
            deadline_hits: Counter::default(),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "gateway_decisions",
            "Decisions by outcome, rule, route and issuer",
            metrics.decisions.clone(),
        );
        r.register(
            "gateway_allowed",
            "Requests the gateway let through (jwt_authn's allowed)",
            metrics.allowed.clone(),
        );
        r.register(
            "gateway_denied",
            "Requests the gateway turned away (jwt_authn's denied)",
            metrics.denied.clone(),
        );
        r.register(
            "gateway_jwt_cache_hit",
            "Tokens found in the cache of verified tokens",
            metrics.cache_hit.clone(),
        );
        r.register(
            "gateway_jwt_cache_miss",
            "Tokens whose signature was verified",
            metrics.cache_miss.clone(),
        );
        r.register(
            "gateway_jwks_fetch_success",
            "Key documents fetched, per issuer",
            metrics.jwks_fetch_success.clone(),
        );
        r.register(
            "gateway_jwks_fetch_failed",
            "Key fetches that failed, per issuer",
            metrics.jwks_fetch_failed.clone(),
        );
        r.register(
            "gateway_jwks_installed",
            "Key documents the module installed, per issuer",
            metrics.jwks_installed.clone(),
        );
        r.register(
            "gateway_jwks_refused",
            "Key documents the module refused, per issuer",
            metrics.jwks_refused.clone(),
        );
        r.register(
            "gateway_jwks_installed_timestamp_seconds",
            "When an issuer's keys were last installed (Unix seconds)",
            metrics.jwks_installed_at.clone(),
        );
        r.register(
            "gateway_decision_duration_seconds",
            "Time the module took to decide",
            metrics.decision_seconds.clone(),
        );
        r.register(
            "gateway_request_duration_seconds",
            "Time from the request head to the response head, upstream included",
            metrics.request_seconds.clone(),
        );
        r.register(
            "gateway_upstream_responses",
            "Upstream answers by route and status",
            metrics.upstream_responses.clone(),
        );
        r.register(
            "gateway_upstream_failures",
            "Forwards without an upstream answer, by route and the host's answer",
            metrics.upstream_failures.clone(),
        );
        r.register(
            "gateway_upstream_duration_seconds",
            "Time from sending upstream to its response head, per route",
            metrics.upstream_seconds.clone(),
        );
        r.register(
            "gateway_connections",
            "Client connections accepted",
            metrics.connections.accepted.clone(),
        );
        r.register(
            "gateway_connections_open",
            "Client connections open now",
            metrics.connections.open.clone(),
        );
        r.register("gateway_instances", "Module instances made", metrics.instances.clone());
        r.register(
            "gateway_deadline_hits",
            "Decisions stopped at the CPU deadline",
            metrics.deadline_hits.clone(),
        );
        Metrics { registry, ..metrics }
    }

    /// Counts one decision (or the host's own answer when the module gave
    /// none) and the time the module took.
    pub fn decided(&self, labels: &Labels, took: Duration) {
        self.decisions.get_or_create(&self.names.decision(labels)).inc();
        if outcome::allowed(labels.outcome) {
            self.allowed.inc();
        } else if labels.outcome != outcome::PREFLIGHT {
            self.denied.inc();
        }
        match labels.cache {
            Cache::Hit => self.cache_hit.inc(),
            Cache::Miss => self.cache_miss.inc(),
            Cache::None => 0,
        };
        self.decision_seconds.observe(took.as_secs_f64());
    }

    /// Counts one instance made for a decision.
    pub fn instance_made(&self) {
        self.instances.inc();
    }

    /// Counts one decision stopped at the CPU deadline.
    pub fn deadline_hit(&self) {
        self.deadline_hits.inc();
    }

    /// Counts the upstream's answer on route `route`: its status, or the
    /// outcome of the host's own answer when it gave none, and the time it took.
    pub fn upstream(&self, route: Option<u16>, answer: Result<StatusCode, u8>, took: Duration) {
        let route = Value(self.names.route(route));
        match answer {
            Ok(status) => self
                .upstream_responses
                .get_or_create(&UpstreamLabels { route, status: status.as_u16() })
                .inc(),
            Err(id) => {
                let outcome = Value(outcome::name(id).unwrap_or("unknown"));
                self.upstream_failures.get_or_create(&UpstreamFailureLabels { route, outcome }).inc()
            }
        };
        self.upstream_seconds.get_or_create(&RouteLabel { route }).observe(took.as_secs_f64());
    }

    /// Times one whole request.
    pub fn request(&self, took: Duration) {
        self.request_seconds.observe(took.as_secs_f64());
    }

    /// Counts a key fetch of `issuer`: a document fetched, or none.
    pub fn jwks_fetched(&self, issuer: u8, ok: bool) {
        let label = IssuerLabel { issuer: Value(self.names.issuer(issuer)) };
        if ok { &self.jwks_fetch_success } else { &self.jwks_fetch_failed }.get_or_create(&label).inc();
    }

    /// Counts what the module did with a document of `issuer`'s at `now`
    /// (Unix seconds): installed or refused.
    pub fn jwks_installed(&self, issuer: u8, installed: bool, now: f64) {
        let label = IssuerLabel { issuer: Value(self.names.issuer(issuer)) };
        if installed {
            self.jwks_installed.get_or_create(&label).inc();
            self.jwks_installed_at.get_or_create(&label).set(now);
        } else {
            self.jwks_refused.get_or_create(&label).inc();
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
    use super::*;

    fn names() -> Names {
        Names {
            rules: vec!["admin", "rules[1]"],
            routes: vec!["orders"],
            issuers: vec![kept("https://a.example/\"x")],
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
        let forwarded = Labels {
            outcome: outcome::FORWARDED,
            rule: None,
            route: Some(0),
            issuer: Some(0),
            cache: Cache::Hit,
        };
        metrics.decided(&forwarded, Duration::from_micros(20));
        metrics.decided(&forwarded, Duration::from_micros(20));
        metrics.decided(&Labels::of(outcome::id("expired")), Duration::from_micros(20));
        metrics.upstream(Some(0), Ok(StatusCode::OK), Duration::from_millis(1));
        metrics.upstream(Some(0), Err(outcome::id("upstream_unavailable")), Duration::from_millis(1));
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
        assert!(
            text.contains(
                "gateway_upstream_failures_total{route=\"orders\",outcome=\"upstream_unavailable\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains("gateway_decision_duration_seconds_count 3\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
