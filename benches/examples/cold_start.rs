//! Where a cold start's first request spends its time, and what each lever
//! pays, for the figures in docs/PERFORMANCE.md ("Cold start: where the
//! first request's time goes"). Each round runs every variant once, in
//! turn, on an engine of its own (as `bench-tool host` does), so a loaded
//! machine slows them alike. Run from the workspace root (the request is
//! minted with gateway.toml's key).
//!
//! ```text
//! cargo build --release -p gateway-benches --example cold_start && T=target/release/examples/cold_start
//! $T steps CWASM ROUNDS VARIANT...   µs and minor page faults per step, medians over ROUNDS
//! $T loop CWASM RUNS VARIANT         RUNS cold starts of one variant (for perf record, callgrind)
//! ```
//!
//! Steps: deserialize (the runtime's `engine::deserialize`, with the
//! variant's pre-faulting), InstancePre (`Prepared::new`), first instance
//! (`Prepared::probe`), warm-up (a request the host makes itself before it
//! listens; 0 unless the variant makes one), first request (with the drop
//! of its instance, unless `split` times that apart as "its drop"), the
//! total from the deserialize to the first answer, and the next request (a
//! fresh instance on the now warm engine), and the time to the answer
//! (the total without the first instance's drop: what a host that
//! releases the instance after sending the answer makes a client wait).
//!
//! Variants join changes with `+`: base (the runtime as it ships), touch
//! (read one byte of each page of the code image after deserializing),
//! populate (`madvise(MADV_POPULATE_READ)` on the image), willneed
//! (`madvise(MADV_WILLNEED)`), warmup (`Runtime::warm_up`, its fixed request
//! through the first instance before the first client request), warmvalid
//! (the client's own valid request as the warm-up), warmbare (a head with no
//! token as the warm-up), nopopulate (the first instance's memory not made
//! resident at once: `EngineOptions::populate_first_memory` off), split
//! (the first request in a kept instance, its drop timed apart), pagemap (the pool resets a
//! dropped instance's memory page by page, `MemoryReset::Written`), again
//! (a module deserialized and dropped on the engine first, untimed: what a
//! first module pays on an engine), reload (a module loaded, run and
//! dropped on the engine first, untimed: a running host that loads a new
//! module, its pool slot already resident), frombytes (the file read, then
//! `Module::deserialize` from memory instead of `deserialize_file`).
#![allow(unsafe_code, missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use runtime::{EngineOptions, MemoryReset, Prepared, Reusable, Runtime, engine};
use wasmtime::Module;

/// Linux's `struct rusage` (x86-64 and aarch64): two timevals, then
/// fourteen longs of which the fifth is `ru_minflt`.
#[repr(C)]
struct Rusage {
    times: [i64; 4],
    counts: [i64; 14],
}

unsafe extern "C" {
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
    fn madvise(addr: *mut u8, len: usize, advice: i32) -> i32;
}

const RUSAGE_THREAD: i32 = 1;
const MADV_WILLNEED: i32 = 3;
const MADV_POPULATE_READ: i32 = 22;

/// The calling thread's minor page faults so far.
fn minflt() -> u64 {
    let mut usage = Rusage { times: [0; 4], counts: [0; 14] };
    // SAFETY: getrusage writes a struct rusage into the pointer it is given.
    let rc = unsafe { getrusage(RUSAGE_THREAD, &mut usage) };
    assert_eq!(rc, 0);
    usage.counts[4] as u64
}

/// The module's code image, page-aligned.
fn image_pages(module: &Module) -> (*mut u8, usize) {
    let range = module.image_range();
    let page = 4096usize;
    let start = range.start as usize & !(page - 1);
    let end = (range.end as usize).div_ceil(page) * page;
    (start as *mut u8, end - start)
}

/// The variant's pre-faulting of the code image.
fn prefault(variant: &str, module: &Module) {
    let (start, len) = image_pages(module);
    for part in variant.split('+') {
        match part {
            "touch" => {
                let base = start as *const u8;
                let mut sum = 0u8;
                for offset in (0..len).step_by(4096) {
                    // SAFETY: the image is mapped readable for the module's life.
                    sum ^= unsafe { std::ptr::read_volatile(base.add(offset)) };
                }
                std::hint::black_box(sum);
            }
            "populate" => {
                // SAFETY: madvise on a mapping the module owns; it only faults pages in.
                let rc = unsafe { madvise(start, len, MADV_POPULATE_READ) };
                assert_eq!(rc, 0, "MADV_POPULATE_READ: {}", std::io::Error::last_os_error());
            }
            "willneed" => {
                // SAFETY: as above; a hint only.
                let rc = unsafe { madvise(start, len, MADV_WILLNEED) };
                assert_eq!(rc, 0, "MADV_WILLNEED: {}", std::io::Error::last_os_error());
            }
            _ => {}
        }
    }
}

const STEPS: [&str; 9] = [
    "deserialize",
    "InstancePre",
    "first instance",
    "warm-up",
    "first request",
    "its drop",
    "total",
    "next request",
    "to the answer",
];

