// The floor of a proxy-wasm filter in Envoy: four modules that decide
// nothing and make, step by step, the host calls the gateway filter makes
// for a forwarded request (node benches/peers/envoy-calls/count.mjs counts
// them), so that benches/gateways.sh can show what Envoy's wasm host costs
// before any of the filter's own work:
//   0  one call into the VM (proxy_on_request_headers), no host call
//   1  + the request's header map (proxy_get_header_map_pairs, through the
//        module's malloc)
//   2  + the two connection properties and the clock
//   3  + the filter's edits of a forward: 2 removes and 5 replaces
//   3p level 2, then the forward's whole header map written back in one
//        proxy_set_header_map_pairs instead of the 7 edits
//   r  level 2, then the filter's answer to the benchmark's bad signature
//        (proxy_send_local_response: 401, its two fields and its body),
//        for every request: the floor of a reject
// Levels 0 to 3p answer Continue and the bootstrap routes every request to
// the upstream (gateways.sh, the envoy-floor gateways); level r answers
// Pause, as the filter does after a local response.
//
//   node benches/peers/envoy-floor/floor.mjs LEVEL OUT.wat   (LEVEL: 0, 1, 2, 3, 3p or r)
//
// The text is WebAssembly's; binaryen's wasm-as (node_modules) assembles it.
import { writeFileSync } from "node:fs";

import { serialize } from "../../../deploy/envoy/mock-host.mjs";

const [, , levelArg, out] = process.argv;
if (!["0", "1", "2", "3", "3p", "r"].includes(levelArg) || !out) throw new Error("usage: floor.mjs LEVEL(0, 1, 2, 3, 3p, r) OUT.wat");
const reject = levelArg === "r";
const level = reject ? 2 : Number.parseInt(levelArg, 10);
const pairs = levelArg === "3p";

// The constants the calls name, laid out from offset 1024 of the memory.
const strings = {
  source: "source\0address",
  tls: "connection\0tls_version",
  authorization: "authorization",
  subject: "x-gateway-subject",
  xff: "x-forwarded-for",
  xfh: "x-forwarded-host",
  xfp: "x-forwarded-proto",
  upstream: "x-gateway-upstream",
  peer: "127.0.0.1",
  proto: "http",
  sub: "load",
  origin: "http://127.0.0.1:9101",
  // The body the filter sends for the benchmark's reject (host-sim eval of
  // the same request gives the same answer).
  body: '{"error":"invalid_token","error_description":"signature mismatch"}',
};
const at = {};
const data = [];
let offset = 1024;
for (const [name, text] of Object.entries(strings)) {
  at[name] = [offset, text.length];
  const escaped = [...Buffer.from(text, "latin1")].map((b) => "\\" + b.toString(16).padStart(2, "0")).join("");
  data.push(`  (data (i32.const ${offset}) "${escaped}")`);
  offset += text.length + 8;
}
// Level 3p's header map: the forwarded request's fields, serialized as
// proxy-wasm does (a count, each name's and value's length, then each name
// and value followed by a NUL; deploy/envoy/mock-host.mjs's `serialize`).
const forwarded = [
  [":authority", "127.0.0.1:10000"], [":path", "/orders/1?q=load"], [":method", "GET"], [":scheme", "http"],
  ["user-agent", "oha/1.16.0"], ["accept", "*/*"], ["x-forwarded-for", "127.0.0.1"],
  ["x-forwarded-host", "127.0.0.1:10000"], ["x-forwarded-proto", "http"], ["x-gateway-subject", "load"],
  ["x-gateway-upstream", "http://127.0.0.1:9101"],
];
const map = serialize(forwarded);
const mapAt = offset;
data.push(`  (data (i32.const ${mapAt}) "${[...map].map((b) => "\\" + b.toString(16).padStart(2, "0")).join("")}")`);
offset += map.length + 8;
// Level r's answer fields, serialized the same way.
const answer = serialize([
  ["www-authenticate", 'Bearer realm="gateway", error="invalid_token", error_description="signature mismatch"'],
  ["content-type", "application/json"],
]);
const answerAt = offset;
data.push(`  (data (i32.const ${answerAt}) "${[...answer].map((b) => "\\" + b.toString(16).padStart(2, "0")).join("")}")`);

const c = (n) => `(i32.const ${n})`;
const str = (name) => `${c(at[name][0])} ${c(at[name][1])}`;

const calls = [];
if (level >= 1) calls.push(`(drop (call $map ${c(0)} ${c(16)} ${c(20)}))`);
if (level >= 2) {
  calls.push(`(drop (call $property ${str("tls")} ${c(24)} ${c(28)}))`);
  calls.push(`(drop (call $property ${str("source")} ${c(24)} ${c(28)}))`);
  calls.push(`(drop (call $now ${c(32)}))`);
}
if (pairs) calls.push(`(drop (call $setMap ${c(0)} ${c(mapAt)} ${c(map.length)}))`);
if (reject) {
  // status 401, no details, the body, the fields, no gRPC status.
  calls.push(`(drop (call $reply ${c(401)} ${c(0)} ${c(0)} ${str("body")} ${c(answerAt)} ${c(answer.length)} ${c(-1)}))`);
}
if (level >= 3 && !pairs) {
  for (const name of ["authorization", "subject"]) calls.push(`(drop (call $remove ${c(0)} ${str(name)}))`);
  for (const [name, value] of [["xff", "peer"], ["xfh", "peer"], ["xfp", "proto"], ["subject", "sub"], ["upstream", "origin"]]) {
    calls.push(`(drop (call $replace ${c(0)} ${str(name)} ${str(value)}))`);
  }
}

writeFileSync(
  out,
  `(module
  (import "env" "proxy_get_header_map_pairs" (func $map (param i32 i32 i32) (result i32)))
  (import "env" "proxy_get_property" (func $property (param i32 i32 i32 i32) (result i32)))
  (import "env" "proxy_get_current_time_nanoseconds" (func $now (param i32) (result i32)))
  (import "env" "proxy_remove_header_map_value" (func $remove (param i32 i32 i32) (result i32)))
  (import "env" "proxy_replace_header_map_value" (func $replace (param i32 i32 i32 i32 i32) (result i32)))
  (import "env" "proxy_set_header_map_pairs" (func $setMap (param i32 i32 i32) (result i32)))
  (import "env" "proxy_send_local_response" (func $reply (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2)
${data.join("\n")}
  ;; A bump allocator for the buffers Envoy hands over, wrapping at 128 KiB.
  (global $next (mut i32) (i32.const 4096))
  (func (export "proxy_abi_version_0_2_1"))
  (func (export "proxy_on_vm_start") (param i32 i32) (result i32) (i32.const 1))
  (func (export "proxy_on_configure") (param i32 i32) (result i32) (i32.const 1))
  (func (export "malloc") (param $size i32) (result i32) (local $at i32)
    (if (i32.gt_u (i32.add (global.get $next) (local.get $size)) (i32.const 131072))
      (then (global.set $next (i32.const 4096))))
    (local.set $at (global.get $next))
    (global.set $next (i32.add (global.get $next) (i32.and (i32.add (local.get $size) (i32.const 7)) (i32.const -8))))
    (local.get $at))
  (func (export "proxy_on_request_headers") (param i32 i32 i32) (result i32)
    ${calls.join("\n    ")}
    ${c(reject ? 1 : 0)})
)
`,
);
