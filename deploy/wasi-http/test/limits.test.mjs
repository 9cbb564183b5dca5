// Rate limits in the wasi:http component under `wasmtime serve`, beside
// the conformance script every host runs (testkit/conformance/limits.test.mjs):
// the component built from testkit/fixture-limits.toml, counted in the
// instance's own memory (component/src/counter.rs). One instance serves
// every request here, as `make deploy-wasi-http` keeps them; wasi:http
// shows a component no client address, so every client shares the
// per-address bucket of `unknown` (README, "Rate limits").
//
//   node --test deploy/wasi-http/test/limits.test.mjs
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ROOT } from "../../workerd/harness.mjs";
import { LIMITS_ORIGINS, limitsToken, startLimitsRecorder } from "../../../testkit/conformance/limits-script.mjs";
import { ONE_INSTANCE_PAUSE_MS, REUSE_ONE_INSTANCE, WASMTIME, startWasiHttp } from "../harness.mjs";

const COMPONENT = join(ROOT, "target", "fixture", "gateway-limits-wasi-http.wasm");
const required = process.env.REQUIRE_WASI_HTTP === "1";
const skip = !required && !(existsSync(WASMTIME) && existsSync(COMPONENT)) && "wasmtime or the limits component is not built (make wasmtime fixture)";

describe("rate limits in the wasi:http component", { skip }, () => {
  let recorder;
  let host;
  before(async () => {
    recorder = await startLimitsRecorder();
    host = await startWasiHttp(LIMITS_ORIGINS.map((o) => [o, recorder.origin]), COMPONENT, REUSE_ONE_INSTANCE);
  });
  after(async () => {
    await host?.proc.stop();
    await recorder?.stop();
  });

  test("a refused request is the module's 429 and reaches nothing", async () => {
    const token = limitsToken({ sub: "zed" });
    const statuses = [];
    for (let i = 0; i < 5; i++) {
      await sleep(ONE_INSTANCE_PAUSE_MS);
      const res = await fetch(`http://127.0.0.1:${host.port}/orders/9`, { headers: { authorization: `Bearer ${token}` } });
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    assert.equal(recorder.received.filter((r) => r.url === "/orders-svc/orders/9").length, 3);
  });
});
