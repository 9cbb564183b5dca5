//! `bench-tool report DIR OUT`: `docs/PERFORMANCE.md` and its charts from
//! the results `benches/run.sh` left in DIR. The prose is
//! `benches/report.md.tmpl`; this module computes each placeholder's value
//! from the run's figures, looked up by the ids of [`gateway_benches::ids`].
//! Nothing here is a number of its own.
//!
//! The report is written only when complete: a figure the template needs
//! and the run did not produce (a failed or renamed benchmark) makes it
//! fail with the name of every such figure, and so does a placeholder of the
//! template that nothing fills or a value that no placeholder uses.

mod results;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gateway_benches::corpus::{self, PHASES};
use gateway_benches::ids;
use gateway_benches::latency::Series;
use gateway_benches::svg;
use gateway_benches::table::{Table, left, right};
use gateway_benches::template::{self, TemplateError};
use results::{HTTP_STEP, Missing, NODE_STEP, Results};
use testkit::mix::RequestKind;

/// The report's prose, with its placeholders.
const TEMPLATE: &str = include_str!("../../report.md.tmpl");

/// Why no report was written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Figures the report needs that the run did not produce.
    #[error("{} figure(s) the report needs are missing from the results:\n  {}", .0.len(), list(.0))]
    Missing(Vec<Missing>),
    /// The template and the values disagree.
    #[error("benches/report.md.tmpl: {0}")]
    Template(#[from] TemplateError),
    /// The report or a chart could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

fn list(missing: &[Missing]) -> String {
    missing.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  ")
}

/// The report's text and its charts (file name, SVG).
#[derive(Debug)]
pub struct Report {
    /// `docs/PERFORMANCE.md`.
    pub markdown: String,
    /// Charts for `docs/perf/`.
    pub charts: Vec<(&'static str, String)>,
}

/// Writes the report for the results in `dir` to `out`; the exit code.
pub fn run(dir: &str, out: &str) -> i32 {
    let results = Results::load(Path::new(dir));
    match render(&results).and_then(|report| write(&report, Path::new(out))) {
        Ok(()) => {
            eprintln!("wrote {out}");
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

fn write(report: &Report, out: &Path) -> Result<(), ReportError> {
    let fail = |path: &Path| {
        let path = path.to_owned();
        move |source| ReportError::Write { path, source }
    };
    let charts = out.parent().unwrap_or(Path::new(".")).join("perf");
    std::fs::create_dir_all(&charts).map_err(fail(&charts))?;
    for (name, svg) in &report.charts {
        let path = charts.join(name);
        std::fs::write(&path, svg).map_err(fail(&path))?;
    }
    std::fs::write(out, &report.markdown).map_err(fail(out))
}

/// The report for `results`, or everything that keeps it from being complete.
pub fn render(r: &Results) -> Result<Report, ReportError> {
    let mut v = Values::default();
    let mut charts = Vec::new();
    for name in template::placeholders(TEMPLATE)? {
        if let Some(group) = name.strip_prefix("cmd:") {
            if let Some(group) = ids::group(group) {
                v.set(name, group.command());
            }
        } else if let Some(key) = name.strip_prefix("machine:") {
            v.set(name, r.machine(key));
        }
    }
    header(&mut v, r);
    summary(&mut v, r);
    per_request(&mut v, r);
    per_kind(&mut v, r);
    charts.extend(latency(&mut v, r));
    stages(&mut v, r);
    peers(&mut v, r);
    cold_start(&mut v, r);
    host_bench(&mut v, r);
    charts.extend(http(&mut v, r));
    sizes(&mut v, r);
    let missing = r.take_missing();
    if !missing.is_empty() {
        return Err(ReportError::Missing(missing));
    }
    Ok(Report { markdown: template::fill(TEMPLATE, &v.0)?, charts })
}

/// The placeholders' values.
#[derive(Default)]
struct Values(BTreeMap<String, String>);

impl Values {
    fn set(&mut self, name: &str, value: impl Into<String>) {
        let previous = self.0.insert(name.to_owned(), value.into());
        assert!(previous.is_none(), "{name} is set twice");
    }
}

// ---- formatting ----------------------------------------------------------------

/// Nanoseconds as text with a unit.
fn t(ns: f64) -> String {
    if !ns.is_finite() {
        "n/a".into()
    } else if ns < 0.0 {
        format!("−{}", t(-ns))
    } else if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e4 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// A figure, or "skipped" for one whose step did not run.
fn to(ns: Option<f64>) -> String {
    ns.map_or_else(|| "skipped".into(), t)
}

/// `a / b` as "1.23x".
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "–".into(),
    }
}

/// `a / b` as a percentage.
fn pct(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.0}%", a / b * 100.0),
        _ => "–".into(),
    }
}

/// `a - b`.
fn minus(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? - b?)
}

/// `a - b` with the change relative to `b`: "823 ns (+19%)".
fn cost(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{} ({:+.0}%)", t(a - b), (a / b - 1.0) * 100.0),
        _ => "–".into(),
    }
}

