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

/// Gives the core a fetched key document for `issuer` at `now_ms` (Envoy's
/// clock), with the response's `Cache-Control` value (`key_fetched`): what
/// it answers (1: fetch the URL it wrote next; 0: installed; else refused)
/// and what it wrote. Both fronts' fetches hand their documents over here;
/// the caller has refused a document longer than the core's buffer unread.
#[cfg(runtime_keys)]
pub(crate) fn hand_key_document(
    issuer: u8,
    document: &[u8],
    cache_control: &[u8],
    now_ms: u64,
) -> (i32, String) {
    INSTANCE.with(|cell| {
        let mut instance = cell.borrow_mut();
        let len = document.len().min(worker::keys::DOCUMENT_CAPACITY);
        instance.keys_input_mut()[..len].copy_from_slice(&document[..len]);
        // A value longer than the input buffer counts as none.
        let field = match instance.input_mut().get_mut(..cache_control.len()) {
            Some(slot) => {
                slot.copy_from_slice(cache_control);
                cache_control.len()
            }
            None => 0,
        };
        let now = now_ms as f64 / 1000.0;
        let answer = instance.key_fetched(
            u32::from(issuer),
            len as u32,
            field as u32,
            now,
            worker::abi::compiled_config(),
        );
        (answer, String::from_utf8_lossy(instance.output()).into_owned())
    })
}

/// The key sources the core lists (`key_sources`), each as its issuer and
/// its fetch's timeout; the line that cannot be read, when one cannot.
#[cfg(runtime_keys)]
pub(crate) fn key_sources() -> Result<Vec<(u8, u32)>, String> {
    INSTANCE.with(|cell| {
        let mut instance = cell.borrow_mut();
        instance.key_sources(worker::abi::compiled_config());
        contract::key_sources::decode(instance.output())
            .map(|source| source.map(|s| (s.issuer, s.timeout_ms)).map_err(|e| e.to_string()))
            .collect()
    })
}

/// Asks the core whether `issuer`'s round of fetches starts at `now_ms`,
/// for `why` (`key_fetch`: due, or asked for by a decision): what it
/// answers (1: fetch the URL it wrote; 0: not now; else an error) and what
/// it wrote.
#[cfg(runtime_keys)]
pub(crate) fn ask_key_fetch(issuer: u8, why: u32, now_ms: u64) -> (i32, String) {
    INSTANCE.with(|cell| {
        let mut instance = cell.borrow_mut();
        let now = now_ms as f64 / 1000.0;
        let answer = instance.key_fetch(u32::from(issuer), now, why, worker::abi::compiled_config());
        (answer, String::from_utf8_lossy(instance.output()).into_owned())
    })
}

/// Tells the core that `issuer`'s round failed at `now_ms` (`key_fetch_failed`):
/// it backs off before the next.
#[cfg(runtime_keys)]
pub(crate) fn key_fetch_failed(issuer: u8, now_ms: u64) {
    let now = now_ms as f64 / 1000.0;
    INSTANCE.with(|cell| {
        cell.borrow_mut().key_fetch_failed(u32::from(issuer), now, worker::abi::compiled_config())
    });
}
