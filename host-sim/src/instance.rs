//! Instances and their limits: the contract check, the `InstancePre` built
//! once, the per-Store memory limiter and CPU deadline, and deciding one
//! request in either isolation mode.
//!
//! ```no_run
//! use host_sim::engine::{EngineOptions, ModuleSource};
//! use host_sim::instance::{Reusable, Runtime};
//! let runtime = Runtime::load(&EngineOptions::default(), &ModuleSource::Wasm("dist/gateway.wasm".into()), 4)?;
//! let head: &[u8] = b"GET / HTTP/1.1\r\nHost: gw\r\n\r\n";
//! let fresh = runtime.decide_fresh(head, 1.8e9);
//! let mut slot = Reusable::default();
//! let reused = runtime.decide_reused(&mut slot, head, 1.8e9);
//! assert_eq!(fresh, reused);
//! # Ok::<(), host_sim::error::LoadError>(())
//! ```

use wasmtime::{
    Engine, ExternType, InstancePre, Linker, Memory, Module, ModuleExport, ResourceLimiter, Store, Trap,
    TypedFunc, ValType,
};

use contract::ABI_VERSION;
use contract::owned::DecisionBuf;

use crate::engine::{self, EngineOptions, ModuleSource, Ticker};
use crate::error::{GuestError, LoadError, one_line};
use crate::input::{Input, MAX_CONTEXT_LINE};

/// The result of deciding one request: the module's decision, or why there is none.
pub type Outcome = Result<DecisionBuf, GuestError>;

/// What a Store carries: its limits, and the CPU clock of the call under way.
#[derive(Debug)]
pub struct HostState {
    limits: MemoryLimiter,
    cpu: CpuDeadline,
}

/// The CPU deadline of one call, counted on the calling thread's CPU clock.
///
/// The epoch ticker measures wall-clock time, which also counts time the
/// thread spends waiting for a core: on a busy machine a 2 ms wall-clock
/// deadline would stop requests that used far less CPU. So an epoch deadline
/// only makes the host look: the callback reads the thread's CPU time and
/// lets the guest go on, one tick at a time, until the guest itself has used
/// the budget. Reading the thread's CPU clock costs one system call (about
/// 0.2 us) per request.
#[derive(Debug, Clone, Copy, Default)]
struct CpuDeadline {
    budget: std::time::Duration,
    /// The calling thread's CPU clock when the call began (None: outside a
    /// call). A reading, not a `ThreadTime` (which may not leave its
    /// thread), so that a Store can be made on one thread and used on
    /// another; each call is on one thread.
    call_started: Option<std::time::Duration>,
}

