//! `host-sim upstream`: a small echo upstream for the demo and the tests.
//! It answers every request with JSON describing what arrived: method, path,
//! query, the `X-Gateway-Subject` header, whether an `Authorization` header
//! arrived (it never should), and the body's length.

use std::net::SocketAddr;
use std::process::ExitCode;

use http::header::{self, HeaderValue};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::{Request, Response};

use crate::body::{Body, full};
use crate::exchange::POOL_IDLE_TIMEOUT;
use crate::limits::{self, ClientLimits};
use crate::listen;
use contract::fields::SUBJECT as SUBJECT_HEADER;

/// `host-sim upstream` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct UpstreamArgs {
    /// Where to listen (port 0: any free port, printed on stdout).
    #[arg(long, default_value = "127.0.0.1:9101")]
    pub listen: Vec<SocketAddr>,
}

/// How long a connection may stay open between requests: twice as long as
/// the gateway keeps an idle upstream connection.
pub const IDLE_TIMEOUT: std::time::Duration = POOL_IDLE_TIMEOUT.saturating_mul(2);

/// Answers `request` with the JSON description of what arrived.
pub async fn echo(request: Request<Incoming>, local: SocketAddr) -> Response<Body> {
    let (parts, body) = request.into_parts();
    // Count the body as it streams in, without keeping it.
    let mut body = body;
    let mut length: u64 = 0;
    let mut body_error = None;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    length += data.len() as u64;
                }
            }
            Err(e) => {
                body_error = Some(e.to_string());
                break;
            }
        }
    }
    let text = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let answer = serde_json::json!({
        "upstream": local.to_string(),
        "method": parts.method.as_str(),
        "path": parts.uri.path(),
        "query": parts.uri.query(),
        "subject": text(SUBJECT_HEADER),
        "authorization": parts.headers.contains_key(header::AUTHORIZATION),
        "body_length": length,
        "body_error": body_error,
        "content_type": text("content-type"),
    });
    let mut response = Response::new(full(answer.to_string()));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Runs `host-sim upstream`: one echo server per `--listen` address until SIGINT or SIGTERM.
pub fn run(args: &UpstreamArgs) -> ExitCode {
    let runtime = match listen::runtime(listen::cores()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Upstream connections stay open between requests longer than the
    // gateway keeps them idle in its pool, so the gateway never sends a
    // request on a connection this end is closing.
    let limits = ClientLimits {
        head_timeout: IDLE_TIMEOUT,
        idle_timeout: IDLE_TIMEOUT,
        ..ClientLimits::defaults(limits::raise_descriptor_limit())
    };
    runtime.block_on(async {
        let mut servers = Vec::new();
        let (stop_tx, _) = tokio::sync::broadcast::channel::<()>(1);
        for addr in &args.listen {
            let listener = match listen::bind(*addr, "upstream").await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("error: cannot listen on {addr}: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let local = listener.local_addr().unwrap_or(*addr);
            let mut stop = stop_tx.subscribe();
            servers.push(tokio::spawn(listen::serve(
                listener,
                limits,
                move |request, _remote| echo(request, local),
                async move {
                    let _ = stop.recv().await;
                },
            )));
        }
        listen::shutdown_signal().await;
        let _ = stop_tx.send(());
        for server in servers {
            let _ = server.await;
        }
        ExitCode::SUCCESS
    })
}
