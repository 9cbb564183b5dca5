//! The bindings to Envoy's dynamic modules ABI, written by hand: Envoy's
//! Rust SDK is not published on the package registries. Written for
//! **Envoy 1.40.0** (commit 9e5580933739775e8bce696a57a2e1bc99368f23),
//! whose `source/extensions/dynamic_modules/abi/abi.h` names its ABI
//! [`ABI_VERSION`]; only what this module uses is declared: the callbacks
//! it calls (`envoy_dynamic_module_callback_*`, resolved in Envoy's binary
//! when Envoy opens the module) and the event hooks Envoy looks up
//! (`envoy_dynamic_module_on_*`). Every hook hands its work at once to
//! the safe code in [`super`] with the types below, and catches a panic
//! there (unwinding out of an `extern "C"` function would abort Envoy).
//!
//! The version is checked twice: [`envoy_dynamic_module_on_program_init`]
//! returns it, and Envoy compares it with its own (it logs "ABI version
//! ... matched" at info when they agree); and the filter's configuration
//! the renderer writes names it, so that a bootstrap rendered for another
//! ABI is refused (`super::new_config`).
//!
//! This is the only module of the crate's native build with `unsafe` (with
//! its `callout`, the bindings for keys fetched at run time).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

#[cfg(runtime_keys)]
mod callout;
#[cfg(counting)]
mod ticks;
mod types;

#[cfg(runtime_keys)]
pub use callout::CalloutAnswer;
#[cfg(counting)]
pub use ticks::Scheduler;
pub use types::{Attribute, LogLevel, Map, Status};

/// The ABI these bindings follow: `ENVOY_DYNAMIC_MODULES_ABI_VERSION` of
/// Envoy 1.40.0's `abi.h`.
pub const ABI_VERSION: &str = "v0.2.0";

/// [`ABI_VERSION`] NUL-terminated, as `on_program_init` returns it.
static ABI_VERSION_NUL: &[u8] = b"v0.2.0\0";

/// `envoy_dynamic_module_type_envoy_buffer`: bytes Envoy owns.
#[repr(C)]
#[derive(Clone, Copy)]
struct EnvoyBuffer {
    ptr: *const c_char,
    length: usize,
}

/// `envoy_dynamic_module_type_module_buffer`: bytes the module owns.
#[repr(C)]
#[derive(Clone, Copy)]
struct ModuleBuffer {
    ptr: *const c_char,
    length: usize,
}

impl ModuleBuffer {
    fn of(bytes: &[u8]) -> Self {
        ModuleBuffer { ptr: bytes.as_ptr().cast(), length: bytes.len() }
    }

    /// A null buffer: for `set_header`, "remove the field".
    const NULL: ModuleBuffer = ModuleBuffer { ptr: std::ptr::null(), length: 0 };
}

/// `envoy_dynamic_module_type_envoy_http_header` and
/// `envoy_dynamic_module_type_module_http_header` (the same layout).
#[repr(C)]
#[derive(Clone, Copy)]
struct HttpHeader {
    key_ptr: *const c_char,
    key_length: usize,
    value_ptr: *const c_char,
    value_length: usize,
}

impl HttpHeader {
    /// `fields` as Envoy reads a header list: each entry points into the
    /// strings of `fields`, which must outlive the call they are given to.
    fn list(fields: &[(&str, &str)]) -> Vec<HttpHeader> {
        fields
            .iter()
            .map(|(name, value)| HttpHeader {
                key_ptr: name.as_ptr().cast(),
                key_length: name.len(),
                value_ptr: value.as_ptr().cast(),
                value_length: value.len(),
            })
            .collect()
    }
}

/// `envoy_dynamic_module_type_metrics_result_Success`.
#[cfg(any(counting, runtime_keys))]
const METRICS_SUCCESS: u32 = 0;

