// The Envoy filter's HMAC-SHA256 at every length of signing input around
// SHA-256's block and padding boundaries, against node:crypto. The filter
// is built with wasm SIMD, so its SHA-256 is sha2's SIMD backend, which no
// other build of the gateway runs: a fault there would refuse valid tokens
// (or accept a wrong signature) in Envoy alone. Driven without Envoy,
// through deploy/envoy/mock-host.mjs: a decision is a forward when the
// filter sends no local response, a refusal when it sends one.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { EXP, readFixture, sign } from "../../../testkit/conformance/corpus-kit.mjs";
import { benchmarkRequest, loadFilter } from "../mock-host.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const FILTER = join(ROOT, "target", "fixture", "gateway-envoy.wasm");

/** The status of the filter's local response to `token`, or 200 when it sends none (a forward). */
function decide(token) {
  let status = 200;
  const request = benchmarkRequest(token);
  const filter = loadFilter(FILTER, request, (name, args) => {
    if (name === "proxy_send_local_response") status = args[0];
  });
  filter.proxy_on_context_create?.(2, 1);
  filter.proxy_on_request_headers(2, request.length, 1);
  return status;
}

test("HMAC-SHA256 agrees with node:crypto at every signing-input length", () => {
  assert.ok(existsSync(FILTER), `${FILTER} is missing: run 'make fixture'`);
  const fixture = readFixture("fixture.json");
  const key = Buffer.from(fixture.keys[0].secret_hex, "hex");
  const lengths = new Set();
  // base64url never ends a part at a length of 1 modulo 4, so the header
  // grows too (a member the gateway skips): with 0 to 100 bytes of subject,
  // the signing input takes every length modulo 64 more than once; the
  // long subjects add blocks up to the fixture's 2048-byte token limit.
  for (const pad of ["", "p", "pp"]) {
    const header = { alg: "HS256", kid: fixture.keys[0].kid, typ: "JWT", pad };
    for (const n of [...Array(101).keys(), 400, 700, 1000, 1300]) {
      const json = JSON.stringify({ iss: fixture.issuer, aud: "orders", sub: "s".repeat(n), exp: EXP });
      const token = sign(header, json, key);
      const length = token.lastIndexOf(".");
      lengths.add(length % 64);
      assert.equal(decide(token), 200, `a valid token with a ${length}-byte signing input`);
      const flipped = token.slice(0, -2) + (token.at(-2) === "A" ? "B" : "A") + token.at(-1);
      assert.equal(decide(flipped), 401, `a wrong signature over a ${length}-byte signing input`);
    }
  }
  assert.equal(lengths.size, 64, "every length modulo 64 was tried");
});
