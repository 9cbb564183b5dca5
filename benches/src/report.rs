//! Writes `docs/PERFORMANCE.md` (and its charts under `docs/perf/`) from the
//! results `benches/run.sh` left in one directory: criterion's estimates,
//! the latency histograms, Node.js's figures, sizes, whole-process timings
//! and the HTTP runs. Nothing here is a number of its own: every figure is
//! read from a measurement of the same run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use gateway_benches::latency::Series;
use gateway_benches::svg;
use serde_json::Value;

/// Criterion's estimates for one benchmark, nanoseconds.
#[derive(Debug, Clone, Copy)]
struct Estimate {
    mean: f64,
}

struct Results {
    dir: PathBuf,
    machine: BTreeMap<String, String>,
    crit: BTreeMap<String, Estimate>,
    latency: Vec<Series>,
    node: Value,
    paired: Value,
    http: Vec<Series>,
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, found);
        } else if path.file_name().is_some_and(|n| n == "benchmark.json")
            && path.parent().is_some_and(|p| p.ends_with("new"))
        {
            found.push(path);
        }
    }
}

fn load_criterion(dir: &Path) -> BTreeMap<String, Estimate> {
    let mut files = Vec::new();
    walk(dir, &mut files);
    let mut out = BTreeMap::new();
    for file in files {
        let (Some(bench), Some(est)) = (read_json(&file), read_json(&file.with_file_name("estimates.json")))
        else {
            continue;
        };
        let Some(id) = bench["full_id"].as_str() else { continue };
        let mean = est["mean"]["point_estimate"].as_f64().unwrap_or(f64::NAN);
        out.insert(id.to_string(), Estimate { mean });
    }
    out
}

