#!/usr/bin/env bash
# The gateways side by side in one run, on loopback, each doing the same job
# (verify an HS256 token for aud "orders", forward to one upstream with the
# token removed and the subject in a header, or refuse with 401):
#   host-sim          target/release/host-sim serve --wasm dist/gateway.wasm
#                     (its default: a fresh instance per request)
#   host-sim-reuse    the same with --isolation reuse: one instance per
#                     thread, reused, as Envoy and workerd run the module
#   host-sim-metrics  host-sim with --metrics: what counting costs it
#                     (benches/observe-cost.sh; not in the default set)
#   workerd           node_modules/.bin/workerd serve deploy/workerd/config.capnp
#   wasmtime-serve    target/tools/bin/wasmtime serve dist/gateway-wasi-http.wasm:
#                     the gateway as a wasi:http component, a fresh instance
#                     per request (wasmtime serve's default, the standard's
#                     model); the component has no upstream override, so its
#                     upstream is a second `host-sim upstream` on the orders
#                     route's own loopback port (gateway.toml: 9101)
#   wasmtime-serve-reuse
#                     the same with each instance kept for the requests after
#                     its first (--max-instance-reuse-count), as host-sim's
#                     --isolation reuse (not in the default set)
#   envoy-filter      Envoy 1.40 with the gateway as a proxy-wasm filter
#                     (dist/gateway-envoy.wasm on V8), its bootstrap rendered
#                     from gateway.toml (target/release/envoy-filter)
#   envoy-filter-uncounted
#                     the filter built with its counting compiled out
#                     (feature `uncounted`): what counting costs Envoy
#                     (benches/observe-cost.sh; not in the default set)
#   envoy-native      Envoy 1.40 with the same core as a native dynamic module
#                     (build/envoy-native.sh from gateway.toml, rendered by
#                     `envoy-filter --native`) in the proxy-wasm filter's place
#   envoy-jwt-authn   Envoy 1.40 with its native jwt_authn filter, rendered
#                     from gateway.toml (target/release/envoy-jwt-authn)
#                     as an edge proxy, as the gateway's listener is
#                     (use_remote_address; no client internal)
#   envoy-jwt-authn-noedge
#                     the same without those two edge settings, as the peer
#                     was rendered before 2026-12-07: what they cost Envoy
#                     (not in the default set)
#   envoy-jwt-authn-cache
#                     the same with jwt_authn's verified-token cache on
#                     (jwt_cache_config, off by default in Envoy; the
#                     gateway's own cache is on in a reused instance, so
#                     this is jwt_authn configured like for like)
#   envoy-router      Envoy 1.40 proxying without any token check: the
#                     baseline that shows what a check costs Envoy (forward
#                     case only; it would forward the "reject" request too)
#   envoy-floor0 .. envoy-floor3, envoy-floor3p
#                     Envoy 1.40 with a proxy-wasm filter that decides
#                     nothing and makes, level by level, the host calls
#                     the gateway filter makes for a forward
#                     (benches/peers/envoy-floor/floor.mjs), every request
#                     routed to the upstream: what Envoy's wasm host costs
#                     before the filter's own work (forward case only; not
#                     in the default set)
#   envoy-floorr      the same for a reject: floor 2's calls, then the
#                     filter's 401 for the reject case sent with
#                     proxy_send_local_response, for every request (reject
#                     case only; not in the default set)
#   workerd-proxy     workerd running a trivial JavaScript fetch proxy
#                     (benches/peers/workerd-proxy): the baseline that shows
#                     what the shim costs workerd (forward case only)
#   workerd-floor0 .. workerd-floor2
#                     workerd running the shim's own code without a decision
#                     (benches/peers/workerd-floor/floor.mjs), step by step:
#                     the forward, + the plan's field edits, + the module's
#                     input (forward case only)
#   host-sim-base, envoy-filter-base, workerd-base
#                     host-sim, the filter and the shim of another checkout,
#                     named by GATEWAYS_BASE (a `git worktree` of an earlier
#                     commit, built there with `make worker` and, for
#                     host-sim, `cargo build --release --bin host-sim`):
#                     before and after in one run, with this checkout's
#                     module and upstream
# All of them forward aud "orders" to one upstream, `host-sim upstream`.
#   forward  a valid token for "orders": verified, forwarded, 200
#   reject   the same token with another token's signature: the whole
#            HS256 check runs and fails, 401 (every gateway checks the
#            signature before it looks at the claims' audience or times)
#
# Two measurements, each gateway in turn, interleaved, and both run
# GATEWAYS_ROUNDS times, every gateway in each round; the tables give the
# median of the rounds and each round's figure, since on a shared machine
# one run of a gateway can be 15% off the next in requests per second and
# several times off in p99:
#   1. fixed rate (open loop): the latency a client sees at a set offered
#      rate, p50/p99/p99.9 (each round's p99 listed);
#   2. closed loop: as many requests as the gateway takes over the same
#      connections: requests per second (each round's listed), p50/p99, and
#      the gateway process's CPU time per request (utime + stime from /proc,
#      the process and its children, divided by the responses it gave).
#
# Load generator: oha (crates.io), installed into target/tools when missing
# (once). It holds a rate with -q
# and reports percentiles; --latency-correction measures each request from
# the moment it was scheduled, not from when a connection was free to send
# it, so a stall shows up in the percentiles instead of being left out
# (coordinated omission).
#
# usage: bash benches/gateways.sh    (make bench runs it)
#   GATEWAYS_RATES        offered requests per second ("5000 10000 20000")
#   GATEWAYS_SECONDS      seconds per run (5)
#   GATEWAYS_ROUNDS       rounds of both measurements, the median reported (3)
#   GATEWAYS_CONNECTIONS  oha connections (32)
#   GATEWAYS              which to run ("host-sim host-sim-reuse workerd workerd-proxy envoy-filter
#                         envoy-jwt-authn envoy-jwt-authn-cache envoy-router wasmtime-serve")
#   GATEWAYS_BASE         the checkout host-sim-base, envoy-filter-base and workerd-base run from
#   GATEWAYS_PIN          1: the gateway pinned to CPU 0 (Envoy with one worker), oha and the
#                         upstream to CPU 1 (taskset), so that the gateway's core is what runs
#                         out; where requests/s times CPU µs/request comes to about 1 s per
#                         second, it did (docs/PERFORMANCE.md, "Each gateway on a core of its
#                         own"). 0 (default): all of them share every core
# Output: markdown on stdout and in target/bench-results/gateways.md
# (gateways-pinned.md with GATEWAYS_PIN=1).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/loopback.sh

