// A real Prometheus (Debian's `prometheus`, run as a plain process on
// loopback with a generated config and a temporary storage folder)
// scrapes host-sim serve's --metrics listener and Envoy's admin interface
// while the demo's kinds of request go through both, and a key rotation
// goes through both at an identity provider's pace. Then Prometheus's HTTP
// API is asked what it stored, by outcome, rule, route and issuer, and the
// answers must be what was sent: the module's labels for the demo's
// requests (`host-sim eval`), and the statuses the client saw for the
// rotation. Every PromQL expression of the Grafana dashboard
// (deploy/grafana/gateway.json) must name metrics Prometheus scraped, and
// evaluate, and the alerting rules (deploy/prometheus/alerts.yml) load and
// evaluate.
//
// `make test` installs the package (scripts/test-extra.sh); without it the
// test says why it is skipped.
//
//   node --test testkit/metrics/prometheus.test.mjs
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { HOST_SIM, ROOT, freePort, rawRequest, startHostSim } from "../../deploy/workerd/harness.mjs";
import { startEnvoyFilter } from "../../deploy/envoy/harness.mjs";
import { JWKS_CONFIG, JWKS_ENVOY_WASM, JWKS_WASM, fixtureRsaKey, jwksOf, makeKey, signToken, startProvider } from "../jwks/provider.mjs";
import { dashboardExpressions, metricNames } from "./dashboard.mjs";
import { PROMETHEUS, demoRequests, startPrometheus, startUpstream } from "./stack.mjs";

const POLICIES_WASM = join(ROOT, "target", "fixture", "gateway-policies.wasm");
const POLICIES_ENVOY = { wasm: join(ROOT, "target", "fixture", "gateway-policies-envoy.wasm"), config: join(ROOT, "testkit", "fixture-policies.toml") };
const ORIGINS = ["http://127.0.0.1:9201", "http://127.0.0.1:9202"];
const IDP = "http://idp.test";
const JWKS = "http://jwks.test";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `sum by (label)` of `expr` as { value of label: count }, zeros left out. */
async function sumBy(prometheus, label, expr) {
  const result = await prometheus.query(`sum by (${label}) (${expr})`);
  return Object.fromEntries(result.filter((r) => r.value > 0).map((r) => [r.metric[label] ?? "", r.value]).sort());
}

/** `items`' count per value of `key(item)`, as `sumBy` gives it. */
function countBy(items, key) {
  const counts = {};
  for (const item of items) counts[key(item) ?? ""] = (counts[key(item) ?? ""] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort());
}

/** Waits (at most 20 s) until Prometheus's total of `expr` is `total`. */
async function scraped(prometheus, expr, total) {
  let got;
  for (let i = 0; i < 80; i++) {
    got = (await prometheus.query(`sum(${expr})`))[0]?.value ?? 0;
    if (got === total) return;
    await sleep(250);
  }
  assert.equal(got, total, `Prometheus's sum(${expr})`);
}

const installed = existsSync(PROMETHEUS);
const skip = installed ? false : `${PROMETHEUS} is missing (Debian's prometheus package; make test installs it)`;

