//! `host-sim serve`: the gateway on real HTTP. Every request's head goes
//! through the module with the peer's address; accepted requests are
//! forwarded upstream exactly as the module planned ([`crate::upstream`]),
//! direct answers are sent with exactly the module's status, fields and
//! body, and a module that fails
//! (trap, deadline, memory) gets the client a 500 or 503 while the server
//! goes on. Clients and upstreams are held to the limits of
//! [`crate::limits`].

use std::cell::RefCell;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use contract::Decision;
use contract::outcome::Labels;
use contract::owned::DecisionBuf;
use hyper::body::Incoming;
use hyper::{Request, Response};

use runtime::{EngineOptions, Input, Isolation, Reusable, Runtime, Scheme};

use crate::access_log;
use crate::args::{EngineArgs, NamingArgs, SourceArgs};
use crate::body::Body;
use crate::keys::KeyFetcher;
use crate::limits::{self, LimitArgs};
use crate::listen;
use crate::metrics::{self, Metrics, Names, Recorder};
use crate::threads;
use crate::traffic::{Counting, TrafficArgs};
use crate::upstream::{Forwarder, answer_response, parse_overrides};

mod decide;

pub use decide::Decided;

/// `host-sim serve` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Where to listen (port 0: any free port; the address is printed on stdout).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The module.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Engine and instance settings.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// The config that names the module's one issuer.
    #[command(flatten)]
    pub naming: NamingArgs,
    /// Print one line per request on stderr: text (the default form), or
    /// json (one object per request).
    #[arg(long, value_name = "FORM", num_args = 0..=1, default_missing_value = "text")]
    pub access_log: Option<access_log::Format>,
    /// Write the forwarded subject (the token's `sub`) into the JSON access log.
    #[arg(long)]
    pub log_subject: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics (decisions by
    /// outcome, rule, route and issuer; latencies; upstreams; key fetches).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Send an upstream elsewhere: AUD=ORIGIN (an audience of the module's
    /// route table) or FROM_ORIGIN=ORIGIN (an origin the module names).
    /// Every route on that origin moves; paths stay the module's. Repeatable.
    #[arg(long, value_name = "AUD=ORIGIN")]
    pub upstream_override: Vec<String>,
    /// Serving threads (default: one per core). Each serves the connections
    /// handed to it to their end, with its own wasmtime engine, module
    /// instances and upstream connections.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Timeouts and limits for clients and upstreams.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// For a module that fetches keys: serve at once, before every key
    /// source has answered (tokens needing fetched keys get 503 until then).
    /// By default `serve` waits, and says so.
    #[arg(long)]
    pub serve_before_keys: bool,
    /// Rate limits: where a module's buckets are counted, and what a
    /// failing store means.
    #[command(flatten)]
    pub traffic: TrafficArgs,
    /// HTTPS for clients, and their certificates.
    #[command(flatten)]
    pub tls: crate::tls::TlsArgs,
}

/// What every connection of a serving thread shares.
#[derive(Debug)]
pub struct Gateway {
    runtime: Arc<Runtime>,
    isolation: Isolation,
    forwarder: Forwarder,
    log: Log,
    clock: fn() -> SystemTime,
    keys: Option<Arc<KeyFetcher>>,
    names: Arc<Names>,
    /// The metrics, and this gateway's shard of them.
    metrics: Option<(Arc<Metrics>, Recorder)>,
    /// A module with limits: where its buckets are counted.
    counting: Option<Counting>,
}

/// What the access log writes: nothing, text or JSON lines, and whether
/// the JSON line names the subject.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Log {
    /// The form, or `None` for no access log.
    pub format: Option<access_log::Format>,
    /// Whether the JSON line carries the subject.
    pub subject: bool,
}

thread_local! {
    /// This worker thread's reused instance, with the address of the runtime it belongs to.
    static REUSABLE: RefCell<(usize, Reusable)> = RefCell::new((0, Reusable::default()));
}

