//! The module in wasmtime, set up the way each benchmark row needs: JIT
//! (Cranelift or Winch) or a precompiled `.cwasm`; one reused instance or a
//! fresh instance per request; pooling or on-demand allocation; with or
//! without an epoch deadline.
//!
//! The recipe is the one `DESIGN.md` describes: one `Engine`, copy-on-write
//! memory images, an `InstancePre` built once, exports looked up once by
//! index, a fresh `Store` per request.

use std::path::{Path, PathBuf};

use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, InstancePre, Linker, Memory, Module, ModuleExport, OptLevel,
    PoolingAllocationConfig, Store, Strategy, TypedFunc,
};

/// The deployable module, relative to the workspace root.
pub const MODULE: &str = "dist/gateway.wasm";

/// The workspace root (the benches crate's parent).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Reads a module from `path`, relative to the workspace root.
pub fn read(path: &str) -> Vec<u8> {
    let full = root().join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e} (run `make worker`)", full.display()))
}

/// Which compiler turns the module into machine code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiler {
    /// Cranelift, the optimising compiler.
    Cranelift,
    /// Winch, the single-pass baseline compiler.
    Winch,
}

/// How an engine is set up.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// The compiler.
    pub compiler: Compiler,
    /// The pooling allocator (else wasmtime's on-demand allocator).
    pub pooling: bool,
    /// Epoch interruption: the module checks a deadline at function entries
    /// and loop headers.
    pub epoch: bool,
}

impl Setup {
    /// The production setup: Cranelift, pooling, epoch deadline.
    pub const HOST: Setup = Setup { compiler: Compiler::Cranelift, pooling: true, epoch: true };
}

/// An engine for `setup`.
pub fn engine(setup: Setup) -> Engine {
    let mut config = Config::new();
    config.strategy(match setup.compiler {
        Compiler::Cranelift => Strategy::Cranelift,
        Compiler::Winch => Strategy::Winch,
    });
    config.cranelift_opt_level(OptLevel::Speed);
    config.epoch_interruption(setup.epoch);
    config.memory_init_cow(true);
    // The module needs a few KiB of native stack at most.
    config.max_wasm_stack(256 << 10);
    if setup.pooling {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_core_instances(64);
        pool.total_memories(64);
        pool.total_tables(64);
        pool.max_memory_size(4 << 20);
        // Keep the module's 128 KiB resident between instances: resetting it
        // is a memset instead of madvise and page faults.
        pool.linear_memory_keep_resident(128 << 10);
        pool.table_keep_resident(4 << 10);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    Engine::new(&config).expect("engine")
}

/// Compiles `bytes` (JIT).
pub fn compile(engine: &Engine, bytes: &[u8]) -> Module {
    Module::new(engine, bytes).expect("compile")
}

/// Writes `bytes` precompiled by `engine` to `path` (a `.cwasm`).
pub fn precompile(engine: &Engine, bytes: &[u8], path: &Path) {
    let compiled = engine.precompile_module(bytes).expect("precompile");
    std::fs::write(path, compiled).expect("write .cwasm");
}

/// Loads a `.cwasm` written by [`precompile`] with the same engine settings.
#[allow(unsafe_code)]
pub fn deserialize_file(engine: &Engine, path: &Path) -> Module {
    // SAFETY: the file was written by `precompile` in this process, from an
    // engine with the same settings, and nothing else writes to it.
    unsafe { Module::deserialize_file(engine, path) }.expect("deserialize .cwasm")
}

/// A module ready to instantiate, its exports found by index once.
pub struct Prepared {
    engine: Engine,
    pre: InstancePre<()>,
    epoch: bool,
    memory: ModuleExport,
    handle: ModuleExport,
    input_ptr: ModuleExport,
    output_ptr: ModuleExport,
    output_len: ModuleExport,
}

fn export(module: &Module, name: &str) -> ModuleExport {
    module.get_export_index(name).unwrap_or_else(|| panic!("the module exports no `{name}`"))
}

impl Prepared {
    /// Links `module` (it imports nothing) and looks up its exports.
    pub fn new(engine: &Engine, module: &Module, epoch: bool) -> Self {
        let linker = Linker::<()>::new(engine);
        let pre = linker.instantiate_pre(module).expect("instantiate_pre");
        Prepared {
            engine: engine.clone(),
            pre,
            epoch,
            memory: export(module, "memory"),
            handle: export(module, "handle"),
            input_ptr: export(module, "input_ptr"),
            output_ptr: export(module, "output_ptr"),
            output_len: export(module, "output_len"),
        }
    }

    /// A new store and instance.
    pub fn instantiate(&self) -> Instance {
        let mut store = Store::new(&self.engine, ());
        if self.epoch {
            // The engine's epoch is never incremented here, so one tick is
            // enough: what is measured is the cost of checking it.
            store.set_epoch_deadline(1);
        }
        let instance = self.pre.instantiate(&mut store).expect("instantiate");
        let get = |store: &mut Store<()>, e: &ModuleExport| {
            instance.get_module_export(&mut *store, e).expect("export")
        };
        let memory = get(&mut store, &self.memory).into_memory().expect("memory");
        let handle = get(&mut store, &self.handle)
            .into_func()
            .expect("func")
            .typed::<(i32, f64), i32>(&store)
            .expect("handle type");
        let typed0 = |store: &mut Store<()>, e: &ModuleExport| {
            get(store, e).into_func().expect("func").typed::<(), i32>(&*store).expect("() -> i32")
        };
        let input_ptr = typed0(&mut store, &self.input_ptr);
        let output_ptr = typed0(&mut store, &self.output_ptr);
        let output_len = typed0(&mut store, &self.output_len);
        let input = input_ptr.call(&mut store, ()).expect("input_ptr") as u32 as usize;
        Instance { store, memory, handle, output_ptr, output_len, input }
    }

    /// One request in a fresh instance: instantiate, write, call, drop.
    pub fn fresh(&self, head: &[u8], now: f64) -> u16 {
        self.instantiate().handle(head, now)
    }
}

/// One instance and its store.
pub struct Instance {
    store: Store<()>,
    memory: Memory,
    handle: TypedFunc<(i32, f64), i32>,
    output_ptr: TypedFunc<(), i32>,
    output_len: TypedFunc<(), i32>,
    input: usize,
}

impl Instance {
    /// Writes `head` into the input buffer and calls `handle`.
    pub fn handle(&mut self, head: &[u8], now: f64) -> u16 {
        self.memory.write(&mut self.store, self.input, head).expect("head fits the input buffer");
        let status = self.handle.call(&mut self.store, (head.len() as i32, now)).expect("handle");
        status as u16
    }

    /// The last answer's output.
    pub fn output(&mut self) -> Vec<u8> {
        let ptr = self.output_ptr.call(&mut self.store, ()).expect("output_ptr") as u32 as usize;
        let len = self.output_len.call(&mut self.store, ()).expect("output_len") as u32 as usize;
        self.memory.data(&self.store)[ptr..ptr + len].to_vec()
    }
}

/// An engine, the module compiled by it and prepared: the usual start.
pub fn prepare(setup: Setup, bytes: &[u8]) -> Prepared {
    let engine = engine(setup);
    let module = compile(&engine, bytes);
    Prepared::new(&engine, &module, setup.epoch)
}
