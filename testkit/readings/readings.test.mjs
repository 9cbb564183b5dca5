// The upstream-readings suite: real servers (nginx, Express, Fastify, Hono,
// Flask, Tomcat) behind the module built from testkit/fixture-readings.toml,
// on every host (host-sim serve, workerd, Envoy with the gateway filter and
// with the native module, wasmtime serve with the wasi:http component). Each
// server answers a marker from the handler of each protected resource;
// every spelling of each protected request (spellings.mjs) goes out as raw
// bytes on a fresh connection, with credentials that do not meet its rule
// (no token, and a valid token without the role, scope or claim). The
// suite fails when any of them reaches a marker, naming the host, the
// server, the method and the exact target. Positive controls first: with
// credentials that meet each rule, the canonical request reaches its
// marker through every host to every server, and the public paths answer,
// so a wiring fault cannot pass for safety.
//
//   make readings      (or node --test testkit/readings/ after make fixture-readings host envoy wasmtime readings-servers)
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, hostSimServeHelp, mintToken, readFixture, startHostSim, startWorkerd } from "../../deploy/workerd/harness.mjs";
import { ENVOY, ENVOY_FILTER_BIN, envoyFilterReady, startEnvoyFilter, startEnvoyNative } from "../../deploy/envoy/harness.mjs";
import { WASMTIME, startWasiHttp } from "../../deploy/wasi-http/harness.mjs";
import { exchange } from "./exchange.mjs";
import { PROTECTED, battery } from "./spellings.mjs";
import { SERVER_STARTS, startServers } from "./servers.mjs";

const FIXTURE = join(ROOT, "target", "fixture");
const MODULE = join(FIXTURE, "gateway-readings.wasm");
const ENVOY_MODULE = { wasm: join(FIXTURE, "gateway-readings-envoy.wasm"), config: join(ROOT, "testkit", "fixture-readings.toml") };
/** The same config as a native Envoy module (build/envoy-native.sh, `make fixture-readings`). */
const ENVOY_NATIVE = { native: join(FIXTURE, "native", "readings", "libgateway_envoy.so"), config: ENVOY_MODULE.config };
/** The wasi:http component of the same config, with upstream-override (`make fixture-readings`). */
const WASI_HTTP_COMPONENT = join(FIXTURE, "gateway-readings-wasi-http.wasm");
/** Where the summary and every reached marker are written, one line each, for a closer look. */
const REPORT = join(ROOT, "target", "readings");

/** How many requests are in flight at once, and how long one may take. */
const POOL = 8;
const REQUEST_TIMEOUT_MS = 10000;

const fixture = readFixture(join(FIXTURE, "fixture-readings.json"));
/** The one origin both routes name; each run moves it to the server under test. */
const ORIGIN = fixture.routes[0].origin;
assert.ok(fixture.routes.every((r) => r.origin === ORIGIN && r.base_path === ""), "fixture-readings.toml: every route on one origin");

const EXP = 4102444800; // 2100-01-01
const token = (claims) =>
  mintToken(fixture.key, { iss: fixture.issuer, aud: "api", exp: EXP, ...claims }, { alg: "HS256", typ: "JWT", kid: fixture.kid });
/** A valid token that meets no rule's requirement: no admin role, no orders:write or reports:read, another tenant. */
const WEAK = token({ sub: "mallory", roles: ["user"], scope: "orders:read", tenant: "globex" });
/** Credentials that do not meet the rules: every spelling goes out with each. */
const CREDENTIALS = [
  ["no token", []],
  ["valid token without the requirements", [`Authorization: Bearer ${WEAK}`]],
];
/** Tokens that meet each rule, for the positive controls. */
const MEETS = {
  "admin-users": token({ sub: "root", roles: ["admin"] }),
  "account-export": token({ sub: "alice", tenant: "acme" }),
  "orders-delete": token({ sub: "bob", scope: "orders:write" }),
  "reports-daily": token({ sub: "carol", scope: "reports:read" }),
};

/** The request bytes: request line, Host, the fields, Connection: close, the body. */
const requestBytes = (method, target, fields = [], body = "") =>
  `${method} ${target} HTTP/1.1\r\nHost: gw.test\r\n${fields.map((f) => `${f}\r\n`).join("")}Connection: close\r\n\r\n${body}`;

/** Sends one request on a fresh connection; a connection that ends without an answer is status 0. */
const send = (port, bytes) => exchange(port, bytes, REQUEST_TIMEOUT_MS);

/** The marker a response carries (its field, or its body for a GET), or null. */
const markerOf = (r) => r.headers["x-readings-marker"] ?? /READINGS-MARKER (\S+)/.exec(r.body)?.[1] ?? null;

