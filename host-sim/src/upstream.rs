//! Forwarding an accepted request to its upstream: the original method,
//! path, query and body (streamed, never buffered), without `Authorization`,
//! with `X-Gateway-Subject` when the token has a subject. Upstreams can be
//! overridden (tests point the compiled-in routes at their own servers). The
//! request is sent, within the limits, by [`crate::exchange`].

use std::collections::HashMap;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;

use crate::decision::description_body;
use crate::exchange::{Exchange, ExchangeError};
use crate::limits::ForwardLimits;
use crate::listen::{Body, full};

/// The header that carries the token's subject upstream.
pub const SUBJECT_HEADER: &str = "x-gateway-subject";

/// Why a request could not be forwarded.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The upstream URL plus the path does not form a valid URI.
    #[error("upstream URL is invalid: {0}")]
    BadUri(String),
    /// The subject cannot be a header value.
    #[error("subject is not a valid header value")]
    BadSubject,
    /// The exchange with the upstream failed or hit a limit.
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
}

impl ForwardError {
    /// The HTTP status: 502 Bad Gateway, or the exchange's.
    pub fn status(&self) -> StatusCode {
        match self {
            ForwardError::BadUri(_) | ForwardError::BadSubject => StatusCode::BAD_GATEWAY,
            ForwardError::Exchange(e) => e.status(),
        }
    }

    /// The answer for the client, as `worker/ABI.md` fixes it for every host
    /// (the details go to the access log).
    pub fn response(&self) -> Response<Body> {
        let description = match self {
            ForwardError::BadUri(_) | ForwardError::BadSubject => "upstream unavailable",
            ForwardError::Exchange(e) => e.public_description(),
        };
        json_response(self.status(), &description_body(description), None)
    }
}

/// A JSON response with an optional `WWW-Authenticate` header.
pub fn json_response(status: StatusCode, body: &str, challenge: Option<&str>) -> Response<Body> {
    let mut response = Response::new(full(body.to_owned()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(value) = challenge.and_then(|c| HeaderValue::from_str(c).ok()) {
        headers.insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Parses `--upstream-override` values: `AUD=URL` (an audience of `config`)
/// or `FROM_URL=URL`. Returns a map from the upstream the module names to the
/// one to use instead.
pub fn parse_overrides(
    values: &[String],
    config: Option<&gateway_config::GatewayConfig>,
) -> Result<HashMap<String, String>, String> {
    let mut map = HashMap::new();
    for value in values {
        let (key, url) =
            value.split_once('=').ok_or_else(|| format!("--upstream-override {value}: expected AUD=URL"))?;
        let url = url.trim_end_matches('/');
        if url.parse::<Uri>().map_or(true, |u| u.scheme().is_none() || u.authority().is_none()) {
            return Err(format!("--upstream-override {value}: {url} is not an absolute http URL"));
        }
        let from = if key.starts_with("http://") || key.starts_with("https://") {
            key.trim_end_matches('/').to_owned()
        } else {
            let config =
                config.ok_or_else(|| format!("--upstream-override {value}: audience needs --config"))?;
            config.routes.iter().find(|r| r.aud == key).map(|r| r.upstream.clone()).ok_or_else(|| {
                format!("--upstream-override {value}: no route for audience {key:?} in the config")
            })?
        };
        map.insert(from, url.to_owned());
    }
    Ok(map)
}

/// Forwards requests upstream over a pooled HTTP/1.1 client.
#[derive(Debug, Clone)]
pub struct Forwarder {
    exchange: Exchange,
    overrides: HashMap<String, String>,
}

/// Hop-by-hop headers (RFC 9110 section 7.6.1): they describe one connection
/// and are never forwarded.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

impl Forwarder {
    /// A forwarder with a connection pool, mapping upstreams by `overrides`,
    /// sending within `limits`.
    pub fn new(overrides: HashMap<String, String>, limits: ForwardLimits) -> Forwarder {
        Forwarder { exchange: Exchange::new(limits), overrides }
    }

    /// The upstream base URL to use for the one the module named.
    pub fn resolve<'a>(&'a self, upstream: &'a str) -> &'a str {
        self.overrides.get(upstream).map_or(upstream, String::as_str)
    }

    /// Sends `request` to `upstream` + its path and query, streaming the body
    /// both ways.
    pub async fn forward(
        &self,
        request: Request<Incoming>,
        upstream: &str,
        subject: Option<&str>,
    ) -> Result<Response<Body>, ForwardError> {
        let (mut parts, body) = request.into_parts();
        let base = self.resolve(upstream);
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let uri: Uri = format!("{base}{path}")
            .parse()
            .map_err(|e: http::uri::InvalidUri| ForwardError::BadUri(e.to_string()))?;
        strip(&mut parts.headers);
        if let Some(authority) = uri.authority()
            && let Ok(host) = HeaderValue::from_str(authority.as_str())
        {
            parts.headers.insert(header::HOST, host);
        }
        if let Some(subject) = subject {
            let value = HeaderValue::from_str(subject).map_err(|_| ForwardError::BadSubject)?;
            parts.headers.insert(HeaderName::from_static(SUBJECT_HEADER), value);
        }
        parts.uri = uri;
        parts.version = http::Version::HTTP_11;
        let upstream_request = Request::from_parts(parts, body);
        let response = self.exchange.send(upstream_request).await?;
        let (mut parts, body) = response.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        Ok(Response::from_parts(parts, body.boxed()))
    }
}

/// Removes the token, any client-sent subject, and hop-by-hop headers.
fn strip(headers: &mut HeaderMap) {
    strip_hop_by_hop(headers);
    headers.remove(header::AUTHORIZATION);
    headers.remove(SUBJECT_HEADER);
}

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect();
    for name in named {
        headers.remove(name.as_str());
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_token_subject_and_hop_by_hop_headers() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        headers.insert(SUBJECT_HEADER, HeaderValue::from_static("mallory"));
        headers.insert(header::CONNECTION, HeaderValue::from_static("keep-alive, x-private"));
        headers.insert("x-private", HeaderValue::from_static("1"));
        headers.insert("x-kept", HeaderValue::from_static("1"));
        strip(&mut headers);
        assert_eq!(headers.len(), 1);
        assert!(headers.contains_key("x-kept"));
    }

    #[test]
    fn overrides_resolve_audiences_and_urls() {
        let map = parse_overrides(&["http://a:1=http://127.0.0.1:5/".into()], None).expect("valid");
        assert_eq!(map.get("http://a:1").map(String::as_str), Some("http://127.0.0.1:5"));
        assert!(parse_overrides(&["orders=http://x".into()], None).is_err());
        assert!(parse_overrides(&["http://a=nope".into()], None).is_err());
    }
}