impl Gateway {
    /// A gateway over `runtime`, on the system clock.
    pub fn new(runtime: Runtime, isolation: Isolation, forwarder: Forwarder, log: Log) -> Gateway {
        let runtime = Arc::new(runtime);
        let names = Arc::default();
        Gateway {
            runtime,
            isolation,
            forwarder,
            log,
            clock: SystemTime::now,
            keys: None,
            names,
            metrics: None,
            counting: None,
        }
    }

    /// The same gateway counting its module's rate limits with `counting`.
    pub fn with_counting(self, counting: Counting) -> Gateway {
        Gateway { counting: Some(counting), ..self }
    }

    /// The same gateway naming rules, routes and issuers in its JSON log by `names`.
    pub fn with_names(self, names: Names) -> Gateway {
        Gateway { names: Arc::new(names), ..self }
    }

    /// The same gateway counting into `metrics`.
    pub fn with_metrics(self, metrics: Arc<Metrics>) -> Gateway {
        let recorder = metrics.recorder();
        Gateway { metrics: Some((metrics, recorder)), ..self }
    }

    /// The same gateway with its module's keys fetched by `keys`.
    pub fn with_keys(self, keys: KeyFetcher) -> Gateway {
        Gateway { keys: Some(Arc::new(keys)), ..self }
    }

    /// The same gateway for a serving thread: the keys and the settings
    /// shared; the module on an engine of its own ([`Runtime::sibling`],
    /// `SLOTS_PER_THREAD` instance slots) and the upstream connections its
    /// own, so that its requests share nothing with another thread's.
    /// `options` are the ones the gateway's runtime was loaded with.
    /// Its runtime has decided the warm-up request ([`Runtime::warm_up`]),
    /// so that the thread's first client request does not pay the costs
    /// only a first request pays (they are paid here, before serving).
    pub fn for_thread(&self, options: &EngineOptions) -> Result<Gateway, runtime::LoadError> {
        let runtime = self.runtime.sibling(options, SLOTS_PER_THREAD)?;
        // A module that cannot decide it fails its clients' requests too,
        // each logged with its reason: the warm-up only notes that it failed.
        if runtime.warm_up().is_err() {
            eprintln!("warm-up request failed; serving anyway");
        }
        Ok(Gateway {
            runtime: Arc::new(runtime),
            forwarder: self.forwarder.own_pool(),
            keys: self.keys.clone(),
            names: Arc::clone(&self.names),
            // A shard of its own: no count is shared with another thread.
            metrics: self.metrics.as_ref().map(|(metrics, _)| (Arc::clone(metrics), metrics.recorder())),
            counting: self.counting.as_ref().map(Counting::for_thread),
            ..*self
        })
    }

    /// The same gateway reading the time from `clock`: for tests of what a
    /// clock that reads before the Unix epoch (the one way reading it
    /// fails) does to the answers.
    pub fn with_clock(self, clock: fn() -> SystemTime) -> Gateway {
        Gateway { clock, ..self }
    }

