#!/usr/bin/env bash
# make bench: every benchmark of the gateway, side by side in one run, then
# docs/PERFORMANCE.md written from what was measured.
#
# Steps (each prints its progress):
#   1. build: the benches, host-sim, and the module variants of the size table
#   2. criterion: native rlib, jsonwebtoken, microservice, wasmtime (all modes)
#   3. per-call latency histograms (native, wasmtime, microservice), the
#      interleaved comparisons, and the host end to end (bench-tool host)
#   4. Node.js: the module through WebAssembly and plain JavaScript
#   5. cold start: whole processes (hyperfine, /usr/bin/time -v)
#   6. HTTP: host-sim serve and workerd at fixed rates with the mix; then
#      benches/gateways.sh: every gateway incl. Envoy, fixed rate and closed loop
#   7. the report (benches/report.md.tmpl filled by `bench-tool report`):
#      docs/PERFORMANCE.md, the one place figures are written
#
# A benchmark that fails stops the run with its error; a figure the report
# needs and the run did not produce fails the report with its name.
#
# Environment:
#   BENCH_WARMUP / BENCH_TIME   criterion warm-up and measurement seconds (1 / 2)
#   BENCH_HTTP_RATES            requests per second for the HTTP runs ("2000 5000 10000 20000")
#   BENCH_HTTP_SECONDS          seconds per HTTP run (4)
#   BENCH_SKIP                  steps to skip: "http", "node" and/or "gateways" (a quick look only: the
#                               report then says so, and their figures read "skipped")
set -euo pipefail
cd "$(dirname "$0")/.."

warmup=${BENCH_WARMUP:-1}
measure=${BENCH_TIME:-2}
rates=${BENCH_HTTP_RATES:-2000 5000 10000 20000}
http_secs=${BENCH_HTTP_SECONDS:-4}
skip=" ${BENCH_SKIP:-} "
results=target/bench-results
variants=target/bench-variants
wasm_opt=node_modules/.bin/wasm-opt
host_sim=target/release/host-sim
tool=target/release/bench-tool
started=$(date +%s)

step() { echo; echo "==> [$(( $(date +%s) - started ))s] $*"; }
skipped() { [[ "$skip" == *" $1 "* ]]; }
for s in $skip; do
  [ "$s" = http ] || [ "$s" = node ] || [ "$s" = gateways ] \
    || { echo "error: BENCH_SKIP: unknown step '$s' (http, node, gateways)" >&2; exit 1; }
done
die() { echo "error: $*" >&2; exit 1; }

[ -f dist/gateway.wasm ] || die "dist/gateway.wasm is missing: run 'make worker'"
[ -x "$wasm_opt" ] || die "$wasm_opt is missing: run 'make setup'"
rm -rf "$results"
mkdir -p "$results" "$variants"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

# Debian's hyperfine for whole-process timings, when the machine lets us.
if ! command -v hyperfine >/dev/null && [ "$(id -u)" = 0 ]; then
  step "installing hyperfine (apt-get)"
  apt-get install -y -qq hyperfine >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq hyperfine >/dev/null 2>&1; } \
    || echo "note: hyperfine could not be installed; a timed loop is used instead"
fi