rates=${GATEWAYS_RATES:-5000 10000 20000}
secs=${GATEWAYS_SECONDS:-5}
rounds=${GATEWAYS_ROUNDS:-3}
conns=${GATEWAYS_CONNECTIONS:-32}
gateways=${GATEWAYS:-host-sim host-sim-reuse workerd workerd-proxy envoy-filter envoy-jwt-authn envoy-jwt-authn-cache envoy-router wasmtime-serve}
oha_version=1.16.0
results=target/bench-results
out=$results/gateways.md
pin=${GATEWAYS_PIN:-0}
host_sim=target/release/host-sim
render=target/release/envoy-jwt-authn
workerd=node_modules/.bin/workerd

note() { echo "==> $*" >&2; }
[ -f dist/gateway.wasm ] || die "dist/gateway.wasm is missing: run 'make worker'"
[[ "$secs" =~ ^[0-9]+$ ]] && [ "$secs" -ge 1 ] && [ "$secs" -le 60 ] || die "GATEWAYS_SECONDS must be 1 to 60"
[[ "$rounds" =~ ^[0-9]+$ ]] && [ "$rounds" -ge 1 ] && [ "$rounds" -le 9 ] || die "GATEWAYS_ROUNDS must be 1 to 9"
mkdir -p "$results"
# The pinned layout: the gateway on CPU 0, the load on CPU 1.
gateway_cpu=() load_cpu=() layout="$(nproc) cores shared by oha, the gateway and the upstream"
case $pin in
  0) ;;
  1)
    [ "$(nproc)" -ge 2 ] || die "GATEWAYS_PIN=1 needs two cores, this machine has $(nproc)"
    command -v taskset >/dev/null || die "GATEWAYS_PIN=1 needs taskset (util-linux)"
    gateway_cpu=(taskset -c 0) load_cpu=(taskset -c 1) out=$results/gateways-pinned.md
    layout="the gateway pinned to CPU 0 (Envoy with --concurrency 1), oha and the upstream to CPU 1 ($(nproc) cores)"
    ;;
  *) die "GATEWAYS_PIN must be 0 or 1" ;;
