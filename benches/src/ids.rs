//! Every measured figure's name, written once. The bench files register
//! their benchmarks under these ids, `bench-tool paired` writes its figures
//! under them, and the report looks figures up by them and quotes the
//! command that reproduces each: renaming a benchmark renames it everywhere,
//! and a figure the report asks for but the run did not produce fails the
//! report with its name.
//!
//! Rows of one request kind or one phase take the kind's or the phase's name
//! ([`crate::corpus::slug`], [`crate::corpus::PHASES`]) within their group.

/// What produces a group's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tool {
    /// A criterion bench file, `benches/benches/<name>.rs`.
    Criterion(&'static str),
    /// `bench-tool paired`: comparisons measured interleaved.
    Paired,
    /// `benches/node/bench.mjs`.
    Node,
}

/// A group of figures: criterion's benchmark group, or a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Group {
    /// The group's name (criterion's group id).
    pub name: &'static str,
    /// What measures it.
    pub tool: Tool,
}

/// One figure: its group and its name in the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id {
    /// The group.
    pub group: Group,
    /// The name within the group (criterion's function id).
    pub name: &'static str,
}

/// The criterion settings the quoted commands use (`benches/run.sh`'s defaults).
const CRITERION_ARGS: &str = "--warm-up-time 1 --measurement-time 2";

impl Group {
    /// The figure `name` of this group.
    pub const fn id(self, name: &'static str) -> Id {
        Id { group: self, name }
    }

    /// The command that measures this group (alone, for criterion).
    pub fn command(self) -> String {
        command(self.tool, &format!("{}/", self.name))
    }
}

impl Id {
    /// `group/name`: criterion's full id, and the key of the other tools' output.
    pub fn full(&self) -> String {
        format!("{}/{}", self.group.name, self.name)
    }

    /// The command that measures this figure (alone, for criterion).
    pub fn command(&self) -> String {
        command(self.group.tool, &self.full())
    }
}

fn command(tool: Tool, filter: &str) -> String {
    match tool {
        Tool::Criterion(bench) => {
            format!("`cargo bench -p gateway-benches --bench {bench} -- {CRITERION_ARGS} '{filter}'`")
        }
        Tool::Paired => "`target/release/bench-tool paired out.json`".into(),
        Tool::Node => "`target/release/bench-tool corpus c.json && node benches/node/bench.mjs c.json dist/gateway.wasm out.json`".into(),
    }
}

const fn criterion(name: &'static str, bench: &'static str) -> Group {
    Group { name, tool: Tool::Criterion(bench) }
}

const fn paired(name: &'static str) -> Group {
    Group { name, tool: Tool::Paired }
}

// ---- benches/benches/native.rs ------------------------------------------------

/// The worker's rlib per request: the mix, and each request kind.
pub const PER_REQUEST_NATIVE: Group = criterion("per_request/native", "native");
/// The whole mix, natively.
pub const NATIVE_MIX: Id = PER_REQUEST_NATIVE.id("mix");

/// Each stage of the request path called on its own, natively.
pub const STAGES_NATIVE: Group = criterion("stages/native", "native");
/// `request::extract_bearer`.
pub const STAGE_PARSE_HEAD: Id = STAGES_NATIVE.id("1_parse_head");
/// `jws::split`.
pub const STAGE_SPLIT: Id = STAGES_NATIVE.id("2_split");
/// `jws::decode` twice and `jws::decode_signature`.
pub const STAGE_BASE64URL: Id = STAGES_NATIVE.id("3_base64url");
/// `header::select_key`.
pub const STAGE_HEADER_JSON: Id = STAGES_NATIVE.id("4_header_json");
/// `signature::verify`.
pub const STAGE_HMAC: Id = STAGES_NATIVE.id("5_hmac_sha256");
/// `claims::check`.
pub const STAGE_CLAIMS: Id = STAGES_NATIVE.id("6_claims_json_and_route");
/// `route::lookup`.
pub const STAGE_ROUTE: Id = STAGES_NATIVE.id("7_route");
/// `response::write_grant`.
pub const STAGE_WRITE: Id = STAGES_NATIVE.id("8_write_decision");
/// `worker::handle` on the same valid request.
pub const STAGE_WHOLE: Id = STAGES_NATIVE.id("all_handle_valid");
/// HMAC-SHA256 of the same bytes with a new `Hmac`.
pub const FLOOR_HMAC: Id = STAGES_NATIVE.id("floor_hmac_sha256");
/// The same from a keyed `Hmac` cloned.
pub const FLOOR_HMAC_PREKEYED: Id = STAGES_NATIVE.id("floor_hmac_sha256_prekeyed");
/// SHA-256 alone of the same bytes.
pub const FLOOR_SHA256: Id = STAGES_NATIVE.id("floor_sha256_only");

