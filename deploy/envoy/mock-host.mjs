// A proxy-wasm host in Node.js for the Envoy filter, as much of one as a
// single request needs: the request's header map in proxy-wasm's
// serialization, the two connection properties the filter reads (a
// plain-text connection from 127.0.0.1:50000) and the clock, each buffer
// handed over through the module's `malloc`, as Envoy does. Every other
// host call answers Ok (0) and is seen by the caller's `onCall`. The
// benchmarks count the calls through it (benches/peers/envoy-calls/count.mjs)
// and time filters with it (time.mjs); test/ drives the filter's own code
// with it, without Envoy.
import { readFileSync } from "node:fs";

const encoder = new TextEncoder();

/** A header map in proxy-wasm's serialization. */
export function serialize(fields) {
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

/** The request the side-by-side benchmark sends, as Envoy's header map holds it. */
export function benchmarkRequest(token) {
  return [
    [":authority", "127.0.0.1:10000"], [":path", "/orders/1?q=load"], [":method", "GET"], [":scheme", "http"],
    ["user-agent", "oha/1.16.0"], ["accept", "*/*"], ["authorization", `Bearer ${token}`],
  ];
}

/** Each module compiled once, whatever the number of instances made of it. */
const modules = new Map();
function compiled(wasmPath) {
  if (!modules.has(wasmPath)) modules.set(wasmPath, new WebAssembly.Module(readFileSync(wasmPath)));
  return modules.get(wasmPath);
}

/**
 * Instantiates the filter at `wasmPath` for `request` (its fields) and
 * starts its VM and root context as Envoy does (each call only when the
 * module exports it). `onCall(name, args)` sees every host call, by name
 * and with its arguments.
 */
export function loadFilter(wasmPath, request, onCall = () => {}) {
  let exports;
  const map = serialize(request);
  const source = encoder.encode("127.0.0.1:50000");
  const view = () => new DataView(exports.memory.buffer);
  const give = (bytes, dataPtr, sizePtr) => {
    onCall("allocation callbacks");
    const at = exports.malloc(bytes.length) >>> 0;
    new Uint8Array(exports.memory.buffer, at, bytes.length).set(bytes);
    view().setUint32(dataPtr, at, true);
    view().setUint32(sizePtr, bytes.length, true);
    return 0;
  };
  const host = {
    proxy_get_header_map_pairs: (_type, dataPtr, sizePtr) => give(map, dataPtr, sizePtr),
    proxy_get_property: (pathPtr, pathLen, dataPtr, sizePtr) => {
      const path = new TextDecoder().decode(new Uint8Array(exports.memory.buffer, pathPtr, pathLen));
      // A plain-text connection has no TLS version: NotFound (1).
      return path === "source\0address" ? give(source, dataPtr, sizePtr) : 1;
    },
    proxy_get_current_time_nanoseconds: (ptr) => (view().setBigUint64(ptr, BigInt(Date.now()) * 1000000n, true), 0),
  };
  const imports = new Proxy({}, {
    get: (_, name) => (...args) => {
      onCall(name, args);
      return host[name] ? host[name](...args) : 0;
    },
  });
  exports = new WebAssembly.Instance(compiled(wasmPath), { env: imports }).exports;
  exports._initialize?.();
  exports.proxy_on_context_create?.(1, 0);
  exports.proxy_on_vm_start?.(1, 0);
  exports.proxy_on_configure?.(1, 0);
  return exports;
}
