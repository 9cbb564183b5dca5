// The DPoP conformance script (dpop-script.mjs) through every host, each
// refusing a proof used twice with its own store: host-sim serve in
// process, workerd in a Durable Object per bucket, Envoy in its
// local_ratelimit filters, wasmtime serve in the component's instance.
// The module built from testkit/fixture-dpop.toml decides on every host;
// the script holds each host to the same statuses, challenges and bodies,
// to nothing refused reaching the recording upstream, and to no proof or
// token travelling upstream. Where a host cannot do the same, the script
// is told so and says why: workerd's Headers join a repeated field before
// the shim sees the request, so two DPoP fields reach the module as one
// value, which is no proof (refused as malformed, 401, where the other
// hosts refuse the repeat itself, 400; refused either way).
//
//   node --test testkit/conformance/dpop.test.mjs
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, startHostSim, startWorkerd } from "../../deploy/workerd/harness.mjs";
import { startEnvoyFilter } from "../../deploy/envoy/harness.mjs";
import { REUSE_ONE_INSTANCE, startWasiHttp } from "../../deploy/wasi-http/harness.mjs";
import { DPOP_ORIGINS, runDpopScript } from "./dpop-script.mjs";
import { startLimitsRecorder } from "./limits-script.mjs";

const fixture = (name) => join(ROOT, "target", "fixture", name);
const WASM = fixture("gateway-dpop.wasm");
const ENVOY_WASM = fixture("gateway-dpop-envoy.wasm");
const COMPONENT = fixture("gateway-dpop-wasi-http.wasm");
const CONFIG = join(ROOT, "testkit", "fixture-dpop.toml");

const pairs = (recorder) => DPOP_ORIGINS.map((origin) => [origin, recorder.origin]);
const HOSTS = [
  ["host-sim serve", "REQUIRE_HOST_SIM", [WASM, join(ROOT, "target", "release", "host-sim")],
    (r) => startHostSim(pairs(r).flatMap(([from, to]) => ["--upstream-override", `${from}=${to}`]), 60000, WASM), {}],
  ["workerd", "REQUIRE_WORKERD", [WASM, join(ROOT, "node_modules", ".bin", "workerd")],
    (r) => startWorkerd(pairs(r).map(([from, to]) => `${from}=${to}`).join(","), WASM), {}],
  ["envoy + gateway filter", "REQUIRE_ENVOY", [ENVOY_WASM, join(ROOT, "target", "envoy-venv", "bin", "envoy")],
    (r) => startEnvoyFilter(pairs(r), { wasm: ENVOY_WASM, config: CONFIG }), {}],
  ["wasmtime serve (wasi:http component)", "REQUIRE_WASI_HTTP", [COMPONENT, join(ROOT, "target", "tools", "bin", "wasmtime")],
    (r) => startWasiHttp(pairs(r), COMPONENT, REUSE_ONE_INSTANCE), {}],
];

for (const [name, require, needs, start, differences] of HOSTS) {
  const missing = needs.filter((path) => !existsSync(path));
  const skip = process.env[require] !== "1" && missing.length > 0 && `${missing.join(", ")} missing (make fixture host envoy wasmtime)`;
  describe(`DPoP through ${name}`, { skip }, () => {
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
    test("the conformance script: proofs verified, replays refused, nothing refused reaches the upstream", async () => {
      await runDpopScript(host.port, recorder, differences);
    });
  });
}
