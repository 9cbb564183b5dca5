// Rate limits on Envoy (worker/ABI.md, "Rate limits"): real Envoy running
// the filter built from testkit/fixture-limits.toml
// (target/fixture/gateway-limits-envoy.wasm, `make fixture`), its bootstrap
// rendered by `envoy-filter` with one local_ratelimit per limit, in front of
// a recording upstream. Envoy counts the buckets; a refusal is the module's
// 429 and never reaches the upstream; the bucket fields never reach it
// either. The fixture's limits are per minute or hour, so no bucket refills
// while the test runs.
//
//   node --test deploy/envoy/test/limits.test.mjs
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { ROOT, mintToken } from "../../workerd/harness.mjs";
import { ENVOY, ENVOY_FILTER_BIN, startEnvoyFilter } from "../harness.mjs";

const WASM = join(ROOT, "target", "fixture", "gateway-limits-envoy.wasm");
const CONFIG = join(ROOT, "testkit", "fixture-limits.toml");
// testkit/fixture-limits.toml's first issuer and its demo key (the key's UTF-8 bytes).
const ISSUER = "https://issuer.test";
const KEY = Buffer.from("TEST-ONLY-fixture-signing-key-0123456789");
const EXP = 4102444800; // 2100-01-01

const token = (sub, extra = {}) => mintToken(KEY, { iss: ISSUER, aud: "orders", sub, exp: EXP, ...extra });

