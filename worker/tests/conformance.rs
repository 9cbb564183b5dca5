//! The forwarding conformance corpus (`testkit/conformance/forwarding.jsonl`)
//! against the native request path: the module's decision for each request,
//! with its plan applied to the request's own fields, must be the outcome the
//! corpus states. The same corpus runs over real HTTP through every host
//! (`testkit/conformance/hosts.test.mjs`).

use std::path::PathBuf;

use serde_json::Value;
use worker::config::Config;

const NOW: f64 = 1_800_000_000.0;
const CONTEXT: &str = "http 127.0.0.1\n";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Fields that belong to the HTTP stack's framing, not to the plan.
const FRAMING: [&str; 4] = ["host", "content-length", "transfer-encoding", "connection"];

/// What the module decided for one request, in the corpus's terms.
fn outcome(config: &Config<'_>, request: &[u8]) -> Value {
    let head_end = request.windows(4).position(|w| w == b"\r\n\r\n").map_or(request.len(), |i| i + 4);
    let (head, body) = request.split_at(head_end);
    let mut input = CONTEXT.as_bytes().to_vec();
    input.extend_from_slice(head);
    let mut scratch = vec![0u8; worker::abi::SCRATCH_CAPACITY];
    let answer = worker::handle(&input, NOW, config, &mut scratch);
    let text: String = answer.output.iter().map(|&b| char::from(b)).collect();
    let lines: Vec<&str> = text.split('\n').collect();
    if answer.status != 200 {
        return serde_json::json!({ "status": answer.status, "reason": lines[1] });
    }
    // Apply the plan to the request's own fields.
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut fields);
    parsed.parse(head).expect("a forwarded head parses");
    let drops: Vec<String> =
        lines[2..].iter().filter_map(|l| l.strip_prefix('-')).map(str::to_owned).collect();
    let sets: Vec<(String, String)> = lines[2..]
        .iter()
        .filter_map(|l| l.strip_prefix('+')?.split_once(':'))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    let mut headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| (h.name.to_ascii_lowercase(), h.value.iter().map(|&b| char::from(b)).collect()))
        .filter(|(name, _)| !drops.contains(name) && !sets.iter().any(|(set, _)| set == name))
        .chain(sets.clone())
        .filter(|(name, _)| !FRAMING.contains(&name.as_str()))
        .collect();
    headers.sort();
    serde_json::json!({
        "status": 200,
        "upstream": {
            "line": format!("{} {} HTTP/1.1", parsed.method.expect("method"), lines[1]),
            "origin": lines[0],
            "headers": headers,
            "body": body_of(head, body),
        }
    })
}

/// The body as the upstream receives it: a chunked body decoded.
fn body_of(head: &[u8], body: &[u8]) -> String {
    let text: String = body.iter().map(|&b| char::from(b)).collect();
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    if !head.contains("transfer-encoding: chunked") {
        return text;
    }
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size, 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    out
}

/// Whether `got` is the outcome `expected` states (or one of its choices,
/// or, when the corpus pins each host's own, the native path's: `module`).
fn matches(expected: &Value, got: &Value) -> bool {
    if let Some(choices) = expected.get("any_of").and_then(Value::as_array) {
        return choices.iter().any(|choice| matches(choice, got));
    }
    if let Some(hosts) = expected.get("hosts") {
        return hosts.get("module").is_some_and(|own| matches(own, got));
    }
    let mut expected = expected.clone();
    if let Some(object) = expected.as_object_mut() {
        object.remove("front_end");
    }
    expected == *got
}

#[test]
fn every_single_request_case_gets_the_stated_outcome() {
    let config = testkit::fixture::worker_config();
    let corpus =
        std::fs::read_to_string(root().join("testkit/conformance/forwarding.jsonl")).expect("corpus");
    let mut checked = 0;
    let mut failures = Vec::new();
    for line in corpus.lines() {
        let case: Value = serde_json::from_str(line).expect("a JSON line");
        let name = case["name"].as_str().expect("name");
        let expect = case["expect"].as_array().expect("expect");
        if expect.len() != 1 {
            continue; // pipelined: judged over real HTTP only
        }
        let request: Vec<u8> = case["request"].as_str().expect("request").chars().map(|c| c as u8).collect();
        let got = outcome(config, &request);
        if !matches(&expect[0], &got) {
            failures.push(format!("{name}:\n  expected {}\n  got      {got}", expect[0]));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{} of {checked} cases differ:\n{}", failures.len(), failures.join("\n"));
    assert!(checked >= 40, "only {checked} cases");
}
