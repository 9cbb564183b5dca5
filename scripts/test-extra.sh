#!/usr/bin/env bash
# The tests that are not cargo tests, run by `make test` after the cargo
# tests (which built target/release/host-sim). Each part adds its runner here.
set -euo pipefail
cd "$(dirname "$0")/.."

# deploy/workerd: the JavaScript shim (unit) and workerd end to end,
# compared with the wasmtime host's `serve` and Envoy with the gateway filter.
echo "==> node --test deploy/workerd/test/"
REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 node --test --test-timeout=180000 deploy/workerd/test/

# testkit/conformance: the forwarding corpus, and the attack corpus of
# security/tests/attacks.rs (written here around the real clock, which the
# hosts read), over real HTTP through every host (workerd, host-sim serve,
# Envoy with the gateway filter) to a recording upstream.
echo "==> security: the attack corpus for the hosts (target/attack-corpus/attacks.jsonl)"
mkdir -p target/attack-corpus
ATTACK_CORPUS_OUT="$PWD/target/attack-corpus/attacks.jsonl" \
  cargo test --quiet --release -p gateway-security --test attacks -- --ignored --exact write_http_corpus
echo "==> node --test testkit/conformance/"
REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 node --test --test-timeout=180000 testkit/conformance/

# testkit/jwks: keys fetched at run time on every host, from a test
# provider that rotates keys and misbehaves on demand.
echo "==> node --test testkit/jwks/"
REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 node --test --test-timeout=600000 testkit/jwks/

# fuzz/: a smoke run of each fuzz target (`make fuzz` runs longer).
echo "==> security: fuzz smoke run, ${FUZZ_SMOKE_SECONDS:-10}s per target"
FUZZ_SECONDS=${FUZZ_SMOKE_SECONDS:-10} bash fuzz/run.sh
