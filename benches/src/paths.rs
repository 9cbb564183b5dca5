//! The workspace's files the benches read and write, from its root.

use std::path::{Path, PathBuf};

/// The deployable module, relative to the workspace root.
pub const MODULE: &str = "dist/gateway.wasm";

/// Where the benches put what they build (`.cwasm` files, module variants).
pub const VARIANTS_DIR: &str = "target/bench-variants";

/// The workspace root (the benches crate's parent).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The deployable module's path.
pub fn module_path() -> PathBuf {
    root().join(MODULE)
}

/// `name` in [`VARIANTS_DIR`], which is created if needed.
pub fn variants_path(name: &str) -> PathBuf {
    let dir = root().join(VARIANTS_DIR);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir.join(name)
}
