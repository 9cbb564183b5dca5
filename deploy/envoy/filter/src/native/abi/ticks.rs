//! The bindings for counting on a tick: a filter configuration's scheduler
//! (`envoy_dynamic_module_callback_http_filter_config_scheduler_*`), whose
//! commit, from any thread, has Envoy's main thread call the
//! configuration's hook ([`envoy_dynamic_module_on_http_filter_config_scheduled`]),
//! and the configuration's own counter call, which that hook makes
//! (`..._config_increment_counter`: no stream needed). Declared as Envoy
//! 1.40.0's `abi.h` gives them: the configuration's counter call takes the
//! stream's arguments with the configuration in the stream's place (in
//! Envoy 1.40's binary both check the label count and the id alike before
//! they reach the counter).

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{ConfigHandle, METRICS_SUCCESS, ModuleBuffer};

unsafe extern "C" {
    fn envoy_dynamic_module_callback_http_filter_config_scheduler_new(config: *mut c_void) -> *mut c_void;
    fn envoy_dynamic_module_callback_http_filter_config_scheduler_delete(scheduler: *mut c_void);
    fn envoy_dynamic_module_callback_http_filter_config_scheduler_commit(
        scheduler: *mut c_void,
        event_id: u64,
    );
    fn envoy_dynamic_module_callback_http_filter_config_increment_counter(
        config: *mut c_void,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> u32;
}

/// A filter configuration's scheduler: each [`Scheduler::commit`] has
/// Envoy's main thread run the configuration's scheduled hook once.
/// Deleted when dropped.
pub struct Scheduler(*mut c_void);

// SAFETY: the pointer is Envoy's scheduler object, which the module only
// hands back to Envoy: abi.h allows `..._config_scheduler_commit` from any
// thread (Envoy posts the event to its main thread's dispatcher, which is
// thread-safe, and the scheduler holds only a weak reference to the
// configuration), and `Drop` deletes it once, after the last commit.
unsafe impl Send for Scheduler {}
// SAFETY: as for `Send`: `commit` through a shared reference is a post to
// Envoy's dispatcher, safe from several threads at once.
unsafe impl Sync for Scheduler {}

impl Scheduler {
    /// Asks Envoy to run the configuration's scheduled hook on its main thread.
    pub fn commit(&self) {
        // SAFETY: `self.0` is a live scheduler from `scheduler_new` (deleted
        // only by `Drop`), and commit may be called from any thread.
        unsafe { envoy_dynamic_module_callback_http_filter_config_scheduler_commit(self.0, 0) }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        // SAFETY: the scheduler `scheduler_new` made, deleted once.
        unsafe { envoy_dynamic_module_callback_http_filter_config_scheduler_delete(self.0) }
    }
}

impl ConfigHandle {
    /// The configuration's scheduler; `None` when Envoy gives none.
    pub fn scheduler(&self) -> Option<Scheduler> {
        // SAFETY: `self.0` is the configuration pointer of the running hook
        // (`on_http_filter_config_new`), which abi.h lets make a scheduler.
        let scheduler = unsafe { envoy_dynamic_module_callback_http_filter_config_scheduler_new(self.0) };
        (!scheduler.is_null()).then_some(Scheduler(scheduler))
    }

    /// Adds `delta` to counter `id` with label `values` (as many as it was
    /// defined with). False when Envoy refuses: the count is lost.
    pub fn increment(&self, id: usize, values: &[&str], delta: u64) -> bool {
        let mut buffers = [ModuleBuffer::of(&[]); 4];
        let Some(buffers) = buffers.get_mut(..values.len()) else { return false };
        for (buffer, value) in buffers.iter_mut().zip(values) {
            *buffer = ModuleBuffer::of(value.as_bytes());
        }
        // SAFETY: `self.0` is the configuration pointer of the running hook
        // (`on_http_filter_config_scheduled`, on Envoy's main thread); the
        // buffers and the strings they point at outlive the call, and
        // Envoy copies the values it keeps (abi.h: module buffers).
        let result = unsafe {
            envoy_dynamic_module_callback_http_filter_config_increment_counter(
                self.0,
                id,
                buffers.as_mut_ptr(),
                buffers.len(),
                delta,
            )
        };
        result == METRICS_SUCCESS
    }
}

/// A scheduler's event: the configuration hands Envoy its counts.
#[unsafe(no_mangle)]
extern "C" fn envoy_dynamic_module_on_http_filter_config_scheduled(
    config_envoy: *mut c_void,
    config: *const c_void,
    _event_id: u64,
) {
    let handle = ConfigHandle(config_envoy);
    // SAFETY: `config` is the pointer `on_http_filter_config_new` made,
    // which Envoy passes with its own configuration object; Envoy runs a
    // scheduled event only while that object lives (the scheduler holds a
    // weak reference to it), and destroys the module's configuration only
    // with it. The module never changes a configuration through a shared
    // reference other than behind its locks.
    let config = unsafe { &*config.cast::<crate::native::Config>() };
    // A panic loses this tick's counts, never Envoy.
    let _ = catch_unwind(AssertUnwindSafe(|| crate::native::on_tick(&handle, config)));
}
