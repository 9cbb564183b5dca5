//! Fetching an issuer's key documents through Envoy, without the host
//! calls (those are in `keys`, wasm32 only): which cluster a URL goes to,
//! what a response amounts to, and the one log line per fetch. The filter
//! reads no document: the core decides what a discovery document names and
//! whether a JWKS document is installed (`worker/ABI.md`, "Keys fetched at
//! run time").
//!
//! The clusters come from the renderer (`envoy-filter`), which writes one
//! line per key origin into the filter's configuration:
//! `<origin> <cluster> <authority>`: the origin as the module names it, the
//! Envoy cluster that reaches it (moved by `--upstream-override` or not),
//! and the `:authority` to send, the cluster's own.

use std::fmt;

pub use contract::routes::origin_of;

/// The cluster that reaches one origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyCluster {
    /// The origin as the module names it (`https://idp.example`).
    pub origin: String,
    /// The Envoy cluster's name.
    pub cluster: String,
    /// The `:authority` of a request on it.
    pub authority: String,
}

/// A line of the filter's configuration that is not `<origin> <cluster> <authority>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("line {0} of the filter's configuration is not `<origin> <cluster> <authority>`")]
pub struct BadClusterLine(pub usize);

/// The key clusters of the filter's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyClusters {
    entries: Vec<KeyCluster>,
}

impl KeyClusters {
    /// Reads the filter's configuration (empty: no cluster).
    pub fn parse(text: &str) -> Result<Self, BadClusterLine> {
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate().filter(|(_, line)| !line.is_empty()) {
            let mut words = line.split(' ');
            let entry = match (words.next(), words.next(), words.next(), words.next()) {
                (Some(origin), Some(cluster), Some(authority), None)
                    if origin_of(origin) == Some(origin) && !cluster.is_empty() && !authority.is_empty() =>
                {
                    KeyCluster { origin: origin.into(), cluster: cluster.into(), authority: authority.into() }
                }
                _ => return Err(BadClusterLine(i + 1)),
            };
            entries.push(entry);
        }
        Ok(KeyClusters { entries })
    }

    /// The request for the document at `url`: its cluster, `:authority`
    /// and `:path`.
    pub fn request<'a>(&'a self, url: &'a str) -> Result<DocumentRequest<'a>, Failure> {
        let origin = origin_of(url).ok_or_else(|| Failure::NotUrl(url.into()))?;
        let entry = self
            .entries
            .iter()
            .find(|e| e.origin == origin)
            .ok_or_else(|| Failure::NoCluster(origin.into()))?;
        // A fragment is the client's own; a bare origin asks for `/`.
        let rest = url[origin.len()..].split('#').next().unwrap_or("");
        let path = if rest.starts_with('/') { rest.to_owned() } else { format!("/{rest}") };
        Ok(DocumentRequest { cluster: &entry.cluster, authority: &entry.authority, path })
    }
}

/// A `GET` for one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentRequest<'a> {
    /// The Envoy cluster to send it on.
    pub cluster: &'a str,
    /// `:authority`.
    pub authority: &'a str,
    /// `:path`, with the query.
    pub path: String,
}

impl DocumentRequest<'_> {
    /// The request's fields, as `dispatch_http_call` takes them.
    pub fn fields(&self) -> Vec<(&str, &str)> {
        vec![
            (":method", "GET"),
            (":path", &self.path),
            (":authority", self.authority),
            ("accept", "application/json"),
        ]
    }
}

