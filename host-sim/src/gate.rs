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
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::listen::BoxError;

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
pub struct Gate<C> {
    inner: C,
    permits: Arc<Permits>,
}

impl<C> Gate<C> {
    /// Wraps `inner`: at most `max` connections per upstream, waiting at most
    /// `queue_timeout` for one.
    pub fn new(inner: C, max: usize, queue_timeout: Duration) -> Gate<C> {
        let permits = Permits { max, queue_timeout, by_upstream: Mutex::new(HashMap::new()) };
        Gate { inner, permits: Arc::new(permits) }
    }
}

impl<C> tower_service::Service<Uri> for Gate<C>
where
    C: tower_service::Service<Uri> + Clone + Send + 'static,
    C::Future: Send,
    C::Error: Into<BoxError>,
{
    type Response = Gated<C::Response>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Gated<C::Response>, BoxError>> + Send>>;

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
            let io = inner.call(uri).await.map_err(Into::into)?;
            Ok(Gated { io, _permit: permit })
        })
    }
}

/// A connection holding its upstream's permit until it is dropped.
#[derive(Debug)]
pub struct Gated<T> {
    io: T,
    _permit: OwnedSemaphorePermit,
}

impl<T: Read + Unpin> Read for Gated<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for Gated<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<T: Connection> Connection for Gated<T> {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}
