#!/usr/bin/env bash
# A short, bounded HTTP load run on loopback: the gateway on workerd and on
# the wasmtime host (`host-sim serve`), side by side, in one run, same machine.
#
# usage: bash deploy/workerd/load.sh
#   LOAD_SECONDS      per target and scenario (default 5)
#   LOAD_CONNECTIONS  wrk connections (default 16; one wrk thread)
#
# Two scenarios, each the full verify path of the module (parse, base64url,
# HS256, claims, route):
#   reject   a correctly signed token whose audience has no route: 401 from the module
#   forward  a valid token for "orders": proxied to a small Node upstream on
#            an ephemeral loopback port (both gateways map the "orders"
#            route there), which answers 200 "ok"
# wrk (Debian's package) is installed with apt-get when missing. The load
# generator, the upstream and the gateway share the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/../.."

secs=${LOAD_SECONDS:-5}
conns=${LOAD_CONNECTIONS:-16}
workerd=node_modules/.bin/workerd
host_sim=target/release/host-sim

die() { echo "error: $*" >&2; exit 1; }
[ -f dist/gateway.wasm ] || die "dist/gateway.wasm is missing: run 'make worker'"
[ -x "$workerd" ] || die "$workerd is missing: run 'make setup' (npm ci)"
if ! command -v wrk >/dev/null; then
  [ "$(id -u)" = 0 ] || die "wrk is missing: install it (apt-get install wrk) and run again"
  echo "==> installing wrk (apt-get)"
  apt-get install -y -qq wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
fi

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port what pid
  for _ in $(seq 150); do
    listening "$1" && return 0
    kill -0 "$3" 2>/dev/null || die "$2 exited during start-up"
    sleep 0.1
  done
  die "$2 did not listen on 127.0.0.1:$1 within 15 s"
}

upstream_port=$(free_port)
# Idle keep-alive connections are kept 60 s (Node's default is 5 s), longer
# than the gateways' pools keep them, so no forward meets a closing connection.
node -e '
  const server = require("http").createServer((req, res) => { req.resume(); req.on("end", () => res.end("ok")); });
  server.keepAliveTimeout = 60000;
  server.headersTimeout = 61000;
  server.listen(Number(process.argv[1]), "127.0.0.1");' "$upstream_port" &
pids+=($!)
wait_port "$upstream_port" "the upstream" "${pids[-1]}"
read -r orders_upstream reject_token forward_token < <(node --input-type=module -e '
  import { mintToken, readGatewayConfig } from "./deploy/workerd/harness.mjs";
  const c = readGatewayConfig();
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const h = { alg: "HS256", typ: "JWT", kid: c.kid };
  console.log(c.routes.find((r) => r.aud === "orders")?.upstream ?? "",
              mintToken(c.key, { iss: c.issuer, aud: "payroll", sub: "load", exp }, h),
              mintToken(c.key, { iss: c.issuer, aud: "orders", sub: "load", exp }, h));')
[ -n "$orders_upstream" ] || die "gateway.toml has no route for aud \"orders\""
override="$orders_upstream=http://127.0.0.1:$upstream_port"

targets=()
wd_port=$(free_port)
GATEWAY_UPSTREAM_OVERRIDE=$override "$workerd" serve deploy/workerd/config.capnp --socket-addr "http=127.0.0.1:$wd_port" >/dev/null 2>&1 &
pids+=($!)
wait_port "$wd_port" workerd "${pids[-1]}"
targets+=("workerd $wd_port")

if [ -x "$host_sim" ] && "$host_sim" serve --help >/dev/null 2>&1; then
  hs_port=$(free_port)
  "$host_sim" serve --listen "127.0.0.1:$hs_port" --wasm dist/gateway.wasm --upstream-override "$override" >/dev/null 2>&1 &
  pids+=($!)
  wait_port "$hs_port" "host-sim serve" "${pids[-1]}"
  targets+=("host-sim $hs_port")
else
  echo "note: $host_sim with 'serve' is not built (cargo build --release -p host-sim); workerd only" >&2
fi

echo "==> wrk -t1 -c$conns -d${secs}s --latency, per target and scenario ($(nproc) cores shared by wrk, the gateway and the upstream)"
printf '| scenario | runtime | requests/s | p50 | p99 | non-2xx | errors |\n|---|---|---:|---:|---:|---:|---:|\n'
for scenario in reject forward; do
  token=$reject_token
  [ "$scenario" = forward ] && token=$forward_token
  for t in "${targets[@]}"; do
    read -r name port <<<"$t"
    url="http://127.0.0.1:$port/orders/1?q=load"
    # Warm up (JIT, connections), then measure.
    timeout 10 wrk -t1 -c"$conns" -d1s -H "Authorization: Bearer $token" "$url" >/dev/null
    out=$(timeout $((secs + 15)) wrk -t1 -c"$conns" -d"${secs}s" --latency -H "Authorization: Bearer $token" "$url")
    rps=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' <<<"$out")
    p50=$(awk '/^ +50%/ {print $2}' <<<"$out")
    p99=$(awk '/^ +99%/ {print $2}' <<<"$out")
    non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
    errors=$(awk '/Socket errors:/ {sub(/.*Socket errors: /, ""); print}' <<<"$out")
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$scenario" "$name" "$rps" "$p50" "$p99" "${non2xx:-0}" "${errors:-none}"
  done
done
