#!/usr/bin/env bash
# make deploy-wasi-http: the gateway's wasi:http component
# (dist/gateway-wasi-http.wasm, built from the config by `make worker`) in
# `wasmtime serve` on loopback, outgoing HTTP (the forwards, key fetches)
# through wasmtime's wasi:http implementation. Ctrl-C stops it.
#
# Instances are kept: each serves up to a million requests and waits up to
# 600 s idle for the next, so that keys fetched at run time, and the core's
# schedule of refreshes, outlive the request that fetched them (a fresh
# instance per request, wasmtime serve's own default, fetches them for
# every request that needs them: deploy/wasi-http/README.md).
#
# `wasmtime serve` has no timeout for reading a request head and none for
# an idle connection, and each connection holds one of its 1,000 slots: on
# its own it is for loopback only. FRONT=envoy puts Envoy in front of it
# (deploy/wasi-http/front.mjs renders the config): header and idle
# timeouts, a connection cap, complete heads only to wasmtime serve.
#
# Environment:
#   LISTEN          where clients connect (default: 127.0.0.1:8080)
#   FRONT           "envoy" for Envoy on LISTEN in front of wasmtime serve on
#                   BACKEND (`make envoy` installs it); unset, wasmtime serve
#                   listens on LISTEN itself
#   BACKEND         wasmtime serve's address behind the front end
#                   (default: 127.0.0.1:8081)
#   INSTANCES       "reuse" (default) or "fresh" (an instance per request)
#   POOL            "tuned" (default): the pooling allocator's slots keep the
#                   component's memory (256 KiB) and tables resident between
#                   instances and reset only the pages an instance wrote
#                   (PAGEMAP_SCAN, Linux 6.7 and later; elsewhere memset);
#                   "wasmtime" for wasmtime serve's own settings, which
#                   give each dropped instance's pages back to the kernel.
#                   Either way wasmtime serve pools instances where the
#                   address space allows (its own default); these settings
#                   apply only then. docs/PERFORMANCE.md, "wasmtime serve
#                   as fast as it runs", has what each costs.
#   COMPONENT       the component (default: dist/gateway-wasi-http.wasm)
#   WASMTIME_ARGS   more `wasmtime serve` options (after POOL's, so they
#                   take precedence), for example "-O pooling-allocator=n"
set -euo pipefail
cd "$(dirname "$0")/../.."

listen=${LISTEN:-127.0.0.1:8080}
front=${FRONT:-}
backend=${BACKEND:-127.0.0.1:8081}
wasmtime=target/tools/bin/wasmtime
envoy=target/envoy-venv/bin/envoy
component=${COMPONENT:-dist/gateway-wasi-http.wasm}
[ -x "$wasmtime" ] || { echo "error: $wasmtime is missing; run 'make wasmtime'" >&2; exit 1; }
[ -f "$component" ] || { echo "error: $component is missing; run 'make worker'" >&2; exit 1; }

case "${INSTANCES:-reuse}" in
  reuse) instances=(--max-instance-reuse-count 1000000 --idle-instance-timeout 600s) ;;
  fresh)
    instances=()
    if grep -q '^\[\[limits\]\]' "${GATEWAY_CONFIG:-gateway.toml}" 2>/dev/null; then
      echo "warning: INSTANCES=fresh counts every request in an empty table: no rate limit of ${GATEWAY_CONFIG:-gateway.toml} will refuse (README, \"Rate limits\")" >&2
    fi ;;
  *) echo "error: INSTANCES is reuse or fresh, not '$INSTANCES'" >&2; exit 1 ;;
esac

case "${POOL:-tuned}" in
  # An instance per request: 0.75x the CPU per reject and 1.5x the rejects
  # per second; kept instances: the same within noise (they are made once).
  tuned) pool=(-O pooling-memory-keep-resident=262144 -O pooling-table-keep-resident=65536 -O pooling-pagemap-scan=auto) ;;
  wasmtime) pool=() ;;
  *) echo "error: POOL is tuned or wasmtime, not '$POOL'" >&2; exit 1 ;;
esac

case "$front" in
  "")
    echo "==> wasmtime serve $component on http://$listen (instances: ${INSTANCES:-reuse}, pool: ${POOL:-tuned}); Ctrl-C stops it"
    echo "    warning: wasmtime serve has no header or idle timeout: a client that stalls mid-head holds one"
    echo "    of its 1,000 connection slots for as long as it likes. Loopback only; FRONT=envoy to face clients."
    # shellcheck disable=SC2086 # WASMTIME_ARGS is a list of options
    exec "$wasmtime" serve --addr "$listen" "${instances[@]}" "${pool[@]}" ${WASMTIME_ARGS:-} "$component"
    ;;
  envoy) ;;
  *) echo "error: FRONT is envoy or unset, not '$front'" >&2; exit 1 ;;
esac

[ -x "$envoy" ] || { echo "error: $envoy is missing; run 'make envoy'" >&2; exit 1; }
mkdir -p target/wasi-http
config=target/wasi-http/front.yaml
node deploy/wasi-http/front.mjs --listen "$listen" --backend "$backend" --out "$config"
echo "==> Envoy on http://$listen ($config: header timeout 10 s, idle timeout 60 s)"
echo "    in front of wasmtime serve $component on http://$backend (instances: ${INSTANCES:-reuse}); Ctrl-C stops both"
# shellcheck disable=SC2086 # WASMTIME_ARGS is a list of options
"$wasmtime" serve --addr "$backend" "${instances[@]}" "${pool[@]}" ${WASMTIME_ARGS:-} "$component" &
serve=$!
"$envoy" --config-path "$config" --disable-hot-restart --log-level warn &
proxy=$!
trap 'kill "$serve" "$proxy" 2>/dev/null || true' EXIT INT TERM
# Whichever stops first stops the other.
wait -n "$serve" "$proxy" || true
