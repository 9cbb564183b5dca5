//! The worker compiled natively (the rlib): per request over the request mix,
//! and each stage of the request path called on its own, with the floor of
//! the whole path: HMAC-SHA256 of the same bytes.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use gateway_benches::corpus::{self, NOW};
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use worker::config::{COMPILED, VerifyingKey};
use worker::internal::{Arena, claims, forward, header, jws, request, route, signature, target};

fn per_request(c: &mut Criterion) {
    corpus::check_native();
    let heads = corpus::inputs(&corpus::mix());
    let mut group = c.benchmark_group("per_request/native");
    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    let mut i = 0usize;
    group.bench_function("mix", |b| {
        b.iter(|| {
            let head = &heads[i % heads.len()];
            i += 1;
            worker::handle(black_box(head), NOW as f64, &COMPILED, &mut scratch).status
        })
    });
    for case in corpus::cases() {
        let input = corpus::input(&case.head);
        group.bench_function(corpus::slug(case.kind), |b| {
            b.iter(|| worker::handle(black_box(&input), NOW as f64, &COMPILED, &mut scratch).status)
        });
    }
    group.finish();
}

fn stages(c: &mut Criterion) {
    let valid = corpus::cases().remove(0);
    let head = valid.head.as_bytes();
    let token_bytes = request::extract_bearer(head, COMPILED.max_token_bytes).unwrap().to_vec();
    let parts = jws::split(&token_bytes).unwrap();
    let mut region = [0u8; 1024];
    let mut arena = Arena::new(&mut region);
    let header_json = jws::decode(parts.header, &mut arena).unwrap().to_vec();
    let claims_json = jws::decode(parts.payload, &mut arena).unwrap().to_vec();
    let keys = COMPILED.issuers[0].keys;
    // Irrefutable when the module is built for HS256 alone.
    #[allow(irrefutable_let_patterns)]
    let VerifyingKey::Hs256(key) = header::select_key(&header_json, keys).unwrap() else {
        panic!("an HS256 key")
    };
    let tag = jws::decode_signature(parts.signature).unwrap();
    let mut claims_region = [0u8; 1024];
    let grant = claims::check(&claims_json, NOW, &COMPILED, &mut Arena::new(&mut claims_region)).unwrap();

    let mut group = c.benchmark_group("stages/native");
    group.bench_function("1_parse_head", |b| {
        b.iter(|| request::extract_bearer(black_box(head), COMPILED.max_token_bytes).unwrap().len())
    });
    group.bench_function("2_split", |b| b.iter(|| jws::split(black_box(&token_bytes)).unwrap()));
    group.bench_function("3_base64url", |b| {
        b.iter(|| {
            let mut region = [0u8; 1024];
            let mut arena = Arena::new(&mut region);
            let h = jws::decode(black_box(parts.header), &mut arena).unwrap().len();
            let p = jws::decode(black_box(parts.payload), &mut arena).unwrap().len();
            let s = jws::decode_signature::<32>(black_box(parts.signature)).unwrap();
            (h, p, s[0])
        })
    });
    group.bench_function("4_header_json", |b| {
        b.iter(|| header::select_key(black_box(&header_json), keys).unwrap().kid())
    });
    group.bench_function("5_hmac_sha256", |b| {
        b.iter(|| signature::verify(&key.hmac, black_box(parts.signing_input), &tag).unwrap())
    });
    group.bench_function("6_claims_json_and_route", |b| {
        let mut region = [0u8; 1024];
        b.iter(|| {
            let mut arena = Arena::new(&mut region);
            claims::check(black_box(&claims_json), NOW, &COMPILED, &mut arena).unwrap().route.origin
        })
    });
    group.bench_function("7_route", |b| {
        b.iter(|| route::lookup(COMPILED.routes, black_box(grant.route.audience)).unwrap().origin)
    });
    // The forward plan: the target normalized and the fields classified.
    let mut fields = [httparse::EMPTY_HEADER; request::MAX_HEADERS];
    let parsed = request::parse(head, &mut fields).unwrap();
    let context = contract::Context { scheme: contract::Scheme::Http, peer: "127.0.0.1", certificate: None };
    let grant = forward::Grant { subject: grant.subject, ..forward::Grant::public(grant.route) };
    group.bench_function("8_write_decision", |b| {
        b.iter(|| {
            let mut region = [0u8; target::MAX_TARGET_LEN];
            let mut arena = Arena::new(&mut region);
            let target = target::normalize(parsed.method, black_box(parsed.target), &mut arena).unwrap();
            let mut buf = [0u8; worker::answer::OUTPUT_CAPACITY];
            let mut out = contract::Encoder::new(&mut buf);
            let none = worker::internal::CrossOrigin::None;
            forward::write_plan(
                &mut out,
                black_box(&grant),
                &parsed,
                &target,
                &context,
                &COMPILED,
                &none,
                &contract::Labels::default(),
                &mut arena,
            )
            .unwrap();
            out.written()
        })
    });
    let input = corpus::input(&valid.head);
    group.bench_function("all_handle_valid", |b| {
        let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
        b.iter(|| worker::handle(black_box(&input), NOW as f64, &COMPILED, &mut scratch).status)
    });

    // The floor: the cryptography alone, on the same bytes.
    group.bench_function("floor_hmac_sha256", |b| {
        b.iter(|| {
            let mut mac = Hmac::<Sha256>::new_from_slice(key.secret).unwrap();
            mac.update(black_box(parts.signing_input));
            mac.finalize().into_bytes()
        })
    });
    // What a precomputed key state (the keyed inner and outer SHA-256 states,
    // built once per key) would save: two of the compression-function calls.
    let keyed = Hmac::<Sha256>::new_from_slice(key.secret).unwrap();
    group.bench_function("floor_hmac_sha256_prekeyed", |b| {
        b.iter(|| {
            let mut mac = keyed.clone();
            mac.update(black_box(parts.signing_input));
            mac.verify_slice(&tag).unwrap()
        })
    });
    group.bench_function("floor_sha256_only", |b| b.iter(|| Sha256::digest(black_box(parts.signing_input))));
    group.finish();
}

criterion_group! { name = benches; config = gateway_benches::criterion_config(); targets = per_request, stages }
criterion_main!(benches);
