//! `host-sim compile`: precompile a `.wasm` into a `.cwasm` for this host's
//! engine settings, after checking that the module follows the contract.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::args::EngineArgs;

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
    pub engine: EngineArgs,
}

/// Runs `host-sim compile`.
pub fn run(args: &CompileArgs) -> ExitCode {
    match runtime::precompile_file(&args.engine.options(), &args.input, &args.output) {
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
