// The rate-limit conformance script (limits-script.mjs) through every host,
// each counting with its own limiter: host-sim serve in process, workerd
// in a Durable Object per bucket, Envoy in its local_ratelimit filters,
// wasmtime serve in the component's instance. The module built from
// testkit/fixture-limits.toml decides on every host; the script holds each
// host to the same statuses, fields and bodies, and to nothing refused
// reaching the recording upstream. Where a host cannot do the same, the
// script is told so and the host's README says why: Envoy does not report
// remaining counts; wasi:http shows a component no client address.
// (host-sim with Redis: host-sim/tests/traffic.rs.)
//
//   node --test testkit/conformance/limits.test.mjs
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, startHostSim, startWorkerd } from "../../deploy/workerd/harness.mjs";
import { startEnvoyFilter } from "../../deploy/envoy/harness.mjs";
import { REUSE_ONE_INSTANCE, startWasiHttp } from "../../deploy/wasi-http/harness.mjs";
import { LIMITS_ORIGINS, runLimitsScript, startLimitsRecorder } from "./limits-script.mjs";

const fixture = (name) => join(ROOT, "target", "fixture", name);
const WASM = fixture("gateway-limits.wasm");
const ENVOY_WASM = fixture("gateway-limits-envoy.wasm");
const COMPONENT = fixture("gateway-limits-wasi-http.wasm");
const CONFIG = join(ROOT, "testkit", "fixture-limits.toml");

const pairs = (recorder) => LIMITS_ORIGINS.map((origin) => [origin, recorder.origin]);
const HOSTS = [
  ["host-sim serve", "REQUIRE_HOST_SIM", [WASM, join(ROOT, "target", "release", "host-sim")],
    (r) => startHostSim(pairs(r).flatMap(([from, to]) => ["--upstream-override", `${from}=${to}`]), 60000, WASM), {}],
  ["workerd", "REQUIRE_WORKERD", [WASM, join(ROOT, "node_modules", ".bin", "workerd")],
    (r) => startWorkerd(pairs(r).map(([from, to]) => `${from}=${to}`).join(","), WASM), {}],
  ["envoy + gateway filter", "REQUIRE_ENVOY", [ENVOY_WASM, join(ROOT, "target", "envoy-venv", "bin", "envoy")],
    (r) => startEnvoyFilter(pairs(r), { wasm: ENVOY_WASM, config: CONFIG }), { remaining: false }],
  ["wasmtime serve (wasi:http component)", "REQUIRE_WASI_HTTP", [COMPONENT, join(ROOT, "target", "tools", "bin", "wasmtime")],
    (r) => startWasiHttp(pairs(r), COMPONENT, REUSE_ONE_INSTANCE), { peer: "unknown" }],
];

for (const [name, require, needs, start, differences] of HOSTS) {
  const missing = needs.filter((path) => !existsSync(path));
  const skip = process.env[require] !== "1" && missing.length > 0 && `${missing.join(", ")} missing (make fixture host envoy wasmtime)`;
  describe(`rate limits through ${name}`, { skip }, () => {
    let recorder;
    let host;
    before(async () => {
      recorder = await startLimitsRecorder();
      host = await start(recorder);
    });
    after(async () => {
      await host?.proc.stop();
      await recorder?.stop();
    });
    test("the conformance script: per subject, route, claim and address; nothing refused reaches the upstream", async () => {
      await runLimitsScript(`http://127.0.0.1:${host.port}`, recorder, differences);
    });
  });
}