# ---- 0. the machine ------------------------------------------------------------
{
  echo "model=$(lscpu | sed -n 's/^Model name: *//p')"
  echo "cpus=$(nproc)"
  echo "cores_per_socket=$(lscpu | sed -n 's/^Core(s) per socket: *//p')"
  echo "threads_per_core=$(lscpu | sed -n 's/^Thread(s) per core: *//p')"
  echo "hypervisor=$(lscpu | sed -n 's/^Hypervisor vendor: *//p')"
  echo "sha_ni=$(grep -qw sha_ni /proc/cpuinfo && echo yes || echo no)"
  echo "memory=$(free -g | awk '/^Mem:/ {print $2}') GiB"
  echo "kernel=$(uname -r)"
  echo "rustc=$(rustc --version)"
  echo "wasmtime=$(awk '/^name = "wasmtime"$/ {getline; gsub(/"/, "", $3); print $3; exit}' Cargo.lock)"
  echo "criterion=$(awk '/^name = "criterion"$/ {getline; gsub(/"/, "", $3); print $3; exit}' Cargo.lock)"
  echo "jsonwebtoken=$(awk '/^name = "jsonwebtoken"$/ {getline; gsub(/"/, "", $3); print $3; exit}' Cargo.lock)"
  echo "node=$(node --version)"
  echo "v8=$(node -p process.versions.v8)"
  echo "workerd=$(node_modules/.bin/workerd --version 2>/dev/null | head -1 || echo none)"
  echo "wasm_opt=$("$wasm_opt" --version)"
  echo "hyperfine=$(hyperfine --version 2>/dev/null || echo none)"
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)$(git diff --quiet HEAD -- worker 2>/dev/null || echo ' (worker/ modified)')"
  echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "skipped=${BENCH_SKIP:-}"
} >"$results/machine.env"
cat "$results/machine.env"

# ---- 1. build ------------------------------------------------------------------
step "1/7 build: benches, host-sim (release)"
cargo build --release --quiet -p gateway-benches -p host-sim --bins --benches

step "1/7 build: module variants for the size table (target/bench-variants; dist/ is left alone)"
features=(--enable-bulk-memory --enable-bulk-memory-opt --enable-nontrapping-float-to-int
  --enable-sign-ext --enable-mutable-globals --enable-multivalue --enable-reference-types)
