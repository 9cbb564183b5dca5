// What binding a token to its sender costs per request: the module built
// from testkit/fixture-dpop.toml in V8 (Node.js), one reused instance,
// deciding the same request with an HS256 bearer token, with a DPoP-bound
// HS256 token and its proof (ES256, EdDSA, RS256 with a 2048-bit key), and
// with a certificate-bound HS256 token over TLS with its certificate (the
// thumbprint in the context line), each request with a token and a proof
// never seen before (the token cache never answers), the kinds interleaved
// round by round so that they share the machine's state. A measurement,
// not a check.
//
//   make fixture && node benches/node/dpop.mjs [target/fixture/gateway-dpop.wasm] [out.json]
//
// With out.json (`make bench`), the nanoseconds per request of each kind
// are written there as `rows`, which `bench-tool report` reads.
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dpopToken, proof, proofKey } from "../../testkit/conformance/dpop-script.mjs";

const ROUNDS = 8;
const PER_ROUND = 200;
const modulePath = process.argv[2] ?? "target/fixture/gateway-dpop.wasm";
const outPath = process.argv[3];
const htu = "http://gw.test/orders/1";
const { instance } = await WebAssembly.instantiate(readFileSync(modulePath), {});
const gateway = instance.exports;
const encoder = new TextEncoder();

/** A client certificate's thumbprint, as a TLS host puts it in the context line. */
const certificate = randomBytes(32).toString("base64url");

/** Decides GET /orders/1 with `fields`, over plain HTTP or `over` a context line of its own. */
function handle({ fields, over = "http 127.0.0.1" }) {
  const head = encoder.encode(`${over}\nGET /orders/1 HTTP/1.1\r\nHost: gw.test\r\n${fields}\r\n`);
  new Uint8Array(gateway.memory.buffer, gateway.input_ptr(), head.length).set(head);
  return gateway.handle(head.length, Date.now() / 1000);
}

const KINDS = [
  { name: "bearer, HS256", row: "dpop_bearer", make: (i) => ({ fields: `Authorization: Bearer ${dpopToken({ sub: `b${i}` })}\r\n` }) },
  ...["ES256", "EdDSA", "RS256"].map((alg) => {
    const key = proofKey(alg);
    return {
      name: `DPoP, ${alg} proof`,
      row: `dpop_${alg.toLowerCase()}`,
      make: (i) => {
        const token = dpopToken({ sub: `d${i}`, cnf: { jkt: key.jkt } });
        return { fields: `Authorization: DPoP ${token}\r\nDPoP: ${proof(key, { htm: "GET", htu, token })}\r\n` };
      },
    };
  }),
  {
    name: "certificate-bound, over TLS",
    row: "dpop_certificate",
    make: (i) => {
      const token = dpopToken({ sub: `c${i}`, cnf: { "x5t#S256": certificate } });
      return { fields: `Authorization: Bearer ${token}\r\n`, over: `https 127.0.0.1 ${certificate}` };
    },
  },
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
if (outPath) {
  const rows = Object.fromEntries(KINDS.map((kind, k) => [kind.row, perCall[k] * 1000]));
  writeFileSync(outPath, JSON.stringify({ module: modulePath, node: process.version, rows }, null, 2));
}