/// One cold start of `variant`: each step's time and minor faults.
fn cold(variant: &str, path: &Path, head: &[u8], now: f64) -> [(Duration, u64); 9] {
    let has = |name: &str| variant.split('+').any(|p| p == name);
    let mut options = EngineOptions::default();
    if has("pagemap") {
        options.memory_reset = MemoryReset::Written;
    }
    if has("nopopulate") {
        options.populate_first_memory = false;
    }
    let engine = engine::build(&options, 2).unwrap();
    if has("again") {
        // The engine's own first-time work on a first module, apart.
        drop(engine::deserialize(&engine, path).unwrap());
    }
    if has("reload") {
        // A module loaded, run and dropped on the engine first, untimed:
        // a running host that loads a new module (its pool slot resident).
        let earlier = Prepared::new(&engine, &engine::deserialize(&engine, path).unwrap()).unwrap();
        let earlier = earlier.probe(&options).unwrap();
        earlier.decide_fresh(head, now).unwrap();
        drop(earlier);
    }
    let mut marks = vec![(Instant::now(), minflt())];
    let mut mark = || marks.push((Instant::now(), minflt()));
    let module = if has("frombytes") {
        let bytes = std::fs::read(path).unwrap();
        // SAFETY: the artifact comes from `host-sim compile` with these settings.
        unsafe { Module::deserialize(&engine, &bytes) }.unwrap()
    } else {
        engine::deserialize(&engine, path).unwrap()
    };
    prefault(variant, &module);
    mark();
    let prepared = Prepared::new(&engine, &module).unwrap();
    mark();
    let runtime: Runtime = prepared.probe(&options).unwrap();
    mark();
    if has("warmup") {
        // The runtime's warm-up: its fixed request decided in the first
        // instance, which is dropped; the client's request gets a new
        // instance in the same, now warm, slot.
        runtime.warm_up().unwrap();
    }
    if has("warmvalid") {
        // The same with the client's own request (a valid token).
        runtime.decide_fresh(head, now).unwrap();
    }
    if has("warmbare") {
        // The same with a head and no token.
        runtime.decide_fresh(&b"GET / HTTP/1.1\r\nHost: warm-up.invalid\r\n\r\n"[..], now).unwrap();
    }
    mark();
    if has("split") {
        // The same instance, its drop (the pool's reset of its memory)
        // timed on its own.
        let mut reusable = Reusable::default();
        runtime.decide_reused(&mut reusable, head, now).unwrap();
        mark();
        reusable.discard();
    } else {
        runtime.decide_fresh(head, now).unwrap();
        mark();
    }
    mark();
    runtime.decide_fresh(head, now).unwrap();
    mark();
    let step = |a: usize, b: usize| (marks[b].0 - marks[a].0, marks[b].1 - marks[a].1);
    [
        step(0, 1),
        step(1, 2),
        step(2, 3),
        step(3, 4),
        step(4, 5),
        step(5, 6),
        step(0, 6),
        step(6, 7),
        step(0, 5),
    ]
}

fn valid_request() -> (String, f64) {
    let config = gateway_config::load(Path::new("gateway.toml")).unwrap();
    let now = runtime::unix_now() as u64;
    let reqs = testkit::mix::Mix::new(&config, now, 7).generate(64);
    let valid = reqs.iter().find(|r| r.kind == testkit::mix::RequestKind::Valid).unwrap().head.clone();
    (valid, now as f64)
}

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

/// The commands, for a call that names none or too few arguments.
const USAGE: &str = "usage: cold_start steps CWASM ROUNDS VARIANT... | cold_start loop CWASM RUNS VARIANT \
                     (variants: the example's doc comment)";

/// Leaves with the usage: a call without the arguments its command needs.
fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // Every command takes a file, a count and at least one variant.
    let Some(rounds) = args.get(3).and_then(|n| n.parse::<usize>().ok()).filter(|_| args.len() > 4) else {
        usage()
    };
    let path = Path::new(&args[2]);
    let variants = &args[4..];
    let (head, now) = valid_request();
    match args[1].as_str() {
        "steps" => {
            let mut samples: Vec<Vec<[(Duration, u64); 9]>> = variants.iter().map(|_| vec![]).collect();
            // One round unrecorded: the process's own first-time costs
            // (signal handlers, lazy statics) belong to no variant.
            for (i, v) in variants.iter().enumerate() {
                let first = cold(v, path, head.as_bytes(), now);
                if i == 0 {
                    let us = |k: usize| first[k].0.as_secs_f64() * 1e6;
                    println!(
                        "the process's first cold start ({v}, not recorded): deserialize {:.1}, \
                         first instance {:.1}, first request {:.1}, total {:.1} µs",
                        us(0),
                        us(2),
                        us(4),
                        us(6)
                    );
                }
            }
            for _ in 0..rounds {
                for (i, v) in variants.iter().enumerate() {
                    samples[i].push(cold(v, path, head.as_bytes(), now));
                }
            }
            println!("medians of {rounds} rounds, µs (minor faults)");
            print!("{:<22}", "variant");
            for s in STEPS {
                print!(" {s:>16}");
            }
            println!();
            for (i, v) in variants.iter().enumerate() {
                print!("{v:<22}");
                for k in 0..STEPS.len() {
                    let us = median(samples[i].iter().map(|s| s[k].0).collect()).as_secs_f64() * 1e6;
                    let faults = median(samples[i].iter().map(|s| s[k].1).collect());
                    print!(" {:>16}", format!("{us:.1} ({faults})"));
                }
                println!();
            }
        }
        "loop" => {
            for _ in 0..rounds {
                cold(&variants[0], path, head.as_bytes(), now);
            }
        }
        other => {
            eprintln!("cold_start: no command {other:?}");
            usage()
        }
    }
}
