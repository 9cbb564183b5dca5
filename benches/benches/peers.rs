//! The worker beside its peers, natively: the `jsonwebtoken` crate on the
//! same tokens and rules, and the same decision made by a microservice on
//! loopback (keep-alive) instead of in process.
#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::HashSet;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use gateway_benches::corpus::{self, NOW};
use gateway_benches::http::{Client, spawn_microservice};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use testkit::tokens;
use worker::config::COMPILED;
use worker::internal::{Arena, claims, header, jws, route, signature};

#[derive(Deserialize)]
struct Claims {
    #[allow(dead_code)]
    exp: u64,
    sub: Option<String>,
    aud: String,
}

/// The worker's rules for `jsonwebtoken`: HS256 only, exp required, nbf
/// checked, the configured issuer and leeway, one of the routed audiences.
fn validation() -> Validation {
    let mut v = Validation::new(Algorithm::HS256);
    v.leeway = COMPILED.issuers[0].leeway_secs;
    v.validate_exp = true;
    v.validate_nbf = true;
    v.set_required_spec_claims(&["exp"]);
    if let Some(iss) = COMPILED.issuers[0].iss {
        v.set_issuer(&[iss]);
    }
    v.aud = Some(COMPILED.routes.iter().map(|r| r.audience.to_string()).collect::<HashSet<_>>());
    v
}

/// The worker's path from the token on (no HTTP parsing, no response).
fn worker_token(token: &[u8], now: u64) -> Option<&'static str> {
    let mut region = [0u8; 1024];
    let mut arena = Arena::new(&mut region);
    let parts = jws::split(token).ok()?;
    let header_json = jws::decode(parts.header, &mut arena).ok()?;
    let key = header::select_key(header_json, COMPILED.issuers[0].keys).ok()?;
    signature::verify_jws(key, parts.signing_input, parts.signature).ok()?;
    let claims_json = jws::decode(parts.payload, &mut arena).ok()?;
    claims::check(claims_json, now, &COMPILED, &mut arena).ok().map(|g| g.route.origin)
}

fn jsonwebtoken_per_token(c: &mut Criterion) {
    // jsonwebtoken reads the system clock, so these tokens are minted around
    // it; the worker gets the same clock.
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let config = corpus::config();
    let (kid, secret) = tokens::first_key(config).unwrap();
    let audience = &config.routes[0].aud;
    let token = |exp: u64| {
        let mut claims = tokens::Claims::new(audience, exp).subject("alice").issued_at(now - 60);
        if let Some(iss) = config.first_iss() {
            claims = claims.issuer(iss);
        }
        tokens::mint(tokens::Claims::header(kid), claims.to_json(), secret)
    };
    let valid = token(now + 600);
    let expired = token(now - 3600);
    let key = DecodingKey::from_secret(secret).unwrap();
    let validation = validation();
    let jwt = |token: &str| -> Option<&'static str> {
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).ok()?;
        let _ = data.claims.sub;
        route::lookup(COMPILED.routes, &data.claims.aud).map(|r| r.origin)
    };
    // Both agree before anything is timed.
    assert!(jwt(&valid).is_some() && worker_token(valid.as_bytes(), now).is_some());
    assert!(jwt(&expired).is_none() && worker_token(expired.as_bytes(), now).is_none());

    let mut group = c.benchmark_group("per_token/native");
    group.bench_function("worker_valid", |b| b.iter(|| worker_token(black_box(valid.as_bytes()), now)));
    group.bench_function("jsonwebtoken_valid", |b| b.iter(|| jwt(black_box(&valid))));
    group.bench_function("worker_expired", |b| b.iter(|| worker_token(black_box(expired.as_bytes()), now)));
    group.bench_function("jsonwebtoken_expired", |b| b.iter(|| jwt(black_box(&expired))));
    group.finish();
}

fn microservice(c: &mut Criterion) {
    let heads = corpus::heads(&corpus::mix());
    let addr = spawn_microservice(NOW as f64).unwrap();
    let mut client = Client::connect(addr).unwrap();
    for case in corpus::cases() {
        let status = client.round_trip(case.head.as_bytes()).unwrap();
        assert_eq!(status, case.kind.expected_status(), "{}", corpus::slug(case.kind));
    }
    let mut group = c.benchmark_group("per_request/microservice");
    let mut i = 0usize;
    group.bench_function("loopback_keep_alive_mix", |b| {
        b.iter(|| {
            let head = &heads[i % heads.len()];
            i += 1;
            client.round_trip(black_box(head)).unwrap()
        })
    });
    // The same with a thread spinning beside it. On an idle virtual machine
    // each round trip wakes a halted vCPU, which costs tens of µs; with a
    // core kept busy, the client and the service hand over on the other one.
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    let mut i = 0usize;
    group.bench_function("loopback_keep_alive_mix_spinner", |b| {
        b.iter(|| {
            let head = &heads[i % heads.len()];
            i += 1;
            client.round_trip(black_box(head)).unwrap()
        })
    });
    stop.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
    let inputs = corpus::inputs(&corpus::mix());
    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    let mut i = 0usize;
    group.bench_function("in_process_mix", |b| {
        b.iter(|| {
            let head = &inputs[i % inputs.len()];
            i += 1;
            worker::handle(black_box(head), NOW as f64, &COMPILED, &mut scratch).status
        })
    });
    group.finish();
}

criterion_group! { name = benches; config = gateway_benches::criterion_config(); targets = jsonwebtoken_per_token, microservice }
criterion_main!(benches);
