//! Kernels for wasm measurements, each over the bytes the host writes at
//! `buf_ptr()`: the worker's own HMAC verification and token split, and the
//! alternatives proposed in docs/PERFORMANCE.md ("Where to go faster").
#![no_std]
#![allow(unsafe_code)]

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use worker::config::{COMPILED, Hs256Key, VerifyingKey};
use worker::internal::{jws, signature};

static mut BUF: [u8; 512] = [0; 512];
static mut PREKEYED: Option<Hmac<Sha256>> = None;

fn buf(len: u32) -> &'static [u8] {
    // SAFETY: one thread; the host writes the buffer only between calls, and
    // no export holds a reference past its return.
    let all = unsafe { &*core::ptr::addr_of!(BUF) };
    &all[..(len as usize).min(all.len())]
}

/// Where the host writes the input.
#[unsafe(no_mangle)]
pub extern "C" fn buf_ptr() -> *const u8 {
    core::ptr::addr_of!(BUF) as *const u8
}

/// The worker's verification (`signature::verify` from the build's key
/// states, with a tag that does not match, so the whole path runs).
#[unsafe(no_mangle)]
pub extern "C" fn hmac_worker(len: u32) -> u32 {
    match hs256_key() {
        Some(key) => signature::verify(&key.hmac, buf(len), &[0u8; 32]).is_ok() as u32,
        None => 0,
    }
}

/// The first compiled-in key, when it is an HS256 key (the benches' config
/// has one).
fn hs256_key() -> Option<&'static Hs256Key<'static>> {
    match COMPILED.issuers.first()?.keys.first()? {
        VerifyingKey::Hs256(key) => Some(key),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The first compiled-in key's secret.
fn hs256_secret() -> &'static [u8] {
    hs256_key().map_or(&[], |key| key.secret)
}

/// The proposal: the keyed inner and outer states computed once, cloned per call.
#[unsafe(no_mangle)]
pub extern "C" fn hmac_prekeyed(len: u32) -> u32 {
    // SAFETY: as for `buf`.
    let slot = unsafe { &mut *core::ptr::addr_of_mut!(PREKEYED) };
    let keyed = slot.get_or_insert_with(|| {
        Hmac::<Sha256>::new_from_slice(hs256_secret()).unwrap_or_else(|_| unreachable!())
    });
    let mut mac = keyed.clone();
    mac.update(buf(len));
    mac.verify_slice(&[0u8; 32]).is_ok() as u32
}

/// The worker's split of a compact JWS (alphabet check per byte).
#[unsafe(no_mangle)]
pub extern "C" fn split_worker(len: u32) -> u32 {
    jws::split(buf(len)).map_or(0, |p| p.signing_input.len() as u32)
}

const fn alphabet() -> [u8; 256] {
    // 1: base64url character, 2: the dot, 0: anything else.
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            t[i] = 1;
        }
        i += 1;
    }
    t[b'.' as usize] = 2;
    t
}
static ALPHABET: [u8; 256] = alphabet();

/// The proposal: one table lookup per byte, then the dots found by position.
#[unsafe(no_mangle)]
pub extern "C" fn split_table(len: u32) -> u32 {
    let token = buf(len);
    let mut bad = false;
    let mut dots = [0usize; 3];
    let mut count = 0usize;
    for (i, &b) in token.iter().enumerate() {
        let class = ALPHABET[b as usize];
        bad |= class == 0;
        if class == 2 {
            dots[count.min(2)] = i;
            count += 1;
        }
    }
    if bad || count != 2 { 0 } else { dots[1] as u32 }
}
