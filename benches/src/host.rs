//! The module in the shipped runtime: `runtime::engine` builds the engine
//! and loads the module, `runtime::Runtime` decides requests, the same code
//! `host-sim serve` runs. Each benchmark row changes one engine setting from
//! the runtime's defaults ([`Setup`]), through the runtime's own options type.

use std::path::Path;

use runtime::{Compiler, EngineOptions, MemoryReset, ModuleSource, Reusable, Runtime};

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
    /// A dropped instance's memory reset page by page through Linux's
    /// `PAGEMAP_SCAN` instead of whole (what resetting it whole saves).
    PagemapScan,
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
            Setup::PagemapScan => EngineOptions { memory_reset: MemoryReset::Written, ..defaults },
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
        self.try_load_module(wasm).unwrap_or_else(|e| panic!("{e} (run `make worker`)"))
    }

    /// [`Setup::load_module`] for a module a user names: what is wrong with
    /// it (it cannot be read or compiled, or does not decide the mix as the
    /// mix's config does), in one line, instead of a panic.
    pub fn try_load_module(self, wasm: &Path) -> Result<Runtime, String> {
        let runtime = self.try_load_unchecked(wasm)?;
        check(&runtime).map_err(|e| format!("{}: {e}", wasm.display()))?;
        Ok(runtime)
    }

    /// The runtime of this setup for the module at `wasm`, a module of
    /// another config than the mix's (its caller checks its answers).
    pub fn load_unchecked(self, wasm: &Path) -> Runtime {
        self.try_load_unchecked(wasm).unwrap_or_else(|e| panic!("{e} (run `make worker`)"))
    }

    fn try_load_unchecked(self, wasm: &Path) -> Result<Runtime, String> {
        let options = self.options();
        let source = match self {
            Setup::Cwasm => {
                let stem = wasm.file_stem().map_or("module".into(), |s| s.to_string_lossy());
                let cwasm = variants_path(&format!("{stem}.bench.cwasm"));
                runtime::precompile_file(&options, wasm, &cwasm)
                    .map_err(|e| format!("{}: {e}", wasm.display()))?;
                ModuleSource::Cwasm(cwasm)
            }
            _ => ModuleSource::Wasm(wasm.to_owned()),
        };
        Runtime::load(&options, &source, SLOTS).map_err(|e| format!("{}: {e}", source.path().display()))
    }
}

/// Checks `runtime` against the cases, in a reused and in fresh instances:
/// each must get the status its kind expects. Runs before anything is timed,
/// so that a module or corpus that disagree fail loudly; the error names the
/// first case that does not.
fn check(runtime: &Runtime) -> Result<(), String> {
    let mut reusable = Reusable::default();
    for case in corpus::cases() {
        let head = case.head.as_bytes();
        let expected = case.kind.expected_status();
        let reused = runtime.decide_reused(&mut reusable, head, NOW as f64).map(|d| d.status());
        let fresh = runtime.decide_fresh(head, NOW as f64).map(|d| d.status());
        for (instance, got) in [("reused", reused), ("fresh", fresh)] {
            match got {
                Ok(status) if status == expected => {}
                Ok(status) => {
                    return Err(format!(
                        "{} ({instance} instance): answered {status}, the mix expects {expected} \
                         (a module built from another config?)",
                        corpus::slug(case.kind)
                    ));
                }
                Err(e) => return Err(format!("{} ({instance} instance): {e}", corpus::slug(case.kind))),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::root;

    /// A module a user names that cannot serve the mix is one line saying
    /// why (what `bench-tool modules` prints), not a panic; the module the
    /// mix is made for loads.
    #[test]
    fn a_module_that_cannot_serve_the_mix_is_named_in_one_line() {
        let garbage = variants_path("not-a-module.wasm");
        std::fs::write(&garbage, b"not wasm").expect("write");
        let Err(error) = Setup::Deadline.try_load_module(&garbage) else {
            panic!("a file that is not wasm loaded")
        };
        assert!(error.contains("cannot compile") && !error.contains('\n'), "{error}");

        // Built from testkit/fixture-policies.toml (`make fixture`): its rules
        // answer the mix's valid request otherwise than gateway.toml does.
        let other = root().join("target/fixture/gateway-policies.wasm");
        assert!(other.is_file(), "{} is missing: run `make fixture`", other.display());
        let Err(error) = Setup::Deadline.try_load_module(&other) else {
            panic!("a module of another config passed the check")
        };
        assert!(error.contains("the mix expects 200") && !error.contains('\n'), "{error}");

        let shipped = module_path();
        assert!(shipped.is_file(), "{} is missing: run `make worker`", shipped.display());
        assert!(Setup::Deadline.try_load_module(&shipped).is_ok());
    }
}
