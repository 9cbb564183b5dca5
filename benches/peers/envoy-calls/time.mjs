// The Envoy filter's own work per request, in Node.js's V8: the calls
// Envoy makes into the module for one stream's request headers (context
// create, request headers, delete: each when exported), repeated, with the
// host's calls answered by deploy/envoy/mock-host.mjs. The host is JavaScript, so the
// figures leave out what Envoy's host calls cost (benches/gateways.sh's
// envoy-floor gateways measure those); they compare filters side by side.
//
//   node benches/peers/envoy-calls/time.mjs TOKEN A.wasm [B.wasm ...]
//
// Rounds alternate between the filters; each prints its median µs per
// request and its ratio to the first. TOKEN as for count.mjs: a valid token
// (a forward; a reused instance's cache hit after the first) or one with
// another token's signature (a reject, the whole HMAC check every time).
import { benchmarkRequest, loadFilter } from "../../../deploy/envoy/mock-host.mjs";

const [, , token, ...wasmPaths] = process.argv;
if (!token || wasmPaths.length === 0) throw new Error("usage: time.mjs TOKEN A.wasm [B.wasm ...]");
const ROUNDS = 7;
const PER_ROUND = 50000;
const request = benchmarkRequest(token);
const filters = wasmPaths.map((path) => [path, loadFilter(path, request)]);
const stream = (e) => {
  e.proxy_on_context_create?.(2, 1);
  e.proxy_on_request_headers(2, request.length, 1);
  e.proxy_on_delete?.(2);
};
const times = new Map(wasmPaths.map((path) => [path, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [path, e] of filters) {
    for (let i = 0; i < 2000; i++) stream(e);
    const start = process.hrtime.bigint();
    for (let i = 0; i < PER_ROUND; i++) stream(e);
    times.get(path).push(Number(process.hrtime.bigint() - start) / 1000 / PER_ROUND);
  }
}
const median = (values) => values.slice().sort((a, b) => a - b)[values.length >> 1];
const first = median(times.get(wasmPaths[0]));
console.log(`node ${process.version}, ${ROUNDS} rounds of ${PER_ROUND} requests per filter, alternating`);
for (const [path, values] of times) {
  console.log(`${path}: ${median(values).toFixed(3)} µs per request (${(median(values) / first).toFixed(3)}x)`);
}
