//! `host-sim eval`: decide requests read as JSON Lines.
//!
//! Each input line is `{"request": "<raw request head, CRLF line ends>"}`,
//! optionally with `"now": <unix seconds>` and `"peer": "<IP address>"`
//! (default 127.0.0.1). Each output line is the decision, in input order:
//! for a forward `{"status": 200, "upstream", "sub", "drop", "set",
//! "response_drop", "response_add"}` (`upstream` the URL the module forwards
//! to, `drop` and `set` the request fields it removes and sets, the
//! `response_` ones what it changes in the upstream's response); for a
//! direct answer `{"status", "error", "reason", "fields", "body"}` and, for
//! convenience, `"www_authenticate"` (its challenge field or null). Both
//! carry `"labels"`: what decided it (`{"outcome", "rule", "route",
//! "issuer", "cache"}`, named as `serve --metrics` names them, null for none). A line that is not valid JSON, or has no `request`
//! string, gets `{"status": null, ..., "input_error": "..."}` and the rest go on.
//!
//! A module with rate limits has each forward counted in process at its
//! line's `now` (`crate::traffic`): a spent bucket's line is the module's
//! 429, so a file of lines replays a burst.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use serde_json::{Value, json};

use contract::Decision;
use contract::outcome::Cache;
use contract::owned::DecisionBuf;

use runtime::{Input, Isolation, Outcome, Reusable, Runtime, unix_now};

use crate::args::{EngineArgs, NamingArgs, SourceArgs};
use crate::metrics::Names;
use crate::traffic::{Counted, Counting, FailMode, StoreKind, TrafficArgs, table};

/// `host-sim eval` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct EvalArgs {
    /// The module.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Engine and instance settings.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// The config that names the module's one issuer.
    #[command(flatten)]
    pub naming: NamingArgs,
    /// The clock passed to the module, Unix seconds (default: now). A line's "now" overrides it.
    #[arg(long, value_name = "UNIX_SECS")]
    pub now: Option<f64>,
}

/// The JSON line for one outcome, its labels named by `names`.
pub fn outcome_json(outcome: &Outcome, names: &Names) -> Value {
    let host_answer;
    let decision = match outcome {
        Ok(d) => d,
        Err(e) => {
            host_answer = DecisionBuf::host_answer(e.answer());
            &host_answer
        }
    };
    let view = decision.view();
    let labels = match &view {
        Decision::Forward(forward) => forward.labels,
        Decision::Answer(answer) => answer.labels,
    };
    let named = names.decision(&labels);
    let or_null = |name: &str| (!name.is_empty()).then(|| name.to_owned());
    let cache = match labels.cache {
        Cache::Hit => "hit",
        Cache::Miss => "miss",
        Cache::None => "none",
    };
    let labels = json!({
        "outcome": named.outcome.0, "rule": or_null(named.rule.0), "route": or_null(named.route.0),
        "issuer": or_null(named.issuer.0), "cache": cache,
    });
    let mut line = match view {
        Decision::Forward(forward) => json!({
            "status": 200, "upstream": format!("{}{}", forward.origin, forward.path),
            "sub": forward.request_set(contract::fields::SUBJECT),
            "drop": forward.request_drops().collect::<Vec<_>>(),
            "set": forward.request_sets().collect::<Vec<_>>(),
            "response_drop": forward.response_drops().collect::<Vec<_>>(),
            "response_add": forward.response_adds().collect::<Vec<_>>(),
            "error": null, "reason": null, "www_authenticate": null, "body": null,
        }),
        Decision::Answer(answer) => json!({
            "status": answer.status, "upstream": null, "sub": null,
            "error": (!answer.error.is_empty()).then_some(answer.error),
            "reason": match outcome { Ok(_) => answer.reason.to_owned(), Err(e) => e.reason() },
            "fields": answer.fields().collect::<Vec<_>>(),
            "www_authenticate": answer.field("www-authenticate"), "body": answer.body,
        }),
    };
    if let Some(object) = line.as_object_mut() {
        object.insert("labels".to_owned(), labels);
    }
    line
}

/// The JSON line for an input line that could not be read as a request.
pub fn input_error_json(line_number: usize, why: &str) -> Value {
    json!({
        "status": null, "upstream": null, "sub": null, "error": null, "reason": null,
        "input_error": format!("line {line_number}: {why}"),
    })
}

/// Decides every request of `input` and writes one JSON line each to `output`.
pub fn eval_stream(
    runtime: &Runtime,
    names: &Names,
    counting: Option<&Counting>,
    isolation: Isolation,
    default_now: f64,
    input: impl BufRead,
    mut output: impl Write,
) -> std::io::Result<()> {
    let mut reusable = Reusable::default();
    for (index, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Err(e) => input_error_json(index + 1, &format!("not JSON: {e}")),
            Ok(value) => match value.get("request").and_then(Value::as_str) {
                None => input_error_json(index + 1, "no \"request\" string"),
                Some(head) => {
                    let now = match value.get("now") {
                        None | Some(Value::Null) => Some(default_now),
                        Some(v) => v.as_f64(),
                    };
                    let peer = match value.get("peer") {
                        None | Some(Value::Null) => Ok(Input::from(head.as_bytes()).peer),
                        Some(v) => v.as_str().and_then(|p| p.parse().ok()).map(Some).ok_or(()),
                    };
                    match (now, peer) {
                        (None, _) => input_error_json(index + 1, "\"now\" is not a number"),
                        (_, Err(())) => input_error_json(index + 1, "\"peer\" is not an IP address"),
                        (Some(now), Ok(peer)) => {
                            let input = Input { peer, ..Input::from(head.as_bytes()) };
                            let count = |decision: &DecisionBuf| match (counting, decision.view()) {
                                (Some(counting), Decision::Forward(forward)) => {
                                    match counting.count_here(&forward, (now * 1e6) as u64) {
                                        Some(Counted::Refused(refusal)) => Some(refusal),
                                        _ => None,
                                    }
                                }
                                _ => None,
                            };
                            let outcome = runtime.decide_counted(isolation, &mut reusable, input, now, count);
                            outcome_json(&outcome, names)
                        }
                    }
                }
            },
        };
        writeln!(output, "{answer}")?;
    }
    output.flush()
}

/// Runs `host-sim eval`.
pub fn run(args: &EvalArgs) -> ExitCode {
    let runtime = match Runtime::load(&args.engine.options(), &args.source.source(), 2) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let names = match Names::of_module(&runtime, &args.source.source(), args.naming.config.as_deref()) {
        Ok(names) => names,
        Err(e) => {
            eprintln!("error: cannot read the module's label table: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A module with limits: counted in process, at each line's clock.
    let traffic = TrafficArgs {
        store: StoreKind::Local,
        limits_fail: FailMode::Open,
        limits_timeout_ms: 50,
        limits_capacity: table::DEFAULT_CAPACITY,
    };
    let counting = match crate::traffic::for_module(&runtime, &traffic, None) {
        Ok(counting) => counting,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let now = args.now.unwrap_or_else(unix_now);
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    match eval_stream(&runtime, &names, counting.as_ref(), args.engine.isolation, now, stdin, stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
