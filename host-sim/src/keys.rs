//! Fetching the keys of a module that fetches them (`worker/ABI.md`, "Keys
//! fetched at run time"): one task per key source fetches its document
//! over HTTP on the module's schedule and hands the bytes to the module
//! (`runtime::Runtime::install_keys`), which validates and installs them.
//! Nothing here reads a key or a document: the module says what was
//! installed or why not, and this file logs it in one line.
//!
//! - **Limits.** `GET`, no redirect followed, the whole exchange within the
//!   source's `timeout_ms`, status 200 only, the body cut at the module's
//!   document capacity (a larger one is a failed fetch).
//! - **Schedule.** The contract's ([`contract::key_schedule`], as the Envoy
//!   filter keeps it): again after `refresh_secs`, or the response's
//!   `Cache-Control: max-age` within `refetch_secs..=refresh_secs`; after a
//!   failure, retries at 1, 2, 4, ... seconds, at most `refetch_secs`
//!   apart. An answer that asks for the issuer's keys (a `~` line) starts a
//!   fetch unless one started less than `refetch_secs` ago: a flood of
//!   made-up kids costs the provider one request per `refetch_secs`.
//! - **Transport.** host-sim has no TLS client: a source whose URL (after
//!   `--upstream-override`) is not `http://` is refused at start.
//!
//! Log lines, on stderr, as every host writes them:
//! `keys: issuer <n> <url>: installed ... | refused: <reason> | fetch failed: <why>`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use contract::key_schedule::Schedule;
use http::header::CACHE_CONTROL;
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use runtime::{KeySourceBuf, Runtime, SourceKind, unix_now};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::metrics::Metrics;

/// Why a fetch failed: the tail of its log line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The provider answered with another status than 200.
    #[error("status {0}")]
    Status(u16),
    /// The body passed the module's document capacity.
    #[error("larger than {0} bytes")]
    TooLarge(usize),
    /// The exchange took longer than the source's timeout.
    #[error("timed out")]
    TimedOut,
    /// The URL is not one host-sim can fetch.
    #[error("{0}")]
    Url(String),
    /// The connection failed or broke.
    #[error("{0}")]
    Connection(String),
}

/// What a source task learned from one round.
enum Round {
    /// Installed, with the response's `Cache-Control: max-age` in seconds.
    Installed(Option<u64>),
    /// Failed or refused; retry with backoff.
    Failed,
}

/// The key fetching of one `serve`: a task per source.
#[derive(Debug)]
pub struct KeyFetcher {
    /// By issuer index: the notification a `~` answer sends.
    wanted: HashMap<u8, Arc<Notify>>,
    /// How many sources have installed a document at least once.
    ready: watch::Receiver<usize>,
    sources: usize,
}

impl KeyFetcher {
    /// Checks the module's sources against what host-sim can fetch: the
    /// error names the source.
    pub fn check(sources: &[KeySourceBuf], overrides: &HashMap<String, String>) -> Result<(), String> {
        for source in sources {
            let url = mapped(&source.url, overrides);
            if !url.starts_with("http://") {
                return Err(format!(
                    "keys: issuer {} {}: host-sim fetches over plain http only (it has no TLS client); \
                     run an https provider on workerd or Envoy, or map it to a local http mirror with --upstream-override",
                    source.issuer, source.url
                ));
            }
        }
        Ok(())
    }

    /// Starts one task per source on the current tokio runtime.
    pub fn start(
        runtime: Arc<Runtime>,
        sources: Vec<KeySourceBuf>,
        overrides: HashMap<String, String>,
        metrics: Option<Arc<Metrics>>,
    ) -> KeyFetcher {
        let client: Client<HttpConnector, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        let (ready_tx, ready) = watch::channel(0usize);
        let ready_tx = Arc::new(ready_tx);
        let overrides = Arc::new(overrides);
        let mut wanted = HashMap::new();
        let count = sources.len();
        for source in sources {
            let notify = Arc::new(Notify::new());
            wanted.insert(source.issuer, Arc::clone(&notify));
            let task = SourceTask {
                runtime: Arc::clone(&runtime),
                client: client.clone(),
                overrides: Arc::clone(&overrides),
                source,
                notify,
                ready: Arc::clone(&ready_tx),
                metrics: metrics.clone(),
            };
            tokio::spawn(task.run());
        }
        KeyFetcher { wanted, ready, sources: count }
    }

