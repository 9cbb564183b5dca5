//! `bench-tool paired FILE`: A/B comparisons measured interleaved, and
//! `bench-tool modules A.wasm B.wasm...`: modules compared the same way, by
//! hand, for levers of a few percent. Criterion measures one benchmark after
//! another, so on a shared machine a change of load between two of them
//! shows up as a difference between them. Here the contenders of a
//! comparison take turns: 301 rounds of one short batch each (about 1 ms,
//! after an untimed warm-up of a fifth of that), so drift hits all of them
//! alike. Each contender's figure is the lower quartile of its batch means: a
//! batch that another process preempted (a time slice is a few ms) is
//! slower, never faster, so the low side is the undisturbed cost.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use gateway_benches::corpus::{self, NOW};
use gateway_benches::host::Setup;
use gateway_benches::paths::variants_path;
use gateway_benches::variants::{SHIPPED, VARIANTS};
use hmac::{Hmac, KeyInit, Mac};
use runtime::{Reusable, Runtime};
use sha2::Sha256;

/// A contender: its figure's name (`group/name`) and one call of it.
type Contender<'a> = (String, Box<dyn FnMut(usize) + 'a>);

/// The figure `name` of `group`.
fn id(group: &str, name: &str) -> String {
    format!("{group}/{name}")
}

const ROUNDS: usize = 301;
const BATCH_NS: f64 = 1e6;

/// The lower quartile of each contender's batch means, ns per call, measured
/// round-robin; recorded in `out` under the contender's id.
fn compare(out: &mut BTreeMap<String, f64>, mut contenders: Vec<Contender<'_>>) {
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
    for ((id, _), mut s) in contenders.into_iter().zip(samples) {
        s.sort_by(f64::total_cmp);
        // The lower quartile: a batch that another process preempted is
        // slower, never faster, so the low side is the undisturbed cost.
        let quartile = s[s.len() / 4];
        eprintln!("  {id}: {quartile:.0} ns");
        out.insert(id, quartile);
    }
}

fn reuse<'a>(id: String, runtime: &'a Runtime, heads: &'a [Vec<u8>]) -> Contender<'a> {
    let mut reusable = Reusable::default();
    (
        id,
        Box::new(move |i| {
            let _ = black_box(runtime.decide_reused(&mut reusable, &heads[i % heads.len()], NOW as f64));
        }),
    )
}

fn fresh<'a>(id: String, runtime: &'a Runtime, heads: &'a [Vec<u8>]) -> Contender<'a> {
    (
        id,
        Box::new(move |i| {
            let _ = black_box(runtime.decide_fresh(&heads[i % heads.len()], NOW as f64));
        }),
    )
}

/// The setups compared in the reuse and fresh groups. The control is the
/// defaults again in a runtime of their own: how far it lands from the
/// first is the run's resolution (two runtimes of one setup differ only in
/// where their engine, code and pool sit).
fn setups(group: &str) -> Vec<(String, Setup)> {
    let mut setups = vec![
        (id(group, "jit_deadline"), Setup::Deadline),
        (id(group, "jit_no_deadline"), Setup::NoDeadline),
        (id(group, "cwasm_deadline"), Setup::Cwasm),
        (id(group, "jit_deadline_control"), Setup::Deadline),
    ];
    if group == "interleaved/reuse" {
        setups.push((id(group, "winch_deadline"), Setup::Winch));
    } else {
        // Resetting a dropped instance's memory matters to fresh ones only.
        setups.push((id(group, "jit_pagemap_scan"), Setup::PagemapScan));
    }
    setups
}

/// The host's defaults against one setting changed, and against a control;
/// one runtime each, in reused and then in fresh instances.
fn instances(all: &mut BTreeMap<String, f64>, heads: &[Vec<u8>]) {
    for group in ["interleaved/reuse", "interleaved/fresh"] {
        let runtimes: Vec<(String, Runtime)> =
            setups(group).into_iter().map(|(id, s)| (id, s.load())).collect();
        let contenders = runtimes
            .iter()
            .map(|(id, runtime)| {
                if group == "interleaved/reuse" {
                    reuse(id.clone(), runtime, heads)
                } else {
                    fresh(id.clone(), runtime, heads)
                }
            })
            .collect();
        compare(all, contenders);
    }
}

