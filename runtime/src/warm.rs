//! What a host can do about a cold start's first request: a warm-up before
//! serving (one fixed request decided by the host itself, so that the first
//! client request does not pay what only a first request pays), and the
//! first instance's memory made resident in one system call.
//!
//! What a first request pays (docs/PERFORMANCE.md, "Cold start: where the
//! first request's time goes"): above all the pool's first reset of its
//! slot, which zeroes the whole memory it keeps resident and so faults in
//! every page the request never touched, and then the first touch of the
//! pages and the code the request does touch. The warm-up pays all of it
//! before the host listens: it moves that time, it does not remove it.

use crate::engine::{KEEP_RESIDENT, MemoryReset};
use crate::error::GuestError;
use crate::instance::Runtime;

/// The warm-up's request: a token in the shape the module verifies (an
/// HS256 header and claims) with a signature no key makes, so that the
/// module parses the head and decodes and checks the token before it
/// answers 401. It names no route and carries nothing of a client's.
pub const WARM_UP_HEAD: &[u8] = b"GET /warm-up HTTP/1.1\r\n\
Host: warm-up.invalid\r\n\
Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.\
eyJzdWIiOiJ3YXJtLXVwIiwiYXVkIjoid2FybS11cCIsImV4cCI6NDEwMjQ0NDgwMH0.\
AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n\
\r\n";

impl Runtime {
    /// Decides [`WARM_UP_HEAD`] in a fresh instance (the first instance,
    /// which the contract check made) and drops it, so that its pool slot
    /// is reset, resident and reused by the next request. The decision is
    /// discarded; a module that cannot decide it fails here, before the
    /// host serves. Call it once per runtime (and per sibling) before
    /// accepting requests.
    pub fn warm_up(&self) -> Result<(), GuestError> {
        self.decide_fresh(WARM_UP_HEAD, crate::input::unix_now()).map(drop)
    }
}

impl Runtime {
    /// Makes the first instance's linear memory resident in one system
    /// call, while that instance is still unused: true if it did. Only
    /// when the pool resets a dropped memory whole ([`MemoryReset::Whole`]),
    /// and only the part it keeps resident ([`KEEP_RESIDENT`]): those pages
    /// are all faulted in anyway, some by the first request and the rest by
    /// the pool's first reset of the slot, and one call costs less than a
    /// page fault for each. (A memory reset page by page leaves unwritten
    /// pages unmapped, which this would undo.)
    pub fn populate_first_memory(&self) -> bool {
        if self.memory_reset() != MemoryReset::Whole {
            return false;
        }
        self.with_spare_memory(|memory| {
            let kept = memory.len().min(KEEP_RESIDENT);
            populate(&mut memory[..kept])
        })
        .unwrap_or(false)
    }
}

#[cfg(target_os = "linux")]
fn populate(memory: &mut [u8]) -> bool {
    if memory.is_empty() {
        return false;
    }
    // SAFETY: the range is the instance's linear memory, mapped read-write
    // for as long as the borrow lasts (a wasm memory's base is page
    // aligned and its size a multiple of 64 KiB). MADV_POPULATE_WRITE only
    // faults the pages in; it changes no byte of them. A kernel without it
    // answers EINVAL and nothing happens. (`MADV_POPULATE_WRITE`, Linux
    // 5.14 and later, faults the range in as if written, in one call.)
    #[allow(unsafe_code)]
    let populated = unsafe {
        rustix::mm::madvise(memory.as_mut_ptr().cast(), memory.len(), rustix::mm::Advice::LinuxPopulateWrite)
    };
    populated.is_ok()
}

#[cfg(not(target_os = "linux"))]
fn populate(_memory: &mut [u8]) -> bool {
    false
}
