//! Serving from several threads without sharing a request between them:
//! one acceptor hands each connection to the serving thread with the
//! fewest open connections, and that thread serves it to the end on a
//! single-threaded runtime of its own. A connection, its requests, the
//! module instance that decides them and the upstream connections that
//! carry them stay on one thread, so no request waits for another thread
//! to be woken (Envoy's workers, with its exact connection balance, work
//! the same way). Against one multi-thread runtime, this took `host-sim
//! serve` from 34 to 27 µs of CPU per forwarded request
//! (`docs/PERFORMANCE.md`). Each thread's handler brings its own module
//! instances too (`serve.rs`, `Gateway::for_thread`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyper::body::Incoming;
use hyper::{Request, Response};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, mpsc, watch};
use tokio_rustls::TlsAcceptor;

use crate::body::Body;
use crate::limits::ClientLimits;
use crate::listen::{self, Admission, OnRefused};
use crate::metrics::Connections;

/// What the serving threads tell besides their responses.
#[derive(Clone, Default)]
pub struct Watchers {
    /// Counts the connections accepted and open.
    pub connections: Option<Connections>,
    /// Told of each request head hyper refused and answered itself.
    pub refused: Option<OnRefused>,
}

/// A connection on its way from the acceptor to a serving thread: the
/// socket (off the acceptor's runtime), the peer and its slot.
type Handoff = (std::net::TcpStream, SocketAddr, OwnedSemaphorePermit);

/// One serving thread as the acceptor sees it.
struct Worker {
    connections: mpsc::UnboundedSender<Handoff>,
    /// Its connections open now (handed over and not yet ended).
    open: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

/// Serves HTTP/1.1 on `listener` from one serving thread per handler in
/// `handlers` until `shutdown` resolves, then lets open connections finish
/// (at most [`listen::SHUTDOWN_GRACE`]). Accepting runs on the caller's
/// runtime. The limits are those of [`listen::serve`], the connection cap
/// counted over all threads; `watchers` are told of the connections and
/// of the request heads hyper refused. An error means that there is no handler, or
/// that a thread could not be started (before any connection was accepted).
pub async fn serve<H, F>(
    listener: TcpListener,
    handlers: Vec<H>,
    limits: ClientLimits,
    tls: Option<TlsAcceptor>,
    watchers: Watchers,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    H: Fn(Request<Incoming>, SocketAddr) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    if handlers.is_empty() {
        return Err(std::io::Error::other("no serving thread"));
    }
    let admission = Admission::new(&limits);
    let (stop, stopping) = watch::channel(false);
    // Every runtime is made before any thread starts: what can fail, fails here.
    let runtimes = handlers.iter().map(|_| listen::thread_runtime()).collect::<std::io::Result<Vec<_>>>()?;
    let mut workers = Vec::with_capacity(runtimes.len());
    for (index, (runtime, handler)) in runtimes.into_iter().zip(handlers).enumerate() {
        let (connections, handed) = mpsc::unbounded_channel();
        let open = Arc::new(AtomicUsize::new(0));
        let serving = Serving {
            handed,
            open: Arc::clone(&open),
            admission: admission.clone(),
            limits,
            stopping: stopping.clone(),
            watchers: watchers.clone(),
            tls: tls.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("serve-{index}"))
            .spawn(move || runtime.block_on(serving.run(handler)))?;
        workers.push(Worker { connections, open, thread });
    }
    listen::accept(&listener, &admission, shutdown, |stream, remote, slot| {
        hand_over(&workers, stream, remote, slot)
    })
    .await;
    drop(listener);
    let _ = stop.send(true);
    // Closing the channels tells each thread that no connection follows.
    let threads: Vec<_> = workers.into_iter().map(|worker| worker.thread).collect();
    let joined =
        tokio::task::spawn_blocking(move || threads.into_iter().all(|thread| thread.join().is_ok())).await;
    if joined.is_ok_and(|all| all) { Ok(()) } else { Err(std::io::Error::other("a serving thread panicked")) }
}

/// Hands a connection to the thread with the fewest open connections.
fn hand_over(workers: &[Worker], stream: TcpStream, remote: SocketAddr, slot: OwnedSemaphorePermit) {
    let Some(worker) = workers.iter().min_by_key(|worker| worker.open.load(Ordering::Relaxed)) else {
        return;
    };
    // Off this runtime's reactor, onto the serving thread's (a failure
    // closes the connection; its slot goes back with it).
    let Ok(stream) = stream.into_std() else { return };
    worker.open.fetch_add(1, Ordering::Relaxed);
    if worker.connections.send((stream, remote, slot)).is_err() {
        worker.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A serving thread's side: the connections handed to it, served on its runtime.
struct Serving {
    handed: mpsc::UnboundedReceiver<Handoff>,
    open: Arc<AtomicUsize>,
    admission: Admission,
    limits: ClientLimits,
    stopping: watch::Receiver<bool>,
    /// The metrics' connection counters and the refused heads' watcher.
    watchers: Watchers,
    /// Clients speak TLS: the handshake comes first, on the serving thread.
    tls: Option<TlsAcceptor>,
}

impl Serving {
    /// Serves every connection handed over, until the acceptor stops and
    /// every connection (on every thread) has ended or the grace has run out.
    async fn run<H, F>(mut self, handler: H)
    where
        H: Fn(Request<Incoming>, SocketAddr) -> F + Clone + Send + Sync + 'static,
        F: Future<Output = Response<Body>> + Send + 'static,
    {
        while let Some((stream, remote, slot)) = self.handed.recv().await {
            let open = Arc::clone(&self.open);
            let Ok(stream) = TcpStream::from_std(stream) else {
                open.fetch_sub(1, Ordering::Relaxed);
                continue;
            };
            let _ = stream.set_nodelay(true);
            let (handler, limits, stopping, tls) =
                (handler.clone(), self.limits, self.stopping.clone(), self.tls.clone());
            // A TLS handshake is bounded as a request head is; a client
            // that fails it is closed, its slot given back.
            let served = async move {
                match tls {
                    None => listen::connection(stream, None, remote, handler, limits, slot, stopping).await,
                    Some(tls) => match crate::tls::handshake(&tls, stream, limits.head_timeout).await {
                        Some((stream, session)) => {
                            listen::connection(stream, Some(session), remote, handler, limits, slot, stopping)
                                .await
                        }
                        None => None,
                    },
                }
            };
            let Watchers { connections, refused } = self.watchers.clone();
            if let Some(counted) = &connections {
                counted.accepted.inc();
                counted.open.inc();
            }
            tokio::spawn(async move {
                let head = served.await;
                open.fetch_sub(1, Ordering::Relaxed);
                if let Some(counted) = connections {
                    counted.open.dec();
                }
                if let (Some(refused), Some(head)) = (refused, head) {
                    refused(remote, head);
                }
            });
        }
        self.admission.drained(&self.limits).await;
    }
}