/// Microseconds (the host's bench reports them) as text.
fn us(x: Option<f64>) -> String {
    to(x.map(|x| x * 1e3))
}

// ---- sections ------------------------------------------------------------------

fn header(v: &mut Values, r: &Results) {
    let skipped: Vec<&str> = r.skipped.iter().map(String::as_str).collect();
    v.set(
        "skipped",
        if skipped.is_empty() {
            String::new()
        } else {
            format!(
                " **Steps skipped in this run** (`BENCH_SKIP`): {}; their figures read \"skipped\". A quick look, not a report to publish.",
                skipped.join(", ")
            )
        },
    );
    let corpus = r.corpus();
    let total = corpus.kinds.len();
    let shares: Vec<String> = RequestKind::ALL
        .iter()
        .map(|&kind| {
            let n = corpus.kinds.iter().filter(|k| *k == corpus::slug(kind)).count();
            format!("{:.0}% {}", n as f64 / total.max(1) as f64 * 100.0, kind.name())
        })
        .collect();
    v.set("mix_len", total.to_string());
    v.set("mix_seed", corpus.seed.to_string());
    v.set("mix_shares", shares.join(", "));
    v.set("mix_head_bytes", format!("{:.0}", corpus.mean_head_bytes));
    v.set("token_bytes", corpus.token_bytes.to_string());
    v.set("mix_now", corpus.now.to_string());
    v.set("deadline_ms", host_sim::engine::DEFAULT_DEADLINE_MS.to_string());
    // The HMAC of the signing input: 2 compressions for the padded key (inner
    // and outer), the inner hash's message blocks, 1 for the outer hash.
    let message_blocks = (64 + corpus.signing_input_bytes + 9).div_ceil(64) - 1;
    v.set("signing_input_bytes", corpus.signing_input_bytes.to_string());
    v.set("hmac_message_compressions", message_blocks.to_string());
    v.set("hmac_compressions", (message_blocks + 3).to_string());
}

fn summary(v: &mut Values, r: &Results) {
    let native = r.get(ids::NATIVE_MIX);
    let reuse = r.get(ids::PAIRED_REUSE.id(ids::JIT_DEADLINE));
    let fresh = r.get(ids::PAIRED_FRESH.id(ids::JIT_DEADLINE));
    let reuse_criterion = r.get(ids::REUSE_DEADLINE);
    let fresh_criterion = r.get(ids::FRESH_DEADLINE);
    let micro = r.get(ids::MICROSERVICE_MIX);
    v.set("native_mix", to(native));
    v.set("reuse", to(reuse));
    v.set("reuse_vs_native", ratio(reuse, native));
    v.set("fresh", to(fresh));
    v.set("fresh_vs_reuse", ratio(fresh, reuse));
    v.set("cold_deserialize", to(r.get(ids::COLD_DESERIALIZE)));
    v.set("cold_jit", to(r.get(ids::COLD_JIT_CRANELIFT)));
    for (group, name) in
        [(ids::PAIRED_REUSE, "cwasm_vs_jit_reuse"), (ids::PAIRED_FRESH, "cwasm_vs_jit_fresh")]
    {
        v.set(name, ratio(r.get(group.id(ids::CWASM_DEADLINE)), r.get(group.id(ids::JIT_DEADLINE))));
    }
    v.set("cwasm_vs_jit_reuse_criterion", ratio(r.get(ids::REUSE_CWASM), reuse_criterion));
    v.set("cwasm_vs_jit_fresh_criterion", ratio(r.get(ids::FRESH_CWASM), fresh_criterion));
    v.set("deadline_cost_reuse", cost(reuse, r.get(ids::PAIRED_REUSE.id(ids::JIT_NO_DEADLINE))));
    let phase = |name| r.get(ids::STAGES_WASMTIME.id(name));
    v.set("hmac_share", pct(minus(phase("bad_signature"), phase("unknown_kid")), phase("valid")));
    let (worker, prekeyed) = (r.get(ids::KERNEL_HMAC_WORKER), r.get(ids::KERNEL_HMAC_PREKEYED));
    v.set("prekeyed_saving", pct(minus(worker, prekeyed), worker));
    v.set("jsonwebtoken_vs_worker", ratio(r.get(ids::TOKEN_JWT_VALID), r.get(ids::TOKEN_WORKER_VALID)));
    v.set("node_wasm_vs_wasmtime", ratio(r.get(ids::NODE_WASM_REUSE), reuse_criterion));
    v.set("js_vs_wasmtime", ratio(r.get(ids::NODE_JS), reuse_criterion));
    v.set("microservice", to(micro));
    v.set("microservice_spinner", to(r.get(ids::MICROSERVICE_SPINNER)));
    v.set("microservice_vs_reuse", ratio(micro, reuse_criterion));
    v.set("microservice_vs_fresh", ratio(micro, fresh_criterion));
}

