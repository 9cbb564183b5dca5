//! The sections about hosts and modules as wholes: cold start (in process
//! and whole processes), the host's own bench, HTTP end to end, and the
//! module variants of the size table.

use gateway_benches::latency::Series;
use gateway_benches::table::{Table, left, right};
use gateway_benches::variants::{SHIPPED, VARIANTS};

use super::format::{cost, ratio, t, to, us};
use super::in_process::id;
use super::results::{HTTP_STEP, Results};
use super::{Values, command};

pub(super) fn cold_start(v: &mut Values, r: &Results) {
    let mut table = Table::new([left("step"), right("time"), left("command")]);
    for (step, id) in [
        ("wasmtime JIT, Cranelift (`engine::compile`)", "cold/wasmtime/jit_cranelift"),
        ("wasmtime JIT, Winch", "cold/wasmtime/jit_winch"),
        ("`engine::deserialize` of the `.cwasm`", "cold/wasmtime/deserialize_cwasm"),
        ("`engine::build`: the engine with a one-slot pooling allocator", "cold/wasmtime/engine_build"),
        ("`Prepared::new`: the contract check and the `InstancePre`", "cold/wasmtime/instance_pre"),
        (
            "`Prepared::probe`: the first instance, `abi_version` and layout",
            "cold/wasmtime/first_instantiate",
        ),
        (
            "deserialize + InstancePre + first instance + first request (fresh)",
            "cold/wasmtime/deserialize_instantiate_first_request",
        ),
    ] {
        table.row([step.into(), to(r.get(id)), command(id).unwrap_or_default()]);
    }
    for (step, id, command) in [
        (
            "Node.js `WebAssembly.compile` (median of 200)",
            "node/compile",
            command("node").unwrap_or_default(),
        ),
        ("Node.js `WebAssembly.instantiate(module)`", "node/instantiate", "same".to_owned()),
        (
            "Node.js compile + instantiate + first request",
            "node/compile_instantiate_first_request",
            "same".to_owned(),
        ),
    ] {
        table.row([step.into(), to(r.get(id)), command]);
    }
    v.set("cold_table", table.to_markdown());
    let jit = r.get("cold/wasmtime/jit_cranelift");
    v.set("winch_compile_speedup", ratio(jit, r.get("cold/wasmtime/jit_winch")));
    v.set(
        "winch_slowdown",
        ratio(
            r.get("per_request/wasmtime/reuse_winch_deadline"),
            r.get("per_request/wasmtime/reuse_deadline"),
        ),
    );
    v.set("cwasm_load_speedup", ratio(jit, r.get("cold/wasmtime/deserialize_cwasm")));

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

pub(super) fn host_bench(v: &mut Values, r: &Results) {
    let get = |which: &str, path: &str| r.get(format!("host_bench/{which}/{path}"));
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

pub(super) fn http(v: &mut Values, r: &Results) {
    let notes: Vec<String> = r.text("http-notes.txt").lines().map(|l| format!("- {l}\n")).collect();
    v.set("http_notes", notes.concat());
    if r.skipped(HTTP_STEP) {
        let skipped = "Not measured in this run: the HTTP step was skipped (`BENCH_SKIP=http`).\n";
        v.set("http_table", skipped);
        return;
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
}

pub(super) fn sizes(v: &mut Values, r: &Results) {
    let size = |name: &str, what: &str| r.get(format!("sizes/{name}/{what}"));
    let bytes = |name: &str| size(name, "bytes").map_or("–".into(), |b| format!("{b:.0}"));
    let reuse = |name: &'static str| r.get(id("interleaved/variants_reuse", name));
    let fresh = |name: &'static str| r.get(id("interleaved/variants_fresh", name));
    let shipped = reuse(SHIPPED);
    v.set("shipped_variant", SHIPPED);
    let mut table = Table::new([
        left("variant"),
        left("how"),
        right("bytes"),
        right("gzip -9"),
        right("reuse, per request"),
        right("fresh, per request"),
        right("reuse vs shipped"),
    ]);
    for variant in VARIANTS {
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
    let bytes_to = |variant: &str| format!("{} → {} bytes", bytes(SHIPPED), bytes(variant));
    let ideas = [
        (
            "precompute the HMAC key state once per key (clone the keyed `Hmac` per request): wasm kernel",
            r.get("interleaved/kernels_hmac/hmac_worker"),
            r.get("interleaved/kernels_hmac/hmac_prekeyed"),
            "none: a few hundred bytes of state per key, computed at first use or at build time".into(),
        ),
        (
            "the same natively (SHA-NI)",
            r.get("interleaved/native_hmac/hmac_worker"),
            r.get("interleaved/native_hmac/hmac_prekeyed"),
            String::new(),
        ),
        (
            "a 256-entry class table for the base64url alphabet in `jws::split` (and `request::is_b64token`): wasm kernel",
            r.get("interleaved/kernels_split/split_worker"),
            r.get("interleaved/kernels_split/split_table"),
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
            "LLVM's inline threshold 35 in the size profile (f3 has opt-level z's 5), per request, reuse",
            reuse("f3-inline5-oz"),
            shipped,
            format!("{} → {} bytes", bytes("f3-inline5-oz"), bytes(SHIPPED)),
        ),
        (
            "sha2's default (unrolled) backend (b3), per request, reuse",
            shipped,
            reuse("b3-default-oz"),
            bytes_to("b3-default-oz"),
        ),
        (
            "sha2's default backend with the deadline on (the host's setting): the unrolled rounds have fewer loop back-edges to check",
            r.get("interleaved/epoch_by_sha2/compact_deadline"),
            r.get("interleaved/epoch_by_sha2/default_deadline"),
            "as b3".into(),
        ),
        (
            "keep the 32 KiB stack (d3 has rustc's 1 MiB), fresh instance per request",
            fresh("d3-stack1m-oz"),
            fresh(SHIPPED),
            "none: the request path needs a few KiB".into(),
        ),
    ];
    for (idea, before, after, cost) in ideas {
        table.row([idea.into(), to(before), to(after), ratio(after, before), cost]);
    }
    v.set("speedups_table", table.to_markdown());
}

/// Keys fetched at run time against the same keys compiled in (fresh
/// instances, interleaved), and what installing a document costs.
pub(super) fn fetched_keys(v: &mut Values, r: &Results) {
    let mut table = Table::new([
        left("request"),
        right("keys compiled in"),
        right("keys fetched"),
        right("fetched costs"),
    ]);
    for (label, group) in [
        ("no token (401): the key store's copy alone", "interleaved/fetched_keys_no_token"),
        ("an RS256 token (200)", "interleaved/fetched_keys_rs256"),
    ] {
        let compiled = r.get(id(group, "compiled"));
        let fetched = r.get(id(group, "fetched"));
        table.row([label.into(), to(compiled), to(fetched), cost(fetched, compiled)]);
    }
    v.set("fetched_keys_table", table.to_markdown());
    let mut install = Table::new([left("a document of four keys"), right("install, in wasmtime")]);
    for (label, name) in [
        ("RS256, 2048 bits", "rs256_2048"),
        ("RS256, 4096 bits", "rs256_4096"),
        ("ES256", "es256"),
        ("EdDSA", "eddsa"),
    ] {
        install.row([label.into(), to(r.get(id("interleaved/fetched_keys_install", name)))]);
    }
    v.set("fetched_keys_install_table", install.to_markdown());
}

/// The request mix with 20 rules against none (interleaved).
pub(super) fn rules(v: &mut Values, r: &Results) {
    let mut table =
        Table::new([left("instance"), right("no rules"), right("20 rules"), right("the rules cost")]);
    for (label, group) in [("reused", "interleaved/rules_reuse"), ("fresh", "interleaved/rules_fresh")] {
        let none = r.get(id(group, "none"));
        let twenty = r.get(id(group, "twenty"));
        table.row([label.into(), to(none), to(twenty), cost(twenty, none)]);
    }
    v.set("rules_table", table.to_markdown());
}
