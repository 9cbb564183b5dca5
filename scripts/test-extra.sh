#!/usr/bin/env bash
# The tests that are not cargo tests: each part adds its own runner here.
set -euo pipefail
cd "$(dirname "$0")/.."

# deploy/workerd: the JavaScript shim (unit) and workerd end to end,
# compared with the wasmtime host's `serve`.
echo "==> cargo build --release -p host-sim (for the end-to-end comparison)"
cargo build --release -p host-sim --quiet
echo "==> node --test deploy/workerd/test/"
REQUIRE_HOST_SIM=1 node --test --test-timeout=180000 deploy/workerd/test/

# security/: hostile HTTP clients against `host-sim serve` (the release
# binary), then a smoke run of each fuzz target (`make fuzz` runs longer).
echo "==> security: hostile clients against host-sim serve"
cargo build --release -p host-sim --quiet
REQUIRE_HOST_SIM=1 cargo test --release --quiet -p gateway-security --test hostile
echo "==> security: fuzz smoke run, ${FUZZ_SMOKE_SECONDS:-10}s per target"
FUZZ_SECONDS=${FUZZ_SMOKE_SECONDS:-10} bash fuzz/run.sh
