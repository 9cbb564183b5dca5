//! Fetching the keys of a module that fetches them (`worker/ABI.md`, "Keys
//! fetched at run time"): one task per key source asks the module what to
//! fetch and when (`runtime::Runtime::key_fetch`, `key_fetch_wait`),
//! fetches it over HTTP and hands the bytes to the module
//! (`key_fetched`), which reads them and says what comes next: the
//! `jwks_uri` a discovery document named, or the end of the round. Nothing
//! here keeps a schedule, reads a key or a document: the module says what
//! was installed or why not, and this file logs it in one line.
//!
//! - **Limits.** `GET`, no redirect followed, the whole exchange within the
//!   source's `timeout_ms`, status 200 only, the body cut at the module's
//!   document capacity (a larger one is a failed fetch).
//! - **Schedule.** The module's (`contract::key_schedule`, the same on
//!   every host). The task sleeps until the module says a round is due, or
//!   until an answer asks for the issuer's keys (a `~` line), which starts a
//!   round when the module grants it.
//! - **Transport.** host-sim has no TLS client: a source whose URL (after
//!   `--upstream-override`) is not `http://` is refused at start.
//!
//! Log lines, on stderr, as every host writes them:
//! `keys: issuer <n> <url>: installed ... | refused: <reason> | fetch failed: <why>`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::CACHE_CONTROL;
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use runtime::{KeySourceBuf, RoundStep, Runtime, Why, unix_now};
use tokio::sync::{Notify, watch};

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

/// The longest a task sleeps before it asks the module again: a module that
/// cannot answer (it trapped) is asked again after this.
const MAX_SLEEP: Duration = Duration::from_secs(60);

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
}

impl SourceTask {
    async fn run(self) {
        let mut installed_once = false;
        loop {
            let url = self.next_round().await;
            if self.round(url).await && !installed_once {
                installed_once = true;
                self.ready.send_modify(|n| *n += 1);
            }
        }
    }

    /// Waits until the module starts a round (its schedule says so, or an
    /// answer asked for the keys and the module granted it): its URL.
    async fn next_round(&self) -> String {
        let issuer = self.source.issuer;
        let mut why = Why::Due;
        loop {
            match self.runtime.key_fetch(issuer, unix_now(), why) {
                Ok(Ok(Some(url))) => return url,
                Ok(Ok(None)) => {}
                Ok(Err(reason)) => eprintln!("keys: issuer {issuer}: the module does not answer: {reason}"),
                Err(e) => eprintln!("keys: issuer {issuer}: module failed: {e}"),
            }
            let wait = match self.runtime.key_fetch_wait(issuer, unix_now()) {
                Ok(Some(wait)) => wait.clamp(Duration::from_millis(1), MAX_SLEEP),
                Ok(None) | Err(_) => MAX_SLEEP,
            };
            why = tokio::select! {
                () = tokio::time::sleep(wait) => Why::Due,
                () = self.notify.notified() => Why::Asked,
            };
        }
    }

    /// One round from `url`: each document fetched goes to the module,
    /// which names the next one (a discovery document's `jwks_uri`) or ends
    /// the round. Logs the outcome; whether the keys were installed.
    async fn round(&self, mut url: String) -> bool {
        let issuer = self.source.issuer;
        loop {
            let (document, cache_control) = match self.fetch(&url).await {
                Ok(fetched) => fetched,
                Err(e) => {
                    eprintln!("keys: issuer {issuer} {url}: fetch failed: {e}");
                    if let Err(e) = self.runtime.key_fetch_failed(issuer, unix_now()) {
                        eprintln!("keys: issuer {issuer} {url}: module failed: {e}");
                    }
                    return false;
                }
            };
            match self.runtime.key_fetched(issuer, &document, &cache_control, unix_now()) {
                Ok(RoundStep::Fetch(next)) => url = next,
                Ok(RoundStep::Installed(summary)) => {
                    eprintln!("keys: issuer {issuer} {url}: {summary}");
                    return true;
                }
                Ok(RoundStep::Refused(reason)) => {
                    eprintln!("keys: issuer {issuer} {url}: refused: {reason}");
                    return false;
                }
                Err(e) => {
                    eprintln!("keys: issuer {issuer} {url}: module failed: {e}");
                    let _ = self.runtime.key_fetch_failed(issuer, unix_now());
                    return false;
                }
            }
        }
    }

    /// Fetches `url` (as the module names it) within the source's limits:
    /// the body and the response's `Cache-Control` value (its fields joined
    /// with `, `).
    async fn fetch(&self, url: &str) -> Result<(Vec<u8>, Vec<u8>), FetchError> {
        let limit = Duration::from_millis(u64::from(self.source.timeout_ms));
        match tokio::time::timeout(limit, self.exchange(url)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::TimedOut),
        }
    }

    async fn exchange(&self, url: &str) -> Result<(Vec<u8>, Vec<u8>), FetchError> {
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
        let cache_control =
            response.headers().get_all(CACHE_CONTROL).iter().fold(Vec::new(), |mut joined, v| {
                if !joined.is_empty() {
                    joined.extend_from_slice(b", ");
                }
                joined.extend_from_slice(v.as_bytes());
                joined
            });
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
        Ok((document, cache_control))
    }
}

/// `url` with its origin replaced as `overrides` says (origin to origin).
fn mapped(url: &str, overrides: &HashMap<String, String>) -> String {
    match contract::routes::origin_of(url).and_then(|origin| Some((origin, overrides.get(origin)?))) {
        Some((origin, to)) => format!("{to}{}", &url[origin.len()..]),
        None => url.to_owned(),
    }
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
            kind: runtime::SourceKind::Jwks,
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