    /// An answer asked for issuer `issuer`'s keys: its task fetches unless
    /// it started a fetch less than `refetch_secs` ago.
    pub fn want(&self, issuer: u8) {
        if let Some(notify) = self.wanted.get(&issuer) {
            notify.notify_one();
        }
    }

    /// Resolves once every source has installed a document.
    pub async fn all_installed(&self) {
        let mut ready = self.ready.clone();
        let sources = self.sources;
        let _ = ready.wait_for(|&n| n >= sources).await;
    }
}

struct SourceTask {
    runtime: Arc<Runtime>,
    client: Client<HttpConnector, Empty<Bytes>>,
    overrides: Arc<HashMap<String, String>>,
    source: KeySourceBuf,
    notify: Arc<Notify>,
    ready: Arc<watch::Sender<usize>>,
    metrics: Option<Arc<Metrics>>,
}

impl SourceTask {
    async fn run(self) {
        // The schedule's clock: milliseconds since the task started, monotonic.
        let epoch = Instant::now();
        let now = || u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut schedule = Schedule::new(self.source.refresh_secs, self.source.refetch_secs.max(1));
        let mut installed_once = false;
        loop {
            // Wait until due; an answer that wants the keys makes the fetch
            // due at once, unless one started within `refetch_secs`.
            while !schedule.due(now()) {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(schedule.due_in(now()))) => {}
                    () = self.notify.notified() => {
                        schedule.ask(now());
                    }
                }
            }
            schedule.start(now());
            match self.round().await {
                Round::Installed(max_age) => {
                    schedule.succeeded(now(), max_age);
                    if !installed_once {
                        installed_once = true;
                        self.ready.send_modify(|n| *n += 1);
                    }
                }
                Round::Failed => schedule.failed(now()),
            }
        }
    }

    /// One round: discovery when the source is a discovery document, then
    /// the JWKS document, handed to the module. Logs the outcome.
    async fn round(&self) -> Round {
        let issuer = self.source.issuer;
        let jwks_url = match self.source.kind {
            SourceKind::Jwks => self.source.url.clone(),
            SourceKind::Discovery => {
                let document = match self.fetch(&self.source.url).await {
                    Ok((document, _)) => document,
                    Err(e) => return self.log_failed(&self.source.url, &e),
                };
                match self.runtime.discovered(issuer, &document) {
                    Ok(Ok(uri)) => uri,
                    Ok(Err(reason)) => {
                        eprintln!("keys: issuer {issuer} {}: refused: {reason}", self.source.url);
                        return self.count_failed();
                    }
                    Err(e) => {
                        eprintln!("keys: issuer {issuer} {}: module failed: {e}", self.source.url);
                        return self.count_failed();
                    }
                }
            }
        };
        let (document, max_age) = match self.fetch(&jwks_url).await {
            Ok(fetched) => fetched,
            Err(e) => return self.log_failed(&jwks_url, &e),
        };
        let now = unix_now();
        let installed = self.runtime.install_keys(issuer, &document, now);
        if let Some(metrics) = &self.metrics {
            metrics.jwks_fetched(issuer, true);
            metrics.jwks_installed(issuer, matches!(installed, Ok(Ok(_))), now);
        }
        match installed {
            Ok(Ok(summary)) => {
                eprintln!("keys: issuer {issuer} {jwks_url}: {summary}");
                Round::Installed(max_age.map(|age| age.as_secs()))
            }
            Ok(Err(reason)) => {
                eprintln!("keys: issuer {issuer} {jwks_url}: refused: {reason}");
                Round::Failed
            }
            Err(e) => {
                eprintln!("keys: issuer {issuer} {jwks_url}: module failed: {e}");
                Round::Failed
            }
        }
    }

    fn log_failed(&self, url: &str, error: &FetchError) -> Round {
        eprintln!("keys: issuer {} {url}: fetch failed: {error}", self.source.issuer);
        self.count_failed()
    }

    /// A round that got no key document (`jwks_fetch_failed`).
    fn count_failed(&self) -> Round {
        if let Some(metrics) = &self.metrics {
            metrics.jwks_fetched(self.source.issuer, false);
        }
        Round::Failed
    }

    /// Fetches `url` (as the module names it) within the source's limits:
    /// the body and the response's `max-age`.
    async fn fetch(&self, url: &str) -> Result<(Vec<u8>, Option<Duration>), FetchError> {
        let limit = Duration::from_millis(u64::from(self.source.timeout_ms));
        match tokio::time::timeout(limit, self.exchange(url)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::TimedOut),
        }
    }

    async fn exchange(&self, url: &str) -> Result<(Vec<u8>, Option<Duration>), FetchError> {
        let target = mapped(url, &self.overrides);
        let uri: Uri = target.parse().map_err(|e| FetchError::Url(format!("invalid URL {target:?}: {e}")))?;
        let request = Request::get(uri)
            .header(http::header::ACCEPT, "application/json")
            .body(Empty::<Bytes>::new())
            .map_err(|e| FetchError::Url(e.to_string()))?;
        let response =
            self.client.request(request).await.map_err(|e| FetchError::Connection(one_line(&e)))?;
        if response.status() != StatusCode::OK {
            return Err(FetchError::Status(response.status().as_u16()));
        }
        let max_age = response.headers().get(CACHE_CONTROL).and_then(|v| max_age(v.to_str().ok()?));
        let capacity = self.runtime.keys_capacity();
        let mut body = response.into_body();
        let mut document = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| FetchError::Connection(one_line(&e)))?;
            if let Some(data) = frame.data_ref() {
                if document.len() + data.len() > capacity {
                    return Err(FetchError::TooLarge(capacity));
                }
                document.extend_from_slice(data);
            }
        }
        Ok((document, max_age))
    }
}

