#!/usr/bin/env bash
# Builds dist/gateway-wasi-http.wasm: the gateway core as a wasi:http 0.2
# component (deploy/wasi-http/component), with the same config compiled in
# as dist/gateway.wasm, in the worker's size profile: cargo (a core module
# for wasm32-unknown-unknown whose only imports are the WIT's, by
# wit-bindgen) -> wasm-opt -Oz -> `wasm-tools component new` (no WASI
# adapter: the module imports nothing from wasi_snapshot_preview1). Checks
# that the component imports only the wasi:http/proxy world and exports
# only its incoming-handler, and prints its size beside the core module's.
#
# Environment:
#   GATEWAY_CONFIG     the gateway config to compile in (default: gateway.toml)
#   WASM_OUT           where to write the component (default: dist/gateway-wasi-http.wasm)
#   WORKER_FEATURES    the algorithms beside HS256 (rs256, es256, eddsa), as for build/worker.sh
#   WASI_HTTP_FEATURES the component's own features: upstream-override (the
#                      tests' and benchmarks' builds; it imports
#                      wasi:cli/environment, outside the proxy world)
set -euo pipefail
cd "$(dirname "$0")/.."

out=${WASM_OUT:-dist/gateway-wasi-http.wasm}
raw=target/wasm32-unknown-unknown/wasm/gateway_wasi_http.wasm
wasm_opt=node_modules/.bin/wasm-opt
[ -x "$wasm_opt" ] || { echo "error: $wasm_opt is missing; run 'make setup' (it runs npm ci)" >&2; exit 1; }
wasm_tools=$(bash deploy/wasi-http/install.sh wasm-tools | tail -1)

export GATEWAY_CONFIG="${GATEWAY_CONFIG:-gateway.toml}"
features=$(echo "${WORKER_FEATURES:-},${WASI_HTTP_FEATURES:-}" | tr ',' '\n' | grep -v '^$' | paste -sd, - || true)
echo "==> cargo rustc -p gateway-wasi-http --profile wasm (wasi:http 0.2 component, config $GATEWAY_CONFIG)${features:+, features $features}"
# A 128 KiB stack instead of the core module's 32 KiB: the component adds
# its own frames (the handler, the bindings) to the core's, and installing
# a 4096-bit RSA key needs more than 32 KiB (the core module that fetches
# keys has 64 KiB). Pages a request never touches cost a fresh instance
# nothing. These flags come after .cargo/config.toml's, so this size wins.
cargo rustc -p gateway-wasi-http --lib --target wasm32-unknown-unknown --crate-type cdylib --profile wasm --quiet \
  ${features:+--features "$features"} --config build/size-profile.toml \
  --config 'target.wasm32-unknown-unknown.rustflags=["-C", "link-arg=-zstack-size=131072"]'

mkdir -p "$(dirname "$out")"
core=$(mktemp --suffix .wasm)
trap 'rm -f "$core"' EXIT
# The features rustc enables by default for wasm32-unknown-unknown, as
# build/worker.sh lists them. wasm-opt keeps the bindings' custom section
# (component-type), which `component new` reads the WIT from.
wasm_features=(--enable-bulk-memory --enable-bulk-memory-opt --enable-nontrapping-float-to-int
  --enable-sign-ext --enable-mutable-globals --enable-multivalue --enable-reference-types)
"$wasm_opt" "${wasm_features[@]}" -Oz --strip-debug --strip-producers --strip-target-features "$raw" -o "$core"
# No debug names and no custom sections (the core module keeps none
# either): the component's own name section would be 7 KB.
"$wasm_tools" component new --debug-names=false "$core" -o "$out"
"$wasm_tools" strip --all "$out" -o "$out"

# What the component imports and exports, from its WIT: only the proxy
# world's interfaces (and wasi:cli/environment with upstream-override).
allowed='wasi:http/types|wasi:http/outgoing-handler|wasi:io/(poll|error|streams)|wasi:clocks/(monotonic-clock|wall-clock)|wasi:random/random|wasi:cli/(stdout|stderr|stdin)'
[[ ",$features," == *",upstream-override,"* ]] && allowed="$allowed|wasi:cli/environment"
wit=$("$wasm_tools" component wit "$out")
imports=$(grep -oE '^\s*import [^;]+' <<<"$wit" | sed 's/^\s*import //' | sort -u)
exports=$(grep -oE '^\s*export [^;]+' <<<"$wit" | sed 's/^\s*export //' | sort -u)
outside=$(grep -vE "^($allowed)@0\.2\.[0-9]+$" <<<"$imports" || true)
[ -z "$outside" ] || { echo "error: $out imports outside the wasi:http/proxy world: $outside" >&2; exit 1; }
[[ "$exports" =~ ^wasi:http/incoming-handler@0\.2\.[0-9]+$ ]] || {
  echo "error: $out must export wasi:http/incoming-handler alone, but exports: $exports" >&2
  exit 1
}
size=$(stat -c %s "$out")
echo "==> $out: $size bytes (core module after wasm-opt -Oz: $(stat -c %s "$core"), before: $(stat -c %s "$raw"))"
echo "    imports: $(tr '\n' ' ' <<<"$imports")"
# Beside the core module of the same config, when it is the one next to it
# (make worker builds dist/gateway.wasm first): what the component adds.
if [ "$out" = dist/gateway-wasi-http.wasm ] && [ -f dist/gateway.wasm ] && [ -z "${WASI_HTTP_FEATURES:-}" ]; then
  echo "    dist/gateway.wasm: $(stat -c %s dist/gateway.wasm) bytes; the component adds $((size - $(stat -c %s dist/gateway.wasm))) bytes"
fi
