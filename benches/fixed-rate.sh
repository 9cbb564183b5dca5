#!/usr/bin/env bash
# Fixed-rate latency, side by side in one run: the latency a client sees at a
# set offered rate (an open loop, not closed-loop wrk), p50/p99/p99.9, for a
# forward and a reject, through three gateways doing the same job on loopback:
#   host-sim   target/release/host-sim serve --wasm dist/gateway.wasm
#   workerd    node_modules/.bin/workerd serve deploy/workerd/config.capnp
#   envoy      Envoy 1.40 with its native jwt_authn filter, its bootstrap
#              rendered from gateway.toml (target/release/envoy-jwt-authn)
# All three route aud "orders" to one upstream, `host-sim upstream`.
#   forward  a valid token for "orders": verified, forwarded, 200
#   reject   the same token with another token's signature: the whole
#            HS256 check runs and fails, 401 (every gateway checks the
#            signature before it looks at the claims' audience or times)
#
# Load generator: oha (crates.io), installed into target/tools when missing
# (once; its build took 33 minutes on this shared 2-core machine).
# It holds a rate with -q and reports percentiles; --latency-correction
# measures each request from the moment it was scheduled, not from when a
# connection was free to send it, so a stall shows up in the percentiles
# instead of being left out (coordinated omission).
#
# usage: bash benches/fixed-rate.sh    (make bench runs it)
#   FIXED_RATE_RATES        offered requests per second ("5000 10000 20000")
#   FIXED_RATE_SECONDS      seconds per run (5)
#   FIXED_RATE_CONNECTIONS  oha connections (32)
#   FIXED_RATE_GATEWAYS     which to run ("host-sim workerd envoy")
# Output: one markdown table on stdout and in target/bench-results/fixed-rate.md.
set -euo pipefail
cd "$(dirname "$0")/.."

rates=${FIXED_RATE_RATES:-5000 10000 20000}
secs=${FIXED_RATE_SECONDS:-5}
conns=${FIXED_RATE_CONNECTIONS:-32}
gateways=${FIXED_RATE_GATEWAYS:-host-sim workerd envoy}
oha_version=1.16.0
results=target/bench-results
out=$results/fixed-rate.md
host_sim=target/release/host-sim
render=target/release/envoy-jwt-authn
workerd=node_modules/.bin/workerd

die() { echo "error: $*" >&2; exit 1; }
note() { echo "==> $*" >&2; }
[ -f dist/gateway.wasm ] || die "dist/gateway.wasm is missing: run 'make worker'"
[[ "$secs" =~ ^[0-9]+$ ]] && [ "$secs" -ge 1 ] && [ "$secs" -le 60 ] || die "FIXED_RATE_SECONDS must be 1 to 60"
mkdir -p "$results"

# The workspace's one release build (`make host`): the same command as
# `make test`, so the features resolve the same and nothing is rebuilt.
note "building host-sim and envoy-jwt-authn (release, the workspace's one build)"
cargo test --workspace --release --no-run --quiet

# oha, pinned; `cargo install` only when this version is not there yet.
oha=target/tools/bin/oha
if ! "$oha" --version 2>/dev/null | grep -q " $oha_version"; then
  note "installing oha $oha_version into target/tools (cargo install --locked; a few minutes)"
  cargo install --quiet --locked oha --version "$oha_version" --root target/tools
fi

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port name pid log
  for _ in $(seq 300); do
    listening "$1" && return 0
    kill -0 "$3" 2>/dev/null || die "$2 exited during start-up: $(tail -3 "$4")"
    sleep 0.1
  done
  die "$2 did not listen on 127.0.0.1:$1 within 30 s"
}
start() { # name port log command...
  local name=$1 port=$2 log=$3
  shift 3
  "$@" >"$log" 2>&1 &
  pids+=($!)
  wait_port "$port" "$name" "${pids[-1]}" "$log"
}

up_port=$(free_port)
start upstream "$up_port" "$results/fixed-rate-upstream.log" "$host_sim" upstream --listen "127.0.0.1:$up_port"
orders_upstream=$(python3 -c '
import tomllib
routes = tomllib.load(open("gateway.toml", "rb")).get("routes", [])
print(next((r["upstream"].rstrip("/") for r in routes if r.get("aud") == "orders"), ""))')
[ -n "$orders_upstream" ] || die "gateway.toml has no route for aud \"orders\""

forward_token=$("$host_sim" token --aud orders --sub load --exp-in 3600)
other_token=$("$host_sim" token --aud billing --sub load --exp-in 3600)
reject_token="${forward_token%.*}.${other_token##*.}"

declare -A port commands
for gateway in $gateways; do
  port[$gateway]=$(free_port)
  p=${port[$gateway]}
  case $gateway in
    host-sim)
      cmd=("$host_sim" serve --listen "127.0.0.1:$p" --wasm dist/gateway.wasm
        --upstream-override "orders=http://127.0.0.1:$up_port")
      ;;
    workerd)
      [ -x "$workerd" ] || die "$workerd is missing: run 'make setup'"
      export GATEWAY_UPSTREAM_OVERRIDE="$orders_upstream=http://127.0.0.1:$up_port"
      cmd=("$workerd" serve deploy/workerd/config.capnp --socket-addr "http=127.0.0.1:$p")
      ;;
    envoy)
      envoy=$(bash deploy/envoy/install.sh | tail -1)
      "$render" --listen "127.0.0.1:$p" --upstream-override "orders=http://127.0.0.1:$up_port" \
        --out "$results/envoy-jwt-authn.yaml"
      cmd=("$envoy" --config-path "$results/envoy-jwt-authn.yaml" --disable-hot-restart --log-level error)
      ;;
    *) die "unknown gateway $gateway (host-sim, workerd, envoy)" ;;
  esac
  commands[$gateway]="${cmd[*]}"
  note "starting $gateway on 127.0.0.1:$p"
  start "$gateway" "$p" "$results/fixed-rate-$gateway.log" "${cmd[@]}"
