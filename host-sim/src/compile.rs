//! `host-sim compile`: precompile a `.wasm` into a `.cwasm` for this host's
//! engine settings, after checking that the module follows the contract.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::engine::{self, EngineOptions, ModuleSource};
use crate::error::LoadError;
use crate::instance::Prepared;

/// `host-sim compile` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct CompileArgs {
    /// The WebAssembly module.
    #[arg(value_name = "WASM")]
    pub input: PathBuf,
    /// Where to write the precompiled module.
    #[arg(short, long, value_name = "CWASM")]
    pub output: PathBuf,
    /// Engine settings: run the .cwasm with the same ones.
    #[command(flatten)]
    pub engine: EngineOptions,
}

/// Compiles `input` to `output`, refusing a module that breaks the contract.
/// Returns the artifact's size in bytes.
pub fn compile_file(
    options: &EngineOptions,
    input: &std::path::Path,
    output: &std::path::Path,
) -> Result<usize, LoadError> {
    let engine = engine::build(options, 1)?;
    let module = engine::load(&engine, &ModuleSource::Wasm(input.to_owned()))?;
    // The same checks as at run time: imports, exports, abi_version.
    Prepared::new(&engine, &module)?.probe(options)?;
    engine::precompile(&module, output)
}

/// Runs `host-sim compile`.
pub fn run(args: &CompileArgs) -> ExitCode {
    match compile_file(&args.engine, &args.input, &args.output) {
        Ok(bytes) => {
            eprintln!("wrote {} ({bytes} bytes)", args.output.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
