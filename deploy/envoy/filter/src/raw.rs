//! The host calls the filter makes without the SDK's wrappers. On every
//! request: the SDK's copy each field into its own `String` and `Vec` and
//! build the property path in a new `Vec`; here the header map stays the
//! one buffer Envoy wrote, and the property paths are constants. For a key
//! fetch's answer: the SDK's panic (a trap, which fails the VM for good)
//! on a field value that is not UTF-8 or a status they do not expect; here
//! the provider's bytes are bytes and every status is an error. This is the
//! crate's only `unsafe`.
#![allow(unsafe_code)]

use std::ptr::null_mut;

/// `connection.tls_version`, as a proxy-wasm property path (parts NUL-separated).
pub const TLS_VERSION: &[u8] = b"connection\0tls_version";

/// `source.address`, as a proxy-wasm property path.
pub const SOURCE_ADDRESS: &[u8] = b"source\0address";

/// proxy-wasm's `MapType::HttpRequestHeaders`.
pub const HTTP_REQUEST_HEADERS: u32 = 0;

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

unsafe extern "C" {
    fn proxy_get_header_map_pairs(map_type: u32, return_data: *mut *mut u8, return_size: *mut usize) -> u32;
    #[cfg(runtime_keys)]
    fn proxy_get_buffer_bytes(
        buffer_type: u32,
        start: usize,
        max_size: usize,
        return_data: *mut *mut u8,
        return_size: *mut usize,
    ) -> u32;
    fn proxy_get_property(
        path_data: *const u8,
        path_size: usize,
        return_data: *mut *mut u8,
        return_size: *mut usize,
    ) -> u32;
}

/// Takes ownership of a buffer Envoy allocated in this module's memory.
///
/// # Safety
/// `data` is null or was returned by a host call with `size`, allocated by
/// the SDK's `proxy_on_memory_allocate` (a boxed slice of exactly `size`
/// bytes) and not owned by anything else.
unsafe fn host_buffer(data: *mut u8, size: usize) -> Option<Vec<u8>> {
    // SAFETY: per this function's contract, a boxed slice of `size` bytes is
    // a Vec of length and capacity `size`, which this Vec now owns and frees.
    (!data.is_null()).then(|| unsafe { Vec::from_raw_parts(data, size, size) })
}

/// A header map (`HTTP_REQUEST_HEADERS` or `HTTP_CALL_RESPONSE_HEADERS`),
/// serialized (see [`crate::input::HeaderMap`]); empty when Envoy has none.
/// An error is Envoy's status code.
pub fn header_map(map_type: u32) -> Result<Vec<u8>, u32> {
    let mut data = null_mut();
    let mut size = 0;
    // SAFETY: both out-pointers point to live locals; on Ok, Envoy stores a
    // buffer it allocated through this module's allocator and its size.
    let status = unsafe { proxy_get_header_map_pairs(map_type, &mut data, &mut size) };
    match status {
        // SAFETY: data and size come from the host call just made (see host_buffer).
        OK => Ok(unsafe { host_buffer(data, size) }.unwrap_or_default()),
        code => Err(code),
    }
}

/// A property's value, or `None` when Envoy has none for this request. An
/// error is Envoy's status code.
pub fn property(path: &[u8]) -> Result<Option<Vec<u8>>, u32> {
    let mut data = null_mut();
    let mut size = 0;
    // SAFETY: the path is a live slice for the call; both out-pointers point
    // to live locals; on Ok, Envoy stores a buffer it allocated through this
    // module's allocator and its size.
    let status = unsafe { proxy_get_property(path.as_ptr(), path.len(), &mut data, &mut size) };
    match status {
        // SAFETY: data and size come from the host call just made (see host_buffer).
        OK => Ok(unsafe { host_buffer(data, size) }),
        NOT_FOUND => Ok(None),
        code => Err(code),
    }
}

/// Up to `max` bytes of a buffer (`HTTP_CALL_RESPONSE_BODY`, `PLUGIN_CONFIGURATION`) from its
/// start; `None` when Envoy has none. An error is Envoy's status code.
#[cfg(runtime_keys)]
pub fn buffer(buffer_type: u32, max: usize) -> Result<Option<Vec<u8>>, u32> {
    let mut data = null_mut();
    let mut size = 0;
    // SAFETY: both out-pointers point to live locals; on Ok, Envoy stores a
    // buffer it allocated through this module's allocator and its size.
    let status = unsafe { proxy_get_buffer_bytes(buffer_type, 0, max, &mut data, &mut size) };
    match status {
        // SAFETY: data and size come from the host call just made (see host_buffer).
        OK => Ok(unsafe { host_buffer(data, size) }),
        NOT_FOUND => Ok(None),
        code => Err(code),
    }
}
