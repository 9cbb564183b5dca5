// The gateway as an ES-module Worker for workerd and Cloudflare Workers.
//
// `gateway.wasm` is dist/gateway.wasm, bound as a wasm module: importing it
// yields a compiled WebAssembly.Module. It is instantiated once per isolate,
// here at start-up, so a module of another ABI version stops the Worker from
// loading at all. See gateway.mjs for what happens per request, and keys.mjs
// for the keys a module fetches at run time, and limits.mjs for the counting
// of rate limits, whose buckets the Durable Object class below keeps.
import { DurableObject } from "cloudflare:workers";
import gatewayWasm from "./gateway.wasm";
import { Gateway, parseUpstreamOverride } from "./gateway.mjs";
import { kvStore } from "./keys.mjs";
import { bindingCounter, bindingName, count, mustStore, readLimits } from "./limits.mjs";
import { Observer, labelNames, logRate } from "./observe.mjs";

const gateway = new Gateway(gatewayWasm);
let overrideText = null;
let boundKv = null;
let boundLog;
let boundDataset;
let boundEnv;
let warned = false;

/**
 * Applies the bindings, which the runtime hands over with each event:
 *
 * - env.UPSTREAM_OVERRIDE (optional): "FROM=TO[,FROM=TO]" moves an origin
 *   the module forwards to or fetches keys from (FROM: a routed audience or
 *   an origin) to another one; the local config reads it from the
 *   GATEWAY_UPSTREAM_OVERRIDE environment variable. Unset in production.
 * - env.KEYS (optional, Cloudflare): a KV namespace the isolates share the
 *   fetched JWKS documents through (README.md, "On Cloudflare").
 * - env.DECISION_LOG (optional): "off" (default), "on", or a share between
 *   0 and 1 of decisions to log as JSON lines (observe.mjs).
 * - env.DECISIONS (optional): a Workers Analytics Engine dataset that gets
 *   one data point per decision.
 * - env.ISSUER (optional): the `iss` of the config the module was built
 *   from, naming the one issuer of a module without a label table (no
 *   rules, one issuer, no fetched keys) in the log lines and data points;
 *   `0` without it.
 * - env.LIMITS: the Durable Object namespace of GatewayLimiter, which
 *   counts the buckets of a module with limits; a Workers Rate Limiting
 *   binding RATE_LIMIT_<NAME> (Cloudflare) counts its limit instead
 *   (limits.mjs). A module with limits and neither refuses every request
 *   in them (500) and says so in the log.
 */
function bind(env) {
  const text = env.UPSTREAM_OVERRIDE ?? "";
  if (text !== overrideText) {
    gateway.upstreamOverride = parseUpstreamOverride(text, gateway.routes());
    overrideText = text;
  }
  const log = env.DECISION_LOG ?? null;
  const dataset = env.DECISIONS ?? null;
  if (log !== boundLog || dataset !== boundDataset) {
    const names = labelNames(gateway.routes(), gateway.labelTable(), env.ISSUER ?? null);
    gateway.observer = new Observer(names, { rate: logRate(log), dataset });
    [boundLog, boundDataset] = [log, dataset];
  }
  if (env !== boundEnv) {
    gateway.counter = bindingCounter(env);
    gateway.limits ??= readLimits(gateway.labelTable());
    const missing = gateway.limits.filter((l) => l !== null && !env.LIMITS && !env[bindingName(l.name)]);
    if (missing.length > 0 && !warned) {
      const names = missing.map((l) => l.name).join(", ");
      console.error(`gateway: the module limits requests (${names}) but no Durable Object namespace LIMITS is bound: those requests are refused with 500 (deploy/workerd/README.md, "Rate limits")`);
      warned = true;
    }
    boundEnv = env;
  }
  const kv = env.KEYS ?? null;
  if (gateway.keys !== null && kv !== boundKv) {
    gateway.keys.store = kv === null ? null : kvStore(kv);
    boundKv = kv;
  }
}

export default {
  fetch(request, env, ctx) {
    bind(env);
    return gateway.fetch(request, ctx);
  },

  /**
   * A Cron Trigger (Cloudflare; workerd runs no cron): fetches every key
   * source from its provider and, with env.KEYS bound, stores each document
   * for the isolates that serve. Nothing to do for a module that fetches no
   * keys.
   */
  scheduled(controller, env, ctx) {
    bind(env);
    if (gateway.keys !== null) ctx.waitUntil(gateway.keys.refreshAll());
  },
};

/** What the Worker gets back of a verdict (no BigInt). */
const reply = ({ allowed, remaining, reset_secs: reset, retry_after_secs: retry }) => ({ allowed, remaining, reset_secs: reset, retry_after_secs: retry });

/**
 * One rate-limit bucket (ABI.md, "Rate limits"): the object named by the
 * bucket's key (`LIMITS.idFromName(key)`) holds its TAT and counts each
 * request with GCRA (limits.mjs) at its own clock, one request at a time.
 * The TAT lives in memory and, once it is 10 s or more ahead, in
 * `ctx.storage`, so an object evicted while idle starts again from it. The
 * write is not waited for (`allowUnconfirmed`: a count lost in a crash lets
 * at most that request's budget through again). An alarm at the TAT deletes
 * the stored value once it is in the past, when it says nothing any more:
 * a bucket left alone keeps no storage.
 */
export class GatewayLimiter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    /** The bucket's TAT in microseconds (BigInt), 0n for a full bucket. */
    this.tat = 0n;
    /** Whether an alarm is set (it is re-armed, not set again, while the TAT moves on). */
    this.alarmSet = false;
    ctx.blockConcurrencyWhile(async () => {
      const [stored, alarm] = await Promise.all([ctx.storage.get("tat"), ctx.storage.getAlarm()]);
      this.tat = stored === undefined ? 0n : BigInt(stored);
      this.alarmSet = alarm !== null;
    });
  }

  /**
   * Counts one request with `limit` ({ requests, per_secs, burst }) now:
   * `{ allowed, remaining, reset_secs, retry_after_secs }`.
   */
  count(limit) {
    const now = BigInt(Date.now()) * 1000n;
    const verdict = count(limit, this.tat, now);
    if (verdict.allowed) this.tat = verdict.tat_us;
    if (mustStore(verdict, now)) {
      this.ctx.storage.put("tat", this.tat.toString(), { allowUnconfirmed: true });
      if (!this.alarmSet) {
        this.ctx.storage.setAlarm(Number(this.tat / 1000n) + 1, { allowUnconfirmed: true });
        this.alarmSet = true;
      }
    }
    return reply(verdict);
  }

  /** At the TAT: forgets a bucket whose TAT has passed, else waits for the new one. */
  async alarm() {
    const tatMs = Number(this.tat / 1000n) + 1;
    if (tatMs > Date.now()) {
      await this.ctx.storage.setAlarm(tatMs);
      return;
    }
    this.alarmSet = false;
    this.tat = 0n;
    await this.ctx.storage.deleteAll();
  }
}