fn per_request(v: &mut Values, r: &Results) {
    let native = r.get(ids::NATIVE_MIX);
    let reuse = r.get(ids::REUSE_DEADLINE);
    let mut table = Table::new([
        left("host"),
        left("mode"),
        right("per request"),
        right("vs native"),
        right("vs wasmtime reuse"),
    ]);
    for (host, mode, id) in [
        ("native rlib", "function call", ids::NATIVE_MIX),
        ("wasmtime, Cranelift JIT", "reuse, deadline", ids::REUSE_DEADLINE),
        ("wasmtime, Cranelift JIT", "reuse, no deadline", ids::REUSE_NO_DEADLINE),
        ("wasmtime, .cwasm", "reuse, deadline", ids::REUSE_CWASM),
        ("wasmtime, Winch JIT", "reuse, deadline", ids::REUSE_WINCH),
        ("wasmtime, Cranelift JIT", "fresh, pooling, deadline", ids::FRESH_DEADLINE),
        ("wasmtime, Cranelift JIT", "fresh, pooling, no deadline", ids::FRESH_NO_DEADLINE),
        ("wasmtime, .cwasm", "fresh, pooling, deadline", ids::FRESH_CWASM),
        ("wasmtime, Cranelift JIT", "fresh, on-demand allocator, deadline", ids::FRESH_ON_DEMAND),
        ("Node.js WebAssembly (V8)", "reuse", ids::NODE_WASM_REUSE),
        ("Node.js WebAssembly (V8)", "fresh (new WebAssembly.Instance)", ids::NODE_WASM_FRESH),
        ("plain JavaScript + node:crypto (V8)", "function call", ids::NODE_JS),
        ("microservice (native, loopback HTTP, keep-alive)", "round trip", ids::MICROSERVICE_MIX),
    ] {
        let x = r.get(id);
        table.row([host.into(), mode.into(), to(x), ratio(x, native), ratio(x, reuse)]);
    }
    v.set("per_request_table", table.to_markdown());

    let mut table = Table::new([
        left("isolation"),
        right("Cranelift JIT, deadline"),
        right(".cwasm, deadline"),
        right(".cwasm / JIT"),
        right("JIT, no deadline"),
        right("deadline costs"),
        right("Winch, deadline"),
    ]);
    for (label, group) in [("reuse", ids::PAIRED_REUSE), ("fresh", ids::PAIRED_FRESH)] {
        let jit = r.get(group.id(ids::JIT_DEADLINE));
        let cwasm = r.get(group.id(ids::CWASM_DEADLINE));
        let off = r.get(group.id(ids::JIT_NO_DEADLINE));
        // Winch is compared in a reused instance only.
        let winch =
            if group == ids::PAIRED_REUSE { to(r.get(group.id(ids::WINCH_DEADLINE))) } else { String::new() };
        table.row([label.into(), to(jit), to(cwasm), ratio(cwasm, jit), to(off), cost(jit, off), winch]);
    }
    v.set("interleaved_table", table.to_markdown());
    let (jit, off) =
        (r.get(ids::PAIRED_REUSE.id(ids::JIT_DEADLINE)), r.get(ids::PAIRED_REUSE.id(ids::JIT_NO_DEADLINE)));
    v.set("deadline_share_reuse", pct(minus(jit, off), jit));
}

/// A Node.js row by name (`rows` of its output), unless the step was skipped.
fn node(r: &Results, row: &str) -> Option<f64> {
    if r.skipped(NODE_STEP) { None } else { r.figure(&format!("{}/{row}", ids::NODE.name)) }
}

fn per_kind(v: &mut Values, r: &Results) {
    let mut table = Table::new([
        left("request"),
        right("native"),
        right("wasmtime reuse"),
        right("wasm/native"),
        right("Node.js wasm reuse"),
        right("plain JS"),
        right("JS / wasmtime"),
    ]);
    for kind in RequestKind::ALL {
        let slug = corpus::slug(kind);
        let native = r.get(ids::PER_REQUEST_NATIVE.id(slug));
        let wasm = r.get(ids::PER_KIND_WASMTIME.id(slug));
        let js = node(r, &format!("js_{slug}"));
        let node_wasm = node(r, &format!("wasm_reuse_{slug}"));
        table.row([
            kind.name().into(),
            to(native),
            to(wasm),
            ratio(wasm, native),
            to(node_wasm),
            to(js),
            ratio(js, wasm),
        ]);
    }
    v.set("per_kind_table", table.to_markdown());
}

