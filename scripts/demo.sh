#!/usr/bin/env bash
# make demo: benchmark the module (JIT and precompiled), then serve it on
# loopback and send a few allowed and rejected requests. `make` has built
# dist/gateway.wasm already. Everything started here is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

# `make demo` built target/release/host-sim and target/release/bench-tool
# with the workspace's one build (`make host`), which `make test` shares.
H=target/release/host-sim
B=target/release/bench-tool
for bin in "$H" "$B"; do
  [ -x "$bin" ] || { echo "error: $bin is missing: run 'make host'" >&2; exit 1; }
done
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "==> host-sim compile dist/gateway.wasm -o dist/gateway.cwasm"
"$H" compile dist/gateway.wasm -o dist/gateway.cwasm

echo
echo "==> bench-tool host --wasm dist/gateway.wasm (JIT with Cranelift)"
"$B" host --wasm dist/gateway.wasm --requests 100000
echo
echo "==> bench-tool host --cwasm dist/gateway.cwasm (precompiled)"
"$B" host --cwasm dist/gateway.cwasm --requests 100000

# Waits (at most 10 s) until FILE has N lines "... listening on http://ADDR"
# and prints the addresses.
addresses() {
  local file=$1 n=$2
  for _ in $(seq 100); do
    if [ "$(grep -c 'listening on http://' "$file" || true)" -ge "$n" ]; then
      grep -o 'http://[0-9.:]*' "$file"
      return
    fi
    sleep 0.1
  done
  echo "error: no address in $file" >&2
  cat "$file" >&2
  exit 1
}

echo
echo "==> demo upstreams (echo servers) and host-sim serve, on loopback, ephemeral ports"
"$H" upstream --listen 127.0.0.1:0 --listen 127.0.0.1:0 --listen 127.0.0.1:0 > "$work/upstream.out" 2>&1 &
pids+=($!)
mapfile -t ups < <(addresses "$work/upstream.out" 3)
"$H" serve --cwasm dist/gateway.cwasm --listen 127.0.0.1:0 --access-log --metrics 127.0.0.1:0 \
  --upstream-override "orders=${ups[0]}" --upstream-override "billing=${ups[1]}" \
  --upstream-override "users=${ups[2]}" > "$work/serve.out" 2> "$work/access.log" &
pids+=($!)
# The gateway's address, then its metrics listener's.
mapfile -t listening < <(addresses "$work/serve.out" 2)
gw=${listening[0]} metrics=${listening[1]}
echo "gateway: $gw (orders -> ${ups[0]}, billing -> ${ups[1]}, users -> ${ups[2]})"

alice=$("$H" token --aud orders --sub alice)
bob=$("$H" token --aud billing --sub bob --exp-in 600)
expired=$("$H" token --aud orders --sub alice --exp-in -3600)
nowhere=$("$H" token --aud payroll --sub eve)
forged="${alice%?????}AAAAA"

# Each request: title, then curl arguments (the URL is the gateway's + path).
req() {
  local title=$1 path=$2
  shift 2
  echo
  echo "--- $title"
  curl -sS -i --max-time 10 "$@" "$gw$path" | tr -d '\r' || true
  echo
}
req "allowed: GET /v1/orders?page=2 as alice (aud orders)" "/v1/orders?page=2" -H "Authorization: Bearer $alice"
req "allowed: POST /v1/charges with a body, as bob (aud billing)" "/v1/charges" -H "Authorization: Bearer $bob" \
  -H "Content-Type: application/json" --data '{"amount": 42}'
req "rejected: no token" "/v1/orders"
req "rejected: expired token" "/v1/orders" -H "Authorization: Bearer $expired"
req "rejected: forged signature" "/v1/orders" -H "Authorization: Bearer $forged"
req "rejected: audience with no route" "/v1/payroll" -H "Authorization: Bearer $nowhere"
req "rejected: Basic credentials" "/v1/orders" -u "alice:secret"
# curl would resolve the dot segments itself; --path-as-is sends them.
req "rejected: a path that climbs out of its route" "/%2e%2e/admin" --path-as-is -H "Authorization: Bearer $alice"

echo
echo "==> access log"
sleep 0.2
cat "$work/access.log"
echo
echo "==> what the gateway counted ($metrics/metrics; README.md, \"Watching the gateway\")"
curl -sS --max-time 10 "$metrics/metrics" | grep -E '^gateway_(decisions|allowed|denied)_total' || true
echo "==> demo done; stopping the servers"
