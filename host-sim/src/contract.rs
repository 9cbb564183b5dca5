//! The host-module contract (`worker/ABI.md`) as this host speaks it: the
//! version it knows, what it writes into the module (the context line and
//! the request head), what it reads back (the decision, the route table),
//! and the answers the host makes itself when the module gives none.

use std::net::IpAddr;

use crate::error::GuestError;

/// The contract version this host implements.
pub const ABI_VERSION: u32 = 2;

/// The scheme the client used to reach the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

/// One request as the module reads it: the connection facts only the host
/// knows, and the request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Input<'a> {
    /// The scheme the client used, for `X-Forwarded-Proto`.
    pub scheme: Scheme,
    /// The peer's address, for `X-Forwarded-For`; None when unknown.
    pub peer: Option<IpAddr>,
    /// The request head: request line, fields, blank line.
    pub head: &'a [u8],
}

impl<'a> From<&'a [u8]> for Input<'a> {
    /// A head from a loopback client over plain HTTP: what `eval`, `bench`
    /// and the library's examples send.
    fn from(head: &'a [u8]) -> Input<'a> {
        Input { scheme: Scheme::Http, peer: Some(IpAddr::from([127, 0, 0, 1])), head }
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for Input<'a> {
    fn from(head: &'a [u8; N]) -> Input<'a> {
        Input::from(head.as_slice())
    }
}

impl<'a> From<&'a Vec<u8>> for Input<'a> {
    fn from(head: &'a Vec<u8>) -> Input<'a> {
        Input::from(head.as_slice())
    }
}

/// The longest context line: `https `, an IPv6 address (39), `\n`.
pub const MAX_CONTEXT_LINE: usize = 64;

impl Input<'_> {
    /// The context line the module reads before the head: `<scheme> <peer>\n`.
    pub fn context_line(&self) -> String {
        let mut line = [0u8; MAX_CONTEXT_LINE];
        let len = self.write_context_line(&mut line);
        String::from_utf8_lossy(&line[..len]).into_owned()
    }

    /// Writes the context line into `out` and returns its length: the
    /// request path's form, without an allocation per request.
    pub fn write_context_line(&self, out: &mut [u8; MAX_CONTEXT_LINE]) -> usize {
        use std::io::Write as _;
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        let mut cursor = std::io::Cursor::new(&mut out[..]);
        // Fits: the longest scheme, address and separators are under 64 bytes.
        let _ = match self.peer {
            Some(peer) => writeln!(cursor, "{scheme} {}", peer.to_canonical()),
            None => writeln!(cursor, "{scheme} unknown"),
        };
        cursor.position() as usize
    }
}

/// What to do with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Forward, exactly as planned.
    Forward(Plan),
    /// Answer the client directly.
    Reject(Rejected),
}

/// The upstream request the module decided on. A host executes it
/// literally: it sends the client's method and body to `origin` + `path`,
/// with the client's fields less every one named in `drop`, plus `set`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The upstream's scheme and authority, as the module's route names it.
    pub origin: String,
    /// The path and query to request: the route's base path and the
    /// normalized target.
    pub path: String,
    /// Field names (lower case) to remove, every field of that name.
    pub drop: Vec<String>,
    /// Fields to set, in order, replacing any of the same name.
    pub set: Vec<(String, String)>,
}

impl Plan {
    /// The value the plan sets for `name`, if any.
    pub fn set_value(&self, name: &str) -> Option<&str> {
        self.set.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The subject the module forwards, if any.
    pub fn subject(&self) -> Option<&str> {
        self.set_value(SUBJECT_FIELD)
    }
}

/// The header that carries the token's subject upstream.
pub const SUBJECT_FIELD: &str = "x-gateway-subject";

/// A direct answer: the module's rejection, or the host's when the module failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The HTTP status.
    pub status: u16,
    /// The RFC 6750 error code (`invalid_request`, `invalid_token`), if any.
    pub error: Option<String>,
    /// A short reason.
    pub reason: String,
    /// The `WWW-Authenticate` value, if any.
    pub www_authenticate: Option<String>,
    /// The JSON body.
    pub body: String,
}

impl Decision {
    /// The HTTP status of the decision (200 for a forward).
    pub fn status(&self) -> u16 {
        match self {
            Decision::Forward(_) => 200,
            Decision::Reject(r) => r.status,
        }
    }

    /// The host's answer for a request the module could not decide: the
    /// body `worker/ABI.md` fixes for every host, the detailed reason in `reason`.
    pub fn from_guest_error(error: &GuestError) -> Decision {
        Decision::Reject(Rejected {
            status: error.status(),
            error: None,
            body: description_body(error.public_description()),
            reason: error.reason(),
            www_authenticate: None,
        })
    }
}