strip_only=(--strip-debug --strip-producers --strip-target-features)
rm -f "$variants"/*.wasm
# Every size-profile variant but C (opt-level 3, as the speed profile) takes
# the size profile's flags as dist/gateway.wasm does: `--config`, or, where a
# variant sets RUSTFLAGS (which replaces the config's flags), the same flags.
size_profile=(--config build/size-profile.toml)
size_rustflags=$(python3 -c 'import tomllib; print(" ".join(tomllib.load(open("build/size-profile.toml", "rb"))["target"]["wasm32-unknown-unknown"]["rustflags"]))')
# A: the shipped configuration (sha2 compact, 32 KiB stack): raw, stripped, -Oz.
cp dist/gateway.raw.wasm "$variants/a1-compact-raw.wasm"
"$wasm_opt" "${features[@]}" "${strip_only[@]}" dist/gateway.raw.wasm -o "$variants/a2-compact-stripped.wasm"
cp dist/gateway.wasm "$variants/a3-compact-oz.wasm"
# B: sha2's default (unrolled) backend: the same build without the cfg.
echo "  sha2 default backend"
RUSTFLAGS="-C link-arg=-zstack-size=32768 $size_rustflags" cargo rustc --quiet -p worker --lib --target wasm32-unknown-unknown \
  --profile wasm --crate-type cdylib --target-dir "$variants/build-sha2-default"
cp "$variants/build-sha2-default/wasm32-unknown-unknown/wasm/worker.wasm" "$variants/b1-default-raw.wasm"
"$wasm_opt" "${features[@]}" -Oz "${strip_only[@]}" "$variants/b1-default-raw.wasm" -o "$variants/b3-default-oz.wasm"
# C: opt-level 3 instead of z, then wasm-opt -O3 (speed over size).
echo "  opt-level 3"
cargo rustc --quiet -p worker --lib --target wasm32-unknown-unknown --profile wasm --crate-type cdylib \
  --config 'profile.wasm.opt-level=3' --target-dir "$variants/build-o3"
cp "$variants/build-o3/wasm32-unknown-unknown/wasm/worker.wasm" "$variants/c1-o3-raw.wasm"
"$wasm_opt" "${features[@]}" -O3 "${strip_only[@]}" "$variants/c1-o3-raw.wasm" -o "$variants/c3-o3-wasmopt-o3.wasm"
# E: opt-level 3 for sha2 only (the hot loop), the rest for size.
echo "  opt-level 3 for sha2 only"
cargo rustc --quiet -p worker --lib --target wasm32-unknown-unknown --profile wasm --crate-type cdylib "${size_profile[@]}" \
  --config 'profile.wasm.package.sha2.opt-level=3' --target-dir "$variants/build-sha2-o3"
cp "$variants/build-sha2-o3/wasm32-unknown-unknown/wasm/worker.wasm" "$variants/e1-sha2o3-raw.wasm"
"$wasm_opt" "${features[@]}" -Oz "${strip_only[@]}" "$variants/e1-sha2o3-raw.wasm" -o "$variants/e3-sha2o3-oz.wasm"
# D: rustc's default 1 MiB stack (what the 32 KiB stack saves per instance).
echo "  default 1 MiB stack"
RUSTFLAGS="--cfg sha2_backend_soft=\"compact\" $size_rustflags" cargo rustc --quiet -p worker --lib --target wasm32-unknown-unknown \
  --profile wasm --crate-type cdylib --target-dir "$variants/build-stack-1m"
"$wasm_opt" "${features[@]}" -Oz "${strip_only[@]}" "$variants/build-stack-1m/wasm32-unknown-unknown/wasm/worker.wasm" \
  -o "$variants/d3-stack1m-oz.wasm"
# F: without the size profile's flags (LLVM's inline threshold at opt-level z's own).
echo "  opt-level z's own inline threshold"
cargo rustc --quiet -p worker --lib --target wasm32-unknown-unknown --profile wasm --crate-type cdylib \
  --target-dir "$variants/build-inline5"
"$wasm_opt" "${features[@]}" -Oz "${strip_only[@]}" "$variants/build-inline5/wasm32-unknown-unknown/wasm/worker.wasm" \
  -o "$variants/f3-inline5-oz.wasm"
# Kernels for the proposed speedups (benches/wasm-kernels), measured in wasm.
echo "  kernels (benches/wasm-kernels)"
cargo build --quiet --release --manifest-path benches/wasm-kernels/Cargo.toml --target wasm32-unknown-unknown \
  --target-dir "$variants/build-kernels"
cp "$variants/build-kernels/wasm32-unknown-unknown/release/wasm_kernels.wasm" "$variants/wasm_kernels.wasm.kernel"
# The modules of other configs (target/bench-configs, apart from the size
# table's variants), for bench-tool paired: the same four RS256 keys compiled
# in and fetched at run time (every algorithm built into both), and
# gateway.toml with 20 rules.
for keys in compiled fetched; do
  GATEWAY_CONFIG=benches/configs/keys-$keys.toml WORKER_FEATURES=rs256,es256,eddsa \
    WASM_OUT="target/bench-configs/keys-$keys.wasm" bash build/worker.sh >/dev/null
done
GATEWAY_CONFIG=benches/configs/rules-20.toml WASM_OUT=target/bench-configs/rules-20.wasm bash build/worker.sh >/dev/null
# Tokens bound to their sender (DPoP proofs of each algorithm, client
# certificates), for step 4.
GATEWAY_CONFIG=testkit/fixture-dpop.toml WORKER_FEATURES=rs256,es256,eddsa \
  WASM_OUT=target/bench-configs/dpop.wasm bash build/worker.sh >/dev/null
ls -l "$variants"/*.wasm | awk '{print "  " $5 "\t" $9}'
for f in "$variants"/*.wasm; do
  printf '%s %s %s\n' "$(basename "$f" .wasm)" "$(stat -c %s "$f")" "$(gzip -9c "$f" | wc -c)"
done >"$results/sizes.txt"

# ---- 2. criterion --------------------------------------------------------------
export CRITERION_HOME="$PWD/$results/criterion"
crit=(--warm-up-time "$warmup" --measurement-time "$measure" --noplot)
for bench in native peers wasm; do
  step "2/7 criterion: $bench (cargo bench -p gateway-benches --bench $bench -- ${crit[*]})"
  # criterion's output, one line per benchmark (the whole of it in the log);
  # a failure (a check that panics, a build error) stops the run here.
  log="$results/criterion-$bench.log"
  if ! cargo bench --quiet -p gateway-benches --bench "$bench" -- "${crit[@]}" 2>&1 | tee "$log" \
    | awk '/time:/ { $1=$1; if ($1 != "time:") print "  " $0; else print "  " held " " $0; next }
           /^[a-z_]+\// { held=$1 }'; then
    tail -n 20 "$log" >&2
    die "criterion: bench '$bench' failed (whole output: $log)"
  fi
done

# ---- 3. per-call latency -------------------------------------------------------
step "3/7 per-call latency histograms ($tool latency)"
"$tool" latency "$results/latency.json"
step "3/7 interleaved A/B comparisons ($tool paired)"
"$tool" paired "$results/paired.json"
step "3/7 the host end to end: $tool host --json (JIT, then .cwasm)"
"$host_sim" compile dist/gateway.wasm -o "$variants/gateway-host.cwasm" >/dev/null
"$tool" host --wasm dist/gateway.wasm --requests 50000 --cold-runs 10 --json >"$results/host-bench-wasm.json"
"$tool" host --cwasm "$variants/gateway-host.cwasm" --requests 50000 --cold-runs 10 --json \
  >"$results/host-bench-cwasm.json"

# ---- 4. Node.js ----------------------------------------------------------------
"$tool" corpus "$results/corpus.json"
if skipped node; then echo "(node skipped)"; else
  step "4/7 Node.js $(node --version): node benches/node/bench.mjs"
  node benches/node/bench.mjs "$results/corpus.json" dist/gateway.wasm "$results/node.json"
  node benches/node/dpop.mjs target/bench-configs/dpop.wasm "$results/node-dpop.json"
fi

# ---- 5. cold start, whole process ----------------------------------------------
step "5/7 cold start: whole processes"
node -e '
  const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const valid = c.cases.find((r) => r.name === "valid");
  console.log(JSON.stringify({ request: valid.head, now: c.now }));' "$results/corpus.json" >"$results/one-request.jsonl"
cold_cmds=(
  "eval_jit_cranelift|$host_sim eval --wasm dist/gateway.wasm"
  "eval_jit_winch|$host_sim eval --wasm dist/gateway.wasm --strategy winch"
)
cold_cmds+=("eval_cwasm|$host_sim eval --cwasm $variants/gateway-host.cwasm")
cold_cmds+=("node_wasm|node benches/node/cold.mjs dist/gateway.wasm")
cold_cmds+=("node_empty|node -e 0")
: >"$results/cold-process.txt"
for entry in "${cold_cmds[@]}"; do
  name=${entry%%|*} cmd=${entry#*|}
  out=$($cmd <"$results/one-request.jsonl" 2>&1 | head -c 300 || true)
  echo "  $name: $cmd"
  echo "    -> ${out//$'\n'/ }"
  rss=$( { /usr/bin/time -v $cmd <"$results/one-request.jsonl" >/dev/null 2>/dev/null; } 2>&1 | awk -F': ' '/Maximum resident/ {print $2}' || true)
  [ -n "$rss" ] || rss=$(/usr/bin/time -f '%M' $cmd <"$results/one-request.jsonl" 2>&1 >/dev/null | tail -1)
  if command -v hyperfine >/dev/null; then
    hyperfine --warmup 3 --runs 30 --shell bash --export-json "$results/cold-$name.json" \
      "$cmd < $results/one-request.jsonl" >/dev/null
    ms=$(node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1])).results[0];console.log((r.mean*1e3).toFixed(2), (r.stddev*1e3).toFixed(2), (r.min*1e3).toFixed(2), "hyperfine")' "$results/cold-$name.json")
  else
    t0=$(date +%s%N)
    for _ in $(seq 30); do $cmd <"$results/one-request.jsonl" >/dev/null 2>&1; done
    ms=$(( ($(date +%s%N) - t0) / 30000 ))" 0 0 loop"
  fi
  echo "$name|$cmd|$ms|$rss" >>"$results/cold-process.txt"
  echo "    mean/stddev/min ms: $ms; max RSS ${rss} KiB"
done

# ---- 6. HTTP end to end --------------------------------------------------------
free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port what pid
  for _ in $(seq 150); do
    listening "$1" && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
: >"$results/http-notes.txt"
if skipped http; then echo "(http skipped)" | tee -a "$results/http-notes.txt"; else
  step "6/7 HTTP: host-sim serve and workerd at ${rates// /, } req/s, ${http_secs}s each"
  # The upstream the valid tokens are forwarded to.
  up_port=$(free_port)
  "$host_sim" upstream --listen "127.0.0.1:$up_port" >/dev/null 2>&1 &
  pids+=($!)
  wait_port "$up_port" upstream "${pids[-1]}" || die "the upstream did not start"
  # Every route goes to the one upstream, so every valid token of the mix,
  # whatever its audience, is forwarded and answered 200.
  read -r -a aud_overrides < <(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1])).routes
    .map((r) => `--upstream-override ${r.aud}=http://127.0.0.1:${process.argv[2]}`).join(" ")' "$results/corpus.json" "$up_port")
  origin_overrides=$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1])).routes
    .map((r) => `${new URL(r.upstream).origin}=http://127.0.0.1:${process.argv[2]}`).join(",")' "$results/corpus.json" "$up_port")
  targets=()
  hs_port=$(free_port)
  "$host_sim" serve --listen "127.0.0.1:$hs_port" --wasm dist/gateway.wasm \
    "${aud_overrides[@]}" >"$results/host-sim-serve.log" 2>&1 &
  pids+=($!)
  if wait_port "$hs_port" "host-sim serve" "${pids[-1]}"; then
    targets+=("host-sim serve|$hs_port")
    echo "host-sim serve: \`$host_sim serve --listen 127.0.0.1:PORT --wasm dist/gateway.wasm ${aud_overrides[*]//$up_port/UPSTREAM}\` (its defaults: a fresh instance per request, epoch deadline, one worker thread per core)" >>"$results/http-notes.txt"
  else
    echo "host-sim serve: not measured: it did not start ($(tail -1 "$results/host-sim-serve.log"))" | tee -a "$results/http-notes.txt"
  fi
  hr_port=$(free_port)
  "$host_sim" serve --listen "127.0.0.1:$hr_port" --wasm dist/gateway.wasm --isolation reuse \
    "${aud_overrides[@]}" >"$results/host-sim-serve-reuse.log" 2>&1 &
  pids+=($!)
  if wait_port "$hr_port" "host-sim serve --isolation reuse" "${pids[-1]}"; then
    targets+=("host-sim serve, reuse|$hr_port")
    echo "host-sim serve, reuse: the same with \`--isolation reuse\` (one instance per worker thread, as workerd reuses its instance)" >>"$results/http-notes.txt"
  fi
  if [ -f deploy/workerd/config.capnp ] && [ -x node_modules/.bin/workerd ]; then
    wd_port=$(free_port)
    GATEWAY_UPSTREAM_OVERRIDE="$origin_overrides" \
      node_modules/.bin/workerd serve deploy/workerd/config.capnp --socket-addr "http=127.0.0.1:$wd_port" \
      >"$results/workerd.log" 2>&1 &
    pids+=($!)
    if wait_port "$wd_port" workerd "${pids[-1]}"; then
      targets+=("workerd|$wd_port")
      echo "workerd: \`GATEWAY_UPSTREAM_OVERRIDE=${origin_overrides//$up_port/UPSTREAM} node_modules/.bin/workerd serve deploy/workerd/config.capnp --socket-addr http=127.0.0.1:PORT\` (deploy/workerd's config, one isolate, instance reused)" >>"$results/http-notes.txt"
    else
      echo "workerd: not measured: it did not start ($(tail -1 "$results/workerd.log"))" | tee -a "$results/http-notes.txt"
    fi
  else
    echo "workerd: not measured: deploy/workerd/config.capnp or node_modules/.bin/workerd is missing" | tee -a "$results/http-notes.txt"
  fi
  for t in "${targets[@]}"; do
    name=${t%%|*} port=${t#*|}
    # Warm-up: JIT tiers, connections, pool slots.
    "$tool" load "http://127.0.0.1:$port" 2000 1 16 warmup "$name" "$results/http-warmup.json" >/dev/null 2>&1 || true
    for rate in $rates; do
      "$tool" load "http://127.0.0.1:$port" "$rate" "$http_secs" 16 http "$name" "$results/http.json"
    done
  done
  cleanup
  pids=()
fi

# ---- 6b. the gateways side by side: host-sim, workerd, Envoy (filter, jwt_authn) -
if skipped gateways; then echo "(gateways skipped)"; else
  step "6/7 gateways side by side: host-sim serve, workerd, Envoy + filter, Envoy jwt_authn, wasmtime serve (benches/gateways.sh)"
  # The default set, with each host's counting off beside it on (host-sim
  # without --metrics, the Envoy filter's uncounted build): what counting
  # costs, in the same interleaved rounds (benches/observe-cost.sh).
  GATEWAYS="host-sim host-sim-metrics host-sim-reuse workerd workerd-proxy envoy-filter envoy-filter-uncounted envoy-native envoy-jwt-authn envoy-jwt-authn-cache envoy-router wasmtime-serve" \
    bash benches/gateways.sh
  # The Envoy gateways again, each pinned to a core of its own with one
  # worker and the load pinned to the other, so that the gateway is what
  # limits requests/s (about 6 minutes).
  GATEWAYS="envoy-native envoy-filter envoy-jwt-authn envoy-router" GATEWAYS_PIN=1 GATEWAYS_RATES=2000 \
    bash benches/gateways.sh
fi

# ---- 7. report -----------------------------------------------------------------
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$results/machine.env"
echo "total_seconds=$(( $(date +%s) - started ))" >>"$results/machine.env"
step "7/7 report: docs/PERFORMANCE.md"
"$tool" report "$results" docs/PERFORMANCE.md
# The gateways' tables, with their command, as the last section.
if [ -f "$results/gateways.md" ]; then
  { echo; echo "## 9. The gateways side by side: host-sim, workerd, Envoy with the filter, Envoy's jwt_authn, wasmtime serve"; echo; cat "$results/gateways.md"
    python3 benches/gateway_targets.py "$results/gateways.md"
    echo; echo "## 10. What counting costs: host-sim serve with --metrics, the Envoy filter with its stats"; echo
    echo "From the rounds above (\`OBSERVE_COST_REPORT=$results/gateways.md bash benches/observe-cost.sh\`; alone: \`bash benches/observe-cost.sh\`)."; echo
    OBSERVE_COST_REPORT="$results/gateways.md" bash benches/observe-cost.sh; } >>docs/PERFORMANCE.md
fi
if [ -f "$results/gateways-pinned.md" ]; then
  { echo; echo "## 11. The Envoy gateways, each on a core of its own"; echo
    echo 'Envoy with one worker pinned to CPU 0, oha and the upstream pinned to CPU 1 (`GATEWAYS_PIN=1`), so that the gateway, not the load beside it, is what runs out: where requests/s times CPU µs/request comes to about 1 s per second, Envoy'"'"'s core was full.'; echo
    cat "$results/gateways-pinned.md"
    python3 benches/gateway_targets.py "$results/gateways-pinned.md"; } >>docs/PERFORMANCE.md
fi
echo "==> done in $(( $(date +%s) - started ))s"