impl CpuDeadline {
    /// What to do when an epoch deadline passes during a call.
    fn on_epoch_deadline(&mut self) -> wasmtime::UpdateDeadline {
        // No CPU clock to tell: stop the guest.
        let Some(now) = thread_cpu_time(self.budget) else {
            return wasmtime::UpdateDeadline::Interrupt;
        };
        match self.call_started {
            // Wasm outside a call: instantiating runs compiled code when a
            // memory has no copy-on-write image (wasmtime initialises it
            // that way). Its budget starts at this first look.
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
fn thread_cpu_time(budget: std::time::Duration) -> Option<std::time::Duration> {
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

/// The exports of the contract, resolved to indices once per module so that
/// each instance finds them without a name lookup.
#[derive(Clone)]
struct Exports {
    memory: ModuleExport,
    abi_version: ModuleExport,
    input_ptr: ModuleExport,
    input_capacity: ModuleExport,
    handle: ModuleExport,
    /// Checked after `abi_version`, so that a module of another version is
    /// refused for its version, not for an export that version lacks.
    routes: Option<ModuleExport>,
    output_ptr: ModuleExport,
    output_len: ModuleExport,
}

impl Exports {
    /// Checks that the module imports nothing and exports the contract with
    /// the right types.
    fn resolve(module: &Module) -> Result<Exports, LoadError> {
        if let Some(import) = module.imports().next() {
            return Err(LoadError::HasImports(format!("{}::{}", import.module(), import.name())));
        }
        let func = |name: &'static str, params: &[ValType], results: &[ValType]| {
            let export = module.get_export(name).ok_or(LoadError::MissingExport(name))?;
            match export {
                // Compared type by type: this runs on every cold start, so the
                // signature is spelled out only for the error.
                ExternType::Func(ty) => {
                    if !same_types(ty.params(), params) || !same_types(ty.results(), results) {
                        let found_params: Vec<ValType> = ty.params().collect();
                        let found_results: Vec<ValType> = ty.results().collect();
                        return Err(LoadError::ExportType {
                            name,
                            expected: expected_signature(name),
                            found: format!("a function {}", signature(&found_params, &found_results)),
                        });
                    }
                }
                other => {
                    return Err(LoadError::ExportType {
                        name,
                        expected: expected_signature(name),
                        found: kind(&other).into(),
                    });
                }
            }
            module.get_export_index(name).ok_or(LoadError::MissingExport(name))
        };
        let i32_ = [ValType::I32];
        let exports = Exports {
            abi_version: func("abi_version", &[], &i32_)?,
            input_ptr: func("input_ptr", &[], &i32_)?,
            input_capacity: func("input_capacity", &[], &i32_)?,
            handle: func("handle", &[ValType::I32, ValType::F64], &i32_)?,
            routes: match module.get_export("routes") {
                None => None,
                Some(_) => Some(func("routes", &[], &i32_)?),
            },
            output_ptr: func("output_ptr", &[], &i32_)?,
            output_len: func("output_len", &[], &i32_)?,
            memory: match module.get_export("memory") {
                None => return Err(LoadError::MissingExport("memory")),
                Some(ExternType::Memory(_)) => {
                    module.get_export_index("memory").ok_or(LoadError::MissingExport("memory"))?
                }
                Some(other) => {
                    return Err(LoadError::ExportType {
                        name: "memory",
                        expected: "a memory",
                        found: kind(&other).into(),
                    });
                }
            },
        };
        Ok(exports)
    }
}

fn expected_signature(name: &str) -> &'static str {
    match name {
        "handle" => "a function (i32, f64) -> i32",
        _ => "a function () -> i32",
    }
}

/// True when `found` is exactly the types `expected`, in order.
fn same_types(found: impl ExactSizeIterator<Item = ValType>, expected: &[ValType]) -> bool {
    found.len() == expected.len() && found.zip(expected).all(|(f, e)| ValType::eq(&f, e))
}

fn signature(params: &[ValType], results: &[ValType]) -> String {
    let list = |types: &[ValType]| types.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
    format!("({}) -> {}", list(params), list(results))
}

fn kind(ty: &ExternType) -> &'static str {
    match ty {
        ExternType::Func(_) => "a function",
        ExternType::Global(_) => "a global",
        ExternType::Table(_) => "a table",
        ExternType::Memory(_) => "a memory",
        _ => "another kind of export",
    }
}

/// The input buffer's place, read once from the first instance: the
/// contract says it never changes, and every instance of a module has the
/// same static layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// `input_ptr()`.
    pub input_ptr: u32,
    /// `input_capacity()`.
    pub input_capacity: u32,
}

/// Everything needed to run requests: the engine, the module, the
/// `InstancePre` built once, the resolved exports, the limits and the epoch
/// ticker. Share it between threads (it is `Sync`); each request or thread
/// brings its own Store.
pub struct Runtime {
    engine: Engine,
    module: Module,
    pre: InstancePre<HostState>,
    exports: Exports,
    layout: Layout,
    memory_cap: usize,
    deadline_ticks: Option<u64>,
    cpu_budget: std::time::Duration,
    _ticker: Option<Ticker>,
    /// The instance the contract check made, kept for the first request
    /// (see [`Runtime::take_spare`]).
    spare: std::sync::Mutex<Option<Slot>>,
    /// Set once the spare is taken, so that later requests skip the lock.
    spare_taken: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("layout", &self.layout)
            .field("memory_cap", &self.memory_cap)
            .field("deadline_ticks", &self.deadline_ticks)
            .finish_non_exhaustive()
    }
}