    /// Answers one request.
    pub async fn handle(self: Arc<Self>, request: Request<Incoming>, remote: SocketAddr) -> Response<Body> {
        let start = Instant::now();
        // What the access log reads of the request, taken only when it is on.
        let logged = self.log.format.map(|_| Logged::of(&request, remote));
        let head = request_head(&request);
        // Over TLS (`--tls-cert`) the connection's session says so, with
        // the thumbprint of the client certificate it verified.
        let session = request.extensions().get::<crate::tls::Session>().copied();
        let input = Input {
            scheme: if session.is_some() { Scheme::Https } else { Scheme::Http },
            peer: Some(remote.ip()),
            head: &head,
            client_certificate: session.and_then(|s| s.client_certificate),
        };
        let Decided { outcome, counted, waited } = self.decide_and_count(input).await;
        // The module's time: a wait for the rate-limit store is not its.
        let decided = start.elapsed().saturating_sub(waited);
        let decision = match outcome {
            Ok(decision) => decision,
            Err(e) => {
                let answer = e.answer();
                let done = Done::new(Labels::of(answer.outcome()), decided, answer.description());
                return self.finish(
                    start,
                    logged,
                    answer_response(&DecisionBuf::host_answer(answer)),
                    &done,
                    || format!("answer: {e}"),
                );
            }
        };
        match decision.view() {
            Decision::Forward(forward) => {
                if let Some(answer) = counted.host_answer() {
                    let labels = Labels { outcome: answer.outcome(), ..forward.labels };
                    let done = Done::new(labels, decided, answer.description());
                    let response = answer_response(&DecisionBuf::host_answer(answer));
                    return self
                        .finish(start, logged, response, &done, || format!("answer: {}", done.reason));
                }
                let note = || {
                    format!(
                        "forward {}{} sub={}",
                        self.forwarder.resolve(forward.origin),
                        access_log::redacted_target(forward.path),
                        forward.request_set(contract::fields::SUBJECT).unwrap_or("-")
                    )
                };
                let mut done = Done::new(forward.labels, decided, "");
                done.subject = forward.request_set(contract::fields::SUBJECT);
                let sent = Instant::now();
                let result = self.forwarder.forward(request, &forward).await;
                done.upstream = Some(result.as_ref().map(|r| r.status()).map_err(|e| e.answer().outcome()));
                if let (Some((_, metrics)), Some(upstream)) = (&self.metrics, done.upstream) {
                    metrics.upstream(forward.labels.route, upstream.map(|s| s.as_u16()), sent.elapsed());
                }
                match result {
                    Ok(mut response) => {
                        counted.add_fields(response.headers_mut());
                        self.finish(start, logged, response, &done, note)
                    }
                    Err(e) => self.finish(start, logged, e.response(), &done, || format!("{}: {e}", note())),
                }
            }
            Decision::Answer(answer) => {
                if let (Some(keys), Some(issuer)) = (&self.keys, answer.refresh_keys) {
                    keys.want(issuer);
                }
                let done = Done::new(answer.labels, decided, answer.reason);
                self.finish(start, logged, answer_response(&decision), &done, || {
                    format!("answer: {}", answer.reason)
                })
            }
        }
    }

    /// Counts the request and writes its access-log line (with `note`,
    /// made only for the text form), and returns the response.
    fn finish(
        &self,
        start: Instant,
        logged: Option<Logged>,
        response: Response<Body>,
        done: &Done<'_>,
        note: impl FnOnce() -> String,
    ) -> Response<Body> {
        let total = start.elapsed();
        if let Some((_, metrics)) = &self.metrics {
            metrics.decided(&done.labels, done.decided);
            metrics.request(total);
        }
        let (Some(at), Some(format)) = (logged, self.log.format) else { return response };
        let status = response.status().as_u16();
        let line = match format {
            access_log::Format::Text => {
                access_log::line(at.remote, at.method.as_str(), &at.target, status, total, &note())
            }
            access_log::Format::Json => {
                let names = self.names.decision(&done.labels);
                let upstream = done.upstream.map(|u| {
                    u.map(|s| s.as_u16()).map_err(|id| contract::outcome::name(id).unwrap_or("unknown"))
                });
                access_log::json_line(&access_log::Entry {
                    time: at.time,
                    peer: at.remote,
                    method: at.method.as_str(),
                    target: &at.target,
                    status,
                    outcome: contract::outcome::name(done.labels.outcome).unwrap_or("unknown"),
                    reason: done.reason,
                    rule: names.rule.0,
                    route: names.route.0,
                    issuer: names.issuer.0,
                    subject: done.subject.filter(|_| self.log.subject),
                    decision: done.decided,
                    total,
                    upstream,
                    trace_id: at.trace_id.as_deref(),
                })
            }
        };
        eprintln!("{line}");
        response
    }
}

/// What one request came to, for the counters and the access log.
struct Done<'a> {
    labels: Labels,
    decided: Duration,
    reason: &'a str,
    subject: Option<&'a str>,
    upstream: Option<Result<http::StatusCode, u8>>,
}

