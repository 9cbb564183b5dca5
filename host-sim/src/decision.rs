//! The module's answer, parsed from the output format of `worker/ABI.md`,
//! and the host's own answers when the module gave none.

use crate::error::GuestError;

/// What to do with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Forward to `upstream` + the original path and query.
    Forward {
        /// The upstream base URL.
        upstream: String,
        /// The token's subject, sent as `X-Gateway-Subject`; None when the token has none.
        subject: Option<String>,
    },
    /// Answer the client directly.
    Reject(Rejected),
}

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
            Decision::Forward { .. } => 200,
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
        let (upstream, subject) =
            text.split_once('\n').ok_or(GuestError::BadOutput("forward without subject field"))?;
        if upstream.is_empty() || subject.contains('\n') {
            return Err(GuestError::BadOutput("forward fields"));
        }
        return Ok(Decision::Forward {
            upstream: upstream.to_owned(),
            subject: (!subject.is_empty()).then(|| subject.to_owned()),
        });
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

/// The JSON body of an answer the host makes itself: `{"error_description":...}`.
pub fn description_body(description: &str) -> String {
    serde_json::json!({ "error_description": description }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_forwards_and_rejections() {
        assert_eq!(
            parse(200, b"http://a\nalice"),
            Ok(Decision::Forward { upstream: "http://a".into(), subject: Some("alice".into()) })
        );
        assert_eq!(
            parse(200, b"http://a\n"),
            Ok(Decision::Forward { upstream: "http://a".into(), subject: None })
        );
        let out = b"invalid_token\ntoken expired\nBearer realm=\"g\"\n{\"error\":\"invalid_token\"}";
        let Ok(Decision::Reject(r)) = parse(401, out) else { panic!("reject") };
        assert_eq!(r.error.as_deref(), Some("invalid_token"));
        assert_eq!(r.reason, "token expired");
        assert_eq!(r.body, "{\"error\":\"invalid_token\"}");
        assert!(parse(401, b"x").is_err());
        assert!(parse(200, b"nolines").is_err());
        assert!(parse(7, b"a\nb\nc\nd").is_err());
    }
}
