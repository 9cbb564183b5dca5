//! `bench-tool paired FILE`: A/B comparisons measured interleaved. Criterion
//! measures one benchmark after another, so on a shared machine a change of
//! load between two of them shows up as a difference between them. Here the
//! contenders of a comparison take turns: 301 rounds of one short batch each
//! (about 1 ms, after an untimed warm-up of a fifth of that), so drift hits
//! all of them alike. Each contender's figure is the lower quartile of its
//! batch means: a batch that another process preempted (a time slice is a
//! few ms) is slower, never faster, so the low side is the undisturbed cost.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use gateway_benches::corpus::{self, NOW};
use gateway_benches::wasm::{self, Compiler, Prepared, Setup};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type Contender<'a> = (&'static str, Box<dyn FnMut(usize) + 'a>);

const ROUNDS: usize = 301;
const BATCH_NS: f64 = 1e6;

/// Median ns per call of each contender, measured round-robin.
fn compare(group: &str, mut contenders: Vec<Contender<'_>>) -> BTreeMap<String, f64> {
    // Calibrate each contender's batch to about 5 ms.
    let mut sizes = Vec::new();
    for (_, f) in contenders.iter_mut() {
        let mut n = 1usize;
        loop {
            let start = Instant::now();
            for i in 0..n {
                f(i);
            }
            let ns = start.elapsed().as_nanos() as f64;
            if ns > BATCH_NS / 4.0 {
                sizes.push(((n as f64) * BATCH_NS / ns).ceil() as usize);
                break;
            }
            n *= 2;
        }
    }
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); contenders.len()];
    for round in 0..ROUNDS {
        // Alternate the order too, so no contender always runs first.
        let order: Vec<usize> = if round % 2 == 0 {
            (0..contenders.len()).collect()
        } else {
            (0..contenders.len()).rev().collect()
        };
        for k in order {
            let n = sizes[k];
            let f = &mut contenders[k].1;
            // An untimed fifth of a batch first: whatever went cold while the
            // others ran (caches, branch predictors, pages the kernel took
            // back) is warmed again before the clock starts.
            for i in 0..n.div_ceil(5) {
                f(i);
            }
            let start = Instant::now();
            for i in 0..n {
                f(i);
            }
            samples[k].push(start.elapsed().as_nanos() as f64 / n as f64);
        }
    }
    let mut out = BTreeMap::new();
    for ((name, _), mut s) in contenders.into_iter().zip(samples) {
        s.sort_by(f64::total_cmp);
        // The lower quartile: a batch that another process preempted is
        // slower, never faster, so the low side is the undisturbed cost.
        let quartile = s[s.len() / 4];
        eprintln!("  {group}/{name}: {quartile:.0} ns");
        out.insert(name.to_string(), quartile);
    }
    out
}

fn reuse<'a>(name: &'static str, p: &'a Prepared, heads: &'a [Vec<u8>]) -> Contender<'a> {
    let mut instance = p.instantiate();
    (
        name,
        Box::new(move |i| {
            black_box(instance.handle(&heads[i % heads.len()], NOW as f64));
        }),
    )
}

fn fresh<'a>(name: &'static str, p: &'a Prepared, heads: &'a [Vec<u8>]) -> Contender<'a> {
    (
        name,
        Box::new(move |i| {
            black_box(p.fresh(&heads[i % heads.len()], NOW as f64));
        }),
    )
}