/// `url` with its origin replaced as `overrides` says (origin to origin).
fn mapped(url: &str, overrides: &HashMap<String, String>) -> String {
    match contract::routes::origin_of(url).and_then(|origin| Some((origin, overrides.get(origin)?))) {
        Some((origin, to)) => format!("{to}{}", &url[origin.len()..]),
        None => url.to_owned(),
    }
}

/// The `max-age` of a `Cache-Control` value (RFC 9111 section 5.2.2.1).
fn max_age(value: &str) -> Option<Duration> {
    value
        .split(',')
        .find_map(|directive| {
            let (name, seconds) = directive.trim().split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("max-age")
                .then(|| seconds.trim().trim_matches('"').parse().ok())?
        })
        .map(Duration::from_secs)
}

/// An error and its causes on one line.
fn one_line(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_age_is_read_from_cache_control() {
        assert_eq!(max_age("public, max-age=3600, must-revalidate"), Some(Duration::from_secs(3600)));
        assert_eq!(max_age("MAX-AGE = 60"), Some(Duration::from_secs(60)));
        assert_eq!(max_age("max-age=\"5\""), Some(Duration::from_secs(5)));
        assert_eq!(max_age("no-store"), None);
        assert_eq!(max_age("max-age=-1"), None);
        assert_eq!(max_age("s-maxage=10"), None);
    }

    #[test]
    fn overrides_move_the_origin_and_keep_the_path() {
        let overrides: HashMap<String, String> =
            [("http://idp.test".to_owned(), "http://127.0.0.1:9".to_owned())].into();
        assert_eq!(
            mapped("http://idp.test/.well-known/openid-configuration", &overrides),
            "http://127.0.0.1:9/.well-known/openid-configuration"
        );
        assert_eq!(mapped("http://other.test/jwks", &overrides), "http://other.test/jwks");
    }

    #[test]
    fn https_sources_are_refused_at_start_naming_the_source() {
        let source = |url: &str| KeySourceBuf {
            issuer: 2,
            kind: SourceKind::Jwks,
            url: url.into(),
            refresh_secs: 600,
            refetch_secs: 60,
            timeout_ms: 5000,
            max_stale_secs: 86400,
        };
        let none = HashMap::new();
        let line = KeyFetcher::check(&[source("https://idp.example/jwks")], &none).expect_err("https");
        assert!(
            line.starts_with(
                "keys: issuer 2 https://idp.example/jwks: host-sim fetches over plain http only"
            ),
            "{line}"
        );
        let mirrored: HashMap<String, String> =
            [("https://idp.example".to_owned(), "http://127.0.0.1:9".to_owned())].into();
        assert_eq!(KeyFetcher::check(&[source("https://idp.example/jwks")], &mirrored), Ok(()));
    }
}
