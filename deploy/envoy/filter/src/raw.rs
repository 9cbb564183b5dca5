//! The host calls the filter makes to Envoy (proxy-wasm ABI 0.2.1, without
//! an SDK), and the allocator Envoy writes the buffers they return with.
//! Every `unsafe` block of the crate is here (`callbacks` has only the
//! exports' `#[unsafe(no_mangle)]`).
#![allow(unsafe_code)]

use std::ptr::{null, null_mut};

use crate::input::serialize_pairs;

/// `connection.tls_version`, as a proxy-wasm property path (parts NUL-separated).
pub const TLS_VERSION: &[u8] = b"connection\0tls_version";

/// `connection.sha256_peer_certificate_digest` (hex): the client
/// certificate Envoy verified, as a proxy-wasm property path.
pub const PEER_CERTIFICATE_DIGEST: &[u8] = b"connection\0sha256_peer_certificate_digest";

/// `source.address`, as a proxy-wasm property path.
pub const SOURCE_ADDRESS: &[u8] = b"source\0address";

/// proxy-wasm's `MapType::HttpRequestHeaders`.
pub const HTTP_REQUEST_HEADERS: u32 = 0;

/// `response.code_details`: why Envoy answered as it did
/// (`local_rate_limited` for `local_ratelimit`'s refusal).
#[cfg(limits)]
pub const RESPONSE_CODE_DETAILS: &[u8] = b"response\0code_details";

/// proxy-wasm's `MapType::HttpResponseHeaders`.
#[cfg(any(response_edits, limits))]
pub const HTTP_RESPONSE_HEADERS: u32 = 2;

/// proxy-wasm's `MapType::HttpCallResponseHeaders`: the fields of the
/// answer to a `dispatch_http_call`.
#[cfg(runtime_keys)]
pub const HTTP_CALL_RESPONSE_HEADERS: u32 = 6;

/// proxy-wasm's `BufferType::HttpCallResponseBody`.
#[cfg(runtime_keys)]
pub const HTTP_CALL_RESPONSE_BODY: u32 = 4;

/// proxy-wasm's `BufferType::PluginConfiguration`: the filter's `configuration`.
#[cfg(runtime_keys)]
pub const PLUGIN_CONFIGURATION: u32 = 7;

/// proxy-wasm's `Status::Ok` and `Status::NotFound`.
const OK: u32 = 0;
const NOT_FOUND: u32 = 1;

/// A proxy-wasm metric's kind (`MetricType`).
#[cfg(counting)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum MetricType {
    /// Only ever grows.
    Counter = 0,
    /// Set to a value.
    Gauge = 1,
}

/// What a stream callback tells Envoy: go on with the stream, or stop it
/// here (after a local reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Action {
    /// proxy-wasm's `Action::Continue`.
    Continue = 0,
    /// proxy-wasm's `Action::Pause`.
    Pause = 1,
}

/// A log line's level (proxy-wasm's `LogLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum LogLevel {
    /// A key fetch that went as it should.
    #[cfg(runtime_keys)]
    Info = 2,
    /// A key fetch that failed or was refused.
    #[cfg(runtime_keys)]
    Warn = 3,
    /// The filter could not do its job.
    Error = 4,
}

/// The allocator Envoy calls (as `malloc`; `WasmBase::getFunctions` looks
/// for `malloc`, then `proxy_on_memory_allocate`, and refuses a module
/// with neither) for every buffer a host call hands over: a zeroed boxed
/// slice of exactly `size` bytes, leaked to Envoy, which copies `size`
/// bytes into it and stores the pointer and `size` in the host call's
/// out-pointers (`WasmBase::copyToPointerSize`, which allocates nothing
/// for an empty buffer and stores a null pointer). That is the contract
/// [`host_buffer`] takes ownership back under. An allocation that fails
/// traps (Rust's allocation-failure handler), which fails the VM: closed.
// SAFETY (of the export): `malloc` is defined nowhere else in the module
// (Rust's allocator on wasm32 uses its own names, and no SDK is linked).
#[unsafe(export_name = "malloc")]
pub extern "C" fn proxy_on_memory_allocate(size: usize) -> *mut u8 {
    // Zeroed, so that every byte is initialized whatever Envoy writes.
    Box::into_raw(vec![0u8; size].into_boxed_slice()).cast::<u8>()
}

