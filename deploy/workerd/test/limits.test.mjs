// Rate limits on workerd (worker/ABI.md, "Rate limits"): the GCRA port
// (limits.mjs) against contract/golden/limits.json; the counting of a
// forward's buckets and the choice of counter by the bindings; and, end to
// end, workerd running the module built from testkit/fixture-limits.toml
// (target/fixture/gateway-limits.wasm, `make fixture`) with its Durable
// Object buckets in front of a recording upstream.
//
//   node --test deploy/workerd/test/limits.test.mjs
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import { ROOT, mintToken, startWorkerd } from "../harness.mjs";
import binaryen from "binaryen";
import { Gateway, LIMIT_STORE_UNAVAILABLE } from "../gateway.mjs";
import { OUTCOMES, Observer } from "../observe.mjs";
import {
  LimitsNotBound,
  UNSTORED_AHEAD_US,
  bindingCounter,
  bindingName,
  count,
  countBuckets,
  intervalUs,
  mustStore,
  ratelimitField,
  readLimits,
} from "../limits.mjs";

const golden = JSON.parse(readFileSync(join(ROOT, "contract", "golden", "limits.json"), "utf8"));

describe("GCRA as contract::limits::gcra counts (contract/golden/limits.json)", () => {
  test("every vector", () => {
    assert.ok(golden.cases.length >= 40 && golden.cases.some((c) => !c.expect.allowed));
    for (const c of golden.cases) {
      // JSON numbers are doubles: every time in the file must be exact as one.
      for (const n of [c.stored_tat_us, c.now_us, c.expect.tat_us]) assert.ok(Number.isSafeInteger(n), `${n} is exact`);
      const verdict = count(c.limit, BigInt(c.stored_tat_us), BigInt(c.now_us));
      assert.deepEqual({ ...verdict, tat_us: Number(verdict.tat_us) }, c.expect, JSON.stringify(c));
    }
  });

  test("the ratelimit field, and the interval at its bounds", () => {
    for (const f of golden.fields) assert.equal(ratelimitField(f.limit, f), f.ratelimit);
    assert.equal(intervalUs({ requests: 3, per_secs: 60 }), 20000000n);
    assert.equal(intervalUs({ requests: 7, per_secs: 10 }), 1428572n, "rounded up");
    assert.equal(intervalUs({ requests: 0xffffffff, per_secs: 1 }), 1n, "at least 1 µs");
    const huge = count({ requests: 1, per_secs: 0xffffffff, burst: 0xffffffff }, 0n, 1n);
    assert.equal(huge.allowed, true, "a tolerance past u64 saturates, as in Rust");
    assert.equal(huge.remaining, Math.floor((2 ** 64 - 1 - 1 - 4294967295e6) / 4294967295e6));
  });

  test("a Durable Object writes a TAT only when it is 10 s or more ahead", () => {
    const now = 1765000000000000n;
    const perUser = { requests: 3, per_secs: 60, burst: 3 };
    assert.equal(mustStore(count(perUser, 0n, now), now), true, "20 s ahead");
    const fast = { requests: 1000, per_secs: 1, burst: 1000 };
    let tat = 0n;
    for (let i = 0; i < 1000; i++) {
      const verdict = count(fast, tat, now);
      assert.equal(mustStore(verdict, now), false, "never more than 1 s ahead");
      tat = verdict.tat_us;
    }
    const refused = count(fast, tat, now);
    assert.equal(refused.allowed, false);
    assert.equal(mustStore(refused, now), false, "a refusal stores nothing");
    assert.equal(mustStore({ allowed: true, tat_us: now + UNSTORED_AHEAD_US }, now), true);
    assert.equal(mustStore({ allowed: true, tat_us: now + UNSTORED_AHEAD_US - 1n }, now), false);
  });

  test("limit lines: the contract's own example", () => {
    const table = "rule a\nlimit per-user 100 60 20 1\nissuer -\nlimit x 0 1 1 1\nlimit y 1 1 1 2\nlimit z 01 1 1 0\nlimit w 1 1 1 0 extra";
    const perUser = { name: "per-user", requests: 100, per_secs: 60, burst: 20, fields: true };
    assert.deepEqual(readLimits(table), [perUser, null, null, null, null]);
    assert.deepEqual(readLimits("rule a\nissuer b"), []);
  });
});

