#!/usr/bin/env bash
# `wasmtime serve`'s options beside host-sim, in one run: each gateway
# started once, then closed-loop rounds of rejects and forwards, the
# gateways in turn within each round, so a busy moment of a shared machine
# slows them alike. Prints each round and the medians: requests per second
# and the gateway's CPU time per request (from /proc, the process and its
# children). For docs/PERFORMANCE.md, "wasmtime serve as fast as it runs".
#
# usage: bash benches/serve-options.sh 'NAME=OPTIONS;NAME=OPTIONS;...'
#   a NAME starting with "host-sim" runs `host-sim serve --wasm CORE OPTIONS`,
#   any other `wasmtime serve OPTIONS COMPONENT`, for example
#   'host-sim=;wasmtime=;wasmtime-reuse=--max-instance-reuse-count 1000000'
# Environment: SECS (4 per round), ROUNDS (5), CONNS (oha connections, 32),
#   CASES ("reject forward"), CORE (dist/gateway.wasm), COMPONENT
#   (dist/gateway-wasi-http.wasm). The orders route's upstream (gateway.toml:
#   127.0.0.1:9101) must be free: the component forwards there.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/loopback.sh

secs=${SECS:-4} rounds=${ROUNDS:-5} conns=${CONNS:-32} cases=${CASES:-reject forward}
core=${CORE:-dist/gateway.wasm} component=${COMPONENT:-dist/gateway-wasi-http.wasm}
oha=target/tools/bin/oha wasmtime=target/tools/bin/wasmtime host_sim=target/release/host-sim
for f in "$oha" "$wasmtime" "$host_sim"; do [ -x "$f" ] || die "$f is missing (make setup wasmtime host)"; done
[ $# -eq 1 ] || die "usage: bash benches/serve-options.sh 'NAME=OPTIONS;...'"
out=$(mktemp -d)

listening 9101 && die "127.0.0.1:9101 (the orders route's upstream) is in use"
up=$(free_port)
start upstream 9101 "$out/upstream-9101.log" "$host_sim" upstream --listen 127.0.0.1:9101
start upstream "$up" "$out/upstream.log" "$host_sim" upstream --listen "127.0.0.1:$up"
forward_token=$("$host_sim" token --aud orders --sub load --exp-in 3600)
other_token=$("$host_sim" token --aud billing --sub load --exp-in 3600)
reject_token="${forward_token%.*}.${other_token##*.}"

declare -A port pid
names=()
IFS=';' read -ra specs <<<"$1"
for spec in "${specs[@]}"; do
  name=${spec%%=*} options=${spec#*=} p=$(free_port)
  port[$name]=$p
  names+=("$name")
  # shellcheck disable=SC2086 # OPTIONS is a list of options
  case $name in
    host-sim*) start "$name" "$p" "$out/$name.log" "$host_sim" serve --listen "127.0.0.1:$p" --wasm "$core" \
      --upstream-override "orders=http://127.0.0.1:$up" $options ;;
    *) start "$name" "$p" "$out/$name.log" "$wasmtime" serve --addr "127.0.0.1:$p" $options "$component" ;;
  esac
  pid[$name]=$(started_pid)
done

load() { # name case seconds -> oha's JSON
  local token=$reject_token
  [ "$2" = forward ] && token=$forward_token
  "$oha" --no-tui --output-format json -z "$3" -c "$conns" -H "Authorization: Bearer $token" \
    "http://127.0.0.1:${port[$1]}/orders/1?q=load"
}
for name in "${names[@]}"; do for case in $cases; do load "$name" "$case" 1s >/dev/null; done; done
echo "name case round req/s cpu_us_per_request expected% p99_ms"
for round in $(seq "$rounds"); do
  for case in $cases; do
    for name in "${names[@]}"; do
      status=401
      [ "$case" = forward ] && status=200
      before=$(cpu_ticks "${pid[$name]}")
      json=$(load "$name" "$case" "${secs}s")
      after=$(cpu_ticks "${pid[$name]}")
      python3 -c '
import json, sys
name, case, rnd, status, ticks, hz = sys.argv[1:]
d = json.load(sys.stdin)
codes = d.get("statusCodeDistribution", {})
n = sum(codes.values())
cpu = float(ticks) / float(hz) * 1e6 / n if n else 0
ok = codes.get(status, 0) * 100 / n if n else 0
print(name, case, rnd, "%.0f" % d["summary"]["requestsPerSec"], "%.1f" % cpu, "%.1f" % ok,
      "%.2f" % (d["latencyPercentiles"]["p99"] * 1e3))' \
        "$name" "$case" "$round" "$status" $((after - before)) "$(getconf CLK_TCK)" <<<"$json" | tee -a "$out/rows.txt"
    done
  done
done
echo "medians of $rounds rounds of ${secs} s, $conns connections, $(nproc) cores shared by oha, the gateways and the upstreams:"
python3 -c '
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, case, _, rps, cpu, ok, _ = line.split()
    rows[(name, case)].append((float(rps), float(cpu), float(ok)))
for (name, case), v in rows.items():
    print(f"{name:<24} {case:<8} {statistics.median(x[0] for x in v):>9.0f} req/s {statistics.median(x[1] for x in v):>7.1f} us CPU/request, expected status {min(x[2] for x in v):.1f}%")' "$out/rows.txt"