unsafe extern "C" {
    fn proxy_log(level: u32, message_data: *const u8, message_size: usize) -> u32;
    #[cfg(counting)]
    fn proxy_define_metric(
        metric_type: u32,
        name_data: *const u8,
        name_size: usize,
        return_id: *mut u32,
    ) -> u32;
    #[cfg(counting)]
    fn proxy_increment_metric(metric_id: u32, offset: i64) -> u32;
    #[cfg(counting)]
    fn proxy_record_metric(metric_id: u32, value: u64) -> u32;
    fn proxy_get_current_time_nanoseconds(return_time: *mut u64) -> u32;
    fn proxy_get_header_map_pairs(map_type: u32, return_data: *mut *mut u8, return_size: *mut usize) -> u32;
    fn proxy_replace_header_map_value(
        map_type: u32,
        key_data: *const u8,
        key_size: usize,
        value_data: *const u8,
        value_size: usize,
    ) -> u32;
    fn proxy_remove_header_map_value(map_type: u32, key_data: *const u8, key_size: usize) -> u32;
    #[cfg(limits)]
    fn proxy_get_header_map_value(
        map_type: u32,
        key_data: *const u8,
        key_size: usize,
        return_value_data: *mut *mut u8,
        return_value_size: *mut usize,
    ) -> u32;
    #[cfg(response_edits)]
    fn proxy_add_header_map_value(
        map_type: u32,
        key_data: *const u8,
        key_size: usize,
        value_data: *const u8,
        value_size: usize,
    ) -> u32;
    fn proxy_get_property(
        path_data: *const u8,
        path_size: usize,
        return_data: *mut *mut u8,
        return_size: *mut usize,
    ) -> u32;
    fn proxy_send_local_response(
        status_code: u32,
        status_code_details_data: *const u8,
        status_code_details_size: usize,
        body_data: *const u8,
        body_size: usize,
        headers_data: *const u8,
        headers_size: usize,
        grpc_status: i32,
    ) -> u32;
    #[cfg(runtime_keys)]
    fn proxy_get_buffer_bytes(
        buffer_type: u32,
        start: usize,
        max_size: usize,
        return_data: *mut *mut u8,
        return_size: *mut usize,
    ) -> u32;
    #[cfg(ticks)]
    fn proxy_set_tick_period_milliseconds(period: u32) -> u32;
    #[cfg(runtime_keys)]
    fn proxy_http_call(
        upstream_data: *const u8,
        upstream_size: usize,
        headers_data: *const u8,
        headers_size: usize,
        body_data: *const u8,
        body_size: usize,
        trailers_data: *const u8,
        trailers_size: usize,
        timeout_ms: u32,
        return_token: *mut u32,
    ) -> u32;
}

/// Envoy's status as a result: `Ok` or its code.
fn status(code: u32) -> Result<(), u32> {
    match code {
        OK => Ok(()),
        code => Err(code),
    }
}

/// Takes ownership of a buffer Envoy allocated in this module's memory.
///
/// # Safety
/// `data` is null, or `size` is 0, or `data` was returned by a host call
/// with `size`, allocated by [`proxy_on_memory_allocate`] with that same
/// `size` (a boxed slice of exactly `size` initialized bytes), and not
/// owned by anything else.
unsafe fn host_buffer(data: *mut u8, size: usize) -> Option<Vec<u8>> {
    // SAFETY: per this function's contract, either the capacity is 0 (a
    // Vec of capacity 0 neither reads nor frees its pointer, which is
    // non-null here), or `data` is a boxed `[u8]` of `size` initialized
    // bytes from the global allocator: the same layout as a Vec of length
    // and capacity `size`, which this Vec now owns and frees.
    (!data.is_null()).then(|| unsafe { Vec::from_raw_parts(data, size, size) })
}

