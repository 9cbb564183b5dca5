// RS256, ES256 and EdDSA tokens through the module built with every algorithm
// (target/fixture/gateway-algorithms.wasm, from testkit/fixture-algorithms.toml
// by `make fixture`) on workerd, `host-sim serve` when it is built, and Envoy
// with the filter built with every algorithm (gateway-algorithms-envoy.wasm)
// when Envoy is installed (required with REQUIRE_ENVOY=1, as in make test):
// a token signed with the JWKS document's key is forwarded (the RS256 ones
// shaped like an identity provider's access token, about 1 KB), a flipped
// signature bit and an HS256 header naming the public key are refused.
// Tokens are signed here with node:crypto and the test keys of
// testkit/keys/ (RFC 7515 A.2 and A.3, RFC 8037 A, a 3072-bit RSA key); the
// fixture accepts tokens up to 2048 bytes (max_token_bytes), as RS256 needs.
//
//   make fixture && node --test deploy/workerd/test/algorithms.test.mjs
import assert from "node:assert/strict";
import { createPrivateKey, sign } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { envoyFilterReady, startEnvoyFilter } from "../../envoy/harness.mjs";
import { ROOT, hostSimServeHelp, rawRequest, readFixture, startEcho, startHostSim, startWorkerd } from "../harness.mjs";

const WASM = join(ROOT, "target", "fixture", "gateway-algorithms.wasm");
const ENVOY_WASM = join(ROOT, "target", "fixture", "gateway-algorithms-envoy.wasm");
const CONFIG = join(ROOT, "testkit", "fixture-algorithms.toml");
const config = readFixture();
const ORIGINS = [...new Set(config.routes.map((r) => r.origin))];
const b64url = (buf) => Buffer.from(buf).toString("base64url");
const key = (name) => createPrivateKey(readFileSync(join(ROOT, "testkit", "keys", name)));

/** The private half of each test key, by kid (testkit/keys/README.md). */
const PRIVATE_KEYS = {
  "rsa-a2": "rs256-rfc7515.key.pem",
  "rsa-3072": "rs256-3072.key.pem",
  "ec-a3": "es256-rfc7515.key.pem",
  "ed-8037": "eddsa-rfc8037.key.pem",
};

/**
 * A compact JWS: RS256 as PKCS#1 v1.5, ES256 as JOSE r || s (IEEE P1363), EdDSA as R || S.
 * `header` is the JOSE header's JSON text, as written.
 */
function mint(alg, kid, claims, header = JSON.stringify({ alg, kid })) {
  const input = Buffer.from(`${b64url(header)}.${b64url(JSON.stringify(claims))}`);
  const privateKey = key(PRIVATE_KEYS[kid]);
  const signature =
    alg === "EdDSA"
      ? sign(null, input, privateKey)
      : sign("sha256", input, alg === "ES256" ? { key: privateKey, dsaEncoding: "ieee-p1363" } : privateKey);
  return `${input}.${b64url(signature)}`;
}

const claims = { iss: config.issuer, aud: "users", exp: Math.floor(Date.now() / 1000) + 3600 };
// An access token shaped like an identity provider's (Keycloak's layout:
// scope, azp, nested role claims), about 1 KB once RS256-signed.
const providerClaims = {
  ...claims,
  iat: claims.exp - 3600,
  jti: "7f1c2a9e-4b3d-4e8f-9a0b-1c2d3e4f5a6b",
  sub: "f4a1c0de-2b7e-4c3a-9d8e-5f6a7b8c9d0e",
  typ: "Bearer",
  azp: "orders-web",
  scope: "openid profile email orders:read orders:write",
  realm_access: { roles: ["offline_access", "uma_authorization", "orders-reader"] },
  resource_access: { "orders-web": { roles: ["manage-orders", "view-reports"] } },
  email_verified: true,
  preferred_username: "alice",
};
const request = (token) => `GET /profile HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`;
const flip = (t) => t.slice(0, -2) + (t.at(-2) === "A" ? "B" : "A") + t.at(-1);

