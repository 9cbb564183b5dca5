#!/usr/bin/env python3
"""The gateways against their peers, as ratios of one run of benches/gateways.sh.

Reads the markdown gateways.sh writes (target/bench-results/gateways.md) and
prints a table of the ratios the performance targets are stated in: each
gateway's closed-loop requests per second (the ratio of the rounds' medians,
and each round's own ratio) and CPU time per request against its peer's, and
the forward p99 at the fixed rates (the median of the rounds, and each
round's). benches/run.sh appends it to docs/PERFORMANCE.md after the
gateways' own tables.

    python3 benches/gateway_targets.py target/bench-results/gateways.md
"""

import sys


def tables(text):
    """Each markdown table under a '###' heading: heading -> list of rows (cells)."""
    found, heading = {}, None
    for line in text.splitlines():
        if line.startswith("### "):
            heading = line[4:].strip()
            found[heading] = []
        elif heading and line.startswith("|") and not line.startswith("|---"):
            found[heading].append([cell.strip() for cell in line.strip("|").split("|")])
    return {h: rows[1:] for h, rows in found.items() if rows}  # without the header row


def main(path):
    parsed = tables(open(path, encoding="utf-8").read())
    closed = next((rows for h, rows in parsed.items() if h.startswith("As fast as they go")), [])
    fixed = next((rows for h, rows in parsed.items() if h.startswith("At a fixed offered rate")), [])
    # gateway, case -> (requests/s, CPU µs/request), the medians of the rounds
    loop = {(r[0], r[1]): (float(r[2]), float(r[5])) for r in closed if r[5] != "n/a"}
    # gateway, case -> each round's requests/s, in the order run (a table of
    # one round, from before gateways.sh ran rounds, has no such column)
    by_round = {(r[0], r[1]): [float(v) for v in r[6].split(" / ")] for r in closed if len(r) > 7}
    # gateway, case, rate -> p99 ms, the median of the rounds, and each
    # round's p99 as gateways.sh lists them (only where the rate was held;
    # a table from before gateways.sh ran fixed-rate rounds has no list)
    p99 = {(r[0], r[1], r[2]): (float(r[5]), r[7] if len(r) > 8 else None)
           for r in fixed if float(r[3]) >= 0.98 * float(r[2])}

    def ratio(a, b, case):
        if (a, case) not in loop or (b, case) not in loop:
            return None
        (rps_a, cpu_a), (rps_b, cpu_b) = loop[(a, case)], loop[(b, case)]
        # Each round's ratio: the rounds interleave the gateways, so the two
        # runs of one round met the same moment of the machine.
        rounds = zip(by_round.get((a, case), []), by_round.get((b, case), []))
        per_round = ", ".join(f"{x / y:.2f}x" for x, y in rounds) or "n/a"
        return f"{rps_a / rps_b:.2f}x", per_round, f"{cpu_a / cpu_b:.2f}x"

    rows = []
    # The targets are stated against jwt_authn as Envoy ships it (no token
    # cache). The gateway keeps verified tokens in a reused instance, so the
    # rows against envoy-jwt-authn-cache compare the two configured alike.
    for a, b, target in [
        ("envoy-filter", "envoy-jwt-authn", ">= 1.15x"),
        ("envoy-filter", "envoy-jwt-authn-cache", "like for like"),
        # The same core as a native dynamic module: no sandbox to cross.
        ("envoy-native", "envoy-jwt-authn", ">= 1.3x"),
        ("envoy-native", "envoy-filter", "the sandbox's cost"),
        # The peer as rendered before it carried the edge settings the
        # gateway's listener has (hand runs only).
        ("envoy-native", "envoy-jwt-authn-noedge", "peer without edge settings"),
        ("envoy-jwt-authn", "envoy-jwt-authn-noedge", "what the edge settings cost"),
        ("host-sim", "envoy-jwt-authn", ">= 1.5x"),
        ("host-sim-reuse", "envoy-jwt-authn", "instances reused, as in Envoy"),
        ("host-sim-reuse", "envoy-jwt-authn-cache", "like for like"),
        # The standard's host: an instance per request, as host-sim's default.
        ("wasmtime-serve", "host-sim", "the wasi:http component, both fresh instances"),
    ]:
        for case in ("forward", "reject"):
            r = ratio(a, b, case)
            if r:
                rows.append(f"| {a} against {b}, {case} | {r[0]} | {r[1]} | {r[2]} | {target} |")
    r = ratio("workerd", "workerd-proxy", "forward")
    if r:
        rows.append(f"| workerd against workerd-proxy, forward | {r[0]} | {r[1]} | {r[2]} | >= 0.9x |")
    if rows:
        print()
        print("### Against the targets (ratios of the closed-loop table above)")
        print()
        print("| gateway against its peer | requests/s (medians) | requests/s, round by round | CPU per request (medians) | target (requests/s) |")
        print("|---|---:|---:|---:|---:|")
        print("\n".join(rows))
    router, cost = loop.get(("envoy-router", "forward")), []
    floors = [f"envoy-floor{level}" for level in ("0", "1", "2", "3", "3p")]
    for gateway in (*floors, "envoy-filter", "envoy-native", "envoy-jwt-authn", "envoy-jwt-authn-noedge", "envoy-jwt-authn-cache"):
        if router and (gateway, "forward") in loop:
            cost.append(f"{gateway} {loop[(gateway, 'forward')][1] - router[1]:.1f} µs")
    if cost:
        print()
        print("CPU per forwarded request over Envoy's router alone: " + ", ".join(cost) + ".")
    tails = []
    for rate in ("5000", "10000"):
        for gateway in ("host-sim", "host-sim-reuse", "envoy-filter", "envoy-native", "envoy-jwt-authn", "envoy-jwt-authn-cache"):
            if (gateway, "forward", rate) in p99:
                median, rounds = p99[(gateway, "forward", rate)]
                tails.append(f"{gateway} {median:.2f} ms at {rate}" + (f" (rounds {rounds})" if rounds else ""))
    if tails:
        print("Forward p99 at a fixed rate, the median of the rounds (where the rate was held): " + ", ".join(tails) + ".")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gateway_targets.py GATEWAYS_MD")
    main(sys.argv[1])
