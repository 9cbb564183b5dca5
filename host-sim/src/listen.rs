//! HTTP/1.1 server plumbing shared by `serve` and `upstream`: the runtimes
//! (a multi-thread one, or a single-threaded one per serving thread), the
//! accept loop with its limits (connection cap, head and idle timeouts,
//! bounded request heads, a pause after failing accepts), and graceful
//! shutdown on SIGINT and SIGTERM.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::Context;
use std::time::{Duration, Instant};

use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::body::{Body, Polled, Watch, Watched};
use crate::limits::ClientLimits;
use crate::stream::{Attached, OnRead};
use contract::fields::HostAnswer;

/// The largest buffer hyper keeps for a connection's request head (the
/// smallest it allows is 8 KiB). A longer head is answered 431 by hyper; the
/// module's own limit (16 KiB) answers 431 for heads between.
pub const MAX_BUF: usize = 32 << 10; // 32 KiB

/// The most header fields hyper parses; more is answered 431.
pub const MAX_HEADERS: usize = 100;

/// How long connections may take to finish after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// A multi-thread tokio runtime with one worker thread per core.
pub fn runtime(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(threads.max(1)).enable_all().build()
}

/// A single-threaded tokio runtime: for the thread that accepts, waits for
/// signals and runs background tasks, and for each serving thread of
/// [`crate::threads`].
pub fn thread_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

/// The number of cores this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Resolves when the process receives SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = ctrl_c.await;
        }
    }
}

/// Serves HTTP/1.1 on `listener` with `handler` until `shutdown` resolves,
/// then lets open connections finish (at most [`SHUTDOWN_GRACE`]).
///
/// At most `limits.max_connections` connections are served at once; one
/// more is answered 503 "gateway busy" and closed. A request head must
/// arrive within `limits.head_timeout` and a connection between requests
/// must not stay silent for `limits.idle_timeout`. A failing `accept` (out of
/// descriptors, say) is retried after a pause that doubles up to
/// [`MAX_ACCEPT_PAUSE`], so the loop never spins.
pub async fn serve<H, F>(
    listener: TcpListener,
    limits: ClientLimits,
    handler: H,
    shutdown: impl Future<Output = ()>,
) where
    H: Fn(Request<Incoming>, SocketAddr) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let admission = Admission::new(&limits);
    let (stop, stopping) = watch::channel(false);
    accept(&listener, &admission, shutdown, |stream, remote, slot| {
        let _ = stream.set_nodelay(true);
        let served = connection(stream, None, remote, handler.clone(), limits, slot, stopping.clone());
        tokio::spawn(async move {
            let _ = served.await;
        });
    })
    .await;
    drop(listener);
    let _ = stop.send(true);
    admission.drained(&limits).await;
}

/// The connection cap of one listening socket: the connections being
/// served (a slot each), and the "gateway busy" answers being written to
/// connections past the cap.
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    slots: Arc<Semaphore>,
    busy: Arc<Semaphore>,
}

impl Admission {
    pub(crate) fn new(limits: &ClientLimits) -> Admission {
        Admission {
            slots: Arc::new(Semaphore::new(limits.max_connections)),
            busy: Arc::new(Semaphore::new(BUSY_ANSWERS)),
        }
    }

    /// Resolves when every connection has given its slot back, or after
    /// [`SHUTDOWN_GRACE`]. The slots are given back at once, so that any
    /// number of threads can wait the same way.
    pub(crate) async fn drained(&self, limits: &ClientLimits) {
        let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.slots.acquire_many(all)).await;
    }
}

/// Accepts connections on `listener` until `shutdown` resolves, handing
/// each to `serve` with its slot; one past the cap is answered "gateway
/// busy". A failing `accept` is retried after a growing pause.
pub(crate) async fn accept(
    listener: &TcpListener,
    admission: &Admission,
    shutdown: impl Future<Output = ()>,
    mut serve: impl FnMut(TcpStream, SocketAddr, OwnedSemaphorePermit),
) {
    let mut backoff = Backoff::default();
    tokio::pin!(shutdown);
    loop {
        if let Some(pause) = backoff.pause {
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = &mut shutdown => break,
            }
        }
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => {
                    backoff.succeeded();
                    accepted
                }
                Err(e) => {
                    backoff.failed(&e);
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        match Arc::clone(&admission.slots).try_acquire_owned() {
            Ok(slot) => serve(stream, remote, slot),
            Err(_) => answer_busy(stream, &admission.busy),
        }
    }
}

