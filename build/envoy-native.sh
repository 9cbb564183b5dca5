#!/usr/bin/env bash
# Builds dist/libgateway_envoy.so: the gateway core as a native Envoy
# dynamic module (deploy/envoy/filter, feature `native`), for the machine's
# target, with the same config compiled in as dist/gateway.wasm. Envoy
# opens it by name: `lib<name>.so` from the folder in
# ENVOY_DYNAMIC_MODULES_SEARCH_PATH (`envoy-filter --native` renders the
# bootstrap). Prints its size.
#
# Environment:
#   GATEWAY_CONFIG  the gateway config to compile in (default: gateway.toml)
#   NATIVE_OUT      where to write the module (default: dist/libgateway_envoy.so);
#                   its file name must be lib<name>.so, <name> the module's
#                   name in the bootstrap
#   WORKER_FEATURES the algorithms beside HS256 (rs256, es256, eddsa), as for build/worker.sh
#
# A config that fetches keys at run time builds a module that fetches them
# on requests (deploy/envoy/README.md, "The native module").
set -euo pipefail
cd "$(dirname "$0")/.."

out=${NATIVE_OUT:-dist/libgateway_envoy.so}
case "$(basename "$out")" in
  lib*.so) ;;
  *) echo "error: NATIVE_OUT=$out: Envoy opens a module as lib<name>.so" >&2; exit 1 ;;
esac
export GATEWAY_CONFIG="${GATEWAY_CONFIG:-gateway.toml}"
# Its own target folder: the compiled-in config differs from the one the
# workspace's host builds use, and would rebuild them in turn.
target_dir=target/envoy-native
features=native${WORKER_FEATURES:+,$WORKER_FEATURES}
echo "==> cargo rustc -p gateway-envoy-filter --profile envoy-native --features $features (Envoy dynamic module, config $GATEWAY_CONFIG)"
# The envoy-native profile (Cargo.toml) unwinds on a panic, which each hook
# catches and answers 500 (src/native/abi.rs): a panic never takes Envoy down.
cargo rustc -p gateway-envoy-filter --lib --profile envoy-native --crate-type cdylib --quiet \
  --features "$features" --target-dir "$target_dir"
raw=$target_dir/envoy-native/libgateway_envoy_filter.so

# The module must export Envoy's entry point and the request hook: Envoy
# refuses a module without the first, and the second is where it decides.
for needed in envoy_dynamic_module_on_program_init envoy_dynamic_module_on_http_filter_request_headers; do
  nm -D --defined-only "$raw" | grep -qw "$needed" \
    || { echo "error: $raw does not export $needed" >&2; exit 1; }
done
mkdir -p "$(dirname "$out")"
# A copy, not a link: Envoy keeps the file it opened while the next build writes.
cp "$raw" "$out.tmp" && mv "$out.tmp" "$out"
echo "==> $out: $(stat -c %s "$out") bytes"
