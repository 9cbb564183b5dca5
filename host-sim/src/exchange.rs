//! One request sent upstream under [`ForwardLimits`]: whatever the upstream
//! request is, it is sent here, and here it is bounded.
//!
//! - The whole exchange (waiting for a connection, connecting, sending, the
//!   response head and body) has one deadline: 504 before the response head,
//!   a cut connection after it.
//! - Each upstream gets at most so many connections ([`crate::gate`]); a
//!   request waits for one a bounded time, then gets 503.
//! - The request body is counted as it streams (413 past the maximum, never
//!   buffered) and may not stall (408).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use hyper::body::{Body as _, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

use crate::body::{Polled, Received, Watch, Watched, received};
use crate::gate::{Gate, QueueTimedOut};
use crate::limits::ForwardLimits;

/// How long an idle upstream connection is kept for reuse.
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Why an exchange gave the client no upstream response. Each knows the
/// status and the `error_description` the client gets; the details (the
/// `Display` text) go to the access log.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The request body is larger than the maximum (by its `Content-Length`,
    /// or counted as it streamed).
    #[error("request body larger than {0} bytes")]
    BodyTooLarge(u64),
    /// The request body stalled longer than the body timeout.
    #[error("request body stalled for {0:?}")]
    BodyStalled(Duration),
    /// No connection to the upstream became free within the queue timeout.
    #[error("upstream busy: {0}")]
    Busy(#[source] QueueTimedOut),
    /// The exchange did not finish within the upstream timeout.
    #[error("upstream timed out after {0:?}")]
    TimedOut(Duration),
    /// The upstream could not be reached or broke off.
    #[error("upstream unreachable: {}", chain(.0))]
    Unreachable(#[source] hyper_util::client::legacy::Error),
}

impl ExchangeError {
    /// The HTTP status the client gets.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.answer().status()).unwrap_or(StatusCode::BAD_GATEWAY)
    }

    /// The answer the client gets (`worker/ABI.md`, "Answers the host makes itself").
    pub fn answer(&self) -> contract::fields::HostAnswer {
        use contract::fields::HostAnswer;
        match self {
            ExchangeError::BodyTooLarge(_) => HostAnswer::BodyTooLarge,
            ExchangeError::BodyStalled(_) => HostAnswer::BodyTimedOut,
            ExchangeError::Busy(_) => HostAnswer::UpstreamBusy,
            ExchangeError::TimedOut(_) => HostAnswer::UpstreamTimedOut,
            ExchangeError::Unreachable(_) => HostAnswer::UpstreamUnavailable,
        }
    }
}

/// An error and every cause, joined by `: `.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Sends requests upstream over a pooled HTTP/1.1 client within the limits.
#[derive(Debug, Clone)]
pub struct Exchange {
    client: Client<Gate, RequestBody>,
    gate: Gate,
    limits: ForwardLimits,
}

impl Exchange {
    /// A client whose connections are capped per upstream by `limits`.
    pub fn new(limits: ForwardLimits) -> Exchange {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(limits.connect_timeout));
        let gate = Gate::new(connector, limits.max_connections, limits.queue_timeout);
        Exchange { client: pooled(gate.clone(), limits), gate, limits }
    }

    /// The same limits and the same per-upstream connection cap (shared
    /// with `self`), over a pool of its own: for a thread that keeps its
    /// upstream connections to itself, so that no exchange waits on a
    /// connection another thread drives.
    pub fn own_pool(&self) -> Exchange {
        Exchange {
            client: pooled(self.gate.clone(), self.limits),
            gate: self.gate.clone(),
            limits: self.limits,
        }
    }

    /// Sends `request` (already addressed to its upstream) and returns the
    /// response, whose body keeps the exchange's deadline.
    pub async fn send(&self, request: Request<Incoming>) -> Result<Response<ResponseBody>, ExchangeError> {
        let limits = self.limits;
        if request.body().size_hint().lower() > limits.max_body {
            return Err(ExchangeError::BodyTooLarge(limits.max_body));
        }
        let mut deadline = Box::pin(tokio::time::sleep(limits.timeout));
        let (failed, mut body_failure) = oneshot::channel();
        let request = request.map(|inner| {
            let watch = BodyLimits { seen: 0, limits, stall: None, waiting: false, failed: Some(failed) };
            Watched::new(received(inner), watch)
        });
        let response = tokio::select! {
            response = self.client.request(request) => response,
            Ok(failure) = &mut body_failure => return Err(failure),
            () = deadline.as_mut() => return Err(ExchangeError::TimedOut(limits.timeout)),
        };
        // A body cut short by a limit also fails the request: report the limit.
        if let Ok(failure) = body_failure.try_recv() {
            return Err(failure);
        }
        let response = response.map_err(|e| match queue_timed_out(&e) {
            Some(queued) => ExchangeError::Busy(queued),
            None => ExchangeError::Unreachable(e),
        })?;
        Ok(response
            .map(|inner| Watched::new(received(inner), Deadline { deadline, timeout: limits.timeout })))
    }
}

