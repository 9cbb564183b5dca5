#!/usr/bin/env bash
# make deploy-envoy: renders deploy/envoy/envoy.yaml from the gateway config
# and runs Envoy with the gateway filter (dist/gateway-envoy.wasm) on
# loopback. Ctrl-C stops it. FILTER=native runs the same core as a native
# dynamic module instead (dist/libgateway_envoy.so, built here from the
# same config): no sandbox, less CPU per request (deploy/envoy/README.md,
# "The native module", says what each trades).
#
# Environment:
#   GATEWAY_CONFIG  the gateway config (default: gateway.toml); build the
#                   filter from the same one (`make worker`)
#   LISTEN          where Envoy listens (default: 127.0.0.1:8080)
#   ADMIN           Envoy's admin interface, its stats and /stats/prometheus
#                   (default: 127.0.0.1:9901; "none" for none)
#   FILTER          "wasm" (default): the proxy-wasm filter; "native": the
#                   native module
#   ENVOY_YAML      where the rendered bootstrap goes (default:
#                   deploy/envoy/envoy.yaml)
#   NATIVE          with FILTER=native, a module build/envoy-native.sh built
#                   from GATEWAY_CONFIG (lib<name>.so) to run as it is;
#                   default: dist/libgateway_envoy.so, built now
#                   (WORKER_FEATURES as for build/envoy-native.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."

config=${GATEWAY_CONFIG:-gateway.toml}
listen=${LISTEN:-127.0.0.1:8080}
admin=${ADMIN:-127.0.0.1:9901}
yaml=${ENVOY_YAML:-deploy/envoy/envoy.yaml}
admin_args=()
[ "$admin" = none ] || admin_args=(--admin "$admin")
envoy=target/envoy-venv/bin/envoy
[ -x "$envoy" ] || { echo "error: $envoy is missing; run 'make envoy'" >&2; exit 1; }

case "${FILTER:-wasm}" in
  wasm)
    [ -f dist/gateway-envoy.wasm ] || { echo "error: dist/gateway-envoy.wasm is missing; run 'make worker'" >&2; exit 1; }
    filter=(--module "$PWD/dist/gateway-envoy.wasm")
    what="the gateway filter" prefix=gateway_ ;;
  native)
    if [ -n "${NATIVE:-}" ]; then
      native=$(realpath -- "$NATIVE")
      [ -f "$native" ] || { echo "error: NATIVE=$NATIVE: no such module" >&2; exit 1; }
    else
      native=$PWD/dist/libgateway_envoy.so
      GATEWAY_CONFIG=$config NATIVE_OUT=$native bash build/envoy-native.sh >&2
    fi
    # Envoy opens the module by the name the bootstrap gives, from this folder.
    export ENVOY_DYNAMIC_MODULES_SEARCH_PATH=${native%/*}
    filter=(--native "$native")
    what="the native module" prefix=envoy_dynamicmodulescustom_gateway_ ;;
  *) echo "error: FILTER is wasm or native, not '$FILTER'" >&2; exit 1 ;;
esac

cargo run --quiet --release -p gateway-envoy-render --bin envoy-filter -- \
  --config "$config" --listen "$listen" "${filter[@]}" --out "$yaml" \
  "${admin_args[@]}"
echo "==> envoy with $what on http://$listen ($yaml); Ctrl-C stops it"
[ "$admin" = none ] || echo "    its metrics: curl -s http://$admin/stats/prometheus | grep ^$prefix"
exec "$envoy" --config-path "$yaml" --disable-hot-restart --log-level warn
