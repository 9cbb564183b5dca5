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
import { describe, test } from "node:test";
import { ROOT } from "../harness.mjs";
import { LimitsNotBound, bindingCounter, bindingName, count, countBuckets, intervalUs, ratelimitField, readLimits } from "../limits.mjs";

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
