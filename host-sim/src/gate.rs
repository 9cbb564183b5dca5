//! A cap on the connections open to each upstream: a connector that takes a
//! permit for the upstream before connecting and holds it in the connection
//! until the connection is dropped (closed), so a slow upstream never gets
//! more than its share however many requests queue for it. A request waits
//! for a permit at most the queue timeout.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::body::BoxError;
use crate::stream::{Attached, OnRead};

/// No connection to an upstream became free in time.
#[derive(Debug, Clone, thiserror::Error)]
#[error("all {max} connections to {upstream} in use for {waited:?}")]
pub struct QueueTimedOut {
    /// The upstream's authority (`host:port`).
    pub upstream: String,
    /// Its connection cap.
    pub max: usize,
    /// How long the request waited.
    pub waited: Duration,
}

/// The permits of every upstream seen so far, by authority.
#[derive(Debug)]
struct Permits {
    max: usize,
    queue_timeout: Duration,
    by_upstream: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Permits {
    fn of(&self, upstream: &str) -> Arc<Semaphore> {
        let mut map = self.by_upstream.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(permits) = map.get(upstream) {
            return Arc::clone(permits);
        }
        let permits = Arc::new(Semaphore::new(self.max));
        map.insert(upstream.to_owned(), Arc::clone(&permits));
        permits
    }
}

/// A connector that opens at most `max` connections per upstream at once.
#[derive(Debug, Clone)]
pub struct Gate {
    inner: HttpConnector,
    permits: Arc<Permits>,
}

/// A connection to an upstream, holding its upstream's permit until it is
/// dropped (closed).
pub type Gated = TokioIo<Attached<TcpStream, OwnedSemaphorePermit>>;

impl Gate {
    /// Wraps `inner`: at most `max` connections per upstream, waiting at most
    /// `queue_timeout` for one.
    pub fn new(inner: HttpConnector, max: usize, queue_timeout: Duration) -> Gate {
        let permits = Permits { max, queue_timeout, by_upstream: Mutex::new(HashMap::new()) };
        Gate { inner, permits: Arc::new(permits) }
    }
}

impl tower_service::Service<Uri> for Gate {
    type Response = Gated;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Gated, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let upstream = uri.authority().map_or("", |a| a.as_str()).to_owned();
        let permits = Arc::clone(&self.permits);
        // Take the connector that was made ready; leave a fresh clone behind.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        Box::pin(async move {
            let waited = permits.queue_timeout;
            let permit = match tokio::time::timeout(waited, permits.of(&upstream).acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                // The semaphore is never closed; time out either way.
                Ok(Err(_)) | Err(_) => {
                    return Err(QueueTimedOut { upstream, max: permits.max, waited }.into());
                }
            };
            let io = inner.call(uri).await.map_err(BoxError::from)?;
            Ok(TokioIo::new(Attached::new(io.into_inner(), permit)))
        })
    }
}

/// An upstream connection's permit only needs to live as long as it.
impl OnRead for OwnedSemaphorePermit {}

impl Connection for Attached<TcpStream, OwnedSemaphorePermit> {
    fn connected(&self) -> Connected {
        self.stream().connected()
    }
}
