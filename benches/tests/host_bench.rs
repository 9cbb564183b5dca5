//! `bench-tool host` end to end on the module built from the test fixture
//! (`make fixture`): it measures, and every answer it timed is the one its
//! kind of request expects. The figures themselves are never asserted.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

#[test]
fn the_host_bench_measures_the_real_module_and_every_answer_is_the_expected_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let module = root.join("target/fixture/gateway.wasm");
    if !module.exists() {
        assert!(
            std::env::var_os("REQUIRE_HOST_SIM").is_none(),
            "{} is missing: run `make fixture`",
            module.display()
        );
        eprintln!("skipped: {} is missing (make fixture builds it)", module.display());
        return;
    }
    let output = Command::new(env!("CARGO_BIN_EXE_bench-tool"))
        .current_dir(&root)
        .args(["host", "--wasm"])
        .arg(&module)
        .args(["--config", "testkit/fixture.toml", "--requests", "400", "--cold-runs", "2", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench-tool host failed: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for mode in ["fresh", "reuse"] {
        assert_eq!(report[mode]["requests"], 400, "{mode}");
        assert_eq!(report[mode]["unexpected"], 0, "{mode}: answers other than the mix expects");
    }
    for presentations in ["misses", "hits"] {
        assert_eq!(report["repeated"][presentations]["unexpected"], 0, "repeated tokens, {presentations}");
    }
    assert_eq!(report["cold_start"]["runs"], 2);
    assert_eq!(report["cold_start"]["module_step"], "jit");
    assert!(report["memory"]["instances_measured"].as_u64() > Some(0));
}

#[test]
fn a_module_that_is_not_there_is_named_in_one_line() {
    let output = Command::new(env!("CARGO_BIN_EXE_bench-tool"))
        .args(["host", "--wasm", "/nonexistent/gateway.wasm", "--config"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../testkit/fixture.toml"))
        .args(["--requests", "10", "--cold-runs", "1"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: ") && stderr.contains("/nonexistent/gateway.wasm"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}
