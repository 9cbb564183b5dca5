// End to end: workerd running deploy/workerd/config.capnp with the module
// built from the test fixture (testkit/fixture.toml), an echo upstream per
// origin on loopback, and one request corpus sent as raw HTTP/1.1 bytes. Each case
// states the status and RFC 6750 error code the gateway must give; forwarded
// cases state what the upstream must receive.
//
// When the wasmtime host is built (target/release/host-sim with `serve`),
// the same corpus goes through `host-sim serve` too and both gateways must
// agree: same statuses, same error codes, same forwarded requests.
//
//   node --test deploy/workerd/test/
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  hostSimServeHelp,
  mintToken,
  rawRequest,
  FIXTURE_WASM,
  readFixture,
  startEcho,
  startHostSim,
  startWorkerd,
} from "../harness.mjs";
import { envoyFilterReady, startEnvoyFilter } from "../../envoy/harness.mjs";

const config = readFixture();
/** One echo upstream per origin; two fixture routes share one, told apart by base path. */
const ORIGINS = [...new Set(config.routes.map((r) => r.origin))];
const route = (aud) => config.routes.find((r) => r.aud === aud);
const NOW = Math.floor(Date.now() / 1000);
const DAY = 86400;
// Far from now either way, so no case depends on the second it runs in.
const LATER = NOW + 30 * DAY;
const EARLIER = NOW - 30 * DAY;

const tok = (claims, header) =>
  mintToken(config.key, { iss: config.issuer, exp: LATER, ...claims }, header ?? { alg: "HS256", typ: "JWT", kid: config.kid });

function head(method, target, fields) {
  return `${method} ${target} HTTP/1.1\r\nHost: gateway.test\r\n${fields.map((f) => `${f}\r\n`).join("")}Connection: close\r\n\r\n`;
}
const bearer = (t) => `Authorization: Bearer ${t}`;
const flip = (t) => t.slice(0, -2) + (t.at(-2) === "A" ? "B" : "A") + t.at(-1);

/**
 * The corpus. `forward` names the route the request must reach and what the
 * upstream must see; otherwise `status` and `error` (null: no error code).
 */
