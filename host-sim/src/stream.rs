//! The one IO wrapper, [`Attached`]: a stream with something attached that
//! lives exactly as long as the stream and hears of every byte read. A
//! client's connection carries its activity, which the idle timeout reads
//! ([`crate::listen`]); an upstream connection carries its upstream's
//! permit, given back when the connection closes ([`crate::gate`]).

use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What is attached to a stream: told when bytes arrive (by default, nothing
/// is done with that).
pub trait OnRead {
    /// Bytes arrived on the stream.
    fn read(&self) {}
}

/// `stream` with `attached` beside it; reads and writes go to the stream.
#[derive(Debug)]
pub struct Attached<S, A> {
    stream: S,
    attached: A,
}

impl<S, A> Attached<S, A> {
    /// Attaches `attached` to `stream`.
    pub fn new(stream: S, attached: A) -> Attached<S, A> {
        Attached { stream, attached }
    }

    /// The stream.
    pub fn stream(&self) -> &S {
        &self.stream
    }
}

impl<S: AsyncRead + Unpin, A: OnRead + Unpin> AsyncRead for Attached<S, A> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.attached.read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin, A: Unpin> AsyncWrite for Attached<S, A> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
