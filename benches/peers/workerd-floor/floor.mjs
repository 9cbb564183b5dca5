// The floor of the gateway shim in workerd: a Worker that decides nothing
// and does, level by level, the shim's own work for a forwarded request with
// the shim's own code (deploy/workerd/gateway.mjs), so that
// benches/gateways.sh can show what each step costs workerd over a trivial
// fetch proxy (benches/peers/workerd-proxy):
//   0  the shim's forward with a plan that changes no field: the request's
//      fields copied into a new Headers, fetch() with the method, the
//      fields and the body
//   1  + the plan's field edits for the benchmark's token (drop
//      Authorization and Host, set X-Gateway-Subject and X-Forwarded-*)
//   2  + the module's input: the context line (request.cf) and the request
//      head, written into the instance's input buffer
// The gateway itself (benches/gateways.sh `workerd`) adds the module's
// decision and reading it. env.FLOOR_LEVEL picks the level;
// env.UPSTREAM_OVERRIDE moves the route's origin as for the gateway.
import gatewayWasm from "./gateway.wasm";
import { Gateway, contextLine, parseUpstreamOverride, requestHead, requestTarget } from "./gateway.mjs";

const gateway = new Gateway(gatewayWasm);
const encoder = new TextEncoder();
let bound = null;
// The origin of the orders route, where the module sends the benchmark's
// request, read once: the floor adds no work the shim does not do.
const [, ordersUpstream] = gateway.routes().find(([aud]) => aud === "orders");
const origin = new URL(ordersUpstream).origin;
/** The plan's field edits, made once from the first request (every request of the benchmark has the same Host). */
let edits = null;

/** The forward plan (worker/ABI.md) the module makes for the benchmark's request. */
function plan(request, level) {
  const path = requestTarget(request.url);
  if (level < 1) return { origin, path, drop: [], set: [], responseDrop: [], responseAdd: [] };
  edits ??= {
    drop: ["authorization", "host"],
    set: [
      ["x-gateway-subject", "load"],
      ["x-forwarded-for", "127.0.0.1"],
      ["x-forwarded-proto", "http"],
      ["x-forwarded-host", request.headers.get("host") ?? ""],
    ],
  };
  return { origin, path, ...edits, responseDrop: [], responseAdd: [] };
}

export default {
  fetch(request, env) {
    if (bound !== env.UPSTREAM_OVERRIDE) {
      gateway.upstreamOverride = parseUpstreamOverride(env.UPSTREAM_OVERRIDE, gateway.routes());
      bound = env.UPSTREAM_OVERRIDE;
    }
    const level = Number(env.FLOOR_LEVEL);
    if (level >= 2) {
      const instance = gateway.instance;
      encoder.encodeInto(contextLine(request) + requestHead(request), instance.input);
    }
    return gateway.forward(request, plan(request, level));
  },
};
