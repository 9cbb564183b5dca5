//! The core's decision for one request, read back from its output format
//! (`ABI.md`, "The decision"): a forward plan to carry out, or a reply to
//! send. Output that breaks the format is an error, which the filter
//! answers with a 500: it never forwards on a decision it cannot read.

use worker::abi::{Instance, compiled_config};

/// What the filter does with the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<'a> {
    /// Send it upstream, changed as the plan says.
    Forward(Plan<'a>),
    /// Answer it from Envoy.
    Reply(Reply<'a>),
}

/// A forward decision: everything the upstream request differs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan<'a> {
    /// The upstream's scheme and authority, as the route names it.
    pub origin: &'a str,
    /// The new `:path`: the route's base path and the normalized path and query.
    pub path: &'a str,
    /// Fields to remove, every one of each name.
    pub drops: Vec<&'a str>,
    /// Fields to set (name, value), in order, after the drops.
    pub sets: Vec<(&'a str, &'a str)>,
}

/// A rejection, as the client receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply<'a> {
    /// The HTTP status.
    pub status: u32,
    /// The `WWW-Authenticate` value, when the core gave one.
    pub www_authenticate: Option<&'a str>,
    /// The JSON body.
    pub body: &'a str,
}

/// Why the core's output cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// The output is not ASCII text.
    #[error("the decision is not ASCII text")]
    NotText,
    /// A forward whose origin or path line is missing or malformed.
    #[error("the forward plan has no origin or no path")]
    NoTarget,
    /// A plan line that is neither `-name` nor `+name:value`.
    #[error("plan line {line:?} is neither a drop nor a set")]
    BadPlanLine {
        /// The line as written.
        line: String,
    },
    /// A rejection that is not four lines, or whose status is not an HTTP error.
    #[error("the rejection (status {status}) does not follow the output format")]
    BadRejection {
        /// The status the core returned.
        status: u32,
    },
}

/// Runs the core on `input` (context line and head) at Unix time `now`, in
/// `instance`, with the compiled-in config, and reads its decision.
pub fn decide<'a>(instance: &'a mut Instance, input: &[u8], now: f64) -> Result<Decision<'a>, DecisionError> {
    // A head that does not fit is passed by its length only: the core answers 431.
    if let Some(buffer) = instance.input_mut().get_mut(..input.len()) {
        buffer.copy_from_slice(input);
    }
    let len = u32::try_from(input.len()).unwrap_or(u32::MAX);
    let status = instance.handle(len, now, compiled_config());
    read(status, instance.output())
}

/// Reads the output of a call that returned `status`.
pub fn read(status: u32, output: &[u8]) -> Result<Decision<'_>, DecisionError> {
    let text = std::str::from_utf8(output).ok().filter(|t| t.is_ascii()).ok_or(DecisionError::NotText)?;
    if status == 200 {
        read_plan(text).map(Decision::Forward)
    } else {
        read_reply(status, text).map(Decision::Reply)
    }
}

fn read_plan(text: &str) -> Result<Plan<'_>, DecisionError> {
    let mut lines = text.split('\n');
    let origin = lines.next().filter(|o| o.starts_with("http://") || o.starts_with("https://"));
    let path = lines.next().filter(|p| p.starts_with('/'));
    let (Some(origin), Some(path)) = (origin, path) else {
        return Err(DecisionError::NoTarget);
    };
    let mut plan = Plan { origin, path, drops: Vec::new(), sets: Vec::new() };
    for line in lines {
        let bad = || DecisionError::BadPlanLine { line: line.to_owned() };
        if let Some(name) = line.strip_prefix('-').filter(|n| !n.is_empty()) {
            plan.drops.push(name);
        } else if let Some(set) = line.strip_prefix('+') {
            plan.sets.push(set.split_once(':').filter(|(n, _)| !n.is_empty()).ok_or_else(bad)?);
        } else {
            return Err(bad());
        }
    }
    Ok(plan)
}

fn read_reply(status: u32, text: &str) -> Result<Reply<'_>, DecisionError> {
    let bad = DecisionError::BadRejection { status };
    let mut lines = text.splitn(4, '\n');
    let (Some(_code), Some(_reason), Some(challenge), Some(body)) =
        (lines.next(), lines.next(), lines.next(), lines.next())
    else {
        return Err(bad);
    };
    if !(400..=599).contains(&status) || body.contains('\n') {
        return Err(bad);
    }
    Ok(Reply { status, www_authenticate: Some(challenge).filter(|c| !c.is_empty()), body })
}

#[cfg(test)]
mod tests {
    use super::*;
    use worker::abi::INPUT_CAPACITY;

    #[test]
    fn reads_a_forward_plan() {
        let output = b"http://10.0.0.5\n/orders-svc/items?x=1\n-host\n-authorization\n+x-gateway-subject:alice\n+x-forwarded-for:192.0.2.7";
        let plan = match read(200, output) {
            Ok(Decision::Forward(plan)) => plan,
            other => panic!("not a plan: {other:?}"),
        };
        assert_eq!(plan.origin, "http://10.0.0.5");
        assert_eq!(plan.path, "/orders-svc/items?x=1");
        assert_eq!(plan.drops, ["host", "authorization"]);
        assert_eq!(plan.sets, [("x-gateway-subject", "alice"), ("x-forwarded-for", "192.0.2.7")]);
    }

    #[test]
    fn reads_a_rejection_with_and_without_a_challenge() {
        let expired = b"invalid_token\ntoken expired\nBearer realm=\"gateway\", error=\"invalid_token\"\n{\"error\":\"invalid_token\"}";
        assert_eq!(
            read(401, expired),
            Ok(Decision::Reply(Reply {
                status: 401,
                www_authenticate: Some("Bearer realm=\"gateway\", error=\"invalid_token\""),
                body: "{\"error\":\"invalid_token\"}",
            }))
        );
        let failed = read(500, b"\nhost clock invalid\n\n{}");
        assert!(matches!(failed, Ok(Decision::Reply(Reply { status: 500, www_authenticate: None, .. }))));
    }

    #[test]
    fn refuses_output_that_breaks_the_format() {
        assert_eq!(read(200, b"/no-origin\n/x"), Err(DecisionError::NoTarget));
        assert_eq!(read(200, b"http://h\nno-slash"), Err(DecisionError::NoTarget));
        assert!(matches!(read(200, b"http://h\n/\n*x"), Err(DecisionError::BadPlanLine { .. })));
        assert!(matches!(read(200, b"http://h\n/\n+novalue"), Err(DecisionError::BadPlanLine { .. })));
        assert_eq!(read(401, b"a\nb\nc"), Err(DecisionError::BadRejection { status: 401 }));
        assert_eq!(read(302, b"a\nb\nc\nd"), Err(DecisionError::BadRejection { status: 302 }));
        assert_eq!(read(200, "http://h\n/\u{e9}".as_bytes()), Err(DecisionError::NotText));
    }

    #[test]
    fn the_core_decides_through_the_instance() {
        let mut instance = Box::new(Instance::new());
        let input = b"http 127.0.0.1\nGET / HTTP/1.1\r\nHost: gw\r\n\r\n";
        let decision = decide(&mut instance, input, 1.8e9).expect("readable");
        assert!(matches!(decision, Decision::Reply(Reply { status: 401, .. })), "{decision:?}");
        let huge = vec![b'a'; INPUT_CAPACITY + 1];
        let decision = decide(&mut instance, &huge, 1.8e9).expect("readable");
        assert!(matches!(decision, Decision::Reply(Reply { status: 431, .. })), "{decision:?}");
    }
}
