//! The sections measured in one process: the header and summary, per
//! request, per kind of request, the latency distribution, where the time
//! goes, and the peers (jsonwebtoken, V8, a microservice).

use gateway_benches::corpus::{self, PHASES};
use gateway_benches::latency::Series;
use gateway_benches::table::{Table, left, right};
use testkit::mix::RequestKind;

use super::Values;
use super::format::{cost, minus, pct, ratio, t, to};
use super::results::{Missing, NODE_STEP, Results};

/// The figure `name` of `group`.
pub(super) fn id(group: &str, name: &str) -> String {
    format!("{group}/{name}")
}

pub(super) fn header(v: &mut Values, r: &Results) {
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
    v.set("deadline_ms", runtime::engine::DEFAULT_DEADLINE_MS.to_string());
    // The HMAC of the signing input: 2 compressions for the padded key (inner
    // and outer), the inner hash's message blocks, 1 for the outer hash.
    let message_blocks = (64 + corpus.signing_input_bytes + 9).div_ceil(64) - 1;
    v.set("signing_input_bytes", corpus.signing_input_bytes.to_string());
    v.set("hmac_message_compressions", message_blocks.to_string());
    v.set("hmac_compressions", (message_blocks + 3).to_string());
}

pub(super) fn summary(v: &mut Values, r: &Results) {
    let native = r.get("per_request/native/mix");
    let reuse = r.get(id("interleaved/reuse", "jit_deadline"));
    let fresh = r.get(id("interleaved/fresh", "jit_deadline"));
    let reuse_criterion = r.get("per_request/wasmtime/reuse_deadline");
    let fresh_criterion = r.get("per_request/wasmtime/fresh_deadline");
    let micro = r.get("per_request/microservice/loopback_keep_alive_mix");
    v.set("native_mix", to(native));
    v.set("reuse", to(reuse));
    v.set("reuse_vs_native", ratio(reuse, native));
    v.set("fresh", to(fresh));
    v.set("fresh_vs_reuse", ratio(fresh, reuse));
    v.set("cold_deserialize", to(r.get("cold/wasmtime/deserialize_cwasm")));
    v.set("cold_jit", to(r.get("cold/wasmtime/jit_cranelift")));
    for (group, name) in
        [("interleaved/reuse", "cwasm_vs_jit_reuse"), ("interleaved/fresh", "cwasm_vs_jit_fresh")]
    {
        v.set(name, ratio(r.get(id(group, "cwasm_deadline")), r.get(id(group, "jit_deadline"))));
    }
    v.set(
        "cwasm_vs_jit_reuse_criterion",
        ratio(r.get("per_request/wasmtime/reuse_cwasm_deadline"), reuse_criterion),
    );
    v.set(
        "cwasm_vs_jit_fresh_criterion",
        ratio(r.get("per_request/wasmtime/fresh_cwasm_deadline"), fresh_criterion),
    );
    v.set("deadline_cost_reuse", cost(reuse, r.get(id("interleaved/reuse", "jit_no_deadline"))));
    let phase = |name| r.get(id("stages/wasmtime", name));
    v.set("hmac_share", pct(minus(phase("bad_signature"), phase("unknown_kid")), phase("valid")));
    let (worker, prekeyed) =
        (r.get("interleaved/kernels_hmac/hmac_worker"), r.get("interleaved/kernels_hmac/hmac_prekeyed"));
    v.set("prekeyed_saving", pct(minus(worker, prekeyed), worker));
    v.set(
        "jsonwebtoken_vs_worker",
        ratio(r.get("per_token/native/jsonwebtoken_valid"), r.get("per_token/native/worker_valid")),
    );
    v.set("node_wasm_vs_wasmtime", ratio(r.get("node/wasm_reuse_mix"), reuse_criterion));
    v.set("js_vs_wasmtime", ratio(r.get("node/js_mix"), reuse_criterion));
    v.set("microservice", to(micro));
    v.set("microservice_spinner", to(r.get("per_request/microservice/loopback_keep_alive_mix_spinner")));
    v.set("microservice_vs_reuse", ratio(micro, reuse_criterion));
    v.set("microservice_vs_fresh", ratio(micro, fresh_criterion));
}