fn latency_table(series: &[&Series]) -> String {
    let mut table = Table::new([
        left("row"),
        right("samples"),
        right("mean"),
        right("p50"),
        right("p90"),
        right("p99"),
        right("p99.9"),
        right("max"),
    ]);
    for s in series {
        table.row([
            s.name.clone(),
            s.count.to_string(),
            t(s.mean_ns),
            t(s.p50_ns as f64),
            t(s.p90_ns as f64),
            t(s.p99_ns as f64),
            t(s.p999_ns as f64),
            t(s.max_ns as f64),
        ]);
    }
    table.to_markdown()
}

fn latency(v: &mut Values, r: &Results) -> Option<(&'static str, String)> {
    let series: Vec<&Series> = r.latency.iter().collect();
    if series.is_empty() {
        r.miss(Missing::File("latency.json"));
    }
    if !r.skipped(NODE_STEP) && !series.iter().any(|s| s.name.starts_with("node")) {
        r.miss(Missing::File("node.json"));
    }
    v.set("latency_table", latency_table(&series));
    let chart = svg::percentile_chart("Per-request latency over the mix (in process)", &series);
    Some(("per-request-latency.svg", chart))
}

fn stages(v: &mut Values, r: &Results) {
    let whole = r.get(ids::STAGE_WHOLE);
    let mut table = Table::new([left("stage"), left("function"), right("time"), right("share of the whole")]);
    let mut sum = Some(0.0);
    for (what, function, id) in [
        ("parse the head, find the token", "request::extract_bearer", ids::STAGE_PARSE_HEAD),
        ("split into three parts (alphabet check)", "jws::split", ids::STAGE_SPLIT),
        (
            "base64url: header, claims, signature",
            "jws::decode ×2, jws::decode_signature",
            ids::STAGE_BASE64URL,
        ),
        ("header JSON, alg/typ/crit, key by kid", "header::select_key", ids::STAGE_HEADER_JSON),
        ("HMAC-SHA256 and constant-time compare", "signature::verify", ids::STAGE_HMAC),
        ("claims JSON, time, issuer, audience, route", "claims::check", ids::STAGE_CLAIMS),
        ("route lookup alone", "route::lookup", ids::STAGE_ROUTE),
        ("write the decision", "response::write_grant", ids::STAGE_WRITE),
    ] {
        let x = r.get(id);
        // The route lookup is also inside claims::check: counted once.
        if id != ids::STAGE_ROUTE {
            sum = sum.zip(x).map(|(s, x)| s + x);
        }
        table.row([what.into(), format!("`{function}`"), to(x), pct(x, whole)]);
    }
    table.row([
        "**sum of the stages** (route counted once, inside claims)".into(),
        String::new(),
        to(sum),
        pct(sum, whole),
    ]);
    table.row(["**the whole request**".into(), "`worker::handle`".into(), to(whole), "100%".into()]);
    for (what, how, id) in [
        ("floor: HMAC-SHA256 of the same bytes", "`Hmac<Sha256>` new, update, finalize", ids::FLOOR_HMAC),
        (
            "floor with the key state precomputed",
            "clone of a keyed `Hmac`, update, verify",
            ids::FLOOR_HMAC_PREKEYED,
        ),
        ("SHA-256 alone of the same bytes", "`Sha256::digest`", ids::FLOOR_SHA256),
    ] {
        let x = r.get(id);
        table.row([what.into(), how.into(), to(x), ratio(x, whole)]);
    }
    v.set("native_stages_table", table.to_markdown());

    let labels = [
        "parse head + write rejection",
        "token copy, split, base64url header",
        "header JSON, key",
        "base64url signature + HMAC-SHA256",
        "claims base64url + JSON + checks + route",
        "grant instead of rejection",
    ];
    let mut table = Table::new([
        left("phase"),
        right("wasm (whole call)"),
        right("wasm phase"),
        right("native (whole call)"),
        right("native phase"),
        right("wasm / native"),
    ]);
    let mut previous: Option<(f64, f64)> = None;
    for (name, label) in PHASES.into_iter().zip(labels) {
        let wasm = r.get(ids::STAGES_WASMTIME.id(name));
        let native = r.get(ids::STAGES_NATIVE_BY_DIFFERENCE.id(name));
        let (dw, dn) = match previous {
            Some((pw, pn)) => (wasm.map(|w| w - pw), native.map(|n| n - pn)),
            None => (wasm, native),
        };
        let dr = match (dw, dn) {
            (Some(a), Some(b)) if a > 5.0 && b > 5.0 => format!("{:.1}x", a / b),
            _ => "–".into(),
        };
        table.row([format!("{label} (`{name}`)"), to(wasm), to(dw), to(native), to(dn), dr]);
        previous = wasm.zip(native);
    }
    v.set("phase_table", table.to_markdown());
    let phase = |name| r.get(ids::STAGES_WASMTIME.id(name));
    v.set("wasm_hmac_phase", to(minus(phase("bad_signature"), phase("unknown_kid"))));
    v.set("wasm_valid", to(phase("valid")));
}