/// Runs every comparison (or only `only`) and writes `{id: ns}` to `path`.
pub fn run(path: &std::path::Path, only: Option<&str>) -> std::process::ExitCode {
    corpus::check_native();
    let heads = corpus::heads(&corpus::mix());
    let mut all = BTreeMap::new();
    if let Some(only) = only {
        match only {
            "instances" => instances(&mut all, &heads),
            "fetched_keys" => fetched_keys(&mut all),
            "rules" => rules(&mut all, &heads),
            other => {
                eprintln!("error: --only {other:?}: instances, fetched_keys or rules");
                return std::process::ExitCode::FAILURE;
            }
        }
        std::fs::write(path, serde_json::to_string_pretty(&all).expect("JSON")).expect("write");
        eprintln!("wrote {}", path.display());
        return std::process::ExitCode::SUCCESS;
    }

    instances(&mut all, &heads);

    // The size-table variants (built by benches/run.sh), all in one comparison.
    let variant_path = |name: &str| variants_path(&format!("{name}.wasm"));
    let variants: Vec<(&'static str, Runtime)> = VARIANTS
        .iter()
        .map(|v| (v.name, Setup::NoDeadline.load_module(&existing(&variant_path(v.name)))))
        .collect();
    let contenders =
        variants.iter().map(|(name, rt)| reuse(id("interleaved/variants_reuse", name), rt, &heads)).collect();
    compare(&mut all, contenders);
    let contenders =
        variants.iter().map(|(name, rt)| fresh(id("interleaved/variants_fresh", name), rt, &heads)).collect();
    compare(&mut all, contenders);
    drop(variants);

    // The epoch check sits on loop back-edges: does sha2's compact (looped)
    // backend pay more for it than the unrolled one?
    let compact = existing(&variant_path(SHIPPED));
    let unrolled = existing(&variant_path("b3-default-oz"));
    let by_sha2 = [
        ("interleaved/epoch_by_sha2/compact_deadline", Setup::Deadline.load_module(&compact)),
        ("interleaved/epoch_by_sha2/compact_no_deadline", Setup::NoDeadline.load_module(&compact)),
        ("interleaved/epoch_by_sha2/default_deadline", Setup::Deadline.load_module(&unrolled)),
        ("interleaved/epoch_by_sha2/default_no_deadline", Setup::NoDeadline.load_module(&unrolled)),
    ];
    compare(&mut all, by_sha2.iter().map(|(id, rt)| reuse(id.to_string(), rt, &heads)).collect());
    drop(by_sha2);

    kernels(&mut all);
    native_hmac(&mut all);
    fetched_keys(&mut all);
    rules(&mut all, &heads);

    std::fs::write(path, serde_json::to_string_pretty(&all).expect("JSON")).expect("write");
    eprintln!("wrote {}", path.display());
    std::process::ExitCode::SUCCESS
}

/// `bench-tool modules`: each module at `paths` decides the request mix in
/// a reused instance, then in fresh ones, in turns with the others (one
/// comparison per mode); prints each figure and its ratio to the first
/// module's. The first module is loaded twice: its second runtime, the
/// control, differs from it only by where its engine and pool sit, so the
/// control's ratio is the run's resolution (on a shared machine two runtimes
/// of one module have differed by up to 16% in fresh instances). Runs from
/// the workspace root (the mix is gateway.toml's).
pub fn modules(paths: &[std::path::PathBuf]) -> std::process::ExitCode {
    if let Some(missing) = paths.iter().find(|path| !path.is_file()) {
        eprintln!("error: {}: no such module", missing.display());
        return std::process::ExitCode::FAILURE;
    }
    let heads = corpus::heads(&corpus::mix());
    // Each checked against the mix's cases before anything is timed; named
    // by its place too, so that two copies of one module are two contenders.
    let control = format!("control:{}", paths[0].display());
    let named = paths.iter().enumerate().map(|(i, path)| (format!("{}:{}", i + 1, path.display()), path));
    let loaded: Result<Vec<(String, Runtime)>, String> = named
        .chain([(control.clone(), &paths[0])])
        .map(|(name, path)| Setup::Deadline.try_load_module(path).map(|runtime| (name, runtime)))
        .collect();
    let runtimes = match loaded {
        Ok(runtimes) => runtimes,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut all = BTreeMap::new();
    compare(
        &mut all,
        runtimes.iter().map(|(name, rt)| reuse(id("modules/reuse", name), rt, &heads)).collect(),
    );
    compare(
        &mut all,
        runtimes.iter().map(|(name, rt)| fresh(id("modules/fresh", name), rt, &heads)).collect(),
    );
    let figure = |group: &str, name: &str| all[&id(group, name)];
    let first = &runtimes[0].0;
    println!("| module | reused, ns | | fresh, ns | |");
    println!("|---|---:|---:|---:|---:|");
    for (name, _) in &runtimes {
        let (reused, fresh) = (figure("modules/reuse", name), figure("modules/fresh", name));
        println!(
            "| {name} | {reused:.0} | {:.3}x | {fresh:.0} | {:.3}x |",
            reused / figure("modules/reuse", first),
            fresh / figure("modules/fresh", first)
        );
    }
    let spread = |group: &str| 100.0 * (figure(group, &control) / figure(group, first) - 1.0).abs();
    println!(
        "\nThe control (the first module in a second runtime) is {:.1}% off reused and {:.1}% off fresh: \
         differences smaller than that are this run's noise.",
        spread("modules/reuse"),
        spread("modules/fresh")
    );
    std::process::ExitCode::SUCCESS
}

/// `path`, which `benches/run.sh` step 1 must have built.
fn existing(path: &Path) -> std::path::PathBuf {
    assert!(path.exists(), "{} is missing: `benches/run.sh` step 1 builds it", path.display());
    path.to_owned()
}

/// The speed-up kernels (`benches/wasm-kernels`) in wasm: not a gateway
/// module, so instantiated directly in an engine the host builds.
fn kernels(all: &mut BTreeMap<String, f64>) {
    let path = existing(&variants_path("wasm_kernels.wasm.kernel"));
    let options = Setup::NoDeadline.options();
    let engine = runtime::engine::build(&options, 4).expect("engine");
    let bytes = std::fs::read(&path).expect("kernel module");
    let module = runtime::engine::compile(&engine, &bytes, &path).expect("kernel module compiles");
    let token = corpus::valid_token();
    let signing_input = token[..token.rfind('.').expect("dots")].to_string();
    // Each contender is an export of the kernel module, named as its figure.
    for (group, exports, input) in [
        ("interleaved/kernels_hmac", ["hmac_worker", "hmac_prekeyed"], signing_input),
        ("interleaved/kernels_split", ["split_worker", "split_table"], token.clone()),
    ] {
        let mut contenders: Vec<Contender<'_>> = Vec::new();
        for export in exports {
            let mut store = wasmtime::Store::new(&engine, ());
            let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("kernel instance");
            let memory = instance.get_memory(&mut store, "memory").expect("memory");
            let ptr = instance.get_typed_func::<(), i32>(&mut store, "buf_ptr").expect("buf_ptr");
            let ptr = ptr.call(&mut store, ()).expect("buf_ptr") as usize;
            memory.write(&mut store, ptr, input.as_bytes()).expect("write");
            let f = instance.get_typed_func::<i32, i32>(&mut store, export).expect("export");
            let len = input.len() as i32;
            contenders.push((
                id(group, export),
                Box::new(move |_| {
                    let _ = black_box(f.call(&mut store, black_box(len)));
                }),
            ));
        }
        compare(all, contenders);
    }
}

/// The same HMAC idea natively.
fn native_hmac(all: &mut BTreeMap<String, f64>) {
    let (_, key) = testkit::tokens::first_key(corpus::config()).expect("a key");
    let token = corpus::valid_token();
    let input = token.as_bytes()[..token.rfind('.').expect("dots")].to_vec();
    let keyed = Hmac::<Sha256>::new_from_slice(key).expect("key");
    let (inner, outer) = gateway_config::hmac_key::hmac_sha256_states(key);
    let hmac_key = worker::config::HmacKey { inner, outer };
    compare(
        all,
        vec![
            (
                "interleaved/native_hmac/hmac_worker".to_owned(),
                Box::new(|_| {
                    let _ = black_box(worker::internal::signature::verify(
                        &hmac_key,
                        black_box(&input),
                        &[0u8; 32],
                    ));
                }),
            ),
            (
                "interleaved/native_hmac/hmac_prekeyed".to_owned(),
                Box::new(|_| {
                    let mut mac = keyed.clone();
                    mac.update(black_box(&input));
                    let _ = black_box(mac.verify_slice(&[0u8; 32]));
                }),
            ),
        ],
    );
}

/// A module of another config than gateway.toml, built by `benches/run.sh` step 1.
fn config_module(name: &str) -> std::path::PathBuf {
    existing(&gateway_benches::paths::root().join("target/bench-configs").join(name))
}

/// The request mix with 20 rules that none of its paths match (every
/// request tried against all 20, decided as without rules) against the
/// shipped module without rules, reused and fresh.
fn rules(all: &mut BTreeMap<String, f64>, heads: &[Vec<u8>]) {
    let none = Setup::Deadline.load_module(&existing(&variants_path(&format!("{SHIPPED}.wasm"))));
    let twenty = Setup::Deadline.load_module(&config_module("rules-20.wasm"));
    compare(
        all,
        vec![
            reuse(id("interleaved/rules_reuse", "none"), &none, heads),
            reuse(id("interleaved/rules_reuse", "twenty"), &twenty, heads),
        ],
    );
    compare(
        all,
        vec![
            fresh(id("interleaved/rules_fresh", "none"), &none, heads),
            fresh(id("interleaved/rules_fresh", "twenty"), &twenty, heads),
        ],
    );
}

/// Keys fetched at run time against the same keys compiled in: four RS256
/// keys (`benches/configs/rsa4-jwks.json`), fresh instances, one request
/// without a token (what every request pays for the key store's copy) and
/// one with an RS256 token. The fetched module's keys are installed as a
/// host installs them. `benches/run.sh` step 1 builds both modules.
fn fetched_keys(all: &mut BTreeMap<String, f64>) {
    let compiled = Setup::Deadline.load_unchecked(&config_module("keys-compiled.wasm"));
    let fetched = Setup::Deadline.load_unchecked(&config_module("keys-fetched.wasm"));
    let document = std::fs::read(gateway_benches::paths::root().join("benches/configs/rsa4-jwks.json"))
        .expect("benches/configs/rsa4-jwks.json");
    let installed = fetched.install_keys(0, &document, NOW as f64).expect("the keeper instance");
    assert!(installed.as_ref().is_ok_and(|summary| summary.contains(": 4 keys")), "{installed:?}");
    let no_token = vec![b"GET /orders HTTP/1.1\r\nHost: gw\r\n\r\n".to_vec()];
    let rs256 = vec![rs256_request()];
    for (name, heads) in [("no_token", &no_token), ("rs256", &rs256)] {
        for runtime in [&compiled, &fetched] {
            let status = runtime.decide_fresh(&heads[0], NOW as f64).map(|d| d.status());
            assert_eq!(status, Ok(if name == "rs256" { 200 } else { 401 }), "{name}");
        }
        let group = format!("interleaved/fetched_keys_{name}");
        compare(
            all,
            vec![
                fresh(id(&group, "compiled"), &compiled, heads),
                fresh(id(&group, "fetched"), &fetched, heads),
            ],
        );
    }
    // Installing a four-key document, per algorithm, in the keeper instance.
    let documents: Vec<(&str, Vec<u8>)> = [
        ("rs256_2048", "rsa4-jwks.json"),
        ("rs256_4096", "rsa4096-jwks.json"),
        ("es256", "es256-jwks.json"),
        ("eddsa", "eddsa-jwks.json"),
    ]
    .into_iter()
    .map(|(name, file)| {
        let path = gateway_benches::paths::root().join("benches/configs").join(file);
        (name, std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
    })
    .collect();
    let contenders = documents
        .iter()
        .map(|(name, document)| -> Contender<'_> {
            let fetched = &fetched;
            (
                id("interleaved/fetched_keys_install", name),
                Box::new(move |_| {
                    let installed = fetched.install_keys(0, document, NOW as f64);
                    assert!(
                        matches!(&installed, Ok(Ok(summary)) if summary.contains(": 4 keys")),
                        "{installed:?}"
                    );
                }),
            )
        })
        .collect();
    compare(all, contenders);
}

/// A request with an RS256 token of the RFC 7515 key (`rsa-a2`).
fn rs256_request() -> Vec<u8> {
    use base64::Engine as _;
    let pem =
        std::fs::read_to_string(gateway_benches::paths::root().join("testkit/keys/rs256-rfc7515.key.pem"))
            .expect("key");
    let body: String = pem.lines().filter(|line| !line.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(body).expect("PEM body");
    let key = jsonwebtoken::EncodingKey::from_rsa_der(&der);
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("rsa-a2".into());
    let claims = serde_json::json!({"iss": "https://issuer.bench", "aud": "orders", "sub": "alice", "exp": NOW + 3600});
    let token = jsonwebtoken::encode(&header, &claims, &key).expect("sign");
    format!("GET /orders HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {token}\r\n\r\n").into_bytes()
}
