//! The worker compiled natively (the rlib): per request over the request mix,
//! and each stage of the request path called on its own, with the floor of
//! the whole path: HMAC-SHA256 of the same bytes.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use gateway_benches::corpus::{self, NOW};
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use worker::arena::Arena;
use worker::config::COMPILED;
use worker::request::TokenBuf;
use worker::{claims, header, jws, request, response, route, signature};

fn per_request(c: &mut Criterion) {
    let mix = corpus::mix();
    corpus::check_native(&mix);
    let mut group = c.benchmark_group("per_request/native");
    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    let heads: Vec<&[u8]> = mix.iter().map(|case| case.head.as_bytes()).collect();
    let mut i = 0usize;
    group.bench_function("mix", |b| {
        b.iter(|| {
            let head = heads[i % heads.len()];
            i += 1;
            worker::handle(black_box(head), NOW as f64, &COMPILED, &mut scratch).status
        })
    });
    for case in &mix {
        group.bench_function(case.name, |b| {
            b.iter(|| {
                worker::handle(black_box(case.head.as_bytes()), NOW as f64, &COMPILED, &mut scratch).status
            })
        });
    }
    group.finish();
}

fn stages(c: &mut Criterion) {
    let head = corpus::head(Some(&format!("Bearer {}", corpus::valid_token())));
    let head = head.as_bytes();
    let mut token = TokenBuf::new();
    request::extract_bearer(head, &mut token).unwrap();
    let token_bytes = token.as_bytes().to_vec();
    let parts = jws::split(&token_bytes).unwrap();
    let mut region = [0u8; 1024];
    let mut arena = Arena::new(&mut region);
    let header_json = jws::decode(parts.header, &mut arena).unwrap().to_vec();
    let claims_json = jws::decode(parts.payload, &mut arena).unwrap().to_vec();
    let key = header::select_key(&header_json, COMPILED.keys).unwrap();
    let tag = jws::decode_signature(parts.signature).unwrap();
    let grant = claims::check(&claims_json, NOW, &COMPILED).unwrap();

    let mut group = c.benchmark_group("stages/native");
    group.bench_function("1_parse_head", |b| {
        b.iter(|| {
            let mut token = TokenBuf::new();
            request::extract_bearer(black_box(head), &mut token).unwrap();
            token.as_bytes().len()
        })
    });
    group.bench_function("2_split", |b| b.iter(|| jws::split(black_box(&token_bytes)).unwrap()));
    group.bench_function("3_base64url", |b| {
        b.iter(|| {
            let mut region = [0u8; 1024];
            let mut arena = Arena::new(&mut region);
            let h = jws::decode(black_box(parts.header), &mut arena).unwrap().len();
            let p = jws::decode(black_box(parts.payload), &mut arena).unwrap().len();
            let s = jws::decode_signature(black_box(parts.signature)).unwrap();
            (h, p, s[0])
        })
    });
    group.bench_function("4_header_json", |b| {
        b.iter(|| header::select_key(black_box(&header_json), COMPILED.keys).unwrap().kid)
    });
    group.bench_function("5_hmac_sha256", |b| {
        b.iter(|| signature::verify(key.secret, black_box(parts.signing_input), &tag).unwrap())
    });
    group.bench_function("6_claims_json_and_route", |b| {
        b.iter(|| claims::check(black_box(&claims_json), NOW, &COMPILED).unwrap().route.upstream)
    });
    group.bench_function("7_route", |b| {
        b.iter(|| route::lookup(COMPILED.routes, black_box(corpus::routed_audience())).unwrap().upstream)
    });
    group.bench_function("8_write_decision", |b| {
        b.iter(|| {
            let mut buf = [0u8; response::OUTPUT_CAPACITY];
            let mut out = response::Output::new(&mut buf);
            response::write_grant(&mut out, black_box(&grant)).unwrap();
            out.written()
        })
    });
    group.bench_function("all_handle_valid", |b| {
        let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
        b.iter(|| worker::handle(black_box(head), NOW as f64, &COMPILED, &mut scratch).status)
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