/// Why a fetch failed before the module read the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A status other than 200.
    Status(u16),
    /// A body longer than the module's document buffer (its size).
    TooLarge(usize),
    /// No complete response within the source's `timeout_ms`.
    TimedOut,
    /// The connection was reset before the whole response came (Envoy
    /// gives no more detail).
    Reset,
    /// Envoy could not reach the provider: its reason.
    Unreachable(String),
    /// The bootstrap has no cluster for the URL's origin.
    NoCluster(String),
    /// The URL is not one Envoy can be asked for.
    NotUrl(String),
    /// Envoy refused to start the call on the cluster: the cluster's name
    /// and Envoy's status code.
    Dispatch(String, u32),
    /// Envoy refused to hand over the answer: its status code.
    HostCall(u32),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Status(code) => write!(f, "status {code}"),
            Failure::TooLarge(capacity) => write!(f, "larger than {capacity} bytes"),
            Failure::TimedOut => f.write_str("timed out"),
            Failure::Reset => f.write_str("connection reset before the whole response"),
            Failure::Unreachable(why) => write!(f, "no response from the provider ({why})"),
            Failure::NoCluster(origin) => write!(
                f,
                "no Envoy cluster for origin {origin}: render the bootstrap from this config (envoy-filter), with --key-origin {origin} for a jwks_uri on another origin"
            ),
            Failure::NotUrl(url) => write!(f, "{url:?} is not an http(s) URL Envoy can fetch"),
            Failure::HostCall(code) => write!(f, "Envoy did not hand over the answer (status {code})"),
            Failure::Dispatch(cluster, status) => {
                write!(
                    f,
                    "Envoy refused a call on cluster {cluster} (status {status}): is it in the bootstrap?"
                )
            }
        }
    }
}

/// What Envoy hands the filter for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallResult<'a> {
    /// Envoy reports the call failed: the stream was reset (Envoy gives no
    /// more detail).
    Reset,
    /// Envoy answered itself, not the provider (its answers lack the
    /// `x-envoy-upstream-service-time` field it adds to the provider's):
    /// the status and the start of its body, which says why.
    Envoy(u16, &'a str),
    /// The provider answered: the status and the body's length.
    Provider(u16, usize),
}

/// The field Envoy adds to every answer that came from the provider.
pub const FROM_PROVIDER: &str = "x-envoy-upstream-service-time";

/// What a call's result amounts to: `None` when the body goes to the
/// module. Envoy answers a call that ran past its timeout with its own 504.
pub fn failure(result: CallResult<'_>, capacity: usize) -> Option<Failure> {
    match result {
        CallResult::Reset => Some(Failure::Reset),
        CallResult::Envoy(504, _) => Some(Failure::TimedOut),
        CallResult::Envoy(_, why) => Some(Failure::Unreachable(printable_line(why))),
        CallResult::Provider(200, len) if len > capacity => Some(Failure::TooLarge(capacity)),
        CallResult::Provider(200, _) => None,
        CallResult::Provider(code, _) => Some(Failure::Status(code)),
    }
}

/// The first line of `text`, printable ASCII only, at most 160 bytes: what
/// a log line may quote of another party's text.
fn printable_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    line.chars().take(160).map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).collect()
}

/// What the filter reads of an answer's fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnswerFields {
    /// `:status`, when it is a number.
    pub status: Option<u16>,
    /// Whether the provider sent the answer ([`FROM_PROVIDER`]).
    pub from_provider: bool,
    /// The `Cache-Control` fields' values, joined with `, ` as bytes: the
    /// module reads their `max-age`.
    pub cache_control: Vec<u8>,
}

/// Reads an answer's fields as Envoy serializes them (names lower case),
/// as bytes: a status that is not UTF-8 text is no number.
pub fn answer_fields<'a>(fields: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> AnswerFields {
    let mut answer = AnswerFields::default();
    for (name, value) in fields {
        match name {
            b":status" => answer.status = std::str::from_utf8(value).ok().and_then(|t| t.parse().ok()),
            b"cache-control" => {
                if !answer.cache_control.is_empty() {
                    answer.cache_control.extend_from_slice(b", ");
                }
                answer.cache_control.extend_from_slice(value);
            }
            name if name == FROM_PROVIDER.as_bytes() => answer.from_provider = true,
            _ => {}
        }
    }
    answer
}