/// The checked module with its `InstancePre`, before the first instance.
pub struct Prepared {
    engine: Engine,
    module: Module,
    pre: InstancePre<HostState>,
    exports: Exports,
}

impl Prepared {
    /// Checks the contract (no imports, the exports and their types) and
    /// builds the `InstancePre` (import resolution done once, for all instances).
    pub fn new(engine: &Engine, module: &Module) -> Result<Prepared, LoadError> {
        let exports = Exports::resolve(module)?;
        let linker = Linker::<HostState>::new(engine);
        let pre = linker.instantiate_pre(module).map_err(|e| LoadError::Instantiate(one_line(&e)))?;
        Ok(Prepared { engine: engine.clone(), module: module.clone(), pre, exports })
    }

    /// Makes the first instance, checks its `abi_version` and reads the input
    /// buffer's place. The epoch ticker is not started: call
    /// [`Runtime::start_ticker`] (as [`Runtime::load`] does) for deadlines to fire.
    pub fn probe(self, options: &EngineOptions) -> Result<Runtime, LoadError> {
        let mut runtime = Runtime {
            engine: self.engine,
            module: self.module,
            pre: self.pre,
            exports: self.exports,
            layout: Layout { input_ptr: 0, input_capacity: 0 },
            memory_cap: usize::try_from(options.memory_cap).unwrap_or(usize::MAX),
            deadline_ticks: options.deadline().map(|_| engine::TICKS_PER_DEADLINE),
            cpu_budget: options.deadline().unwrap_or_default(),
            _ticker: None,
            spare: std::sync::Mutex::new(None),
            spare_taken: std::sync::atomic::AtomicBool::new(false),
        };
        let fail = |e: GuestError| LoadError::Instantiate(e.to_string());
        let mut slot = runtime.instantiate().map_err(fail)?;
        let version = slot.call0(&runtime.exports.abi_version).map_err(fail)?;
        if version != ABI_VERSION {
            return Err(LoadError::AbiVersion(version));
        }
        if runtime.exports.routes.is_none() {
            return Err(LoadError::MissingExport("routes"));
        }
        runtime.layout = Layout {
            input_ptr: slot.call0(&runtime.exports.input_ptr).map_err(fail)?,
            input_capacity: slot.call0(&runtime.exports.input_capacity).map_err(fail)?,
        };
        let memory_size = slot.memory.data_size(&slot.store);
        let end = u64::from(runtime.layout.input_ptr) + u64::from(runtime.layout.input_capacity);
        if end > memory_size as u64 {
            return Err(LoadError::Instantiate(format!(
                "input buffer at {}..{end} lies outside the {memory_size}-byte memory",
                runtime.layout.input_ptr
            )));
        }
        // The instance has run only the contract's getters, never a request:
        // it serves the first one, which saves a cold start an instantiation.
        runtime.spare = std::sync::Mutex::new(Some(slot));
        Ok(runtime)
    }
}

/// One live instance with its Store and export handles.
struct Slot {
    store: Store<HostState>,
    memory: Memory,
    handle: TypedFunc<(u32, f64), u32>,
    output_ptr: TypedFunc<(), u32>,
    output_len: TypedFunc<(), u32>,
    instance: wasmtime::Instance,
}

impl Slot {
    fn call0(&mut self, export: &ModuleExport) -> Result<u32, GuestError> {
        let func = self
            .instance
            .get_module_export(&mut self.store, export)
            .and_then(|e| e.into_func())
            .ok_or(GuestError::BadOutput("export vanished"))?;
        let typed = func.typed::<(), u32>(&self.store).map_err(|e| GuestError::Instantiate(one_line(&e)))?;
        typed.call(&mut self.store, ()).map_err(|e| classify(&e))
    }

