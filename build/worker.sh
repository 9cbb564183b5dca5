#!/usr/bin/env bash
# Builds dist/gateway.wasm: the worker as a size-profiled cdylib, trimmed with
# wasm-opt -Oz, then checked against the size budget and for imports.
#
# Environment:
#   GATEWAY_CONFIG  the gateway config to compile in (default: gateway.toml)
#   WASM_OUT        where to write the module (default: dist/gateway.wasm)
#   BUDGET_BYTES    the size budget (default: 184320, i.e. 180 KiB)
#   WORKER_PROFILE  size (default: cargo profile 'wasm', wasm-opt -Oz) or
#                   speed (cargo profile 'wasm-speed', opt-level 3, wasm-opt -O3)
#   WORKER_FEATURES the algorithms beside HS256 to build in, comma-separated:
#                   rs256, es256, eddsa (default: none, the HS256 module). A
#                   config with a key for an algorithm left out is refused.
set -euo pipefail
cd "$(dirname "$0")/.."

budget=${BUDGET_BYTES:-184320}
# The size profile takes build/size-profile.toml (its inline threshold) beside
# .cargo/config.toml; the speed profile keeps opt-level 3's own.
case "${WORKER_PROFILE:-size}" in
  size) cargo_profile=wasm opt_level=z wasm_opt_level=-Oz size_flags=(--config build/size-profile.toml) ;;
  speed) cargo_profile=wasm-speed opt_level=3 wasm_opt_level=-O3 size_flags=() ;;
  *) echo "error: WORKER_PROFILE=${WORKER_PROFILE} is neither 'size' nor 'speed'" >&2; exit 1 ;;
esac
raw=target/wasm32-unknown-unknown/$cargo_profile/worker.wasm
out=${WASM_OUT:-dist/gateway.wasm}
wasm_opt=node_modules/.bin/wasm-opt

if [ ! -x "$wasm_opt" ]; then
  echo "error: $wasm_opt is missing; run 'make setup' (it runs npm ci)" >&2
  exit 1
fi

config=${GATEWAY_CONFIG:-gateway.toml}
cargo run --quiet --release -p gateway-config --bin check-config -- "$config"
export GATEWAY_CONFIG="$config"

features=${WORKER_FEATURES:-}
echo "==> cargo worker-wasm --profile $cargo_profile (opt-level $opt_level${size_flags:+, build/size-profile.toml}, LTO, 1 codegen unit, panic abort, 32 KiB stack)${features:+, features $features}"
cargo worker-wasm --profile "$cargo_profile" "${size_flags[@]}" --quiet ${features:+--features "$features"}

mkdir -p "$(dirname "$out")"
raw_copy="${out%.wasm}.raw.wasm"
cp "$raw" "$raw_copy"
# The features rustc enables by default for wasm32-unknown-unknown; wasmtime
# and V8 (workerd, Node.js) support all of them.
wasm_features=(--enable-bulk-memory --enable-bulk-memory-opt --enable-nontrapping-float-to-int
  --enable-sign-ext --enable-mutable-globals --enable-multivalue --enable-reference-types)
echo "==> wasm-opt $wasm_opt_level ($("$wasm_opt" --version))"
"$wasm_opt" "${wasm_features[@]}" "$wasm_opt_level" --strip-debug --strip-producers --strip-target-features "$raw" -o "$out"

node build/check-module.mjs "$out" "$budget" "$(stat -c %s "$raw_copy")"
