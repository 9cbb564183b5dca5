// The native Envoy module (build/envoy-native.sh, `envoy-filter --native`)
// in real Envoy 1.40: the ABI version it was built for is the one Envoy
// loads it with, a bootstrap naming another is refused at start, and its
// decisions are counted in Envoy's stats under the filter's names and
// labels, on a tick; `make deploy-envoy` runs it with FILTER=native. The
// corpora through it are in testkit/conformance/hosts.test.mjs.
//
//   node --test deploy/envoy/test/native.test.mjs
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, freePort, startProcess, waitForPort } from "../../workerd/harness.mjs";
import { ENVOY, ENVOY_FILTER_BIN, FIXTURE_CONFIG, FIXTURE_NATIVE, envoyNativeReady, startEnvoyNative } from "../harness.mjs";

const skip = process.env.REQUIRE_ENVOY !== "1" && !envoyNativeReady() && "Envoy, envoy-filter or the native fixture missing (make envoy fixture)";

/** Envoy's admin answer at `path`. */
async function admin(port, path) {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return response.text();
}

describe("the native module in Envoy", { skip }, () => {
  let envoy;
  before(async () => {
    envoy = await startEnvoyNative([], { native: FIXTURE_NATIVE.forwarding, admin: true });
  });
  after(async () => {
    await envoy?.proc.stop();
  });

  test("Envoy loads it with the ABI it was built for", () => {
    assert.match(envoy.proc.output(), /Dynamic module ABI version v0\.2\.0 matched\./);
  });

  test("a decision is counted under the filter's names and labels", async () => {
    const response = await fetch(`http://127.0.0.1:${envoy.port}/orders/1`);
    assert.equal(response.status, 401);
    assert.equal(response.headers.get("www-authenticate"), 'Bearer realm="fixture"');
    // Counted on a tick (at most 1 s after the request): scrape again
    // (bounded, 5 s) until the count is there.
    const decision =
      /^envoy_dynamicmodulescustom_gateway_decisions_total\{outcome="missing_authorization",rule="",route="",issuer=""\} [1-9]/m;
    let scrape = await admin(envoy.adminPort, "/stats/prometheus");
    for (let waited = 0; !decision.test(scrape) && waited < 5000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      scrape = await admin(envoy.adminPort, "/stats/prometheus");
    }
    assert.match(scrape, decision);
    assert.match(scrape, /^envoy_dynamicmodulescustom_gateway_denied_total\{\} [1-9]/m);
  });
});

describe("a bootstrap rendered for another ABI", { skip }, () => {
  let dir;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "gateway-envoy-native-abi-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("is refused: Envoy does not start", () => {
    const yaml = join(dir, "envoy.yaml");
    const render = spawnSync(
      ENVOY_FILTER_BIN,
      ["--config", FIXTURE_CONFIG, "--native", FIXTURE_NATIVE.forwarding, "--listen", "127.0.0.1:0", "--out", yaml],
      { encoding: "utf8" },
    );
    assert.equal(render.status, 0, render.stderr);
    const text = readFileSync(yaml, "utf8");
    assert.ok(text.includes('value: "gateway abi v0.2.0"'), "the rendered configuration names the ABI");
    writeFileSync(yaml, text.replace('value: "gateway abi v0.2.0"', 'value: "gateway abi v0.1.0"'));
    const run = spawnSync(
      ENVOY,
      ["--config-path", yaml, "--disable-hot-restart", "--base-id-path", join(dir, "base-id"), "--use-dynamic-base-id",
        "--log-level", "error", "--component-log-level", "dynamic_modules:error"],
      { encoding: "utf8", timeout: 60000, env: { ...process.env, ENVOY_DYNAMIC_MODULES_SEARCH_PATH: dirname(FIXTURE_NATIVE.forwarding) } },
    );
    assert.notEqual(run.status, 0, "Envoy exited with an error");
    assert.equal(run.signal, null, "Envoy exited by itself, before the timeout");
    assert.match(run.stdout + run.stderr, /gateway abi v0\.1\.0.*refused/);
  });
});

describe("make deploy-envoy with FILTER=native", { skip }, () => {
  const RUN = join(ROOT, "deploy", "envoy", "run.sh");
  let dir;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "gateway-deploy-envoy-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** deploy/envoy/run.sh with `env` on top of the test's environment. */
  const run = (env) => spawnSync("bash", [RUN], { encoding: "utf8", timeout: 60000, env: { ...process.env, ...env } });

  test("runs Envoy with the native module it names, counted under the module's stats", async () => {
    const [port, adminPort] = [await freePort(), await freePort()];
    const proc = startProcess("bash", [RUN], {
      env: {
        ...process.env,
        FILTER: "native",
        NATIVE: FIXTURE_NATIVE.forwarding,
        GATEWAY_CONFIG: FIXTURE_CONFIG,
        LISTEN: `127.0.0.1:${port}`,
        ADMIN: `127.0.0.1:${adminPort}`,
        ENVOY_YAML: join(dir, "envoy.yaml"),
      },
    });
    try {
      await waitForPort(proc, port, "deploy/envoy/run.sh (FILTER=native)");
      const response = await fetch(`http://127.0.0.1:${port}/orders/1`);
      assert.equal(response.status, 401);
      assert.equal(response.headers.get("www-authenticate"), 'Bearer realm="fixture"', "the fixture's module answered");
      assert.match(proc.output(), /envoy with the native module on http:\/\/127\.0\.0\.1:\d+/);
      assert.match(proc.output(), /grep \^envoy_dynamicmodulescustom_gateway_/, "it names the module's stats");
      assert.ok(readFileSync(join(dir, "envoy.yaml"), "utf8").includes("envoy.filters.http.dynamic_modules"));
      await waitForPort(proc, adminPort, "its admin interface");
      assert.match(await admin(adminPort, "/stats/prometheus"), /^envoy_dynamicmodulescustom_gateway_denied_total\{\} /m);
    } finally {
      await proc.stop();
    }
  });

  test("an unknown FILTER or a missing module is refused in one line, before Envoy starts", () => {
    const yaml = join(dir, "refused.yaml");
    const bogus = run({ FILTER: "sandbox", ENVOY_YAML: yaml });
    assert.equal(bogus.status, 1);
    assert.equal(bogus.stderr, "error: FILTER is wasm or native, not 'sandbox'\n");
    const missing = run({ FILTER: "native", NATIVE: join(dir, "libnone.so"), ENVOY_YAML: yaml });
    assert.equal(missing.status, 1);
    assert.equal(missing.stderr, `error: NATIVE=${join(dir, "libnone.so")}: no such module\n`);
    assert.ok(!existsSync(yaml), "nothing was rendered");
  });
});