const CASES = [
  { name: "no Authorization", req: head("GET", "/orders", []), status: 401, error: null },
  { name: "Basic scheme", req: head("GET", "/orders", ["Authorization: Basic YTpi"]), status: 401, error: null },
  {
    name: "GET with a query, sub forwarded",
    req: head("GET", "/orders/42?expand=items&page=2", [bearer(tok({ aud: "orders", sub: "alice" }))]),
    forward: { route: "orders", method: "GET", target: "/orders/42?expand=items&page=2", body: "", subject: "alice" },
  },
  {
    name: "POST with a body (Content-Length)",
    req: head("POST", "/billing/invoices", [bearer(tok({ aud: "billing", sub: "bob" })), "Content-Type: application/json", "Content-Length: 17"]) + '{"amount":"1.00"}',
    forward: { route: "billing", method: "POST", target: "/billing/invoices", body: '{"amount":"1.00"}', subject: "bob" },
  },
  {
    name: "PUT with a chunked body",
    req:
      head("PUT", "/users/u1", [bearer(tok({ aud: "users", sub: "carol" })), "Transfer-Encoding: chunked"]) +
      "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    forward: { route: "users", method: "PUT", target: "/users/u1", body: "hello world", subject: "carol" },
  },
  {
    name: "aud array, second audience routed, no sub",
    req: head("DELETE", "/users/a%20b?x=%2F&flag", [bearer(tok({ aud: ["unknown", "users"] }))]),
    forward: { route: "users", method: "DELETE", target: "/users/a%20b?x=%2F&flag", body: "", subject: null },
  },
  {
    name: "a client's X-Gateway-Subject never passes",
    req: head("GET", "/orders", [bearer(tok({ aud: "orders" })), "X-Gateway-Subject: admin"]),
    forward: { route: "orders", method: "GET", target: "/orders", body: "", subject: null },
  },
  {
    name: "lower-case scheme, nbf and iat in the past",
    req: head("GET", "/billing", [`authorization: bearer ${tok({ aud: "billing", sub: "dave", nbf: EARLIER, iat: EARLIER })}`]),
    forward: { route: "billing", method: "GET", target: "/billing", body: "", subject: "dave" },
  },
  { name: "expired", req: head("GET", "/", [bearer(tok({ aud: "orders", exp: EARLIER }))]), status: 401, error: "invalid_token" },
  { name: "not yet valid", req: head("GET", "/", [bearer(tok({ aud: "orders", nbf: LATER }))]), status: 401, error: "invalid_token" },
  { name: "no exp", req: head("GET", "/", [bearer(mintToken(config.key, { iss: config.issuer, aud: "orders" }))]), status: 401, error: "invalid_token" },
  { name: "wrong issuer", req: head("GET", "/", [bearer(tok({ aud: "orders", iss: "https://evil.example" }))]), status: 401, error: "invalid_token" },
  { name: "audience with no route", req: head("GET", "/", [bearer(tok({ aud: "payroll" }))]), status: 401, error: "invalid_token" },
  { name: "signature flipped", req: head("GET", "/", [bearer(flip(tok({ aud: "orders" })))]), status: 401, error: "invalid_token" },
  {
    name: "signed with another key",
    req: head("GET", "/", [bearer(mintToken(Buffer.from("another-key-of-at-least-32-bytes!!"), { iss: config.issuer, aud: "orders", exp: LATER }))]),
    status: 401,
    error: "invalid_token",
  },
  { name: "alg none", req: head("GET", "/", [bearer(tok({ aud: "orders" }, { alg: "none", kid: config.kid }).replace(/[^.]*$/, ""))]), status: 401, error: "invalid_token" },
  { name: "alg hs256 (case variant)", req: head("GET", "/", [bearer(tok({ aud: "orders" }, { alg: "hs256", kid: config.kid }))]), status: 401, error: "invalid_token" },
  { name: "unknown kid", req: head("GET", "/", [bearer(tok({ aud: "orders" }, { alg: "HS256", kid: "nope" }))]), status: 401, error: "invalid_token" },
  { name: "crit header", req: head("GET", "/", [bearer(tok({ aud: "orders" }, { alg: "HS256", kid: config.kid, crit: ["exp"] }))]), status: 401, error: "invalid_token" },
  { name: "token longer than max_token_bytes", req: head("GET", "/", [bearer(tok({ aud: "orders", sub: "x".repeat(config.maxTokenBytes) }))]), status: 401, error: "invalid_token" },
  { name: "not a compact JWS", req: head("GET", "/", [bearer("abc.def")]), status: 401, error: "invalid_token" },
  { name: "Bearer without a token", req: head("GET", "/", ["Authorization: Bearer"]), status: 400, error: "invalid_request" },
  { name: "space inside the token", req: head("GET", "/", ["Authorization: Bearer a.b c"]), status: 400, error: "invalid_request" },
  {
    name: "two Authorization headers (short)",
    req: head("GET", "/", [bearer("a.b.c"), bearer("a.b.c")]),
    status: 400,
    error: "invalid_request",
    // workerd joins the two fields: "malformed authorization header", not "more than one".
    reasonDiffers: true,
  },
  { name: "head larger than the input buffer", req: head("GET", "/", [`X-Padding: ${"p".repeat(17000)}`]), status: 431, error: "invalid_request" },
  {
    name: "more than 64 header fields",
    req: head("GET", "/", [bearer(tok({ aud: "orders" })), ...Array.from({ length: 70 }, (_, i) => `X-Field-${i}: ${i}`)]),
    status: 431,
    error: "invalid_request",
  },
  {
    // workerd joins repeated fields with ", " and the module sees one malformed
    // value; host-sim sees two fields. Both answer 400 invalid_request.
    name: "two Authorization headers (real tokens)",
    req: head("GET", "/", [bearer(tok({ aud: "orders" })), bearer(tok({ aud: "billing" }))]),
    status: 400,
    error: "invalid_request",
    reasonDiffers: true,
  },
];