/// How one fetch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The module installed the document: its summary.
    Installed(String),
    /// The module refused the document: its reason.
    Refused(String),
    /// The document never reached the module.
    Failed(Failure),
}

impl Outcome {
    /// Whether the line is a warning (anything but an install).
    pub fn is_warning(&self) -> bool {
        !matches!(self, Outcome::Installed(_))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Installed(summary) => f.write_str(summary),
            Outcome::Refused(reason) => write!(f, "refused: {reason}"),
            Outcome::Failed(failure) => write!(f, "fetch failed: {failure}"),
        }
    }
}

/// The log line for one fetch, the same on every host:
/// `keys: issuer <n> <url>: <outcome>`, the URL as the module names it.
pub fn log_line(issuer: u8, url: &str, outcome: &Outcome) -> String {
    format!("keys: issuer {issuer} {url}: {outcome}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "http://idp.test keys:http://idp.test 127.0.0.1:4000\n\
                         https://login.example keys:https://login.example login.example\n";

    #[test]
    fn the_cluster_table_names_a_cluster_and_authority_per_origin() {
        let clusters = KeyClusters::parse(TABLE).expect("valid");
        let discovery = clusters.request("http://idp.test/.well-known/openid-configuration").expect("known");
        assert_eq!(
            discovery,
            DocumentRequest {
                cluster: "keys:http://idp.test",
                authority: "127.0.0.1:4000",
                path: "/.well-known/openid-configuration".into()
            }
        );
        assert_eq!(
            discovery.fields(),
            [
                (":method", "GET"),
                (":path", "/.well-known/openid-configuration"),
                (":authority", "127.0.0.1:4000"),
                ("accept", "application/json")
            ]
        );
        let jwks = clusters.request("https://login.example/keys?v=2#frag").expect("known");
        assert_eq!((jwks.cluster, jwks.path.as_str()), ("keys:https://login.example", "/keys?v=2"));
        assert_eq!(clusters.request("https://login.example").expect("known").path, "/");
        assert_eq!(clusters.request("https://login.example?x").expect("known").path, "/?x");
        assert_eq!(
            clusters.request("https://other.example/jwks"),
            Err(Failure::NoCluster("https://other.example".into()))
        );
        assert_eq!(
            clusters.request("http://idp.test:80/k"),
            Err(Failure::NoCluster("http://idp.test:80".into()))
        );
        assert_eq!(clusters.request("ftp://idp.test/k"), Err(Failure::NotUrl("ftp://idp.test/k".into())));
        assert_eq!(KeyClusters::parse(""), Ok(KeyClusters::default()));
    }

    #[test]
    fn a_table_line_that_is_not_three_words_is_refused_by_number() {
        for (text, line) in [
            ("http://a c", 1),
            ("http://a c h\nhttp://b c", 2),
            ("http://a c h x", 1),
            ("http://a/path c h", 1),
            ("idp.test c h", 1),
            ("http://a  h", 1),
        ] {
            assert_eq!(KeyClusters::parse(text), Err(BadClusterLine(line)), "{text:?}");
        }
        assert_eq!(
            BadClusterLine(2).to_string(),
            "line 2 of the filter's configuration is not `<origin> <cluster> <authority>`"
        );
    }

    #[test]
    fn results_are_a_body_for_the_module_or_a_failure() {
        let cap = 65536;
        assert_eq!(failure(CallResult::Provider(200, cap), cap), None);
        assert_eq!(failure(CallResult::Provider(200, cap + 1), cap), Some(Failure::TooLarge(cap)));
        assert_eq!(failure(CallResult::Provider(500, 10), cap), Some(Failure::Status(500)));
        assert_eq!(failure(CallResult::Provider(304, 0), cap), Some(Failure::Status(304)));
        assert_eq!(
            failure(CallResult::Provider(504, 0), cap),
            Some(Failure::Status(504)),
            "the provider's own 504"
        );
        assert_eq!(failure(CallResult::Envoy(504, "upstream request timeout"), cap), Some(Failure::TimedOut));
        assert_eq!(
            failure(CallResult::Envoy(503, "upstream connect error or disconnect/reset before headers. reset reason: remote connection failure"), cap),
            Some(Failure::Unreachable(
                "upstream connect error or disconnect/reset before headers. reset reason: remote connection failure".into()
            ))
        );
        let long = format!("no healthy upstream\u{7}{}\nsecond line", "x".repeat(300));
        let Some(Failure::Unreachable(why)) = failure(CallResult::Envoy(503, &long), cap) else { panic!() };
        assert_eq!(why.len(), 160);
        assert!(why.starts_with("no healthy upstream?x"), "{why}");
        assert_eq!(failure(CallResult::Reset, cap), Some(Failure::Reset));
    }

    #[test]
    fn answer_fields_are_read_as_bytes() {
        let fields: [(&[u8], &[u8]); 5] = [
            (b":status", b"200"),
            (b"content-type", b"application/json"),
            (b"cache-control", b"max-age=5\xff"),
            (b"cache-control", b"max-age=9"),
            (b"x-envoy-upstream-service-time", b"0"),
        ];
        let read = answer_fields(fields.into_iter());
        let cache_control = b"max-age=5\xff, max-age=9".to_vec();
        assert_eq!(read, AnswerFields { status: Some(200), from_provider: true, cache_control });
        let envoy: [(&[u8], &[u8]); 2] = [(b":status", b"503"), (b"content-type", b"text/plain")];
        assert_eq!(
            answer_fields(envoy.into_iter()),
            AnswerFields { status: Some(503), from_provider: false, cache_control: Vec::new() }
        );
        let odd: [(&[u8], &[u8]); 1] = [(b":status", b"2\xff0")];
        assert_eq!(answer_fields(odd.into_iter()), AnswerFields::default());
        assert_eq!(answer_fields(std::iter::empty()), AnswerFields::default());
    }

    #[test]
    fn one_line_per_fetch_in_the_shared_format() {
        let url = "http://idp.test/jwks";
        let installed = Outcome::Installed("installed \"key-a\": 1 key for issuer 0".into());
        assert_eq!(
            log_line(0, url, &installed),
            "keys: issuer 0 http://idp.test/jwks: installed \"key-a\": 1 key for issuer 0"
        );
        assert!(!installed.is_warning());
        let refused = Outcome::Refused("JWKS document is not a JWKS document".into());
        assert_eq!(
            log_line(0, url, &refused),
            "keys: issuer 0 http://idp.test/jwks: refused: JWKS document is not a JWKS document"
        );
        assert!(refused.is_warning());
        for (failure, text) in [
            (Failure::Status(500), "fetch failed: status 500"),
            (Failure::TooLarge(65536), "fetch failed: larger than 65536 bytes"),
            (Failure::TimedOut, "fetch failed: timed out"),
            (Failure::Reset, "fetch failed: connection reset before the whole response"),
            (
                Failure::Unreachable("no healthy upstream".into()),
                "fetch failed: no response from the provider (no healthy upstream)",
            ),
        ] {
            assert_eq!(
                log_line(1, "http://jwks.test/keys.json", &Outcome::Failed(failure)),
                format!("keys: issuer 1 http://jwks.test/keys.json: {text}")
            );
        }
        let missing = log_line(
            0,
            "https://keys.other/jwks",
            &Outcome::Failed(Failure::NoCluster("https://keys.other".into())),
        );
        assert!(missing.starts_with("keys: issuer 0 https://keys.other/jwks: fetch failed: no Envoy cluster for origin https://keys.other: "), "{missing}");
        assert!(
            missing.ends_with("--key-origin https://keys.other for a jwks_uri on another origin"),
            "{missing}"
        );
    }
}
