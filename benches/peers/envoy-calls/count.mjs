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
import { readFileSync } from "node:fs";

const [, , wasmPath, token] = process.argv;
if (!wasmPath || !token) throw new Error("usage: count.mjs FILTER.wasm TOKEN");
const encoder = new TextEncoder();
const counts = new Map();
let exports;
const view = () => new DataView(exports.memory.buffer);

/** Copies `bytes` into the module through its allocator, as Envoy does for a returned buffer. */
function give(bytes, dataPtr, sizePtr) {
  counts.set("allocation callbacks", (counts.get("allocation callbacks") ?? 0) + 1);
  const at = exports.malloc(bytes.length) >>> 0;
  new Uint8Array(exports.memory.buffer, at, bytes.length).set(bytes);
  view().setUint32(dataPtr, at, true);
  view().setUint32(sizePtr, bytes.length, true);
  return 0;
}

/** A header map in proxy-wasm's serialization. */
function serialize(fields) {
  const parts = fields.map(([n, v]) => [encoder.encode(n), encoder.encode(v)]);
  const out = new Uint8Array(4 + parts.length * 8 + parts.reduce((a, [n, v]) => a + n.length + v.length + 2, 0));
  const d = new DataView(out.buffer);
  d.setUint32(0, parts.length, true);
  let at = 4;
  for (const [n, v] of parts) {
    d.setUint32(at, n.length, true);
    d.setUint32(at + 4, v.length, true);
    at += 8;
  }
  for (const [n, v] of parts) {
    out.set(n, at);
    out.set(v, at + n.length + 1);
    at += n.length + v.length + 2;
  }
  return out;
}

// The request the side-by-side benchmark sends, as Envoy's header map holds it.
const request = [
  [":authority", "127.0.0.1:10000"], [":path", "/orders/1?q=load"], [":method", "GET"], [":scheme", "http"],
  ["user-agent", "oha/1.16.0"], ["accept", "*/*"], ["authorization", `Bearer ${token}`],
];
const host = {
  proxy_get_header_map_pairs: (_type, dataPtr, sizePtr) => give(serialize(request), dataPtr, sizePtr),
  proxy_get_property: (pathPtr, pathLen, dataPtr, sizePtr) => {
    const path = new TextDecoder().decode(new Uint8Array(exports.memory.buffer, pathPtr, pathLen));
    // A plain-text connection has no TLS version: NotFound (1).
    return path === "source\0address" ? give(encoder.encode("127.0.0.1:50000"), dataPtr, sizePtr) : 1;
  },
  proxy_get_current_time_nanoseconds: (ptr) => (view().setBigUint64(ptr, BigInt(Date.now()) * 1000000n, true), 0),
};
const imports = new Proxy({}, {
  get: (_, name) => (...args) => {
    counts.set(name, (counts.get(name) ?? 0) + 1);
    return host[name] ? host[name](...args) : 0;
  },
});
exports = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(wasmPath)), { env: imports }).exports;
// The VM's start and its root context, as Envoy makes them: each call only
// when the module exports it.
exports._initialize?.();
exports.proxy_on_context_create?.(1, 0);
exports.proxy_on_vm_start?.(1, 0);
exports.proxy_on_configure?.(1, 0);
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