/** A counter over plain GCRA in a Map, at a fixed clock: what the Durable Objects do. */
function mapCounter(nowUs = 1765000000000000n) {
  const tats = new Map();
  const keys = [];
  return {
    keys,
    async count(key, limit) {
      keys.push(key);
      const verdict = count(limit, tats.get(key) ?? 0n, nowUs);
      if (verdict.allowed) tats.set(key, verdict.tat_us);
      return verdict;
    },
  };
}

describe("counting a forward's buckets", () => {
  const limits = readLimits("limit per-user 3 60 3 1\nlimit per-tenant 5 60 2 0\nlimit search 2 60 2 1");

  test("in order, with the fields of limits that have them, stopping at the first refusal", async () => {
    const counter = mapCounter();
    const buckets = [{ limit: 1, key: "per-tenant:c:0.acme" }, { limit: 0, key: "per-user:s:0.alice" }];
    const first = await countBuckets(buckets, limits, counter);
    assert.deepEqual(first, { fields: ['"per-user";r=2;t=20'] }, "per-tenant has fields=0");
    assert.ok("fields" in (await countBuckets(buckets, limits, counter)));
    const third = await countBuckets(buckets, limits, counter);
    assert.equal(third.refused, 0, "the tenant's burst of 2 is spent");
    assert.equal(third.verdict.retry_after_secs, 12);
    assert.deepEqual(counter.keys.at(-1), "per-tenant:c:0.acme", "the later bucket is not counted");
    assert.equal(counter.keys.filter((k) => k.startsWith("per-user")).length, 2);
  });

  test("a bucket naming a limit the table lacks is the module's failure", async () => {
    await assert.rejects(countBuckets([{ limit: 7, key: "x:r:0" }], limits, mapCounter()), /names limit 7/);
  });

  test("the bindings: a Durable Object per key, or a Rate Limiting binding for its limit, or refused", async () => {
    const calls = [];
    const namespace = {
      idFromName: (key) => `id(${key})`,
      get: (id) => ({ count: async (limit) => (calls.push([id, limit]), { allowed: true, remaining: 1, reset_secs: 20, retry_after_secs: 0 }) }),
    };
    const perUser = limits[0];
    const byObject = await bindingCounter({ LIMITS: namespace }).count("per-user:s:0.alice", perUser);
    assert.deepEqual(calls, [["id(per-user:s:0.alice)", { requests: 3, per_secs: 60, burst: 3 }]]);
    assert.equal(byObject.remaining, 1);

    assert.equal(bindingName("per-user"), "RATE_LIMIT_PER_USER");
    const seen = [];
    let success = true;
    const RATE_LIMIT_PER_USER = { limit: async (options) => (seen.push(options), { success }) };
    const counter = bindingCounter({ LIMITS: namespace, RATE_LIMIT_PER_USER });
    assert.deepEqual(await counter.count("per-user:s:0.bob", perUser), { allowed: true, remaining: null, reset_secs: 60, retry_after_secs: 0 });
    success = false;
    assert.deepEqual(await counter.count("per-user:s:0.bob", perUser), { allowed: false, remaining: 0, reset_secs: 60, retry_after_secs: 60 });
    assert.deepEqual(seen, [{ key: "per-user:s:0.bob" }, { key: "per-user:s:0.bob" }]);
    assert.equal(calls.length, 1, "the binding counted its limit, not the object");
    const fields = await countBuckets([{ limit: 0, key: "per-user:s:0.carol" }], limits, { count: async () => ({ allowed: true, remaining: null }) });
    assert.deepEqual(fields, { fields: [] }, "no remaining known: no ratelimit field");

    await assert.rejects(bindingCounter({}).count("search:r:2", limits[2]), (e) => e instanceof LimitsNotBound && /RATE_LIMIT_SEARCH/.test(e.message));
  });
});

/**
 * A stand-in module (ABI 5): every request is a forward to
 * http://127.0.0.1:9 with the buckets `=00 a:s:0.x` and `=01 b:r:0` and the
 * limit table `limit a 3 60 3 1` / `limit b 2 60 2 0`; `limited` answers 429
 * and keeps its arguments (`last_bucket`, `last_retry`, `last_reset`), and
 * `handled` counts the decisions.
 */