/**
 * Who answered: the server behind the gateway (it names itself in
 * x-readings-server), the module (its JSON answer, or a preflight's 204),
 * or the host's own HTTP stack (anything else, a closed connection
 * included).
 */
function answeredBy(r) {
  if (r.headers["x-readings-server"]) return "server";
  // A preflight's 204, or an answer in the module's JSON (a HEAD's without its body).
  if (r.status === 204 || /^application\/json/.test(r.headers["content-type"] ?? "")) return "gateway";
  return "front end";
}

/** Runs `jobs` (functions returning promises) POOL at a time; resolves to their results in order. */
async function pooled(jobs) {
  const results = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]();
    }
  };
  await Promise.all(Array.from({ length: POOL }, worker));
  return results;
}

/** "401: 12, 404: 3" */
const byStatus = (list) => {
  const counts = {};
  for (const r of list) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return Object.entries(counts)
    .map(([s, n]) => `${s}: ${n}`)
    .join(", ");
};

/** A reached marker as one line: host, server, method, exact target, credentials, classes. */
const breachLine = (host, server, b) =>
  `${host} -> ${server}: ${b.method} ${JSON.stringify(b.target)}${b.fields.length ? ` with ${JSON.stringify(b.fields)}` : ""}${b.body ? ` body ${JSON.stringify(b.body)}` : ""} (${b.credentials}) reached ${b.reached} [${b.classes.join(", ") || "canonical"}] (${b.status})`;

/** The hosts, each started with the readings module and its origin moved to `to`. */
const HOSTS = [];
if (hostSimServeHelp() || process.env.REQUIRE_HOST_SIM === "1") {
  HOSTS.push(["host-sim", (to) => startHostSim(["--upstream-override", `${ORIGIN}=${to}`], 60000, MODULE)]);
}
HOSTS.push(["workerd", (to) => startWorkerd(`${ORIGIN}=${to}`, MODULE)]);
if (envoyFilterReady() || process.env.REQUIRE_ENVOY === "1") {
  HOSTS.push(["envoy", (to) => startEnvoyFilter([[ORIGIN, to]], ENVOY_MODULE)]);
}
if ([ENVOY, ENVOY_FILTER_BIN, ENVOY_NATIVE.native].every((path) => existsSync(path)) || process.env.REQUIRE_ENVOY === "1") {
  HOSTS.push(["envoy-native", (to) => startEnvoyNative([[ORIGIN, to]], ENVOY_NATIVE)]);
}
// `wasmtime serve` as its users run it (a fresh instance per request), the
// origin moved by GATEWAY_UPSTREAM_OVERRIDE (deploy/wasi-http/harness.mjs).
if ((existsSync(WASMTIME) && existsSync(WASI_HTTP_COMPONENT)) || process.env.REQUIRE_WASI_HTTP === "1") {
  HOSTS.push(["wasmtime", (to) => startWasiHttp([[ORIGIN, to]], WASI_HTTP_COMPONENT)]);
}

// READINGS_HOSTS=envoy,wasmtime runs those hosts alone (a closer look at one).
if (process.env.READINGS_HOSTS) {
  const only = process.env.READINGS_HOSTS.split(",");
  for (const name of only) assert.ok(HOSTS.some(([h]) => h === name), `READINGS_HOSTS: no host ${name} (${HOSTS.map(([h]) => h).join(", ")})`);
  HOSTS.splice(0, HOSTS.length, ...HOSTS.filter(([h]) => only.includes(h)));
}

const SPELLINGS = battery();
/** Each run's summary line, written to target/readings/summary.txt at the end. */
const SUMMARIES = [];

