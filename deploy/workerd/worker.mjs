// The gateway as an ES-module Worker for workerd and Cloudflare Workers.
//
// `gateway.wasm` is dist/gateway.wasm, bound as a wasm module: importing it
// yields a compiled WebAssembly.Module. It is instantiated once per isolate,
// here at start-up, so a module of another ABI version stops the Worker from
// loading at all. See gateway.mjs for what happens per request.
import gatewayWasm from "./gateway.wasm";
import { Gateway, parseUpstreamOverride } from "./gateway.mjs";

const gateway = new Gateway(gatewayWasm);
let overrideText = null;

export default {
  /**
   * env.UPSTREAM_OVERRIDE (optional): "FROM=TO[,FROM=TO]" moves an origin
   * the module forwards to (FROM: a routed audience or an origin) to another
   * one; the local config reads it from the GATEWAY_UPSTREAM_OVERRIDE
   * environment variable. Unset in production.
   */
  fetch(request, env, ctx) {
    const text = env.UPSTREAM_OVERRIDE ?? "";
    if (text !== overrideText) {
      gateway.upstreamOverride = parseUpstreamOverride(text, gateway.routes());
      overrideText = text;
    }
    return gateway.fetch(request, ctx);
  },
};
