//! The module in the shipped runtime: `runtime::engine` builds the engine
//! and loads the module, `runtime::Runtime` decides requests, the same code
//! `host-sim serve` runs. Each benchmark row changes one engine setting from
//! the runtime's defaults ([`Setup`]), through the runtime's own options type.

use std::path::Path;

use runtime::{Compiler, EngineOptions, ModuleSource, Reusable, Runtime};

use crate::corpus::{self, NOW};
use crate::paths::{module_path, variants_path};

/// Instance slots per runtime: a benchmark holds one instance at a time.
const SLOTS: u32 = 4;

/// How a row sets up the host: the defaults, or one setting changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// The host's defaults: Cranelift JIT, CPU deadline, pooling allocator.
    Deadline,
    /// Compiled without epoch interruption: no deadline (what it costs).
    NoDeadline,
    /// The defaults, the module loaded from a `.cwasm` precompiled with them.
    Cwasm,
    /// Compiled by Winch, the baseline compiler.
    Winch,
    /// wasmtime's on-demand allocator instead of the pool.
    OnDemand,
}

impl Setup {
    /// The engine options of this setup.
    pub fn options(self) -> EngineOptions {
        let defaults = EngineOptions::default();
        match self {
            Setup::Deadline | Setup::Cwasm => defaults,
            Setup::NoDeadline => EngineOptions { no_deadline: true, ..defaults },
            Setup::Winch => EngineOptions { strategy: Compiler::Winch, ..defaults },
            Setup::OnDemand => EngineOptions { on_demand: true, ..defaults },
        }
    }

    /// The runtime of this setup for the deployable module (for
    /// [`Setup::Cwasm`], precompiled first by `runtime::precompile_file`).
    pub fn load(self) -> Runtime {
        self.load_module(&module_path())
    }

    /// The runtime of this setup for the module at `wasm`, checked against
    /// the request mix.
    pub fn load_module(self, wasm: &Path) -> Runtime {
        let runtime = self.load_unchecked(wasm);
        check(&runtime);
        runtime
    }

    /// The runtime of this setup for the module at `wasm`, a module of
    /// another config than the mix's (its caller checks its answers).
    pub fn load_unchecked(self, wasm: &Path) -> Runtime {
        let options = self.options();
        let source = match self {
            Setup::Cwasm => {
                let stem = wasm.file_stem().map_or("module".into(), |s| s.to_string_lossy());
                let cwasm = variants_path(&format!("{stem}.bench.cwasm"));
                runtime::precompile_file(&options, wasm, &cwasm)
                    .unwrap_or_else(|e| panic!("{}: {e} (run `make worker`)", wasm.display()));
                ModuleSource::Cwasm(cwasm)
            }
            _ => ModuleSource::Wasm(wasm.to_owned()),
        };
        Runtime::load(&options, &source, SLOTS)
            .unwrap_or_else(|e| panic!("{}: {e} (run `make worker`)", source.path().display()))
    }
}

/// Checks `runtime` against the cases, in a reused and in fresh instances:
/// each must get the status its kind expects. Runs before anything is timed,
/// so that a module or corpus that disagree fail loudly.
pub fn check(runtime: &Runtime) {
    let mut reusable = Reusable::default();
    for case in corpus::cases() {
        let head = case.head.as_bytes();
        let expected = Ok(case.kind.expected_status());
        let reused = runtime.decide_reused(&mut reusable, head, NOW as f64).map(|d| d.status());
        let fresh = runtime.decide_fresh(head, NOW as f64).map(|d| d.status());
        assert_eq!(reused, expected, "{} (reused instance)", corpus::slug(case.kind));
        assert_eq!(fresh, expected, "{} (fresh instance)", corpus::slug(case.kind));
    }
}
