// Test support: a real OpenID provider on loopback, node-oidc-provider (the
// npm package oidc-provider, pinned in package.json), set up as an
// authorization server that issues sender-bound JWT access tokens (RFC
// 9068) with the client credentials grant: DPoP-bound (RFC 9449) to one
// confidential client, certificate-bound (RFC 8705) to another. For the
// second, the test plays the TLS front that ends the client's mutual TLS
// in front of the provider and hands it the client's certificate in a
// field (X-Client-Certificate, read by features.mTLS.getCertificate).
//
// Its issuer is a fixed origin (testkit/fixture-oidc.toml's `iss`,
// http://op.test) that no resolver knows: the provider listens on an
// ephemeral loopback port, and the gateway's hosts reach it there through
// their upstream overrides, as the tests reach its token endpoint. The
// hosts' fetches name the loopback address they were sent to in Host
// (every host does), and the provider derives its URLs from the request:
// so every request is handed to it as addressed to the issuer's host, and
// the discovery document's jwks_uri and the token endpoint a DPoP proof's
// htu names are the issuer's (http://op.test/jwks, http://op.test/token).
// Loopback only; stop() closes it.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import Provider from "oidc-provider";
import { ROOT } from "../../deploy/workerd/harness.mjs";
import { proof } from "../conformance/dpop-script.mjs";
import { startLimitsRecorder } from "../conformance/limits-script.mjs";

/** The fixture (testkit/fixture-oidc.toml) and its builds (`make fixture`). */
export const OIDC_CONFIG = join(ROOT, "testkit", "fixture-oidc.toml");
export const OIDC_WASM = join(ROOT, "target", "fixture", "gateway-oidc.wasm");
export const OIDC_ENVOY_WASM = join(ROOT, "target", "fixture", "gateway-oidc-envoy.wasm");
export const OIDC_WASI_HTTP_WASM = join(ROOT, "target", "fixture", "gateway-oidc-wasi-http.wasm");

/** The fixture's issuer, the provider's issuer identifier and every token's `iss`. */
export const ISSUER = "http://op.test";

/** The fixture's route of aud "orders"; each suite moves it to a recorder. */
export const ROUTE_ORIGIN = "http://127.0.0.1:9201";

/**
 * For each of `hosts` ([name, REQUIRE_* variable, what it needs built,
 * start(overrides), ...more]), a suite "`what` through `name`": the
 * provider, a recording upstream and the host started before its tests
 * (the issuer's origin moved to the provider, the route's to the
 * recorder) and stopped after. `tests(started, ...more)` adds the tests;
 * `started` holds { provider, recorder, host } once they run. A host is
 * required when its variable is 1 (as scripts/test-extra.sh sets them) and
 * skipped elsewhere, saying what is missing.
 */
export function throughOidcHosts(what, hosts, tests) {
  for (const [name, require, needs, start, ...more] of hosts) {
    const missing = needs.filter((path) => !existsSync(path));
    const skip = process.env[require] !== "1" && missing.length > 0 && `${missing.join(", ")} missing (make fixture host envoy wasmtime)`;
    describe(`${what} through ${name}`, { skip }, () => {
      const started = {};
      before(async () => {
        started.provider = await startOidcProvider();
        started.recorder = await startLimitsRecorder();
        started.host = await start([[ISSUER, started.provider.origin], [ROUTE_ORIGIN, started.recorder.origin]]);
      });
      after(async () => {
        await started.host?.proc.stop();
        await started.recorder?.stop();
        await started.provider?.stop();
      });
      tests(started, ...more);
    });
  }
}

/**
 * The resource indicators (RFC 8707) the provider knows: each names the
 * audience "orders" (the fixture's route) and the algorithm the provider
 * signs its access tokens with, from the keys it publishes.
 */
export const RESOURCES = {
  "urn:gateway:orders": "ES256",
  "urn:gateway:orders:rs256": "RS256",
};

/** The scope the orders resource server grants. */
export const ORDERS_SCOPE = "orders:read";

/** A private signing JWK of `alg` ("ES256" or "RS256"), made now with node:crypto, under `kid`. */
export function signingJwk(alg, kid) {
  const pair = alg === "ES256" ? generateKeyPairSync("ec", { namedCurve: "P-256" }) : generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...pair.privateKey.export({ format: "jwk" }), kid, alg, use: "sig" };
}

