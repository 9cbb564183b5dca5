#!/usr/bin/env bash
# make deploy-envoy: renders deploy/envoy/envoy.yaml from the gateway config
# and runs Envoy with the gateway filter (dist/gateway-envoy.wasm) on
# loopback. Ctrl-C stops it.
#
# Environment:
#   GATEWAY_CONFIG  the gateway config (default: gateway.toml); build the
#                   filter from the same one (`make worker`)
#   LISTEN          where Envoy listens (default: 127.0.0.1:8080)
#   ADMIN           Envoy's admin interface, its stats and /stats/prometheus
#                   (default: 127.0.0.1:9901; "none" for none)
set -euo pipefail
cd "$(dirname "$0")/../.."

config=${GATEWAY_CONFIG:-gateway.toml}
listen=${LISTEN:-127.0.0.1:8080}
admin=${ADMIN:-127.0.0.1:9901}
admin_args=()
[ "$admin" = none ] || admin_args=(--admin "$admin")
envoy=target/envoy-venv/bin/envoy
[ -x "$envoy" ] || { echo "error: $envoy is missing; run 'make envoy'" >&2; exit 1; }
[ -f dist/gateway-envoy.wasm ] || { echo "error: dist/gateway-envoy.wasm is missing; run 'make worker'" >&2; exit 1; }

cargo run --quiet --release -p gateway-envoy-render --bin envoy-filter -- \
  --config "$config" --listen "$listen" --module "$PWD/dist/gateway-envoy.wasm" --out deploy/envoy/envoy.yaml \
  "${admin_args[@]}"
echo "==> envoy with the gateway filter on http://$listen (deploy/envoy/envoy.yaml); Ctrl-C stops it"
[ "$admin" = none ] || echo "    its metrics: curl -s http://$admin/stats/prometheus | grep ^gateway_"
exec "$envoy" --config-path deploy/envoy/envoy.yaml --disable-hot-restart --log-level warn
