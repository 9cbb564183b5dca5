//! The flags every command shares: where the module comes from, and the
//! engine and instance settings. They turn into the runtime's own types
//! ([`runtime::EngineOptions`], [`runtime::ModuleSource`],
//! [`runtime::Isolation`]), which know nothing of a command line.

use std::path::PathBuf;

use runtime::{Compiler, EngineOptions, Isolation, ModuleSource};

/// The engine and instance settings shared by every command. Changing the
/// compiler or `--no-deadline` changes the compiled code: a `.cwasm` must be
/// compiled with the same flags it is run with.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// The compiler for .wasm input (and for `compile`): cranelift or winch.
    #[arg(long, default_value = "cranelift")]
    pub strategy: Compiler,

    /// Linear-memory cap per instance, in bytes (suffixes KiB and MiB accepted).
    /// A guest that grows past it is stopped and answered with 500.
    #[arg(long, value_parser = parse_size, default_value = "2MiB")]
    pub memory_cap: u64,

    /// CPU deadline per request, in milliseconds (epoch interruption).
    /// A guest that runs past it is stopped and answered with 503.
    #[arg(long, default_value_t = runtime::engine::DEFAULT_DEADLINE_MS)]
    pub deadline_ms: f64,

    /// Compile without epoch interruption: no CPU deadline (for measuring its cost).
    #[arg(long)]
    pub no_deadline: bool,

    /// Native stack the guest may use, in bytes (suffixes KiB and MiB accepted).
    #[arg(long, value_parser = parse_size, default_value = "64KiB")]
    pub max_wasm_stack: u64,

    /// Instance isolation: a fresh instance per request, or one reused per
    /// thread: fresh or reuse.
    #[arg(long, default_value = "fresh")]
    pub isolation: Isolation,
}

impl EngineArgs {
    /// The runtime's engine options these flags name.
    pub fn options(&self) -> EngineOptions {
        EngineOptions {
            strategy: self.strategy,
            memory_cap: self.memory_cap,
            deadline_ms: self.deadline_ms,
            no_deadline: self.no_deadline,
            max_wasm_stack: self.max_wasm_stack,
            ..EngineOptions::default()
        }
    }
}

/// The `--wasm PATH | --cwasm PATH` choice shared by the commands.
#[derive(Debug, Clone, clap::Args)]
pub struct SourceArgs {
    /// The WebAssembly module to compile and run.
    #[arg(long, value_name = "PATH", conflicts_with = "cwasm")]
    pub wasm: Option<PathBuf>,
    /// A precompiled module from `host-sim compile` (same flags required).
    #[arg(long, value_name = "PATH")]
    pub cwasm: Option<PathBuf>,
}

impl SourceArgs {
    /// The chosen source; `dist/gateway.wasm` when neither flag is given.
    pub fn source(&self) -> ModuleSource {
        ModuleSource::from_flags(self.wasm.as_deref(), self.cwasm.as_deref())
    }
}

/// The config that names a module's one issuer when the module has no
/// label table (no rules, one issuer, no fetched keys: it labels that
/// issuer `0`).
#[derive(Debug, Clone, clap::Args)]
pub struct NamingArgs {
    /// The gateway config the module was built from: its issuer's `iss`
    /// names the module's one issuer in metrics and logs when the module has
    /// no label table. Used only when it is the module's (the same routes,
    /// its `iss` in the module). Default: gateway.toml, when it is.
    #[arg(long = "config", value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// Parses `2097152`, `2MiB`, `128KiB` or `64k` into bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let (digits, shift) = if let Some(d) = lower.strip_suffix("mib").or_else(|| lower.strip_suffix('m')) {
        (d, 20)
    } else if let Some(d) = lower.strip_suffix("kib").or_else(|| lower.strip_suffix('k')) {
        (d, 10)
    } else {
        (lower.as_str(), 0)
    };
    let n: u64 =
        digits.trim().parse().map_err(|_| format!("not a size: {text:?} (e.g. 2MiB, 128KiB, 65536)"))?;
    n.checked_shl(shift).filter(|v| v >> shift == n).ok_or_else(|| format!("size too large: {text}"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("128KiB"), Ok(128 << 10));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
    }

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        engine: EngineArgs,
    }

    #[test]
    fn the_flags_defaults_are_the_runtimes_defaults() {
        let flags = Flags::try_parse_from(["host-sim"]).expect("no flags");
        assert_eq!(flags.engine.options(), EngineOptions::default());
        assert_eq!(flags.engine.isolation, Isolation::default());
    }

    #[test]
    fn compilers_and_isolation_modes_are_named() {
        let flags = Flags::try_parse_from(["host-sim", "--strategy", "winch", "--isolation", "reuse"])
            .expect("known names");
        assert_eq!((flags.engine.strategy, flags.engine.isolation), (Compiler::Winch, Isolation::Reuse));
        let refused =
            Flags::try_parse_from(["host-sim", "--strategy", "v8"]).expect_err("an unknown compiler");
        assert!(refused.to_string().contains("cranelift, winch"), "{refused}");
    }
}