// ---- benches/benches/wasm.rs --------------------------------------------------

/// The module in the shipped host, per request over the mix, one row per setup.
pub const PER_REQUEST_WASMTIME: Group = criterion("per_request/wasmtime", "wasm");
/// Reused instance, the host's defaults (Cranelift JIT, deadline, pool).
pub const REUSE_DEADLINE: Id = PER_REQUEST_WASMTIME.id("reuse_deadline");
/// Reused instance, compiled without epoch interruption.
pub const REUSE_NO_DEADLINE: Id = PER_REQUEST_WASMTIME.id("reuse_no_deadline");
/// Reused instance, loaded from a `.cwasm`.
pub const REUSE_CWASM: Id = PER_REQUEST_WASMTIME.id("reuse_cwasm_deadline");
/// Reused instance, compiled by Winch.
pub const REUSE_WINCH: Id = PER_REQUEST_WASMTIME.id("reuse_winch_deadline");
/// Fresh instance per request, the host's defaults.
pub const FRESH_DEADLINE: Id = PER_REQUEST_WASMTIME.id("fresh_deadline");
/// Fresh instance, compiled without epoch interruption.
pub const FRESH_NO_DEADLINE: Id = PER_REQUEST_WASMTIME.id("fresh_no_deadline");
/// Fresh instance, loaded from a `.cwasm`.
pub const FRESH_CWASM: Id = PER_REQUEST_WASMTIME.id("fresh_cwasm_deadline");
/// Fresh instance from wasmtime's on-demand allocator instead of the pool.
pub const FRESH_ON_DEMAND: Id = PER_REQUEST_WASMTIME.id("fresh_on_demand_deadline");

/// Each request kind in a reused instance of the shipped host.
pub const PER_KIND_WASMTIME: Group = criterion("per_kind/wasmtime_reuse", "wasm");

/// The phase requests in a reused instance, no deadline.
pub const STAGES_WASMTIME: Group = criterion("stages/wasmtime", "wasm");
/// The phase requests natively, for the same differences.
pub const STAGES_NATIVE_BY_DIFFERENCE: Group = criterion("stages/native_by_difference", "wasm");

/// The pieces of a cold start in process.
pub const COLD: Group = criterion("cold/wasmtime", "wasm");
/// `host_sim::engine::compile` with Cranelift.
pub const COLD_JIT_CRANELIFT: Id = COLD.id("jit_cranelift");
/// The same with Winch.
pub const COLD_JIT_WINCH: Id = COLD.id("jit_winch");
/// `host_sim::engine::deserialize` of the `.cwasm`.
pub const COLD_DESERIALIZE: Id = COLD.id("deserialize_cwasm");
/// `host_sim::engine::build`: the engine with its pool.
pub const COLD_ENGINE: Id = COLD.id("engine_build");
/// `host_sim::instance::Prepared::new`: the contract check and `InstancePre`.
pub const COLD_INSTANCE_PRE: Id = COLD.id("instance_pre");
/// `Prepared::probe`: the first instance, its `abi_version` and layout.
pub const COLD_FIRST_INSTANCE: Id = COLD.id("first_instantiate");
/// Deserialize, `InstancePre`, first instance and first request.
pub const COLD_FIRST_REQUEST: Id = COLD.id("deserialize_instantiate_first_request");

// ---- benches/benches/peers.rs -------------------------------------------------

/// The worker's token path beside the `jsonwebtoken` crate.
pub const PER_TOKEN: Group = criterion("per_token/native", "peers");
/// The worker, valid token.
pub const TOKEN_WORKER_VALID: Id = PER_TOKEN.id("worker_valid");
/// `jsonwebtoken`, valid token.
pub const TOKEN_JWT_VALID: Id = PER_TOKEN.id("jsonwebtoken_valid");
/// The worker, expired token.
pub const TOKEN_WORKER_EXPIRED: Id = PER_TOKEN.id("worker_expired");
/// `jsonwebtoken`, expired token.
pub const TOKEN_JWT_EXPIRED: Id = PER_TOKEN.id("jsonwebtoken_expired");