/** What a test compares: the status, the error code, and what the upstream got. */
function summarize(res) {
  let json = null;
  try {
    json = JSON.parse(res.body);
  } catch {
    // not JSON: a runtime's own answer
  }
  const out = { status: res.status, error: json?.error ?? null };
  if (res.headers["x-echo"]) {
    // The route: the one whose origin the echo stands in for and whose base path starts the target.
    const matching = config.routes.filter((r) => r.origin === json.route && json.target.startsWith(`${r.base_path}/`));
    const routed = matching.sort((a, b) => b.base_path.length - a.base_path.length)[0];
    out.forwarded = {
      route: routed?.aud ?? null,
      method: json.method,
      target: routed ? json.target.slice(routed.base_path.length) : json.target,
      body: json.body,
      subject: json.subject,
      authorization: json.authorization,
    };
    out.host = json.host;
  } else {
    out.contentType = res.headers["content-type"] ?? null;
    out.challenge = res.headers["www-authenticate"] ?? null;
    out.description = json?.error_description ?? null;
  }
  return out;
}

function checkExpected(c, got, echo) {
  if (c.forward) {
    assert.equal(got.status, 200, `forwarded: ${JSON.stringify(got)}`);
    assert.deepEqual(got.forwarded, { ...c.forward, authorization: null });
    assert.equal(got.host, new URL(echo.addresses[route(c.forward.route).origin]).host, "Host is the upstream's");
  } else {
    assert.equal(got.status, c.status, JSON.stringify(got));
    assert.equal(got.error, c.error, JSON.stringify(got));
    assert.equal(got.contentType, "application/json");
    assert.ok(got.challenge?.startsWith('Bearer realm="'), `a challenge: ${JSON.stringify(got)}`);
  }
}

/** Starts a gateway whose upstreams refuse connections; a forward must be 502 with the JSON reason. */
async function upstreamDown(start) {
  const down = await start();
  try {
    const res = await rawRequest(down.port, head("GET", "/", [bearer(tok({ aud: "orders" }))]));
    assert.equal(res.status, 502);
    assert.equal(res.headers["content-type"], "application/json");
    assert.equal(JSON.parse(res.body).error_description, "upstream unavailable");
  } finally {
    await down.proc.stop();
  }
}

const override = (echo) => ORIGINS.map((origin) => `${origin}=${echo.addresses[origin]}`).join(",");

describe("workerd end to end", { timeout: 120000 }, () => {
  let echo;
  let workerd;
  before(async () => {
    echo = await startEcho(Object.fromEntries(ORIGINS.map((origin) => [origin, 0])));
    workerd = await startWorkerd(override(echo), FIXTURE_WASM);
  });
  after(async () => {
    await workerd?.proc.stop();
    await echo?.close();
  });

  for (const c of CASES) {
    test(c.name, async () => checkExpected(c, summarize(await rawRequest(workerd.port, c.req)), echo));
  }

  test("an upstream that is down: 502 with a JSON reason", () =>
    upstreamDown(() => startWorkerd(ORIGINS.map((origin) => `${origin}=http://127.0.0.1:1`).join(","), FIXTURE_WASM)));
});

/**
 * The same corpus through workerd and `host-sim serve`, one echo upstream on
 * ephemeral ports for both: each gateway maps the compiled-in upstream base
 * URLs to it (workerd: UPSTREAM_OVERRIDE; host-sim: --upstream-override),
 * while the module still picks the route.
 */
