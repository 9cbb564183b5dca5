//! What the test files share: the gateways to run a corpus through.

#![allow(dead_code)]

use std::path::PathBuf;

use runtime::{EngineOptions, ModuleSource};
use runtime::{Reusable, Runtime};
use testkit::gateway::{Decision, Gateway, Native};

/// The module built from the test fixture by `make fixture`.
pub fn module_path() -> PathBuf {
    testkit::gateway::fixture_wasm()
}

/// Every gateway the corpus runs through: the real module in wasmtime (a
/// fresh instance per request, and one instance reused for every request),
/// and the native rlib (the same code, compiled for the host).
pub fn gateways() -> Vec<Box<dyn Gateway>> {
    vec![Box::new(Wasm::load(false)), Box::new(Wasm::load(true)), Box::new(Native::new())]
}

/// `dist/gateway.wasm` in host-sim's wasmtime runtime.
pub struct Wasm {
    runtime: Runtime,
    reusable: Option<Reusable>,
}

impl Wasm {
    /// Loads the module; `reuse` keeps one instance for every request.
    pub fn load(reuse: bool) -> Wasm {
        let path = module_path();
        assert!(path.exists(), "{} is missing: run `make fixture` first", path.display());
        // No CPU deadline: a loaded test machine must not turn into a 503.
        let options = EngineOptions { no_deadline: true, ..EngineOptions::default() };
        let runtime = Runtime::load(&options, &ModuleSource::Wasm(path.clone()), 2)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Wasm { runtime, reusable: reuse.then(Reusable::default) }
    }
}

impl Gateway for Wasm {
    fn name(&self) -> &'static str {
        if self.reusable.is_some() { "wasm, reused instance" } else { "wasm, fresh instance" }
    }

    fn decide(&mut self, head: &[u8], now: f64) -> Decision {
        let outcome = match &mut self.reusable {
            Some(reusable) => self.runtime.decide_reused(reusable, head, now),
            None => self.runtime.decide_fresh(head, now),
        };
        // host-sim has read the output with the contract's decoder (and
        // refuses a malformed one); the same checks apply to its bytes.
        match outcome {
            Ok(decision) => {
                Decision { status: u32::from(decision.status()), output: decision.as_bytes().to_vec() }
            }
            // A trap, a timeout or a malformed output: status 0 fails every check.
            Err(e) => Decision { status: 0, output: format!("guest error: {e:?}").into_bytes() },
        }
    }
}
