//! The host-module contract: the exports a host calls, and the one place
//! that touches the module's static memory. See `ABI.md` for the contract
//! itself; this file implements it.
//!
//! [`Instance`] is the whole state of a module instance, safe and testable
//! natively. On wasm32 the exports wrap one static `Instance`.

use crate::answer::OUTPUT_CAPACITY;
use crate::cache::TokenCache;
use crate::config::{COMPILED, Config};
use crate::decide;
pub use crate::http::request::TOKEN_CAPACITY;
use crate::http::target::MAX_TARGET_LEN;
use crate::keys::FetchedKeys;
use crate::reject::Rejection;

#[cfg(runtime_keys)]
mod keys;

/// The contract version; a host refuses a module whose version it does not know.
pub use contract::ABI_VERSION;

/// The input buffer's size: the largest request head the module accepts.
pub const INPUT_CAPACITY: usize = 16 << 10; // 16 KiB

/// The arena's size: the output buffer, the normalized target, and four
/// times the token buffer, for the decoded JOSE header and claims (each at
/// most three quarters of the token, plus a byte) and the claim strings
/// whose escapes are decoded (together no longer than the claims). With
/// the default 256-byte token that is 1 KiB, as before the size was a
/// setting.
pub const SCRATCH_CAPACITY: usize = OUTPUT_CAPACITY + MAX_TARGET_LEN + 4 * TOKEN_CAPACITY;

/// Everything an instance holds: the length of the last answer, the cache
/// of verified tokens, the request arena (whose first bytes are the output
/// buffer), the input buffer, and, in a module that fetches keys, the keys
/// it installed and the buffer documents are handed over in.
///
/// The order is for a fresh instance's first request, which pays for every
/// 4 KiB page it touches: the page-aligned start holds the length and the
/// cache's small index (a fresh instance writes no cache entry); the arena
/// hands out pieces from its end ([`crate::arena`]), which is where the
/// input buffer begins, so the normalized target, the decoded JSON and the
/// request head share a page.
#[repr(C, align(4096))]
pub struct Instance {
    output_len: usize,
    named: crate::limits::Named,
    cache: TokenCache,
    scratch: [u8; SCRATCH_CAPACITY],
    input: [u8; INPUT_CAPACITY],
    fetched: FetchedKeys,
    #[cfg(runtime_keys)]
    keys_input: [u8; crate::keys::DOCUMENT_CAPACITY],
    #[cfg(runtime_keys)]
    rounds: crate::keys::Rounds,
}

impl Instance {
    /// A zeroed instance (in wasm it lives in `.bss`, so it costs no bytes of module).
    pub const fn new() -> Self {
        Instance {
            output_len: 0,
            named: crate::limits::Named::NONE,
            cache: TokenCache::new(),
            scratch: [0; SCRATCH_CAPACITY],
            input: [0; INPUT_CAPACITY],
            fetched: FetchedKeys::new(),
            #[cfg(runtime_keys)]
            keys_input: [0; crate::keys::DOCUMENT_CAPACITY],
            #[cfg(runtime_keys)]
            rounds: crate::keys::Rounds::new(),
        }
    }

    /// The buffer the host writes the request head into.
    pub fn input_mut(&mut self) -> &mut [u8; INPUT_CAPACITY] {
        &mut self.input
    }

    /// Decides the request whose context line and head fill the first `len`
    /// bytes of the input buffer. A `len` beyond the buffer means the head
    /// did not fit: the answer is 431 without reading the buffer.
    pub fn handle(&mut self, len: u32, now: f64, config: &Config<'_>) -> u32 {
        let answer = match self.input.get(..len as usize) {
            Some(input) => {
                decide::handle_cached(input, now, config, &self.fetched, &mut self.scratch, &mut self.cache)
            }
            None => decide::reject(Rejection::HeadTooLarge, config, &mut self.scratch),
        };
        self.output_len = answer.output.len();
        self.named = answer.named;
        u32::from(answer.status)
    }

    /// Writes the 429 that replaces the last forward (`ABI.md`, "Rate
    /// limits"): its bucket at position `bucket` was spent; one request
    /// passes again in `retry_after` seconds, the bucket is full in
    /// `reset`. Returns 429, or 500 with no output when the last decision
    /// named no such bucket.
    #[cfg(policy_limits)]
    pub fn limited(&mut self, bucket: u32, retry_after: u32, reset: u32, config: &Config<'_>) -> u32 {
        let out = &mut self.scratch[..OUTPUT_CAPACITY];
        let written = crate::limits::write_limited(&self.named, bucket, retry_after, reset, config, out);
        let (status, len) = written.unwrap_or((500, 0));
        self.output_len = len;
        u32::from(status)
    }