fn peers(v: &mut Values, r: &Results) {
    let mut table =
        Table::new([left("token"), right("worker"), right("jsonwebtoken"), right("jsonwebtoken / worker")]);
    for (token, worker, jwt) in [
        ("valid", ids::TOKEN_WORKER_VALID, ids::TOKEN_JWT_VALID),
        ("expired", ids::TOKEN_WORKER_EXPIRED, ids::TOKEN_JWT_EXPIRED),
    ] {
        let (worker, jwt) = (r.get(worker), r.get(jwt));
        table.row([token.into(), to(worker), to(jwt), ratio(jwt, worker)]);
    }
    v.set("jsonwebtoken_table", table.to_markdown());

    let reuse = r.get(ids::REUSE_DEADLINE);
    let fresh = r.get(ids::FRESH_DEADLINE);
    let mut table = Table::new([
        left("row"),
        right("per request (mix)"),
        right("/ wasmtime reuse"),
        right("/ wasmtime fresh"),
    ]);
    table.row(["wasmtime reuse".into(), to(reuse), "1.00x".into(), String::new()]);
    table.row(["wasmtime fresh (pooling)".into(), to(fresh), String::new(), "1.00x".into()]);
    for (row, id, against_fresh) in [
        ("Node.js WebAssembly, reuse", ids::NODE_WASM_REUSE, false),
        ("Node.js WebAssembly, new instance per request", ids::NODE_WASM_FRESH, true),
        ("plain JavaScript + node:crypto", ids::NODE_JS, false),
        ("node:crypto HMAC-SHA256 alone (same bytes)", ids::NODE_HMAC, false),
    ] {
        let x = r.get(id);
        let (a, b) =
            if against_fresh { (String::new(), ratio(x, fresh)) } else { (ratio(x, reuse), String::new()) };
        table.row([row.into(), to(x), a, b]);
    }
    v.set("javascript_table", table.to_markdown());
    v.set("node_vs_no_deadline", ratio(r.get(ids::NODE_WASM_REUSE), r.get(ids::REUSE_NO_DEADLINE)));
    v.set("node_hmac", to(r.get(ids::NODE_HMAC)));
    v.set("node_js", to(r.get(ids::NODE_JS)));

    let native = r.get(ids::MICROSERVICE_IN_PROCESS);
    let micro = r.get(ids::MICROSERVICE_MIX);
    let spinner = r.get(ids::MICROSERVICE_SPINNER);
    let mut table = Table::new([
        left("how"),
        right("per request"),
        right("/ in process (native)"),
        right("/ wasmtime reuse"),
        right("/ wasmtime fresh"),
    ]);
    table.row(["in process, native".into(), to(native), "1.00x".into(), String::new(), String::new()]);
    table.row([
        "in process, wasmtime reuse".into(),
        to(reuse),
        ratio(reuse, native),
        "1.00x".into(),
        String::new(),
    ]);
    table.row([
        "in process, wasmtime fresh instance".into(),
        to(fresh),
        ratio(fresh, native),
        String::new(),
        "1.00x".into(),
    ]);
    for (how, x) in [
        ("microservice, loopback keep-alive round trip", micro),
        ("the same, with a thread spinning on the other core", spinner),
    ] {
        table.row([how.into(), to(x), ratio(x, native), ratio(x, reuse), ratio(x, fresh)]);
    }
    v.set("microservice_table", table.to_markdown());
    v.set("microservice_adds", to(minus(micro, native)));
    v.set("reuse_adds", to(minus(reuse, native)));
    v.set("fresh_adds", to(minus(fresh, native)));
}

