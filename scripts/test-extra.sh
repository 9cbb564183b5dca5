#!/usr/bin/env bash
# The tests that are not cargo tests, run by `make test` after the cargo
# tests (which built target/release/host-sim). Each part adds its runner here.
set -euo pipefail
cd "$(dirname "$0")/.."

# deploy/workerd: the JavaScript shim (unit) and workerd end to end,
# compared with the wasmtime host's `serve` and Envoy with the gateway filter.
echo "==> node --test deploy/workerd/test/"
REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 node --test --test-timeout=180000 deploy/workerd/test/

# deploy/envoy: the filter's own code without Envoy (its HMAC-SHA256, sha2's
# SIMD backend, at every signing-input length against node:crypto).
echo "==> node --test deploy/envoy/test/"
node --test deploy/envoy/test/

# deploy/wasi-http: the component as `make worker` builds it (the proxy
# world alone) under `wasmtime serve`, and its keys fetched on requests in
# a fresh instance per request.
echo "==> node --test deploy/wasi-http/test/"
REQUIRE_WASI_HTTP=1 node --test --test-timeout=180000 deploy/wasi-http/test/

# testkit/conformance: the forwarding, attack and policy corpora (committed
# data files) over real HTTP through every host (workerd, host-sim serve,
# Envoy with the gateway filter, wasmtime serve with the wasi:http
# component) to a recording upstream; and what each host counts and logs of
# them (observe.test.mjs).
echo "==> node --test testkit/conformance/"
REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 REQUIRE_WASI_HTTP=1 node --test --test-timeout=180000 testkit/conformance/

# testkit/jwks: keys fetched at run time on every host, from a test
# provider that rotates keys and misbehaves on demand.
echo "==> node --test testkit/jwks/"
REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 REQUIRE_WASI_HTTP=1 node --test --test-timeout=600000 testkit/jwks/

# testkit/oidc: DPoP-bound tokens from a real OpenID provider (node-oidc-provider,
# client credentials) through every host, its keys found through discovery.
echo "==> node --test testkit/oidc/"
REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 REQUIRE_WASI_HTTP=1 node --test --test-timeout=180000 testkit/oidc/

# testkit/metrics: a real Prometheus (Debian's package, installed here when
# missing) scraping host-sim serve and Envoy, and the Grafana dashboard's
# expressions against its scrape. Skipped, saying why, only when the
# package cannot be installed.
prometheus_reason=""
if [ ! -x /usr/bin/prometheus ]; then
  echo "==> apt-get install prometheus (for testkit/metrics/prometheus.test.mjs)"
  if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1; }; }; then
    prometheus_reason="apt-get could not install Debian's prometheus package"
  fi
fi
if [ -z "$prometheus_reason" ]; then
  echo "==> node --test testkit/metrics/"
  REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 node --test --test-timeout=240000 testkit/metrics/
else
  echo "==> SKIPPED testkit/metrics/prometheus.test.mjs: $prometheus_reason"
fi

# fuzz/: a smoke run of each fuzz target (`make fuzz` runs longer).
echo "==> security: fuzz smoke run, ${FUZZ_SMOKE_SECONDS:-10}s per target"
FUZZ_SECONDS=${FUZZ_SMOKE_SECONDS:-10} bash fuzz/run.sh

# benches/wasm-kernels: a cdylib outside the workspace, which make bench
# builds; built here too, so that it keeps up with the worker's surface.
echo "==> cargo build benches/wasm-kernels (wasm32)"
cargo build --quiet --release --manifest-path benches/wasm-kernels/Cargo.toml \
  --target wasm32-unknown-unknown --target-dir target/bench-kernels

# testkit/readings: real servers (nginx, Express, Fastify, Hono, Flask,
# Tomcat) behind every host (wasmtime serve included); no spelling of a
# protected request may reach its handler without its rule's requirements.
echo "==> node --test testkit/readings/"
REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 REQUIRE_WASI_HTTP=1 node --test --test-timeout=600000 testkit/readings/
