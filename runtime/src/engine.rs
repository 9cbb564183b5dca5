//! The wasmtime engine: its configuration, line by line, and the module
//! loader (JIT or precompiled `.cwasm`). Each function is one step of a cold
//! start, public so that the benches can time the steps one by one.
//!
//! Everything that changes the compiled code (the compiler, epoch
//! interruption, memory reservation and guards) lives in [`EngineOptions`].
//! Precompiling and loading use the same function, [`build`], so that a
//! `.cwasm` only ever meets the settings it was made for; wasmtime checks
//! that on load and this crate reports a mismatch as
//! [`LoadError::Incompatible`].

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, Module, OptLevel, PoolingAllocationConfig, Strategy,
};

use crate::error::{LoadError, one_line};

/// The default linear-memory cap per instance: the module needs 128 KiB.
pub const DEFAULT_MEMORY_CAP: u64 = 2 << 20; // 2 MiB

/// The default CPU deadline per request, in milliseconds: the CPU limit of
/// Cloudflare Workers' free plan. The slowest verification the module can be
/// built with (ES256, about 1.8 ms in a fresh instance; RS256 with a 4096-bit
/// key) fits several times over; a guest that loops is stopped soon enough.
pub const DEFAULT_DEADLINE_MS: f64 = 10.0;

/// The default native stack the guest may use: the gateway keeps its large
/// buffers in linear memory (its own 32 KiB shadow stack), so the native
/// frames are small.
pub const DEFAULT_MAX_WASM_STACK: usize = 64 << 10; // 64 KiB

/// How many epoch ticks make one deadline. The deadline fires between
/// `(N-1)/N` and `N/N` of the configured time after the call starts.
pub const TICKS_PER_DEADLINE: u64 = 4;

/// The compiler that turns WebAssembly into machine code. Parsed from
/// `cranelift` or `winch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compiler {
    /// Cranelift: optimising, the production choice.
    #[default]
    Cranelift,
    /// Winch: a single-pass baseline compiler, faster to compile, slower code.
    Winch,
}

/// The engine and instance settings. Changing the compiler or `no_deadline`
/// changes the compiled code: a `.cwasm` must be run with the options it
/// was compiled with. (host-sim's flags of the same names set them.)
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOptions {
    /// The compiler for `.wasm` input (and for precompiling).
    pub strategy: Compiler,
    /// Linear-memory cap per instance, in bytes. A guest that grows past it
    /// is stopped ([`crate::GuestError::MemoryLimit`]).
    pub memory_cap: u64,
    /// CPU deadline per request, in milliseconds (epoch interruption). A
    /// guest that runs past it is stopped ([`crate::GuestError::Deadline`]).
    pub deadline_ms: f64,
    /// Compile without epoch interruption: no CPU deadline (for measuring its cost).
    pub no_deadline: bool,
    /// Native stack the guest may use, in bytes.
    pub max_wasm_stack: u64,
    /// Wasmtime's on-demand allocator instead of the pool (an mmap per
    /// instance): only for measuring what the pool saves.
    pub on_demand: bool,
    /// How a dropped instance's memory is made as new for the next one.
    pub memory_reset: MemoryReset,
    /// Make the first instance's memory resident in one system call when
    /// the contract check makes it (Linux's `MADV_POPULATE_WRITE`), if the
    /// pool resets memories whole: cheaper than the page faults its first
    /// request and the pool's first reset of its slot take otherwise
    /// ([`crate::Runtime::populate_first_memory`]). On by default.
    pub populate_first_memory: bool,
}

/// How much of a dropped instance's memory the pool keeps mapped and resets
/// by hand (the rest it gives back to the kernel): the default module's
/// whole memory.
pub const KEEP_RESIDENT: usize = 128 << 10; // 128 KiB

/// How the pool makes a dropped instance's memory as new for the next
/// instance in its slot (its first [`KEEP_RESIDENT`] bytes; the rest is
/// given back to the kernel). Either way nothing one request wrote is seen
/// by the next; they differ in cost only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryReset {
    /// [`MemoryReset::Whole`] for a module whose memory fits in
    /// [`KEEP_RESIDENT`], [`MemoryReset::Written`] for a larger one:
    /// [`crate::Runtime::load`] chooses once the module is loaded.
    #[default]
    BySize,
    /// Zero all of it with one `memset`: the cheaper for a memory of 128 KiB.
    Whole,
    /// Ask the kernel which pages the instance wrote (Linux's
    /// `PAGEMAP_SCAN`, 6.7 and later; elsewhere as `Whole`) and reset only
    /// those: the cheaper for a larger memory, of which a request writes a
    /// smaller part.
    Written,
}

