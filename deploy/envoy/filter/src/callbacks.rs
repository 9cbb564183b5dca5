//! The callbacks Envoy calls into the filter (proxy-wasm ABI 0.2.1, without
//! an SDK), each handed at once to `filter` or `keys`; the host calls and
//! the allocator are in `raw`. The only `unsafe` here is the exports'
//! `#[unsafe(no_mangle)]`: each name is one Envoy looks up, and no other
//! symbol of the module has it.
//!
//! Only the callbacks the build uses are compiled, hence exported, and
//! Envoy's wasm host skips a callback the module does not export (as read
//! in proxy-wasm-cpp-host 52a0291, `src/context.cc` and `src/wasm.cc`, and
//! Envoy's `source/extensions/common/wasm/context.cc`):
//!
//! - `proxy_on_context_create`: not exported. `ContextBase::onCreate` then
//!   only marks the context created ("If no on_context_create function is
//!   registered the in-VM SDK is responsible for managing any required
//!   in-VM state"), and Envoy's `Context::decodeHeaders`
//!   (`source/extensions/common/wasm/context.cc`) calls `onCreate()` and
//!   then `onRequestHeaders` unconditionally. `onRequestHeaders` returns
//!   `Continue` without a call only when `proxy_on_request_headers` is not
//!   exported, which is why it is always compiled here and
//!   `build/envoy-filter.sh` refuses a build without it; a failed VM
//!   (a trap) answers every later request through `CHECK_FAIL_HTTP`, which
//!   without `fail_open` fails the stream (Envoy's 503): closed either way.
//!   The filter needs no context of its own to decide a request: the
//!   request callback gets the context id, and the core's instance is the
//!   VM's.
//! - `proxy_on_done`, `proxy_on_log`: not exported: `ContextBase::onDone`
//!   returns true and `onLog` returns, without a call.
//! - `proxy_on_delete`: exported only with `cfg(response_edits)` or
//!   `cfg(limits)`, to forget a stream's response edits whose response
//!   never came (a reset), and to count a forward with buckets then;
//!   `ContextBase::onDelete` calls it only when exported.
//! - `proxy_on_response_headers`: likewise, for the edits and for a rate
//!   limit's refusal (`limits`).
//! - `proxy_on_configure`, `proxy_on_tick`: with `cfg(ticks)`, every
//!   build but the `uncounted` one without key fetching: the root context
//!   asks for ticks when configured, and each tick hands Envoy the counts
//!   (`metrics`) and starts the key fetches that are due (`keys`). Envoy
//!   runs a root context per worker VM, each with its own timer.
//! - `proxy_on_vm_start`, `proxy_on_http_call_response`: only with
//!   `cfg(runtime_keys)`; without them `onStart` succeeds without a call,
//!   as `onConfigure` does in a build without ticks.
//! - `_initialize`: not exported: nothing needs running before the first
//!   callback (the thread-locals have const initializers), and
//!   `WasmBase::getFunctions` looks it up as optional (`src/wasm.cc`).
//!
//! So a request through a build whose config changes no response is one
//! call into the VM (`proxy_on_request_headers`, plus Envoy's allocations
//! for the buffers it hands over), and being counted costs it no host
//! call: the counts reach Envoy on the ticks.
// SAFETY: no unsafe block; `no_mangle` is unsafe only because two symbols
// of one name would clash, and these are proxy-wasm's names, defined
// nowhere else in the module (no SDK is linked).
#![allow(unsafe_code)]

/// The ABI version Envoy reads from the export's name.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_abi_version_0_2_1() {}

/// A request's headers: the gateway's decision, carried out. The count is
/// not read (the header map is read whole); `end_of_stream` says whether a
/// body follows, and is a `u32`, not a `bool`, so that no value Envoy
/// passes is invalid.
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_request_headers(context_id: u32, _headers: usize, end_of_stream: u32) -> u32 {
    crate::filter::on_request_headers(context_id, end_of_stream == 0) as u32
}

/// A response's headers: the edits the request's forward asked for, or a
/// rate limit's refusal turned into the module's 429.
#[cfg(any(response_edits, limits))]
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_response_headers(context_id: u32, _headers: usize, _end_of_stream: u32) -> u32 {
    crate::filter::on_response_headers(context_id) as u32
}

/// A stream ends: its response edits, if the response never came, are
/// dropped (and a forward with buckets is counted).
#[cfg(any(response_edits, limits))]
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_delete(context_id: u32) {
    crate::filter::on_delete(context_id);
}

/// A root context starts: it reads the core's key sources. 1 is success.
#[cfg(runtime_keys)]
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_vm_start(root_context_id: u32, _vm_configuration_size: usize) -> u32 {
    u32::from(crate::keys::on_vm_start(root_context_id))
}

/// A root context's configuration: the key clusters, and the ticks. 1 is
/// success; 0 makes Envoy refuse the configuration.
#[cfg(ticks)]
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_configure(root_context_id: u32, _plugin_configuration_size: usize) -> u32 {
    // The key fetcher asks for its own, shorter ticks, which hand over the
    // counts too.
    #[cfg(runtime_keys)]
    let configured = crate::keys::on_configure(root_context_id);
    #[cfg(not(runtime_keys))]
    let configured = {
        let _ = root_context_id;
        crate::metrics::start_ticks();
        true
    };
    u32::from(configured)
}

/// A root context's tick: the key fetches that are due, then the counts
/// since the last tick, handed to Envoy.
#[cfg(ticks)]
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_tick(root_context_id: u32) {
    #[cfg(runtime_keys)]
    crate::keys::on_tick(root_context_id);
    #[cfg(not(runtime_keys))]
    let _ = root_context_id;
    #[cfg(counting)]
    crate::metrics::hand_over();
}

/// The answer to a key fetch the root context started.
#[cfg(runtime_keys)]
#[unsafe(no_mangle)]
pub extern "C" fn proxy_on_http_call_response(
    root_context_id: u32,
    token: u32,
    headers: usize,
    body_size: usize,
    _trailers: usize,
) {
    crate::keys::on_http_call_response(root_context_id, token, headers, body_size);
}
