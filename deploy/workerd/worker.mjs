// The gateway as an ES-module Worker for workerd and Cloudflare Workers.
//
// `gateway.wasm` is dist/gateway.wasm, bound as a wasm module: importing it
// yields a compiled WebAssembly.Module. It is instantiated once per isolate,
// here at start-up, so a module of another ABI version stops the Worker from
// loading at all. See gateway.mjs for what happens per request, and keys.mjs
// for the keys a module fetches at run time.
import gatewayWasm from "./gateway.wasm";
import { Gateway, parseUpstreamOverride } from "./gateway.mjs";
import { kvStore } from "./keys.mjs";
import { Observer, labelNames, logRate } from "./observe.mjs";

const gateway = new Gateway(gatewayWasm);
let overrideText = null;
let boundKv = null;
let boundLog;
let boundDataset;

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