impl MemoryReset {
    /// The choice for `module`: [`MemoryReset::BySize`] made by its memory's
    /// initial size, the others as they are.
    pub fn resolve(self, module: &Module) -> MemoryReset {
        let pages = module.resources_required().max_initial_memory_size.unwrap_or(0);
        match self {
            MemoryReset::BySize if pages.saturating_mul(1 << 16) > KEEP_RESIDENT as u64 => {
                MemoryReset::Written
            }
            other => other.in_pool(),
        }
    }

    /// What an engine built with this setting does before any module is
    /// known: [`MemoryReset::BySize`] resets whole, the default module's choice.
    pub fn in_pool(self) -> MemoryReset {
        match self {
            MemoryReset::BySize => MemoryReset::Whole,
            chosen => chosen,
        }
    }
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            strategy: Compiler::Cranelift,
            memory_cap: DEFAULT_MEMORY_CAP,
            deadline_ms: DEFAULT_DEADLINE_MS,
            no_deadline: false,
            max_wasm_stack: DEFAULT_MAX_WASM_STACK as u64,
            on_demand: false,
            memory_reset: MemoryReset::BySize,
            populate_first_memory: true,
        }
    }
}

impl EngineOptions {
    /// The deadline, or None when epoch interruption is off.
    pub fn deadline(&self) -> Option<Duration> {
        (!self.no_deadline).then(|| Duration::from_secs_f64(self.deadline_ms.max(0.001) / 1000.0))
    }

    /// The time between two epoch ticks.
    pub fn tick(&self) -> Option<Duration> {
        self.deadline().map(|d| (d / TICKS_PER_DEADLINE as u32).max(Duration::from_micros(50)))
    }
}

impl FromStr for Compiler {
    type Err = String;

    fn from_str(name: &str) -> Result<Compiler, String> {
        match name {
            "cranelift" => Ok(Compiler::Cranelift),
            "winch" => Ok(Compiler::Winch),
            other => Err(format!("unknown compiler {other:?} (cranelift, winch)")),
        }
    }
}

/// Where the module comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleSource {
    /// WebAssembly, compiled at load time (JIT).
    Wasm(PathBuf),
    /// A precompiled artifact from `host-sim compile`.
    Cwasm(PathBuf),
}