describe("upstream readings: no spelling of a protected request reaches its handler without the rule's requirements", { timeout: 900000 }, () => {
  let servers = [];
  before(async () => {
    servers = await startServers();
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.proc.stop()));
    mkdirSync(REPORT, { recursive: true });
    writeFileSync(join(REPORT, "summary.txt"), SUMMARIES.map((l) => `${l}\n`).join(""));
  });
  const serverNamed = (name) => {
    const server = servers.find((s) => s.name === name);
    assert.ok(server, `${name} did not start`);
    return server;
  };

  test("each server answers each marker to the canonical request, sent to it directly", async () => {
    for (const server of servers) {
      for (const p of PROTECTED) {
        const r = await send(server.port, requestBytes(p.method, `/${p.segments.join("/")}`));
        assert.equal(markerOf(r), p.marker, `${server.name}: ${p.method} /${p.segments.join("/")}: ${r.status} ${r.body.slice(0, 200)}`);
        assert.equal(r.headers["x-readings-server"], server.name);
      }
      const read = await send(server.port, requestBytes("GET", "/orders/5"));
      assert.equal(read.status, 200, `${server.name}: GET /orders/5`);
      assert.equal(markerOf(read), null, `${server.name}: GET /orders/5 is not the DELETE handler`);
    }
  });

  for (const [host, start] of HOSTS) {
    for (const [serverName] of SERVER_STARTS) {
      test(`${host} -> ${serverName}`, async (t) => {
        const server = serverNamed(serverName);
        const gateway = await start(`http://127.0.0.1:${server.port}`);
        try {
          await positiveControls(gateway.port, server.name);
          const lines = await runBattery(gateway.port, host, server.name, t);
          // Again after the battery: a server or host that died during it
          // would have answered nothing, which must not pass for safety.
          await positiveControls(gateway.port, server.name);
          assert.equal(lines.length, 0, `${lines.length} spellings reached a marker without the rule's requirements:\n${lines.slice(0, 40).join("\n")}${lines.length > 40 ? `\n... and ${lines.length - 40} more (all in target/readings/)` : ""}`);
        } finally {
          await gateway.proc.stop();
        }
      });
    }
  }
});

/**
 * With credentials that meet each rule the canonical request reaches its
 * marker on `server`; the public paths and a token path answer from it;
 * each deny rule holds even for a token that meets every other rule.
 */
async function positiveControls(port, server) {
  const check = async (what, bytes, expectMarker, expectStatus = 200) => {
    const r = await send(port, bytes);
    const where = `${what} through the gateway to ${server}: ${r.status} ${JSON.stringify(r.body.slice(0, 200))}`;
    assert.equal(r.status, expectStatus, where);
    assert.equal(markerOf(r), expectMarker, where);
    if (expectStatus === 200) assert.equal(r.headers["x-readings-server"], server, where);
  };
  for (const p of PROTECTED.filter((p) => MEETS[p.marker])) {
    const target = `/${p.segments.join("/")}`;
    await check(`${p.method} ${target} with a token that meets ${p.rule}`, requestBytes(p.method, target, [`Authorization: Bearer ${MEETS[p.marker]}`]), p.marker);
  }
  await check("GET /healthz, public", requestBytes("GET", "/healthz"), null);
  await check("HEAD /healthz, public", requestBytes("HEAD", "/healthz"), null);
  await check("GET /docs/intro, public", requestBytes("GET", "/docs/intro"), null);
  await check("GET /orders/5 with a valid token", requestBytes("GET", "/orders/5", [`Authorization: Bearer ${WEAK}`]), null);
  const all = token({ sub: "root", roles: ["admin"], tenant: "acme", scope: "orders:write reports:read" });
  for (const p of PROTECTED.filter((p) => p.deny)) {
    const target = `/${p.segments.join("/")}`;
    await check(`${p.method} ${target} with a token that meets every other rule`, requestBytes(p.method, target, [`Authorization: Bearer ${all}`]), null, p.deny);
  }
}

/**
 * Sends every spelling with each credential that does not meet its rule;
 * prints a summary and writes every reached marker to target/readings/.
 * Resolves to the reached markers' lines.
 */
async function runBattery(port, host, server, t) {
  const jobs = [];
  for (const s of SPELLINGS) {
    for (const [credentials, fields] of CREDENTIALS) {
      jobs.push(async () => {
        const r = await send(port, requestBytes(s.method, s.target, [...s.fields, ...fields], s.body));
        return { ...s, credentials, status: r.status, by: answeredBy(r), reached: markerOf(r) };
      });
    }
  }
  const results = await pooled(jobs);
  const gateway = results.filter((r) => r.by === "gateway");
  const frontEnd = results.filter((r) => r.by === "front end" && r.status !== 0);
  const unanswered = results.filter((r) => r.status === 0);
  const forwarded = results.filter((r) => r.by === "server");
  const breaches = results.filter((r) => r.reached);
  const summary =
    `${host} -> ${server}: ${results.length} spellings sent; answered by the gateway ${gateway.length} (${byStatus(gateway)}); ` +
    `by a front end ${frontEnd.length}${frontEnd.length ? ` (${byStatus(frontEnd)})` : ""}; ` +
    `${unanswered.length ? `no answer ${unanswered.length}; ` : ""}forwarded ${forwarded.length}; reached a marker ${breaches.length}`;
  t.diagnostic(summary);
  SUMMARIES.push(summary);
  const lines = breaches.map((b) => breachLine(host, server, b));
  mkdirSync(REPORT, { recursive: true });
  writeFileSync(join(REPORT, `${host}-${server}.txt`), lines.map((l) => `${l}\n`).join(""));
  return lines;
}
