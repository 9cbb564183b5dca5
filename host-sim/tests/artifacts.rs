//! Loading: compile to .cwasm and run from it; refusing truncated or
//! mismatched artifacts and modules that break the contract, each with a
//! one-line error and a non-zero exit; guests that loop, trap or outgrow
//! their memory answered 503/500 while the host goes on; a fresh instance's
//! memory as the module starts it.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use common::NOW;
use runtime::{EngineOptions, MemoryReset, ModuleSource};
use runtime::{GuestError, LoadError};
use runtime::{Reusable, Runtime};

fn eval(args: &[&str], input: &str) -> Output {
    let mut child = common::bin()
        .arg("eval")
        .args(args)
        .args(["--now", &NOW.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The host may refuse the module and exit before reading its input.
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}

/// The run failed with exactly one line on stderr containing `needle`.
fn assert_refused(output: &Output, needle: &str) {
    assert!(!output.status.success(), "expected a failure");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line expected: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in: {stderr}");
    assert!(output.stdout.is_empty());
}

const NO_TOKEN: &str = "{\"request\":\"GET / HTTP/1.1\\r\\nHost: gw\\r\\n\\r\\n\"}\n";

fn compile(input: &Path, output: &Path, extra: &[&str]) -> Output {
    common::bin()
        .args(["compile", input.to_str().unwrap(), "-o", output.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn compile_then_run_from_cwasm() {
    let dir = common::scratch("cwasm");
    let cwasm = dir.join("gateway.cwasm");
    let out = compile(&common::gateway_wasm(), &cwasm, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let output = eval(&["--cwasm", cwasm.to_str().unwrap()], NO_TOKEN);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let line: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(line["status"], 401);
    assert_eq!(line["reason"], "bearer token required");

    // The library path too: deserialize and decide.
    let runtime = Runtime::load(&common::relaxed(), &ModuleSource::Cwasm(cwasm.clone()), 2).unwrap();
    let decision = runtime.decide_fresh(b"GET / HTTP/1.1\r\nHost: gw\r\n\r\n", NOW as f64).unwrap();
    assert_eq!(decision.status(), 401);
}

#[test]
fn refuses_truncated_and_foreign_artifacts() {
    let dir = common::scratch("refuse");
    let cwasm = dir.join("gateway.cwasm");
    assert!(compile(&common::gateway_wasm(), &cwasm, &[]).status.success());
    let bytes = std::fs::read(&cwasm).unwrap();

    let truncated = dir.join("truncated.cwasm");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    assert_refused(&eval(&["--cwasm", truncated.to_str().unwrap()], NO_TOKEN), "truncated or damaged");

    let tiny = dir.join("tiny.cwasm");
    std::fs::write(&tiny, &bytes[..3]).unwrap();
    assert_refused(&eval(&["--cwasm", tiny.to_str().unwrap()], NO_TOKEN), "truncated or damaged");

    // Other engine settings: compiled without epoch interruption.
    let other = dir.join("no-epoch.cwasm");
    assert!(compile(&common::gateway_wasm(), &other, &["--no-deadline"]).status.success());
    assert_refused(
        &eval(&["--cwasm", other.to_str().unwrap()], NO_TOKEN),
        "not produced by this host's engine",
    );
    // ... and it runs with the settings it was made for.
    assert!(eval(&["--cwasm", other.to_str().unwrap(), "--no-deadline"], NO_TOKEN).status.success());

    // Another compiler: Winch code is refused by a Cranelift engine.
    let winch = dir.join("winch.cwasm");
    assert!(compile(&common::gateway_wasm(), &winch, &["--strategy", "winch"]).status.success());
    assert_refused(&eval(&["--cwasm", winch.to_str().unwrap()], NO_TOKEN), "Winch");

    // Another wasmtime version: the engine section names the major version
    // (format byte 0, length 2, "48"); say "47" instead.
    let at = bytes.windows(4).position(|w| w == b"\x00\x0248").expect("engine version in the artifact");
    let mut older = bytes.clone();
    older[at + 2..at + 4].copy_from_slice(b"47");
    let old = dir.join("wasmtime47.cwasm");
    std::fs::write(&old, older).unwrap();
    assert_refused(&eval(&["--cwasm", old.to_str().unwrap()], NO_TOKEN), "incompatible version '47'");

    // A .wasm passed as --cwasm, and a .cwasm passed as --wasm.
    let wasm = common::gateway_wasm();
    assert_refused(
        &eval(&["--cwasm", wasm.to_str().unwrap()], NO_TOKEN),
        "not a precompiled wasmtime module",
    );
    assert_refused(&eval(&["--wasm", cwasm.to_str().unwrap()], NO_TOKEN), "precompiled");
    assert_refused(&eval(&["--wasm", dir.join("missing.wasm").to_str().unwrap()], NO_TOKEN), "cannot read");

    // Library: the error is typed.
    let err = Runtime::load(&EngineOptions::default(), &ModuleSource::Cwasm(other), 1).unwrap_err();
    assert!(matches!(err, LoadError::Incompatible { .. }), "{err}");
}

#[test]
fn refuses_modules_that_break_the_contract() {
    let dir = common::scratch("contract");
    for (fixture, needle) in [
        ("imports", "imports env::log"),
        ("no_handle", "does not export `handle`"),
        ("abi1", "abi_version is 1"),
    ] {
        let wasm = common::fixture(fixture);
        assert_refused(&eval(&["--wasm", wasm.to_str().unwrap()], NO_TOKEN), needle);
        let out = compile(&wasm, &dir.join(format!("{fixture}.cwasm")), &[]);
        assert!(!out.status.success(), "compile accepted {fixture}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    }
    let err = Runtime::load(&EngineOptions::default(), &ModuleSource::Wasm(common::fixture("abi1")), 1)
        .unwrap_err();
    assert!(matches!(err, LoadError::AbiVersion(1)), "{err}");
}

#[test]
fn failing_guests_get_500_or_503_and_the_host_goes_on() {
    let options = EngineOptions { deadline_ms: 20.0, ..EngineOptions::default() };
    let head = b"GET / HTTP/1.1\r\n\r\n";
    for (fixture, expected) in [
        ("loop", GuestError::Deadline),
        ("trap", GuestError::Trap("wasm `unreachable` instruction executed".into())),
        ("grow", GuestError::MemoryLimit),
    ] {
        let runtime = Runtime::load(&options, &ModuleSource::Wasm(common::fixture(fixture)), 2).unwrap();
        let mut reusable = Reusable::default();
        for _ in 0..3 {
            let err = runtime.decide_fresh(head, NOW as f64).unwrap_err();
            assert_eq!(err, expected, "{fixture}");
            let err = runtime.decide_reused(&mut reusable, head, NOW as f64).unwrap_err();
            assert_eq!(err, expected, "{fixture}");
            assert!(!reusable.is_live(), "{fixture}: a failed instance is discarded");
        }
        assert_eq!(expected.status(), if fixture == "loop" { 503 } else { 500 });
    }
    // One ticker thread ticks a runtime's engine and its siblings', and
    // goes on ticking them once that runtime is gone.
    let runtime = Runtime::load(&options, &ModuleSource::Wasm(common::fixture("loop")), 2).unwrap();
    let siblings = [runtime.sibling(&options, 2).unwrap(), runtime.sibling(&options, 2).unwrap()];
    assert!(format!("{runtime:?}").contains("Ticker { engines: 3 }"), "{runtime:?}");
    drop(runtime);
    let (done, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for sibling in &siblings {
            let mut reusable = Reusable::default();
            let reused = sibling.decide_reused(&mut reusable, head, NOW as f64).unwrap_err();
            let fresh = sibling.decide_fresh(head, NOW as f64).unwrap_err();
            done.send((reused, fresh)).unwrap();
        }
    });
    for _ in 0..2 {
        // A guest nothing stops would loop for ever: fail instead.
        let answer =
            answers.recv_timeout(std::time::Duration::from_secs(10)).expect("the deadline stops the loop");
        assert_eq!(answer, (GuestError::Deadline, GuestError::Deadline));
    }
    // The eval binary reports them as lines and exits 0.
    let input = NO_TOKEN.repeat(2);
    let output = eval(&["--wasm", common::fixture("loop").to_str().unwrap(), "--deadline-ms", "20"], &input);
    assert!(output.status.success());
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(line["status"], 503);
        assert_eq!(line["reason"], "guest exceeded its CPU deadline");
    }
}

#[test]
fn a_full_pool_is_no_slot_matched_by_the_errors_type() {
    // One slot: a reused instance holds it, so a fresh one finds none.
    let runtime = Runtime::load(&common::relaxed(), &ModuleSource::Wasm(common::gateway_wasm()), 1).unwrap();
    let head = b"GET / HTTP/1.1\r\nHost: gw\r\n\r\n";
    let mut reusable = Reusable::default();
    assert_eq!(runtime.decide_reused(&mut reusable, head, NOW as f64).map(|d| d.status()), Ok(401));
    assert_eq!(runtime.decide_fresh(head, NOW as f64).unwrap_err(), GuestError::NoSlot);
    reusable.discard();
    assert_eq!(runtime.decide_fresh(head, NOW as f64).map(|d| d.status()), Ok(401));
}

/// A fresh instance starts from the module's own memory whatever the
/// instance before it in the same slot wrote (its data, the first pages'
/// edges, its last word, a page it grew), whether the pool resets the
/// memory whole or page by page through `PAGEMAP_SCAN`, and for a memory of
/// the default module's size (2 pages) or larger (3), for which
/// `MemoryReset::BySize` chooses differently; a reused instance keeps what
/// it wrote, so the fixture's check can fail.
#[test]
fn a_fresh_instance_sees_nothing_the_one_before_it_wrote() {
    let head = b"GET / HTTP/1.1\r\n\r\n";
    let status = |outcome: runtime::Outcome| outcome.map(|decision| decision.status());
    let source = std::fs::read_to_string(common::fixture_source("remember")).unwrap();
    let dir = common::scratch("remember");
    for pages in [2, 3] {
        let wasm = dir.join(format!("remember-{pages}.wasm"));
        let text = source
            .replace("(memory (export \"memory\") 2)", &format!("(memory (export \"memory\") {pages})"))
            .replace("(memory.size) (i32.const 2)", &format!("(memory.size) (i32.const {pages})"))
            .replace("131068", &(pages * 65536 - 4).to_string());
        std::fs::write(&wasm, wat::parse_str(&text).unwrap()).unwrap();
        for memory_reset in [MemoryReset::BySize, MemoryReset::Whole, MemoryReset::Written] {
            let options = EngineOptions { memory_reset, ..common::relaxed() };
            // One slot: every fresh instance takes the one the last one left.
            let runtime = Runtime::load(&options, &ModuleSource::Wasm(wasm.clone()), 1).unwrap();
            let chosen = match memory_reset {
                MemoryReset::BySize if pages == 2 => MemoryReset::Whole,
                MemoryReset::BySize => MemoryReset::Written,
                explicit => explicit,
            };
            assert_eq!(runtime.memory_reset(), chosen, "{pages} pages, {memory_reset:?}");
            assert_eq!(runtime.sibling(&options, 1).unwrap().memory_reset(), chosen);
            for _ in 0..3 {
                assert_eq!(
                    status(runtime.decide_fresh(head, NOW as f64)),
                    Ok(204),
                    "{pages} pages, {chosen:?}"
                );
            }
            let mut reusable = Reusable::default();
            assert_eq!(status(runtime.decide_reused(&mut reusable, head, NOW as f64)), Ok(204));
            assert_eq!(status(runtime.decide_reused(&mut reusable, head, NOW as f64)), Ok(500));
            reusable.discard();
            assert_eq!(status(runtime.decide_fresh(head, NOW as f64)), Ok(204), "{pages} pages, {chosen:?}");
        }
    }
}
