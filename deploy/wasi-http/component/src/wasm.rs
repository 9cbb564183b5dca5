//! What the `no_std` component needs of its own (wasm32 only): its one
//! state, the allocator, the panic handler. With `bindings`, the crate's
//! only `unsafe`.
#![allow(unsafe_code)]

use worker::abi::Instance;

use crate::overrides::Overrides;

/// What the component keeps between the calls of one instance: the core's
/// buffers, the upstream overrides, the key fetches' schedules, and the
/// rate-limit buckets.
/// `wasmtime serve` makes a fresh instance for each request unless told to
/// reuse them.
pub(crate) struct State {
    pub instance: Instance,
    pub overrides: Overrides,
    #[cfg(runtime_keys)]
    pub keys: crate::keys::Sources,
    #[cfg(policy_limits)]
    pub counter: crate::counter::Counter,
}

impl State {
    /// The state of a fresh instance (in static memory, zeroed).
    pub const fn new() -> Self {
        State {
            instance: Instance::new(),
            overrides: Overrides::new(),
            #[cfg(runtime_keys)]
            keys: crate::keys::Sources::new(),
            #[cfg(policy_limits)]
            counter: crate::counter::Counter::new(),
        }
    }
}

/// The heap of the bindings' lists and strings and of the forward's
/// fields: talc over the memory the module grows.
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

static mut STATE: State = State::new();

/// The instance's state, for the one call under way.
pub(crate) fn state() -> &'static mut State {
    // SAFETY: wasm32-unknown-unknown without the atomics feature runs one
    // thread per instance, and a wasi:http 0.2 handler is not reentrant: the
    // runtime calls the export once at a time and nothing the component
    // imports calls back into it. The export takes this reference once per
    // call, passes it down and drops it before returning, so at most one
    // reference to STATE exists at a time.
    unsafe { &mut *core::ptr::addr_of_mut!(STATE) }
}

/// With `upstream-override` the contract's override parser links std,
/// whose panic handler (it formats the message, then aborts) takes this
/// one's place: a panic traps either way.
#[cfg(not(feature = "upstream-override"))]
#[panic_handler]
fn on_panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // A panic is a bug; trapping makes the runtime answer 500 and drop the
    // instance.
    core::arch::wasm32::unreachable()
}
