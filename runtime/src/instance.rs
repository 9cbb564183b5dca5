//! Instances: the `InstancePre` built once after the contract check, a
//! Store per instance with its limits, and deciding one request in either
//! isolation mode.
//!
//! ```no_run
//! use runtime::{EngineOptions, ModuleSource, Reusable, Runtime};
//! let runtime = Runtime::load(&EngineOptions::default(), &ModuleSource::Wasm("dist/gateway.wasm".into()), 4)?;
//! let head: &[u8] = b"GET / HTTP/1.1\r\nHost: gw\r\n\r\n";
//! let fresh = runtime.decide_fresh(head, 1.8e9);
//! let mut slot = Reusable::default();
//! let reused = runtime.decide_reused(&mut slot, head, 1.8e9);
//! assert_eq!(fresh, reused);
//! # Ok::<(), runtime::LoadError>(())
//! ```

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use wasmtime::{Engine, InstancePre, Linker, Memory, Module, ModuleExport, Store, TypedFunc};

use contract::ABI_VERSION;
use contract::owned::DecisionBuf;

use crate::engine::{self, EngineOptions, MemoryReset, ModuleSource};
use crate::error::{GuestError, LoadError, classify, one_line};
use crate::exports::Exports;
use crate::input::{Input, MAX_CONTEXT_LINE};
use crate::keys::{Keeper, KeyExports, Keys};
use crate::limits::{HostState, Ticker};

/// How instances relate to requests. Parsed from `fresh` or `reuse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// A new Store and instance for every request: nothing survives a request.
    #[default]
    Fresh,
    /// One instance per worker thread, reused; the module resets its arena on
    /// each `handle` call. A trapped instance is discarded.
    Reuse,
}

impl FromStr for Isolation {
    type Err = String;

    fn from_str(name: &str) -> Result<Isolation, String> {
        match name {
            "fresh" => Ok(Isolation::Fresh),
            "reuse" => Ok(Isolation::Reuse),
            other => Err(format!("unknown isolation {other:?} (fresh, reuse)")),
        }
    }
}

/// The result of deciding one request: the module's decision, or why there is none.
pub type Outcome = Result<DecisionBuf, GuestError>;

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
    pub(crate) exports: Exports,
    pub(crate) layout: Layout,
    memory_cap: usize,
    /// How the engine's pool resets a dropped instance's memory.
    memory_reset: MemoryReset,
    pub(crate) deadline_ticks: Option<u64>,
    cpu_budget: std::time::Duration,
    _ticker: Option<Arc<Ticker>>,
    /// The instance the contract check made, kept for the first request
    /// (see [`Runtime::take_spare`]).
    spare: std::sync::Mutex<Option<Slot>>,
    /// Set once the spare is taken, so that later requests skip the lock.
    spare_taken: std::sync::atomic::AtomicBool,
    /// A module that fetches keys: its keeper instance and key image
    /// (shared with its siblings, [`Runtime::sibling`]).
    pub(crate) keys: Option<Arc<Keys>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("layout", &self.layout)
            .field("memory_cap", &self.memory_cap)
            .field("memory_reset", &self.memory_reset)
            .field("deadline_ticks", &self.deadline_ticks)
            .field("ticker", &self._ticker)
            .finish_non_exhaustive()
    }
}

/// The checked module with its `InstancePre`, before the first instance.
pub struct Prepared {
    engine: Engine,
    module: Module,
    pre: InstancePre<HostState>,
    exports: Exports,
    key_exports: Option<KeyExports>,
}

impl Prepared {
    /// Checks the contract (no imports, the exports and their types) and
    /// builds the `InstancePre` (import resolution done once, for all instances).
    pub fn new(engine: &Engine, module: &Module) -> Result<Prepared, LoadError> {
        let exports = Exports::resolve(module)?;
        let key_exports = KeyExports::resolve(module)?;
        let linker = Linker::<HostState>::new(engine);
        let pre = linker.instantiate_pre(module).map_err(|e| LoadError::Instantiate(one_line(&e)))?;
        Ok(Prepared { engine: engine.clone(), module: module.clone(), pre, exports, key_exports })
    }

