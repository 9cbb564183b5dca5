//! Engine settings side by side, for the figures in docs/PERFORMANCE.md
//! ("Engine settings, measured by hand"). Each mode builds one engine per
//! variant (the runtime's own `engine::config`, then the variant's changes)
//! and interleaves the variants round by round, so a loaded machine slows
//! them alike. Run from the workspace root (the mix is minted with
//! gateway.toml's key); it writes scratch artifacts to $TMPDIR/host-sim-settings.
//!
//! ```text
//! cargo build --release -p gateway-benches --example engine_settings && T=target/release/examples/engine_settings
//! $T cold WASM ROUNDS VARIANT...     .cwasm deserialize + InstancePre + first instance + first request (µs)
//! $T warm WASM ROUNDS N VARIANT...   reuse and fresh latency per variant, blocks of N requests
//! $T compile WASM ROUNDS VARIANT...  Module::new + contract check + first request (µs)
//! $T checks WASM ROUNDS              the runtime's .cwasm loader against bare deserialize_file
//! $T load WASM ROUNDS                Runtime::load from a .cwasm with each MemoryReset (µs)
//! $T pre WASM ROUNDS                 the contract check + InstancePre against InstancePre alone
//! $T faults WASM ROUNDS VARIANT      minor page faults per cold-start step
//! ```
//!
//! Variants join changes with `+`: base (the runtime's settings; the memory
//! reset whole, as `MemoryReset::BySize` does for a memory of 128 KiB),
//! addrmap and unwind (what the runtime turns off), noaddr, nounwind, nocow,
//! cow, memfd, nolazytable, optnone, optspeed, optsize, singlepass, winch,
//! noepoch, nosignals, nospectre, inline, nobulk, stack1m, perfmap, and the
//! pool's pagemap (memory reset through PAGEMAP_SCAN), keepNk (N KiB of
//! memory kept resident) and tablekeepNk (N KiB of table); a `@mem` suffix
//! (cold) loads the .cwasm with `Module::deserialize` from memory instead of
//! the file.
#![allow(unsafe_code, missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use runtime::engine;
use runtime::{Compiler, EngineOptions, Prepared, Reusable, Runtime};
use wasmtime::{Config, Engine, Module, OptLevel, RegallocAlgorithm};

fn tweak(name: &str, c: &mut Config, o: &mut EngineOptions, slots: u32) {
    // The pool's settings, changed by the pool tweaks and installed at the end.
    let mut pool = None;
    for part in name.split('+') {
        match part {
            "base" => {}
            "addrmap" => {
                c.generate_address_map(true);
            }
            "unwind" => {
                c.native_unwind_info(true);
            }
            "noaddr" => {
                c.generate_address_map(false);
            }
            "nounwind" => {
                c.native_unwind_info(false);
            }
            "nocow" => {
                c.memory_init_cow(false);
            }
            "cow" => {
                c.memory_init_cow(true);
            }
            "memfd" => {
                c.force_memory_init_memfd(true);
            }
            "nolazytable" => {
                c.table_lazy_init(false);
            }
            "optnone" => {
                c.cranelift_opt_level(OptLevel::None);
            }
            "optspeed" => {
                c.cranelift_opt_level(OptLevel::Speed);
            }
            "optsize" => {
                c.cranelift_opt_level(OptLevel::SpeedAndSize);
            }
            "singlepass" => {
                c.cranelift_regalloc_algorithm(RegallocAlgorithm::SinglePass);
            }
            "winch" => {
                o.strategy = Compiler::Winch;
                c.strategy(wasmtime::Strategy::Winch);
            }
            "noepoch" => {
                o.no_deadline = true;
                c.epoch_interruption(false);
            }
            "nosignals" => {
                c.signals_based_traps(false);
                // SAFETY: both are Cranelift settings wasmtime knows; without
                // signals-based traps wasmtime requires them off.
                unsafe {
                    c.cranelift_flag_set("enable_heap_access_spectre_mitigation", "false");
                    c.cranelift_flag_set("enable_table_access_spectre_mitigation", "false");
                }
            }
            // SAFETY: Cranelift settings wasmtime knows; with 4 GiB reservations
            // the heap accesses carry no bounds check to harden anyway.
            "nospectre" => unsafe {
                c.cranelift_flag_set("enable_heap_access_spectre_mitigation", "false");
                c.cranelift_flag_set("enable_table_access_spectre_mitigation", "false");
            },
            "inline" => {
                c.compiler_inlining(wasmtime::Inlining::Yes);
            }
            "nobulk" => {
                c.wasm_bulk_memory(false);
            }
            "stack1m" => {
                o.max_wasm_stack = 1 << 20;
                c.max_wasm_stack(1 << 20);
            }
            "perfmap" => {
                c.profiler(wasmtime::ProfilingStrategy::PerfMap);
            }
            // Takes effect through the options, when `setup` builds the
            // config again.
            "pagemap" => o.memory_reset = runtime::MemoryReset::Written,
            keep if keep.starts_with("tablekeep") && keep.ends_with('k') => {
                let kib: usize = keep["tablekeep".len()..keep.len() - 1].parse().expect("tablekeepNk");
                pool.get_or_insert_with(|| engine::pool(o, slots)).table_keep_resident(kib << 10);
            }
            keep if keep.starts_with("keep") && keep.ends_with('k') => {
                let kib: usize = keep["keep".len()..keep.len() - 1].parse().expect("keepNk");
                pool.get_or_insert_with(|| engine::pool(o, slots)).linear_memory_keep_resident(kib << 10);
            }
            other => panic!("unknown tweak {other}"),
        }
    }
    if let Some(pool) = pool {
        c.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
    }
}

