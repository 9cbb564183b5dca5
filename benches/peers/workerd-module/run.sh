#!/usr/bin/env bash
# The module alone in workerd's V8, modules side by side: for each round,
# each module and each head (a valid token presented again, a bad
# signature), one workerd runs benches/peers/workerd-module/bench.mjs over
# that module, decides the head WARM times, then N times in one request
# timed by the client (workerd stops its clocks while JavaScript runs).
# Prints the median ns per decision of each module and head, and its ratio
# to the first module. Loopback only; each workerd is stopped after its
# measurement.
#
#   bash benches/peers/workerd-module/run.sh [--rounds R] [--n N] A.wasm B.wasm...
#
# The heads come from the benchmark corpus (`bench-tool corpus`, minted with
# gateway.toml's key): build the modules from that config.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source scripts/loopback.sh

rounds=3 n=50000 warm=20000
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || die "usage: run.sh [--rounds R] [--n N] A.wasm B.wasm..."
workerd=node_modules/.bin/workerd
tool=target/release/bench-tool
[ -x "$workerd" ] || die "$workerd is missing: run 'make setup'"
[ -x "$tool" ] || die "$tool is missing: run 'cargo build --release -p gateway-benches'"

scratch=target/workerd-module
rm -rf "$scratch" && mkdir -p "$scratch"
"$tool" corpus "$scratch/corpus.json" >/dev/null 2>&1 || die "bench-tool corpus failed"
node -e '
  const c = JSON.parse(require("fs").readFileSync(process.argv[1]));
  const head = (name) => c.cases.find((x) => x.name === name).head;
  console.log(JSON.stringify({ valid: head("valid"), bad: head("bad_signature"), now: c.now }));
' "$scratch/corpus.json" >"$scratch/heads.json"

# One directory per module: the Worker, the module, the heads and a config.
for i in $(seq $#); do
  module=${!i}
  [ -f "$module" ] || die "$module: no such module"
  dir="$scratch/$i"
  mkdir -p "$dir"
  cp benches/peers/workerd-module/bench.mjs "$scratch/heads.json" "$dir/"
  cp "$module" "$dir/gateway.wasm"
  cat >"$dir/config.capnp" <<'CAPNP'
using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "bench", worker = .bench)],
  sockets = [(name = "http", address = "127.0.0.1:8790", http = (), service = "bench")],
);
const bench :Workerd.Worker = (
  modules = [
    (name = "bench.mjs", esModule = embed "bench.mjs"),
    (name = "gateway.wasm", wasm = embed "gateway.wasm"),
    (name = "heads.json", json = embed "heads.json"),
  ],
  compatibilityDate = "2026-05-01",
);
CAPNP
done

results="$scratch/results.txt"
: >"$results"
for round in $(seq "$rounds"); do
  for kind in valid bad; do
    for i in $(seq $#); do
      port=$(free_port)
      start "workerd $i" "$port" "$scratch/$i/workerd.log" \
        "$workerd" serve "$scratch/$i/config.capnp" --socket-addr "http=127.0.0.1:$port"
      url="http://127.0.0.1:$port/?kind=$kind"
      curl -sf --max-time 60 "$url&n=$warm" >/dev/null || die "workerd $i did not answer"
      began=$(date +%s%N)
      curl -sf --max-time 60 "$url&n=$n" >/dev/null || die "workerd $i did not answer"
      ended=$(date +%s%N)
      echo "$i $kind $(((ended - began) / n))" >>"$results"
      stop_servers
      pids=()
    done
  done
  echo "round $round of $rounds done" >&2
done

node -e '
  const [path, ...modules] = process.argv.slice(1);
  const rows = require("fs").readFileSync(path, "utf8").trim().split("\n").map((l) => l.split(" "));
  const median = (xs) => { const s = xs.map(Number).sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
  const of = (i, kind) => median(rows.filter((r) => r[0] === String(i) && r[1] === kind).map((r) => r[2]));
  console.log("| module | valid (cache hit), ns | bad signature, ns |");
  console.log("|---|---:|---:|");
  modules.forEach((m, k) => {
    const i = k + 1;
    const cell = (kind) => `${of(i, kind)}` + (i > 1 ? ` (${(of(i, kind) / of(1, kind)).toFixed(2)}x)` : "");
    console.log(`| ${m} | ${cell("valid")} | ${cell("bad")} |`);
  });
' "$results" "$@"