unsafe extern "C" {
    fn envoy_dynamic_module_callback_log(level: u32, message: ModuleBuffer);
    fn envoy_dynamic_module_callback_http_get_headers_size(filter: *mut c_void, map: u32) -> usize;
    fn envoy_dynamic_module_callback_http_get_headers(
        filter: *mut c_void,
        map: u32,
        result: *mut HttpHeader,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_set_header(
        filter: *mut c_void,
        map: u32,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_add_header(
        filter: *mut c_void,
        map: u32,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_send_response(
        filter: *mut c_void,
        status_code: u32,
        headers: *mut HttpHeader,
        headers_size: usize,
        body: ModuleBuffer,
        details: ModuleBuffer,
    );
    fn envoy_dynamic_module_callback_http_filter_get_attribute_string(
        filter: *mut c_void,
        attribute: u32,
        result: *mut EnvoyBuffer,
    ) -> bool;
    fn envoy_dynamic_module_callback_http_clear_route_cache(filter: *mut c_void);
    #[cfg(any(counting, runtime_keys))]
    fn envoy_dynamic_module_callback_http_filter_config_define_counter(
        config: *mut c_void,
        name: ModuleBuffer,
        label_names: *mut ModuleBuffer,
        label_names_length: usize,
        counter_id: *mut usize,
    ) -> u32;
    #[cfg(runtime_keys)]
    fn envoy_dynamic_module_callback_http_filter_increment_counter(
        filter: *mut c_void,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> u32;
}

/// Logs `line` in Envoy's `dynamic_modules` log.
pub fn log(level: LogLevel, line: &str) {
    // SAFETY: the buffer points at `line`, alive for the call; Envoy copies
    // what it logs and keeps no pointer (abi.h: a module buffer).
    unsafe { envoy_dynamic_module_callback_log(level as u32, ModuleBuffer::of(line.as_bytes())) }
}

/// Envoy's filter configuration while `on_http_filter_config_new` runs
/// (where counters are defined and the tick's scheduler made) or
/// `on_http_filter_config_scheduled` (where the tick's counts go). (A
/// build that neither counts nor fetches keys defines nothing on it.)
#[cfg_attr(not(any(counting, runtime_keys)), allow(dead_code))]
pub struct ConfigHandle(*mut c_void);

/// The shape of Envoy's calls that define a metric on a filter
/// configuration (`..._config_define_counter`, `..._config_define_gauge`).
#[cfg(any(counting, runtime_keys))]
type DefineMetric =
    unsafe extern "C" fn(*mut c_void, ModuleBuffer, *mut ModuleBuffer, usize, *mut usize) -> u32;

#[cfg(any(counting, runtime_keys))]
impl ConfigHandle {
    /// Defines counter `name` with `labels`: its id, `None` when refused.
    pub fn define_counter(&self, name: &str, labels: &[&str]) -> Option<usize> {
        self.define(envoy_dynamic_module_callback_http_filter_config_define_counter, name, labels)
    }

    /// Defines a metric `name` with `labels` by Envoy's call `define`: its
    /// id, `None` when refused.
    fn define(&self, define: DefineMetric, name: &str, labels: &[&str]) -> Option<usize> {
        let mut names: Vec<ModuleBuffer> = labels.iter().map(|l| ModuleBuffer::of(l.as_bytes())).collect();
        let mut id = 0usize;
        // SAFETY: `define` is one of Envoy's metric-defining calls, declared
        // with the signature abi.h gives them; `self.0` is the config
        // pointer Envoy passed to the hook that made this handle, which
        // lives only during that hook; `names` and `name` outlive the call,
        // `id` is a valid place for the result, and Envoy copies the names
        // (abi.h: module buffers).
        let result = unsafe {
            define(self.0, ModuleBuffer::of(name.as_bytes()), names.as_mut_ptr(), names.len(), &mut id)
        };
        (result == METRICS_SUCCESS).then_some(id)
    }
}

/// One stream's Envoy filter during one hook: its header maps, attributes,
/// local reply and counters. The field slices it returns borrow it, and the
/// calls that change a map take it mutably: Envoy's buffers are valid until
/// the hook ends or a map changes (abi.h), so none outlives either.
pub struct Stream(*mut c_void);

impl Stream {
    /// The fields of header map `map`, in Envoy's order; none when Envoy
    /// has none to give.
    pub fn fields(&self, map: Map) -> Vec<(&[u8], &[u8])> {
        // SAFETY: `self.0` is the filter pointer of the running hook.
        let count = unsafe { envoy_dynamic_module_callback_http_get_headers_size(self.0, map as u32) };
        let empty = HttpHeader {
            key_ptr: std::ptr::null(),
            key_length: 0,
            value_ptr: std::ptr::null(),
            value_length: 0,
        };
        let mut headers = vec![empty; count];
        // SAFETY: `headers` has room for the `count` entries Envoy writes
        // (abi.h's precondition: sized by get_headers_size, no change since).
        let filled = unsafe {
            envoy_dynamic_module_callback_http_get_headers(self.0, map as u32, headers.as_mut_ptr())
        };
        if !filled {
            return Vec::new();
        }
        // SAFETY: Envoy filled each entry with its map's own buffers, valid
        // until the hook ends or the map changes; the slices borrow `self`,
        // which outlives neither (a change takes `&mut self`).
        let field =
            |h: &HttpHeader| unsafe { (bytes(h.key_ptr, h.key_length), bytes(h.value_ptr, h.value_length)) };
        headers.iter().map(field).collect()
    }

    /// The string attribute `attribute`, when Envoy has it.
    pub fn attribute(&self, attribute: Attribute) -> Option<&[u8]> {
        let mut result = EnvoyBuffer { ptr: std::ptr::null(), length: 0 };
        // SAFETY: `self.0` is the filter pointer of the running hook, and
        // `result` a valid place for Envoy's answer.
        let found = unsafe {
            envoy_dynamic_module_callback_http_filter_get_attribute_string(
                self.0,
                attribute as u32,
                &mut result,
            )
        };
        // SAFETY: Envoy's buffer for the attribute, valid until the hook
        // ends; the slice borrows `self`, which does not outlive the hook.
        found.then(|| unsafe { bytes(result.ptr, result.length) })
    }

    /// Sets field `name` of `map` to `value` (every field of that name
    /// replaced); `None` removes them. False when Envoy refuses.
    pub fn set(&mut self, map: Map, name: &str, value: Option<&str>) -> bool {
        let value = value.map_or(ModuleBuffer::NULL, |v| ModuleBuffer::of(v.as_bytes()));
        // SAFETY: the filter pointer of the running hook, and buffers that
        // outlive the call; Envoy copies them into its map.
        unsafe {
            envoy_dynamic_module_callback_http_set_header(
                self.0,
                map as u32,
                ModuleBuffer::of(name.as_bytes()),
                value,
            )
        }
    }

    /// Adds `name: value` to `map`. False when Envoy refuses.
    pub fn add(&mut self, map: Map, name: &str, value: &str) -> bool {
        // SAFETY: as for `set`.
        unsafe {
            envoy_dynamic_module_callback_http_add_header(
                self.0,
                map as u32,
                ModuleBuffer::of(name.as_bytes()),
                ModuleBuffer::of(value.as_bytes()),
            )
        }
    }

    /// Sends Envoy's local reply: `status`, exactly `fields`, `body`.
    pub fn send_response(&mut self, status: u16, fields: &[(&str, &str)], body: &[u8]) {
        let mut headers = HttpHeader::list(fields);
        // SAFETY: the filter pointer of the running hook; `headers` and the
        // strings it points at, and `body`, outlive the call, and Envoy
        // copies them into its reply. No details (a null buffer, allowed).
        unsafe {
            envoy_dynamic_module_callback_http_send_response(
                self.0,
                u32::from(status),
                headers.as_mut_ptr(),
                headers.len(),
                ModuleBuffer::of(body),
                ModuleBuffer::NULL,
            )
        }
    }

    /// Makes Envoy choose the route again, with the fields as they are now.
    pub fn clear_route_cache(&mut self) {
        // SAFETY: the filter pointer of the running request hook.
        unsafe { envoy_dynamic_module_callback_http_clear_route_cache(self.0) }
    }

    /// Adds one to counter `id` with label `values` (as many as it was
    /// defined with). A refusal loses the count. (Decisions are counted on
    /// the tick; the key fetcher's rare counts go at once.)
    #[cfg(runtime_keys)]
    pub fn increment(&self, id: usize, values: &[&str]) {
        let mut values: Vec<ModuleBuffer> = values.iter().map(|v| ModuleBuffer::of(v.as_bytes())).collect();
        // SAFETY: the filter pointer of the running hook (made from the
        // config that defined `id`); the buffers outlive the call.
        let _ = unsafe {
            envoy_dynamic_module_callback_http_filter_increment_counter(
                self.0,
                id,
                values.as_mut_ptr(),
                values.len(),
                1,
            )
        };
    }
}

/// The bytes at `ptr` (`length` of them), empty for a null pointer.
///
/// # Safety
///
/// A non-null `ptr` must point at `length` bytes Envoy handed the running
/// hook, and `'a` must not outlive them (the hook's end, or a change to
/// the map they belong to).
unsafe fn bytes<'a>(ptr: *const c_char, length: usize) -> &'a [u8] {
    if ptr.is_null() || length == 0 {
        return &[];
    }
    // SAFETY: as the function's contract says.
    unsafe { std::slice::from_raw_parts(ptr.cast(), length) }
}

/// The module is loaded: its ABI version, which Envoy compares with its own.
#[unsafe(no_mangle)]
extern "C" fn envoy_dynamic_module_on_program_init() -> *const c_char {
    ABI_VERSION_NUL.as_ptr().cast()
}

/// A filter configuration: the module's, or null to make Envoy refuse it.
#[unsafe(no_mangle)]
extern "C" fn envoy_dynamic_module_on_http_filter_config_new(
    config: *mut c_void,
    name: EnvoyBuffer,
    value: EnvoyBuffer,
) -> *const c_void {
    let handle = ConfigHandle(config);
    // SAFETY: Envoy's buffers for the filter's name and configuration,
    // valid while this hook runs, and read only within it.
    let (name, value) = unsafe { (bytes(name.ptr, name.length), bytes(value.ptr, value.length)) };
    let made = catch_unwind(AssertUnwindSafe(|| super::new_config(&handle, name, value)));
    match made {
        Ok(Some(config)) => Box::into_raw(Box::new(config)).cast_const().cast(),
        _ => std::ptr::null(),
    }
}

/// A filter configuration is gone: the module's is dropped.
#[unsafe(no_mangle)]
extern "C" fn envoy_dynamic_module_on_http_filter_config_destroy(config: *const c_void) {
    // SAFETY: `config` is a pointer `on_http_filter_config_new` made with
    // `Box::into_raw`, handed back once, after every stream made from it
    // is destroyed (Envoy's streams hold its configuration).
    drop(unsafe { Box::from_raw(config.cast_mut().cast::<super::Config>()) });
}

/// A stream: its state in the module, which the stream's hooks get back.
#[unsafe(no_mangle)]
extern "C" fn envoy_dynamic_module_on_http_filter_new(
    config: *const c_void,
    _filter: *mut c_void,
) -> *const c_void {
    // SAFETY: a configuration `on_http_filter_config_new` made, which
    // Envoy destroys only after every stream made from it (its streams hold
    // the configuration): the reference outlives the stream's state. The
    // module never changes a configuration, so shared references across
    // worker threads are sound.
    let config = unsafe { &*config.cast::<super::Config>() };
    Box::into_raw(Box::new(super::StreamState::new(config))).cast_const().cast()
}

/// The stream's state of `module` for one hook.
///
/// # Safety
///
/// `module` must be a pointer `on_http_filter_new` made and not yet
/// destroyed; Envoy calls a stream's hooks one at a time, on its worker
/// thread, so the borrow is the only one while the hook runs.
unsafe fn state<'a>(module: *const c_void) -> &'a mut super::StreamState {
    // SAFETY: as the function's contract says.
    unsafe { &mut *module.cast_mut().cast::<super::StreamState>() }
}

/// A request's headers: decided, and the decision carried out.
#[unsafe(no_mangle)]
extern "C" fn envoy_dynamic_module_on_http_filter_request_headers(
    filter: *mut c_void,
    module: *const c_void,
    end_of_stream: bool,
) -> u32 {
    // SAFETY: Envoy passes the stream's own module pointer.
    let state = unsafe { state(module) };
    let status =
        catch_unwind(AssertUnwindSafe(|| super::on_request_headers(state, Stream(filter), !end_of_stream)));
    status.unwrap_or_else(|_| super::panicked(Stream(filter))) as u32
}

/// A response's headers: the forward's edits, if any.
#[unsafe(no_mangle)]
extern "C" fn envoy_dynamic_module_on_http_filter_response_headers(
    filter: *mut c_void,
    module: *const c_void,
    _end_of_stream: bool,
) -> u32 {
    // SAFETY: Envoy passes the stream's own module pointer.
    let state = unsafe { state(module) };
    let status = catch_unwind(AssertUnwindSafe(|| super::on_response_headers(state, Stream(filter))));
    status.unwrap_or_else(|_| super::panicked(Stream(filter))) as u32
}

/// The stream is over (before it is destroyed): a kept forward is counted.
#[unsafe(no_mangle)]
extern "C" fn envoy_dynamic_module_on_http_filter_stream_complete(
    filter: *mut c_void,
    module: *const c_void,
) {
    // SAFETY: Envoy passes the stream's own module pointer.
    let state = unsafe { state(module) };
    let _ = catch_unwind(AssertUnwindSafe(|| super::on_stream_complete(state, Stream(filter))));
}

/// A stream is gone: its state is dropped.
#[unsafe(no_mangle)]
extern "C" fn envoy_dynamic_module_on_http_filter_destroy(module: *const c_void) {
    // SAFETY: the stream's pointer from `on_http_filter_new`, handed back
    // once, after the stream's last hook.
    drop(unsafe { Box::from_raw(module.cast_mut().cast::<super::StreamState>()) });
}

/// The hooks this module has nothing to do in, which Envoy's loader
/// requires: each lets the stream go on.
mod idle {
    use std::ffi::c_void;

    /// `..._Continue` of every status type.
    const CONTINUE: u32 = 0;

    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_request_body(
        _: *mut c_void,
        _: *const c_void,
        _: bool,
    ) -> u32 {
        CONTINUE
    }
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_request_trailers(
        _: *mut c_void,
        _: *const c_void,
    ) -> u32 {
        CONTINUE
    }
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_response_body(
        _: *mut c_void,
        _: *const c_void,
        _: bool,
    ) -> u32 {
        CONTINUE
    }
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_response_trailers(
        _: *mut c_void,
        _: *const c_void,
    ) -> u32 {
        CONTINUE
    }
    /// A build that fetches keys answers callouts (`callout`).
    #[cfg(not(runtime_keys))]
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_http_callout_done(
        _: *mut c_void,
        _: *const c_void,
        _: u64,
        _: u32,
        _: *mut c_void,
        _: usize,
        _: *mut c_void,
        _: usize,
    ) {
    }
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_headers(
        _: *mut c_void,
        _: *const c_void,
        _: u64,
        _: *mut c_void,
        _: usize,
        _: bool,
    ) {
    }
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_data(
        _: *mut c_void,
        _: *const c_void,
        _: u64,
        _: *const c_void,
        _: usize,
        _: bool,
    ) {
    }
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_trailers(
        _: *mut c_void,
        _: *const c_void,
        _: u64,
        _: *mut c_void,
        _: usize,
    ) {
    }
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_complete(
        _: *mut c_void,
        _: *const c_void,
        _: u64,
    ) {
    }
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_http_stream_reset(
        _: *mut c_void,
        _: *const c_void,
        _: u64,
        _: u32,
    ) {
    }
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_scheduled(_: *mut c_void, _: *const c_void, _: u64) {}
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark(
        _: *mut c_void,
        _: *const c_void,
    ) {
    }
    #[unsafe(no_mangle)]
    extern "C" fn envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark(
        _: *mut c_void,
        _: *const c_void,
    ) {
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_envoy_reads_is_the_one_the_bindings_name() {
        assert_eq!(ABI_VERSION_NUL.strip_suffix(b"\0"), Some(ABI_VERSION.as_bytes()));
        // SAFETY: the hook returns a pointer to a static NUL-terminated string.
        let returned = unsafe { std::ffi::CStr::from_ptr(envoy_dynamic_module_on_program_init()) };
        assert_eq!(returned.to_bytes(), ABI_VERSION.as_bytes());
    }
}