pub(super) fn per_request(v: &mut Values, r: &Results) {
    let native = r.get("per_request/native/mix");
    let reuse = r.get("per_request/wasmtime/reuse_deadline");
    let mut table = Table::new([
        left("host"),
        left("mode"),
        right("per request"),
        right("vs native"),
        right("vs wasmtime reuse"),
    ]);
    for (host, mode, id) in [
        ("native rlib", "function call", "per_request/native/mix"),
        ("wasmtime, Cranelift JIT", "reuse, deadline", "per_request/wasmtime/reuse_deadline"),
        ("wasmtime, Cranelift JIT", "reuse, no deadline", "per_request/wasmtime/reuse_no_deadline"),
        ("wasmtime, .cwasm", "reuse, deadline", "per_request/wasmtime/reuse_cwasm_deadline"),
        ("wasmtime, Winch JIT", "reuse, deadline", "per_request/wasmtime/reuse_winch_deadline"),
        ("wasmtime, Cranelift JIT", "fresh, pooling, deadline", "per_request/wasmtime/fresh_deadline"),
        ("wasmtime, Cranelift JIT", "fresh, pooling, no deadline", "per_request/wasmtime/fresh_no_deadline"),
        ("wasmtime, .cwasm", "fresh, pooling, deadline", "per_request/wasmtime/fresh_cwasm_deadline"),
        (
            "wasmtime, Cranelift JIT",
            "fresh, on-demand allocator, deadline",
            "per_request/wasmtime/fresh_on_demand_deadline",
        ),
        ("Node.js WebAssembly (V8)", "reuse", "node/wasm_reuse_mix"),
        ("Node.js WebAssembly (V8)", "fresh (new WebAssembly.Instance)", "node/wasm_fresh_mix"),
        ("plain JavaScript + node:crypto (V8)", "function call", "node/js_mix"),
        (
            "microservice (native, loopback HTTP, keep-alive)",
            "round trip",
            "per_request/microservice/loopback_keep_alive_mix",
        ),
    ] {
        let x = r.get(id);
        table.row([host.into(), mode.into(), to(x), ratio(x, native), ratio(x, reuse)]);
    }
    v.set("per_request_table", table.to_markdown());

    let mut table = Table::new([
        left("isolation"),
        right("Cranelift JIT, deadline"),
        right("the same, a second runtime"),
        right(".cwasm, deadline"),
        right(".cwasm / JIT"),
        right("JIT, no deadline"),
        right("deadline costs"),
        right("Winch, deadline"),
    ]);
    for (label, group) in [("reuse", "interleaved/reuse"), ("fresh", "interleaved/fresh")] {
        let jit = r.get(id(group, "jit_deadline"));
        let control = r.get(id(group, "jit_deadline_control"));
        let cwasm = r.get(id(group, "cwasm_deadline"));
        let off = r.get(id(group, "jit_no_deadline"));
        // Winch is compared in a reused instance only.
        let winch =
            if group == "interleaved/reuse" { to(r.get(id(group, "winch_deadline"))) } else { String::new() };
        table.row([
            label.into(),
            to(jit),
            format!("{} ({})", to(control), ratio(control, jit)),
            to(cwasm),
            ratio(cwasm, jit),
            to(off),
            cost(jit, off),
            winch,
        ]);
        v.set(if label == "reuse" { "control_reuse" } else { "control_fresh" }, ratio(control, jit));
    }
    v.set("interleaved_table", table.to_markdown());
    let (jit, off) =
        (r.get(id("interleaved/reuse", "jit_deadline")), r.get(id("interleaved/reuse", "jit_no_deadline")));
    v.set("deadline_share_reuse", pct(minus(jit, off), jit));
    let fresh = |name| r.get(id("interleaved/fresh", name));
    v.set("pagemap_scan_fresh", ratio(fresh("jit_pagemap_scan"), fresh("jit_deadline")));
}

/// A Node.js row by name (`rows` of its output), unless the step was skipped.
fn node(r: &Results, row: &str) -> Option<f64> {
    if r.skipped(NODE_STEP) { None } else { r.get(format!("node/{row}")) }
}

/// A request with a bearer token beside tokens bound to their sender (DPoP
/// per proof algorithm, a client certificate), in V8, from
/// `benches/node/dpop.mjs`.
pub(super) fn bound_tokens(v: &mut Values, r: &Results) {
    let mut table = Table::new([left("request"), right("per request"), right("against bearer")]);
    let bearer = node(r, "dpop_bearer");
    for (name, row) in [
        ("bearer, HS256", "dpop_bearer"),
        ("DPoP, ES256 proof", "dpop_es256"),
        ("DPoP, EdDSA proof", "dpop_eddsa"),
        ("DPoP, RS256 proof (2048-bit key)", "dpop_rs256"),
        ("certificate-bound, over TLS with its certificate", "dpop_certificate"),
    ] {
        let time = node(r, row);
        table.row([name.into(), to(time), ratio(time, bearer)]);
    }
    v.set("bound_tokens_table", table.to_markdown());
}