    /// Writes the context line and the head into the input buffer, calls
    /// `handle`, parses the output.
    fn decide(&mut self, layout: Layout, input: &Input<'_>, now: f64) -> Outcome {
        let mut context_buf = [0u8; MAX_CONTEXT_LINE];
        let context_len = input.write_context_line(&mut context_buf);
        let context = &context_buf[..context_len];
        let total = context.len() + input.head.len();
        let len = u32::try_from(total).unwrap_or(u32::MAX);
        if len <= layout.input_capacity {
            let start = layout.input_ptr as usize;
            let data = self.memory.data_mut(&mut self.store);
            let dest = data
                .get_mut(start..start + total)
                .ok_or(GuestError::BadOutput("input buffer outside memory"))?;
            let (line, head) = dest.split_at_mut(context.len());
            line.copy_from_slice(context);
            head.copy_from_slice(input.head);
        }
        // A head larger than the buffer: write nothing, pass its true length
        // (the module answers 431 without reading).
        // The CPU clock is read only when a deadline can ask for it.
        let budget = self.store.data().cpu.budget;
        self.store.data_mut().cpu.call_started = thread_cpu_time(budget);
        let status = self.handle.call(&mut self.store, (len, now)).map_err(|e| classify(&e))?;
        Ok(DecisionBuf::decode(status, self.output()?)?)
    }

    /// The output of the last call.
    fn output(&mut self) -> Result<&[u8], GuestError> {
        let ptr = self.output_ptr.call(&mut self.store, ()).map_err(|e| classify(&e))? as usize;
        let out_len = self.output_len.call(&mut self.store, ()).map_err(|e| classify(&e))? as usize;
        let data = self.memory.data(&self.store);
        data.get(ptr..ptr.saturating_add(out_len)).ok_or(GuestError::BadOutput("output outside memory"))
    }
}

/// Turns a wasmtime error from a call into the host's reason.
fn classify(error: &wasmtime::Error) -> GuestError {
    if error.chain().any(|c| c.is::<MemoryCapExceeded>()) {
        return GuestError::MemoryLimit;
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => GuestError::Deadline,
        Some(trap) => {
            let text = trap.to_string();
            GuestError::Trap(text.strip_prefix("wasm trap: ").unwrap_or(&text).to_owned())
        }
        None => GuestError::Trap(one_line(error)),
    }
}

/// One thread's reused instance for [`Runtime::decide_reused`]. Starts
/// empty; the first request instantiates, a trap discards the instance and
/// the next request makes a new one. Use it with one `Runtime` only.
#[derive(Default)]
pub struct Reusable {
    slot: Option<Slot>,
}

impl std::fmt::Debug for Reusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reusable").field("live", &self.slot.is_some()).finish()
    }
}

impl Reusable {
    /// True when an instance is live (it holds a pool slot).
    pub fn is_live(&self) -> bool {
        self.slot.is_some()
    }

    /// Drops the instance, giving its slot back to the pool.
    pub fn discard(&mut self) {
        self.slot = None;
    }
}

impl Runtime {
    /// Builds the engine with `slots` instance slots, loads the module, checks
    /// the contract, and makes the first instance: everything a command needs.
    pub fn load(options: &EngineOptions, source: &ModuleSource, slots: u32) -> Result<Runtime, LoadError> {
        let engine = engine::build(options, slots)?;
        let module = engine::load(&engine, source)?;
        Prepared::new(&engine, &module)?.probe(options)?.start_ticker(options)
    }

