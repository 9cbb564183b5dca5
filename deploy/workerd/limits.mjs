// Rate-limit counting for the JavaScript hosts, as worker/ABI.md ("Rate
// limits") and contract/src/limits.rs define it: the limit lines of the
// module's label table, GCRA (one TAT per bucket, in microseconds), and the
// RateLimit field of a forwarded response. test/limits-gcra.test.mjs holds
// `count` to contract/golden/limits.json. Pure functions: the Durable
// Object (worker.mjs) keeps the TAT, and gateway.mjs decides with them.

const U32_MAX = 0xffffffffn;
const U64_MAX = 0xffffffffffffffffn;
const MICROS = 1000000n;

/** A decimal number as the contract writes it (digits, no leading zero, at most u32::MAX), or null. */
function number(word) {
  if (!/^(0|[1-9][0-9]*)$/.test(word ?? "")) return null;
  const n = Number(word);
  return n <= 0xffffffff ? n : null;
}

/**
 * The rest of a `limit` line (`<name> <requests> <per_secs> <burst>
 * <fields>`) as `{ name, requests, per_secs, burst, fields }`, or null when
 * it breaks the format (contract::limits::Limit::parse).
 */
export function parseLimit(rest) {
  const parts = rest.split(" ");
  if (parts.length !== 5) return null;
  const [name, ...numbers] = parts;
  const [requests, perSecs, burst] = numbers.slice(0, 3).map(number);
  const fields = { 1: true, 0: false }[numbers[3]];
  if (name === "" || !(requests > 0 && perSecs > 0 && burst > 0) || fields === undefined) return null;
  return { name, requests, per_secs: perSecs, burst, fields };
}

/**
 * The limits of a module's label table (`labels` export), in index order:
 * a limit, or null for a line that breaks the format.
 */
export function readLimits(table) {
  return table
    .split("\n")
    .filter((line) => line.startsWith("limit "))
    .map((line) => parseLimit(line.slice("limit ".length)));
}

/** The time one request uses of the budget, in microseconds (a BigInt, at least 1). */
export function intervalUs(limit) {
  const per = BigInt(limit.per_secs) * MICROS;
  const requests = BigInt(limit.requests);
  const interval = (per + requests - 1n) / requests;
  return interval > 0n ? interval : 1n;
}

const min = (a, b) => (a < b ? a : b);
const max = (a, b) => (a > b ? a : b);
/** Microseconds as whole seconds, rounded up, at most u32::MAX (a Number). */
const secsUp = (us) => Number(min((us + MICROS - 1n) / MICROS, U32_MAX));

/**
 * GCRA (contract::limits::gcra): a request at `nowUs` passes when the
 * bucket's TAT, advanced by one `interval`, is at most `burst` intervals
 * ahead of now. Times are BigInt microseconds (`storedTatUs` 0: a bucket
 * never seen); returns `{ allowed, tat_us (BigInt), remaining,
 * reset_secs, retry_after_secs }`.
 */
export function gcra(storedTatUs, nowUs, interval, burst) {
  const tolerance = min(interval * BigInt(burst), U64_MAX);
  const tat = max(storedTatUs, nowUs);
  const next = min(tat + interval, U64_MAX);
  const horizon = min(nowUs + tolerance, U64_MAX);
  if (next > horizon) {
    const retry = secsUp(next - horizon);
    return { allowed: false, tat_us: storedTatUs, remaining: 0, reset_secs: secsUp(tat - nowUs), retry_after_secs: Math.max(retry, 1) };
  }
  const remaining = Number(min((horizon - next) / interval, U32_MAX));
  return { allowed: true, tat_us: next, remaining, reset_secs: secsUp(next - nowUs), retry_after_secs: 0 };
}

/** Counts one request of `limit` at `nowUs` in a bucket whose stored TAT is `storedTatUs` (BigInts). */
export function count(limit, storedTatUs, nowUs) {
  return gcra(BigInt(storedTatUs), BigInt(nowUs), intervalUs(limit), limit.burst);
}

/**
 * How far ahead of now (µs) a bucket's TAT must be to be stored: workerd
 * and Cloudflare evict an idle object only after 10 s without requests, and
 * a TAT closer than that has passed by then (a restart, such as a
 * deployment, loses at most that much of a count).
 */
export const UNSTORED_AHEAD_US = 10000000n;

