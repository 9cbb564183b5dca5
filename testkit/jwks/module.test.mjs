// The module's key exports on their own (worker/ABI.md, "Keys fetched at
// run time"), driven as a host drives them, in V8: documents of every
// algorithm and size install and verify, the largest RSA keys included
// (their parameters are computed on the module's stack), refusals leave the
// installed keys alone, and a copy of the key store into a fresh instance
// is the same keys.
//
//   node --test testkit/jwks/module.test.mjs
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { JWKS_WASM, jwksOf, makeKey, signToken } from "./provider.mjs";

const NOW = () => Date.now() / 1000;
const claims = (iss) => ({ iss, aud: "orders", sub: "alice", exp: Math.floor(Date.now() / 1000) + 3600 });

async function instantiate() {
  const { instance } = await WebAssembly.instantiate(readFileSync(JWKS_WASM), {});
  const e = instance.exports;
  const bytes = () => new Uint8Array(e.memory.buffer);
  const output = () => Buffer.from(bytes().subarray(e.output_ptr(), e.output_ptr() + e.output_len())).toString();
  return {
    e,
    bytes,
    install(issuer, text) {
      const doc = Buffer.from(text);
      bytes().set(doc, e.keys_input_ptr());
      return [e.install_keys(issuer, doc.length, NOW()), output()];
    },
    decide(token) {
      const head = Buffer.from(`http 127.0.0.1\nGET /x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${token}\r\n\r\n`);
      bytes().set(head, e.input_ptr());
      return [e.handle(head.length, NOW()), output()];
    },
  };
}

describe("the module's key exports", { skip: !existsSync(JWKS_WASM) && "make fixture builds the module" }, () => {
  test("four keys of every algorithm and size install and verify their tokens", async () => {
    const module = await instantiate();
    for (const [kind, bits] of [["RS256", 2048], ["RS256", 3072], ["RS256", 4096], ["ES256"], ["EdDSA"]]) {
      const keys = [0, 1, 2, 3].map((i) => makeKey(`${kind}-${bits ?? ""}-${i}`, kind, { bits }));
      const [count, summary] = module.install(1, jwksOf(keys));
      assert.equal(count, 4, summary);
      assert.match(summary, /^installed .*: 4 keys for issuer 1$/);
      for (const key of keys) {
        const [status, out] = module.decide(signToken(key, claims("http://jwks.test")));
        assert.equal(status, 200, `${key.kid}: ${out}`);
      }
      const [forged] = module.decide(signToken(makeKey("other", kind, { bits }), claims("http://jwks.test"), { kid: keys[0].kid }));
      assert.equal(forged, 401);
      // Time per install, for the record (docs/PERFORMANCE.md has the bench's figures).
      const text = jwksOf(keys);
      const started = performance.now();
      for (let i = 0; i < 5; i++) module.install(1, text);
      console.log(`install of 4 ${kind} ${bits ?? ""} keys in V8: ${(((performance.now() - started) / 5) * 1000).toFixed(0)} µs`);
    }
  });

  test("a refused document leaves the installed keys; the reason is one line", async () => {
    const module = await instantiate();
    const good = makeKey("good");
    assert.equal(module.install(1, jwksOf([good]))[0], 1);
    const token = signToken(good, claims("http://jwks.test"));
    for (const [doc, reason] of [
      ["garbage", /^JWKS document is not a JWKS document/],
      [jwksOf([good, makeKey("short", "RS256", { bits: 1024 })]), /^JWKS key 1 \(kid "short"\) is a 1024-bit RSA key/],
      [jwksOf([good], { good: { d: "AQAB" } }), /^JWKS key 0 \(kid "good"\) holds private key material \("d"\)/],
      ["x".repeat(70000), /^JWKS document is 70000 bytes/],
    ]) {
      const text = Buffer.from(doc);
      let result;
      if (text.length > module.e.keys_input_capacity()) {
        result = [module.e.install_keys(1, text.length, NOW()), Buffer.from(module.bytes().subarray(module.e.output_ptr(), module.e.output_ptr() + module.e.output_len())).toString()];
      } else result = module.install(1, doc);
      assert.equal(result[0], -1);
      assert.match(result[1], reason);
      assert.ok(!result[1].includes("\n"));
      assert.equal(module.decide(token)[0], 200, "the good key stays installed");
    }
  });

  test("keys the module does not verify are skipped and named; a document cut short is named as that", async () => {
    const module = await instantiate();
    const good = makeKey("good", "ES256");
    const p384 = makeKey("p384", "P-384");
    const { kty, n, e } = makeKey("enc-ops").jwk;
    const document = JSON.stringify({ keys: [good.jwk, p384.jwk, { kty, n, e, kid: "enc-ops", key_ops: ["encrypt"] }] });
    const [count, summary] = module.install(1, document);
    assert.equal(count, 1, summary);
    assert.equal(
      summary,
      'installed "good": 1 key for issuer 1; skipped 2 keys: key 1 (kid "p384"): curve "P-384" is not verified by this gateway, key 2 (kid "enc-ops"): key_ops does not include "verify"',
    );
    for (const cut of [1, 20, document.indexOf('"x":"') + 10, document.length - 1]) {
      const [refused, reason] = module.install(1, document.slice(0, cut));
      assert.equal(refused, -1);
      assert.equal(reason, `JWKS document is not a JWKS document: its JSON is cut short after ${cut} bytes`);
    }
  });

  test("the key store copied into a fresh instance is the same keys", async () => {
    const first = await instantiate();
    const key = makeKey("copied", "ES256");
    assert.equal(first.install(0, jwksOf([key]))[0], 1);
    const store = first.bytes().slice(first.e.key_store_ptr(), first.e.key_store_ptr() + first.e.key_store_len());
    const fresh = await instantiate();
    const token = signToken(key, claims("http://idp.test"));
    assert.equal(fresh.decide(token)[0], 503, "a fresh instance has no keys");
    assert.equal(fresh.e.key_store_ptr(), first.e.key_store_ptr());
    fresh.bytes().set(store, fresh.e.key_store_ptr());
    const [status, out] = fresh.decide(token);
    assert.equal(status, 200, out);
  });
});