describe("a real Prometheus scrapes host-sim and Envoy", { skip, timeout: 240000 }, () => {
  let upstream;
  let provider;
  let prometheus;
  const gateways = {};
  // The rotation's keys: A published first, then B only.
  const keyA = fixtureRsaKey("key-a");
  const keyB = makeKey("key-b", "ES256");
  let failedOnce = false;
  const claims = () => ({ iss: IDP, aud: "orders", sub: "alice", exp: Math.floor(Date.now() / 1000) + 3600 });

  before(async () => {
    upstream = await startUpstream();
    provider = await startProvider({ issuer: IDP });
    provider.publish("*", jwksOf([keyA]));
    // The site route (/healthz) goes to a port nothing listens on: the upstream failures are counted too.
    const routes = [[ORIGINS[0], upstream.origin], [ORIGINS[1], `http://127.0.0.1:${await freePort()}`]];
    const keyed = [[IDP, provider.origin], [JWKS, provider.origin], [ORIGINS[0], upstream.origin]];
    const hostSim = async (wasm, overrides) => {
      const g = await startHostSim([...overrides.flatMap(([f, t]) => ["--upstream-override", `${f}=${t}`]), "--metrics", "127.0.0.1:0", "--threads", "2"], 60000, wasm);
      return { ...g, target: `127.0.0.1:${/metrics listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(g.proc.output())[1]}` };
    };
    const envoy = async (module, overrides) => {
      const g = await startEnvoyFilter(overrides, { ...module, admin: true });
      return { ...g, target: `127.0.0.1:${g.adminPort}` };
    };
    gateways.hostSimDemo = await hostSim(POLICIES_WASM, routes);
    gateways.envoyDemo = await envoy(POLICIES_ENVOY, routes);
    gateways.hostSimKeys = await hostSim(JWKS_WASM, keyed);
    gateways.envoyKeys = await envoy({ wasm: JWKS_ENVOY_WASM, config: JWKS_CONFIG }, keyed);
    prometheus = await startPrometheus({
      "host-sim-demo": { targets: [gateways.hostSimDemo.target], path: "/metrics" },
      "envoy-demo": { targets: [gateways.envoyDemo.target], path: "/stats/prometheus" },
      "host-sim-keys": { targets: [gateways.hostSimKeys.target], path: "/metrics" },
      "envoy-keys": { targets: [gateways.envoyKeys.target], path: "/stats/prometheus" },
    });
  });
  after(async () => {
    await prometheus?.stop();
    for (const g of Object.values(gateways)) await g.proc.stop();
    await provider?.stop();
    await upstream?.close();
  });

  for (const [host, gateway, job] of [["host-sim serve", "hostSimDemo", "host-sim-demo"], ["Envoy", "envoyDemo", "envoy-demo"]]) {
    test(`${host}: the demo's requests, counted by outcome, rule, route and issuer`, async () => {
      const requests = demoRequests();
      const heads = requests.flatMap(([, times, head]) => Array(times).fill(head));
      const input = heads.map((h) => JSON.stringify({ request: h })).join("\n") + "\n";
      const evaluated = spawnSync(HOST_SIM, ["eval", "--wasm", POLICIES_WASM], { input, encoding: "utf8", timeout: 60000 });
      assert.equal(evaluated.status, 0, evaluated.stderr);
      const labels = evaluated.stdout.trim().split("\n").map((l) => JSON.parse(l).labels);
      // Each request is the outcome it was written for.
      assert.deepEqual(labels.map((l) => l.outcome), requests.flatMap(([outcome, times]) => Array(times).fill(outcome)));
      for (const head of heads) assert.ok((await rawRequest(gateways[gateway].port, head)).status > 0);
      const decisions = `gateway_decisions_total{job="${job}"}`;
      await scraped(prometheus, decisions, heads.length);
      for (const label of ["outcome", "rule", "route", "issuer"]) {
        assert.deepEqual(await sumBy(prometheus, label, decisions), countBy(labels, (l) => l[label]), `by ${label}`);
      }
      const allowed = labels.filter((l) => ["forwarded", "public"].includes(l.outcome)).length;
      assert.equal((await prometheus.query(`sum(gateway_allowed_total{job="${job}"})`))[0].value, allowed);
      assert.equal((await prometheus.query(`sum(gateway_denied_total{job="${job}"})`))[0].value, heads.length - allowed);
    });
  }

  for (const [host, gateway, job] of [["host-sim serve", "hostSimKeys", "host-sim-keys"], ["Envoy", "envoyKeys", "envoy-keys"]]) {
    test(`${host}: a key rotation, counted per issuer`, async () => {
      const port = gateways[gateway].port;
      const seen = [];
      const call = async (key) => {
        const res = await fetch(`http://127.0.0.1:${port}/orders/x`, { headers: { authorization: `Bearer ${signToken(key, claims())}` }, signal: AbortSignal.timeout(10000) });
        const body = await res.text();
        seen.push({ status: res.status, unknownKid: /unknown kid/.test(body), keysUnavailable: res.status === 503 });
        return res.status;
      };
      const until = async (key, status) => {
        for (let i = 0; i < 60 && (await call(key)) !== status; i++) await sleep(200);
        assert.equal(seen.at(-1).status, status, `${key.kid}: ${JSON.stringify(seen.at(-1))}`);
      };
      // A is published (again, after another host's rotation).
      provider.publish("*", jwksOf([keyA]));
      await until(keyA, 200);
      for (let i = 0; i < 3; i++) assert.equal(await call(keyA), 200);
      // The provider rotates: B replaces A.
      provider.publish("*", jwksOf([keyB]));
      await until(keyB, 200);
      for (let i = 0; i < 3; i++) assert.equal(await call(keyB), 200);
      await until(keyA, 401);
      // The provider fails, then serves garbage, each for longer than the
      // first issuer's refresh (2 s): failed fetches and a refused document
      // on both hosts (they fetch from this one provider), and the keys stay.
      if (!failedOnce) {
        failedOnce = true;
        for (const mode of ["status500", "garbage"]) {
          provider.behave(mode);
          await sleep(2500);
        }
        provider.behave("ok");
      }
      assert.equal(await call(keyB), 200);
      const decisions = `gateway_decisions_total{job="${job}"}`;
      await scraped(prometheus, decisions, seen.length);
      const byOutcome = await sumBy(prometheus, "outcome", decisions);
      assert.equal(byOutcome.forwarded, seen.filter((s) => s.status === 200).length);
      assert.equal(byOutcome.unknown_key ?? 0, seen.filter((s) => s.unknownKid).length);
      assert.equal(byOutcome.keys_unavailable ?? 0, seen.filter((s) => s.keysUnavailable).length);
      const forwardedBy = await sumBy(prometheus, "issuer", `gateway_decisions_total{job="${job}",outcome="forwarded"}`);
      assert.deepEqual(forwardedBy, { [IDP]: byOutcome.forwarded });
      // Both issuers' keys were fetched and installed; the first issuer's again after the rotation.
      const installs = await sumBy(prometheus, "issuer", `gateway_jwks_installed_total{job="${job}"}`);
      assert.ok(installs[IDP] >= 2 && installs[JWKS] >= 1, JSON.stringify(installs));
      const fetched = await sumBy(prometheus, "issuer", `gateway_jwks_fetch_success_total{job="${job}"}`);
      assert.ok(fetched[IDP] >= installs[IDP], JSON.stringify(fetched));
      const failed = await sumBy(prometheus, "issuer", `gateway_jwks_fetch_failed_total{job="${job}"}`);
      assert.ok(failed[IDP] >= 1, JSON.stringify(failed));
      const refused = await sumBy(prometheus, "issuer", `gateway_jwks_refused_total{job="${job}"}`);
      assert.ok(refused[IDP] >= 1, JSON.stringify(refused));
      // The staleness alert's input: each issuer's last install, in the last minute.
      const fresh = await prometheus.query(`time() - gateway_jwks_installed_timestamp_seconds{job="${job}"} < 60`);
      assert.deepEqual(fresh.map((r) => r.metric.issuer).sort(), [IDP, JWKS]);
    });
  }

  test("the alerting rules (deploy/prometheus/alerts.yml) load and evaluate", async () => {
    const rules = await prometheus.rules();
    assert.deepEqual(rules.map((r) => r.name).sort(), ["GatewayKeyRejections", "GatewayKeysStale", "GatewayRuleDenials"]);
    for (const rule of rules) {
      assert.equal(rule.health, "ok", `${rule.name}: ${rule.lastError}`);
      for (const name of metricNames(rule.query)) assert.ok((await prometheus.names()).includes(name), name);
    }
  });

  test("every expression of the Grafana dashboard names scraped metrics and evaluates", async () => {
    const scraped = new Set(await prometheus.names());
    const expressions = dashboardExpressions();
    assert.ok(expressions.length >= 8, `${expressions.length} expressions`);
    for (const expr of expressions) {
      for (const name of metricNames(expr)) assert.ok(scraped.has(name), `${name} (in ${expr}) is not a scraped metric`);
      await prometheus.query(expr.replaceAll("$__rate_interval", "1m").replaceAll("$job", ".*"));
    }
  });
});

if (!installed) {
  test("Prometheus", { skip }, () => {});
}