    /// Writes the route table into the output (`ABI.md`, "Routes"), so a
    /// host learns the module's upstreams from the module itself.
    pub fn routes(&mut self, config: &Config<'_>) -> u32 {
        let mut out = contract::Encoder::new(&mut self.scratch[..OUTPUT_CAPACITY]);
        let written = config
            .routes
            .iter()
            .enumerate()
            .try_for_each(|(i, route)| out.route(i == 0, route.audience, route.origin, route.base_path));
        self.output_len = if written.is_ok() { out.written() } else { 0 };
        self.output_len as u32
    }

    /// Writes the label table into the output (`ABI.md`, "Labels"): each
    /// rule's name, then each issuer's `iss`, then each rate limit, so that hosts name what a
    /// decision's label line numbers with the config's own names.
    #[cfg(any(policy_rules, policy_issuers, runtime_keys, policy_limits))]
    pub fn labels(&mut self, config: &Config<'_>) -> u32 {
        use contract::outcome::LabelName;
        let mut out = contract::Encoder::new(&mut self.scratch[..OUTPUT_CAPACITY]);
        let mut written = Ok(());
        for name in config.policy.rule_names {
            written = written.and_then(|()| out.label_name(out.written() == 0, &LabelName::Rule(name)));
        }
        for issuer in config.issuers {
            let name = LabelName::Issuer(issuer.iss.unwrap_or("-"));
            written = written.and_then(|()| out.label_name(out.written() == 0, &name));
        }
        for limit in config.policy.limits.table {
            written = written.and_then(|()| out.limit_line(out.written() == 0, &limit.counted()));
        }
        self.output_len = if written.is_ok() { out.written() } else { 0 };
        self.output_len as u32
    }

    /// The last answer's output: the first `output_len` bytes of the arena.
    pub fn output(&self) -> &[u8] {
        &self.scratch[..self.output_len]
    }
}

impl Default for Instance {
    fn default() -> Self {
        Self::new()
    }
}

/// The compiled-in configuration, which the exports use.
pub fn compiled_config() -> &'static Config<'static> {
    &COMPILED
}

#[cfg(all(target_arch = "wasm32", feature = "exports"))]
mod exports {
    //! The wasm exports. This is the crate's only `unsafe`.
    #![allow(unsafe_code)]

    use super::{ABI_VERSION, INPUT_CAPACITY, Instance, compiled_config};

    static mut INSTANCE: Instance = Instance::new();

