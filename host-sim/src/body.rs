//! Bodies: the one body type both servers answer with, and the one body
//! wrapper, [`Watched`]. A wrapped body streams through unchanged while a
//! [`Watch`] looks at each poll: the request body is counted against its
//! limits on the way upstream ([`crate::exchange`]), the response body is
//! cut at the exchange's deadline, and a response marks its request done
//! when it is dropped ([`crate::listen`]). Each of those is a `Watch`; the
//! hyper plumbing is written once, here.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::BodyExt as _;
use http_body_util::combinators::{BoxBody, MapErr};
use hyper::body::{Frame, Incoming, SizeHint};

/// Any error a body may end with: the peer's, or a limit's.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The response body of both servers: a buffered or a streamed body.
pub type Body = BoxBody<Bytes, BoxError>;

/// What one poll of a body gives.
pub type Polled = Poll<Option<Result<Frame<Bytes>, BoxError>>>;

/// A body as it arrives from a client or an upstream, its error boxed.
pub type Received = MapErr<Incoming, fn(hyper::Error) -> BoxError>;

/// `body` with its error boxed, ready to be [`Watched`].
pub fn received(body: Incoming) -> Received {
    body.map_err(|e| -> BoxError { Box::new(e) })
}

/// A buffered body.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(bytes.into()).map_err(|never| match never {}).boxed()
}

/// What a [`Watched`] body does with each poll of the body it wraps.
pub trait Watch {
    /// Sees what the wrapped body gave and returns what the reader gets:
    /// the same, or an error that ends the body.
    fn frame(&mut self, cx: &mut Context<'_>, polled: Polled) -> Polled;
}

/// A body that hands every poll of `inner` to `watch`. Its end and size are
/// the inner body's.
#[derive(Debug)]
pub struct Watched<B, W> {
    inner: B,
    watch: W,
}

impl<B, W> Watched<B, W> {
    /// `inner`, watched by `watch`.
    pub fn new(inner: B, watch: W) -> Watched<B, W> {
        Watched { inner, watch }
    }
}

impl<B, W> hyper::body::Body for Watched<B, W>
where
    B: hyper::body::Body<Data = Bytes, Error = BoxError> + Unpin,
    W: Watch + Unpin,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        this.watch.frame(cx, polled)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