impl ModuleSource {
    /// The module a command line names with `--wasm PATH` or `--cwasm
    /// PATH`: the `.cwasm` if given, else the `.wasm`, else
    /// `dist/gateway.wasm` (the deployable module, from the workspace root).
    pub fn from_flags(wasm: Option<&Path>, cwasm: Option<&Path>) -> ModuleSource {
        match (wasm, cwasm) {
            (_, Some(cwasm)) => ModuleSource::Cwasm(cwasm.to_owned()),
            (Some(wasm), None) => ModuleSource::Wasm(wasm.to_owned()),
            (None, None) => ModuleSource::Wasm(PathBuf::from("dist/gateway.wasm")),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        match self {
            ModuleSource::Wasm(p) | ModuleSource::Cwasm(p) => p,
        }
    }
}

/// Builds the engine for `options` with a pool of `slots` instance slots.
///
/// The same function builds the engine for `compile` and for running, so
/// artifacts and engines agree.
pub fn build(options: &EngineOptions, slots: u32) -> Result<Engine, LoadError> {
    Engine::new(&config(options, slots)).map_err(|e| LoadError::Engine(one_line(&e)))
}

/// The engine configuration for `options` with a pool of `slots` instance
/// slots. Every setting is explained where it is made.
pub fn config(options: &EngineOptions, slots: u32) -> Config {
    let mut config = Config::new();

    // The compiler. Cranelift optimises (the module is small, so a JIT compile
    // still takes only milliseconds); Winch compiles in one pass.
    config.strategy(match options.strategy {
        Compiler::Cranelift => Strategy::Cranelift,
        Compiler::Winch => Strategy::Winch,
    });
    // Optimise for speed: the gateway's hot loop is SHA-256 and JSON scanning.
    // Under Winch, Cranelift compiles only the entry trampolines, which
    // optimising does not speed up: not optimising them saves 7% of the
    // compile (benches/examples/engine_settings.rs; docs/PERFORMANCE.md,
    // "Engine settings").
    config.cranelift_opt_level(match options.strategy {
        Compiler::Cranelift => OptLevel::Speed,
        Compiler::Winch => OptLevel::None,
    });

    // The CPU deadline: compiled code checks the engine's epoch counter at
    // function entries and loop back-edges (about 0.5 us per call here). A
    // ticker thread increments the epoch; each Store sets its deadline in
    // ticks. Off with --no-deadline, which changes the compiled code.
    config.epoch_interruption(!options.no_deadline);

    // No fuel metering: epochs are cheaper and enough for a deadline.
    config.consume_fuel(false);

    // The native stack wasm may use. The gateway needs a few KiB of native
    // frames (its buffers live in linear memory), so a small limit bounds a
    // runaway recursion early and keeps each call's stack probe cheap.
    config.max_wasm_stack(options.max_wasm_stack as usize);

    // Traps are answered with 500; nobody reads a wasm backtrace, and
    // capturing one costs time on every trap.
    config.wasm_backtrace_max_frames(None);
    // Nor does anyone map a native address back to a wasm offset (that is
    // what backtraces and debuggers use; a trap's kind comes from the trap
    // table, which stays): without the address map the .cwasm is 12% smaller.
    config.generate_address_map(false);
    // Native unwind tables (.eh_frame) serve only outside unwinders such as
    // a debugger or `perf --call-graph dwarf`; wasmtime unwinds wasm frames
    // by their frame pointers. Without them the .cwasm is another 3% smaller.
    config.native_unwind_info(false);

    // Linear memories: reserve 4 GiB of address space plus guard pages per
    // memory (the 64-bit default), so that compiled code needs no explicit
    // bounds checks. It is address space, not RAM.
    config.memory_reservation(4 << 30); // 4 GiB
    config.memory_guard_size(32 << 20); // 32 MiB
    // A memory never moves: its base can stay in a register.
    config.memory_may_move(false);

    // No copy-on-write memory image: the module's data segments are a few
    // KiB, and copying them in at instantiation costs a fresh instance no
    // more than mapping an image, while a cold start saves the image's
    // set-up (deserialize + first instance + first request 2 to 10%
    // faster; fresh and reused requests the same; docs/PERFORMANCE.md,
    // "Engine settings, measured by hand"). wasmtime then initialises the
    // memory with compiled code, under the CPU deadline (limits.rs).
    config.memory_init_cow(false);

    config.allocation_strategy(if options.on_demand {
        InstanceAllocationStrategy::OnDemand
    } else {
        InstanceAllocationStrategy::Pooling(pool(options, slots))
    });
    config
}

/// The pooling allocator's settings for `slots` concurrent instances: part
/// of [`config`], and on its own for measuring one of them changed.
pub fn pool(options: &EngineOptions, slots: u32) -> PoolingAllocationConfig {
    // The pooling allocator: memories, tables and instance metadata are
    // preallocated in slots when the engine is built, so instantiation is a
    // few pointer writes and a slot reset, not mmap calls.
    let mut pool = PoolingAllocationConfig::new();
    // One slot per concurrent instance: the caller sizes it to the
    // concurrency (a slot per worker thread plus a margin).
    pool.total_core_instances(slots);
    pool.total_memories(slots);
    pool.total_tables(slots);
    // The gateway has one memory and one table.
    pool.max_memories_per_module(1);
    pool.max_tables_per_module(1);
    // Function tables: the gateway's has a few dozen entries.
    pool.table_elements(4096);
    // Instance metadata (VMContext) per slot; the gateway's is a few KiB.
    pool.max_core_instance_size(256 << 10); // 256 KiB
    // The memory cap, enforced by the pool as each memory's maximum (and by
    // the Store's limiter, which turns a larger grow into a trap with a reason).
    pool.max_memory_size(options.memory_cap as usize);
    // After an instance is dropped, keep up to this much of its memory
    // resident and reset it by hand instead of with madvise: the default
    // module's memory is 128 KiB, so resetting it by hand is cheaper than
    // faulting the pages back in on the next request (keeping 64 or 96 KiB,
    // the rest decommitted, made a fresh instance slower).
    pool.linear_memory_keep_resident(KEEP_RESIDENT);
    // By hand: all of it with one memset, or only the pages the kernel says
    // the instance wrote (PAGEMAP_SCAN). The scan costs more than zeroing
    // 128 KiB and less than zeroing 192 (MemoryReset; docs/PERFORMANCE.md,
    // "Engine settings, measured by hand").
    pool.pagemap_scan(match options.memory_reset.in_pool() {
        MemoryReset::Written => wasmtime::Enabled::Auto,
        _ => wasmtime::Enabled::No,
    });
    pool.table_keep_resident(16 << 10); // 16 KiB
    // Reuse the most recently used slot (warm caches, pages already mapped).
    pool.max_unused_warm_slots(slots);
    pool
}

/// Loads the module from `source` into `engine`: compiles a `.wasm` (JIT) or
/// maps a `.cwasm`.
pub fn load(engine: &Engine, source: &ModuleSource) -> Result<Module, LoadError> {
    match source {
        ModuleSource::Wasm(path) => {
            let bytes = std::fs::read(path).map_err(|e| read_error(path, &e))?;
            compile(engine, &bytes, path)
        }
        ModuleSource::Cwasm(path) => deserialize(engine, path),
    }
}

/// Compiles WebAssembly `bytes` read from `path`.
pub fn compile(engine: &Engine, bytes: &[u8], path: &Path) -> Result<Module, LoadError> {
    if Engine::detect_precompiled(bytes).is_some() {
        return Err(LoadError::Compile {
            path: path.to_owned(),
            why: "this is a precompiled .cwasm; pass it with --cwasm".into(),
        });
    }
    Module::new(engine, bytes).map_err(|e| LoadError::Compile { path: path.to_owned(), why: one_line(&e) })
}

/// Maps a precompiled `.cwasm` (from [`precompile`], as `host-sim compile` makes it).
///
/// The file goes to wasmtime at once: the checks that tell a `.wasm`, a
/// damaged file and another engine's artifact apart read the file twice
/// more (about a quarter of the load time), so they run only to explain a
/// refusal.
pub fn deserialize(engine: &Engine, path: &Path) -> Result<Module, LoadError> {
    // SAFETY: `deserialize_file` maps the file and runs its machine code, so
    // the file must be one this host produced and must not change while the
    // module lives. It is: the only producer is `precompile` (`host-sim
    // compile`), whose engine comes from the same `build` function, and wasmtime checks the artifact's
    // header (wasmtime version, target, compiler flags, tunables such as
    // epoch interruption and memory guards) against this engine before
    // accepting it, refusing any mismatch; a file that is not an ELF
    // artifact (a `.wasm`, say), or is truncated or damaged, fails the ELF
    // parse or that check before any of it runs. The file is read-only
    // build output.
    #[allow(unsafe_code)]
    let module = unsafe { Module::deserialize_file(engine, path) };
    module.map_err(|e| refusal(path, &e))
}

/// Why wasmtime refused `path`: a file that cannot be read, a `.wasm`, a
/// truncated or damaged file, or an artifact of another engine.
fn refusal(path: &Path, error: &wasmtime::Error) -> LoadError {
    let mut magic = [0u8; 4];
    let read_magic =
        std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic));
    if let Err(e) = read_magic {
        return match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                LoadError::Damaged { path: path.to_owned(), why: "file too short".into() }
            }
            _ => read_error(path, &e),
        };
    }
    if &magic == b"\0asm" {
        return LoadError::NotPrecompiled { path: path.to_owned() };
    }
    match Engine::detect_precompiled_file(path) {
        Ok(Some(wasmtime::Precompiled::Module)) => {
            LoadError::Incompatible { path: path.to_owned(), why: strip_path(&one_line(error), path) }
        }
        Ok(_) => LoadError::NotPrecompiled { path: path.to_owned() },
        Err(e) => LoadError::Damaged { path: path.to_owned(), why: one_line(&e) },
    }
}

fn strip_path(line: &str, path: &Path) -> String {
    let prefix = format!("failed deserialization for: {}: ", path.display());
    line.strip_prefix(&prefix).unwrap_or(line).to_owned()
}

/// Writes `module`, compiled by this host's engine, as a `.cwasm` at `output`.
pub fn precompile(module: &Module, output: &Path) -> Result<usize, LoadError> {
    let bytes =
        module.serialize().map_err(|e| LoadError::Write { path: output.to_owned(), why: one_line(&e) })?;
    std::fs::write(output, &bytes)
        .map_err(|e| LoadError::Write { path: output.to_owned(), why: e.to_string() })?;
    Ok(bytes.len())
}

fn read_error(path: &Path, e: &std::io::Error) -> LoadError {
    LoadError::Read { path: path.to_owned(), why: e.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compilers_parse_by_name() {
        assert_eq!("cranelift".parse(), Ok(Compiler::Cranelift));
        assert_eq!("winch".parse(), Ok(Compiler::Winch));
        assert!("Winch".parse::<Compiler>().is_err());
    }
}
