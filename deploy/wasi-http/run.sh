#!/usr/bin/env bash
# make deploy-wasi-http: the gateway's wasi:http component
# (dist/gateway-wasi-http.wasm, built from the config by `make worker`) in
# `wasmtime serve` on loopback: a fresh instance per request, the standard's
# model, and outgoing HTTP (the forwards, key fetches) through wasmtime's
# wasi:http implementation. Ctrl-C stops it.
#
# Environment:
#   LISTEN          where wasmtime serve listens (default: 127.0.0.1:8080)
#   WASMTIME_ARGS   more `wasmtime serve` options, for example
#                   "--max-instance-reuse-count 1000" to reuse instances
set -euo pipefail
cd "$(dirname "$0")/../.."

listen=${LISTEN:-127.0.0.1:8080}
wasmtime=target/tools/bin/wasmtime
component=dist/gateway-wasi-http.wasm
[ -x "$wasmtime" ] || { echo "error: $wasmtime is missing; run 'make wasmtime'" >&2; exit 1; }
[ -f "$component" ] || { echo "error: $component is missing; run 'make worker'" >&2; exit 1; }
echo "==> wasmtime serve $component on http://$listen; Ctrl-C stops it"
# shellcheck disable=SC2086 # WASMTIME_ARGS is a list of options
exec "$wasmtime" serve --addr "$listen" ${WASMTIME_ARGS:-} "$component"