done

# One oha run; prints "achieved p50 p99 p99.9 expected%" (milliseconds).
measure() { # url token rate seconds expected_status
  local json
  json=$(timeout $(($4 + 30)) "$oha" --no-tui --output-format json --latency-correction \
    -w -z "${4}s" -q "$3" -c "$conns" -H "Authorization: Bearer $2" "$1")
  python3 -c '
import json, sys
r = json.loads(sys.argv[1]); expected = sys.argv[2]
p = r["latencyPercentiles"]; codes = r.get("statusCodeDistribution", {})
total = sum(codes.values()) + sum(r.get("errorDistribution", {}).values())
ms = lambda v: "%.2f" % (v * 1000) if v is not None else "n/a"
print("%.0f" % r["summary"]["requestsPerSec"], ms(p["p50"]), ms(p["p99"]), ms(p["p99.9"]),
      "%.1f" % (100.0 * codes.get(expected, 0) / total if total else 0))
' "$json" "$5"
}

note "warming up each gateway (1 s at 2000 req/s, forward and reject)"
for gateway in $gateways; do
  url="http://127.0.0.1:${port[$gateway]}/orders/1?q=load"
  measure "$url" "$forward_token" 2000 1 200 >/dev/null
  measure "$url" "$reject_token" 2000 1 401 >/dev/null
done

# Gateways interleaved at each rate, so that a noisy moment on this shared
# machine touches all of them alike; the table is sorted afterwards.
rows=()
for rate in $rates; do
  for case in forward reject; do
    for gateway in $gateways; do
      url="http://127.0.0.1:${port[$gateway]}/orders/1?q=load"
      if [ "$case" = forward ]; then token=$forward_token status=200; else token=$reject_token status=401; fi
      note "$gateway $case at $rate req/s for ${secs}s"
      read -r achieved p50 p99 p999 ok < <(measure "$url" "$token" "$rate" "$secs" "$status") || true
      [ -n "${ok:-}" ] || die "oha gave no result for $gateway $case at $rate req/s"
      rows+=("$gateway|$case|$rate|$achieved|$p50|$p99|$p999|$ok% $status")
    done
  done
done

{
  echo "Fixed-rate latency as the client sees it (oha $oha_version, open loop, latency corrected for coordinated omission),"
  echo "$(nproc) cores shared by oha, the gateway and the upstream; $(date -u '+%Y-%m-%d %H:%M UTC'); load before: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo '```'
  echo "FIXED_RATE_RATES=\"$rates\" FIXED_RATE_SECONDS=$secs FIXED_RATE_CONNECTIONS=$conns bash benches/fixed-rate.sh"
  echo "oha --no-tui --output-format json --latency-correction -w -z ${secs}s -q RATE -c $conns -H 'Authorization: Bearer TOKEN' http://127.0.0.1:PORT/orders/1?q=load"
  echo "upstream: $host_sim upstream --listen 127.0.0.1:UPSTREAM"
  for gateway in $gateways; do
    echo "$gateway: ${commands[$gateway]}" | sed "s/127\.0\.0\.1:${port[$gateway]}/127.0.0.1:PORT/g; s/127\.0\.0\.1:$up_port/127.0.0.1:UPSTREAM/g"
  done
  [[ " $gateways " == *" workerd "* ]] && echo "workerd: GATEWAY_UPSTREAM_OVERRIDE=$orders_upstream=http://127.0.0.1:UPSTREAM"
  echo '```'
  echo
  echo "| gateway | case | offered req/s | achieved req/s | p50 ms | p99 ms | p99.9 ms | expected status |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  for gateway in $gateways; do
    for case in forward reject; do
      for rate in $rates; do
        for row in "${rows[@]}"; do
          IFS='|' read -r g c r rest <<<"$row"
          [ "$g|$c|$r" = "$gateway|$case|$rate" ] && echo "| $g | $c | $r | ${rest//|/ | } |"
        done
      done
    done
  done
} | tee "$out"
note "written to $out"