/// A pooled HTTP/1.1 client whose connections go through `gate`.
fn pooled(gate: Gate, limits: ForwardLimits) -> Client<Gate, RequestBody> {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .pool_max_idle_per_host(limits.max_connections)
        .build(gate)
}

/// The gate's error among `error`'s causes, if the connection could not be
/// had for waiting too long.
fn queue_timed_out(error: &hyper_util::client::legacy::Error) -> Option<QueueTimedOut> {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(queued) = cause.downcast_ref::<QueueTimedOut>() {
            return Some(queued.clone());
        }
        source = cause.source();
    }
    None
}

/// The client's request body on its way upstream: counted against the
/// maximum and watched for stalls ([`BodyLimits`]).
pub type RequestBody = Watched<Received, BodyLimits>;

/// The upstream's response body on its way to the client, cut off with an
/// error if it is still streaming at the exchange's deadline ([`Deadline`]).
pub type ResponseBody = Watched<Received, Deadline>;

/// The limits a request body is held to on its way upstream. A limit ends
/// the body with an error (which aborts the upstream request) and tells the
/// exchange which limit it was.
#[derive(Debug)]
pub struct BodyLimits {
    seen: u64,
    limits: ForwardLimits,
    /// Fires when the body has been waited for longer than the body timeout.
    stall: Option<Pin<Box<Sleep>>>,
    /// True while the client is being waited for (the stall timer runs).
    waiting: bool,
    failed: Option<oneshot::Sender<ExchangeError>>,
}

impl BodyLimits {
    fn fail(&mut self, error: fn(&ForwardLimits) -> ExchangeError) -> Polled {
        if let Some(failed) = self.failed.take() {
            let _ = failed.send(error(&self.limits));
        }
        Poll::Ready(Some(Err(Box::new(error(&self.limits)))))
    }
}

impl Watch for BodyLimits {
    fn frame(&mut self, cx: &mut Context<'_>, polled: Polled) -> Polled {
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                self.waiting = false;
                if let Some(data) = frame.data_ref() {
                    self.seen = self.seen.saturating_add(data.len() as u64);
                    if self.seen > self.limits.max_body {
                        return self.fail(|l| ExchangeError::BodyTooLarge(l.max_body));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                // The stall timer counts only time spent waiting for the
                // client, not time the upstream took to ask for more.
                if !self.waiting {
                    self.waiting = true;
                    let deadline = Instant::now() + self.limits.body_timeout;
                    match &mut self.stall {
                        Some(stall) => stall.as_mut().reset(deadline),
                        None => self.stall = Some(Box::pin(tokio::time::sleep_until(deadline))),
                    }
                }
                if let Some(stall) = &mut self.stall
                    && stall.as_mut().poll(cx).is_ready()
                {
                    return self.fail(|l| ExchangeError::BodyStalled(l.body_timeout));
                }
                Poll::Pending
            }
            ended => ended,
        }
    }
}

/// The exchange's deadline, which a response body still streaming at it
/// is cut at.
#[derive(Debug)]
pub struct Deadline {
    deadline: Pin<Box<Sleep>>,
    timeout: Duration,
}

impl Watch for Deadline {
    fn frame(&mut self, cx: &mut Context<'_>, polled: Polled) -> Polled {
        match polled {
            Poll::Pending if self.deadline.as_mut().poll(cx).is_ready() => {
                Poll::Ready(Some(Err(Box::new(ExchangeError::TimedOut(self.timeout)))))
            }
            other => other,
        }
    }
}
