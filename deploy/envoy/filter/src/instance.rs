//! The VM's one core instance, which its request contexts decide with and
//! its root context installs fetched keys into. In the native module, one
//! per Envoy worker thread, as Envoy runs one VM per worker.

use std::cell::RefCell;

use worker::abi::Instance;

thread_local! {
    /// The core's buffers, shared by every request of this VM (and by its
    /// key fetches): Envoy calls a VM from one thread, and a request is
    /// decided within one call. A const initializer puts the instance
    /// (64 KiB) in zeroed static memory: built at run time it would pass
    /// through the stack.
    pub(crate) static INSTANCE: RefCell<Instance> = const { RefCell::new(Instance::new()) };
}