    /// Makes the first instance, checks its `abi_version` and reads the input
    /// buffer's place. The epoch ticker is not started: call
    /// [`Runtime::start_ticker`] (as [`Runtime::load`] does) for deadlines to fire.
    pub fn probe(self, options: &EngineOptions) -> Result<Runtime, LoadError> {
        let (mut runtime, key_exports) = self.probe_instance(options)?;
        if let Some(key_exports) = key_exports {
            // One more instance, kept for good, reads and installs documents;
            // no request deadline applies to it.
            let fail = |e: GuestError| LoadError::Instantiate(e.to_string());
            let mut keeper = runtime.instantiate().map_err(fail)?;
            keeper.store.set_epoch_deadline(u64::MAX / 2);
            let keeper = Keeper {
                store: keeper.store,
                memory: keeper.memory,
                instance: keeper.instance,
                output_ptr: keeper.output_ptr,
                output_len: keeper.output_len,
            };
            let field = (runtime.layout.input_ptr, runtime.layout.input_capacity);
            runtime.keys = Some(Arc::new(Keys::new(key_exports, keeper, field).map_err(fail)?));
        }
        Ok(runtime)
    }

    /// [`Prepared::probe`] without the keys: the runtime, and the key
    /// exports of a module that fetches keys.
    fn probe_instance(self, options: &EngineOptions) -> Result<(Runtime, Option<KeyExports>), LoadError> {
        let mut runtime = Runtime {
            engine: self.engine,
            module: self.module,
            pre: self.pre,
            exports: self.exports,
            layout: Layout { input_ptr: 0, input_capacity: 0 },
            memory_cap: usize::try_from(options.memory_cap).unwrap_or(usize::MAX),
            memory_reset: options.memory_reset.in_pool(),
            deadline_ticks: options.deadline().map(|_| engine::TICKS_PER_DEADLINE),
            cpu_budget: options.deadline().unwrap_or_default(),
            _ticker: None,
            spare: std::sync::Mutex::new(None),
            spare_taken: std::sync::atomic::AtomicBool::new(false),
            keys: None,
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
        if options.populate_first_memory {
            runtime.populate_first_memory();
        }
        Ok((runtime, self.key_exports))
    }
}

/// `module`'s code on `engine`, built by `engine::build` with the options
/// the module was loaded with but for the memory reset (which changes no
/// code).
fn moved(module: &Module, engine: &Engine) -> Result<Module, LoadError> {
    let code = module.serialize().map_err(|e| LoadError::Instantiate(one_line(&e)))?;
    // SAFETY: `Module::deserialize` runs the machine code in its bytes, so
    // they must be wasmtime's own output for a compatible engine. They are:
    // `Module::serialize` of a module loaded in this process a moment ago
    // and never written anywhere, and `engine` comes from the same
    // `engine::build` with the options that module was loaded with but the
    // pool's memory reset, which changes no code; wasmtime also checks the
    // header (its version, target, compiler flags and tunables) against
    // `engine` and refuses any mismatch before any code runs.
    #[allow(unsafe_code)]
    let moved = unsafe { Module::deserialize(engine, &code) };
    moved.map_err(|e| LoadError::Instantiate(one_line(&e)))
}

/// One live instance with its Store and export handles.
pub(crate) struct Slot {
    pub(crate) store: Store<HostState>,
    memory: Memory,
    handle: TypedFunc<(u32, f64), u32>,
    output_ptr: TypedFunc<(), u32>,
    output_len: TypedFunc<(), u32>,
    pub(crate) instance: wasmtime::Instance,
    /// The generation of the key image this instance holds (0: none).
    key_generation: u64,
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
    pub(crate) fn decide(&mut self, layout: Layout, input: &Input<'_>, now: f64) -> Outcome {
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
        self.store.data_mut().cpu.start_call();
        let status = self.handle.call(&mut self.store, (len, now)).map_err(|e| classify(&e))?;
        Ok(DecisionBuf::decode(status, self.output()?)?)
    }