// Skipped when host-sim is not built, unless REQUIRE_HOST_SIM=1 (scripts/test-extra.sh builds it and sets it).
const hostSimHelp = hostSimServeHelp();
const requireHostSim = process.env.REQUIRE_HOST_SIM === "1";
describe(
  "workerd and host-sim serve agree",
  { timeout: 180000, skip: hostSimHelp || requireHostSim ? false : "target/release/host-sim serve is not built" },
  () => {
    let echo;
    let workerd;
    let hostSim;
    before(async () => {
      if (!hostSimHelp) throw new Error("target/release/host-sim serve is not built: cargo build --release -p host-sim");
      echo = await startEcho(Object.fromEntries(ORIGINS.map((origin) => [origin, 0])));
      workerd = await startWorkerd(override(echo), FIXTURE_WASM);
      hostSim = await startHostSim(
        ORIGINS.flatMap((origin) => ["--upstream-override", `${origin}=${echo.addresses[origin]}`]),
        60000,
        FIXTURE_WASM,
      );
    });
    after(async () => {
      await hostSim?.proc.stop();
      await workerd?.proc.stop();
      await echo?.close();
    });

    const both = async (req) => {
      const [w, h] = await Promise.all([rawRequest(workerd.port, req), rawRequest(hostSim.port, req)]);
      return { workerd: summarize(w), hostSim: summarize(h) };
    };
    const comparable = ({ status, error, forwarded, contentType, challenge, description }) => ({
      status,
      error,
      forwarded,
      contentType,
      challenge,
      description,
    });

    for (const c of CASES) {
      test(c.name, async () => {
        const got = await both(c.req);
        const view = (g) => (c.reasonDiffers ? { ...comparable(g), challenge: undefined, description: undefined } : comparable(g));
        assert.deepEqual(view(got.hostSim), view(got.workerd), "host-sim serve (actual) vs workerd (expected)");
        checkExpected(c, got.workerd, echo);
        checkExpected(c, got.hostSim, echo);
      });
    }
  },
);

/**
 * The same corpus through Envoy running the gateway filter
 * (target/fixture/gateway-envoy.wasm), which must give workerd's answers:
 * statuses, error codes, reasons, challenges and forwarded requests.
 */
// Skipped when Envoy or the filter is not built, unless REQUIRE_ENVOY=1 (`make test` sets it).
const envoyReady = envoyFilterReady();
describe(
  "Envoy with the gateway filter agrees with workerd",
  { timeout: 180000, skip: envoyReady || process.env.REQUIRE_ENVOY === "1" ? false : "Envoy or the filter is not built (make envoy fixture)" },
  () => {
    let echo;
    let workerd;
    let envoy;
    const pairs = () => ORIGINS.map((origin) => [origin, echo.addresses[origin]]);
    before(async () => {
      echo = await startEcho(Object.fromEntries(ORIGINS.map((origin) => [origin, 0])));
      workerd = await startWorkerd(override(echo), FIXTURE_WASM);
      envoy = await startEnvoyFilter(pairs());
    });
    after(async () => {
      await envoy?.proc.stop();
      await workerd?.proc.stop();
      await echo?.close();
    });

    const view = ({ status, error, forwarded, contentType, challenge, description }, reasonDiffers) =>
      reasonDiffers
        ? { status, error, forwarded, contentType }
        : { status, error, forwarded, contentType, challenge, description };

    for (const c of CASES) {
      test(c.name, async () => {
        const [w, e] = await Promise.all([rawRequest(workerd.port, c.req), rawRequest(envoy.port, c.req)]);
        const [fromWorkerd, fromEnvoy] = [summarize(w), summarize(e)];
        assert.deepEqual(view(fromEnvoy, c.reasonDiffers), view(fromWorkerd, c.reasonDiffers), "Envoy (actual) vs workerd (expected)");
        checkExpected(c, fromEnvoy, echo);
      });
    }

    test("an upstream that is down: 502 with a JSON reason", () =>
      upstreamDown(() => startEnvoyFilter(ORIGINS.map((origin) => [origin, "http://127.0.0.1:1"]))));

    test("a client's x-gateway-upstream does not choose the upstream", async () => {
      const req = head("GET", "/u/1", [bearer(tok({ aud: "users", sub: "carol" })), `x-gateway-upstream: ${route("orders").origin}`]);
      const got = summarize(await rawRequest(envoy.port, req));
      assert.equal(got.status, 200, JSON.stringify(got));
      assert.equal(got.forwarded.route, "users");
    });
  },
);