function limitsModule(table = "limit a 3 60 3 1\nlimit b 2 60 2 0") {
  const esc = (s) => [...s].map((c) => (/[\w ]/.test(c) ? c : `\\${c.charCodeAt(0).toString(16).padStart(2, "0")}`)).join("");
  const forward = "http://127.0.0.1:9\n/x\n#00ffff0000ff -\n=00 a:s:0.x\n=01 b:r:0";
  const answer = '\nrate limit exceeded\n#4fffff0000ff -\n>retry-after:1\n{"limit":"b"}';
  const text = [[4096, forward], [8192, table], [12288, answer]];
  const out = (i) => `(global.set $p (i32.const ${text[i][0]})) (global.set $l (i32.const ${text[i][1].length}))`;
  const wat = `(module (memory (export "memory") 1)
    ${text.map(([at, s]) => `(data (i32.const ${at}) "${esc(s)}")`).join(" ")}
    (global $p (mut i32) (i32.const 0)) (global $l (mut i32) (i32.const 0))
    (global $h (mut i32) (i32.const 0)) (global $b (mut i32) (i32.const -1)) (global $r (mut i32) (i32.const 0)) (global $t (mut i32) (i32.const 0))
    (func (export "abi_version") (result i32) (i32.const 6))
    (func (export "input_ptr") (result i32) (i32.const 0))
    (func (export "input_capacity") (result i32) (i32.const 4000))
    (func (export "routes") (result i32) (global.set $l (i32.const 0)) (i32.const 0))
    (func (export "labels") (result i32) ${out(1)} (i32.const 0))
    (func (export "handle") (param i32 f64) (result i32) (global.set $h (i32.add (global.get $h) (i32.const 1))) ${out(0)} (i32.const 200))
    (func (export "limited") (param i32 i32 i32) (result i32)
      (global.set $b (local.get 0)) (global.set $r (local.get 1)) (global.set $t (local.get 2)) ${out(2)} (i32.const 429))
    (func (export "handled") (result i32) (global.get $h))
    (func (export "last_bucket") (result i32) (global.get $b))
    (func (export "last_retry") (result i32) (global.get $r))
    (func (export "last_reset") (result i32) (global.get $t))
    (func (export "output_ptr") (result i32) (global.get $p))
    (func (export "output_len") (result i32) (global.get $l)))`;
  const m = binaryen.parseText(wat);
  assert.ok(m.validate(), "the stand-in module validates");
  const bytes = m.emitBinary();
  m.dispose();
  return new WebAssembly.Module(bytes);
}

describe("the shim's counting, with a stand-in module (Node.js)", () => {
  test("the first refusal stops counting; the request is decided again and limited() gets its bucket and seconds", async () => {
    const counted = [];
    const counter = {
      count: async (key, limit) => {
        counted.push(key);
        return key === "b:r:0" ? { allowed: false, remaining: 0, reset_secs: 61, retry_after_secs: 31 } : { allowed: true, remaining: 2, reset_secs: 20, retry_after_secs: 0 };
      },
    };
    const gateway = new Gateway(limitsModule(), { counter });
    const res = await gateway.fetch(new Request("http://gw/x"));
    assert.equal(res.status, 429);
    assert.deepEqual(await res.json(), { limit: "b" });
    assert.deepEqual(counted, ["a:s:0.x", "b:r:0"]);
    const e = gateway.instance.exports;
    assert.deepEqual([e.last_bucket(), e.last_retry(), e.last_reset()], [1, 31, 61]);
    assert.equal(gateway.instance.exports.handled(), 2, "decided again before limited");
  });

  test("a counter that fails refuses with 503; none bound, with 500; neither forwards", async () => {
    const failing = new Gateway(limitsModule(), { counter: { count: async () => Promise.reject(new Error("object unreachable")) } });
    const res = await failing.fetch(new Request("http://gw/x"));
    assert.equal(res.status, 503);
    assert.deepEqual(await res.json(), { error_description: "rate limit store unavailable" });
    const unbound = await new Gateway(limitsModule()).fetch(new Request("http://gw/x"));
    assert.equal(unbound.status, 500);
    assert.deepEqual(await unbound.json(), { error_description: "rate limits not bound" });
  });

  test("a bucket whose limit the table does not list is the module's failure (500), never forwarded", async () => {
    const gateway = new Gateway(limitsModule("limit a 3 60 3 1"), { counter: { count: async () => ({ allowed: true, remaining: 1, reset_secs: 1, retry_after_secs: 0 }) } });
    const res = await gateway.fetch(new Request("http://gw/x"));
    assert.equal(res.status, 500);
    assert.deepEqual(await res.json(), { error_description: "gateway module failed" });
  });
});