esac

# The workspace's one release build (`make host`): the same command as
# `make test`, so the features resolve the same and nothing is rebuilt.
note "building host-sim and the Envoy renderers (release, the workspace's one build)"
cargo test --workspace --release --no-run --quiet
# The Envoy renderers are binaries of gateway-envoy-render, which the test
# build does not link; built as `make fixture` builds envoy-filter.
cargo build --release --quiet -p gateway-envoy-render --bins

# oha, pinned; `cargo install` only when this version is not there yet.
oha=target/tools/bin/oha
if ! "$oha" --version 2>/dev/null | grep -q " $oha_version"; then
  # Loopback HTTP needs no TLS, but oha builds only with one TLS stack: the
  # system's OpenSSL (native-tls) when its headers are there, a few minutes;
  # otherwise its default rustls on aws-lc, which compiles aws-lc from C
  # (half an hour on a shared 2-core machine).
  tls=()
  pkg-config --exists openssl 2>/dev/null && tls=(--no-default-features --features native-tls)
  note "installing oha $oha_version into target/tools (cargo install --locked ${tls[*]})"
  cargo install --quiet --locked "${tls[@]}" oha --version "$oha_version" --root target/tools
fi


up_port=$(free_port)
start upstream "$up_port" "$results/gateways-upstream.log" "${load_cpu[@]}" "$host_sim" upstream --listen "127.0.0.1:$up_port"
orders_upstream=$(python3 -c '
import tomllib
routes = tomllib.load(open("gateway.toml", "rb")).get("routes", [])
print(next((r["upstream"].rstrip("/") for r in routes if r.get("aud") == "orders"), ""))')
[ -n "$orders_upstream" ] || die "gateway.toml has no route for aud \"orders\""
orders_origin=$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(f"{p.scheme}://{p.netloc}")' "$orders_upstream")

forward_token=$("$host_sim" token --aud orders --sub load --exp-in 3600)
other_token=$("$host_sim" token --aud billing --sub load --exp-in 3600)
reject_token="${forward_token%.*}.${other_token##*.}"

declare -A port commands pid_of
for gateway in $gateways; do
  port[$gateway]=$(free_port)
  p=${port[$gateway]}
  case $gateway in
    host-sim | host-sim-base | host-sim-reuse | host-sim-metrics)
      bin=$host_sim
      [ "$gateway" = host-sim-base ] && bin=${GATEWAYS_BASE:-}/$host_sim
      [ -x "$bin" ] || die "$bin is missing: build it with 'cargo build --release --bin host-sim' (in GATEWAYS_BASE for the base)"
      cmd=("$bin" serve --listen "127.0.0.1:$p" --wasm dist/gateway.wasm
        --upstream-override "orders=http://127.0.0.1:$up_port")
      [ "$gateway" = host-sim-reuse ] && cmd+=(--isolation reuse)
      [ "$gateway" = host-sim-metrics ] && cmd+=(--metrics "127.0.0.1:$(free_port)")
      ;;
    workerd)
      [ -x "$workerd" ] || die "$workerd is missing: run 'make setup'"
      export GATEWAY_UPSTREAM_OVERRIDE="$orders_upstream=http://127.0.0.1:$up_port"
      cmd=("$workerd" serve deploy/workerd/config.capnp --socket-addr "http=127.0.0.1:$p")
      ;;
    wasmtime-serve | wasmtime-serve-reuse)
      [ -f dist/gateway-wasi-http.wasm ] || die "dist/gateway-wasi-http.wasm is missing: run 'make worker'"
      wasmtime=$(bash deploy/wasi-http/install.sh wasmtime | tail -1)
      # The component as `make worker` builds it forwards to the route's own
      # origin: an upstream of its own there, started once.
      wasi_up_port=${orders_origin#http://127.0.0.1:}
      [[ "$wasi_up_port" =~ ^[0-9]+$ ]] || die "$gateway: the orders route ($orders_origin) is not a loopback origin with a port"
      if [ -z "${wasi_upstream_started:-}" ]; then
        ! listening "$wasi_up_port" || die "$gateway: 127.0.0.1:$wasi_up_port (the orders route) is in use"
        start upstream "$wasi_up_port" "$results/gateways-upstream-wasi-http.log" "${load_cpu[@]}" "$host_sim" upstream --listen "127.0.0.1:$wasi_up_port"
        wasi_upstream_started=1
      fi
      cmd=("$wasmtime" serve --addr "127.0.0.1:$p")
      [ "$gateway" = wasmtime-serve-reuse ] && cmd+=(--max-instance-reuse-count 1000000000 --idle-instance-timeout 3600s)
      cmd+=(dist/gateway-wasi-http.wasm)
      ;;
    workerd-base)
      [ -f "${GATEWAYS_BASE:-}/deploy/workerd/config.capnp" ] || die "workerd-base: GATEWAYS_BASE must name a built checkout"
      export GATEWAY_UPSTREAM_OVERRIDE="$orders_upstream=http://127.0.0.1:$up_port"
      cmd=("$workerd" serve "$GATEWAYS_BASE/deploy/workerd/config.capnp" --socket-addr "http=127.0.0.1:$p")
      ;;
    workerd-floor[0-2])
      [ -x "$workerd" ] || die "$workerd is missing: run 'make setup'"
      export GATEWAY_UPSTREAM_OVERRIDE="$orders_upstream=http://127.0.0.1:$up_port"
      # Read when this process starts: one level per gateway.
      export GATEWAY_FLOOR_LEVEL=${gateway#workerd-floor}
      cmd=("$workerd" serve benches/peers/workerd-floor/config.capnp --socket-addr "http=127.0.0.1:$p")
      ;;
    workerd-proxy)
      [ -x "$workerd" ] || die "$workerd is missing: run 'make setup'"
      export GATEWAY_PEER_UPSTREAM="http://127.0.0.1:$up_port"
      cmd=("$workerd" serve benches/peers/workerd-proxy/config.capnp --socket-addr "http=127.0.0.1:$p")
      ;;
    envoy-filter | envoy-filter-base | envoy-filter-uncounted | envoy-native | envoy-jwt-authn | envoy-jwt-authn-noedge | envoy-jwt-authn-cache | envoy-router | envoy-floor[0-3] | envoy-floor3p | envoy-floorr)
      envoy=$(bash deploy/envoy/install.sh | tail -1)
      yaml=$results/$gateway.yaml
      envoy_env=()
      case $gateway in
        envoy-native)
          # The module Envoy opens by name from ENVOY_DYNAMIC_MODULES_SEARCH_PATH.
          native=$PWD/$results/native/libgateway_envoy.so
          NATIVE_OUT=$native bash build/envoy-native.sh >&2
          target/release/envoy-filter --listen "127.0.0.1:$p" --native "$native" \
            --upstream-override "$orders_origin=http://127.0.0.1:$up_port" --out "$yaml"
          envoy_env=(env "ENVOY_DYNAMIC_MODULES_SEARCH_PATH=$(dirname "$native")")
          ;;
        envoy-filter | envoy-filter-base | envoy-filter-uncounted | envoy-floor*)
          module=$PWD/dist/gateway-envoy.wasm
          [ "$gateway" = envoy-filter-base ] && module=${GATEWAYS_BASE:-}/dist/gateway-envoy.wasm
          if [ "$gateway" = envoy-filter-uncounted ]; then
            module=$PWD/$results/gateway-envoy-uncounted.wasm
            WORKER_FEATURES=${WORKER_FEATURES:+$WORKER_FEATURES,}uncounted WASM_OUT=$module bash build/envoy-filter.sh >&2
          fi
          if [[ $gateway == envoy-floor* ]]; then
            module=$PWD/$results/$gateway.wasm
            node benches/peers/envoy-floor/floor.mjs "${gateway#envoy-floor}" "$results/$gateway.wat"
            node_modules/.bin/wasm-as "$results/$gateway.wat" -o "$module"
          fi
          [ -f "$module" ] || die "$module is missing: run 'make worker' (in GATEWAYS_BASE for the base)"
          target/release/envoy-filter --listen "127.0.0.1:$p" --module "$module" \
            --upstream-override "$orders_origin=http://127.0.0.1:$up_port" --out "$yaml"
          ;;
        *)
          target/release/envoy-jwt-authn --listen "127.0.0.1:$p" \
            --upstream-override "orders=http://127.0.0.1:$up_port" --out "$yaml"
          ;;
      esac
      # The variants: jwt_authn's cache, the peer without the edge
      # settings, the router alone, the floors (benches/envoy_variant.py).
      python3 benches/envoy_variant.py "$yaml" "$gateway" "127.0.0.1:$up_port"
      cmd=("${envoy_env[@]}" "$envoy" --config-path "$yaml" --disable-hot-restart --log-level error)
      # One worker for the one core it is given.
      if [ "$pin" = 1 ]; then cmd+=(--concurrency 1); fi
      ;;
    *) die "unknown gateway $gateway (host-sim, host-sim-base, host-sim-reuse, host-sim-metrics, envoy-filter-uncounted, workerd, workerd-base, workerd-proxy, workerd-floor0 to workerd-floor2, envoy-filter, envoy-filter-base, envoy-native, envoy-jwt-authn, envoy-jwt-authn-noedge, envoy-jwt-authn-cache, envoy-router, envoy-floor0 to envoy-floor3, envoy-floor3p, envoy-floorr, wasmtime-serve, wasmtime-serve-reuse)" ;;
  esac
  cmd=("${gateway_cpu[@]}" "${cmd[@]}")
  commands[$gateway]="${cmd[*]}"
  note "starting $gateway on 127.0.0.1:$p"
  start "$gateway" "$p" "$results/gateways-$gateway.log" "${cmd[@]}"
  pid_of[$gateway]=$(started_pid)
