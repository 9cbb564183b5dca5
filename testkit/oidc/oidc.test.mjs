// DPoP with a real OpenID provider (RFC 9449), on every host: node-oidc-provider
// (provider.mjs) issues DPoP-bound JWT access tokens to a client with the
// client credentials grant; the gateway, running the module built from
// testkit/fixture-oidc.toml (`make fixture`), finds the provider's keys
// through its OpenID discovery document at run time, and verifies the
// tokens and the client's proofs. Each host's overrides map the issuer's
// origin (http://op.test) to the provider on loopback and the route's
// origin to a recording upstream; every request goes over real HTTP.
//
// For each host: a token obtained from the provider's token endpoint with a
// proof (ES256, or EdDSA with an RS256-signed token) carries the proof key's
// thumbprint in cnf.jkt; presented as `Authorization: DPoP` with a fresh
// proof it is forwarded, the upstream seeing the client id as the subject
// and neither the token nor the proof; presented as a bearer token it is
// refused (401, bound token); a proof sent a second time is refused (401,
// replayed), by each host's own store (wasmtime serve keeps one instance,
// as in testkit/conformance/dpop.test.mjs: its store is the instance's).
//
//   node --test testkit/oidc/
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { before, test } from "node:test";
import { ROOT, startHostSim, startWorkerd } from "../../deploy/workerd/harness.mjs";
import { FIXTURE_NATIVE, startEnvoyFilter, startEnvoyNative } from "../../deploy/envoy/harness.mjs";
import { REUSE_ONE_INSTANCE, startWasiHttp } from "../../deploy/wasi-http/harness.mjs";
import { proof, proofKey, thumbprint } from "../conformance/dpop-script.mjs";
import { ISSUER, OIDC_CONFIG, OIDC_ENVOY_WASM, OIDC_WASI_HTTP_WASM, OIDC_WASM, ORDERS_SCOPE, throughOidcHosts } from "./provider.mjs";

/** The fixture's realm, named in every challenge. */
const REALM = "fixture-oidc";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const decode = (part) => JSON.parse(Buffer.from(part, "base64url").toString());

/**
 * Each host: [name, REQUIRE_* variable, what it needs built, start(overrides)
 * -> { port, proc }]. A host is required when its variable is 1 (as
 * scripts/test-extra.sh sets them) and skipped, saying what is missing,
 * elsewhere.
 */
const HOSTS = [
  ["host-sim serve", "REQUIRE_HOST_SIM", [OIDC_WASM, join(ROOT, "target", "release", "host-sim")],
    (overrides) => startHostSim(overrides.flatMap(([from, to]) => ["--upstream-override", `${from}=${to}`]), 60000, OIDC_WASM)],
  ["workerd", "REQUIRE_HOST_SIM", [OIDC_WASM, join(ROOT, "node_modules", ".bin", "workerd")],
    (overrides) => startWorkerd(overrides.map(([from, to]) => `${from}=${to}`).join(","), OIDC_WASM)],
  ["envoy + gateway filter", "REQUIRE_ENVOY", [OIDC_ENVOY_WASM, join(ROOT, "target", "envoy-venv", "bin", "envoy"), join(ROOT, "target", "release", "envoy-filter")],
    (overrides) => startEnvoyFilter(overrides, { wasm: OIDC_ENVOY_WASM, config: OIDC_CONFIG })],
  ["envoy + native module", "REQUIRE_ENVOY", [FIXTURE_NATIVE.oidc, join(ROOT, "target", "envoy-venv", "bin", "envoy"), join(ROOT, "target", "release", "envoy-filter")],
    (overrides) => startEnvoyNative(overrides, { native: FIXTURE_NATIVE.oidc, config: OIDC_CONFIG })],
  ["wasmtime serve (wasi:http component)", "REQUIRE_WASI_HTTP", [OIDC_WASI_HTTP_WASM, join(ROOT, "target", "tools", "bin", "wasmtime")],
    (overrides) => startWasiHttp(overrides, OIDC_WASI_HTTP_WASM, REUSE_ONE_INSTANCE)],
];

