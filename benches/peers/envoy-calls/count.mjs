// What the Envoy filter asks of its host per request: a proxy-wasm host in
// Node.js that makes Envoy's calls into the module for one HTTP stream
// (context create, request headers, response headers, response body, log,
// done, delete; a callback the module does not export is skipped, as
// Envoy's host does: proxy-wasm-cpp-host's ContextBase, src/context.cc)
// and counts the module's host calls, with the allocations Envoy makes
// through the module's `malloc` for the buffers it hands over. Counts only: the
// host here is JavaScript, so its timings say nothing about Envoy's.
//
//   node benches/peers/envoy-calls/count.mjs dist/gateway-envoy.wasm TOKEN
//
// TOKEN: `target/release/host-sim token --aud orders --sub load --exp-in 3600`
// (a forward), or the same with another token's signature (a reject).
import { benchmarkRequest, loadFilter } from "../../../deploy/envoy/mock-host.mjs";

const [, , wasmPath, token] = process.argv;
if (!wasmPath || !token) throw new Error("usage: count.mjs FILTER.wasm TOKEN");
const counts = new Map();
const request = benchmarkRequest(token);
const exports = loadFilter(wasmPath, request, (name) => counts.set(name, (counts.get(name) ?? 0) + 1));
counts.clear();

const stream = [
  ["proxy_on_context_create", [2, 1]], ["proxy_on_request_headers", [2, request.length, 1]],
  ["proxy_on_response_headers", [2, 3, 0]], ["proxy_on_response_body", [2, 100, 1]],
  ["proxy_on_log", [2]], ["proxy_on_done", [2]], ["proxy_on_delete", [2]],
];
const called = stream.filter(([name]) => typeof exports[name] === "function");
for (const [name, args] of called) exports[name](...args);
console.log(`calls into the VM: ${called.length} (${called.map(([n]) => n.replace("proxy_on_", "")).join(", ")})`);
const total = [...counts].filter(([n]) => n.startsWith("proxy_")).reduce((a, [, v]) => a + v, 0);
console.log(`host calls: ${total} (${[...counts].map(([n, v]) => `${n.replace("proxy_", "")} ${v}`).join(", ")})`);