/// What a host call that may find nothing returned: its buffer, `None` for
/// `NotFound`, or Envoy's status code.
///
/// # Safety
/// As [`host_buffer`]: `data` and `size` are what the host call that
/// returned `code` stored.
unsafe fn found(code: u32, data: *mut u8, size: usize) -> Result<Option<Vec<u8>>, u32> {
    match code {
        // SAFETY: per this function's contract (see host_buffer).
        OK => Ok(unsafe { host_buffer(data, size) }),
        NOT_FOUND => Ok(None),
        code => Err(code),
    }
}

/// A header map (`HTTP_REQUEST_HEADERS` or `HTTP_CALL_RESPONSE_HEADERS`),
/// serialized (see [`crate::input::HeaderMap`]); empty when Envoy has none.
/// An error is Envoy's status code.
pub fn header_map(map_type: u32) -> Result<Vec<u8>, u32> {
    let mut data = null_mut();
    let mut size = 0;
    // SAFETY: both out-pointers point to live locals; on Ok, Envoy stores a
    // buffer it allocated through this module's allocator and its size.
    status(unsafe { proxy_get_header_map_pairs(map_type, &mut data, &mut size) })?;
    // SAFETY: data and size come from the host call just made (see host_buffer).
    Ok(unsafe { host_buffer(data, size) }.unwrap_or_default())
}

/// A property's value, or `None` when Envoy has none for this request. An
/// error is Envoy's status code.
pub fn property(path: &[u8]) -> Result<Option<Vec<u8>>, u32> {
    let mut data = null_mut();
    let mut size = 0;
    // SAFETY: the path is a live slice for the call; both out-pointers point
    // to live locals; on Ok, Envoy stores a buffer it allocated through this
    // module's allocator and its size.
    let code = unsafe { proxy_get_property(path.as_ptr(), path.len(), &mut data, &mut size) };
    // SAFETY: data and size come from the host call just made.
    unsafe { found(code, data, size) }
}

/// Up to `max` bytes of a buffer (`HTTP_CALL_RESPONSE_BODY`, `PLUGIN_CONFIGURATION`) from its
/// start; `None` when Envoy has none. An error is Envoy's status code.
#[cfg(runtime_keys)]
pub fn buffer(buffer_type: u32, max: usize) -> Result<Option<Vec<u8>>, u32> {
    let mut data = null_mut();
    let mut size = 0;
    // SAFETY: both out-pointers point to live locals; on Ok, Envoy stores a
    // buffer it allocated through this module's allocator and its size.
    let code = unsafe { proxy_get_buffer_bytes(buffer_type, 0, max, &mut data, &mut size) };
    // SAFETY: data and size come from the host call just made.
    unsafe { found(code, data, size) }
}

/// Sets header `name` of `map_type` to `value`, replacing its values.
pub fn replace_header(map_type: u32, name: &str, value: &str) -> Result<(), u32> {
    // SAFETY: both slices are live for the call; Envoy copies them.
    status(unsafe {
        proxy_replace_header_map_value(map_type, name.as_ptr(), name.len(), value.as_ptr(), value.len())
    })
}

/// Adds a value of header `name` to `map_type`.
#[cfg(response_edits)]
pub fn add_header(map_type: u32, name: &str, value: &str) -> Result<(), u32> {
    // SAFETY: both slices are live for the call; Envoy copies them.
    status(unsafe {
        proxy_add_header_map_value(map_type, name.as_ptr(), name.len(), value.as_ptr(), value.len())
    })
}

/// The value of header `name` in `map_type`, `None` when it has none. An
/// error is Envoy's status code.
#[cfg(limits)]
pub fn header_value(map_type: u32, name: &str) -> Result<Option<Vec<u8>>, u32> {
    let mut data = null_mut();
    let mut size = 0;
    // SAFETY: the name is live for the call; both out-pointers point to
    // live locals; on Ok, Envoy stores a buffer it allocated through this
    // module's allocator and its size.
    let code =
        unsafe { proxy_get_header_map_value(map_type, name.as_ptr(), name.len(), &mut data, &mut size) };
    // SAFETY: data and size come from the host call just made.
    unsafe { found(code, data, size) }
}