done

# The cases a gateway runs: the baselines check nothing, so they have no
# reject; the reject floor rejects everything, so it has no forward.
cases_of() {
  if [ "$1" = envoy-floorr ]; then
    echo reject
  elif [ "$1" = envoy-router ] || [ "$1" = workerd-proxy ] || [[ $1 == *-floor* ]]; then
    echo forward
  else
    echo "forward reject"
  fi
}

# One oha run; prints "achieved p50 p99 p99.9 expected% responses" (ms).
# An empty rate runs closed loop (as fast as the gateway answers).
measure() { # url token rate seconds expected_status
  local json rate_args=()
  [ -n "$3" ] && rate_args=(--latency-correction -q "$3")
  json=$(timeout $(($4 + 30)) "${load_cpu[@]}" "$oha" --no-tui --output-format json "${rate_args[@]}" \
    -w -z "${4}s" -c "$conns" -H "Authorization: Bearer $2" "$1")
  python3 -c '
import json, sys
r = json.loads(sys.argv[1]); expected = sys.argv[2]
p = r["latencyPercentiles"]; codes = r.get("statusCodeDistribution", {})
answered = sum(codes.values()); total = answered + sum(r.get("errorDistribution", {}).values())
ms = lambda v: "%.2f" % (v * 1000) if v is not None else "n/a"
print("%.0f" % r["summary"]["requestsPerSec"], ms(p["p50"]), ms(p["p99"]), ms(p["p99.9"]),
      "%.1f" % (100.0 * codes.get(expected, 0) / total if total else 0), answered)
' "$json" "$5"
}
case_args() { # case -> "token status"
  if [ "$1" = forward ]; then echo "$forward_token 200"; else echo "$reject_token 401"; fi
}
url_of() { echo "http://127.0.0.1:${port[$1]}/orders/1?q=load"; }