fn cold_start(v: &mut Values, r: &Results) {
    let mut table = Table::new([left("step"), right("time"), left("command")]);
    for (step, id) in [
        ("wasmtime JIT, Cranelift (`engine::compile`)", ids::COLD_JIT_CRANELIFT),
        ("wasmtime JIT, Winch", ids::COLD_JIT_WINCH),
        ("`engine::deserialize` of the `.cwasm`", ids::COLD_DESERIALIZE),
        ("`engine::build`: the engine with a one-slot pooling allocator", ids::COLD_ENGINE),
        ("`Prepared::new`: the contract check and the `InstancePre`", ids::COLD_INSTANCE_PRE),
        ("`Prepared::probe`: the first instance, `abi_version` and layout", ids::COLD_FIRST_INSTANCE),
        ("deserialize + InstancePre + first instance + first request (fresh)", ids::COLD_FIRST_REQUEST),
    ] {
        table.row([step.into(), to(r.get(id)), id.command()]);
    }
    for (step, id, command) in [
        ("Node.js `WebAssembly.compile` (median of 200)", ids::NODE_COMPILE, ids::NODE.command()),
        ("Node.js `WebAssembly.instantiate(module)`", ids::NODE_INSTANTIATE, "same".into()),
        ("Node.js compile + instantiate + first request", ids::NODE_FIRST_REQUEST, "same".into()),
    ] {
        table.row([step.into(), to(r.get(id)), command]);
    }
    v.set("cold_table", table.to_markdown());
    let jit = r.get(ids::COLD_JIT_CRANELIFT);
    v.set("winch_compile_speedup", ratio(jit, r.get(ids::COLD_JIT_WINCH)));
    v.set("winch_slowdown", ratio(r.get(ids::REUSE_WINCH), r.get(ids::REUSE_DEADLINE)));
    v.set("cwasm_load_speedup", ratio(jit, r.get(ids::COLD_DESERIALIZE)));

    let mut table = Table::new([
        left("process"),
        right("mean"),
        right("σ"),
        right("min"),
        right("max RSS"),
        left("command"),
    ]);
    for line in r.text("cold-process.txt").lines() {
        // name|command|mean stddev min tool|max RSS KiB (benches/run.sh step 5)
        let parts: Vec<&str> = line.split('|').collect();
        let [name, command, times, rss] = parts[..] else { continue };
        let times: Vec<&str> = times.split_whitespace().collect();
        let ms = |i: usize| times.get(i).map_or("–".to_string(), |v| format!("{v} ms"));
        let rss = rss.trim().parse::<f64>().map_or("–".into(), |k| format!("{:.1} MiB", k / 1024.0));
        table.row([name.into(), ms(0), ms(1), ms(2), rss, format!("`{command} < one-request.jsonl`")]);
    }
    v.set("process_table", table.to_markdown());
}

fn host_bench(v: &mut Values, r: &Results) {
    let get = |which: &str, path: &str| r.figure(&format!("host_bench/{which}/{path}"));
    let mut table =
        Table::new([left("cold-start step (median)"), right("from .wasm (JIT)"), right("from .cwasm")]);
    for (label, key) in [
        ("engine (pooling allocator)", "engine"),
        ("module: JIT compile / deserialize", "module"),
        ("InstancePre", "instance_pre"),
        ("first instantiate", "first_instantiate"),
        ("first request", "first_request"),
        ("total without the engine", "total_without_engine"),
    ] {
        let path = format!("cold_start/{key}/median_us");
        table.row([label.into(), us(get("wasm", &path)), us(get("cwasm", &path))]);
    }
    v.set("host_bench_cold_table", table.to_markdown());
    let mut table = Table::new([
        left("mode"),
        right("mean"),
        right("p50"),
        right("p90"),
        right("p99"),
        right("p99.9"),
        right("max"),
        right("requests/s per core"),
        right("deadline hits"),
    ]);
    let mut hits = Some(0.0);
    for mode in ["fresh", "reuse"] {
        let m = |key: &str| get("wasm", &format!("{mode}/{key}"));
        let mode_hits = m("deadline_hits");
        hits = hits.zip(mode_hits).map(|(a, b)| a + b);
        table.row([
            mode.into(),
            us(m("mean_us")),
            us(m("p50_us")),
            us(m("p90_us")),
            us(m("p99_us")),
            us(m("p999_us")),
            us(m("max_us")),
            m("requests_per_sec_per_core").map_or("–".into(), |x| format!("{x:.0}")),
            mode_hits.map_or("–".into(), |x| format!("{x:.0}")),
        ]);
    }
    v.set("host_bench_modes_table", table.to_markdown());
    v.set(
        "host_bench_instance_kib",
        get("wasm", "memory/per_instance_kib").map_or("–".into(), |x| format!("{x:.1}")),
    );
    v.set(
        "host_bench_rss_kib",
        get("wasm", "memory/process_rss_kib").map_or("–".into(), |x| format!("{x:.0}")),
    );
    v.set("host_bench_with_deadline", us(get("wasm", "epoch/with_deadline_mean_us")));
    v.set("host_bench_without_deadline", us(get("wasm", "epoch/without_deadline_mean_us")));
    v.set("host_bench_deadline_hits", hits.map_or("–".into(), |x| format!("{x:.0}")));
}

