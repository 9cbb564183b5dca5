// The hosts a fixture's module runs through (Envoy with the filter and with
// the native module among them), for the conformance
// tests that run one script per host (limits.test.mjs, dpop.test.mjs):
// each host started with the fixture's modules, its origins moved to a
// recorder, and skipped only when what it needs is missing and its
// REQUIRE_* variable is unset.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, startHostSim, startWorkerd } from "../../deploy/workerd/harness.mjs";
import { startEnvoyFilter, startEnvoyNative } from "../../deploy/envoy/harness.mjs";
import { REUSE_ONE_INSTANCE, startWasiHttp } from "../../deploy/wasi-http/harness.mjs";
import { startLimitsRecorder } from "./limits-script.mjs";

const fixture = (name) => join(ROOT, "target", "fixture", name);

/**
 * For each host, a suite named `${what} through <host>` whose one test
 * runs `script(host, recorder, differences)`. `name` is the fixture's
 * (`limits` for testkit/fixture-limits.toml and target/fixture/gateway-limits*.wasm);
 * `origins` are the fixture's upstream origins; `differences` maps a
 * host's key (host-sim, workerd, envoy, wasi-http) to what it does
 * otherwise; `starts` maps a host's key to more of its start's options
 * (host-sim: arguments; workerd: startWorkerd's options; envoy:
 * envoy-filter's flags).
 */
export function throughEveryHost({ name, origins, what, title, script, differences = {}, starts = {} }) {
  const wasm = fixture(`gateway-${name}.wasm`);
  const envoyWasm = fixture(`gateway-${name}-envoy.wasm`);
  const component = fixture(`gateway-${name}-wasi-http.wasm`);
  const native = fixture(join("native", name, "libgateway_envoy.so"));
  const config = join(ROOT, "testkit", `fixture-${name}.toml`);
  const pairs = (recorder) => origins.map((origin) => [origin, recorder.origin]);
  const hosts = [
    ["host-sim", "host-sim serve", "REQUIRE_HOST_SIM", [wasm, join(ROOT, "target", "release", "host-sim")],
      (r) => startHostSim([...pairs(r).flatMap(([from, to]) => ["--upstream-override", `${from}=${to}`]), ...(starts["host-sim"] ?? [])], 60000, wasm)],
    ["workerd", "workerd", "REQUIRE_WORKERD", [wasm, join(ROOT, "node_modules", ".bin", "workerd")],
      (r) => startWorkerd(pairs(r).map(([from, to]) => `${from}=${to}`).join(","), wasm, starts.workerd ?? {})],
    ["envoy", "envoy + gateway filter", "REQUIRE_ENVOY", [envoyWasm, join(ROOT, "target", "envoy-venv", "bin", "envoy")],
      (r) => startEnvoyFilter(pairs(r), { wasm: envoyWasm, config, flags: starts.envoy ?? [] })],
    // The same core as a native Envoy module, in the same Envoy: it takes
    // Envoy's key (its differences and start options) and its own fixture.
    ["envoy", "envoy + native module", "REQUIRE_ENVOY", [native, join(ROOT, "target", "envoy-venv", "bin", "envoy")],
      (r) => startEnvoyNative(pairs(r), { native, config, flags: starts.envoy ?? [] })],
    ["wasi-http", "wasmtime serve (wasi:http component)", "REQUIRE_WASI_HTTP", [component, join(ROOT, "target", "tools", "bin", "wasmtime")],
      (r) => startWasiHttp(pairs(r), component, REUSE_ONE_INSTANCE)],
  ];
  for (const [key, hostName, require, needs, start] of hosts) {
    const missing = needs.filter((path) => !existsSync(path));
    const skip = process.env[require] !== "1" && missing.length > 0 && `${missing.join(", ")} missing (make fixture host envoy wasmtime)`;
    describe(`${what} through ${hostName}`, { skip }, () => {
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
      test(title, async () => {
        await script(host, recorder, differences[key] ?? {});
      });
    });
  }
}