test("a refusal's decision line and data point name outcome rate_limited", () => {
  const lines = [];
  const points = [];
  const names = { rules: ["search"], routes: ["orders"], issuers: ["https://issuer.test"] };
  const observer = new Observer(names, { rate: 1, log: (l) => lines.push(JSON.parse(l)), dataset: { writeDataPoint: (p) => points.push(p) } });
  assert.equal(OUTCOMES[LIMIT_STORE_UNAVAILABLE], "limit_store_unavailable", "the outcome id gateway.mjs names");
  const labels = { outcome: OUTCOMES.indexOf("rate_limited"), rule: 0, route: 0, issuer: 0, cache: "none" };
  observer.write(observer.record(new Request("http://gw/search?q=1"), { labels, reason: "rate limit exceeded", status: 429 }));
  assert.deepEqual([lines[0].outcome, lines[0].rule, lines[0].status, lines[0].upstream_status], ["rate_limited", "search", 429, null]);
  assert.deepEqual([points[0].indexes, points[0].blobs.slice(0, 3), points[0].doubles.slice(0, 2)], [["rate_limited"], ["rate_limited", "search", "orders"], [429, 0]]);
});

/** The module built from testkit/fixture-limits.toml by `make fixture`. */
const LIMITS_WASM = join(ROOT, "target", "fixture", "gateway-limits.wasm");
/** testkit/fixture-limits.toml's demo key (TEST KEY: public, for tests only). */
const KEY = Buffer.from("TEST-ONLY-fixture-signing-key-0123456789");
const token = (claims) =>
  mintToken(KEY, { iss: "https://issuer.test", aud: "orders", exp: Math.floor(Date.now() / 1000) + 3600, ...claims }, { alg: "HS256", typ: "JWT", kid: "fixture" });

