//! Carrying out the module's decision: an answer is sent as it is; a
//! forward sends the client's method and body (streamed, never buffered) to
//! the forward's origin and path, with the client's fields less those the
//! module drops plus those it sets, and changes the upstream's response as
//! the module says. The host adds no rule of its own; its HTTP stack only
//! frames the body and sets `Host` from the origin. An origin can be
//! overridden (tests point the compiled-in routes at their own servers).
//! The request is sent, within the limits, by [`crate::exchange`].

use std::collections::HashMap;

use contract::Answer;
use contract::Forward;
use contract::fields::HostAnswer;
use contract::owned::DecisionBuf;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;

use crate::body::{Body, full};
use crate::exchange::{Exchange, ExchangeError};
use crate::limits::ForwardLimits;

/// Why a request could not be forwarded.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The upstream URL plus the path does not form a valid URI.
    #[error("upstream URL is invalid: {0}")]
    BadUri(String),
    /// The decision names a field that cannot be a header: the module's fault.
    #[error("the module's forward sets or drops an invalid field: {0}")]
    BadPlan(String),
    /// The exchange with the upstream failed or hit a limit.
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
}

impl ForwardError {
    /// The answer the client gets, as `worker/ABI.md` fixes it for every
    /// host (the details go to the access log): the module's fault for a
    /// forward the host cannot execute, the upstream's for the rest.
    pub fn answer(&self) -> HostAnswer {
        match self {
            ForwardError::BadPlan(_) => HostAnswer::ModuleFailed,
            ForwardError::BadUri(_) => HostAnswer::UpstreamUnavailable,
            ForwardError::Exchange(e) => e.answer(),
        }
    }

    /// The response the client gets.
    pub fn response(&self) -> Response<Body> {
        answer_response(&DecisionBuf::host_answer(self.answer()))
    }
}

/// The response for a direct answer: its status, its fields in order, its
/// body, nothing else. A decision that is a forward (a caller's mistake) is
/// answered as a module failure.
pub fn answer_response(decision: &DecisionBuf) -> Response<Body> {
    let contract::Decision::Answer(answer) = decision.view() else {
        return answer_response(&DecisionBuf::host_answer(HostAnswer::ModuleFailed));
    };
    match build_answer(&answer) {
        Some(response) => response,
        None => answer_response(&DecisionBuf::host_answer(HostAnswer::ModuleFailed)),
    }
}

fn build_answer(answer: &Answer<'_>) -> Option<Response<Body>> {
    let mut response = Response::new(full(answer.body.to_owned()));
    *response.status_mut() = StatusCode::from_u16(answer.status).ok()?;
    let headers = response.headers_mut();
    for (name, value) in answer.fields() {
        headers.append(HeaderName::from_bytes(name.as_bytes()).ok()?, HeaderValue::from_str(value).ok()?);
    }
    Some(response)
}

/// Parses `--upstream-override` values with the contract's parser: `AUD=ORIGIN`
/// (an audience of the module's route table, `routes`) or
/// `FROM_ORIGIN=ORIGIN`. Returns a map from the origin the module names to
/// the one to use instead. Overriding an origin moves every route on it;
/// the path stays the module's.
pub fn parse_overrides(
    values: &[String],
    routes: &[(String, String)],
) -> Result<HashMap<String, String>, contract::routes::OverrideError> {
    Ok(contract::routes::parse_overrides(values.iter().map(String::as_str), routes)?.into_iter().collect())
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

    /// The same forwarder over upstream connections of its own (the
    /// per-upstream connection cap stays shared): one per serving thread.
    pub fn own_pool(&self) -> Forwarder {
        Forwarder { exchange: self.exchange.own_pool(), overrides: self.overrides.clone() }
    }

    /// The origin to use for the one the module named.
    pub fn resolve<'a>(&'a self, origin: &'a str) -> &'a str {
        self.overrides.get(origin).map_or(origin, String::as_str)
    }

    /// Sends `request` upstream as `forward` says, streaming the body both
    /// ways, and changes the upstream's response as it says.
    pub async fn forward(
        &self,
        request: Request<Incoming>,
        forward: &Forward<'_>,
    ) -> Result<Response<Body>, ForwardError> {
        let (mut parts, body) = request.into_parts();
        let uri: Uri = format!("{}{}", self.resolve(forward.origin), forward.path)
            .parse()
            .map_err(|e: http::uri::InvalidUri| ForwardError::BadUri(e.to_string()))?;
        apply(forward, &mut parts.headers)?;
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
        apply_to_response(forward, &mut parts.headers)?;
        Ok(Response::from_parts(parts, body.boxed()))
    }
}

