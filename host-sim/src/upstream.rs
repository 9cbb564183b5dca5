//! Forwarding an accepted request to its upstream, exactly as the module's
//! plan says: the client's method and body (streamed, never buffered) to the
//! plan's origin and path, the client's fields less those the plan drops,
//! plus those it sets. The host adds no rule of its own; its HTTP stack only
//! frames the body and sets `Host` from the origin. An origin can be
//! overridden (tests point the compiled-in routes at their own servers). The request is sent, within the
//! limits, by [`crate::exchange`].

use std::collections::HashMap;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;

use crate::contract::{Plan, description_body};
use crate::error::GuestError;
use crate::exchange::{Exchange, ExchangeError};
use crate::limits::ForwardLimits;
use crate::listen::{Body, full};

/// Why a request could not be forwarded.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The upstream URL plus the path does not form a valid URI.
    #[error("upstream URL is invalid: {0}")]
    BadUri(String),
    /// The plan names a field that cannot be a header: the module's fault.
    #[error("the module's plan sets or drops an invalid field: {0}")]
    BadPlan(String),
    /// The exchange with the upstream failed or hit a limit.
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
}

impl ForwardError {
    /// The HTTP status: 500 for a plan the host cannot execute (the
    /// module's fault), 502 Bad Gateway for a bad URI, or the exchange's.
    pub fn status(&self) -> StatusCode {
        match self {
            ForwardError::BadPlan(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ForwardError::BadUri(_) => StatusCode::BAD_GATEWAY,
            ForwardError::Exchange(e) => e.status(),
        }
    }

    /// The answer for the client, as `worker/ABI.md` fixes it for every host
    /// (the details go to the access log).
    pub fn response(&self) -> Response<Body> {
        let description = match self {
            ForwardError::BadPlan(_) => GuestError::BadOutput("plan").public_description(),
            ForwardError::BadUri(_) => "upstream unavailable",
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

/// Parses `--upstream-override` values: `AUD=ORIGIN` (an audience of the
/// module's route table, `routes`) or `FROM_ORIGIN=ORIGIN`. Returns a map
/// from the origin the module names to the one to use instead. Overriding
/// an origin moves every route on it; the path stays the module's.
pub fn parse_overrides(
    values: &[String],
    routes: &[(String, String)],
) -> Result<HashMap<String, String>, String> {
    let mut map = HashMap::new();
    for value in values {
        let (key, url) = value
            .split_once('=')
            .ok_or_else(|| format!("--upstream-override {value}: expected AUD=ORIGIN"))?;
        let to = origin_of(url.trim_end_matches('/'))
            .filter(|origin| *origin == url.trim_end_matches('/'))
            .ok_or_else(|| {
            format!("--upstream-override {value}: {url} is not an http origin (scheme://host:port, no path)")
        })?;
        let from = if key.starts_with("http://") || key.starts_with("https://") {
            origin_of(key).ok_or_else(|| format!("--upstream-override {value}: {key} is not an http URL"))?
        } else {
            let upstream =
                routes.iter().find(|(aud, _)| aud == key).map(|(_, upstream)| upstream).ok_or_else(|| {
                    let known: Vec<&str> = routes.iter().map(|(aud, _)| aud.as_str()).collect();
                    format!(
                        "--upstream-override {value}: the module has no route for {key:?} (it routes {})",
                        known.join(", ")
                    )
                })?;
            origin_of(upstream).ok_or_else(|| {
                format!("--upstream-override {value}: route upstream {upstream} is not a URL")
            })?
        };
        map.insert(from.to_owned(), to.to_owned());
    }
    Ok(map)
}

/// The scheme and authority of an absolute http(s) URL.
fn origin_of(url: &str) -> Option<&str> {
    let uri: Uri = url.parse().ok()?;
    let scheme = uri.scheme_str().filter(|s| *s == "http" || *s == "https")?;
    let authority = uri.authority()?;
    url.get(..scheme.len() + 3 + authority.as_str().len())
}

/// Forwards requests upstream over a pooled HTTP/1.1 client.
#[derive(Debug, Clone)]
pub struct Forwarder {
    exchange: Exchange,
    overrides: HashMap<String, String>,
}

/// Hop-by-hop headers of the upstream's response (RFC 9110 section 7.6.1):
/// they describe one connection and are not passed to the client.
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

    /// The origin to use for the one the module named.
    pub fn resolve<'a>(&'a self, origin: &'a str) -> &'a str {
        self.overrides.get(origin).map_or(origin, String::as_str)
    }

    /// Sends `request` upstream as `plan` says, streaming the body both ways.
    pub async fn forward(
        &self,
        request: Request<Incoming>,
        plan: &Plan,
    ) -> Result<Response<Body>, ForwardError> {
        let (mut parts, body) = request.into_parts();
        let uri: Uri = format!("{}{}", self.resolve(&plan.origin), plan.path)
            .parse()
            .map_err(|e: http::uri::InvalidUri| ForwardError::BadUri(e.to_string()))?;
        apply(plan, &mut parts.headers)?;
        // The one field the HTTP stack sets: Host, from the origin.
        if let Some(authority) = uri.authority()
            && let Ok(host) = HeaderValue::from_str(authority.as_str())
        {
            parts.headers.insert(header::HOST, host);
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

/// Drops and sets the fields as `plan` says, nothing else.
pub fn apply(plan: &Plan, headers: &mut HeaderMap) -> Result<(), ForwardError> {
    let name_of = |name: &str| {
        HeaderName::from_bytes(name.as_bytes()).map_err(|_| ForwardError::BadPlan(name.to_owned()))
    };
    for name in &plan.drop {
        headers.remove(name_of(name)?);
    }
    for (name, value) in &plan.set {
        let value = HeaderValue::from_str(value).map_err(|_| ForwardError::BadPlan(name.clone()))?;
        headers.insert(name_of(name)?, value);
    }
    Ok(())
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
    fn applies_the_plan_and_nothing_else() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        headers.append("x_gateway_subject", HeaderValue::from_static("mallory"));
        headers.append("x_gateway_subject", HeaderValue::from_static("again"));
        headers.insert("x-kept", HeaderValue::from_static("1"));
        let plan = Plan {
            origin: "http://u".into(),
            path: "/".into(),
            drop: vec!["authorization".into(), "x_gateway_subject".into()],
            set: vec![("x-gateway-subject".into(), "alice".into())],
        };
        apply(&plan, &mut headers).expect("valid plan");
        assert_eq!(headers.len(), 2);
        assert_eq!(headers["x-gateway-subject"], "alice");
        assert!(headers.contains_key("x-kept"));
        let bad = Plan { set: vec![("bad name".into(), "v".into())], ..plan };
        assert!(matches!(apply(&bad, &mut headers), Err(ForwardError::BadPlan(_))));
    }

    #[test]
    fn overrides_resolve_audiences_and_origins() {
        let routes = vec![("orders".to_owned(), "http://10.0.0.5/orders-svc".to_owned())];
        let map = parse_overrides(&["http://a:1=http://127.0.0.1:5/".into()], &routes).expect("valid");
        assert_eq!(map.get("http://a:1").map(String::as_str), Some("http://127.0.0.1:5"));
        let map = parse_overrides(&["orders=http://127.0.0.1:6".into()], &routes).expect("valid");
        assert_eq!(map.get("http://10.0.0.5").map(String::as_str), Some("http://127.0.0.1:6"));
        assert!(parse_overrides(&["users=http://x".into()], &routes).is_err());
        assert!(parse_overrides(&["http://a=nope".into()], &routes).is_err());
        assert!(parse_overrides(&["orders=http://x/with-path".into()], &routes).is_err());
    }
}