    /// The output of the last call.
    pub(crate) fn output(&mut self) -> Result<&[u8], GuestError> {
        let ptr = self.output_ptr.call(&mut self.store, ()).map_err(|e| classify(&e))? as usize;
        let out_len = self.output_len.call(&mut self.store, ()).map_err(|e| classify(&e))? as usize;
        let data = self.memory.data(&self.store);
        data.get(ptr..ptr.saturating_add(out_len)).ok_or(GuestError::BadOutput("output outside memory"))
    }
}

/// One thread's reused instance for [`Runtime::decide_reused`]. Starts
/// empty; the first request instantiates, a trap discards the instance and
/// the next request makes a new one. Use it with one `Runtime` only.
#[derive(Default)]
pub struct Reusable {
    pub(crate) slot: Option<Slot>,
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
    /// With [`MemoryReset::BySize`], a module whose memory is larger than the
    /// default module's moves to a second engine that resets it page by page
    /// (an engine build more at load, for such modules only).
    pub fn load(options: &EngineOptions, source: &ModuleSource, slots: u32) -> Result<Runtime, LoadError> {
        let engine = engine::build(options, slots)?;
        let module = engine::load(&engine, source)?;
        let memory_reset = options.memory_reset.resolve(&module);
        let built = options.memory_reset.in_pool();
        let options = EngineOptions { memory_reset, ..options.clone() };
        let (engine, module) = if memory_reset == built {
            (engine, module)
        } else {
            let engine = engine::build(&options, slots)?;
            // A .cwasm is mapped again (cheaper than copying the code).
            let module = match source {
                ModuleSource::Cwasm(_) => engine::load(&engine, source)?,
                ModuleSource::Wasm(_) => moved(&module, &engine)?,
            };
            (engine, module)
        };
        Prepared::new(&engine, &module)?.probe(&options)?.start_ticker(&options)
    }

    /// How this runtime's pool resets a dropped instance's memory.
    pub fn memory_reset(&self) -> MemoryReset {
        self.memory_reset
    }

    /// Another runtime for the same module on an engine of its own (its own
    /// instance pool and type registry, with `slots` slots; its epoch ticked
    /// by this runtime's ticker thread), deciding with this runtime's
    /// fetched keys: for a serving thread whose
    /// instances then share nothing with another thread's (no lock, no
    /// counter that two cores pass back and forth). `options` must be the
    /// ones this runtime was loaded with.
    pub fn sibling(&self, options: &EngineOptions, slots: u32) -> Result<Runtime, LoadError> {
        let options = EngineOptions { memory_reset: self.memory_reset, ..options.clone() };
        let engine = engine::build(&options, slots)?;
        let module = moved(&self.module, &engine)?;
        let (mut sibling, _) = Prepared::new(&engine, &module)?.probe_instance(&options)?;
        sibling.keys = self.keys.clone();
        match &self._ticker {
            // One ticker thread for a runtime and all its siblings.
            Some(ticker) => {
                ticker.add(&sibling.engine);
                sibling._ticker = Some(Arc::clone(ticker));
                Ok(sibling)
            }
            None => sibling.start_ticker(&options),
        }
    }