pub(super) fn per_kind(v: &mut Values, r: &Results) {
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
        let native = r.get(id("per_request/native", slug));
        let wasm = r.get(id("per_kind/wasmtime_reuse", slug));
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

pub(super) fn latency(v: &mut Values, r: &Results) {
    let series: Vec<&Series> = r.latency.iter().collect();
    if series.is_empty() {
        r.miss(Missing::File("latency.json"));
    }
    if !r.skipped(NODE_STEP) && !series.iter().any(|s| s.name.starts_with("node")) {
        r.miss(Missing::File("node.json"));
    }
    v.set("latency_table", latency_table(&series));
}

pub(super) fn stages(v: &mut Values, r: &Results) {
    let whole = r.get("stages/native/all_handle_valid");
    let mut table = Table::new([left("stage"), left("function"), right("time"), right("share of the whole")]);
    let mut sum = Some(0.0);
    for (what, function, id) in [
        ("parse the head, find the token", "request::extract_bearer", "stages/native/1_parse_head"),
        ("split into three parts (alphabet check)", "jws::split", "stages/native/2_split"),
        (
            "base64url: header, claims, signature",
            "jws::decode ×2, jws::decode_signature",
            "stages/native/3_base64url",
        ),
        ("header JSON, alg/typ/crit, key by kid", "header::select_key", "stages/native/4_header_json"),
        ("HMAC-SHA256 and constant-time compare", "signature::verify", "stages/native/5_hmac_sha256"),
        (
            "claims JSON, time, issuer, audience, route",
            "claims::check",
            "stages/native/6_claims_json_and_route",
        ),
        ("route lookup alone", "route::lookup", "stages/native/7_route"),
        ("write the decision", "response::write_grant", "stages/native/8_write_decision"),
    ] {
        let x = r.get(id);
        // The route lookup is also inside claims::check: counted once.
        if id != "stages/native/7_route" {
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
        (
            "floor: HMAC-SHA256 of the same bytes",
            "`Hmac<Sha256>` new, update, finalize",
            "stages/native/floor_hmac_sha256",
        ),
        (
            "floor with the key state precomputed",
            "clone of a keyed `Hmac`, update, verify",
            "stages/native/floor_hmac_sha256_prekeyed",
        ),
        ("SHA-256 alone of the same bytes", "`Sha256::digest`", "stages/native/floor_sha256_only"),
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
        let wasm = r.get(id("stages/wasmtime", name));
        let native = r.get(id("stages/native_by_difference", name));
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
    let phase = |name| r.get(id("stages/wasmtime", name));
    v.set("wasm_hmac_phase", to(minus(phase("bad_signature"), phase("unknown_kid"))));
    v.set("wasm_valid", to(phase("valid")));
}

pub(super) fn peers(v: &mut Values, r: &Results) {
    let mut table =
        Table::new([left("token"), right("worker"), right("jsonwebtoken"), right("jsonwebtoken / worker")]);
    for (token, worker, jwt) in [
        ("valid", "per_token/native/worker_valid", "per_token/native/jsonwebtoken_valid"),
        ("expired", "per_token/native/worker_expired", "per_token/native/jsonwebtoken_expired"),
    ] {
        let (worker, jwt) = (r.get(worker), r.get(jwt));
        table.row([token.into(), to(worker), to(jwt), ratio(jwt, worker)]);
    }
    v.set("jsonwebtoken_table", table.to_markdown());

    let reuse = r.get("per_request/wasmtime/reuse_deadline");
    let fresh = r.get("per_request/wasmtime/fresh_deadline");
    let mut table = Table::new([
        left("row"),
        right("per request (mix)"),
        right("/ wasmtime reuse"),
        right("/ wasmtime fresh"),
    ]);
    table.row(["wasmtime reuse".into(), to(reuse), "1.00x".into(), String::new()]);
    table.row(["wasmtime fresh (pooling)".into(), to(fresh), String::new(), "1.00x".into()]);
    for (row, id, against_fresh) in [
        ("Node.js WebAssembly, reuse", "node/wasm_reuse_mix", false),
        ("Node.js WebAssembly, new instance per request", "node/wasm_fresh_mix", true),
        ("plain JavaScript + node:crypto", "node/js_mix", false),
        ("node:crypto HMAC-SHA256 alone (same bytes)", "node/js_hmac_only", false),
    ] {
        let x = r.get(id);
        let (a, b) =
            if against_fresh { (String::new(), ratio(x, fresh)) } else { (ratio(x, reuse), String::new()) };
        table.row([row.into(), to(x), a, b]);
    }
    v.set("javascript_table", table.to_markdown());
    v.set(
        "node_vs_no_deadline",
        ratio(r.get("node/wasm_reuse_mix"), r.get("per_request/wasmtime/reuse_no_deadline")),
    );
    v.set("node_hmac", to(r.get("node/js_hmac_only")));
    v.set("node_js", to(r.get("node/js_mix")));

    let native = r.get("per_request/microservice/in_process_mix");
    let micro = r.get("per_request/microservice/loopback_keep_alive_mix");
    let spinner = r.get("per_request/microservice/loopback_keep_alive_mix_spinner");
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