/// The same decision by a microservice on loopback.
pub const MICROSERVICE: Group = criterion("per_request/microservice", "peers");
/// Keep-alive round trip over the mix.
pub const MICROSERVICE_MIX: Id = MICROSERVICE.id("loopback_keep_alive_mix");
/// The same with a thread spinning on the other core.
pub const MICROSERVICE_SPINNER: Id = MICROSERVICE.id("loopback_keep_alive_mix_spinner");
/// The decision in process, natively, in the same run.
pub const MICROSERVICE_IN_PROCESS: Id = MICROSERVICE.id("in_process_mix");

// ---- bench-tool paired --------------------------------------------------------

/// Reused instance: JIT, no deadline, `.cwasm` and Winch, interleaved.
pub const PAIRED_REUSE: Group = paired("interleaved/reuse");
/// Fresh instance: JIT, no deadline and `.cwasm`, interleaved.
pub const PAIRED_FRESH: Group = paired("interleaved/fresh");
/// The size-table variants in a reused instance ([`VARIANTS`]).
pub const PAIRED_VARIANTS_REUSE: Group = paired("interleaved/variants_reuse");
/// The size-table variants in a fresh instance.
pub const PAIRED_VARIANTS_FRESH: Group = paired("interleaved/variants_fresh");
/// The deadline's cost with sha2's compact and unrolled rounds.
pub const PAIRED_EPOCH_BY_SHA2: Group = paired("interleaved/epoch_by_sha2");
/// HMAC kernels in wasm: the worker's against a precomputed key state.
pub const PAIRED_KERNELS_HMAC: Group = paired("interleaved/kernels_hmac");
/// Token-split kernels in wasm: the worker's against a class table.
pub const PAIRED_KERNELS_SPLIT: Group = paired("interleaved/kernels_split");
/// The HMAC comparison natively.
pub const PAIRED_NATIVE_HMAC: Group = paired("interleaved/native_hmac");

/// Cranelift JIT with the deadline: the host's defaults (in the reuse and fresh groups).
pub const JIT_DEADLINE: &str = "jit_deadline";
/// Cranelift JIT without epoch interruption.
pub const JIT_NO_DEADLINE: &str = "jit_no_deadline";
/// The `.cwasm` with the deadline.
pub const CWASM_DEADLINE: &str = "cwasm_deadline";
/// Winch with the deadline.
pub const WINCH_DEADLINE: &str = "winch_deadline";

/// sha2 compact (the shipped module, a3), deadline on.
pub const SHA2_COMPACT_DEADLINE: Id = PAIRED_EPOCH_BY_SHA2.id("compact_deadline");
/// sha2 compact, deadline off.
pub const SHA2_COMPACT_NO_DEADLINE: Id = PAIRED_EPOCH_BY_SHA2.id("compact_no_deadline");
/// sha2 unrolled (b3), deadline on.
pub const SHA2_DEFAULT_DEADLINE: Id = PAIRED_EPOCH_BY_SHA2.id("default_deadline");
/// sha2 unrolled, deadline off.
pub const SHA2_DEFAULT_NO_DEADLINE: Id = PAIRED_EPOCH_BY_SHA2.id("default_no_deadline");

/// The worker's `signature::verify` in the kernel module.
pub const KERNEL_HMAC_WORKER: Id = PAIRED_KERNELS_HMAC.id("hmac_worker");
/// HMAC from a precomputed key state in the kernel module.
pub const KERNEL_HMAC_PREKEYED: Id = PAIRED_KERNELS_HMAC.id("hmac_prekeyed");
/// The worker's `jws::split` in the kernel module.
pub const KERNEL_SPLIT_WORKER: Id = PAIRED_KERNELS_SPLIT.id("split_worker");
/// A token split with a 256-entry class table.
pub const KERNEL_SPLIT_TABLE: Id = PAIRED_KERNELS_SPLIT.id("split_table");
/// HMAC-SHA256 with a new `Hmac`, natively.
pub const NATIVE_HMAC_WORKER: Id = PAIRED_NATIVE_HMAC.id("hmac_worker");
/// The same from a keyed `Hmac` cloned, natively.
pub const NATIVE_HMAC_PREKEYED: Id = PAIRED_NATIVE_HMAC.id("hmac_prekeyed");

/// A module variant of the size table, built by `benches/run.sh` step 1 into
/// `target/bench-variants/<name>.wasm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// The file stem.
    pub name: &'static str,
    /// How it is built.
    pub how: &'static str,
}

/// The shipped module's variant.
pub const SHIPPED_VARIANT: &str = "a3-compact-oz";

