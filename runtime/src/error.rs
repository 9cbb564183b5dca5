//! The runtime's errors: one enum per concern, each printing as one line.
//!
//! [`LoadError`] is everything that stops the host from running a module at
//! all (host-sim prints it and exits non-zero). [`GuestError`] is a request
//! the module could not decide (the client gets a 500 or 503 and the host
//! carries on); it knows its HTTP status.

use std::path::PathBuf;

use contract::fields::HostAnswer;
use wasmtime::Trap;

use crate::limits::MemoryCapExceeded;

/// Why a module could not be loaded, compiled, or accepted.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The engine could not be created from the configuration.
    #[error("engine configuration refused: {0}")]
    Engine(String),
    /// The file could not be read.
    #[error("cannot read {path}: {why}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        why: String,
    },
    /// A `--cwasm` file that is not a precompiled wasmtime module.
    #[error(
        "{path} is not a precompiled wasmtime module (.cwasm); pass a .wasm with --wasm, or run `host-sim compile`"
    )]
    NotPrecompiled {
        /// The file.
        path: PathBuf,
    },
    /// A `--cwasm` file that is truncated or damaged.
    #[error(
        "{path} is not a valid precompiled module (truncated or damaged?); recompile it with `host-sim compile`: {why}"
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What the ELF reader found.
        why: String,
    },
    /// A precompiled module from another wasmtime version, other engine
    /// settings, or a damaged file.
    #[error(
        "{path} was not produced by this host's engine (same wasmtime version and settings); recompile it with `host-sim compile`: {why}"
    )]
    Incompatible {
        /// The file.
        path: PathBuf,
        /// What wasmtime found wrong.
        why: String,
    },
    /// The WebAssembly did not validate or compile.
    #[error("cannot compile {path}: {why}")]
    Compile {
        /// The file.
        path: PathBuf,
        /// The compiler's reason.
        why: String,
    },
    /// The module imports something: the gateway contract allows no imports.
    #[error("the module imports {0}; a gateway module must import nothing (worker/ABI.md)")]
    HasImports(String),
    /// An export the contract requires is missing.
    #[error("the module does not export `{0}` (worker/ABI.md)")]
    MissingExport(&'static str),
    /// An export has the wrong kind or signature.
    #[error("the module's export `{name}` is {found}, expected {expected} (worker/ABI.md)")]
    ExportType {
        /// The export.
        name: &'static str,
        /// What the contract says.
        expected: &'static str,
        /// What the module has.
        found: String,
    },
    /// The module speaks a contract version this host does not know.
    #[error("the module's abi_version is {0}; this host knows version {known} only", known = contract::ABI_VERSION)]
    AbiVersion(u32),
    /// The module could not be instantiated or probed.
    #[error("cannot instantiate the module: {0}")]
    Instantiate(String),
    /// The thread that drives the CPU deadline could not be started.
    #[error("cannot start the CPU-deadline ticker thread: {0}")]
    Ticker(#[source] std::io::Error),
    /// Writing a compiled artifact failed.
    #[error("cannot write {path}: {why}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        why: String,
    },
}

/// Why one request got no decision from the module. The host answers with
/// [`GuestError::status`] and [`GuestError::reason`] and goes on serving.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuestError {
    /// The guest ran past its CPU deadline (epoch interruption).
    #[error("guest exceeded its CPU deadline")]
    Deadline,
    /// The guest tried to grow its linear memory past the cap.
    #[error("guest exceeded its memory limit")]
    MemoryLimit,
    /// The guest trapped (a bug in the module: the contract says it never traps).
    #[error("guest trapped: {0}")]
    Trap(String),
    /// Every instance slot of the pool is busy.
    #[error("no instance slot free")]
    NoSlot,
    /// Instantiation failed for another reason.
    #[error("guest instantiation failed: {0}")]
    Instantiate(String),
    /// The module's output does not follow the contract's format.
    #[error("guest answered with malformed output: {0}")]
    Undecodable(#[from] contract::DecodeError),
    /// The module's exports or memory do not behave as the contract says.
    #[error("guest broke the contract: {0}")]
    BadOutput(&'static str),
}

impl GuestError {
    /// The HTTP status the client gets: 503 for a deadline or a full pool
    /// (try again), 500 for everything that is the module's fault.
    pub fn status(&self) -> u16 {
        self.answer().status()
    }

    /// The reason as a short phrase (the `Display` text): for logs and `eval`.
    pub fn reason(&self) -> String {
        self.to_string()
    }

    /// The answer the client gets, as `worker/ABI.md` ("Answers the host
    /// makes itself") fixes it for every host: the details stay in the
    /// host's log.
    pub fn answer(&self) -> HostAnswer {
        match self {
            GuestError::Deadline => HostAnswer::ModuleOutOfTime,
            GuestError::NoSlot => HostAnswer::GatewayBusy,
            _ => HostAnswer::ModuleFailed,
        }
    }

    /// True when the instance that produced the error must be thrown away
    /// (its state is unknown after a trap).
    pub fn poisons_instance(&self) -> bool {
        matches!(self, GuestError::Deadline | GuestError::MemoryLimit | GuestError::Trap(_))
    }
}

/// One line from a wasmtime error: its message and every cause, joined by `: `.
pub fn one_line(error: &wasmtime::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line.replace('\n', " ")
}

/// Turns a wasmtime error from a call into the host's reason.
pub(crate) fn classify(error: &wasmtime::Error) -> GuestError {
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
