#!/usr/bin/env bash
# make deploy-envoy: renders deploy/envoy/envoy.yaml from the gateway config
# and runs Envoy with the gateway filter (dist/gateway-envoy.wasm) on
# loopback. Ctrl-C stops it.
#
# Environment:
#   GATEWAY_CONFIG  the gateway config (default: gateway.toml); build the
#                   filter from the same one (`make worker`)
#   LISTEN          where Envoy listens (default: 127.0.0.1:8080)
set -euo pipefail
cd "$(dirname "$0")/../.."

config=${GATEWAY_CONFIG:-gateway.toml}
listen=${LISTEN:-127.0.0.1:8080}
envoy=target/envoy-venv/bin/envoy
[ -x "$envoy" ] || { echo "error: $envoy is missing; run 'make envoy'" >&2; exit 1; }
[ -f dist/gateway-envoy.wasm ] || { echo "error: dist/gateway-envoy.wasm is missing; run 'make worker'" >&2; exit 1; }

cargo run --quiet --release -p gateway-envoy-render --bin envoy-filter -- \
  --config "$config" --listen "$listen" --module "$PWD/dist/gateway-envoy.wasm" --out deploy/envoy/envoy.yaml
echo "==> envoy with the gateway filter on http://$listen (deploy/envoy/envoy.yaml); Ctrl-C stops it"
exec "$envoy" --config-path deploy/envoy/envoy.yaml --disable-hot-restart --log-level warn
