//! The limits of a Store: the memory cap (a [`ResourceLimiter`]) and the
//! CPU deadline (epoch interruption, counted on the thread's CPU clock),
//! with the ticker thread that advances the epoch.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::{Engine, EngineWeak, ResourceLimiter};

/// What a Store carries: its limits, and the CPU clock of the call under way.
#[derive(Debug)]
pub struct HostState {
    /// The memory cap, which wasmtime asks before every grow.
    pub(crate) limits: MemoryLimiter,
    /// The CPU deadline of the call under way.
    pub(crate) cpu: CpuDeadline,
}

impl HostState {
    /// The limits of a new Store: `memory_cap` bytes, `cpu_budget` of the
    /// calling thread's CPU per call (zero: the clock is never read).
    pub(crate) fn new(memory_cap: usize, cpu_budget: Duration) -> HostState {
        HostState {
            limits: MemoryLimiter { cap: memory_cap },
            cpu: CpuDeadline { budget: cpu_budget, call_started: None },
        }
    }
}

/// The CPU deadline of one call, counted on the calling thread's CPU clock.
///
/// The epoch ticker measures wall-clock time, which also counts time the
/// thread spends waiting for a core: on a busy machine a 2 ms wall-clock
/// deadline would stop requests that used far less CPU. So an epoch deadline
/// only makes the host look: the callback reads the thread's CPU time and
/// lets the guest go on, one tick at a time, until the guest itself has used
/// the budget.
///
/// The clock is read only when the epoch deadline passes, never on a call's
/// way in: reading the thread's CPU clock is a system call (the vDSO does
/// not serve it), which was a tenth of a reused instance's request. So the
/// budget counts from the first look, which comes once the call has run the
/// deadline in wall-clock time, and so after at most that much CPU: a guest
/// is stopped after between one and two budgets of its own CPU time (plus a
/// tick), and a request that used less than one budget is never stopped.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CpuDeadline {
    budget: Duration,
    /// The calling thread's CPU clock at the call's first look (None: no
    /// look yet). A reading, not a `ThreadTime` (which may not leave its
    /// thread), so that a Store can be made on one thread and used on
    /// another; each call is on one thread.
    call_started: Option<Duration>,
}

impl CpuDeadline {
    /// Notes the start of a call: the budget counts from the first look.
    pub(crate) fn start_call(&mut self) {
        self.call_started = None;
    }

    /// What to do when an epoch deadline passes during a call.
    pub(crate) fn on_epoch_deadline(&mut self) -> wasmtime::UpdateDeadline {
        // No CPU clock to tell: stop the guest.
        let Some(now) = thread_cpu_time(self.budget) else {
            return wasmtime::UpdateDeadline::Interrupt;
        };
        match self.call_started {
            // The first look of this call (or of wasm outside a call:
            // instantiating runs compiled code when a memory has no
            // copy-on-write image). The budget starts here.
            None => {
                self.call_started = Some(now);
                wasmtime::UpdateDeadline::Continue(1)
            }
            Some(start) if now.saturating_sub(start) < self.budget => wasmtime::UpdateDeadline::Continue(1),
            Some(_) => wasmtime::UpdateDeadline::Interrupt,
        }
    }
}

/// The calling thread's CPU clock, read only when there is a budget to
/// count against (None otherwise, or when the clock cannot be read).
fn thread_cpu_time(budget: Duration) -> Option<Duration> {
    if budget.is_zero() {
        return None;
    }
    cpu_time::ThreadTime::try_now().ok().map(|t| t.as_duration())
}

/// Caps an instance's linear memory. Growing past the cap is a trap carrying
/// [`MemoryCapExceeded`], so the host can tell it from other traps.
#[derive(Debug, Clone, Copy)]
pub struct MemoryLimiter {
    cap: usize,
}

