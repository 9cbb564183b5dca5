// A DPoP proof replayed across two host-sim processes that count in one
// Redis (`serve --limits redis://...`): the module names the proof's `jti`
// as a bucket of its `dpop-proofs` limit, and the shared store refuses
// its second use on the other process, as it would on the first. A real
// redis-server (`make redis`), two real host-sim processes, one recording
// upstream, real HTTP.
//
//   node --test testkit/conformance/dpop-shared-store.test.mjs
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, freePort, startHostSim, waitForPort } from "../../deploy/workerd/harness.mjs";
import { DPOP_ORIGINS, dpopToken, proof, proofKey } from "./dpop-script.mjs";
import { startLimitsRecorder } from "./limits-script.mjs";

const WASM = join(ROOT, "target", "fixture", "gateway-dpop.wasm");
const HOST_SIM = join(ROOT, "target", "release", "host-sim");
const hasRedis = spawnSync("redis-server", ["--version"]).status === 0;
const missing = [WASM, HOST_SIM].filter((path) => !existsSync(path));
const required = process.env.REQUIRE_HOST_SIM === "1" || process.env.REQUIRE_REDIS === "1";
const skip =
  !required && (missing.length > 0 || !hasRedis) && `${[...missing, ...(hasRedis ? [] : ["redis-server"])].join(", ")} missing (make fixture host redis)`;

describe("a DPoP proof replayed across two host-sim processes sharing Redis", { skip }, () => {
  let redis;
  let recorder;
  const gateways = [];
  before(async () => {
    const port = await freePort();
    redis = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
    await waitForPort({ exited: () => redis.exitCode !== null, output: () => "" }, port, "redis-server");
    recorder = await startLimitsRecorder();
    const overrides = DPOP_ORIGINS.flatMap((origin) => ["--upstream-override", `${origin}=${recorder.origin}`]);
    for (let i = 0; i < 2; i++) {
      gateways.push(await startHostSim([...overrides, "--limits", `redis://127.0.0.1:${port}`, "--limits-fail", "closed"], 60000, WASM));
    }
  });
  after(async () => {
    for (const gateway of gateways) await gateway.proc.stop();
    await recorder?.stop();
    redis?.kill();
  });

  test("the second process refuses the proof the first forwarded; a fresh proof passes on both", async () => {
    const key = proofKey("EdDSA");
    const sub = `shared-${Date.now()}`;
    const token = dpopToken({ sub, cnf: { jkt: key.jkt } });
    // The proof names the host the client addressed: one authority for both.
    const call = (gateway, p) =>
      new Promise((resolve, reject) => {
        const headers = { host: "gateway.test", authorization: `DPoP ${token}`, dpop: p, connection: "close" };
        const req = request({ host: "127.0.0.1", port: gateway.port, path: "/orders/1", headers, agent: false, timeout: 10000 }, (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => {
            const body = Buffer.concat(chunks).toString();
            resolve({ status: res.statusCode, text: async () => body, json: async () => JSON.parse(body) });
          });
        });
        req.on("timeout", () => req.destroy(new Error("no answer within 10 s")));
        req.on("error", reject);
        req.end();
      });
    const htu = "http://gateway.test/orders/1";
    const once = proof(key, { htm: "GET", htu, token });
    const first = await call(gateways[0], once);
    assert.equal(first.status, 200, await first.text());
    const replayed = await call(gateways[1], once);
    assert.equal(replayed.status, 401);
    assert.deepEqual(await replayed.json(), { error: "invalid_dpop_proof", error_description: "DPoP proof replayed" });
    assert.equal(recorder.received.length, 1, "the replay never reached the upstream");
    for (const gateway of gateways) {
      const fresh = await call(gateway, proof(key, { htm: "GET", htu, token }));
      assert.equal(fresh.status, 200, await fresh.text());
    }
    assert.equal(recorder.received.length, 3);
  });
});