impl Results {
    fn load(dir: &str) -> Self {
        let dir = PathBuf::from(dir);
        let machine = std::fs::read_to_string(dir.join("machine.env"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect();
        let series = |name: &str| -> Vec<Series> {
            std::fs::read(dir.join(name))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default()
        };
        Results {
            crit: load_criterion(&dir.join("criterion")),
            latency: series("latency.json"),
            http: series("http.json"),
            node: read_json(&dir.join("node.json")).unwrap_or(Value::Null),
            paired: read_json(&dir.join("paired.json")).unwrap_or(Value::Null),
            machine,
            dir,
        }
    }

    fn m(&self, key: &str) -> &str {
        self.machine.get(key).map(String::as_str).unwrap_or("?")
    }

    fn c(&self, id: &str) -> Option<f64> {
        self.crit.get(id).map(|e| e.mean)
    }

    /// A figure of `bench-tool paired`: median ns per call.
    fn p(&self, group: &str, name: &str) -> Option<f64> {
        self.paired[group][name].as_f64()
    }

    fn node_row(&self, key: &str) -> Option<f64> {
        self.node["rows"][key].as_f64()
    }
}

/// Nanoseconds as text with a unit.
fn t(ns: f64) -> String {
    if !ns.is_finite() {
        "n/a".into()
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

fn to(ns: Option<f64>) -> String {
    ns.map_or_else(|| "not measured".into(), t)
}

/// `a / b` as "1.23x".
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "–".into(),
    }
}

fn pct(a: f64, total: f64) -> String {
    format!("{:.0}%", a / total * 100.0)
}

const CRIT: &str = "--warm-up-time 1 --measurement-time 2";
const PAIRED: &str = "`target/release/bench-tool paired out.json`";

fn cmd(bench: &str, filter: &str) -> String {
    format!("`cargo bench -p gateway-benches --bench {bench} -- {CRIT} '{filter}'`")
}

/// Writes the report.
pub fn write(dir: &str, out: &str) {
    let r = Results::load(dir);
    let out_path = PathBuf::from(out);
    let chart_dir = out_path.parent().unwrap_or(Path::new(".")).join("perf");
    std::fs::create_dir_all(&chart_dir).unwrap();
    let mut d = String::new();
    header(&mut d, &r);
    summary(&mut d, &r);
    per_request(&mut d, &r);
    latency_section(&mut d, &r, &chart_dir);
    stages(&mut d, &r);
    jsonwebtoken(&mut d, &r);
    javascript(&mut d, &r);
    cold_start(&mut d, &r);
    host_bench(&mut d, &r);
    microservice(&mut d, &r);
    http(&mut d, &r, &chart_dir);
    wrk_section(&mut d, &r);
    sizes(&mut d, &r);
    speedups(&mut d, &r);
    std::fs::write(&out_path, d).unwrap();
    eprintln!("wrote {}", out_path.display());
}

fn header(d: &mut String, r: &Results) {
    let _ = writeln!(
        d,
        "# Performance\n\n\
Generated by `make bench` (`bash benches/run.sh`) on {date}, commit {commit}, in {secs} s. \
Every figure below was measured in that one run; the command under each table reproduces it \
(run `make worker` first). Nothing here is asserted by a test.\n\n\
**Read ratios, not absolutes.** The machine is a shared 2-core virtual machine: figures move by \
10 to 30% from run to run, and other work on the machine moves them together. Rows compared \
in one table were measured in the same run, at most minutes apart, and the interleaved \
comparisons (section 1) side by side; the ratio between rows is the figure to \
trust. criterion figures are the mean time per iteration (its 95% interval is in \
`target/bench-results/criterion`); latency tables time each call on its own.\n",
        date = r.m("date"),
        commit = r.m("commit"),
        secs = r.m("total_seconds"),
    );
    let _ = writeln!(
        d,
        "## The machine\n\n| | |\n|---|---|\n\
| CPU | {model} ({hv} guest), SHA-NI: {sha} |\n\
| cores | {cpus} ({cps} cores per socket, {tpc} thread per core) |\n\
| memory | {mem} |\n| kernel | {kernel} |\n| Rust | {rustc} |\n\
| wasmtime | {wasmtime} (Cranelift and Winch) |\n| Node.js | {node} (V8 {v8}) |\n\
| workerd | {workerd} |\n| wasm-opt | {wasm_opt} |\n\
| criterion / jsonwebtoken | {criterion} / {jwt} |\n| hyperfine | {hyperfine} |\n\
| load average before / after | {lb} / {la} |\n",
        model = r.m("model"),
        hv = r.m("hypervisor"),
        sha = r.m("sha_ni"),
        cpus = r.m("cpus"),
        cps = r.m("cores_per_socket"),
        tpc = r.m("threads_per_core"),
        mem = r.m("memory"),
        kernel = r.m("kernel"),
        rustc = r.m("rustc"),
        wasmtime = r.m("wasmtime"),
        node = r.m("node"),
        v8 = r.m("v8"),
        workerd = r.m("workerd"),
        wasm_opt = r.m("wasm_opt"),
        criterion = r.m("criterion"),
        jwt = r.m("jsonwebtoken"),
        hyperfine = r.m("hyperfine"),
        lb = r.m("load_before"),
        la = r.m("load_after"),
    );
    let _ = writeln!(
        d,
        "## The request mix\n\n\
Every per-request row runs the same five request heads in turn (`benches/src/corpus.rs`; \
`bench-tool corpus FILE` writes them as JSON for the Node.js script): a **valid** token, an \
**expired** one, a **bad signature**, **no token**, and a correctly signed token whose \
**audience has no route**. The heads are about 370 bytes (a request line, three ordinary header \
fields and `Authorization: Bearer` with a 230-byte HS256 token signed with the key of \
`gateway.toml`); the clock passed is fixed at {now}. One iteration is one request, so a \
\"mix\" figure is the mean over the five.\n",
        now = gateway_benches::corpus::NOW
    );
}

fn summary(d: &mut String, r: &Results) {
    let native = r.c("per_request/native/mix");
    let reuse = r.p("reuse", "jit_epoch").or(r.c("per_request/wasm/reuse_epoch"));
    let fresh = r.p("fresh", "jit_epoch").or(r.c("per_request/wasm/fresh_pooling_epoch"));
    let micro = r.c("per_request/microservice/loopback_keep_alive_mix");
    let js = r.node_row("js_mix");
    let node_wasm = r.node_row("wasm_reuse_mix");
    let jwt = r.c("per_token/native/jsonwebtoken_valid");
    let wt = r.c("per_token/native/worker_valid");
    let hmac_share =
        match (r.c("stages/wasm/bad_signature"), r.c("stages/wasm/unknown_kid"), r.c("stages/wasm/valid")) {
            (Some(a), Some(b), Some(v)) => format!("{:.0}%", (a - b) / v * 100.0),
            _ => "?".into(),
        };
    let crane = r.c("cold/wasmtime/jit_cranelift");
    let des = r.c("cold/wasmtime/deserialize_file_cwasm");
    let _ = writeln!(
        d,
        "## In short\n\n\
- Per request over the mix: native {} · wasmtime, reused instance {} ({} native) · wasmtime, fresh \
pooled instance {} ({} the reused one). Interleaved figures where measured (section 1).\n\
- Loading a `.cwasm` takes {} against {} for a Cranelift JIT compile, and the code runs at the \
same speed either way (.cwasm/JIT per request, interleaved: {} reuse, {} fresh; criterion: {} \
reuse, {} fresh).\n\
- The epoch deadline costs {} per request in a reused instance.\n\
- HMAC-SHA256 is {} of a valid request inside the module (sha2's compact rounds, no SHA-NI); \
precomputing the HMAC key state would take {} off it (section \"Where to go faster\").\n\
- The `jsonwebtoken` crate takes {} the worker's time per valid token, natively.\n\
- On V8, the same module runs at {} wasmtime's time per request; the same validation in plain \
JavaScript with `node:crypto` at {}.\n\
- A loopback HTTP microservice making the same decision natively takes {} per keep-alive round \
trip ({} with the other core kept busy, which spares the idle-vCPU wake-ups): {} the module in \
a reused instance, {} a fresh one (section 6).\n",
        to(native),
        to(reuse),
        ratio(reuse, native),
        to(fresh),
        ratio(fresh, reuse),
        to(des),
        to(crane),
        ratio(r.p("reuse", "cwasm_epoch"), r.p("reuse", "jit_epoch")),
        ratio(r.p("fresh", "cwasm_epoch"), r.p("fresh", "jit_epoch")),
        ratio(r.c("per_request/wasm/reuse_cwasm_epoch"), r.c("per_request/wasm/reuse_epoch")),
        ratio(r.c("per_request/wasm/fresh_pooling_cwasm_epoch"), r.c("per_request/wasm/fresh_pooling_epoch")),
        match (r.p("reuse", "jit_epoch"), r.p("reuse", "jit_no_epoch")) {
            (Some(a), Some(b)) => format!("{} ({:+.0}%)", t_signed(a - b), (a / b - 1.0) * 100.0),
            _ => "?".into(),
        },
        hmac_share,
        match (r.p("kernels_hmac", "hmac_worker"), r.p("kernels_hmac", "hmac_prekeyed")) {
            (Some(a), Some(b)) => format!("{:.0}%", (1.0 - b / a) * 100.0),
            _ => "?".into(),
        },
        ratio(jwt, wt),
        ratio(node_wasm, r.c("per_request/wasm/reuse_epoch")),
        ratio(js, r.c("per_request/wasm/reuse_epoch")),
        to(micro),
        to(r.c("per_request/microservice/loopback_keep_alive_mix_spinner")),
        ratio(micro, r.c("per_request/wasm/reuse_epoch")),
        ratio(micro, r.c("per_request/wasm/fresh_pooling_epoch")),
    );
}

fn per_request(d: &mut String, r: &Results) {
    let native = r.c("per_request/native/mix");
    let reuse = r.c("per_request/wasm/reuse_epoch");
    let _ = writeln!(
        d,
        "## 1. Per request\n\n\
Mean time to decide one request of the mix. *native* is the worker's rlib called as a \
function (`worker::handle`). *reuse* keeps one instance and calls `handle` for every request \
(the module resets its arena on entry); *fresh* makes a new `Store` and instance from an \
`InstancePre` for every request and drops it after. The *bench engine* rows use \
`benches/src/wasm.rs` (wasmtime configured per row, exports looked up once, no host-side \
decoding); the *host-sim* rows use the shipped host's runtime (`host_sim::instance::Runtime`: \
its memory limiter, epoch ticker thread, and the output parsed into a decision). *epoch* means \
compiled with epoch interruption and a deadline set per store.\n"
    );
    let _ = writeln!(
        d,
        "| host | mode | per request | vs native | vs wasmtime reuse |\n|---|---|---:|---:|---:|"
    );
    let rows: Vec<(&str, &str, Option<f64>)> = vec![
        ("native rlib", "function call", native),
        ("wasmtime (bench engine), Cranelift JIT", "reuse, epoch", reuse),
        ("wasmtime (bench engine), Cranelift JIT", "reuse, no epoch", r.c("per_request/wasm/reuse_no_epoch")),
        ("wasmtime (bench engine), .cwasm", "reuse, epoch", r.c("per_request/wasm/reuse_cwasm_epoch")),
        ("wasmtime (bench engine), Winch JIT", "reuse, epoch", r.c("per_request/wasm/reuse_winch_epoch")),
        (
            "wasmtime (bench engine), Cranelift JIT",
            "fresh, pooling, epoch",
            r.c("per_request/wasm/fresh_pooling_epoch"),
        ),
        (
            "wasmtime (bench engine), Cranelift JIT",
            "fresh, pooling, no epoch",
            r.c("per_request/wasm/fresh_pooling_no_epoch"),
        ),
        (
            "wasmtime (bench engine), .cwasm",
            "fresh, pooling, epoch",
            r.c("per_request/wasm/fresh_pooling_cwasm_epoch"),
        ),
        (
            "wasmtime (bench engine), Cranelift JIT",
            "fresh, on-demand allocator, epoch",
            r.c("per_request/wasm/fresh_on_demand_epoch"),
        ),
        ("host-sim runtime, JIT", "reuse, deadline", r.c("per_request/host_sim/reuse_deadline")),
        ("host-sim runtime, JIT", "reuse, no deadline", r.c("per_request/host_sim/reuse_no_deadline")),
        ("host-sim runtime, .cwasm", "reuse, deadline", r.c("per_request/host_sim/reuse_cwasm_deadline")),
        ("host-sim runtime, JIT", "fresh, deadline", r.c("per_request/host_sim/fresh_deadline")),
        ("host-sim runtime, JIT", "fresh, no deadline", r.c("per_request/host_sim/fresh_no_deadline")),
        ("host-sim runtime, .cwasm", "fresh, deadline", r.c("per_request/host_sim/fresh_cwasm_deadline")),
        ("Node.js WebAssembly (V8)", "reuse", r.node_row("wasm_reuse_mix")),
        ("Node.js WebAssembly (V8)", "fresh (new WebAssembly.Instance)", r.node_row("wasm_fresh_mix")),
        ("plain JavaScript + node:crypto (V8)", "function call", r.node_row("js_mix")),
        (
            "microservice (native, loopback HTTP, keep-alive)",
            "round trip",
            r.c("per_request/microservice/loopback_keep_alive_mix"),
        ),
    ];
    for (host, mode, v) in &rows {
        let _ =
            writeln!(d, "| {host} | {mode} | {} | {} | {} |", to(*v), ratio(*v, native), ratio(*v, reuse));
    }
    let _ = writeln!(
        d,
        "\nCommands: {} · {} · {} · `node benches/node/bench.mjs target/bench-results/corpus.json dist/gateway.wasm out.json` · {}.\n",
        cmd("native", "per_request/native/mix"),
        cmd("wasm", "per_request/wasm/"),
        cmd("wasm", "per_request/host_sim/"),
        cmd("peers", "per_request/microservice/")
    );
    let _ = writeln!(
        d,
        "The comparisons that decide something are also measured **interleaved** \
({PAIRED}, `benches/src/paired.rs`): the contenders take turns, 301 rounds of a batch of about \
1 ms each (after an untimed warm-up), so a change in the machine's load hits all of them alike; \
each figure is the lower quartile of its batch means, since a batch that another process \
preempted is only ever slower. The same mix:\n\n\
| mode | Cranelift JIT, epoch | .cwasm, epoch | .cwasm / JIT | JIT, no epoch | epoch costs | Winch, epoch |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for (label, mode, on, off) in [
        ("reuse (bench engine)", "reuse", "jit_epoch", "jit_no_epoch"),
        ("fresh (bench engine)", "fresh", "jit_epoch", "jit_no_epoch"),
        ("reuse (host-sim runtime)", "host_sim_reuse", "deadline", "no_deadline"),
        ("fresh (host-sim runtime)", "host_sim_fresh", "deadline", "no_deadline"),
    ] {
        let jit = r.p(mode, on);
        let aot = r.p(mode, "cwasm_epoch");
        let ne = r.p(mode, off);
        let cost = match (jit, ne) {
            (Some(j), Some(n)) => format!("{} ({:+.0}%)", t_signed(j - n), (j / n - 1.0) * 100.0),
            _ => "–".into(),
        };
        let _ = writeln!(
            d,
            "| {label} | {} | {} | {} | {} | {cost} | {} |",
            to(jit),
            aot.map_or("".into(), t),
            if aot.is_some() { ratio(aot, jit) } else { String::new() },
            to(ne),
            r.p(mode, "winch_epoch").map_or("".into(), t),
        );
    }
    let _ = writeln!(
        d,
        "\n**JIT and .cwasm cost the same per call** (ratio above), as they should: a `.cwasm` is \
Cranelift's output for the same engine settings, written to a file and mapped back; only loading \
differs (section 5); criterion's rows in the table above give the same answer. **The epoch \
deadline** costs a check of the epoch counter at every function entry and loop back-edge \
(SHA-256's compact rounds are a loop) and a deadline to set on each store: about a fifth of a \
reused instance's time. The fresh rows are the least steady of these figures: across the runs \
made while writing this suite, a fresh instance's time moved by up to 15% from one engine to \
another between runs (each contender has its own engine and pool), which is as large as the \
epoch's share there, so read the fresh epoch figure with the criterion rows beside it.\n"
    );
    // Per case.
    let _ = writeln!(
        d,
        "### Each request of the mix\n\n| request | native | wasmtime reuse | wasm/native | Node.js wasm reuse | plain JS | JS / wasmtime |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for case in ["valid", "expired", "bad_signature", "no_token", "unknown_audience"] {
        let n = r.c(&format!("per_request/native/{case}"));
        let w = r.c(&format!("per_case/wasm_reuse/{case}"));
        let nw = r.node_row(&format!("wasm_reuse_{case}"));
        let js = r.node_row(&format!("js_{case}"));
        let _ = writeln!(
            d,
            "| {case} | {} | {} | {} | {} | {} | {} |",
            to(n),
            to(w),
            ratio(w, n),
            to(nw),
            to(js),
            ratio(js, w)
        );
    }
    let _ = writeln!(
        d,
        "\nCommands: {} · {}.\n",
        cmd("native", "per_request/native/"),
        cmd("wasm", "per_case/wasm_reuse/")
    );
}

fn latency_table(d: &mut String, series: &[&Series]) {
    let _ = writeln!(
        d,
        "| row | samples | mean | p50 | p90 | p99 | p99.9 | max |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for s in series {
        let _ = writeln!(
            d,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            s.name,
            s.count,
            t(s.mean_ns),
            t(s.p50_ns as f64),
            t(s.p90_ns as f64),
            t(s.p99_ns as f64),
            t(s.p999_ns as f64),
            t(s.max_ns as f64)
        );
    }
}

fn node_series(r: &Results) -> Vec<Series> {
    r.node["series"].as_array().map_or_else(Vec::new, |a| {
        a.iter().filter_map(|v| serde_json::from_value::<Series>(v.clone()).ok()).collect()
    })
}

fn latency_section(d: &mut String, r: &Results, charts: &Path) {
    let node = node_series(r);
    let all: Vec<&Series> = r.latency.iter().chain(node.iter()).collect();
    let _ = writeln!(
        d,
        "### Latency distribution per request\n\n\
Each call timed on its own (two clock reads, some 20 to 40 ns, are in every sample), over the \
same mix; HDR histograms in Rust, sorted samples in Node.js.\n"
    );
    if all.is_empty() {
        let _ = writeln!(d, "Not measured in this run.\n");
        return;
    }
    latency_table(d, &all);
    let chart = svg::percentile_chart("Per-request latency over the mix (in process)", &all);
    std::fs::write(charts.join("per-request-latency.svg"), chart).unwrap();
    let _ = writeln!(
        d,
        "\n![per-request latency by percentile](perf/per-request-latency.svg)\n\n\
Commands: `target/release/bench-tool latency out.json` (native, wasmtime, microservice), \
`node benches/node/bench.mjs ...` (the two Node.js rows).\n"
    );
}

fn stages(d: &mut String, r: &Results) {
    let g = |s: &str| r.c(&format!("stages/native/{s}"));
    let total = g("all_handle_valid");
    let _ = writeln!(
        d,
        "## 2. Where the time goes\n\n### Native: each stage called on its own\n\n\
The worker's public modules called directly on the valid request's bytes (`benches/benches/native.rs`).\n\n\
| stage | function | time | share of the whole |\n|---|---|---:|---:|"
    );
    let rows = [
        ("parse the head, find and copy the token", "request::extract_bearer", "1_parse_head"),
        ("split into three parts (alphabet check)", "jws::split", "2_split"),
        ("base64url: header, claims, signature", "jws::decode ×2, jws::decode_signature", "3_base64url"),
        ("header JSON, alg/typ/crit, key by kid", "header::select_key", "4_header_json"),
        ("HMAC-SHA256 and constant-time compare", "signature::verify", "5_hmac_sha256"),
        ("claims JSON, time, issuer, audience, route", "claims::check", "6_claims_json_and_route"),
        ("route lookup alone", "route::lookup", "7_route"),
        ("write the decision", "response::write_grant", "8_write_decision"),
    ];
    let mut sum = 0.0;
    for (what, f, id) in rows {
        let v = g(id);
        if id != "7_route" {
            sum += v.unwrap_or(0.0);
        }
        let share = match (v, total) {
            (Some(v), Some(tt)) => pct(v, tt),
            _ => "–".into(),
        };
        let _ = writeln!(d, "| {what} | `{f}` | {} | {share} |", to(v));
    }
    let _ = writeln!(
        d,
        "| **sum of the stages** (route counted once, inside claims) | | {} | {} |\n\
| **the whole request** | `worker::handle` | {} | 100% |\n\
| floor: HMAC-SHA256 of the same bytes | `Hmac<Sha256>` new, update, finalize | {} | {} |\n\
| floor with the key state precomputed | clone of a keyed `Hmac`, update, verify | {} | {} |\n\
| SHA-256 alone of the same bytes | `Sha256::digest` | {} | {} |\n",
        t(sum),
        total.map_or("–".into(), |tt| pct(sum, tt)),
        to(total),
        to(g("floor_hmac_sha256")),
        ratio(g("floor_hmac_sha256"), total),
        to(g("floor_hmac_sha256_prekeyed")),
        ratio(g("floor_hmac_sha256_prekeyed"), total),
        to(g("floor_sha256_only")),
        ratio(g("floor_sha256_only"), total),
    );
    let _ = writeln!(d, "Command: {}.\n", cmd("native", "stages/native/"));

    let _ = writeln!(
        d,
        "### wasm and native by difference\n\n\
Inside the module a stage cannot be called on its own, so the whole call is timed for requests \
that stop at successive phases of the request path, and each phase is the difference between \
two of them (one reused instance, no epoch; the same requests natively for comparison). Each \
request runs everything the one above it runs, and then some:\n\n\
| request | stops after | adds |\n|---|---|---|\n\
| no token | parsing the head | parse, write a rejection (the floor of a call) |\n\
| bad base64 | decoding the header part (its last character is non-canonical) | copy the token, split, base64url of the header |\n\
| unknown kid | the header's JSON | header JSON, alg/typ/crit, key lookup |\n\
| bad signature | the HMAC | base64url of the signature, HMAC-SHA256 over 186 bytes |\n\
| unknown audience | the route lookup | base64url and JSON of the claims, time and issuer, route |\n\
| valid | the end | a grant written instead of a rejection |\n\n\
The differences are approximate: the rejections written differ in length, and a difference of \
two noisy figures is noisier still.\n"
    );
    let phases = ["no_token", "bad_base64", "unknown_kid", "bad_signature", "unknown_audience", "valid"];
    let labels = [
        "parse head + write rejection",
        "token copy, split, base64url header",
        "header JSON, key",
        "base64url signature + HMAC-SHA256",
        "claims base64url + JSON + checks + route",
        "grant instead of rejection",
    ];
    let _ = writeln!(
        d,
        "| phase | wasm (whole call) | wasm phase | native (whole call) | native phase | wasm / native |\n|---|---:|---:|---:|---:|---:|"
    );
    let mut prev: Option<(f64, f64)> = None;
    for (p, label) in phases.iter().zip(labels) {
        let w = r.c(&format!("stages/wasm/{p}"));
        let n = r.c(&format!("stages/native_by_difference/{p}"));
        let (dw, dn) = match (w, n, prev) {
            (Some(w), Some(n), Some((pw, pn))) => (Some(w - pw), Some(n - pn)),
            (Some(w), Some(n), None) => (Some(w), Some(n)),
            _ => (None, None),
        };
        let dr = match (dw, dn) {
            (Some(a), Some(b)) if b > 5.0 && a > 5.0 => format!("{:.1}x", a / b),
            _ => "–".into(),
        };
        let _ = writeln!(
            d,
            "| {label} (`{p}`) | {} | {} | {} | {} | {dr} |",
            to(w),
            dw.map_or("–".into(), t_signed),
            to(n),
            dn.map_or("–".into(), t_signed)
        );
        if let (Some(w), Some(n)) = (w, n) {
            prev = Some((w, n));
        }
    }
    let _ = writeln!(d, "\nCommand: {}.\n", cmd("wasm", "stages/"));
}

fn diff(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => t_signed(a - b),
        _ => "–".into(),
    }
}

fn t_signed(ns: f64) -> String {
    if ns < 0.0 { format!("−{}", t(-ns)) } else { t(ns) }
}

fn jsonwebtoken(d: &mut String, r: &Results) {
    let g = |s: &str| r.c(&format!("per_token/native/{s}"));
    let _ = writeln!(
        d,
        "## 3. Against the `jsonwebtoken` crate\n\n\
`jsonwebtoken` {v} with its pure-Rust crypto (`default-features = false, features = [\"rust_crypto\"]`: \
RustCrypto's hmac and sha2, as the worker uses), natively, on the same tokens and rules: HS256 \
only, `exp` required, `nbf` checked, the configured issuer and leeway, an audience among the \
routes, then the route lookup. The worker's row runs its path from the token on (split, \
base64url, header, HMAC, claims, route) without HTTP parsing or writing a response. Both read \
the system clock's time here, because `jsonwebtoken` does.\n\n\
| token | worker | jsonwebtoken | jsonwebtoken / worker |\n|---|---:|---:|---:|\n\
| valid | {} | {} | {} |\n| expired | {} | {} | {} |\n\n\
Command: {}.\n\n\
Per token, `jsonwebtoken` allocates (a `Vec` per base64url decode, a boxed verifier holding a \
fresh HMAC key state) and deserializes the claims twice (once into the caller's type, once for \
validation); the worker decodes into a 2 KiB arena and reads JSON in place with \
`serde-json-core`.\n",
        to(g("worker_valid")),
        to(g("jsonwebtoken_valid")),
        ratio(g("jsonwebtoken_valid"), g("worker_valid")),
        to(g("worker_expired")),
        to(g("jsonwebtoken_expired")),
        ratio(g("jsonwebtoken_expired"), g("worker_expired")),
        cmd("peers", "per_token/native/"),
        v = r.m("jsonwebtoken"),
    );
}

fn javascript(d: &mut String, r: &Results) {
    let w = r.c("per_request/wasm/reuse_epoch");
    let wf = r.c("per_request/wasm/fresh_pooling_epoch");
    let nv = r.node_row("wasm_reuse_mix");
    let nf = r.node_row("wasm_fresh_mix");
    let js = r.node_row("js_mix");
    let hm = r.node_row("js_hmac_only");
    let _ = writeln!(
        d,
        "## 4. Against JavaScript on V8\n\n\
Node.js {node} (V8 {v8}), `benches/node/bench.mjs`: the same `dist/gateway.wasm` through Node's \
`WebAssembly` (instance reused; or a new `WebAssembly.Instance` per request), and the same \
validation written in plain JavaScript with `node:crypto` (`createHmac`, `timingSafeEqual`, \
`Buffer` base64url, `JSON.parse`), on the same request heads. Each figure is the median of five \
timed batches of about 0.3 s after a warm-up, so V8 has tiered the code up. Ratios are to the \
module in wasmtime (bench engine, Cranelift, epoch) from this run.\n\n\
| row | per request (mix) | / wasmtime reuse | / wasmtime fresh |\n|---|---:|---:|---:|\n\
| wasmtime reuse | {} | 1.00x | |\n| wasmtime fresh (pooling) | {} | | 1.00x |\n\
| Node.js WebAssembly, reuse | {} | {} | |\n| Node.js WebAssembly, new instance per request | {} | | {} |\n\
| plain JavaScript + node:crypto | {} | {} | |\n| node:crypto HMAC-SHA256 alone (same bytes) | {} | {} | |\n\n\
Command: `target/release/bench-tool corpus c.json && node benches/node/bench.mjs c.json dist/gateway.wasm out.json`.\n\n\
V8 has no epoch deadline (it interrupts wasm through its stack-limit checks), so wasmtime's \
reused instance *without* the epoch deadline is the closer comparison: Node.js / wasmtime \
without epoch = {}. This ratio crosses processes, so it cannot be \
interleaved, and it moved between 0.8x and 1.2x across the runs made while writing this suite.\n\n\
The plain JavaScript is not quite the same validation: `JSON.parse` keeps the last of duplicate \
members instead of refusing them, and its head parsing is a split on CRLF, not httparse. Most \
of a call's time is outside the hashing: `node:crypto`'s HMAC alone takes {} of the {} (a new \
`Hmac` object crossing into C++ per call; the hashing itself, with SHA-NI, is a fraction of a \
µs), and the rest is string handling and `JSON.parse`.\n",
        to(w),
        to(wf),
        to(nv),
        ratio(nv, w),
        to(nf),
        ratio(nf, wf),
        to(js),
        ratio(js, w),
        to(hm),
        ratio(hm, w),
        ratio(nv, r.c("per_request/wasm/reuse_no_epoch")),
        to(hm),
        to(js),
        node = r.m("node"),
        v8 = r.m("v8"),
    );
}

fn cold_start(d: &mut String, r: &Results) {
    let g = |s: &str| r.c(&format!("cold/wasmtime/{s}"));
    let _ = writeln!(
        d,
        "## 5. Cold start\n\n### In process\n\n| step | time | command |\n|---|---:|---|\n\
| wasmtime JIT, Cranelift (`Module::new`) | {} | {} |\n\
| wasmtime JIT, Winch | {} | {} |\n\
| wasmtime `Module::deserialize_file` of the `.cwasm` | {} | {} |\n\
| wasmtime `Engine::new` with the pooling allocator | {} | {} |\n\
| `InstancePre` (link, no imports) | {} | {} |\n\
| instantiate from the pool and drop | {} | {} |\n\
| deserialize + InstancePre + first request in a fresh instance | {} | {} |\n\
| Node.js `WebAssembly.compile` (median of 200) | {} | `node benches/node/bench.mjs ...` |\n\
| Node.js `WebAssembly.instantiate(module)` | {} | same |\n\
| Node.js compile + instantiate + first request | {} | same |\n",
        to(g("jit_cranelift")),
        cmd("wasm", "cold/wasmtime/jit_cranelift"),
        to(g("jit_winch")),
        cmd("wasm", "cold/wasmtime/jit_winch"),
        to(g("deserialize_file_cwasm")),
        cmd("wasm", "cold/wasmtime/deserialize_file"),
        to(g("engine_new_pooling")),
        cmd("wasm", "cold/wasmtime/engine_new"),
        to(g("instance_pre")),
        cmd("wasm", "cold/wasmtime/instance_pre"),
        to(g("instantiate_pooling")),
        cmd("wasm", "cold/wasmtime/instantiate_pooling"),
        to(g("deserialize_instantiate_first_request")),
        cmd("wasm", "cold/wasmtime/deserialize_instantiate"),
        to(r.node_row("compile")),
        to(r.node_row("instantiate")),
        to(r.node_row("compile_instantiate_first_request")),
    );
    let _ = writeln!(
        d,
        "Winch compiles {} faster than Cranelift; its code is {} slower per request (table 1). \
Loading the `.cwasm` is {} faster than a Cranelift JIT compile. V8's `WebAssembly.compile` is \
lazy: it validates and compiles functions with Liftoff on first call, and optimises hot ones \
later with TurboFan, so its figure is not the same work as Cranelift's.\n",
        ratio(g("jit_cranelift"), g("jit_winch")),
        ratio(r.c("per_request/wasm/reuse_winch_epoch"), r.c("per_request/wasm/reuse_epoch")),
        ratio(g("jit_cranelift"), g("deserialize_file_cwasm")),
    );
    let text = std::fs::read_to_string(r.dir.join("cold-process.txt")).unwrap_or_default();
    let _ = writeln!(
        d,
        "### Whole process: one request\n\n\
A new process decides one request read from stdin (`{{\"request\": ..., \"now\": ...}}`) and \
exits. Time: hyperfine (30 runs after 3 warm-up runs, shell start-up subtracted); memory: \
`/usr/bin/time -v`, maximum resident set size.\n\n\
| process | mean | σ | min | max RSS | command |\n|---|---:|---:|---:|---:|---|"
    );
    if text.is_empty() {
        let _ = writeln!(d, "| – | not measured | | | | |");
    }
    for line in text.lines() {
        let parts: Vec<&str> = line.split('|').collect();
        if parts.len() < 4 {
            continue;
        }
        let nums: Vec<&str> = parts[2].split_whitespace().collect();
        let f = |i: usize| nums.get(i).map_or("–".to_string(), |v| format!("{v} ms"));
        let rss = parts[3].trim().parse::<f64>().map_or("–".into(), |k| format!("{:.1} MiB", k / 1024.0));
        let _ = writeln!(
            d,
            "| {} | {} | {} | {} | {rss} | `{} < one-request.jsonl` |",
            parts[0],
            f(0),
            f(1),
            f(2),
            parts[1]
        );
    }
    let _ = writeln!(
        d,
        "\n`node_empty` is `node -e 0`: the runtime's own start-up, for scale. \
`one-request.jsonl` is written by `benches/run.sh` from the corpus (the valid request).\n"
    );
}

fn host_bench(d: &mut String, r: &Results) {
    let wasm = read_json(&r.dir.join("host-sim-bench-wasm.json")).unwrap_or(Value::Null);
    let cwasm = read_json(&r.dir.join("host-sim-bench-cwasm.json")).unwrap_or(Value::Null);
    let _ = writeln!(
        d,
        "### The host's own bench\n\n\
`host-sim bench` measures the shipped host end to end in its own process: cold-start steps \
(median of 10 runs), then 50,000 requests of its own seeded mix per isolation mode \
(each timed on its own).\n"
    );
    if wasm.is_null() {
        let _ = writeln!(d, "Not measured in this run (`host-sim bench` failed or is missing).\n");
        return;
    }
    let us = |v: &Value| v.as_f64().map_or("–".into(), |x| t(x * 1e3));
    let _ = writeln!(d, "| cold-start step (median) | from .wasm (JIT) | from .cwasm |\n|---|---:|---:|");
    for (label, key) in [
        ("engine (pooling allocator)", "engine"),
        ("module: JIT compile / deserialize", "module"),
        ("InstancePre", "instance_pre"),
        ("first instantiate", "first_instantiate"),
        ("first request", "first_request"),
        ("total without the engine", "total_without_engine"),
    ] {
        let _ = writeln!(
            d,
            "| {label} | {} | {} |",
            us(&wasm["cold_start"][key]["median_us"]),
            us(&cwasm["cold_start"][key]["median_us"])
        );
    }
    let _ = writeln!(
        d,
        "\n| mode | mean | p50 | p90 | p99 | p99.9 | max | requests/s per core | deadline hits |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for mode in ["fresh", "reuse"] {
        let m = &wasm[mode];
        let _ = writeln!(
            d,
            "| {mode} | {} | {} | {} | {} | {} | {} | {} | {} |",
            us(&m["mean_us"]),
            us(&m["p50_us"]),
            us(&m["p90_us"]),
            us(&m["p99_us"]),
            us(&m["p999_us"]),
            us(&m["max_us"]),
            m["requests_per_sec_per_core"].as_f64().map_or("–".into(), |x| format!("{x:.0}")),
            m["deadline_hits"]
        );
    }
    let e = &wasm["epoch"];
    let _ = writeln!(
        d,
        "\nMemory: {} KiB per live instance, process RSS {} KiB. Epoch deadline, mean per request: \
{} with, {} without.\n\n\
Commands: `target/release/host-sim bench --wasm dist/gateway.wasm --requests 50000 --cold-runs 10 --json` \
and the same with `--cwasm target/bench-variants/gateway-host.cwasm` (from `host-sim compile dist/gateway.wasm -o ...`).\n",
        wasm["memory"]["per_instance_kib"],
        wasm["memory"]["process_rss_kib"],
        us(&e["with_deadline_mean_us"]),
        us(&e["without_deadline_mean_us"]),
    );
    let hits = wasm["fresh"]["deadline_hits"].as_u64().unwrap_or(0)
        + wasm["reuse"]["deadline_hits"].as_u64().unwrap_or(0);
    if hits > 0 {
        let _ = writeln!(
            d,
            "**{hits} request(s) hit the CPU deadline** ({} ms by default) in this run: on a shared 2-core \
machine a descheduled thread can stay off the CPU longer than that, and the request is then \
answered 503 although the module did nothing wrong. The deadline is measured in wall-clock epoch \
ticks, so it also counts time the thread was not running.\n",
            wasm["deadline_ms"]
        );
    }
}

fn microservice(d: &mut String, r: &Results) {
    let m = r.c("per_request/microservice/loopback_keep_alive_mix");
    let ms = r.c("per_request/microservice/loopback_keep_alive_mix_spinner");
    let i = r.c("per_request/microservice/in_process_mix");
    let w = r.c("per_request/wasm/reuse_epoch");
    let wf = r.c("per_request/wasm/fresh_pooling_epoch");
    let _ = writeln!(
        d,
        "## 6. Against a microservice\n\n\
The same decision made by a minimal HTTP/1.1 service on loopback (`benches/src/http.rs`: \
`std::net`, a thread per connection, `worker::handle` natively, the decision as the body) and \
called by a keep-alive client, one request at a time, against the decision made in process.\n\n\
| how | per request | / in process (native) | / wasmtime reuse | / wasmtime fresh |\n|---|---:|---:|---:|---:|\n\
| in process, native | {} | 1.00x | | |\n\
| in process, wasmtime reuse | {} | {} | 1.00x | |\n\
| in process, wasmtime fresh instance | {} | {} | | 1.00x |\n\
| microservice, loopback keep-alive round trip | {} | {} | {} | {} |\n\
| the same, with a thread spinning on the other core | {} | {} | {} | {} |\n\n\
Command: {}. The latency table in section 1 has its distribution. Over the native decision, \
the loopback round trip (two `write`/`read` system-call pairs and two thread wake-ups) adds {}; \
the module in process adds {} in a reused instance and {} in a fresh one. This is one client \
with one request in flight; under load the service's threads also compete for the cores \
with the gateway's own, and a network hop between machines would add far more than loopback.\n\n\
**The round trip depends on whether the machine is idle.** On this virtual machine a blocked \
thread that is woken on an idle vCPU waits for the hypervisor to resume that vCPU: tens of µs \
per hand-over, twice per round trip. With another thread keeping a core busy (the second row), \
client and service hand over on the free core and the round trip is a few µs. Which one a \
deployment sees depends on its load; the in-process module has no hand-over at all. The \
per-request latency table in section 1 was measured in the same state as the first row.\n",
        to(i),
        to(w),
        ratio(w, i),
        to(wf),
        ratio(wf, i),
        to(m),
        ratio(m, i),
        ratio(m, w),
        ratio(m, wf),
        to(ms),
        ratio(ms, i),
        ratio(ms, w),
        ratio(ms, wf),
        cmd("peers", "per_request/microservice/"),
        diff(m, i),
        diff(w, i),
        diff(wf, i),
    );
}

fn http(d: &mut String, r: &Results, charts: &Path) {
    let notes = std::fs::read_to_string(r.dir.join("http-notes.txt")).unwrap_or_default();
    let _ = writeln!(
        d,
        "## 7. HTTP end to end\n\n\
`host-sim serve` and workerd, each with the module, under the same open-loop load: \
`bench-tool load` (`benches/src/load.rs`) sends the mix (minted around the real clock, since \
both servers read it) at a fixed rate over 16 keep-alive connections for a few seconds after a \
one-second warm-up; valid tokens are forwarded to `host-sim upstream` (an echo server) on \
loopback. *Round trip* is from writing a request to reading its whole response; *from schedule* \
counts from the moment the request was due, so queueing behind a slow response is not hidden \
(it also includes the sender's wake-up delay of some tens of µs).\n\n\
**The load generator, the gateway and the upstream share the 2-core machine**: at the higher \
rates they compete for the same cores, so these figures are a floor on what the gateways do, \
and a comparison between them, not a capacity figure. Each connection has one request in flight \
at a time: where the achieved rate falls short of the target, the server (with the load \
generator beside it) was saturated, the requests queued, and the from-schedule columns show \
the wait. At the lower rates the cores are often idle, so round trips also carry the idle-vCPU \
wake-ups described in section 6.\n"
    );
    for line in notes.lines() {
        let _ = writeln!(d, "- {line}");
    }
    let rt: Vec<&Series> = r.http.iter().filter(|s| s.group == "http").collect();
    let sched: Vec<&Series> = r.http.iter().filter(|s| s.group == "http_scheduled").collect();
    if rt.is_empty() {
        let _ = writeln!(d, "\nNot measured in this run (see the notes above).\n");
        return;
    }
    let _ = writeln!(
        d,
        "\n| server @ target rate | achieved | round trip p50 | p95 | p99 | p99.9 | from schedule p50 | p99 | statuses |\n|---|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for s in &rt {
        let sc = sched.iter().find(|x| x.name == s.name);
        let achieved = s.note.split("achieved ").nth(1).and_then(|x| x.split(',').next()).unwrap_or("?");
        let statuses = s.note.split("; ").nth(1).unwrap_or("");
        let _ = writeln!(
            d,
            "| {} | {achieved} | {} | {} | {} | {} | {} | {} | {statuses} |",
            s.name,
            t(s.p50_ns as f64),
            t(s.p95_ns as f64),
            t(s.p99_ns as f64),
            t(s.p999_ns as f64),
            sc.map_or("–".into(), |x| t(x.p50_ns as f64)),
            sc.map_or("–".into(), |x| t(x.p99_ns as f64)),
        );
    }
    std::fs::write(
        charts.join("http-latency.svg"),
        svg::percentile_chart("HTTP round trip on loopback", &rt),
    )
    .unwrap();
    let _ = writeln!(
        d,
        "\n![HTTP latency by percentile](perf/http-latency.svg)\n\n\
Command: `benches/run.sh` step 6, i.e. per server and rate \
`target/release/bench-tool load http://127.0.0.1:PORT RATE SECONDS 16 http NAME out.json` \
against the servers started as in the notes above.\n"
    );
}

fn wrk_section(d: &mut String, r: &Results) {
    let wrk = std::fs::read_to_string(r.dir.join("wrk.md")).unwrap_or_default();
    let table: Vec<&str> = wrk.lines().filter(|l| l.starts_with('|')).collect();
    if !table.is_empty() {
        let _ = writeln!(
            d,
            "\n### Closed loop: as fast as they go (wrk)\n\n\
`deploy/workerd/load.sh` (the workerd deployment's own load script, `LOAD_SECONDS=3`): wrk with \
16 connections, one thread, each target in turn, two scenarios of one repeated request each: \
*reject* (a signed token whose audience has no route: the whole verify path, then 401) and \
*forward* (a valid token, proxied to a Node.js upstream on loopback). wrk shares the machine too.\n"
        );
        for line in table {
            let _ = writeln!(d, "{line}");
        }
        let _ = writeln!(d, "\nCommand: `LOAD_SECONDS=3 bash deploy/workerd/load.sh`.\n");
    }
}

fn sizes(d: &mut String, r: &Results) {
    let text = std::fs::read_to_string(r.dir.join("sizes.txt")).unwrap_or_default();
    let size: BTreeMap<String, (u64, u64)> = text
        .lines()
        .filter_map(|l| {
            let mut p = l.split_whitespace();
            Some((p.next()?.to_string(), (p.next()?.parse().ok()?, p.next()?.parse().ok()?)))
        })
        .collect();
    let _ = writeln!(
        d,
        "## 8. Module size, step by step, and what each step costs in speed\n\n\
Built by `benches/run.sh` into `target/bench-variants/` (never touching `dist/`). The shipped \
module is **a3**. Speed: the mix per request in a reused instance and in a fresh pooled instance \
(bench engine, Cranelift JIT, no epoch), all variants compared interleaved ({PAIRED}).\n\n\
| variant | how | bytes | gzip -9 | reuse, per request | fresh, per request | reuse vs a3 |\n|---|---|---:|---:|---:|---:|---:|"
    );
    let how: [(&str, &str); 10] = [
        (
            "a1-compact-raw",
            "`cargo worker-wasm`: opt-level z, LTO, 1 CGU, panic abort, strip; sha2 compact; 32 KiB stack",
        ),
        (
            "a2-compact-stripped",
            "a1 + `wasm-opt --strip-debug --strip-producers --strip-target-features` (no optimisation)",
        ),
        ("a3-compact-oz", "a1 + `wasm-opt -Oz` (= `dist/gateway.wasm`)"),
        (
            "b1-default-raw",
            "as a1 with sha2's default (unrolled) backend: `RUSTFLAGS=\"-C link-arg=-zstack-size=32768\"`",
        ),
        ("b3-default-oz", "b1 + `wasm-opt -Oz`"),
        ("c1-o3-raw", "as a1 with `--config 'profile.wasm.opt-level=3'`"),
        ("c3-o3-wasmopt-o3", "c1 + `wasm-opt -O3`"),
        ("d3-stack1m-oz", "as a3 with rustc's default 1 MiB stack (no `-zstack-size`)"),
        (
            "e1-sha2o3-raw",
            "as a1 with opt-level 3 for sha2 only: `--config 'profile.wasm.package.sha2.opt-level=3'`",
        ),
        ("e3-sha2o3-oz", "e1 + `wasm-opt -Oz`"),
    ];
    let base = r.p("variants_reuse", "a3-compact-oz");
    for (name, h) in how {
        let (bytes, gz) = size.get(name).copied().unwrap_or((0, 0));
        let reuse = r.p("variants_reuse", name);
        let fresh = r.p("variants_fresh", name);
        let _ = writeln!(
            d,
            "| {name} | {h} | {} | {} | {} | {} | {} |",
            if bytes > 0 { bytes.to_string() } else { "–".into() },
            if gz > 0 { gz.to_string() } else { "–".into() },
            to(reuse),
            to(fresh),
            ratio(reuse, base)
        );
    }
    let _ = writeln!(
        d,
        "\nCommands: `bash benches/run.sh` step 1 builds the variants (the exact `cargo rustc` and \
`wasm-opt` lines are in it); then {PAIRED}.\n"
    );
}

fn speedups(d: &mut String, r: &Results) {
    let v = |kind: &str, name: &str| r.p(&format!("variants_{kind}"), name);
    let a3 = v("reuse", "a3-compact-oz");
    let b3 = v("reuse", "b3-default-oz");
    let c3 = v("reuse", "c3-o3-wasmopt-o3");
    let e3 = v("reuse", "e3-sha2o3-oz");
    let fa3 = v("fresh", "a3-compact-oz");
    let fd3 = v("fresh", "d3-stack1m-oz");
    let k = |name: &str| {
        let group = if name.starts_with("hmac") { "kernels_hmac" } else { "kernels_split" };
        r.p(group, name)
    };
    let hm = r.p("native_hmac", "hmac_worker");
    let hp = r.p("native_hmac", "hmac_prekeyed");
    let hw = match (r.c("stages/wasm/bad_signature"), r.c("stages/wasm/unknown_kid")) {
        (Some(a), Some(b)) => Some(a - b),
        _ => None,
    };
    let size = |name: &str| -> String {
        std::fs::read_to_string(r.dir.join("sizes.txt"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| {
                l.strip_prefix(name).and_then(|rest| rest.split_whitespace().next().map(str::to_string))
            })
            .unwrap_or_else(|| "?".into())
    };
    let _ = writeln!(
        d,
        "## Where to go faster\n\n\
Measured in this run; the worker is unchanged (these are proposals, with their evidence). The \
kernel rows come from `benches/wasm-kernels`, a small no_std cdylib built like the worker \
(opt-level z, LTO, sha2 compact) that exports the worker's own `signature::verify` and \
`jws::split` beside the proposed alternative, timed in wasmtime. Every before/after pair was \
measured interleaved ({}).\n\n\
| idea | before | after | after / before | cost |\n|---|---:|---:|---:|---|\n\
| precompute the HMAC key state once per key (clone the keyed `Hmac` per request): wasm kernel | {} | {} | {} | none: a few hundred bytes of state per key, computed at first use or at build time |\n\
| the same natively (SHA-NI) | {} | {} | {} | |\n\
| a 256-entry class table for the base64url alphabet in `jws::split` (and `request::is_b64token`): wasm kernel | {} | {} | {} | 256 bytes of data |\n\
| skip `wasm-opt -Oz` (a1 instead of a3), per request, reuse | {} | {} | {} | {} → {} bytes |\n\
| opt-level 3 for the whole worker + `wasm-opt -O3` (c3), per request, reuse | {} | {} | {} | {} → {} bytes |\n\
| opt-level 3 for sha2 only (e3), per request, reuse | {} | {} | {} | {} → {} bytes |\n\
| sha2's default (unrolled) backend (b3), per request, reuse | {} | {} | {} | {} → {} bytes |\n\
| sha2's default backend with the epoch deadline on (the host's setting): the unrolled rounds have fewer loop back-edges to check | {} | {} | {} | as b3 |\n\
| keep the 32 KiB stack (d3 has rustc's 1 MiB), fresh instance per request | {} (1 MiB) | {} (32 KiB) | {} | none: the request path needs a few KiB |\n",
        PAIRED,
        to(k("hmac_worker")),
        to(k("hmac_prekeyed")),
        ratio(k("hmac_prekeyed"), k("hmac_worker")),
        to(hm),
        to(hp),
        ratio(hp, hm),
        to(k("split_worker")),
        to(k("split_table")),
        ratio(k("split_table"), k("split_worker")),
        to(a3),
        to(v("reuse", "a1-compact-raw")),
        ratio(v("reuse", "a1-compact-raw"), a3),
        size("a3-compact-oz"),
        size("a1-compact-raw"),
        to(a3),
        to(c3),
        ratio(c3, a3),
        size("a3-compact-oz"),
        size("c3-o3-wasmopt-o3"),
        to(a3),
        to(e3),
        ratio(e3, a3),
        size("a3-compact-oz"),
        size("e3-sha2o3-oz"),
        to(a3),
        to(b3),
        ratio(b3, a3),
        size("a3-compact-oz"),
        size("b3-default-oz"),
        to(r.p("epoch_by_sha2", "compact_epoch")),
        to(r.p("epoch_by_sha2", "default_epoch")),
        ratio(r.p("epoch_by_sha2", "default_epoch"), r.p("epoch_by_sha2", "compact_epoch")),
        to(fd3),
        to(fa3),
        ratio(fa3, fd3),
    );
    let _ = writeln!(
        d,
        "Inside the module the HMAC phase is {} of a valid request's {} (stage table above), so the \
key-state precomputation is the largest single saving that costs no bytes; the alphabet table is \
next. HMAC of the 186-byte signing input takes 7 SHA-256 compressions (2 for the padded key, \
4 for the inner hash, 1 for the outer); precomputing the key state removes the first 2 of them \
(and the key padding), in wasm and natively alike. The opt-level and wasm-opt rows trade bytes \
for speed: every variant stays far under the 180 KiB budget, and `wasm-opt -Oz`'s last few KB \
are paid for on every request.\n",
        to(hw),
        to(r.c("stages/wasm/valid")),
    );
}