/** Whether a Durable Object stores the TAT of `verdict`, counted at `nowUs`: allowed, and 10 s or more ahead. */
export function mustStore(verdict, nowUs) {
  return verdict.allowed && verdict.tat_us - BigInt(nowUs) >= UNSTORED_AHEAD_US;
}

/** The value of the `ratelimit` field for `limit` after `verdict`: `"<name>";r=<remaining>;t=<reset>`. */
export function ratelimitField(limit, verdict) {
  return `"${limit.name}";r=${verdict.remaining};t=${verdict.reset_secs}`;
}

/** Counting is impossible: no counter is bound for a limit the module names. */
export class LimitsNotBound extends Error {
  constructor(limit) {
    super(`limit "${limit}": neither the Durable Object namespace LIMITS nor a Workers Rate Limiting binding ${bindingName(limit)} is bound`);
    this.name = "LimitsNotBound";
  }
}

/**
 * The name of the Workers Rate Limiting binding (Cloudflare only) that
 * counts the limit `name` instead of the Durable Object: `RATE_LIMIT_` and
 * the name in upper case, every other character than A-Z and 0-9 as `_`
 * (`per-user`: RATE_LIMIT_PER_USER).
 */
export function bindingName(name) {
  return `RATE_LIMIT_${name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

/** How many Durable Object ids a counter keeps. */
const IDS_KEPT = 4096;

/**
 * The counter of a Worker's bindings: `count(key, limit)` resolves to a
 * verdict (`{ allowed, remaining, reset_secs, retry_after_secs }`).
 *
 * - A Workers Rate Limiting binding named for the limit (`bindingName`),
 *   when bound, counts it: per Cloudflare location, with its own
 *   `limit`/`period` (10 or 60 s) from wrangler.toml and no burst. It tells
 *   only whether the request passes, so the verdict has no `remaining`
 *   (null: no `ratelimit` field) and a refusal waits the limit's period.
 * - Otherwise the Durable Object namespace `LIMITS` (class GatewayLimiter,
 *   worker.mjs): the object named by the key counts with GCRA.
 * - With neither, `count` throws LimitsNotBound: the gateway refuses the
 *   request rather than forward it uncounted.
 */
export function bindingCounter(env) {
  const namespace = env.LIMITS ?? null;
  /**
   * The objects' ids by key, derived once (bounded: emptied when full). A
   * stub belongs to the request that made it, so each request gets its own.
   */
  const ids = new Map();
  const stub = (key) => {
    let id = ids.get(key);
    if (id === undefined) {
      if (ids.size >= IDS_KEPT) ids.clear();
      id = namespace.idFromName(key);
      ids.set(key, id);
    }
    return namespace.get(id);
  };
  return {
    async count(key, limit) {
      const binding = env[bindingName(limit.name)];
      if (binding != null && typeof binding.limit === "function") {
        const { success } = await binding.limit({ key });
        const wait = limit.per_secs;
        return success
          ? { allowed: true, remaining: null, reset_secs: wait, retry_after_secs: 0 }
          : { allowed: false, remaining: 0, reset_secs: wait, retry_after_secs: wait };
      }
      if (namespace === null) throw new LimitsNotBound(limit.name);
      const { requests, per_secs: perSecs, burst } = limit;
      return stub(key).count({ requests, per_secs: perSecs, burst });
    },
  };
}

/** Thrown for a bucket whose limit the module's label table does not list. */
export class UnknownLimit extends Error {
  constructor(index) {
    super(`the module names limit ${index}, which its label table does not list`);
    this.name = "UnknownLimit";
  }
}

/**
 * Counts a forward's buckets (`[{ limit, key }]`) in order with `counter`,
 * `limits` the module's limit table, and stops at the first refusal:
 * `{ refused: <bucket position>, verdict }`, or `{ fields }` when all
 * allow, the `ratelimit` values of the limits whose fields are on.
 */
export async function countBuckets(buckets, limits, counter) {
  const fields = [];
  for (let i = 0; i < buckets.length; i++) {
    const limit = limits[buckets[i].limit];
    if (!limit) throw new UnknownLimit(buckets[i].limit);
    const verdict = await counter.count(buckets[i].key, limit);
    if (!verdict.allowed) return { refused: i, verdict };
    if (limit.fields && verdict.remaining !== null) fields.push(ratelimitField(limit, verdict));
  }
  return { fields };
}
