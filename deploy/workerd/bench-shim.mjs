// The shim's own cost in V8 (the engine workerd embeds), measured in Node.js
// without any HTTP, on the test fixture's module (`make fixture`): writing
// the head, handle(), reading the output; and a whole rejected request
// through Gateway.fetch (head, decision, Response); and, on the module of
// testkit/fixture-jwks.toml, what installing fetched keys costs.
//
//   node deploy/workerd/bench-shim.mjs        (a few seconds, then exits)
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Gateway, contextLine, requestHead } from "./gateway.mjs";
import { FIXTURE_WASM, ROOT, mintToken, readFixture } from "./harness.mjs";
import { fixtureRsaKey, jwksOf, makeKey } from "../../testkit/jwks/provider.mjs";

const JWKS_WASM = join(ROOT, "target", "fixture", "gateway-jwks.wasm");

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

// Keys fetched at run time (testkit/fixture-jwks.toml's module): what an
// install costs in the one kept instance, and what starting a fresh instance
// from a copy of the key store costs (the shim does it after a trap).
const keysModule = new WebAssembly.Module(readFileSync(JWKS_WASM));
const keyed = new Gateway(keysModule, { log: () => {} });
const keys = [fixtureRsaKey("rsa-2048"), makeKey("rsa-4096", "RS256", { bits: 4096 }), makeKey("p-256", "ES256"), makeKey("ed", "EdDSA")];
const jwks = new TextEncoder().encode(jwksOf(keys));
// A round of the JWKS source (issuer 1) as the shim runs it: the module
// names the URL (key_fetch), the shim hands the document over (key_fetched).
const module = keyed.keysModule();
const install = () => {
  module.fetch(1, "now");
  return module.fetched(1, jwks, "");
};
if (install().n !== 0) throw new Error("expected the document installed");
n = 2000;
t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++) install();
console.log(`key_fetch and key_fetched, ${jwks.length}-byte JWKS of ${keys.length} keys (RSA 2048 and 4096, P-256, Ed25519), key store copied after: ${usPer(n, t0)} us`);
n = 5000;
t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++) new WebAssembly.Instance(keysModule, {});
console.log(`a fresh instance of that module: ${usPer(n, t0)} us`);
const store = keyed.keyStore;
n = 200000;
t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++) keyed.instance.loadKeyStore(store);
console.log(`copying its ${store.byteLength}-byte key store into an instance: ${usPer(n, t0)} us`);