fn http(v: &mut Values, r: &Results) -> Option<(&'static str, String)> {
    let notes: Vec<String> = r.text("http-notes.txt").lines().map(|l| format!("- {l}\n")).collect();
    v.set("http_notes", notes.concat());
    if r.skipped(HTTP_STEP) {
        let skipped = "Not measured in this run: the HTTP step was skipped (`BENCH_SKIP=http`).\n";
        v.set("http_table", skipped);
        return None;
    }
    let round_trips: Vec<&Series> = r.http.iter().filter(|s| s.group == "http").collect();
    let mut table = Table::new([
        left("server @ target rate"),
        right("achieved"),
        right("round trip p50"),
        right("p95"),
        right("p99"),
        right("p99.9"),
        right("from schedule p50"),
        right("p99"),
        left("statuses"),
    ]);
    for s in &round_trips {
        let scheduled = r.http.iter().find(|x| x.group == "http_scheduled" && x.name == s.name);
        // The note of `bench-tool load`: "target R/s, achieved A/s, ...; statuses".
        let achieved = s.note.split("achieved ").nth(1).and_then(|x| x.split(',').next()).unwrap_or("?");
        let statuses = s.note.split("; ").nth(1).unwrap_or("");
        table.row([
            s.name.clone(),
            achieved.into(),
            t(s.p50_ns as f64),
            t(s.p95_ns as f64),
            t(s.p99_ns as f64),
            t(s.p999_ns as f64),
            scheduled.map_or("–".into(), |x| t(x.p50_ns as f64)),
            scheduled.map_or("–".into(), |x| t(x.p99_ns as f64)),
            statuses.into(),
        ]);
    }
    let not_measured = "Not measured in this run (see the notes above).\n";
    v.set("http_table", if round_trips.is_empty() { not_measured.into() } else { table.to_markdown() });
    Some(("http-latency.svg", svg::percentile_chart("HTTP round trip on loopback", &round_trips)))
}