impl<'a> Done<'a> {
    fn new(labels: Labels, decided: Duration, reason: &'a str) -> Done<'a> {
        Done { labels, decided, reason, subject: None, upstream: None }
    }
}

/// Instance slots of a serving thread's engine: a request holds one while
/// the module runs (which never awaits), a reused instance being replaced
/// one more, and the contract check's spare instance one until the first
/// request takes it.
const SLOTS_PER_THREAD: u32 = 3;

/// Instance slots of the engine that loads the module and installs fetched
/// keys, which serves no request: the contract check's spare instance (which
/// reads the route table) and the keeper that installs keys.
const SLOTS_OF_LOADER: u32 = 2;

/// What the access log reads of a request before it is forwarded.
struct Logged {
    remote: SocketAddr,
    method: http::Method,
    /// The target, its query left out but for its size (`access_log::redacted_target`).
    target: String,
    time: SystemTime,
    trace_id: Option<String>,
}

impl Logged {
    fn of<B>(request: &Request<B>, remote: SocketAddr) -> Logged {
        let target = request.uri().path_and_query().map_or("/".to_owned(), |p| p.to_string());
        let trace_id = request
            .headers()
            .get("traceparent")
            .and_then(|value| value.to_str().ok())
            .and_then(access_log::trace_id)
            .map(str::to_owned);
        Logged {
            remote,
            method: request.method().clone(),
            target: access_log::redacted_target(&target),
            time: SystemTime::now(),
            trace_id,
        }
    }
}

/// Counts and logs each request head hyper refused and answered itself
/// (no module saw it): a decision with its outcome (`malformed_head`,
/// `head_too_large`, `target_too_long`) and nothing else known, and an
/// access-log line with `-` for the method and target it could not read.
pub fn refused_heads(log: Log, metrics: Option<Arc<Metrics>>) -> listen::OnRefused {
    let counts = metrics.map(|metrics| (metrics.recorder(), metrics));
    Arc::new(move |remote, head: listen::RefusedHead| {
        let labels = Labels::of(head.outcome());
        if let Some((recorder, _)) = &counts {
            recorder.counted(&labels);
        }
        let outcome = contract::outcome::name(labels.outcome).unwrap_or("unknown");
        let line = match log.format {
            None => return,
            Some(access_log::Format::Text) => access_log::line(
                remote,
                "-",
                "-",
                head.status(),
                Duration::ZERO,
                &format!("refused: {outcome}"),
            ),
            Some(access_log::Format::Json) => access_log::json_line(&access_log::Entry {
                time: SystemTime::now(),
                peer: remote,
                method: "-",
                target: "-",
                status: head.status(),
                outcome,
                reason: "request head refused by the HTTP parser",
                rule: "",
                route: "",
                issuer: "",
                subject: None,
                decision: Duration::ZERO,
                total: Duration::ZERO,
                upstream: None,
                trace_id: None,
            }),
        };
        eprintln!("{line}");
    })
}

/// Rebuilds the request head the client sent, as the module expects it:
/// request line, header fields, CRLF line ends, the blank line.
pub fn request_head<B>(request: &Request<B>) -> Vec<u8> {
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(request.method().as_str().as_bytes());
    head.push(b' ');
    // The target as sent: origin-form (its path and query as they came,
    // without formatting the URI), absolute-form, authority-form or `*`.
    let uri = request.uri();
    match uri.path_and_query() {
        Some(target) if uri.scheme().is_none() && uri.authority().is_none() => {
            head.extend_from_slice(target.as_str().as_bytes());
        }
        _ => head.extend_from_slice(uri.to_string().as_bytes()),
    }
    head.extend_from_slice(match request.version() {
        http::Version::HTTP_10 => b" HTTP/1.0\r\n",
        _ => b" HTTP/1.1\r\n",
    });
    for (name, value) in request.headers() {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// Runs `host-sim serve` until SIGINT or SIGTERM.
pub fn run(args: &ServeArgs) -> ExitCode {
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::FAILURE
    };
    let threads = args.threads.unwrap_or_else(listen::cores).max(1);
    let client_limits = args.limits.client(limits::raise_descriptor_limit());
    let options = args.engine.options();
    let runtime = match Runtime::load(&options, &args.source.source(), SLOTS_OF_LOADER) {
        Ok(r) => r,
        Err(e) => return fail(e.to_string()),
    };
    // Audiences in overrides are resolved with the module's own route table.
    let names_an_audience = args.upstream_override.iter().any(|o| !o.starts_with("http"));
    let routes = match names_an_audience.then(|| runtime.routes()) {
        None => Vec::new(),
        Some(Ok(routes)) => routes,
        Some(Err(e)) => return fail(format!("cannot read the module's routes: {e}")),
    };
    let overrides = match parse_overrides(&args.upstream_override, &routes) {
        Ok(o) => o,
        Err(e) => return fail(e.to_string()),
    };
    let key_sources = match runtime.key_sources() {
        Ok(sources) => sources,
        Err(e) => return fail(format!("cannot read the module's key sources: {e}")),
    };
    if let Err(e) = KeyFetcher::check(&key_sources, &overrides) {
        return fail(e);
    }
    // This thread's runtime accepts, waits for the signals and runs the key
    // fetches; each serving thread runs its own (crate::threads).
    let tokio = match listen::thread_runtime() {
        Ok(t) => t,
        Err(e) => return fail(format!("cannot start the runtime: {e}")),
    };
    // The names of the module's rules, routes and issuers, for the counters and the JSON log.
    let names = match (args.metrics.is_some() || args.access_log == Some(access_log::Format::Json))
        .then(|| Names::of_module(&runtime, &args.source.source(), args.naming.config.as_deref()))
    {
        None => Names::default(),
        Some(Ok(names)) => names,
        Some(Err(e)) => return fail(format!("cannot read the module's label table: {e}")),
    };
    let metrics = args.metrics.map(|_| Arc::new(Metrics::new(names.clone())));
    let counting = match crate::traffic::for_module(&runtime, &args.traffic, metrics.as_deref()) {
        Ok(counting) => counting,
        Err(e) => return fail(e),
    };
    let tls = match crate::tls::acceptor(&args.tls) {
        Ok(tls) => tls,
        Err(e) => return fail(e.to_string()),
    };
    let log = Log { format: args.access_log, subject: args.log_subject };
    tokio.block_on(async {
        let forwarder = Forwarder::new(overrides.clone(), args.limits.forward());
        let mut gateway = Gateway::new(runtime, args.engine.isolation, forwarder, log).with_names(names);
        if let Some(metrics) = &metrics {
            gateway = gateway.with_metrics(Arc::clone(metrics));
        }
        if let Some(counting) = counting {
            eprintln!("{}", counting.describe());
            gateway = gateway.with_counting(counting);
        }
        if !key_sources.is_empty() {
            let count = key_sources.len();
            let keys = KeyFetcher::start(Arc::clone(&gateway.runtime), key_sources, overrides, metrics.clone());
            if !args.serve_before_keys {
                eprintln!("keys: waiting for {count} key source(s) before serving (--serve-before-keys serves at once)");
                keys.all_installed().await;
            }
            gateway = gateway.with_keys(keys);
        }
        // Each serving thread's module loaded and warmed up before the
        // gateway listens: a client never waits for either.
        let mut handlers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let gateway = match gateway.for_thread(&options) {
                Ok(g) => Arc::new(g),
                Err(e) => return fail(format!("cannot load the module for a serving thread: {e}")),
            };
            handlers.push(move |request, remote| Arc::clone(&gateway).handle(request, remote));
        }
        let scheme = if tls.is_some() { "https" } else { "http" };
        let listener = match listen::bind_for(args.listen, "gateway", scheme).await {
            Ok(l) => l,
            Err(e) => return fail(format!("cannot listen on {}: {e}", args.listen)),
        };
        // After the gateway's, so that its address is the first printed.
        if let (Some(metrics), Some(addr)) = (metrics.clone(), args.metrics) {
            match listen::bind(addr, "metrics").await {
                Ok(l) => drop(tokio::spawn(metrics::serve(metrics, l, client_limits, listen::shutdown_signal()))),
                Err(e) => return fail(format!("cannot listen on {addr} for metrics: {e}")),
            }
        }
        let watchers = threads::Watchers {
            connections: metrics.as_ref().map(|m| m.connections.clone()),
            refused: Some(refused_heads(log, metrics.clone())),
        };
        if let Err(e) =
            threads::serve(listener, handlers, client_limits, tls, watchers, listen::shutdown_signal()).await
        {
            return fail(format!("serving threads: {e}"));
        }
        eprintln!("gateway stopped");
        ExitCode::SUCCESS
    })
}