/// Every variant `benches/run.sh` builds, in the size table's order.
pub const VARIANTS: [Variant; 10] = [
    Variant {
        name: "a1-compact-raw",
        how: "`cargo worker-wasm`: opt-level z, LTO, 1 CGU, panic abort, strip; sha2 compact; 32 KiB stack",
    },
    Variant {
        name: "a2-compact-stripped",
        how: "a1 + `wasm-opt --strip-debug --strip-producers --strip-target-features` (no optimisation)",
    },
    Variant { name: SHIPPED_VARIANT, how: "a1 + `wasm-opt -Oz` (= `dist/gateway.wasm`)" },
    Variant {
        name: "b1-default-raw",
        how: "as a1 with sha2's default (unrolled) backend: `RUSTFLAGS=\"-C link-arg=-zstack-size=32768\"`",
    },
    Variant { name: "b3-default-oz", how: "b1 + `wasm-opt -Oz`" },
    Variant { name: "c1-o3-raw", how: "as a1 with `--config 'profile.wasm.opt-level=3'`" },
    Variant { name: "c3-o3-wasmopt-o3", how: "c1 + `wasm-opt -O3`" },
    Variant { name: "d3-stack1m-oz", how: "as a3 with rustc's default 1 MiB stack (no `-zstack-size`)" },
    Variant {
        name: "e1-sha2o3-raw",
        how: "as a1 with opt-level 3 for sha2 only: `--config 'profile.wasm.package.sha2.opt-level=3'`",
    },
    Variant { name: "e3-sha2o3-oz", how: "e1 + `wasm-opt -Oz`" },
];

// ---- benches/node/bench.mjs ---------------------------------------------------

/// The Node.js rows (`rows` of its output; the per-kind rows are
/// `wasm_reuse_<kind>` and `js_<kind>`).
pub const NODE: Group = Group { name: "node", tool: Tool::Node };
/// `WebAssembly.compile`.
pub const NODE_COMPILE: Id = NODE.id("compile");
/// `WebAssembly.instantiate(module)`.
pub const NODE_INSTANTIATE: Id = NODE.id("instantiate");
/// Compile, instantiate and the first request.
pub const NODE_FIRST_REQUEST: Id = NODE.id("compile_instantiate_first_request");
/// The module on V8, reused instance, over the mix.
pub const NODE_WASM_REUSE: Id = NODE.id("wasm_reuse_mix");
/// The module on V8, a new instance per request.
pub const NODE_WASM_FRESH: Id = NODE.id("wasm_fresh_mix");
/// The validation in plain JavaScript, over the mix.
pub const NODE_JS: Id = NODE.id("js_mix");
/// `node:crypto`'s HMAC-SHA256 of the valid token's signing input.
pub const NODE_HMAC: Id = NODE.id("js_hmac_only");

/// Every group, for resolving the commands the report quotes.
pub const GROUPS: [Group; 18] = [
    PER_REQUEST_NATIVE,
    STAGES_NATIVE,
    PER_REQUEST_WASMTIME,
    PER_KIND_WASMTIME,
    STAGES_WASMTIME,
    STAGES_NATIVE_BY_DIFFERENCE,
    COLD,
    PER_TOKEN,
    MICROSERVICE,
    PAIRED_REUSE,
    PAIRED_FRESH,
    PAIRED_VARIANTS_REUSE,
    PAIRED_VARIANTS_FRESH,
    PAIRED_EPOCH_BY_SHA2,
    PAIRED_KERNELS_HMAC,
    PAIRED_KERNELS_SPLIT,
    PAIRED_NATIVE_HMAC,
    NODE,
];

/// The group named `name`, if any.
pub fn group(name: &str) -> Option<Group> {
    GROUPS.into_iter().find(|g| g.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_names_are_unique_and_none_is_a_prefix_of_another() {
        for a in GROUPS {
            for b in GROUPS {
                if a != b {
                    assert_ne!(a.name, b.name);
                    assert!(!b.name.starts_with(&format!("{}/", a.name)), "{} / {}", a.name, b.name);
                }
            }
        }
    }

    #[test]
    fn commands_name_the_bench_file_and_the_filter() {
        assert_eq!(
            NATIVE_MIX.command(),
            "`cargo bench -p gateway-benches --bench native -- --warm-up-time 1 --measurement-time 2 'per_request/native/mix'`"
        );
        assert_eq!(PAIRED_REUSE.command(), "`target/release/bench-tool paired out.json`");
    }
}