    /// The instance behind the exports.
    fn instance() -> &'static mut Instance {
        // SAFETY: wasm32-unknown-unknown without the atomics feature runs one
        // thread per instance, and the module imports nothing, so no export
        // can run while another is running. Each export takes this reference,
        // uses it, and drops it before returning, so at most one reference to
        // INSTANCE exists at a time. The host writes into the input buffer
        // only between calls.
        unsafe { &mut *core::ptr::addr_of_mut!(INSTANCE) }
    }

    /// The contract version (`ABI.md`).
    #[unsafe(no_mangle)]
    pub extern "C" fn abi_version() -> u32 {
        ABI_VERSION
    }

    /// Where the host writes the request head.
    #[unsafe(no_mangle)]
    pub extern "C" fn input_ptr() -> *mut u8 {
        instance().input_mut().as_mut_ptr()
    }

    /// How many bytes the input buffer holds.
    #[unsafe(no_mangle)]
    pub extern "C" fn input_capacity() -> u32 {
        INPUT_CAPACITY as u32
    }

    /// Decides the request of `len` bytes at `input_ptr()`, at Unix time
    /// `now` (seconds), and returns the status.
    #[unsafe(no_mangle)]
    pub extern "C" fn handle(len: u32, now: f64) -> u32 {
        instance().handle(len, now, compiled_config())
    }

    /// Writes the route table to the output and returns its length.
    #[unsafe(no_mangle)]
    pub extern "C" fn routes() -> u32 {
        instance().routes(compiled_config())
    }

    /// Writes the label table to the output and returns its length. A
    /// module with no rules, one issuer and no fetched keys has none: its
    /// hosts label the issuer `0`.
    #[cfg(any(policy_rules, policy_issuers, runtime_keys, policy_limits))]
    #[unsafe(no_mangle)]
    pub extern "C" fn labels() -> u32 {
        instance().labels(compiled_config())
    }

    /// Writes the 429 that replaces the last forward, whose bucket at
    /// position `bucket` was spent, and returns its status (`ABI.md`,
    /// "Rate limits").
    #[cfg(policy_limits)]
    #[unsafe(no_mangle)]
    pub extern "C" fn limited(bucket: u32, retry_after: u32, reset: u32) -> u32 {
        instance().limited(bucket, retry_after, reset, compiled_config())
    }

    /// Writes the key-source table to the output and returns its length.
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn key_sources() -> u32 {
        instance().key_sources(compiled_config())
    }

    /// Where the host writes a fetched document.
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn keys_input_ptr() -> *mut u8 {
        instance().keys_input_mut().as_mut_ptr()
    }

    /// How many bytes the document buffer holds.
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn keys_input_capacity() -> u32 {
        crate::keys::DOCUMENT_CAPACITY as u32
    }

    /// Installs the JWKS document of `len` bytes for issuer `issuer` at
    /// `now`: the keys installed, or -1 (the output says why).
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn install_keys(issuer: u32, len: u32, now: f64) -> i32 {
        instance().install_keys(issuer, len, now, compiled_config())
    }

    /// Whether a round of issuer `issuer`'s fetching starts at `now`, asked
    /// for `why`: 1 (its URL in the output), 0, or -1 (the output says why).
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn key_fetch(issuer: u32, now: f64, why: u32) -> i32 {
        instance().key_fetch(issuer, now, why, compiled_config())
    }

    /// Seconds from `now` until issuer `issuer`'s next round is due.
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn key_fetch_wait(issuer: u32, now: f64) -> f64 {
        instance().key_fetch_wait(issuer, now, compiled_config())
    }

    /// The round's document of `len` bytes, its `Cache-Control` value of
    /// `field_len` bytes at `input_ptr()`: 1 (the next URL in the output),
    /// 0 (installed) or -1 (refused).
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn key_fetched(issuer: u32, len: u32, field_len: u32, now: f64) -> i32 {
        instance().key_fetched(issuer, len, field_len, now, compiled_config())
    }

    /// The round's fetch failed at `now`: 0, or -1.
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn key_fetch_failed(issuer: u32, now: f64) -> i32 {
        instance().key_fetch_failed(issuer, now, compiled_config())
    }

    /// A JWKS document another instance fetched at `fetched_at`: 0
    /// (installed), 1 (not newer) or -1 (refused).
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn key_stored(issuer: u32, len: u32, field_len: u32, fetched_at: f64, now: f64) -> i32 {
        instance().key_stored(issuer, len, field_len, fetched_at, now, compiled_config())
    }

    /// Where the installed keys start.
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn key_store_ptr() -> *const u8 {
        instance().key_store().0
    }

    /// How many bytes the installed keys take.
    #[cfg(runtime_keys)]
    #[unsafe(no_mangle)]
    pub extern "C" fn key_store_len() -> u32 {
        instance().key_store().1 as u32
    }

    /// Where the last answer's output starts.
    #[unsafe(no_mangle)]
    pub extern "C" fn output_ptr() -> *const u8 {
        instance().output().as_ptr()
    }

    /// How long the last answer's output is.
    #[unsafe(no_mangle)]
    pub extern "C" fn output_len() -> u32 {
        instance().output().len() as u32
    }

    #[cfg(not(test))]
    #[panic_handler]
    fn on_panic(_: &core::panic::PanicInfo<'_>) -> ! {
        // A panic is a bug; trapping lets the host answer 500 and carry on.
        core::arch::wasm32::unreachable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_longer_than_the_input_buffer_is_431_without_reading() {
        let mut instance = std::boxed::Box::new(Instance::new());
        let status = instance.handle(INPUT_CAPACITY as u32 + 1, 1.8e9, compiled_config());
        assert_eq!(status, 431);
        assert!(
            instance.output().starts_with(b"invalid_request\nrequest head too large\n#05ffffffffff -\n>")
        );
    }

    #[test]
    fn routes_lists_audience_and_upstream_per_line() {
        let mut instance = std::boxed::Box::new(Instance::new());
        let config = Config {
            routes: &[
                crate::config::Route { audience: "a", origin: "http://h:1", base_path: "/a-svc" },
                crate::config::Route { audience: "b", origin: "https://h", base_path: "" },
            ],
            ..*compiled_config()
        };
        let len = instance.routes(&config);
        assert_eq!(instance.output(), b"a http://h:1/a-svc\nb https://h");
        assert_eq!(len as usize, instance.output().len());
    }

    #[test]
    fn an_instance_answers_request_after_request() {
        let mut instance = std::boxed::Box::new(Instance::new());
        let head = b"http 127.0.0.1\nGET / HTTP/1.1\r\nHost: gw\r\n\r\n";
        for _ in 0..3 {
            instance.input_mut()[..head.len()].copy_from_slice(head);
            assert_eq!(instance.handle(head.len() as u32, 1.8e9, compiled_config()), 401);
            assert!(instance.output().starts_with(b"\nbearer token required\n"));
        }
        // No context line: the host broke the contract.
        assert_eq!(instance.handle(0, 1.8e9, compiled_config()), 500);
        assert!(instance.output().starts_with(b"\nhost context invalid\n"));
    }
}
