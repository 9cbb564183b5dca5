//! The two host calls the filter makes on every request without the SDK's
//! wrappers, which copy each field into its own `String` and `Vec` and
//! build the property path in a new `Vec`: here the header map stays the
//! one buffer Envoy wrote, and the property paths are constants. This is
//! the crate's only `unsafe`.
#![allow(unsafe_code)]

use std::ptr::null_mut;

/// `connection.tls_version`, as a proxy-wasm property path (parts NUL-separated).
pub const TLS_VERSION: &[u8] = b"connection\0tls_version";

/// `source.address`, as a proxy-wasm property path.
pub const SOURCE_ADDRESS: &[u8] = b"source\0address";

/// proxy-wasm's `MapType::HttpRequestHeaders`.
const HTTP_REQUEST_HEADERS: u32 = 0;

/// proxy-wasm's `Status::Ok` and `Status::NotFound`.
const OK: u32 = 0;
const NOT_FOUND: u32 = 1;

unsafe extern "C" {
    fn proxy_get_header_map_pairs(map_type: u32, return_data: *mut *mut u8, return_size: *mut usize) -> u32;
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

/// The request's header map, serialized (see [`crate::input::HeaderMap`]);
/// empty when Envoy has none. An error is Envoy's status code.
pub fn request_headers() -> Result<Vec<u8>, u32> {
    let mut data = null_mut();
    let mut size = 0;
    // SAFETY: both out-pointers point to live locals; on Ok, Envoy stores a
    // buffer it allocated through this module's allocator and its size.
    let status = unsafe { proxy_get_header_map_pairs(HTTP_REQUEST_HEADERS, &mut data, &mut size) };
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
