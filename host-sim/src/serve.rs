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
use std::time::{Instant, SystemTime};

use contract::Decision;
use contract::owned::DecisionBuf;
use hyper::body::Incoming;
use hyper::{Request, Response};

use runtime::{EngineOptions, Input, Isolation, Outcome, Reusable, Runtime, Scheme, unix_seconds};

use crate::access_log;
use crate::args::{EngineArgs, SourceArgs};
use crate::body::Body;
use crate::keys::KeyFetcher;
use crate::limits::{self, LimitArgs};
use crate::listen;
use crate::threads;
use crate::upstream::{Forwarder, answer_response, parse_overrides};

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
    /// Print one line per request on stderr.
    #[arg(long)]
    pub access_log: bool,
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
}

/// What every connection of a serving thread shares.
#[derive(Debug)]
pub struct Gateway {
    runtime: Arc<Runtime>,
    isolation: Isolation,
    forwarder: Forwarder,
    access_log: bool,
    clock: fn() -> SystemTime,
    keys: Option<Arc<KeyFetcher>>,
}

thread_local! {
    /// This worker thread's reused instance, with the address of the runtime it belongs to.
    static REUSABLE: RefCell<(usize, Reusable)> = RefCell::new((0, Reusable::default()));
}

impl Gateway {
    /// A gateway over `runtime`, on the system clock.
    pub fn new(runtime: Runtime, isolation: Isolation, forwarder: Forwarder, access_log: bool) -> Gateway {
        let runtime = Arc::new(runtime);
        Gateway { runtime, isolation, forwarder, access_log, clock: SystemTime::now, keys: None }
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
    pub fn for_thread(&self, options: &EngineOptions) -> Result<Gateway, runtime::LoadError> {
        Ok(Gateway {
            runtime: Arc::new(self.runtime.sibling(options, SLOTS_PER_THREAD)?),
            forwarder: self.forwarder.own_pool(),
            keys: self.keys.clone(),
            ..*self
        })
    }

    /// The same gateway reading the time from `clock`: for tests of what a
    /// clock that reads before the Unix epoch (the one way reading it
    /// fails) does to the answers.
    pub fn with_clock(self, clock: fn() -> SystemTime) -> Gateway {
        Gateway { clock, ..self }
    }

    /// Decides `input` now, in the configured isolation mode.
    pub fn decide(&self, input: Input<'_>) -> Outcome {
        let now = unix_seconds((self.clock)());
        match self.isolation {
            Isolation::Fresh => self.runtime.decide_fresh(input, now),
            Isolation::Reuse => REUSABLE.with(|cell| {
                let mut cell = cell.borrow_mut();
                let id = Arc::as_ptr(&self.runtime) as usize;
                if cell.0 != id {
                    *cell = (id, Reusable::default());
                }
                self.runtime.decide_reused(&mut cell.1, input, now)
            }),
        }
    }

    /// Answers one request.
    pub async fn handle(self: Arc<Self>, request: Request<Incoming>, remote: SocketAddr) -> Response<Body> {
        // What the access log reads of the request, taken only when it is on.
        let logged = self.access_log.then(|| Logged::of(&request, remote));
        let head = request_head(&request);
        // This server speaks plain HTTP; TLS, where used, ends in front of it.
        let outcome = self.decide(Input { scheme: Scheme::Http, peer: Some(remote.ip()), head: &head });
        let decision = match outcome {
            Ok(decision) => decision,
            Err(e) => {
                let answer = DecisionBuf::host_answer(e.answer());
                return log(logged, answer_response(&answer), || format!("answer: {e}"));
            }
        };
        match decision.view() {
            Decision::Forward(forward) => {
                let note = || {
                    format!(
                        "forward {}{} sub={}",
                        self.forwarder.resolve(forward.origin),
                        forward.path,
                        forward.request_set(contract::fields::SUBJECT).unwrap_or("-")
                    )
                };
                match self.forwarder.forward(request, &forward).await {
                    Ok(response) => log(logged, response, note),
                    Err(e) => log(logged, e.response(), || format!("{}: {e}", note())),
                }
            }
            Decision::Answer(answer) => {
                if let (Some(keys), Some(issuer)) = (&self.keys, answer.refresh_keys) {
                    keys.want(issuer);
                }
                log(logged, answer_response(&decision), || format!("answer: {}", answer.reason))
            }
        }
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
    target: String,
    start: Instant,
}

impl Logged {
    fn of<B>(request: &Request<B>, remote: SocketAddr) -> Logged {
        let target = request.uri().path_and_query().map_or("/".to_owned(), |p| p.to_string());
        Logged { remote, method: request.method().clone(), target, start: Instant::now() }
    }
}

/// Writes the access-log line (with `note`, made only then) when the log
/// is on, and returns the response.
fn log(logged: Option<Logged>, response: Response<Body>, note: impl FnOnce() -> String) -> Response<Body> {
    if let Some(at) = logged {
        let status = response.status().as_u16();
        let took = at.start.elapsed();
        eprintln!("{}", access_log::line(at.remote, at.method.as_str(), &at.target, status, took, &note()));
    }
    response
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
    tokio.block_on(async {
        let mut gateway =
            Gateway::new(runtime, args.engine.isolation, Forwarder::new(overrides.clone(), args.limits.forward()), args.access_log);
        if !key_sources.is_empty() {
            let count = key_sources.len();
            let keys = KeyFetcher::start(Arc::clone(&gateway.runtime), key_sources, overrides);
            if !args.serve_before_keys {
                eprintln!("keys: waiting for {count} key source(s) before serving (--serve-before-keys serves at once)");
                keys.all_installed().await;
            }
            gateway = gateway.with_keys(keys);
        }
        let listener = match listen::bind(args.listen, "gateway").await {
            Ok(l) => l,
            Err(e) => return fail(format!("cannot listen on {}: {e}", args.listen)),
        };
        let mut handlers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let gateway = match gateway.for_thread(&options) {
                Ok(g) => Arc::new(g),
                Err(e) => return fail(format!("cannot load the module for a serving thread: {e}")),
            };
            handlers.push(move |request, remote| Arc::clone(&gateway).handle(request, remote));
        }
        if let Err(e) = threads::serve(listener, handlers, client_limits, listen::shutdown_signal()).await {
            return fail(format!("serving threads: {e}"));
        }
        eprintln!("gateway stopped");
        ExitCode::SUCCESS
    })
}