fn name_of(name: &str) -> Result<HeaderName, ForwardError> {
    HeaderName::from_bytes(name.as_bytes()).map_err(|_| ForwardError::BadPlan(name.to_owned()))
}

fn value_of(name: &str, value: &str) -> Result<HeaderValue, ForwardError> {
    HeaderValue::from_str(value).map_err(|_| ForwardError::BadPlan(name.to_owned()))
}

/// Drops and sets the request's fields as `forward` says, nothing else.
pub fn apply(forward: &Forward<'_>, headers: &mut HeaderMap) -> Result<(), ForwardError> {
    for name in forward.request_drops() {
        headers.remove(name_of(name)?);
    }
    for (name, value) in forward.request_sets() {
        headers.insert(name_of(name)?, value_of(name, value)?);
    }
    Ok(())
}

/// Drops and adds the response's fields as `forward` says, nothing else.
pub fn apply_to_response(forward: &Forward<'_>, headers: &mut HeaderMap) -> Result<(), ForwardError> {
    for name in forward.response_drops() {
        headers.remove(name_of(name)?);
    }
    for (name, value) in forward.response_adds() {
        headers.append(name_of(name)?, value_of(name, value)?);
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

    fn forward(output: &str) -> DecisionBuf {
        DecisionBuf::decode(200, output.as_bytes()).expect("a valid forward")
    }

    #[test]
    fn applies_the_forward_and_nothing_else() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        headers.append("x_gateway_subject", HeaderValue::from_static("mallory"));
        headers.append("x_gateway_subject", HeaderValue::from_static("again"));
        headers.insert("x-kept", HeaderValue::from_static("1"));
        let decision = forward(
            "http://u\n/\n#00ffff000000 m\n-authorization\n-x_gateway_subject\n+x-gateway-subject:alice",
        );
        let contract::Decision::Forward(plan) = decision.view() else { panic!("forward") };
        apply(&plan, &mut headers).expect("valid plan");
        assert_eq!(headers.len(), 2);
        assert_eq!(headers["x-gateway-subject"], "alice");
        assert!(headers.contains_key("x-kept"));
    }

    #[test]
    fn changes_the_response_as_the_forward_says() {
        let mut headers = HeaderMap::new();
        headers.insert("access-control-allow-origin", HeaderValue::from_static("*"));
        headers.insert("vary", HeaderValue::from_static("accept-encoding"));
        let decision = forward(
            "http://u\n/\n#00ffff000000 -\n!access-control-allow-origin\n>access-control-allow-origin:https://app\n>vary:Origin",
        );
        let contract::Decision::Forward(plan) = decision.view() else { panic!("forward") };
        apply_to_response(&plan, &mut headers).expect("valid plan");
        assert_eq!(headers["access-control-allow-origin"], "https://app");
        let vary: Vec<_> = headers.get_all("vary").iter().collect();
        assert_eq!(vary, ["accept-encoding", "Origin"]);
    }

    #[test]
    fn answers_carry_their_fields_and_body() {
        let text = "invalid_token\nx\n#31ffffffffff -\n>www-authenticate:Bearer realm=\"g\"\n>content-type:application/json\n{}";
        let response = answer_response(&DecisionBuf::decode(401, text.as_bytes()).expect("answer"));
        assert_eq!(response.status(), 401);
        assert_eq!(response.headers()["www-authenticate"], "Bearer realm=\"g\"");
        assert_eq!(response.headers().len(), 2);
    }
}