note "warming up each gateway (1 s at 2000 req/s per case)"
for gateway in $gateways; do
  for case in $(cases_of "$gateway"); do
    read -r token status < <(case_args "$case")
    measure "$(url_of "$gateway")" "$token" 2000 1 "$status" >/dev/null
  done
done

# Gateways interleaved at each rate, so that a noisy moment on this shared
# machine touches all of them alike; the tables are sorted afterwards.
fixed_rows=()
for round in $(seq "$rounds"); do
  for rate in $rates; do
    for case in forward reject; do
      for gateway in $gateways; do
        [[ " $(cases_of "$gateway") " == *" $case "* ]] || continue
        read -r token status < <(case_args "$case")
        note "fixed rate, round $round of $rounds: $gateway $case at $rate req/s for ${secs}s"
        read -r achieved p50 p99 p999 ok _ < <(measure "$(url_of "$gateway")" "$token" "$rate" "$secs" "$status") || true
        [ -n "${ok:-}" ] || die "oha gave no result for $gateway $case at $rate req/s"
        fixed_rows+=("$gateway|$case|$rate|$achieved|$p50|$p99|$p999|$ok% $status")
      done
    done
  done
done

closed_rows=()
hz=$(getconf CLK_TCK)
for round in $(seq "$rounds"); do
  for case in forward reject; do
    for gateway in $gateways; do
      [[ " $(cases_of "$gateway") " == *" $case "* ]] || continue
      read -r token status < <(case_args "$case")
      note "closed loop, round $round of $rounds: $gateway $case for ${secs}s"
      before=$(cpu_ticks "${pid_of[$gateway]}")
      read -r achieved p50 p99 _ ok answered < <(measure "$(url_of "$gateway")" "$token" "" "$secs" "$status") || true
      after=$(cpu_ticks "${pid_of[$gateway]}")
      [ -n "${answered:-}" ] || die "oha gave no result for $gateway $case in closed loop"
      cpu_us=$(python3 -c 'import sys; t, hz, n = map(float, sys.argv[1:]); print("%.1f" % (t / hz * 1e6 / n) if n else "n/a")' \
        "$((after - before))" "$hz" "$answered")
      closed_rows+=("$gateway|$case|$achieved|$p50|$p99|$cpu_us|$ok% $status")
    done
  done