throughOidcHosts("DPoP with node-oidc-provider", HOSTS, (started) => {
  let provider;
  let recorder;
  let host;
  before(() => ({ provider, recorder, host } = started));

  const htu = () => `http://127.0.0.1:${host.port}/orders/1`;
  /** GET /orders/1 with `authorization` and, when given, one DPoP field. */
  const call = async (authorization, dpop) => {
    const headers = { authorization };
    if (dpop) headers.dpop = dpop;
    const res = await fetch(htu(), { headers, signal: AbortSignal.timeout(10000) });
    return { status: res.status, headers: res.headers, body: await res.text() };
  };
  /** A DPoP call with a fresh proof by `key`, made now. */
  const dpopCall = (token, key) => call(`DPoP ${token}`, proof(key, { htm: "GET", htu: htu(), token }));
  /**
   * A DPoP call, tried again with a fresh proof (at most 15 s) while the
   * host answers 503 for keys it has not fetched yet (workerd and the
   * wasi:http component fetch on requests; host-sim and Envoy's filter
   * before; Envoy's native module holds the request that fetches).
   */
  const firstCall = async (token, key) => {
    const deadline = Date.now() + 15000;
    let res = await dpopCall(token, key);
    while (res.status === 503 && Date.now() < deadline) {
      await sleep(200);
      res = await dpopCall(token, key);
    }
    return res;
  };
  /** A refusal: its status, error, description and challenge scheme, and nothing reached the upstream. */
  const assertRefused = (res, before, [status, scheme, error, description], what) => {
    assert.equal(res.status, status, `${what}: ${res.status} ${res.body}`);
    assert.deepEqual(JSON.parse(res.body), { error, error_description: description }, what);
    // The fixture is built with RS256 too (WORKER_FEATURES=rs256,es256,eddsa).
    const challenge = scheme === "DPoP" ? `DPoP algs="ES256 EdDSA RS256", realm="${REALM}"` : `Bearer realm="${REALM}"`;
    assert.equal(res.headers.get("www-authenticate"), `${challenge}, error="${error}", error_description="${description}"`, what);
    assert.equal(recorder.received.length, before, `${what}: a refused request never reaches the upstream`);
  };
  /** A forward: 200 from the recorder, the client as the subject, no token or proof upstream. */
  const assertForwarded = (res, before, what) => {
    assert.equal(res.status, 200, `${what}: ${res.status} ${res.body}`);
    assert.equal(res.body, "upstream", what);
    assert.equal(recorder.received.length, before + 1, `${what}: reached the upstream once`);
    const upstream = recorder.received.at(-1);
    assert.equal(upstream.url, "/orders-svc/orders/1", what);
    assert.equal(upstream.headers["x-gateway-subject"], provider.clientId, `${what}: the client id is the subject`);
    assert.equal(upstream.headers["x-gateway-issuer"], ISSUER, what);
    assert.equal(upstream.headers.authorization, undefined, `${what}: the token never travels upstream`);
    assert.equal(upstream.headers.dpop, undefined, `${what}: the proof never travels upstream`);
  };

  test("the provider issues a DPoP-bound JWT access token for the orders audience, and only with a proof", async () => {
    const key = proofKey("ES256");
    const res = await provider.token(key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.token_type, "DPoP");
    assert.equal(res.body.scope, ORDERS_SCOPE);
    const [header, claims] = res.body.access_token.split(".").slice(0, 2).map(decode);
    assert.equal(header.typ, "at+jwt");
    assert.equal(header.alg, "ES256");
    assert.ok(provider.jwks.some((k) => k.kid === header.kid), "signed with a published key");
    assert.equal(claims.iss, ISSUER);
    assert.equal(claims.aud, "orders");
    assert.equal(claims.sub, provider.clientId);
    assert.equal(claims.client_id, provider.clientId);
    assert.deepEqual(claims.cnf, { jkt: key.jkt }, "bound to the proof key's RFC 7638 thumbprint");
    assert.equal(key.jkt, thumbprint(key.jwk));
    // The client is registered with dpop_bound_access_tokens: no proof, no token.
    const unproved = await provider.token(null);
    assert.equal(unproved.status, 400, JSON.stringify(unproved.body));
    assert.equal(unproved.body.error, "invalid_grant");
  });

  test("the bound token with a fresh proof is forwarded, the client id as the subject; as a bearer token it is refused", async () => {
    const key = proofKey("ES256");
    const { body } = await provider.token(key);
    const token = body.access_token;
    let before = recorder.received.length;
    assertForwarded(await firstCall(token, key), before, "the token with its proof");
    // The gateway found the provider's keys through its discovery document, at the issuer's origin.
    const fetched = provider.requests.filter((r) => r.method === "GET").map((r) => r.path);
    assert.ok(fetched.includes("/.well-known/openid-configuration"), `discovery fetched: ${fetched}`);
    assert.ok(fetched.includes("/jwks"), `the JWKS fetched: ${fetched}`);
    // A second request, a second fresh proof: only a proof's jti is spent.
    before = recorder.received.length;
    assertForwarded(await dpopCall(token, key), before, "the token with another fresh proof");

    before = recorder.received.length;
    assertRefused(
      await call(`Bearer ${token}`),
      before,
      [401, "Bearer", "invalid_token", "token bound to a key (cnf) not verified here"],
      "the bound token as a bearer token",
    );
    before = recorder.received.length;
    assertRefused(await call(`DPoP ${token}`), before, [401, "DPoP", "invalid_dpop_proof", "DPoP proof required"], "the token without a proof");
    before = recorder.received.length;
    const other = proofKey("ES256");
    assertRefused(
      await call(`DPoP ${token}`, proof(other, { htm: "GET", htu: htu(), token })),
      before,
      [401, "DPoP", "invalid_token", "token bound to another DPoP key"],
      "a proof by a key that is not the token's",
    );
  });

  test("a proof sent a second time is refused as replayed", async () => {
    const key = proofKey("ES256");
    const token = (await provider.token(key)).body.access_token;
    let before = recorder.received.length;
    assertForwarded(await firstCall(token, key), before, "a first proof");
    const once = proof(key, { htm: "GET", htu: htu(), token });
    before = recorder.received.length;
    assertForwarded(await call(`DPoP ${token}`, once), before, "the proof, first use");
    before = recorder.received.length;
    assertRefused(await call(`DPoP ${token}`, once), before, [401, "DPoP", "invalid_dpop_proof", "DPoP proof replayed"], "the same proof again");
  });

  test("an RS256-signed token bound to an Ed25519 key, from the provider's other key", async () => {
    const key = proofKey("EdDSA");
    const res = await provider.token(key, { resource: "urn:gateway:orders:rs256" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const token = res.body.access_token;
    const [header, claims] = token.split(".").slice(0, 2).map(decode);
    assert.equal(header.alg, "RS256");
    assert.deepEqual(claims.cnf, { jkt: key.jkt });
    assert.equal(key.jkt, createHash("sha256").update(JSON.stringify({ crv: key.jwk.crv, kty: key.jwk.kty, x: key.jwk.x })).digest("base64url"));
    let before = recorder.received.length;
    assertForwarded(await firstCall(token, key), before, "the RS256 token with an EdDSA proof");
    before = recorder.received.length;
    assertRefused(
      await call(`Bearer ${token}`),
      before,
      [401, "Bearer", "invalid_token", "token bound to a key (cnf) not verified here"],
      "the RS256 token as a bearer token",
    );
  });
});