/// Removes every value of header `name` from `map_type`.
pub fn remove_header(map_type: u32, name: &str) -> Result<(), u32> {
    // SAFETY: the slice is live for the call.
    status(unsafe { proxy_remove_header_map_value(map_type, name.as_ptr(), name.len()) })
}

/// Envoy's clock: nanoseconds since the Unix epoch.
pub fn now_nanos() -> Result<u64, u32> {
    let mut nanos = 0u64;
    // SAFETY: the out-pointer points to a live local.
    status(unsafe { proxy_get_current_time_nanoseconds(&mut nanos) })?;
    Ok(nanos)
}

/// Sends Envoy's local reply: `status_code`, exactly `fields`, `body`.
pub fn send_local_response(status_code: u32, fields: &[(&str, &str)], body: &[u8]) -> Result<(), u32> {
    let fields = serialize_pairs(fields);
    // SAFETY: the body and the serialized fields are live for the call (a
    // null, empty details string, as the SDK passes); Envoy copies them.
    // -1: no gRPC status.
    status(unsafe {
        proxy_send_local_response(
            status_code,
            null(),
            0,
            body.as_ptr(),
            body.len(),
            fields.as_ptr(),
            fields.len(),
            -1,
        )
    })
}

/// Writes a line to Envoy's log. A line Envoy refuses is dropped.
pub fn log(level: LogLevel, line: &str) {
    // SAFETY: the line is live for the call; Envoy copies it.
    let _ = unsafe { proxy_log(level as u32, line.as_ptr(), line.len()) };
}

/// Defines metric `name` of `kind` in Envoy's stats (as
/// `wasmcustom.<name>`): its id. Defining a name again gives the same
/// metric.
#[cfg(counting)]
pub fn define_metric(kind: MetricType, name: &str) -> Result<u32, u32> {
    let mut id = 0u32;
    // SAFETY: the name is live for the call; Envoy copies it; the
    // out-pointer points to a live local.
    status(unsafe { proxy_define_metric(kind as u32, name.as_ptr(), name.len(), &mut id) })?;
    Ok(id)
}

/// Adds `offset` to metric `id`.
#[cfg(counting)]
pub fn increment_metric(id: u32, offset: i64) -> Result<(), u32> {
    // SAFETY: no pointers.
    status(unsafe { proxy_increment_metric(id, offset) })
}

/// Sets gauge `id` to `value`.
#[cfg(counting)]
pub fn record_metric(id: u32, value: u64) -> Result<(), u32> {
    // SAFETY: no pointers.
    status(unsafe { proxy_record_metric(id, value) })
}

/// Asks Envoy to call the root context's tick every `period_ms`.
#[cfg(ticks)]
pub fn set_tick_period(period_ms: u32) -> Result<(), u32> {
    // SAFETY: no pointers.
    status(unsafe { proxy_set_tick_period_milliseconds(period_ms) })
}

/// Starts a request with `fields` and no body on Envoy's `cluster`; its
/// answer comes to `proxy_on_http_call_response` with the returned token.
#[cfg(runtime_keys)]
pub fn dispatch_http_call(cluster: &str, fields: &[(&str, &str)], timeout_ms: u32) -> Result<u32, u32> {
    let fields = serialize_pairs(fields);
    let trailers = serialize_pairs(&[]);
    let mut token = 0u32;
    // SAFETY: every slice is live for the call (a null, empty body); Envoy
    // copies them; the out-pointer points to a live local.
    status(unsafe {
        proxy_http_call(
            cluster.as_ptr(),
            cluster.len(),
            fields.as_ptr(),
            fields.len(),
            null(),
            0,
            trailers.as_ptr(),
            trailers.len(),
            timeout_ms,
            &mut token,
        )
    })?;
    Ok(token)
}
