// The shim's own cost in V8 (the engine workerd embeds), measured in Node.js
// without any HTTP, on the test fixture's module (`make fixture`): writing
// the head, handle(), reading the output; and a whole rejected request
// through Gateway.fetch (head, decision, Response).
//
//   node deploy/workerd/bench-shim.mjs        (a few seconds, then exits)
import { readFileSync } from "node:fs";
import { Gateway, contextLine, requestHead } from "./gateway.mjs";
import { FIXTURE_WASM, mintToken, readFixture } from "./harness.mjs";

const c = readFixture();
const gateway = new Gateway(new WebAssembly.Module(readFileSync(FIXTURE_WASM)));
const exp = Math.floor(Date.now() / 1000) + 3600;
// Correctly signed, audience without a route: the whole verify path, then 401.
const token = mintToken(c.key, { iss: c.issuer, aud: "payroll", sub: "bench", exp }, { alg: "HS256", typ: "JWT", kid: c.kid });
const request = new Request("http://gw/orders/1?q=load", {
  headers: { authorization: `Bearer ${token}`, host: "gw", "user-agent": "bench" },
});
const head = contextLine(request) + requestHead(request);
if (gateway.instance.decide(head, Date.now() / 1000).status !== 401) throw new Error("expected 401 from the module");

const usPer = (n, t0) => (Number(process.hrtime.bigint() - t0) / n / 1000).toFixed(2);
for (let i = 0; i < 20000; i++) gateway.instance.decide(head, Date.now() / 1000);
let n = 200000;
let t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++) gateway.instance.decide(head, Date.now() / 1000);
console.log(`decide (write ${head.length}-byte head, handle, read output): ${usPer(n, t0)} us/request`);
n = 50000;
t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++) await gateway.fetch(request);
console.log(`Gateway.fetch, rejected (head, decision, Response): ${usPer(n, t0)} us/request`);