/** An upstream that records every request it gets and answers 200. */
async function startRecorder() {
  const seen = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("upstream");
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    seen,
    origin: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

let envoy;
let upstream;

/** One request through Envoy: { status, headers, body }, bounded. */
async function send(path, fields = {}) {
  const res = await fetch(`http://127.0.0.1:${envoy.port}${path}`, {
    headers: { connection: "close", ...fields },
    signal: AbortSignal.timeout(10000),
  });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** The module's 429 for limit `name` (testkit/fixture-limits.toml's numbers). */
function assertRefused(res, name, { requests, per, retryAfter }) {
  assert.equal(res.status, 429, res.body);
  assert.deepEqual(JSON.parse(res.body), { error_description: "rate limit exceeded", limit: name });
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.equal(res.headers.get("retry-after"), String(retryAfter));
  assert.equal(res.headers.get("ratelimit-policy"), `"${name}";q=${requests};w=${per}`);
  assert.match(res.headers.get("ratelimit"), new RegExp(`^"${name}";r=0;t=\\d+$`));
  for (const envoyOwn of ["x-gateway-limited", "x-envoy-ratelimited", "x-ratelimit-limit", "x-ratelimit-remaining"]) {
    assert.equal(res.headers.get(envoyOwn), null, `${envoyOwn} is Envoy's, not the module's`);
  }
}

/** Whether any request the upstream got carries a bucket's field. */
const leaked = () => upstream.seen.filter((r) => Object.keys(r.headers).some((h) => h.startsWith("x-gateway-limit")));

describe("rate limits counted by Envoy's local_ratelimit", { concurrency: false }, () => {
  before(async () => {
    for (const [path, how] of [[ENVOY, "make envoy"], [ENVOY_FILTER_BIN, "make host"], [WASM, "make fixture"]]) {
      assert.ok(existsSync(path), `${path} is missing: run '${how}'`);
    }
    upstream = await startRecorder();
    const overrides = [["orders", upstream.origin], ["users", upstream.origin]];
    envoy = await startEnvoyFilter(overrides, { wasm: WASM, config: CONFIG, admin: true });
  });

  after(async () => {
    await envoy?.proc.stop();
    await upstream?.close();
  });

  test("a subject's 4th request in a minute is the module's 429 and never reaches the upstream", async () => {
    const alice = { authorization: `Bearer ${token("alice")}` };
    for (let i = 0; i < 3; i++) {
      const res = await send(`/orders/${i}`, alice);
      assert.equal(res.status, 200, res.body);
      assert.equal(res.body, "upstream");
      // The forward's policy field travels; the remaining count is not known from Envoy.
      assert.equal(res.headers.get("ratelimit-policy"), '"per-user";q=3;w=60');
      assert.equal(res.headers.get("ratelimit"), null);
      assert.equal(res.headers.get("x-ratelimit-remaining"), null);
    }
    const before = upstream.seen.length;
    assertRefused(await send("/orders/3", alice), "per-user", { requests: 3, per: 60, retryAfter: 20 });
    assertRefused(await send("/orders/4", alice), "per-user", { requests: 3, per: 60, retryAfter: 20 });
    assert.equal(upstream.seen.length, before, "a refused request never reaches the upstream");
    assert.equal(upstream.seen.filter((r) => r.url.startsWith("/orders-svc/orders/")).length, 3);
    assert.deepEqual(leaked(), [], "no bucket field reaches the upstream");
  });

  test("another subject has a bucket of its own", async () => {
    const res = await send("/orders/1", { authorization: `Bearer ${token("bob")}` });
    assert.equal(res.status, 200, res.body);
  });

  test("a route's bucket is shared by every caller", async () => {
    const first = await send("/search?q=1", { authorization: `Bearer ${token("carol")}` });
    const second = await send("/search?q=2", { authorization: `Bearer ${token("dave")}` });
    assert.deepEqual([first.status, second.status], [200, 200]);
    const before = upstream.seen.length;
    assertRefused(await send("/search?q=3", { authorization: `Bearer ${token("erin")}` }), "search", {
      requests: 2,
      per: 60,
      retryAfter: 30,
    });
    assert.equal(upstream.seen.length, before);
  });

  test("a claim's bucket, the first of a forward's two, refuses for a third member of the tenant", async () => {
    const member = (sub) => ({ authorization: `Bearer ${token(sub, { tenant: "acme" })}` });
    assert.equal((await send("/tenants/acme", member("t1"))).status, 200);
    assert.equal((await send("/tenants/acme", member("t2"))).status, 200);
    assertRefused(await send("/tenants/acme", member("t3")), "per-tenant", { requests: 5, per: 60, retryAfter: 12 });
    const other = await send("/tenants/globex", { authorization: `Bearer ${token("t3", { tenant: "globex" })}` });
    assert.equal(other.status, 200, "another tenant's bucket");
  });

  test("a public path's bucket per client address; a client's own bucket field changes nothing", async () => {
    for (let i = 0; i < 4; i++) {
      const res = await send("/healthz", { "x-gateway-limit-0": "per-user:s:0.bob" });
      assert.equal(res.status, 200, res.body);
      assert.equal(res.headers.get("ratelimit-policy"), '"per-address";q=4;w=3600');
    }
    assertRefused(await send("/healthz"), "per-address", { requests: 4, per: 3600, retryAfter: 900 });
    // The forged field was dropped by the module: bob's bucket still has room.
    assert.equal((await send("/orders/2", { authorization: `Bearer ${token("bob")}` })).status, 200);
    const open = await send("/open/x", { "x-gateway-limit-2": "per-address:a:127.0.0.1" });
    assert.equal(open.status, 200, "a path without limits is not counted");
    assert.deepEqual(leaked(), []);
  });

  test("refusals are counted as rate_limited, and in Envoy's own local_ratelimit stats", async () => {
    const read = async () => {
      const res = await fetch(`http://127.0.0.1:${envoy.adminPort}/stats?format=json`, { signal: AbortSignal.timeout(10000) });
      return Object.fromEntries((await res.json()).stats.filter((s) => "name" in s).map((s) => [s.name, s.value]));
    };
    let stats = await read();
    const decisions = (outcome, route) =>
      Object.entries(stats)
        .filter(([name]) => name.startsWith("wasmcustom.gateway_decisions_total") && name.includes(`;outcome=${outcome};`))
        .filter(([name]) => route === undefined || name.includes(`;route=${route};`))
        .reduce((sum, [, v]) => sum + v, 0);
    // The filter hands its counts to Envoy on a tick (at most 1 s after a
    // request): read the stats again (bounded) until the refusals are there.
    for (let i = 0; i < 100 && decisions("rate_limited") < 5; i++) {
      await new Promise((r) => setTimeout(r, 50));
      stats = await read();
    }
    assert.equal(decisions("rate_limited"), 5, JSON.stringify(stats, null, 1));
    assert.equal(decisions("rate_limited", "orders"), 4);
    assert.equal(stats["gateway_limit_per-user.http_local_rate_limit.rate_limited"], 2);
    assert.equal(stats["gateway_limit_search.http_local_rate_limit.rate_limited"], 1);
    assert.equal(stats["gateway_limit_per-tenant.http_local_rate_limit.rate_limited"], 1);
    assert.equal(stats["gateway_limit_per-address.http_local_rate_limit.rate_limited"], 1);
    assert.equal(stats["gateway_limit_per-user.http_local_rate_limit.enforced"], 2);
  });
});

// envoyproxy/ratelimit cannot run here: only Envoy's acceptance of the
// bootstrap that asks it is checked, and the service config it is given.
test("--global-ratelimit renders a bootstrap Envoy accepts, and envoyproxy/ratelimit's config", () => {
  for (const path of [ENVOY, ENVOY_FILTER_BIN, WASM]) assert.ok(existsSync(path), `${path} is missing`);
  const dir = mkdtempSync(join(tmpdir(), "gateway-limits-"));
  try {
    const [yaml, service] = [join(dir, "envoy.yaml"), join(dir, "ratelimit.yaml")];
    const render = spawnSync(
      ENVOY_FILTER_BIN,
      ["--config", CONFIG, "--module", WASM, "--listen", "127.0.0.1:10000", "--out", yaml,
        "--global-ratelimit", "127.0.0.1:8081", "--ratelimit-config", service],
      { encoding: "utf8", timeout: 30000 },
    );
    assert.equal(render.status, 0, render.stderr);
    const bootstrap = readFileSync(yaml, "utf8");
    assert.match(bootstrap, /envoy\.extensions\.filters\.http\.ratelimit\.v3\.RateLimit/);
    assert.doesNotMatch(bootstrap, /local_ratelimit/);
    const validate = spawnSync(ENVOY, ["--mode", "validate", "--config-path", yaml, "--log-level", "warn"], {
      encoding: "utf8",
      timeout: 60000,
    });
    assert.equal(validate.status, 0, `${validate.stdout}${validate.stderr}`);
    const config = readFileSync(service, "utf8");
    assert.match(config, /^domain: "gateway"$/m);
    for (const [name, unit, requests] of [["per-user", "minute", 3], ["per-tenant", "minute", 5], ["per-address", "hour", 4], ["search", "minute", 2]]) {
      assert.ok(config.includes(`- key: "${name}"\n    rate_limit:\n      unit: "${unit}"\n      requests_per_unit: ${requests}\n`), config);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
