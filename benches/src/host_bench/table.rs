//! `bench-tool host`'s figures as a readable table (`--json` prints them
//! as JSON instead).

use testkit::mix::RequestKind;

use super::{Latency, Report, Spread};

/// The report as a readable table.
pub fn table(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let deadline = r.deadline_ms.map_or("off".to_owned(), |d| format!("{d} ms"));
    let _ = writeln!(
        s,
        "module {} ({}, {}), deadline {deadline}, memory cap {} KiB",
        r.module,
        r.source,
        r.strategy,
        r.memory_cap >> 10
    );
    let c = &r.cold_start;
    let _ = writeln!(
        s,
        "\ncold start ({} runs, each on a new engine)   median      min       max   (us)",
        c.runs
    );
    let row = |s: &mut String, name: &str, sp: &Spread| {
        let _ = writeln!(s, "  {name:<40} {:>9.1} {:>9.1} {:>9.1}", sp.median_us, sp.min_us, sp.max_us);
    };
    row(&mut s, "Engine::new (pooling allocator)", &c.engine);
    row(
        &mut s,
        if c.module_step == "jit" { "JIT compile (.wasm)" } else { "deserialize (.cwasm)" },
        &c.module,
    );
    row(&mut s, "contract check + InstancePre", &c.instance_pre);
    row(&mut s, "first instantiate (+ abi_version)", &c.first_instantiate);
    row(&mut s, "first request (fresh instance)", &c.first_request);
    row(&mut s, "module + pre + instantiate + request", &c.total_without_engine);
    let _ = writeln!(s, "  with the host's warm-up before serving (same runs, an engine of its own):");
    row(&mut s, "warm-up (fixed request, first instance)", &c.warmed.warm_up);
    row(&mut s, "first client request (fresh instance)", &c.warmed.first_client_request);
    row(&mut s, "module + ... + warm-up + client request", &c.warmed.total_with_warm_up);
    let _ = writeln!(
        s,
        "\nwarm latency (us)        requests      p50      p90      p99    p99.9      max     mean   req/s/core  deadline  wrong"
    );
    let latency_rows = |s: &mut String, rows: [(&str, &Latency); 2]| {
        for (name, l) in rows {
            let _ = writeln!(
                s,
                "  {name:<20} {:>10} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.1} {:>8.2} {:>12.0} {:>9} {:>6}",
                l.requests,
                l.p50_us,
                l.p90_us,
                l.p99_us,
                l.p999_us,
                l.max_us,
                l.mean_us,
                l.requests_per_sec_per_core,
                l.deadline_hits,
                l.unexpected
            );
        }
    };
    latency_rows(&mut s, [("fresh instance", &r.fresh), ("reused instance", &r.reuse)]);
    for (name, l) in [("fresh", &r.fresh), ("reused", &r.reuse)] {
        let kinds: Vec<String> = RequestKind::ALL
            .iter()
            .filter_map(|k| l.p50_by_kind_us.get(k.name()).map(|v| format!("{} {v:.2}", k.name())))
            .collect();
        let _ = writeln!(s, "  p50 by kind, {name}: {}", kinds.join(", "));
    }
    let rp = &r.repeated;
    let _ = writeln!(
        s,
        "\neach token presented {} times by {} interleaved clients, reused instance (not in the figures above):",
        rp.presentations, rp.clients
    );
    latency_rows(&mut s, [("1st and 2nd (misses)", &rp.misses), ("3rd and later (hits)", &rp.hits)]);
    let m = &r.memory;
    let _ = writeln!(
        s,
        "\nmemory: process VmRSS {} KiB; {:.1} KiB resident per live instance (over {} instances)",
        m.process_rss_kib, m.per_instance_kib, m.instances_measured
    );
    if let Some(e) = &r.epoch {
        let _ = writeln!(
            s,
            "epoch deadline (reuse, {} requests): mean {:.2} us on vs {:.2} us off ({:+.2} us); p50 {:.2} vs {:.2}",
            e.requests,
            e.with_deadline_mean_us,
            e.without_deadline_mean_us,
            e.with_deadline_mean_us - e.without_deadline_mean_us,
            e.with_deadline_p50_us,
            e.without_deadline_p50_us
        );
    }
    let _ = writeln!(
        s,
        "deadline: requests stopped by the CPU deadline (the guest thread's CPU time); wrong: other unexpected answers"
    );
    let _ =
        writeln!(s, "request mix: 60% valid, 10% each expired, bad signature, no token, unknown audience");
    s
}
