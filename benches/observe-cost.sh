#!/usr/bin/env bash
# What counting costs, side by side in one run (benches/gateways.sh, closed
# loop and one fixed rate, interleaved rounds): host-sim serve with and
# without --metrics, and the Envoy filter with and without its counting
# (the `uncounted` build). Prints the closed-loop requests/s and the CPU
# time per request of each, with metrics on over off, for the forward and
# the reject case. The budget: at most 3% (a ratio of requests/s at least
# 0.97; of CPU per request at most 1.03). On a shared machine requests/s
# swing by 15% from round to round; CPU per request is the steadier figure.
#
# OBSERVE_COST_REPORT=path/to/gateways.md reports on an earlier run.
#
# usage: bash benches/observe-cost.sh   (after make worker)
#   GATEWAYS_SECONDS, GATEWAYS_ROUNDS, GATEWAYS_CONNECTIONS as for gateways.sh
#   (defaults here: 5 s, 5 rounds; one fixed rate, 2000 req/s)
set -euo pipefail
cd "$(dirname "$0")/.."
export GATEWAYS="host-sim host-sim-metrics envoy-filter envoy-filter-uncounted"
export GATEWAYS_RATES=${GATEWAYS_RATES:-2000}
export GATEWAYS_ROUNDS=${GATEWAYS_ROUNDS:-5}
export GATEWAYS_SECONDS=${GATEWAYS_SECONDS:-5}
report=${OBSERVE_COST_REPORT:-target/bench-results/gateways.md}
[ -n "${OBSERVE_COST_REPORT:-}" ] || bash benches/gateways.sh >/dev/null
python3 - "$report" <<'PY'
import sys
rows = {}
closed = False
for line in open(sys.argv[1]):
    if line.startswith("### As fast as they go"):
        closed = True
    if closed and line.startswith("| ") and not line.startswith("| gateway"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[(cells[0], cells[1])] = {"rps": float(cells[2]), "cpu": float(cells[5]), "rounds": cells[6]}
print("What counting costs (closed loop, median of the rounds; on / off):")
print()
print("| what | case | off | on | on / off | budget |")
print("|---|---|---:|---:|---:|---:|")
for host, off_name, on_name in (("host-sim serve", "host-sim", "host-sim-metrics"), ("Envoy filter", "envoy-filter-uncounted", "envoy-filter")):
    for case in ("forward", "reject"):
        off, on = rows[(off_name, case)], rows[(on_name, case)]
        print(f"| {host} requests/s | {case} | {off['rps']:.0f} | {on['rps']:.0f} | {on['rps'] / off['rps']:.3f} | >= 0.97 |")
        print(f"| {host} CPU µs/request | {case} | {off['cpu']:.1f} | {on['cpu']:.1f} | {on['cpu'] / off['cpu']:.3f} | <= 1.03 |")
print()
print("requests/s by round: " + "; ".join(f"{g} {c}: {r['rounds']}" for (g, c), r in sorted(rows.items())))
PY