/**
 * Starts the provider on 127.0.0.1 (an ephemeral port). One client,
 * `clientId` with `clientSecret` (client_secret_basic), may use the client
 * credentials grant only, and only with DPoP (`dpop_bound_access_tokens`);
 * another, `<clientId>-mtls`, only with its client certificate
 * (`tls_client_certificate_bound_access_tokens`).
 * Its keys: a fresh ES256 and a fresh RS256 key, published at
 * `<issuer>/jwks` and named by the discovery document.
 *
 * Resolves to { origin, issuer, clientId, jwks (the public keys), requests
 * (every request: { method, path, host: the Host it was sent with }),
 * token(dpopKey, options), stop() }.
 */
export async function startOidcProvider({ issuer = ISSUER, clientId = `orders-client-${randomBytes(3).toString("hex")}`, clientSecret = randomBytes(24).toString("base64url") } = {}) {
  const mtlsClientId = `${clientId}-mtls`;
  const keys = [signingJwk("ES256", `op-es256-${randomBytes(3).toString("hex")}`), signingJwk("RS256", `op-rs256-${randomBytes(3).toString("hex")}`)];
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_basic",
        dpop_bound_access_tokens: true,
        scope: ORDERS_SCOPE,
      },
      {
        client_id: mtlsClientId,
        client_secret: clientSecret,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_basic",
        tls_client_certificate_bound_access_tokens: true,
        scope: ORDERS_SCOPE,
      },
    ],
    jwks: { keys },
    scopes: [ORDERS_SCOPE],
    cookies: { keys: [randomBytes(32).toString("base64url")] },
    ttl: { ClientCredentials: 600 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      dPoP: { enabled: true },
      mTLS: {
        enabled: true,
        certificateBoundAccessTokens: true,
        // The client's certificate, as the TLS front hands it over.
        getCertificate: (ctx) => {
          const pem = ctx.get("x-client-certificate");
          return pem ? decodeURIComponent(pem) : undefined;
        },
      },
      introspection: { enabled: false },
      revocation: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => "urn:gateway:orders",
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resourceIndicator) => {
          const alg = RESOURCES[resourceIndicator];
          if (!alg) throw new Provider.errors.InvalidTarget();
          return {
            scope: ORDERS_SCOPE,
            audience: "orders",
            accessTokenTTL: 600,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg } },
          };
        },
      },
    },
  });
  const requests = [];
  const host = new URL(issuer).host;
  const handle = provider.callback();
  const server = createServer((req, res) => {
    requests.push({ method: req.method, path: new URL(req.url, issuer).pathname, host: req.headers.host });
    // Addressed to the issuer, whichever origin the request was sent to.
    req.headers.host = host;
    handle(req, res);
  });
  const sockets = new Set();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const origin = `http://127.0.0.1:${server.address().port}`;

  return {
    origin,
    issuer,
    clientId,
    /** The client whose tokens are bound to its certificate (`token(null, { certificate })`). */
    mtlsClientId,
    /** The published keys: the public members of the provider's signing keys. */
    jwks: keys.map(({ kty, kid, alg, use, crv, x, y, n, e }) => ({ kty, kid, alg, use, crv, x, y, n, e })),
    /** Every request so far, oldest first. */
    get requests() {
      return requests.slice();
    },
    /**
     * Asks the token endpoint for an access token with the client
     * credentials grant, as the client (HTTP Basic), with a DPoP proof by
     * `dpopKey` (a proofKey of dpop-script.mjs) unless it is null; `resource`
     * picks the resource indicator (and so the signing algorithm), `proofFor`
     * replaces the proof. Resolves to { status, body (parsed JSON), headers }.
     */
    async token(dpopKey, { resource = "urn:gateway:orders", scope = ORDERS_SCOPE, proofFor, certificate } = {}) {
      // With `certificate` (PEM), as the certificate-bound client over mutual TLS.
      const client = certificate ? mtlsClientId : clientId;
      const headers = {
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(client)}:${encodeURIComponent(clientSecret)}`).toString("base64")}`,
        "content-type": "application/x-www-form-urlencoded",
      };
      if (certificate) headers["x-client-certificate"] = encodeURIComponent(certificate);
      if (dpopKey) {
        // A proof for the token endpoint has no access token, so no ath.
        headers.dpop = proofFor ?? proof(dpopKey, { htm: "POST", htu: `${issuer}/token`, token: "", claims: { ath: undefined } });
      }
      const res = await fetch(`${origin}/token`, {
        method: "POST",
        headers,
        body: new URLSearchParams({ grant_type: "client_credentials", resource, scope }).toString(),
        signal: AbortSignal.timeout(10000),
      });
      return { status: res.status, body: await res.json(), headers: res.headers };
    },
    stop() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
