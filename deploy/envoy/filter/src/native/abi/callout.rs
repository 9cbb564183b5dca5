//! The bindings for keys fetched at run time: a stream's HTTP callout
//! (`envoy_dynamic_module_callback_http_filter_http_callout`) and its
//! answer's hook, the stream held until then and let go on
//! (`..._continue_decoding`), and the gauges a fetch sets. Envoy 1.40
//! cancels a stream's callouts when the stream ends, so the stream that
//! starts a fetch waits for it (`super::super::keys`).

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{ConfigHandle, EnvoyBuffer, HttpHeader, ModuleBuffer, Stream, bytes, state};

/// `envoy_dynamic_module_type_http_callout_init_result_Success`.
const CALLOUT_STARTED: u32 = 0;

unsafe extern "C" {
    fn envoy_dynamic_module_callback_http_filter_http_callout(
        filter: *mut c_void,
        callout_id: *mut u64,
        cluster: ModuleBuffer,
        headers: *mut HttpHeader,
        headers_size: usize,
        body: ModuleBuffer,
        timeout_ms: u64,
    ) -> u32;
    fn envoy_dynamic_module_callback_http_filter_continue_decoding(filter: *mut c_void);
    fn envoy_dynamic_module_callback_http_filter_config_define_gauge(
        config: *mut c_void,
        name: ModuleBuffer,
        label_names: *mut ModuleBuffer,
        label_names_length: usize,
        gauge_id: *mut usize,
    ) -> u32;
    fn envoy_dynamic_module_callback_http_filter_set_gauge(
        filter: *mut c_void,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> u32;
}

/// What Envoy hands the module for one callout.
pub struct CalloutAnswer<'a> {
    /// `envoy_dynamic_module_type_http_callout_result`: 0 when a response
    /// came (`Success`), otherwise why none did (a reset, or a body past
    /// Envoy's buffer limit).
    pub result: u32,
    /// The response's fields, `:status` among them.
    pub fields: Vec<(&'a [u8], &'a [u8])>,
    /// The response's body, its chunks joined.
    pub body: Vec<u8>,
}

impl ConfigHandle {
    /// Defines gauge `name` with `labels`: its id, `None` when refused.
    pub fn define_gauge(&self, name: &str, labels: &[&str]) -> Option<usize> {
        self.define(envoy_dynamic_module_callback_http_filter_config_define_gauge, name, labels)
    }
}

impl Stream {
    /// Sends a request on `cluster` with `fields` and no body, answered in
    /// [`envoy_dynamic_module_on_http_filter_http_callout_done`] on this
    /// stream: the callout's id, or Envoy's refusal code.
    pub fn callout(&mut self, cluster: &str, fields: &[(&str, &str)], timeout_ms: u32) -> Result<u64, u32> {
        let mut headers = HttpHeader::list(fields);
        let mut id = 0u64;
        // SAFETY: the filter pointer of the running hook; the cluster name
        // and `headers` (pointing into `fields`) outlive the call, and Envoy
        // copies them into its request (abi.h: module buffers); `id` is a
        // valid place for the callout's id.
        let result = unsafe {
            envoy_dynamic_module_callback_http_filter_http_callout(
                self.0,
                &mut id,
                ModuleBuffer::of(cluster.as_bytes()),
                headers.as_mut_ptr(),
                headers.len(),
                ModuleBuffer::NULL,
                u64::from(timeout_ms),
            )
        };
        if result == CALLOUT_STARTED { Ok(id) } else { Err(result) }
    }

    /// Lets a held request go on through the filter chain.
    pub fn continue_decoding(&mut self) {
        // SAFETY: the filter pointer of the running hook, whose request
        // headers hook returned StopIteration.
        unsafe { envoy_dynamic_module_callback_http_filter_continue_decoding(self.0) }
    }

    /// Sets gauge `id` with label `values` to `value`. A refusal loses it.
    pub fn set_gauge(&self, id: usize, values: &[&str], value: u64) {
        let mut values: Vec<ModuleBuffer> = values.iter().map(|v| ModuleBuffer::of(v.as_bytes())).collect();
        // SAFETY: the filter pointer of the running hook (made from the
        // config that defined `id`); the buffers outlive the call.
        let _ = unsafe {
            envoy_dynamic_module_callback_http_filter_set_gauge(
                self.0,
                id,
                values.as_mut_ptr(),
                values.len(),
                value,
            )
        };
    }
}

/// A callout this stream started is answered.
#[unsafe(no_mangle)]
extern "C" fn envoy_dynamic_module_on_http_filter_http_callout_done(
    filter: *mut c_void,
    module: *const c_void,
    callout_id: u64,
    result: u32,
    headers: *const HttpHeader,
    headers_size: usize,
    body_chunks: *const EnvoyBuffer,
    body_chunks_size: usize,
) {
    // SAFETY: Envoy passes the stream's own module pointer, its streams'
    // hooks one at a time.
    let state = unsafe { state(module) };
    // SAFETY: Envoy's arrays of `headers_size` fields and `body_chunks_size`
    // chunks (or null), valid while this hook runs (abi.h), read only within it.
    let (headers, chunks) = unsafe { (slice(headers, headers_size), slice(body_chunks, body_chunks_size)) };
    // SAFETY: each entry's buffers are Envoy's, valid while this hook runs;
    // the slices live in `answer`, dropped before it returns.
    let field =
        |h: &HttpHeader| unsafe { (bytes(h.key_ptr, h.key_length), bytes(h.value_ptr, h.value_length)) };
    let fields = headers.iter().map(field).collect();
    let mut body = Vec::new();
    for chunk in chunks {
        // SAFETY: as for the fields: Envoy's chunk, valid while this hook runs.
        body.extend_from_slice(unsafe { bytes(chunk.ptr, chunk.length) });
    }
    let answer = CalloutAnswer { result, fields, body };
    let done = catch_unwind(AssertUnwindSafe(|| {
        super::super::on_callout_done(state, Stream(filter), callout_id, &answer)
    }));
    if done.is_err() {
        super::super::panicked(Stream(filter));
    }
}

/// The `len` items at `ptr`, none for a null pointer.
///
/// # Safety
///
/// A non-null `ptr` must point at `len` initialized items that outlive `'a`.
unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: as the function's contract says.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}
