#!/usr/bin/env bash
# Builds dist/gateway-envoy.wasm: the gateway core as an Envoy proxy-wasm
# filter (deploy/envoy/filter), with the same config compiled in as
# dist/gateway.wasm, at opt-level 3, its exports cut to the callbacks it
# uses, trimmed with wasm-opt -Oz. Prints its size.
#
# Environment:
#   GATEWAY_CONFIG  the gateway config to compile in (default: gateway.toml)
#   WASM_OUT        where to write the filter (default: dist/gateway-envoy.wasm)
#   WORKER_FEATURES the algorithms beside HS256 (rs256, es256, eddsa), as for build/worker.sh
#   ENVOY_FILTER_PROFILE  the cargo profile (default wasm-speed, opt-level 3:
#                   HMAC runs faster in Envoy's V8; "wasm" is the worker's
#                   size profile, opt-level z with build/size-profile.toml,
#                   smaller; deploy/envoy/README.md)
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${ENVOY_FILTER_PROFILE:-wasm-speed}
# The size profile takes build/size-profile.toml (its inline threshold), as
# build/worker.sh builds it; its rustflags add to the ones below.
size_flags=()
[ "$profile" = wasm ] && size_flags=(--config build/size-profile.toml)
raw=target/wasm32-unknown-unknown/$profile/gateway_envoy_filter.wasm
out=${WASM_OUT:-dist/gateway-envoy.wasm}
wasm_opt=node_modules/.bin/wasm-opt
[ -x "$wasm_opt" ] || { echo "error: $wasm_opt is missing; run 'make setup' (it runs npm ci)" >&2; exit 1; }

export GATEWAY_CONFIG="${GATEWAY_CONFIG:-gateway.toml}"
echo "==> cargo rustc -p gateway-envoy-filter --profile $profile (proxy-wasm ABI 0.2.1, config $GATEWAY_CONFIG)"
features=${WORKER_FEATURES:-}
# A 256 KiB stack instead of the core module's 32 KiB: the filter adds
# std's frames to the request path, and ES256's scalar arithmetic
# overflowed 32 KiB (a trap, answered 503: closed, but every ES256 token
# refused). The stack is per VM, not per request. These flags come after
# .cargo/config.toml's, so this stack size wins.
# And wasm's SIMD (simd128), which Envoy's V8 runs: it selects sha2's SIMD
# message schedule and lets the compiler widen the byte loops at
# opt-level 3. A reject (a full HMAC check) costs Envoy 2.7% less CPU for
# 3.1 KB of filter; the default module, which has a size line to keep,
# stays without it (docs/PERFORMANCE.md, "SIMD in the Envoy filter").
cargo rustc -p gateway-envoy-filter --lib --target wasm32-unknown-unknown --crate-type cdylib --profile "$profile" --quiet \
  ${features:+--features "$features"} "${size_flags[@]}" \
  --config 'target.wasm32-unknown-unknown.rustflags=["-C", "link-arg=-zstack-size=262144", "-C", "target-feature=+simd128"]'

mkdir -p "$(dirname "$out")"
# The features rustc enables by default for wasm32-unknown-unknown, and
# SIMD; Envoy's V8 supports them.
features=(--enable-bulk-memory --enable-bulk-memory-opt --enable-nontrapping-float-to-int
  --enable-sign-ext --enable-mutable-globals --enable-multivalue --enable-reference-types --enable-simd)
# The filter exports only the callbacks its build uses (deploy/envoy/filter/src/callbacks.rs
# compiles each with the cfg that needs it: the response callback and
# proxy_on_delete with CORS, the key fetcher's with keys fetched at run
# time), and Envoy skips a callback the module does not export. Of the
# exports deploy/envoy/filter/exports.json names, those the build has are
# kept; everything else the linker exports is cut.
roots=$(mktemp)
kept=$(mktemp)
trap 'rm -f "$roots" "$kept"' EXIT
node -e '
const fs = require("node:fs");
const [wasm, list, out] = process.argv.slice(1);
const has = new Set(WebAssembly.Module.exports(new WebAssembly.Module(fs.readFileSync(wasm))).map((e) => e.name));
// Envoy runs a stream on without a call when proxy_on_request_headers is
// missing (proxy-wasm-cpp-host, ContextBase::onRequestHeaders): such a
// module would let every request through unchecked.
for (const needed of ["proxy_on_request_headers", "malloc", "proxy_abi_version_0_2_1", "memory"]) {
  if (!has.has(needed)) {
    console.error(`error: ${wasm} does not export ${needed}: Envoy would not run the filter as built`);
    process.exit(1);
  }
}
fs.writeFileSync(out, JSON.stringify(JSON.parse(fs.readFileSync(list, "utf8")).filter((e) => has.has(e.export))));
' "$raw" deploy/envoy/filter/exports.json "$roots"
node_modules/.bin/wasm-metadce "${features[@]}" -f "$roots" "$raw" -o "$kept" >/dev/null
"$wasm_opt" "${features[@]}" -Oz --strip-debug --strip-producers --strip-target-features "$kept" -o "$out"
echo "==> $out: $(stat -c %s "$out") bytes after wasm-opt -Oz ($(stat -c %s "$raw") before)"
