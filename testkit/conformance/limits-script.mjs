// The rate-limit conformance script: one sequence of requests through a
// host running the module built from testkit/fixture-limits.toml, to a
// recording upstream, with what each answer must be. Every host's test
// runs it (host-sim, workerd, Envoy, wasmtime serve), so that all count
// and answer alike; `differences` names what a host cannot do the same
// way, and says why (Envoy's local_ratelimit does not report remaining
// counts; wasi:http shows a component no client address).
//
// The fixture's budgets are per minute or per hour, so no bucket refills
// while the script runs; each run uses fresh subjects, so that a host
// whose counts outlive one test (a Redis, a Durable Object) starts clean.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { mintToken } from "../../deploy/workerd/harness.mjs";

/** The fixture's signing keys by issuer (testkit/fixture-limits.toml). */
const KEYS = {
  "https://issuer.test": ["TEST-ONLY-fixture-signing-key-0123456789", "fixture"],
  "https://other.test": ["TEST-ONLY-other-issuer-signing-key-0123", "other"],
};

/** The fixture's upstream origins; a host's test moves both to the recorder. */
export const LIMITS_ORIGINS = ["http://127.0.0.1:9201", "http://127.0.0.1:9202"];

/** A token of `iss` for `aud` with `claims`, valid for ten minutes. */
export function limitsToken(claims, { aud = "orders", iss = "https://issuer.test" } = {}) {
  const [key, kid] = KEYS[iss];
  const exp = Math.floor(Date.now() / 1000) + 600;
  return mintToken(key, { iss, aud, exp, ...claims }, { alg: "HS256", typ: "JWT", kid });
}

/** A recording upstream on loopback: counts and keeps what reaches it. */
export async function startLimitsRecorder() {
  const received = [];
  const server = createServer((req, res) => {
    received.push({ method: req.method, url: req.url, headers: req.headers });
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("upstream");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    received,
    stop: () => new Promise((r) => (server.closeAllConnections(), server.close(r))),
  };
}

/**
 * Runs the script against the gateway at `base` (`http://127.0.0.1:PORT`)
 * whose upstreams are `recorder`. `differences`: `{ remaining: false }`
 * for a host that cannot report remaining counts (no `ratelimit` field on
 * forwards, Retry-After the limit's interval), `{ peer: "unknown" }` for
 * a host that cannot see the client's address, `{ pauseMs: N }` for a host
 * that counts in one instance only while each request finds it free again
 * (wasmtime serve: ONE_INSTANCE_PAUSE_MS in deploy/wasi-http/harness.mjs).
 */
export async function runLimitsScript(base, recorder, differences = {}) {
  const run = randomBytes(4).toString("hex");
  const remaining = differences.remaining !== false;
  const send = async (path, token, headers = {}) => {
    if (differences.pauseMs) await sleep(differences.pauseMs);
    const auth = token ? { authorization: `Bearer ${token}` } : {};
    const res = await fetch(`${base}${path}`, { headers: { ...auth, ...headers }, signal: AbortSignal.timeout(10000) });
    return { status: res.status, headers: res.headers, body: await res.text() };
  };
  const reached = () => recorder.received.length;
  const refusedBy = (res, limit, what) => {
    assert.equal(res.status, 429, `${what}: ${res.status} ${res.body}`);
    assert.deepEqual(JSON.parse(res.body), { error_description: "rate limit exceeded", limit }, what);
    assert.match(res.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/, what);
    assert.match(res.headers.get("ratelimit") ?? "", new RegExp(`^"${limit}";r=0;t=[0-9]+$`), what);
    assert.equal(res.headers.get("content-type"), "application/json", what);
  };

  // 1. Per subject (the default limit, 3 a minute, all at once): the fourth
  //    is refused and never reaches the upstream; another subject is not.
  const alice = limitsToken({ sub: `alice-${run}` });
  const before = reached();
  for (const left of [2, 1, 0]) {
    const res = await send("/orders/1", alice);
    assert.equal(res.status, 200, res.body);
    assert.equal(res.headers.get("ratelimit-policy"), '"per-user";q=3;w=60');
    if (remaining) assert.match(res.headers.get("ratelimit") ?? "", new RegExp(`^"per-user";r=${left};t=[0-9]+$`));
  }
  const fourth = await send("/orders/1", alice);
  refusedBy(fourth, "per-user", "the fourth request of a subject");
  if (remaining) assert.equal(fourth.headers.get("retry-after"), "20", "one request every 20 s");
  assert.equal(reached() - before, 3, "the refused request never reached the upstream");
  for (const r of recorder.received.slice(before)) {
    assert.ok(!Object.keys(r.headers).some((n) => n.startsWith("x-gateway-limit")), "no bucket field travels upstream");
  }
  assert.equal((await send("/orders/1", limitsToken({ sub: `bob-${run}` }))).status, 200, "another subject has its own budget");
  // The same subject of another issuer is another caller.
  const other = limitsToken({ sub: `alice-${run}` }, { iss: "https://other.test" });
  assert.equal((await send("/orders/1", other)).status, 200, "issuer-qualified subjects");

  // 2. Per route (2 a minute, whoever calls): shared by two subjects.
  const search = [`carol-${run}`, `dave-${run}`, `erin-${run}`].map((sub) => limitsToken({ sub, aud: "users" }));
  const searched = [];
  for (const token of search) searched.push(await send(`/search?q=${run}`, token));
  // Earlier runs against the same store may have spent the route's bucket:
  // the route bucket is the one shared by everyone, so only its refusal is
  // checked where it must come.
  assert.equal(searched[2].status, 429, "the third caller of the route");
  refusedBy(searched[2], "search", "the route's bucket");

  // 3. Per claim (5 a minute, 2 at once, no RateLimit field) before per
  //    subject: the third caller of one tenant is refused by the tenant's.
  const tenant = `acme-${run}`;
  const tenants = [];
  for (const sub of ["frank", "gina", "hank"]) tenants.push(await send("/tenants/1", limitsToken({ sub: `${sub}-${run}`, tenant })));
  assert.deepEqual(tenants.map((r) => r.status), [200, 200, 429]);
  refusedBy(tenants[2], "per-tenant", "the tenant's bucket");
  if (remaining) assert.match(tenants[0].headers.get("ratelimit") ?? "", /^"per-user";r=2;t=[0-9]+$/, "no field for a limit with fields = false");
  assert.equal(tenants[0].headers.get("ratelimit-policy"), '"per-user";q=3;w=60');
  assert.equal(
    (await send("/tenants/1", limitsToken({ sub: `ivan-${run}`, tenant: `${tenant}-2` }))).status,
    200,
    "another tenant",
  );

  // 4. A public path limited per client address: a client-sent
  //    X-Forwarded-For changes nothing (the key is the peer the host saw).
  //    Every run of this script shares the address, so the bucket may be
  //    spent already: requests pass until it is, then all are refused.
  const health = [];
  for (let i = 0; i < 6; i++) health.push(await send("/healthz", null, { "x-forwarded-for": `10.${i}.0.1` }));
  const statuses = health.map((r) => r.status);
  const firstRefused = statuses.indexOf(429);
  assert.ok(firstRefused >= 0 && firstRefused <= 4, `a fifth request within the hour is refused: ${statuses}`);
  assert.ok(statuses.slice(firstRefused).every((s) => s === 429), `${statuses}`);
  refusedBy(health[firstRefused], "per-address", "the address's bucket");

  // 5. A public rule with limits = []: never limited, no field.
  for (let i = 0; i < 8; i++) {
    const res = await send("/open", null);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("ratelimit-policy"), null);
  }
}