fn sizes(v: &mut Values, r: &Results) {
    let size = |name: &str, what: &str| r.figure(&format!("sizes/{name}/{what}"));
    let bytes = |name: &str| size(name, "bytes").map_or("–".into(), |b| format!("{b:.0}"));
    let reuse = |name: &'static str| r.get(ids::PAIRED_VARIANTS_REUSE.id(name));
    let fresh = |name: &'static str| r.get(ids::PAIRED_VARIANTS_FRESH.id(name));
    let shipped = reuse(ids::SHIPPED_VARIANT);
    v.set("shipped_variant", ids::SHIPPED_VARIANT);
    let mut table = Table::new([
        left("variant"),
        left("how"),
        right("bytes"),
        right("gzip -9"),
        right("reuse, per request"),
        right("fresh, per request"),
        right("reuse vs shipped"),
    ]);
    for variant in ids::VARIANTS {
        let x = reuse(variant.name);
        table.row([
            variant.name.into(),
            variant.how.into(),
            bytes(variant.name),
            size(variant.name, "gzip").map_or("–".into(), |b| format!("{b:.0}")),
            to(x),
            to(fresh(variant.name)),
            ratio(x, shipped),
        ]);
    }
    v.set("sizes_table", table.to_markdown());

    let mut table =
        Table::new([left("idea"), right("before"), right("after"), right("after / before"), left("cost")]);
    let bytes_to = |variant: &str| format!("{} → {} bytes", bytes(ids::SHIPPED_VARIANT), bytes(variant));
    let ideas = [
        (
            "precompute the HMAC key state once per key (clone the keyed `Hmac` per request): wasm kernel",
            r.get(ids::KERNEL_HMAC_WORKER),
            r.get(ids::KERNEL_HMAC_PREKEYED),
            "none: a few hundred bytes of state per key, computed at first use or at build time".into(),
        ),
        (
            "the same natively (SHA-NI)",
            r.get(ids::NATIVE_HMAC_WORKER),
            r.get(ids::NATIVE_HMAC_PREKEYED),
            String::new(),
        ),
        (
            "a 256-entry class table for the base64url alphabet in `jws::split` (and `request::is_b64token`): wasm kernel",
            r.get(ids::KERNEL_SPLIT_WORKER),
            r.get(ids::KERNEL_SPLIT_TABLE),
            "256 bytes of data".into(),
        ),
        (
            "skip `wasm-opt -Oz` (a1 instead of a3), per request, reuse",
            shipped,
            reuse("a1-compact-raw"),
            bytes_to("a1-compact-raw"),
        ),
        (
            "opt-level 3 for the whole worker + `wasm-opt -O3` (c3), per request, reuse",
            shipped,
            reuse("c3-o3-wasmopt-o3"),
            bytes_to("c3-o3-wasmopt-o3"),
        ),
        (
            "opt-level 3 for sha2 only (e3), per request, reuse",
            shipped,
            reuse("e3-sha2o3-oz"),
            bytes_to("e3-sha2o3-oz"),
        ),
        (
            "sha2's default (unrolled) backend (b3), per request, reuse",
            shipped,
            reuse("b3-default-oz"),
            bytes_to("b3-default-oz"),
        ),
        (
            "sha2's default backend with the deadline on (the host's setting): the unrolled rounds have fewer loop back-edges to check",
            r.get(ids::SHA2_COMPACT_DEADLINE),
            r.get(ids::SHA2_DEFAULT_DEADLINE),
            "as b3".into(),
        ),
        (
            "keep the 32 KiB stack (d3 has rustc's 1 MiB), fresh instance per request",
            fresh("d3-stack1m-oz"),
            fresh(ids::SHIPPED_VARIANT),
            "none: the request path needs a few KiB".into(),
        ),
    ];
    for (idea, before, after, cost) in ideas {
        table.row([idea.into(), to(before), to(after), ratio(after, before), cost]);
    }
    v.set("speedups_table", table.to_markdown());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills `results` with a stand-in for everything found missing.
    fn supply(results: &mut Results, missing: &[Missing]) {
        for m in missing {
            match m {
                Missing::Figure(name) => {
                    results.figures.insert(name.clone(), 1234.0);
                }
                Missing::Machine(key) => {
                    results.machine.insert(key.clone(), format!("<{key}>"));
                }
                Missing::File("corpus.json") => {
                    results.corpus = Some(results::Corpus {
                        kinds: vec!["valid".into(), "no_token".into()],
                        ..Default::default()
                    });
                }
                Missing::File("latency.json") => {
                    let h = gateway_benches::latency::histogram();
                    results.latency.push(Series::of("per_request", "native rlib", &h));
                }
                Missing::File("node.json") => {
                    let h = gateway_benches::latency::histogram();
                    results.latency.push(Series::of("per_request", "node: wasm reuse", &h));
                }
                Missing::File(name) => {
                    results.texts.insert(name, "a|b|1.00 0.10 0.90 hyperfine|2048\n".into());
                }
            }
        }
    }

    #[test]
    fn every_missing_figure_is_named_and_a_complete_run_fills_the_template() {
        let mut results = Results::default();
        let Err(ReportError::Missing(missing)) = render(&results) else {
            panic!("an empty run is complete?")
        };
        let names: Vec<String> = missing.iter().map(ToString::to_string).collect();
        for expected in [ids::NATIVE_MIX, ids::REUSE_DEADLINE, ids::COLD_FIRST_INSTANCE, ids::NODE_JS] {
            assert!(names.contains(&expected.full()), "{} not named", expected.full());
        }
        for expected in
            ["interleaved/reuse/jit_deadline", "per_kind/wasmtime_reuse/bad_signature", "machine.env: date"]
        {
            assert!(names.iter().any(|n| n == expected), "{expected} not named");
        }

        // With every figure there, the template is filled: no placeholder
        // without a value, no value without a placeholder.
        supply(&mut results, &missing);
        let report = render(&results).expect("a complete run gives a report");
        assert!(!report.markdown.contains("{{"), "a placeholder is left");
        assert!(report.markdown.contains("| native rlib | function call | 1.23 µs |"));
    }

    #[test]
    fn one_missing_benchmark_fails_the_report_with_its_name() {
        let mut results = Results::default();
        let Err(ReportError::Missing(missing)) = render(&results) else { panic!("incomplete") };
        supply(&mut results, &missing);
        results.figures.remove(&ids::FRESH_ON_DEMAND.full());
        match render(&results) {
            Err(ReportError::Missing(missing)) => {
                assert_eq!(
                    missing,
                    vec![Missing::Figure("per_request/wasmtime/fresh_on_demand_deadline".into())]
                );
            }
            other => panic!("expected the missing benchmark, got {other:?}"),
        }
    }

    #[test]
    fn a_skipped_step_reads_skipped_instead_of_missing() {
        let mut results = Results::default();
        results.skipped.insert(NODE_STEP.into());
        results.skipped.insert(HTTP_STEP.into());
        let Err(ReportError::Missing(missing)) = render(&results) else { panic!("incomplete") };
        assert!(!missing.iter().any(|m| m.to_string().starts_with("node")), "{missing:?}");
        supply(&mut results, &missing);
        let report = render(&results).expect("complete");
        assert!(report.markdown.contains("| Node.js WebAssembly (V8) | reuse | skipped |"));
        assert!(report.markdown.contains("the HTTP step was skipped"));
    }
}