/// Runs every comparison and writes `{group: {contender: ns}}` to `path`.
pub fn run(path: &str) {
    let heads: Vec<Vec<u8>> = corpus::mix().into_iter().map(|c| c.head.into_bytes()).collect();
    let bytes = wasm::read(wasm::MODULE);
    let mut all: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();

    // JIT vs .cwasm, epoch vs none: one engine per setting.
    let epoch = wasm::prepare(Setup::HOST, &bytes);
    let no_epoch = wasm::prepare(Setup { epoch: false, ..Setup::HOST }, &bytes);
    let engine = wasm::engine(Setup::HOST);
    let cwasm_path = wasm::root().join("target/bench-variants/gateway-paired.cwasm");
    wasm::precompile(&engine, &bytes, &cwasm_path);
    let cwasm = Prepared::new(&engine, &wasm::deserialize_file(&engine, &cwasm_path), true);
    let winch = wasm::prepare(Setup { compiler: Compiler::Winch, ..Setup::HOST }, &bytes);
    all.insert(
        "reuse".into(),
        compare(
            "reuse",
            vec![
                reuse("jit_epoch", &epoch, &heads),
                reuse("jit_no_epoch", &no_epoch, &heads),
                reuse("cwasm_epoch", &cwasm, &heads),
                reuse("winch_epoch", &winch, &heads),
            ],
        ),
    );
    all.insert(
        "fresh".into(),
        compare(
            "fresh",
            vec![
                fresh("jit_epoch", &epoch, &heads),
                fresh("jit_no_epoch", &no_epoch, &heads),
                fresh("cwasm_epoch", &cwasm, &heads),
            ],
        ),
    );

    // The shipped host's runtime, deadline on and off.
    {
        use host_sim::engine::{EngineOptions, Isolation, ModuleSource};
        use host_sim::instance::{Reusable, Runtime};
        let source = ModuleSource::Wasm(wasm::root().join(wasm::MODULE));
        let on = Runtime::load(&EngineOptions::default(), &source, 4).expect("host-sim runtime");
        let off = Runtime::load(&EngineOptions { no_deadline: true, ..EngineOptions::default() }, &source, 4)
            .expect("host-sim runtime");
        for (group, isolation) in [("host_sim_reuse", Isolation::Reuse), ("host_sim_fresh", Isolation::Fresh)]
        {
            let contenders: Vec<Contender<'_>> = [("deadline", &on), ("no_deadline", &off)]
                .into_iter()
                .map(|(name, runtime)| {
                    let mut reusable = Reusable::default();
                    let heads = &heads;
                    let f: Box<dyn FnMut(usize) + '_> = Box::new(move |i| {
                        let _ = black_box(runtime.decide(
                            isolation,
                            &mut reusable,
                            &heads[i % heads.len()],
                            NOW as f64,
                        ));
                    });
                    (name, f)
                })
                .collect();
            all.insert(group.into(), compare(group, contenders));
        }
    }

    // The size-table variants (built by benches/run.sh), all in one comparison.
    let dir = wasm::root().join("target/bench-variants");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let built: Vec<(&'static str, Prepared)> = files
        .iter()
        .map(|file| {
            let name: &'static str = file.file_stem().expect("stem").to_string_lossy().into_owned().leak();
            let bytes = std::fs::read(file).expect("variant");
            (name, wasm::prepare(Setup { epoch: false, ..Setup::HOST }, &bytes))
        })
        .collect();
    if !built.is_empty() {
        let contenders = built.iter().map(|(n, p)| reuse(n, p, &heads)).collect();
        all.insert("variants_reuse".into(), compare("variants_reuse", contenders));
        let contenders = built.iter().map(|(n, p)| fresh(n, p, &heads)).collect();
        all.insert("variants_fresh".into(), compare("variants_fresh", contenders));
    }
    // The epoch check sits on loop back-edges: does sha2's compact (looped)
    // backend pay more for it than the unrolled one?
    let a3 = dir.join("a3-compact-oz.wasm");
    let b3 = dir.join("b3-default-oz.wasm");
    if a3.exists() && b3.exists() {
        let (a3, b3) = (std::fs::read(a3).expect("a3"), std::fs::read(b3).expect("b3"));
        let a3_on = wasm::prepare(Setup::HOST, &a3);
        let a3_off = wasm::prepare(Setup { epoch: false, ..Setup::HOST }, &a3);
        let b3_on = wasm::prepare(Setup::HOST, &b3);
        let b3_off = wasm::prepare(Setup { epoch: false, ..Setup::HOST }, &b3);
        all.insert(
            "epoch_by_sha2".into(),
            compare(
                "epoch_by_sha2",
                vec![
                    reuse("compact_epoch", &a3_on, &heads),
                    reuse("compact_no_epoch", &a3_off, &heads),
                    reuse("default_epoch", &b3_on, &heads),
                    reuse("default_no_epoch", &b3_off, &heads),
                ],
            ),
        );
    }

    // The speed-up kernels in wasm.
    if let Ok(kernel) = std::fs::read(wasm::root().join("target/bench-variants/wasm_kernels.wasm.kernel")) {
        let engine = wasm::engine(Setup { epoch: false, ..Setup::HOST });
        let module = wasm::compile(&engine, &kernel);
        let token = corpus::valid_token();
        let signing_input = token[..token.rfind('.').expect("dots")].to_string();
        for (group, a, b, input) in [
            ("kernels_hmac", "hmac_worker", "hmac_prekeyed", signing_input.clone()),
            ("kernels_split", "split_worker", "split_table", token.clone()),
        ] {
            let mut contenders: Vec<Contender<'_>> = Vec::new();
            for export in [a, b] {
                let mut store = wasmtime::Store::new(&engine, ());
                let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("kernel instance");
                let memory = instance.get_memory(&mut store, "memory").expect("memory");
                let ptr = instance.get_typed_func::<(), i32>(&mut store, "buf_ptr").expect("buf_ptr");
                let ptr = ptr.call(&mut store, ()).expect("buf_ptr") as usize;
                memory.write(&mut store, ptr, input.as_bytes()).expect("write");
                let f = instance.get_typed_func::<i32, i32>(&mut store, export).expect("export");
                let len = input.len() as i32;
                contenders.push((
                    export,
                    Box::new(move |_| {
                        let _ = black_box(f.call(&mut store, black_box(len)));
                    }),
                ));
            }
            all.insert(group.into(), compare(group, contenders));
        }
    }

    // The same HMAC idea natively.
    let key = corpus::key().1;
    let token = corpus::valid_token();
    let input = token.as_bytes()[..token.rfind('.').expect("dots")].to_vec();
    let keyed = Hmac::<Sha256>::new_from_slice(key).expect("key");
    all.insert(
        "native_hmac".into(),
        compare(
            "native_hmac",
            vec![
                (
                    "hmac_worker",
                    Box::new(|_| {
                        let _ = black_box(worker::signature::verify(key, black_box(&input), &[0u8; 32]));
                    }),
                ),
                (
                    "hmac_prekeyed",
                    Box::new(|_| {
                        let mut mac = keyed.clone();
                        mac.update(black_box(&input));
                        let _ = black_box(mac.verify_slice(&[0u8; 32]));
                    }),
                ),
            ],
        ),
    );
    std::fs::write(path, serde_json::to_string_pretty(&all).expect("JSON")).expect("write");
    eprintln!("wrote {path}");
}