    /// Starts the thread that ticks the epoch, without which no deadline
    /// fires (a no-op when `options` has no deadline). A thread that cannot
    /// start is an error: the host must not run without its deadline.
    pub fn start_ticker(mut self, options: &EngineOptions) -> Result<Runtime, LoadError> {
        if self._ticker.is_none()
            && let Some(period) = options.tick()
        {
            self._ticker = Some(Arc::new(Ticker::start(&self.engine, period).map_err(LoadError::Ticker)?));
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

    /// Calls `f` with the first instance's linear memory while that
    /// instance is still unused (None once it is taken).
    pub(crate) fn with_spare_memory<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        let mut spare = self.spare.try_lock().ok()?;
        let slot = spare.as_mut()?;
        Some(f(slot.memory.data_mut(&mut slot.store)))
    }

    /// The spare instance if it is still there, otherwise a new one.
    pub(crate) fn fresh_slot(&self) -> Result<Slot, GuestError> {
        match self.take_spare() {
            Some(slot) => Ok(slot),
            None => self.instantiate(),
        }
    }

    /// A new Store with the limits, and an instance in it.
    fn instantiate(&self) -> Result<Slot, GuestError> {
        let state = HostState::new(self.memory_cap, self.cpu_budget);
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
        Ok(Slot { store, memory, handle, output_ptr, output_len, instance, key_generation: 0 })
    }

    /// The module's route table (`routes` export): audience and upstream
    /// URL per route, so the host needs no config file of its own.
    pub fn routes(&self) -> Result<Vec<(String, String)>, GuestError> {
        let table = self.table(self.exports.routes.as_ref(), "no routes export")?;
        contract::routes::decode(&table)
            .map(|route| route.map(|(aud, url)| (aud.to_owned(), url.to_owned())))
            .collect::<Result<_, _>>()
            .map_err(|_| GuestError::BadOutput("route table line"))
    }

    /// The module's label table (`labels` export, `ABI.md`, "Labels"), for
    /// counters and logs; empty for a module without one (one issuer, `0`).
    pub fn labels(&self) -> Result<String, GuestError> {
        let Some(export) = self.exports.labels.as_ref() else { return Ok(String::new()) };
        String::from_utf8(self.table(Some(export), "")?).map_err(|_| GuestError::BadOutput("label table"))
    }

    /// The output of a table export (`routes`, `labels`) called in a fresh instance.
    fn table(&self, export: Option<&ModuleExport>, missing: &'static str) -> Result<Vec<u8>, GuestError> {
        let mut slot = self.fresh_slot()?;
        slot.call0(export.ok_or(GuestError::BadOutput(missing))?)?;
        Ok(slot.output()?.to_vec())
    }

    /// Decides one request in a fresh instance (new Store, instance from the
    /// pool, dropped afterwards). `now` is Unix seconds.
    pub fn decide_fresh<'a>(&self, input: impl Into<Input<'a>>, now: f64) -> Outcome {
        self.decide_counted(Isolation::Fresh, &mut Reusable::default(), input, now, |_| None)
    }

    /// Copies the installed keys into `slot` when it holds an older image
    /// (or none): a no-op for a module that fetches no keys.
    pub(crate) fn give_keys(&self, slot: &mut Slot) -> Result<(), GuestError> {
        let Some(keys) = &self.keys else { return Ok(()) };
        let image = keys.image();
        if image.generation != slot.key_generation {
            image.apply(&slot.memory, &mut slot.store)?;
            slot.key_generation = image.generation;
        }
        Ok(())
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
        self.decide_counted(Isolation::Reuse, reusable, input, now, |_| None)
    }

    /// Decides one request in the given isolation mode (`reusable` is used
    /// only in the reuse mode).
    pub fn decide<'a>(
        &self,
        isolation: Isolation,
        reusable: &mut Reusable,
        input: impl Into<Input<'a>>,
        now: f64,
    ) -> Outcome {
        match isolation {
            Isolation::Fresh => self.decide_fresh(input, now),
            Isolation::Reuse => self.decide_reused(reusable, input, now),
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
            self.give_keys(&mut slot)?;
            slot.decide(self.layout, &Input::from(head), now)?;
            live.push(slot);
        }
        let result = measure();
        drop(live);
        Ok(result)
    }
}

/// Precompiles the `.wasm` at `input` into a `.cwasm` at `output` for
/// `options` (run it with the same options), after the checks a run makes:
/// no imports, the contract's exports, `abi_version`. Returns the
/// artifact's size in bytes.
pub fn precompile_file(options: &EngineOptions, input: &Path, output: &Path) -> Result<usize, LoadError> {
    let engine = engine::build(options, 1)?;
    let module = engine::load(&engine, &ModuleSource::Wasm(input.to_owned()))?;
    Prepared::new(&engine, &module)?.probe(options)?;
    engine::precompile(&module, output)
}