/// Serves one connection until it ends, holding `slot` meanwhile; says
/// whether it ended on a request head hyper refused and answered. Over TLS,
/// every request carries the connection's `session` in its extensions.
pub(crate) async fn connection<S, H, F>(
    stream: S,
    session: Option<crate::tls::Session>,
    remote: SocketAddr,
    handler: H,
    limits: ClientLimits,
    slot: OwnedSemaphorePermit,
    mut stopping: watch::Receiver<bool>,
) -> Option<RefusedHead>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    H: Fn(Request<Incoming>, SocketAddr) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Attached::new(stream, Arc::clone(&activity)));
    let busy = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        if let Some(session) = session {
            request.extensions_mut().insert(session);
        }
        let handler = handler.clone();
        let request_under_way = busy.begin();
        async move {
            let response = handler(request, remote).await;
            // Boxed again: the connection then serves one concrete body type.
            Ok::<_, Infallible>(response.map(|body| Watched::new(body, request_under_way).boxed()))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // Bounded request heads: hyper answers 431 past these.
    builder.max_buf_size(MAX_BUF).max_headers(MAX_HEADERS);
    // The head timeout needs a timer: without one hyper silently ignores it.
    builder.timer(TokioTimer::new()).header_read_timeout(limits.head_timeout);
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let idle = tokio::time::sleep(limits.idle_timeout);
    tokio::pin!(idle);
    let mut closing = false;
    let refused = loop {
        tokio::select! {
            ended = connection.as_mut() => break ended.err().as_ref().and_then(RefusedHead::of),
            () = &mut idle, if !closing => match activity.idle_deadline(limits.idle_timeout) {
                Some(deadline) => idle.as_mut().reset(deadline),
                None => {
                    connection.as_mut().graceful_shutdown();
                    closing = true;
                }
            },
            _ = stopping.changed(), if !closing => {
                connection.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    };
    drop(slot);
    refused
}

/// A request head hyper's parser refused and answered itself, before any
/// handler saw the request: a malformed head (obs-fold, two
/// `Content-Length`, a space in a field name, a bad request line, ...), a
/// head past [`MAX_BUF`] or [`MAX_HEADERS`], a target too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedHead {
    /// Answered 400.
    Malformed,
    /// Answered 431.
    TooLarge,
    /// Answered 414.
    TargetTooLong,
}

impl RefusedHead {
    /// What a connection's `error` says hyper refused and answered, or
    /// `None` for any other end (a client that went away, a timeout, an
    /// HTTP/2 preface, which hyper closes without an answer).
    pub fn of(error: &hyper::Error) -> Option<RefusedHead> {
        if !error.is_parse() {
            return None;
        }
        // hyper names the kinds only in its messages.
        let text = error.to_string();
        if text.contains("HTTP2") {
            None
        } else if error.is_parse_too_large() && text.contains("URI") {
            Some(RefusedHead::TargetTooLong)
        } else if error.is_parse_too_large() {
            Some(RefusedHead::TooLarge)
        } else {
            Some(RefusedHead::Malformed)
        }
    }

    /// The status hyper answered with.
    pub fn status(self) -> u16 {
        match self {
            RefusedHead::Malformed => 400,
            RefusedHead::TooLarge => 431,
            RefusedHead::TargetTooLong => 414,
        }
    }

    /// Its outcome (`contract::outcome::NAMES`): `malformed_head`, or for
    /// a head or target too long the module's own outcome for one.
    pub fn outcome(self) -> u8 {
        match self {
            RefusedHead::Malformed => contract::outcome::MALFORMED_HEAD,
            RefusedHead::TooLarge => contract::outcome::id("head_too_large"),
            RefusedHead::TargetTooLong => contract::outcome::id("target_too_long"),
        }
    }
}

/// Told of each request head hyper refused on a connection, with its peer.
pub type OnRefused = Arc<dyn Fn(SocketAddr, RefusedHead) + Send + Sync>;

/// Connections past the cap being answered "gateway busy" at once; more are
/// closed without an answer (each answer holds a descriptor for a moment).
pub const BUSY_ANSWERS: usize = 32;

/// How long a "gateway busy" answer may take to write and the client to close.
pub const BUSY_LINGER: Duration = Duration::from_secs(1);

/// Answers a connection past the cap with 503 "gateway busy" and closes it,
/// reading what the client sent meanwhile so that the close does not reset
/// the connection before the client has read the answer.
fn answer_busy(mut stream: TcpStream, busy: &Arc<Semaphore>) {
    let Ok(answering) = Arc::clone(busy).try_acquire_owned() else { return };
    tokio::spawn(async move {
        let body = HostAnswer::GatewayBusy.body();
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = tokio::time::timeout(BUSY_LINGER, async {
            stream.write_all(answer.as_bytes()).await?;
            stream.shutdown().await?;
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
            Ok::<_, std::io::Error>(())
        })
        .await;
        drop(answering);
    });
}

/// The longest pause between two failing `accept` calls.
pub const MAX_ACCEPT_PAUSE: Duration = Duration::from_secs(1);

/// The first pause after a failing `accept`.
pub const FIRST_ACCEPT_PAUSE: Duration = Duration::from_millis(5);

/// How often at most a failing `accept` is reported on stderr.
const ACCEPT_REPORT_EVERY: Duration = Duration::from_secs(10);

/// Pauses after failing `accept` calls: doubling from [`FIRST_ACCEPT_PAUSE`]
/// to [`MAX_ACCEPT_PAUSE`], none after a success.
#[derive(Debug, Default)]
struct Backoff {
    pause: Option<Duration>,
    reported: Option<Instant>,
}

impl Backoff {
    fn succeeded(&mut self) {
        self.pause = None;
    }

    fn failed(&mut self, error: &std::io::Error) {
        self.pause = Some(self.pause.map_or(FIRST_ACCEPT_PAUSE, |p| (p * 2).min(MAX_ACCEPT_PAUSE)));
        if self.reported.is_none_or(|at| at.elapsed() >= ACCEPT_REPORT_EVERY) {
            self.reported = Some(Instant::now());
            eprintln!("accept failed: {error}; retrying after pauses of up to {MAX_ACCEPT_PAUSE:?}");
        }
    }
}

/// When a connection last received a byte or finished a request, and how
/// many requests it has under way: what the idle timeout looks at.
#[derive(Debug)]
struct Activity {
    origin: Instant,
    last_millis: AtomicU64,
    under_way: AtomicUsize,
}

impl Activity {
    fn new() -> Activity {
        Activity { origin: Instant::now(), last_millis: AtomicU64::new(0), under_way: AtomicUsize::new(0) }
    }

    fn touch(&self) {
        let millis = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_millis.store(millis, Ordering::Relaxed);
    }

    fn begin(self: &Arc<Self>) -> UnderWay {
        self.under_way.fetch_add(1, Ordering::Relaxed);
        UnderWay(Arc::clone(self))
    }

    /// When the connection goes idle if nothing happens meanwhile; None when
    /// it already has.
    fn idle_deadline(&self, idle: Duration) -> Option<tokio::time::Instant> {
        if self.under_way.load(Ordering::Relaxed) > 0 {
            return Some(tokio::time::Instant::now() + idle);
        }
        let last = self.origin + Duration::from_millis(self.last_millis.load(Ordering::Relaxed));
        let deadline = last + idle;
        (deadline > Instant::now()).then(|| deadline.into())
    }
}

/// A request under way on a connection, from its head until its response
/// has been sent (its body dropped).
#[derive(Debug)]
struct UnderWay(Arc<Activity>);

impl Drop for UnderWay {
    fn drop(&mut self) {
        self.0.touch();
        self.0.under_way.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body holds its request's [`UnderWay`] until the body is
/// dropped, and lets every frame through.
impl Watch for UnderWay {
    fn frame(&mut self, _cx: &mut Context<'_>, polled: Polled) -> Polled {
        polled
    }
}

/// A client's connection notes when a byte arrives.
impl OnRead for Arc<Activity> {
    fn read(&self) {
        self.touch();
    }
}

/// Binds `addr` and prints `listening on http://ADDR` (the actual port when
/// `addr` asked for port 0) on stdout, flushed, for scripts and tests.
pub async fn bind(addr: SocketAddr, what: &str) -> std::io::Result<TcpListener> {
    bind_for(addr, what, "http").await
}

/// [`bind`] for clients of `scheme` (`https` when they speak TLS).
pub async fn bind_for(addr: SocketAddr, what: &str, scheme: &str) -> std::io::Result<TcpListener> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    println!("{what} listening on {scheme}://{local}");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    Ok(listener)
}
