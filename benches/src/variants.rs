//! The module variants of the size table, built by `benches/run.sh` step 1
//! into `target/bench-variants/<name>.wasm` and compared by
//! `bench-tool paired`.

/// A module variant: its file stem and how it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// The file stem.
    pub name: &'static str,
    /// How it is built.
    pub how: &'static str,
}

/// The shipped module's variant.
pub const SHIPPED: &str = "a3-compact-oz";

/// Every variant `benches/run.sh` builds, in the size table's order.
pub const VARIANTS: [Variant; 11] = [
    Variant {
        name: "a1-compact-raw",
        how: "`cargo worker-wasm --config build/size-profile.toml`: opt-level z (httparse 3, sha2 s), LLVM inline threshold 35, LTO, 1 CGU, panic abort, strip; sha2 compact; 32 KiB stack",
    },
    Variant {
        name: "a2-compact-stripped",
        how: "a1 + `wasm-opt --strip-debug --strip-producers --strip-target-features` (no optimisation)",
    },
    Variant { name: SHIPPED, how: "a1 + `wasm-opt -Oz` (= `dist/gateway.wasm`)" },
    Variant {
        name: "b1-default-raw",
        how: "as a1 with sha2's default (unrolled) backend: `RUSTFLAGS=\"-C link-arg=-zstack-size=32768 -C llvm-args=-inline-threshold=35\"` (no `sha2_backend_soft` cfg)",
    },
    Variant { name: "b3-default-oz", how: "b1 + `wasm-opt -Oz`" },
    Variant {
        name: "c1-o3-raw",
        how: "as a1 with `--config 'profile.wasm.opt-level=3'` and opt-level 3's inline threshold (the speed profile)",
    },
    Variant { name: "c3-o3-wasmopt-o3", how: "c1 + `wasm-opt -O3`" },
    Variant { name: "d3-stack1m-oz", how: "as a3 with rustc's default 1 MiB stack (no `-zstack-size`)" },
    Variant {
        name: "e1-sha2o3-raw",
        how: "as a1 with opt-level 3 for sha2 only: `--config 'profile.wasm.package.sha2.opt-level=3'`",
    },
    Variant { name: "e3-sha2o3-oz", how: "e1 + `wasm-opt -Oz`" },
    Variant {
        name: "f3-inline5-oz",
        how: "as a3 without `build/size-profile.toml`: opt-level z's own inline threshold (5)",
    },
];