fn setup(name: &str, slots: u32) -> (Engine, EngineOptions) {
    let mut o = EngineOptions::default();
    let mut probe = engine::config(&o, slots);
    tweak(name, &mut probe, &mut o, slots);
    let mut c = engine::config(&o, slots);
    tweak(name, &mut c, &mut o, slots);
    (Engine::new(&c).expect(name), o)
}

/// A scratch file under `$TMPDIR/host-sim-settings`.
fn scratch(name: &str) -> String {
    let dir = std::env::temp_dir().join("host-sim-settings");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).display().to_string()
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

fn requests() -> (Vec<testkit::mix::Request>, f64, String) {
    let config = gateway_config::load(std::path::Path::new("gateway.toml")).unwrap();
    let now = runtime::unix_now() as u64;
    let reqs = Mix::new(&config, now, 7).generate(4096);
    let valid = reqs.iter().find(|r| r.kind == testkit::mix::RequestKind::Valid).unwrap().head.clone();
    (reqs, now as f64, valid)
}
use testkit::mix::Mix;

/// The commands, for a call that names none or too few arguments.
const USAGE: &str = "usage: engine_settings cold|warm|compile|checks|load|pre|faults WASM ROUNDS [N] [VARIANT...] \
                     (the example's doc comment says what each takes)";