done

# One row per measurement from its rounds' rows ("KEY...|FIGURE...|expected"):
# the median of each figure, formatted as `formats` says, the figure
# `listed` (its index among the figures) of every round in the order run,
# and the least share of expected statuses.
median_rows() { # keys formats listed rows...
  python3 - "$@" <<'PY'
import statistics, sys
keys, formats, listed = int(sys.argv[1]), sys.argv[2].split(), int(sys.argv[3])
rows = {}
for row in sys.argv[4:]:
    cells = row.split("|")
    rows.setdefault(tuple(cells[:keys]), []).append(cells[keys:])
def median(values):
    numbers = [float(v) for v in values if v != "n/a"]
    return statistics.median(numbers) if numbers else None
for key, runs in rows.items():
    figures = [median(r[i] for r in runs) for i in range(len(formats))]
    cells = ["n/a" if v is None else f % v for v, f in zip(figures, formats)]
    ok = min(runs, key=lambda r: float(r[-1].split("%")[0]))[-1]
    print("|".join([*key, *cells, " / ".join(r[listed] for r in runs), ok]))
PY
}
# Fixed rate: achieved, p50, p99, p99.9; each round's p99 listed.
mapfile -t fixed_rows < <(median_rows 3 "%.0f %.2f %.2f %.2f" 2 "${fixed_rows[@]}")
# Closed loop: requests/s, p50, p99, CPU; each round's requests/s listed.
mapfile -t closed_rows < <(median_rows 2 "%.0f %.2f %.2f %.1f" 0 "${closed_rows[@]}")

