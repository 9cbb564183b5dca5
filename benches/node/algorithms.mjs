// Per-request time of the gateway module per algorithm in V8 (Node.js), one
// reused instance, each request with a token never seen before (its own
// `jti`, so the module's cache of verified tokens never answers), beside
// WebCrypto's crypto.subtle.verify of the same tokens: what a Workers user
// would otherwise write. A measurement, not a check.
//
//   make fixture && node benches/node/algorithms.mjs [target/fixture/gateway-algorithms.wasm]
//
// The module is built from testkit/fixture-algorithms.toml; its test keys
// (testkit/keys/) sign the tokens here.
import { createHmac, createPrivateKey, createPublicKey, sign, webcrypto } from "node:crypto";
import { readFileSync } from "node:fs";

const { subtle } = webcrypto;
const ROUNDS = 300;
const WARMUP = 300;
const modulePath = process.argv[2] ?? "target/fixture/gateway-algorithms.wasm";
const b64url = (bytes) => Buffer.from(bytes).toString("base64url");
const privateKey = (name) => createPrivateKey(readFileSync(`testkit/keys/${name}`));
const fixture = readFileSync("testkit/fixture-algorithms.toml", "utf8");
const secret = Buffer.from(/demo = "([^"]+)"/.exec(fixture)[1]);
const issuer = /issuer = "([^"]+)"/.exec(fixture)[1];
const now = Math.floor(Date.now() / 1000);

const KINDS = [
  { alg: "HS256", kid: "fixture", webcrypto: { name: "HMAC" } },
  { alg: "RS256", kid: "rsa-a2", file: "rs256-rfc7515.key.pem", webcrypto: { name: "RSASSA-PKCS1-v1_5" } },
  { alg: "RS256", kid: "rsa-3072", file: "rs256-3072.key.pem", webcrypto: { name: "RSASSA-PKCS1-v1_5" } },
  { alg: "ES256", kid: "ec-a3", file: "es256-rfc7515.key.pem", webcrypto: { name: "ECDSA", hash: "SHA-256" } },
  { alg: "EdDSA", kid: "ed-8037", file: "eddsa-rfc8037.key.pem", webcrypto: { name: "Ed25519" } },
];

function mint(kind, jti) {
  const claims = { iss: issuer, aud: "users", exp: now + 3600, jti };
  const input = Buffer.from(`${b64url(JSON.stringify({ alg: kind.alg, kid: kind.kid }))}.${b64url(JSON.stringify(claims))}`);
  const signature =
    kind.alg === "HS256"
      ? createHmac("sha256", secret).update(input).digest()
      : kind.alg === "EdDSA"
        ? sign(null, input, privateKey(kind.file))
        : sign("sha256", input, kind.alg === "ES256" ? { key: privateKey(kind.file), dsaEncoding: "ieee-p1363" } : privateKey(kind.file));
  return `${input}.${b64url(signature)}`;
}

async function verifyKey(kind) {
  if (kind.alg === "HS256") return subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const spki = createPublicKey(privateKey(kind.file)).export({ type: "spki", format: "der" });
  const params =
    kind.alg === "RS256"
      ? { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }
      : kind.alg === "ES256"
        ? { name: "ECDSA", namedCurve: "P-256" }
        : { name: "Ed25519" };
  return subtle.importKey("spki", spki, params, false, ["verify"]);
}

const { instance } = await WebAssembly.instantiate(readFileSync(modulePath), {});
const gateway = instance.exports;
const encoder = new TextEncoder();
function handle(token) {
  const head = encoder.encode(`http 127.0.0.1\nGET /x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  new Uint8Array(gateway.memory.buffer, gateway.input_ptr(), head.length).set(head);
  return gateway.handle(head.length, now);
}
async function perCall(items, run) {
  const start = process.hrtime.bigint();
  for (const item of items) await run(item);
  return Number(process.hrtime.bigint() - start) / items.length / 1000;
}

console.log(`node ${process.version} (V8 ${process.versions.v8}), ${ROUNDS} tokens per algorithm after ${WARMUP} warm-up calls, ${modulePath}`);
console.log("| algorithm | key | token bytes | module, whole request (µs) | WebCrypto verify only (µs) |");
console.log("|---|---|---:|---:|---:|");
for (const kind of KINDS) {
  const tokens = Array.from({ length: WARMUP + ROUNDS }, (_, i) => mint(kind, `${kind.kid}-${i}`));
  const status = handle(tokens[0]);
  if (status !== 200) throw new Error(`${kind.alg} ${kind.kid}: the module answered ${status}`);
  const key = await verifyKey(kind);
  const signed = tokens.map((t) => {
    const [h, p, s] = t.split(".");
    return { data: Buffer.from(`${h}.${p}`), signature: Buffer.from(s, "base64url") };
  });
  if (!(await subtle.verify(kind.webcrypto, key, signed[0].signature, signed[0].data))) throw new Error(`${kind.alg}: WebCrypto refused`);
  await perCall(tokens.slice(0, WARMUP), (t) => handle(t));
  await perCall(signed.slice(0, WARMUP), (s) => subtle.verify(kind.webcrypto, key, s.signature, s.data));
  const module = await perCall(tokens.slice(WARMUP), (t) => {
    if (handle(t) !== 200) throw new Error(`${kind.alg}: refused`);
  });
  const web = await perCall(signed.slice(WARMUP), (s) => subtle.verify(kind.webcrypto, key, s.signature, s.data));
  console.log(`| ${kind.alg} | ${kind.kid} | ${tokens[0].length} | ${module.toFixed(1)} | ${web.toFixed(1)} |`);
}