/// Leaves with the usage: a call without an argument its command needs.
fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let number = |i: usize| args.get(i).and_then(|n| n.parse::<usize>().ok()).unwrap_or_else(|| usage());
    let rounds = number(3);
    let wasm = std::fs::read(&args[2]).unwrap_or_else(|e| {
        eprintln!("engine_settings: {}: {e}", args[2]);
        std::process::exit(2);
    });
    let (reqs, now, valid) = requests();
    match args[1].as_str() {
        "cold" => {
            let variants = &args[4..];
            let mut files = vec![];
            for v in variants {
                let (e, _) = setup(v.trim_end_matches("@mem"), 1);
                let m = Module::new(&e, &wasm).unwrap();
                let bytes = m.serialize().unwrap();
                let path = scratch(&format!("{}.cwasm", v.trim_end_matches("@mem")));
                std::fs::write(&path, &bytes).unwrap();
                println!("{v}: cwasm {} bytes", bytes.len());
                files.push((path, bytes));
            }
            let mut steps: Vec<[Vec<Duration>; 5]> = variants.iter().map(|_| Default::default()).collect();
            for _ in 0..rounds {
                for (i, v) in variants.iter().enumerate() {
                    let (e, o) = setup(v.trim_end_matches("@mem"), 1);
                    let t0 = Instant::now();
                    // SAFETY: the artifact was serialized above by an engine
                    // with the same settings, and nothing changes the file.
                    let m = if v.ends_with("@mem") {
                        unsafe { Module::deserialize(&e, &files[i].1) }
                    } else {
                        unsafe { Module::deserialize_file(&e, &files[i].0) }
                    }
                    .unwrap();
                    let t1 = Instant::now();
                    let p = Prepared::new(&e, &m).unwrap();
                    let t2 = Instant::now();
                    let rt = p.probe(&o).unwrap();
                    let t3 = Instant::now();
                    rt.decide_fresh(valid.as_bytes(), now).unwrap();
                    let t4 = Instant::now();
                    for (k, d) in [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0].into_iter().enumerate() {
                        steps[i][k].push(d);
                    }
                }
            }
            println!(
                "{:<28} {:>8} {:>8} {:>8} {:>8} {:>8}",
                "variant", "deser", "pre", "inst", "first", "total"
            );
            for (i, v) in variants.iter().enumerate() {
                let s = std::mem::take(&mut steps[i]);
                let [a, b, c, d, t] = s;
                println!(
                    "{v:<28} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
                    median(a),
                    median(b),
                    median(c),
                    median(d),
                    median(t)
                );
            }
        }
        "compile" => {
            let variants = &args[4..];
            let engines: Vec<_> = variants.iter().map(|v| setup(v, 2)).collect();
            let mut steps: Vec<[Vec<Duration>; 3]> = variants.iter().map(|_| Default::default()).collect();
            for _ in 0..rounds {
                for (i, (e, o)) in engines.iter().enumerate() {
                    let t0 = Instant::now();
                    let m = Module::new(e, &wasm).unwrap();
                    let t1 = Instant::now();
                    let rt = Prepared::new(e, &m).unwrap().probe(o).unwrap();
                    rt.decide_fresh(valid.as_bytes(), now).unwrap();
                    let t2 = Instant::now();
                    steps[i][0].push(t1 - t0);
                    steps[i][1].push(t2 - t1);
                    steps[i][2].push(t2 - t0);
                }
            }
            println!("{:<28} {:>10} {:>10} {:>10}", "variant", "compile", "first", "total");
            for (i, v) in variants.iter().enumerate() {
                let [a, b, t] = std::mem::take(&mut steps[i]);
                println!("{v:<28} {:>10.1} {:>10.1} {:>10.1}", median(a), median(b), median(t));
            }
        }
        "warm" => {
            let n = number(4);
            let variants = &args[5..];
            let runtimes: Vec<Runtime> = variants
                .iter()
                .map(|v| {
                    let (e, o) = setup(v, 4);
                    let m = Module::new(&e, &wasm).unwrap();
                    Prepared::new(&e, &m).unwrap().probe(&o).unwrap().start_ticker(&o).unwrap()
                })
                .collect();
            let mut reuse: Vec<Vec<u32>> = variants.iter().map(|_| vec![]).collect();
            let mut fresh: Vec<Vec<u32>> = variants.iter().map(|_| vec![]).collect();
            let mut slots: Vec<Reusable> = variants.iter().map(|_| Reusable::default()).collect();
            for r in 0..rounds {
                for (i, rt) in runtimes.iter().enumerate() {
                    for (j, q) in reqs.iter().cycle().skip(r * n).take(n).enumerate() {
                        let t = Instant::now();
                        let out = rt.decide_reused(&mut slots[i], q.head.as_bytes(), now);
                        let d = t.elapsed().as_nanos() as u32;
                        if j >= n / 10 {
                            reuse[i].push(d);
                        }
                        assert!(out.is_ok(), "{}: {out:?}", variants[i]);
                    }
                    for (j, q) in reqs.iter().cycle().skip(r * n).take(n / 2).enumerate() {
                        let t = Instant::now();
                        let out = rt.decide_fresh(q.head.as_bytes(), now);
                        let d = t.elapsed().as_nanos() as u32;
                        if j >= n / 20 {
                            fresh[i].push(d);
                        }
                        assert!(out.is_ok(), "{}: {out:?}", variants[i]);
                    }
                }
            }
            let q = |v: &mut Vec<u32>, p: f64| {
                v.sort_unstable();
                v[((v.len() - 1) as f64 * p) as usize] as f64 / 1000.0
            };
            let mean = |v: &Vec<u32>| v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64 / 1000.0;
            println!(
                "{:<28} {:>9} {:>9} {:>9} {:>9} {:>9}",
                "variant", "reuse p50", "reuse mn", "fresh p50", "fresh p99", "fresh mn"
            );
            for (i, v) in variants.iter().enumerate() {
                let rm = mean(&reuse[i]);
                let fm = mean(&fresh[i]);
                println!(
                    "{v:<28} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                    q(&mut reuse[i], 0.5),
                    rm,
                    q(&mut fresh[i], 0.5),
                    q(&mut fresh[i], 0.99),
                    fm
                );
            }
        }
        "pre" => {
            let (e, _) = setup("base", 1);
            let m = Module::new(&e, &wasm).unwrap();
            for _ in 0..3 {
                let t = Instant::now();
                for _ in 0..rounds {
                    drop(Prepared::new(&e, &m).unwrap());
                }
                let a = t.elapsed().as_secs_f64() * 1e6 / rounds as f64;
                let t = Instant::now();
                for _ in 0..rounds {
                    let l = wasmtime::Linker::<()>::new(&e);
                    drop(l.instantiate_pre(&m).unwrap());
                }
                let b = t.elapsed().as_secs_f64() * 1e6 / rounds as f64;
                println!("Prepared::new {a:.2} us, Linker::new + instantiate_pre {b:.2} us");
            }
        }
        "load" => {
            // Runtime::load from a .cwasm, as a command starts, with the
            // memory reset chosen by the module's size (which for a module
            // larger than 128 KiB builds a second engine) and fixed.
            let (e, _) = setup("base", 1);
            let path = std::path::PathBuf::from(scratch("load.cwasm"));
            std::fs::write(&path, Module::new(&e, &wasm).unwrap().serialize().unwrap()).unwrap();
            let source = runtime::ModuleSource::Cwasm(path);
            let resets =
                [runtime::MemoryReset::BySize, runtime::MemoryReset::Whole, runtime::MemoryReset::Written];
            let mut times: Vec<Vec<Duration>> = resets.iter().map(|_| vec![]).collect();
            for _ in 0..rounds {
                for (reset, times) in resets.iter().zip(&mut times) {
                    let options = EngineOptions { memory_reset: *reset, ..EngineOptions::default() };
                    let t = Instant::now();
                    drop(Runtime::load(&options, &source, 1).unwrap());
                    times.push(t.elapsed());
                }
            }
            for (reset, times) in resets.iter().zip(times) {
                println!("Runtime::load, {reset:?}: {:.1} us", median(times));
            }
        }
        "checks" => {
            let (e, _) = setup("base", 1);
            let m = Module::new(&e, &wasm).unwrap();
            let path = std::path::PathBuf::from(scratch("checks.cwasm"));
            std::fs::write(&path, m.serialize().unwrap()).unwrap();
            let (mut a, mut b) = (vec![], vec![]);
            for _ in 0..rounds {
                let t = Instant::now();
                drop(engine::deserialize(&e, &path).unwrap());
                a.push(t.elapsed());
                let t = Instant::now();
                // SAFETY: written above by this engine; nothing changes it.
                drop(unsafe { Module::deserialize_file(&e, &path) }.unwrap());
                b.push(t.elapsed());
            }
            println!(
                "host deserialize (checks first) {:.1} us, deserialize_file alone {:.1} us",
                median(a),
                median(b)
            );
        }
        "faults" => {
            let minflt = || -> u64 {
                let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
                let rest = &stat[stat.rfind(')').unwrap() + 2..];
                rest.split(' ').nth(7).unwrap().parse().unwrap()
            };
            let v = args.get(4).unwrap_or_else(|| usage());
            let path = scratch(&format!("{v}.cwasm"));
            let (e0, _) = setup(v, 1);
            std::fs::write(&path, Module::new(&e0, &wasm).unwrap().serialize().unwrap()).unwrap();
            for _ in 0..rounds {
                let (e, o) = setup(v, 1);
                let f0 = minflt();
                // SAFETY: written above by an engine with these settings.
                let m = unsafe { Module::deserialize_file(&e, &path) }.unwrap();
                let f1 = minflt();
                let p = Prepared::new(&e, &m).unwrap();
                let f2 = minflt();
                let rt = p.probe(&o).unwrap();
                let f3 = minflt();
                rt.decide_fresh(valid.as_bytes(), now).unwrap();
                let f4 = minflt();
                rt.decide_fresh(valid.as_bytes(), now).unwrap();
                let f5 = minflt();
                println!(
                    "minor faults: deser {} pre {} probe {} first {} second {}",
                    f1 - f0,
                    f2 - f1,
                    f3 - f2,
                    f4 - f3,
                    f5 - f4
                );
            }
        }
        other => {
            eprintln!("engine_settings: no command {other:?}");
            usage()
        }
    }
}