/** A recording upstream per route: what reached it, in order. */
async function startRecorder(routes) {
  const seen = [];
  const servers = [];
  const addresses = {};
  for (const route of routes) {
    const server = createServer((req, res) => {
      seen.push({ route, target: req.url, subject: req.headers["x-gateway-subject"] ?? null });
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    addresses[route] = `http://127.0.0.1:${server.address().port}`;
  }
  const close = () => Promise.all(servers.map((s) => new Promise((r) => (s.closeAllConnections(), s.close(() => r())))));
  return { seen, addresses, close };
}

/** Starts workerd with the limits fixture in front of a recorder; `options` as startWorkerd's. */
function gatewayWith(options) {
  const state = {};
  before(async () => {
    state.upstream = await startRecorder(["orders", "users"]);
    const { orders, users } = state.upstream.addresses;
    state.workerd = await startWorkerd(`orders=${orders},users=${users}`, LIMITS_WASM, { env: { GATEWAY_DECISION_LOG: "on" }, ...options });
  });
  after(async () => {
    await state.workerd?.proc.stop();
    await state.upstream?.close();
  });
  state.get = async (path, claims) => {
    const headers = claims ? { authorization: `Bearer ${token(claims)}` } : {};
    const res = await fetch(`http://127.0.0.1:${state.workerd.port}${path}`, { headers });
    return { status: res.status, headers: res.headers, body: await res.text() };
  };
  return state;
}

/** Asserts the module's 429 for `limit`, with retry-after at most `retryAtMost` seconds. */
function assertLimited(res, limit, policy, retryAtMost) {
  assert.equal(res.status, 429, res.body);
  const retry = Number(res.headers.get("retry-after"));
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= retryAtMost, `retry-after ${retry}`);
  assert.equal(res.headers.get("ratelimit-policy"), policy);
  assert.match(res.headers.get("ratelimit"), new RegExp(`^"${limit}";r=0;t=[1-9][0-9]*$`));
  assert.deepEqual(JSON.parse(res.body), { error_description: "rate limit exceeded", limit });
}

// The buckets kept as config.capnp keeps them (in memory), and on disk.
for (const storage of ["memory", "disk"]) describe(`workerd counting testkit/fixture-limits.toml in Durable Objects (${storage})`, () => {
  const gw = gatewayWith(storage === "disk" ? { limits: "disk" } : {});

  test("a subject's 4th request within a minute is refused and never reaches the upstream; another subject passes", async () => {
    for (const remaining of [2, 1, 0]) {
      const res = await gw.get("/orders/1", { sub: "alice" });
      assert.equal(res.status, 200, res.body);
      assert.equal(res.headers.get("ratelimit-policy"), '"per-user";q=3;w=60');
      assert.match(res.headers.get("ratelimit"), new RegExp(`^"per-user";r=${remaining};t=[1-9][0-9]*$`));
    }
    assertLimited(await gw.get("/orders/1", { sub: "alice" }), "per-user", '"per-user";q=3;w=60', 20);
    assert.equal(gw.upstream.seen.filter((s) => s.subject === "alice").length, 3);
    const bob = await gw.get("/orders/1", { sub: "bob" });
    assert.equal(bob.status, 200, bob.body);
    assert.match(bob.headers.get("ratelimit"), /^"per-user";r=2;t=/);
  });

  test("per tenant (a claim): its burst of 2 is shared by its subjects, and it adds no ratelimit field", async () => {
    for (const sub of ["t1", "t2"]) {
      const res = await gw.get("/tenants/7", { sub, tenant: "acme" });
      assert.equal(res.status, 200, res.body);
      assert.match(res.headers.get("ratelimit"), /^"per-user";r=2;t=[1-9][0-9]*$/, "per-user's alone (fields=0 for per-tenant)");
      assert.equal(res.headers.get("ratelimit-policy"), '"per-user";q=3;w=60');
    }
    const third = await gw.get("/tenants/7", { sub: "t3", tenant: "acme" });
    assert.equal(third.status, 429, third.body);
    assert.deepEqual(JSON.parse(third.body), { error_description: "rate limit exceeded", limit: "per-tenant" });
    assert.ok(!gw.upstream.seen.some((s) => s.subject === "t3"));
    // per-tenant refused first, so t3's per-user bucket was not counted.
    assert.match((await gw.get("/orders/1", { sub: "t3" })).headers.get("ratelimit"), /^"per-user";r=2;/);
    assert.equal((await gw.get("/tenants/7", { sub: "t4", tenant: "globex" })).status, 200, "another tenant");
  });

  test("per address on a public path: 4 an hour, then 429", async () => {
    for (let i = 0; i < 4; i++) assert.equal((await gw.get("/healthz")).status, 200);
    assertLimited(await gw.get("/healthz"), "per-address", '"per-address";q=4;w=3600', 900);
    assert.equal(gw.upstream.seen.filter((s) => s.target === "/healthz").length, 4);
    assert.equal((await gw.get("/open/x")).status, 200, "a public path without limits");
  });

  test("the route's bucket on /search is shared by every caller", async () => {
    for (const sub of ["s1", "s2"]) {
      const res = await gw.get("/search?q=1", { sub });
      assert.equal(res.status, 200, res.body);
      assert.match(res.headers.get("ratelimit"), /^"search";r=[01];t=[1-9][0-9]*$/);
    }
    for (const sub of ["s1", "s2", "s3"]) assertLimited(await gw.get("/search?q=1", { sub }), "search", '"search";q=2;w=60', 30);
    assert.equal(gw.upstream.seen.filter((s) => s.target.startsWith("/orders-svc/search")).length, 2);
  });

  test("each refusal is a decision line with outcome rate_limited and the forward's labels", async () => {
    await new Promise((r) => setTimeout(r, 200)); // workerd's stdout, flushed
    const lines = gw.workerd.proc
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l));
    const limited = lines.filter((l) => l.outcome === "rate_limited");
    assert.equal(limited.length, 6);
    for (const l of limited) assert.deepEqual([l.status, l.upstream_status, l.reason], [429, null, "rate limit exceeded"]);
    assert.deepEqual(limited.map((l) => l.rule), [null, "tenants", "health", "search", "search", "search"]);
    assert.deepEqual(limited.map((l) => l.route), ["orders", "orders", "users", "orders", "orders", "orders"]);
  });
});

describe("workerd without the LIMITS binding", () => {
  const gw = gatewayWith({ limits: false });

  test("a request in a limit is refused (500) with a log line, never forwarded; one outside every limit is", async () => {
    const res = await gw.get("/orders/1", { sub: "alice" });
    assert.equal(res.status, 500);
    assert.deepEqual(JSON.parse(res.body), { error_description: "rate limits not bound" });
    assert.equal((await gw.get("/open/x")).status, 200);
    assert.deepEqual(gw.upstream.seen.map((s) => s.target), ["/open/x"]);
    assert.match(gw.workerd.proc.output(), /the module limits requests \(per-user, per-tenant, per-address, search\) but no Durable Object namespace LIMITS is bound/);
    await new Promise((r) => setTimeout(r, 200)); // workerd's stdout, flushed
    const line = gw.workerd.proc.output().split("\n").find((l) => l.includes('"status":500'));
    assert.deepEqual(
      ((l) => [l.outcome, l.reason, l.route])(JSON.parse(line)),
      ["limit_store_unavailable", "rate limits not bound", "orders"],
    );
  });
});