/// Parses the module's output for `status` (the return value of `handle`).
pub fn parse(status: u32, output: &[u8]) -> Result<Decision, GuestError> {
    let text = std::str::from_utf8(output).map_err(|_| GuestError::BadOutput("not UTF-8"))?;
    let status = u16::try_from(status)
        .ok()
        .filter(|s| (100..=599).contains(s))
        .ok_or(GuestError::BadOutput("status out of range"))?;
    if status == 200 {
        return parse_plan(text).map(Decision::Forward);
    }
    let mut fields = text.splitn(4, '\n');
    let (Some(error), Some(reason), Some(challenge), Some(body)) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        // A 500 with no output at all is the module's own failure, still a decision.
        if status == 500 && text.is_empty() {
            return Ok(Decision::Reject(Rejected {
                status,
                error: None,
                reason: "gateway module failed".into(),
                www_authenticate: None,
                body: description_body("gateway module failed"),
            }));
        }
        return Err(GuestError::BadOutput("rejection needs four fields"));
    };
    Ok(Decision::Reject(Rejected {
        status,
        error: (!error.is_empty()).then(|| error.to_owned()),
        reason: reason.to_owned(),
        www_authenticate: (!challenge.is_empty()).then(|| challenge.to_owned()),
        body: body.to_owned(),
    }))
}

/// Parses a forward plan: origin, path, then `-name` and `+name:value` lines.
fn parse_plan(text: &str) -> Result<Plan, GuestError> {
    let mut lines = text.split('\n');
    let (Some(origin), Some(path)) = (lines.next(), lines.next()) else {
        return Err(GuestError::BadOutput("forward needs an origin and a path"));
    };
    if !(origin.starts_with("http://") || origin.starts_with("https://")) || !path.starts_with('/') {
        return Err(GuestError::BadOutput("forward origin or path"));
    }
    let mut plan =
        Plan { origin: origin.to_owned(), path: path.to_owned(), drop: Vec::new(), set: Vec::new() };
    for line in lines {
        if let Some(name) = line.strip_prefix('-') {
            plan.drop.push(name.to_owned());
        } else if let Some((name, value)) = line.strip_prefix('+').and_then(|l| l.split_once(':')) {
            plan.set.push((name.to_owned(), value.to_owned()));
        } else {
            return Err(GuestError::BadOutput("forward field operation"));
        }
    }
    Ok(plan)
}

/// Parses the route table the `routes` export writes: `<audience> <upstream>` per line.
pub fn parse_routes(output: &[u8]) -> Result<Vec<(String, String)>, GuestError> {
    let text = std::str::from_utf8(output).map_err(|_| GuestError::BadOutput("routes not UTF-8"))?;
    if text.is_empty() {
        return Ok(Vec::new());
    }
    text.split('\n')
        .map(|line| {
            line.split_once(' ')
                .map(|(aud, upstream)| (aud.to_owned(), upstream.to_owned()))
                .ok_or(GuestError::BadOutput("route line"))
        })
        .collect()
}

/// The JSON body of an answer the host makes itself: `{"error_description":...}`.
pub fn description_body(description: &str) -> String {
    serde_json::json!({ "error_description": description }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plans_and_rejections() {
        let plan = "http://a:1\n/svc/x?q\n-host\n-x_gateway_subject\n+x-gateway-subject:alice\n+x-forwarded-for:1.2.3.4";
        let Ok(Decision::Forward(plan)) = parse(200, plan.as_bytes()) else { panic!("forward") };
        assert_eq!(plan.origin, "http://a:1");
        assert_eq!(plan.path, "/svc/x?q");
        assert_eq!(plan.drop, ["host", "x_gateway_subject"]);
        assert_eq!(plan.subject(), Some("alice"));
        assert_eq!(plan.set_value("X-Forwarded-For"), Some("1.2.3.4"));
        let out = b"invalid_token\ntoken expired\nBearer realm=\"g\"\n{\"error\":\"invalid_token\"}";
        let Ok(Decision::Reject(r)) = parse(401, out) else { panic!("reject") };
        assert_eq!(r.error.as_deref(), Some("invalid_token"));
        assert_eq!(r.reason, "token expired");
        assert_eq!(r.body, "{\"error\":\"invalid_token\"}");
        assert!(parse(401, b"x").is_err());
        assert!(parse(200, b"nolines").is_err());
        assert!(parse(200, b"http://a\n/\n?what").is_err());
        assert!(parse(200, b"ftp://a\n/").is_err());
        assert!(parse(7, b"a\nb\nc\nd").is_err());
    }

    #[test]
    fn context_lines() {
        let head: &[u8] = b"GET / HTTP/1.1\r\n\r\n";
        assert_eq!(Input::from(head).context_line(), "http 127.0.0.1\n");
        let v6 = Input { scheme: Scheme::Https, peer: Some("::ffff:10.0.0.1".parse().expect("ip")), head };
        assert_eq!(v6.context_line(), "https 10.0.0.1\n");
        let unknown = Input { peer: None, ..v6 };
        assert_eq!(unknown.context_line(), "https unknown\n");
        assert_eq!(parse_routes(b"a http://h/x\nb http://g").expect("routes").len(), 2);
    }
}
