//! HTTP/1.1 server plumbing shared by `serve` and `upstream`: a multi-thread
//! tokio runtime with a worker per core, the accept loop with bounded
//! request heads, and graceful shutdown on SIGINT and SIGTERM.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

/// The response body type of both servers: a buffered or a streamed body.
pub type Body = BoxBody<Bytes, hyper::Error>;

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
pub async fn serve<H, F>(listener: TcpListener, handler: H, shutdown: impl Future<Output = ()>)
where
    H: Fn(Request<Incoming>, SocketAddr) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, remote)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let handler = handler.clone();
                let service = hyper::service::service_fn(move |request| {
                    let handler = handler.clone();
                    async move { Ok::<_, Infallible>(handler(request, remote).await) }
                });
                let mut builder = hyper::server::conn::http1::Builder::new();
                // Bounded request heads: hyper answers 431 past these.
                builder.max_buf_size(MAX_BUF).max_headers(MAX_HEADERS);
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                let watched = graceful.watch(connection);
                tokio::spawn(async move {
                    let _ = watched.await;
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
}

/// Binds `addr` and prints `listening on http://ADDR` (the actual port when
/// `addr` asked for port 0) on stdout, flushed, for scripts and tests.
pub async fn bind(addr: SocketAddr, what: &str) -> std::io::Result<TcpListener> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    println!("{what} listening on http://{local}");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    Ok(listener)
}

/// A buffered body.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    use http_body_util::BodyExt as _;
    http_body_util::Full::new(bytes.into()).map_err(|never| match never {}).boxed()
}