    /// Starts the thread that ticks the epoch, without which no deadline
    /// fires (a no-op when `options` has no deadline). A thread that cannot
    /// start is an error: the host must not run without its deadline.
    pub fn start_ticker(mut self, options: &EngineOptions) -> Result<Runtime, LoadError> {
        if self._ticker.is_none()
            && let Some(period) = options.tick()
        {
            self._ticker = Some(Ticker::start(&self.engine, period).map_err(LoadError::Ticker)?);
        }
        Ok(self)
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The module.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// Where the input buffer is and how large.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The CPU deadline per call, in epoch ticks (None: no deadline).
    pub fn deadline_ticks(&self) -> Option<u64> {
        self.deadline_ticks
    }

    /// The instance the contract check made, once: it has run only the
    /// contract's getters (`abi_version`, `input_ptr`, `input_capacity`),
    /// never a request, so it is as fresh as a new one. Its epoch deadline
    /// is set anew, since the clock has run since it was made.
    fn take_spare(&self) -> Option<Slot> {
        use std::sync::atomic::Ordering;
        if self.spare_taken.load(Ordering::Relaxed) {
            return None;
        }
        let mut slot = self.spare.try_lock().ok()?.take()?;
        self.spare_taken.store(true, Ordering::Relaxed);
        if let Some(ticks) = self.deadline_ticks {
            slot.store.set_epoch_deadline(ticks);
        }
        Some(slot)
    }

    /// The spare instance if it is still there, otherwise a new one.
    fn fresh_slot(&self) -> Result<Slot, GuestError> {
        match self.take_spare() {
            Some(slot) => Ok(slot),
            None => self.instantiate(),
        }
    }

    /// A new Store with the limits, and an instance in it.
    fn instantiate(&self) -> Result<Slot, GuestError> {
        let state = HostState {
            limits: MemoryLimiter { cap: self.memory_cap },
            cpu: CpuDeadline { budget: self.cpu_budget, call_started: None },
        };
        let mut store = Store::new(&self.engine, state);
        // The memory cap: the limiter sees every grow and traps past the cap.
        store.limiter(|state| &mut state.limits);
        // The CPU deadline: once the epoch passes the deadline, the callback
        // compares the thread's CPU time with the budget (see CpuDeadline).
        // Set here for the fresh mode and again before each call in the reuse mode.
        if let Some(ticks) = self.deadline_ticks {
            store.set_epoch_deadline(ticks);
            store.epoch_deadline_callback(|mut ctx| Ok(ctx.data_mut().cpu.on_epoch_deadline()));
        }
        let instance = self.pre.instantiate(&mut store).map_err(|e| {
            // Every slot of the pool in use: matched by the error's type.
            if e.chain().any(|cause| cause.is::<wasmtime::PoolConcurrencyLimitError>()) {
                GuestError::NoSlot
            } else {
                GuestError::Instantiate(one_line(&e))
            }
        })?;
        let lookup = |store: &mut Store<HostState>, export: &ModuleExport| {
            instance.get_module_export(&mut *store, export).ok_or(GuestError::BadOutput("export missing"))
        };
        let memory =
            lookup(&mut store, &self.exports.memory)?.into_memory().ok_or(GuestError::BadOutput("memory"))?;
        let typed_err = |e: wasmtime::Error| GuestError::Instantiate(one_line(&e));
        let handle = lookup(&mut store, &self.exports.handle)?
            .into_func()
            .ok_or(GuestError::BadOutput("handle"))?
            .typed::<(u32, f64), u32>(&store)
            .map_err(typed_err)?;
        let output_ptr = lookup(&mut store, &self.exports.output_ptr)?
            .into_func()
            .ok_or(GuestError::BadOutput("output_ptr"))?
            .typed::<(), u32>(&store)
            .map_err(typed_err)?;
        let output_len = lookup(&mut store, &self.exports.output_len)?
            .into_func()
            .ok_or(GuestError::BadOutput("output_len"))?
            .typed::<(), u32>(&store)
            .map_err(typed_err)?;
        Ok(Slot { store, memory, handle, output_ptr, output_len, instance })
    }

    /// The module's route table (`routes` export): audience and upstream
    /// URL per route, so the host needs no config file of its own.
    pub fn routes(&self) -> Result<Vec<(String, String)>, GuestError> {
        let mut slot = self.fresh_slot()?;
        let routes = self.exports.routes.as_ref().ok_or(GuestError::BadOutput("no routes export"))?;
        slot.call0(routes)?;
        contract::routes::decode(slot.output()?)
            .map(|route| route.map(|(aud, url)| (aud.to_owned(), url.to_owned())))
            .collect::<Result<_, _>>()
            .map_err(|_| GuestError::BadOutput("route table line"))
    }

    /// Decides one request in a fresh instance (new Store, instance from the
    /// pool, dropped afterwards). `now` is Unix seconds.
    pub fn decide_fresh<'a>(&self, input: impl Into<Input<'a>>, now: f64) -> Outcome {
        let mut slot = self.fresh_slot()?;
        slot.decide(self.layout, &input.into(), now)
    }