/// The error a grow past the cap traps with.
#[derive(Debug, thiserror::Error)]
#[error("memory grow to {desired} bytes exceeds the cap of {cap} bytes")]
pub struct MemoryCapExceeded {
    /// The size asked for.
    pub desired: usize,
    /// The cap.
    pub cap: usize,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            return Err(wasmtime::Error::new(MemoryCapExceeded { desired, cap: self.cap }));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // The gateway never grows its table; allow a little for other modules.
        Ok(desired <= 4096)
    }

    // One instance, one memory, one table per Store.
    fn instances(&self) -> usize {
        1
    }
    fn memories(&self) -> usize {
        1
    }
    fn tables(&self) -> usize {
        1
    }
}

/// A background thread that increments the epoch of its engines every
/// `period`, which is what makes deadlines fire. One thread serves a
/// runtime and every sibling made from it ([`Ticker::add`]); an engine
/// dropped elsewhere is forgotten at the next tick. It stops when dropped,
/// that is when the last runtime sharing it is.
pub struct Ticker {
    engines: Arc<Mutex<Vec<EngineWeak>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Starts ticking `engine`'s epoch every `period`. Fails when the thread
    /// cannot be started: without it no deadline would ever fire.
    pub fn start(engine: &Engine, period: Duration) -> std::io::Result<Ticker> {
        let engines = Arc::new(Mutex::new(vec![engine.weak()]));
        let stop = Arc::new(AtomicBool::new(false));
        let (ticked, flag) = (Arc::clone(&engines), Arc::clone(&stop));
        let thread = std::thread::Builder::new().name("epoch-ticker".into()).spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(period);
                lock(&ticked).retain(|weak| weak.upgrade().map(|engine| engine.increment_epoch()).is_some());
            }
        })?;
        Ok(Ticker { engines, stop, thread: Some(thread) })
    }

    /// Ticks `engine`'s epoch too, from the next tick on.
    pub fn add(&self, engine: &Engine) {
        lock(&self.engines).push(engine.weak());
    }

    /// How many engines it still ticks (an engine dropped since the last
    /// tick is counted until that tick).
    pub fn engines(&self) -> usize {
        lock(&self.engines).len()
    }
}

/// The list of engines; a panic while it was held (there is none to make)
/// leaves a list that is still whole.
fn lock(engines: &Mutex<Vec<EngineWeak>>) -> MutexGuard<'_, Vec<EngineWeak>> {
    engines.lock().unwrap_or_else(PoisonError::into_inner)
}

impl std::fmt::Debug for Ticker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticker").field("engines", &self.engines()).finish()
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spends `cpu` of this thread's CPU time.
    fn burn(cpu: Duration) {
        let start = cpu_time::ThreadTime::now();
        let mut x = 0u64;
        while start.elapsed() < cpu {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
    }

    #[test]
    fn the_budget_counts_from_the_first_look_of_each_call() {
        let mut deadline = CpuDeadline { budget: Duration::from_millis(2), call_started: None };
        deadline.start_call();
        // The first look of a call starts its budget, however long it ran.
        assert!(matches!(deadline.on_epoch_deadline(), wasmtime::UpdateDeadline::Continue(1)));
        assert!(matches!(deadline.on_epoch_deadline(), wasmtime::UpdateDeadline::Continue(1)));
        burn(Duration::from_millis(3));
        assert!(matches!(deadline.on_epoch_deadline(), wasmtime::UpdateDeadline::Interrupt));
        // A new call does not inherit the last one's start.
        deadline.start_call();
        assert!(matches!(deadline.on_epoch_deadline(), wasmtime::UpdateDeadline::Continue(1)));
    }

    #[test]
    fn without_a_budget_a_look_stops_the_guest() {
        let mut deadline = CpuDeadline { budget: Duration::ZERO, call_started: None };
        deadline.start_call();
        assert!(matches!(deadline.on_epoch_deadline(), wasmtime::UpdateDeadline::Interrupt));
    }
}
