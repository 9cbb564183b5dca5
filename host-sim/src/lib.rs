//! The wasmtime host (to come).
