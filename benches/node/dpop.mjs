// What a DPoP proof costs per request: the module built from
// testkit/fixture-dpop.toml in V8 (Node.js), one reused instance, deciding
// the same request with an HS256 bearer token and with a DPoP-bound HS256
// token and its proof (ES256, EdDSA), each request with a token and a
// proof never seen before (the token cache never answers), the kinds
// interleaved round by round so that they share the machine's state. A
// measurement, not a check.
//
//   make fixture && node benches/node/dpop.mjs [target/fixture/gateway-dpop.wasm]
import { readFileSync } from "node:fs";
import { dpopToken, proof, proofKey } from "../../testkit/conformance/dpop-script.mjs";

const ROUNDS = 8;
const PER_ROUND = 200;
const modulePath = process.argv[2] ?? "target/fixture/gateway-dpop.wasm";
const htu = "http://gw.test/orders/1";
const { instance } = await WebAssembly.instantiate(readFileSync(modulePath), {});
const gateway = instance.exports;
const encoder = new TextEncoder();

function handle(fields) {
  const head = encoder.encode(`http 127.0.0.1\nGET /orders/1 HTTP/1.1\r\nHost: gw.test\r\n${fields}\r\n`);
  new Uint8Array(gateway.memory.buffer, gateway.input_ptr(), head.length).set(head);
  return gateway.handle(head.length, Date.now() / 1000);
}

const KINDS = [
  { name: "bearer, HS256", make: (i) => `Authorization: Bearer ${dpopToken({ sub: `b${i}` })}\r\n` },
  ...["ES256", "EdDSA"].map((alg) => {
    const key = proofKey(alg);
    return {
      name: `DPoP, ${alg} proof`,
      make: (i) => {
        const token = dpopToken({ sub: `d${i}`, cnf: { jkt: key.jkt } });
        return `Authorization: DPoP ${token}\r\nDPoP: ${proof(key, { htm: "GET", htu, token })}\r\n`;
      },
    };
  }),
];

const requests = KINDS.map((kind) => Array.from({ length: ROUNDS * PER_ROUND + PER_ROUND }, (_, i) => kind.make(i)));
const totals = KINDS.map(() => 0n);
for (const [k, fields] of requests.entries()) {
  // Warm-up, and a check that each kind is forwarded.
  for (const f of fields.slice(0, PER_ROUND)) {
    if (handle(f) !== 200) throw new Error(`${KINDS[k].name}: the module answered ${handle(f)}`);
  }
}
for (let round = 0; round < ROUNDS; round++) {
  for (const [k, fields] of requests.entries()) {
    const batch = fields.slice(PER_ROUND * (round + 1), PER_ROUND * (round + 2));
    const start = process.hrtime.bigint();
    for (const f of batch) handle(f);
    totals[k] += process.hrtime.bigint() - start;
  }
}
const perCall = totals.map((t) => Number(t) / (ROUNDS * PER_ROUND) / 1000);
console.log(`node ${process.version}, ${ROUNDS} x ${PER_ROUND} requests per kind, interleaved, ${modulePath}`);
console.log("| request | µs per request | against bearer |");
console.log("|---|---:|---:|");
for (const [k, kind] of KINDS.entries()) {
  console.log(`| ${kind.name} | ${perCall[k].toFixed(1)} | ${(perCall[k] / perCall[0]).toFixed(2)}x |`);
}