const CASES = [];
for (const [alg, kid] of [["RS256", "rsa-a2"], ["RS256", "rsa-3072"], ["ES256", "ec-a3"], ["EdDSA", "ed-8037"]]) {
  const token = mint(alg, kid, alg === "RS256" ? providerClaims : claims);
  CASES.push({ name: `${alg} (${kid}) forwarded (${token.length} bytes)`, token, status: 200, subject: alg === "RS256" ? providerClaims.sub : null });
  CASES.push({ name: `${alg} (${kid}) with a flipped signature bit`, token: flip(token), status: 401, reason: "signature mismatch" });
  const [, payload, signature] = token.split(".");
  const confused = `${b64url(JSON.stringify({ alg: "HS256", kid }))}.${payload}.${signature.slice(0, 43)}`;
  CASES.push({ name: `HS256 naming the ${alg} key ${kid}`, token: confused, status: 401, reason: "alg not accepted for this key" });
  // Header member names spelled with escapes are the members they spell
  // (RFC 8259 section 7): escaped crit, and escaped duplicates, are refused.
  for (const [what, header, reason] of [
    ["an escaped crit", `{"alg":"${alg}","kid":"${kid}","\\u0063rit":["exp"]}`, "crit header not supported"],
    ["an escaped alg none beside alg", `{"alg":"${alg}","kid":"${kid}","\\u0061lg":"none"}`, "malformed token header"],
    ["an escaped typ", `{"alg":"${alg}","kid":"${kid}","\\u0074yp":"JOSE+JSON"}`, "typ must be JWT or at+jwt"],
    ["an escaped kid beside kid", `{"alg":"${alg}","kid":"${kid}","\\u006bid":"${kid}"}`, "malformed token header"],
  ]) {
    CASES.push({ name: `${alg} (${kid}) with ${what}`, token: mint(alg, kid, claims, header), status: 401, reason });
  }
  const escapedNames = mint(alg, kid, claims, `{"\\u0061lg":"${alg}","\\u006bid":"${kid}"}`);
  CASES.push({ name: `${alg} (${kid}) with alg and kid names escaped, forwarded`, token: escapedNames, status: 200, subject: null });
}

const hostSimHelp = hostSimServeHelp();
const built = existsSync(WASM);
const require = process.env.REQUIRE_HOST_SIM === "1";
describe(
  "every algorithm on workerd and host-sim serve",
  { timeout: 120000, skip: built || require ? false : `${WASM} is missing: make fixture` },
  () => {
    let echo;
    const gateways = [];
    before(async () => {
      echo = await startEcho(Object.fromEntries(ORIGINS.map((origin) => [origin, 0])));
      const overrides = ORIGINS.map((origin) => [origin, echo.addresses[origin]]);
      gateways.push(["workerd", await startWorkerd(overrides.map(([f, t]) => `${f}=${t}`).join(","), WASM)]);
      if (hostSimHelp || require) {
        const args = overrides.flatMap(([f, t]) => ["--upstream-override", `${f}=${t}`]);
        gateways.push(["host-sim serve", await startHostSim(args, 60000, WASM)]);
      }
      if ((envoyFilterReady() && existsSync(ENVOY_WASM)) || process.env.REQUIRE_ENVOY === "1") {
        gateways.push(["envoy + gateway filter", await startEnvoyFilter(overrides, { wasm: ENVOY_WASM, config: CONFIG })]);
      }
    });
    after(async () => {
      for (const [, gateway] of gateways) await gateway.proc.stop();
      await echo?.close();
    });

    for (const c of CASES) {
      test(c.name, async () => {
        for (const [name, gateway] of gateways) {
          const answer = await rawRequest(gateway.port, request(c.token));
          assert.equal(answer.status, c.status, `${name}: ${answer.raw ?? answer.body}`);
          if (c.status === 200) {
            const seen = JSON.parse(answer.body);
            assert.equal(seen.target, "/profile", name);
            assert.equal(seen.subject, c.subject, name);
            assert.equal(seen.authorization, null, `${name}: the token must not reach the upstream`);
          } else {
            assert.match(answer.headers["www-authenticate"] ?? "", /invalid_token/, name);
            assert.equal(JSON.parse(answer.body).error_description, c.reason, name);
          }
        }
      });
    }
  },
);
