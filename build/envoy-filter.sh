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
#                   opt-level z, 23 KB smaller; docs/PERFORMANCE.md)
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${ENVOY_FILTER_PROFILE:-wasm-speed}
raw=target/wasm32-unknown-unknown/$profile/gateway_envoy_filter.wasm
out=${WASM_OUT:-dist/gateway-envoy.wasm}
wasm_opt=node_modules/.bin/wasm-opt
[ -x "$wasm_opt" ] || { echo "error: $wasm_opt is missing; run 'make setup' (it runs npm ci)" >&2; exit 1; }

export GATEWAY_CONFIG="${GATEWAY_CONFIG:-gateway.toml}"
echo "==> cargo rustc -p gateway-envoy-filter --profile $profile (proxy-wasm 0.2, config $GATEWAY_CONFIG)"
features=${WORKER_FEATURES:-}
# A 256 KiB stack instead of the core module's 32 KiB: the filter adds the
# SDK's and std's frames to the request path, and ES256's scalar arithmetic
# overflowed 32 KiB (a trap, answered 503: closed, but every ES256 token
# refused). The stack is per VM, not per request. These flags come after
# .cargo/config.toml's, so this stack size wins.
cargo rustc -p gateway-envoy-filter --lib --target wasm32-unknown-unknown --crate-type cdylib --profile "$profile" --quiet \
  ${features:+--features "$features"} \
  --config 'target.wasm32-unknown-unknown.rustflags=["-C", "link-arg=-zstack-size=262144"]'

mkdir -p "$(dirname "$out")"
# The features rustc enables by default for wasm32-unknown-unknown; Envoy's V8 supports them.
features=(--enable-bulk-memory --enable-bulk-memory-opt --enable-nontrapping-float-to-int
  --enable-sign-ext --enable-mutable-globals --enable-multivalue --enable-reference-types)
# Only the callbacks the filter uses stay exported (deploy/envoy/filter/exports.json):
# the SDK exports every proxy_on_* callback, and Envoy calls each one the
# module exports (response body, log, done: three calls into the VM per
# request that do nothing here) and skips the ones it does not. A filter
# that fetches keys (its configuration starts a tick) also keeps the tick
# and the answer to its calls (exports-keys.json).
kept=$(mktemp)
roots=$(mktemp)
trap 'rm -f "$kept" "$roots"' EXIT
metadce() { node_modules/.bin/wasm-metadce "${features[@]}" -f "$1" "$raw" -o "$kept" >/dev/null; }
# The exports Envoy calls, and only those: Envoy skips a callback the module
# does not export. The key fetcher's (ticks, fetch answers) are kept when the
# filter was built with it (it imports the tick call only then), the response
# callback when the config changes responses (CORS; its additions import
# proxy_add_header_map_value only then).
metadce deploy/envoy/filter/exports.json
node -e '
const fs = require("node:fs");
const [wasm, out, ...lists] = process.argv.slice(1);
const imports = new Set(WebAssembly.Module.imports(new WebAssembly.Module(fs.readFileSync(wasm))).map((i) => i.name));
const wanted = { "exports-keys.json": "proxy_set_tick_period_milliseconds", "exports-response.json": "proxy_add_header_map_value" };
const roots = lists.filter((f) => !wanted[f.split("/").pop()] || imports.has(wanted[f.split("/").pop()]));
fs.writeFileSync(out, JSON.stringify(roots.flatMap((f) => JSON.parse(fs.readFileSync(f, "utf8")))));
' "$kept" "$roots" deploy/envoy/filter/exports.json deploy/envoy/filter/exports-keys.json deploy/envoy/filter/exports-response.json
metadce "$roots"
"$wasm_opt" "${features[@]}" -Oz --strip-debug --strip-producers --strip-target-features "$kept" -o "$out"
echo "==> $out: $(stat -c %s "$out") bytes after wasm-opt -Oz ($(stat -c %s "$raw") before)"
