//! `benches/gateway_targets.py`, which `make bench` runs on the tables of
//! `benches/gateways.sh`: the ratios and tails it reports are those of the
//! tables it reads. The tables here are made up; nothing is measured.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

/// Two gateways and the router, two rounds, as `gateways.sh` writes them.
const TABLES: &str = "\
### At a fixed offered rate (open loop, corrected for coordinated omission)

Median of 2 rounds, every gateway in each round.

| gateway | case | offered req/s | achieved req/s | p50 ms | p99 ms | p99.9 ms | p99 ms by round | expected status |
|---|---|---:|---:|---:|---:|---:|---:|---:|
| envoy-filter | forward | 5000 | 4997 | 1.10 | 3.50 | 6.00 | 3.00 / 4.00 | 100.0% 200 |
| envoy-filter | forward | 10000 | 8000 | 50.00 | 90.00 | 99.00 | 80.00 / 100.00 | 100.0% 200 |
| envoy-jwt-authn | forward | 5000 | 4998 | 1.20 | 5.25 | 8.00 | 5.00 / 5.50 | 100.0% 200 |

### As fast as they go (closed loop), with the gateway's CPU time per request

Median of 2 rounds, every gateway in each round.

| gateway | case | requests/s | p50 ms | p99 ms | gateway CPU µs/request | requests/s by round | expected status |
|---|---|---:|---:|---:|---:|---:|---:|
| envoy-filter | forward | 12000 | 2.00 | 6.00 | 50.0 | 11000 / 13000 | 100.0% 200 |
| envoy-jwt-authn | forward | 10000 | 2.50 | 7.00 | 62.5 | 10000 / 10000 | 100.0% 200 |
| envoy-router | forward | 20000 | 1.00 | 3.00 | 40.0 | 20000 / 20000 | 100.0% 200 |
";

fn targets(tables: &str, name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = root.join("target/test-gateway-targets");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, tables).unwrap();
    let output =
        Command::new("python3").arg(root.join("benches/gateway_targets.py")).arg(&file).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_ratios_and_tails_are_those_of_the_tables() {
    let out = targets(TABLES, "rounds.md");
    assert!(
        out.contains(
            "| envoy-filter against envoy-jwt-authn, forward | 1.20x | 1.10x, 1.30x | 0.80x | >= 1.15x |"
        ),
        "{out}"
    );
    assert!(out.contains("envoy-filter 10.0 µs, envoy-jwt-authn 22.5 µs"), "{out}");
    // The median p99 with each round's; a rate not held (8000 of 10000) is left out.
    assert!(
        out.contains("envoy-filter 3.50 ms at 5000 (rounds 3.00 / 4.00), envoy-jwt-authn 5.25 ms at 5000 (rounds 5.00 / 5.50)."),
        "{out}"
    );
    assert!(!out.contains("at 10000"), "{out}");
}

/// A fixed-rate table from before the rounds: one run, no list of p99s.
const ONE_RUN: &str = "\
### At a fixed offered rate (open loop, corrected for coordinated omission)

| gateway | case | offered req/s | achieved req/s | p50 ms | p99 ms | p99.9 ms | expected status |
|---|---|---:|---:|---:|---:|---:|---:|
| envoy-filter | forward | 5000 | 4997 | 1.10 | 3.50 | 6.00 | 100.0% 200 |
| envoy-jwt-authn | forward | 5000 | 4998 | 1.20 | 5.25 | 8.00 | 100.0% 200 |
";

#[test]
fn a_fixed_rate_table_of_one_run_still_reads() {
    let out = targets(ONE_RUN, "one-run.md");
    assert!(out.contains("envoy-filter 3.50 ms at 5000, envoy-jwt-authn 5.25 ms at 5000."), "{out}");
}