# The rows of one table in gateway, case (and rate) order, as markdown.
# Each row is "gateway|case|..."; with_rate: its third field is the rate.
sorted_rows() { # with_rate rows...
  local gateway case rate row key
  for gateway in $gateways; do
    for case in forward reject; do
      for rate in $rates; do
        [ "$1" = with_rate ] && key="$gateway|$case|$rate|" || key="$gateway|$case|"
        for row in "${@:2}"; do
          if [[ "$row" == "$key"* ]]; then echo "| ${row//|/ | } |"; fi
        done
        if [ "$1" != with_rate ]; then break; fi
      done
    done
  done
}

{
  echo "oha $oha_version, $conns connections; $layout;"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'); load before: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo '```'
  echo "GATEWAYS_RATES=\"$rates\" GATEWAYS_SECONDS=$secs GATEWAYS_ROUNDS=$rounds GATEWAYS_CONNECTIONS=$conns${GATEWAYS:+ GATEWAYS=\"$gateways\"} GATEWAYS_PIN=$pin bash benches/gateways.sh"
  echo "fixed rate:  ${load_cpu[*]}${load_cpu:+ }oha --no-tui --output-format json --latency-correction -q RATE -w -z ${secs}s -c $conns -H 'Authorization: Bearer TOKEN' http://127.0.0.1:PORT/orders/1?q=load"
  echo "closed loop: the same without --latency-correction -q RATE"
  echo "upstream: $host_sim upstream --listen 127.0.0.1:UPSTREAM"
  for gateway in $gateways; do
    echo "$gateway: ${commands[$gateway]}" | sed "s/127\.0\.0\.1:${port[$gateway]}/127.0.0.1:PORT/g; s/127\.0\.0\.1:$up_port/127.0.0.1:UPSTREAM/g; s#$PWD/##g${GATEWAYS_BASE:+; s#$GATEWAYS_BASE#\$GATEWAYS_BASE#g}"
  done
  [[ " $gateways " == *" workerd "* ]] && echo "workerd: GATEWAY_UPSTREAM_OVERRIDE=$orders_upstream=http://127.0.0.1:UPSTREAM"
  [[ " $gateways " == *" workerd-proxy "* ]] && echo "workerd-proxy: GATEWAY_PEER_UPSTREAM=http://127.0.0.1:UPSTREAM"
  [[ " $gateways " == *" workerd-floor"* ]] && echo "workerd-floorN: GATEWAY_FLOOR_LEVEL=N GATEWAY_UPSTREAM_OVERRIDE=$orders_upstream=http://127.0.0.1:UPSTREAM"
  [[ " $gateways " == *" envoy-router "* ]] && echo "envoy-router: the envoy-jwt-authn bootstrap with only the router filter and one route to the upstream"
  [[ " $gateways " == *" wasmtime-serve"* ]] && echo "wasmtime-serve: its upstream is $host_sim upstream --listen ${orders_origin#http://} (the orders route's own origin)"
  echo '```'
  echo
  echo "### At a fixed offered rate (open loop, corrected for coordinated omission)"
  echo
  echo "Median of $rounds rounds, every gateway in each round."
  echo
  echo "| gateway | case | offered req/s | achieved req/s | p50 ms | p99 ms | p99.9 ms | p99 ms by round | expected status |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  sorted_rows with_rate "${fixed_rows[@]}"
  echo
  echo "### As fast as they go (closed loop), with the gateway's CPU time per request"
  echo
  echo "Median of $rounds rounds, every gateway in each round."
  echo
  echo "| gateway | case | requests/s | p50 ms | p99 ms | gateway CPU µs/request | requests/s by round | expected status |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  sorted_rows without_rate "${closed_rows[@]}"
} | tee "$out"
note "written to $out"