    /// Decides one request in `reusable`'s instance, making it first if
    /// needed. An instance that trapped, ran out of time or memory is
    /// discarded, so the next request gets a clean one.
    pub fn decide_reused<'a>(
        &self,
        reusable: &mut Reusable,
        input: impl Into<Input<'a>>,
        now: f64,
    ) -> Outcome {
        let slot = match &mut reusable.slot {
            Some(slot) => slot,
            empty => empty.insert(self.fresh_slot()?),
        };
        if let Some(ticks) = self.deadline_ticks {
            slot.store.set_epoch_deadline(ticks);
        }
        let outcome = slot.decide(self.layout, &input.into(), now);
        if let Err(e) = &outcome
            && (e.poisons_instance() || matches!(e, GuestError::BadOutput(_) | GuestError::Undecodable(_)))
        {
            reusable.slot = None;
        }
        outcome
    }

    /// Decides one request in the given isolation mode (`reusable` is used
    /// only in the reuse mode).
    pub fn decide<'a>(
        &self,
        isolation: engine::Isolation,
        reusable: &mut Reusable,
        input: impl Into<Input<'a>>,
        now: f64,
    ) -> Outcome {
        match isolation {
            engine::Isolation::Fresh => self.decide_fresh(input, now),
            engine::Isolation::Reuse => self.decide_reused(reusable, input, now),
        }
    }

    /// Holds `count` live instances at once (each having decided `head`)
    /// and calls `measure` while they are alive; for measuring the memory
    /// one instance slot costs.
    pub fn with_live_instances<R>(
        &self,
        count: usize,
        head: &[u8],
        now: f64,
        measure: impl FnOnce() -> R,
    ) -> Result<R, GuestError> {
        let mut live = Vec::with_capacity(count);
        for _ in 0..count {
            let mut slot = self.fresh_slot()?;
            slot.decide(self.layout, &Input::from(head), now)?;
            live.push(slot);
        }
        let result = measure();
        drop(live);
        Ok(result)
    }
}

/// The current Unix time in seconds, as the contract passes it (see
/// [`unix_seconds`] for a clock that cannot be read).
pub fn unix_now() -> f64 {
    unix_seconds(std::time::SystemTime::now())
}

/// `time` as Unix seconds. A time before the epoch (a clock that cannot be
/// read) is NaN, which the module refuses with 500 "host clock invalid":
/// the gateway fails closed, where 0 would pass every token's `exp` check.
pub fn unix_seconds(time: std::time::SystemTime) -> f64 {
    time.duration_since(std::time::UNIX_EPOCH).map_or(f64::NAN, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::unix_seconds;

    #[test]
    fn a_clock_before_the_epoch_is_nan_never_zero() {
        assert!(unix_seconds(UNIX_EPOCH - Duration::from_secs(1)).is_nan());
        assert_eq!(unix_seconds(UNIX_EPOCH + Duration::from_millis(1_800_000_000_500)), 1_800_000_000.5);
    }
}
