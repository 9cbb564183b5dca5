// Test support: an identity provider on loopback whose keys the tests
// control. It serves an OpenID discovery document and JWKS documents over
// real HTTP, counts every fetch, and can misbehave on demand (garbage, 500,
// a hanging or dropped response, 10 MB, keys the gateway must refuse), so
// that every host's key fetching is driven by the same provider. Keys are
// made with node:crypto; tokens are signed with them. Loopback only; stop()
// closes everything.
import { createPrivateKey, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { ROOT } from "../../deploy/workerd/harness.mjs";

/** The fixture that fetches keys (testkit/fixture-jwks.toml) and its modules (`make fixture`). */
export const JWKS_CONFIG = join(ROOT, "testkit", "fixture-jwks.toml");
export const JWKS_WASM = join(ROOT, "target", "fixture", "gateway-jwks.wasm");
export const JWKS_ENVOY_WASM = join(ROOT, "target", "fixture", "gateway-jwks-envoy.wasm");

const b64url = (buf) => Buffer.from(buf).toString("base64url");

/**
 * A signing key: { kid, alg, jwk (public, with kid/alg/use), privateKey }.
 * `kind` is "RS256" (bits: 2048 by default), "ES256" or "EdDSA"; "P-384"
 * makes a key the gateway skips (ES384), RSA bits below 2048 one it must
 * refuse.
 */
export function makeKey(kid, kind = "RS256", { bits = 2048 } = {}) {
  let pair;
  let alg = kind;
  if (kind === "RS256") pair = generateKeyPairSync("rsa", { modulusLength: bits, publicExponent: 65537 });
  else if (kind === "ES256") pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
  else if (kind === "P-384") {
    pair = generateKeyPairSync("ec", { namedCurve: "P-384" });
    alg = "ES384";
  } else if (kind === "EdDSA") pair = generateKeyPairSync("ed25519");
  else throw new Error(`unknown key kind ${kind}`);
  const jwk = { ...pair.publicKey.export({ format: "jwk" }), kid, use: "sig", alg };
  return { kid, alg, jwk, privateKey: pair.privateKey };
}

/** The RFC 7515 appendix A.2 RSA key of testkit/keys (kid `rsa-a2` in idp-jwks.json). */
export function fixtureRsaKey(kid = "rsa-a2") {
  const pem = readFileSync(join(ROOT, "testkit", "keys", "rs256-rfc7515.key.pem"), "utf8");
  const privateKey = createPrivateKey(pem);
  const { n, e } = privateKey.export({ format: "jwk" });
  return { kid, alg: "RS256", jwk: { kty: "RSA", kid, use: "sig", alg: "RS256", n, e }, privateKey };
}

/** A compact JWS over `claims`, signed with `key` (its alg and kid in the header). */
export function signToken(key, claims, header = {}) {
  const fullHeader = { alg: key.alg, typ: "JWT", kid: key.kid, ...header };
  const input = `${b64url(JSON.stringify(fullHeader))}.${b64url(JSON.stringify(claims))}`;
  let signature;
  if (key.alg === "RS256") signature = sign("sha256", Buffer.from(input), key.privateKey);
  else if (key.alg === "ES256") signature = sign("sha256", Buffer.from(input), { key: key.privateKey, dsaEncoding: "ieee-p1363" });
  else if (key.alg === "EdDSA") signature = sign(null, Buffer.from(input), key.privateKey);
  else throw new Error(`cannot sign ${key.alg}`);
  return `${input}.${b64url(signature)}`;
}

/** A JWKS document of `keys` (their public JWKs), with `extra` members per key by kid. */
export function jwksOf(keys, extra = {}) {
  return JSON.stringify({ keys: keys.map((k) => ({ ...k.jwk, ...(extra[k.kid] ?? {}) })) });
}

/**
 * Starts the provider on 127.0.0.1. `issuer` is the issuer URL the
 * discovery document names (the gateway's configured `iss`, such as
 * `http://idp.test`; the hosts map that origin here with an upstream
 * override), and its `jwks_uri` is `<issuer>/jwks`.
 *
 * Every path but the discovery document serves the JWKS document set with
 * `publish(path, body)` (default: every path the same document);
 * `discover({ issuer, jwksUri })` changes what the discovery document names
 * (a provider that moves its keys, or a document for another issuer). `behave`
 * sets how the next JWKS responses misbehave (the discovery document always
 * answers):
 *   "ok" | "status500" | "hang" (never answers) | "drop" (half the body,
 *   then the connection is cut) | "huge" (10 MB of JSON) | "garbage"
 *   (not JSON) | "slow" (the body after `delayMs`) | "latin1" (the document,
 *   with a Cache-Control field holding a byte that is not UTF-8 text)
 * `fetches` lists every request: { path, at (ms since start) }.
 */
export async function startProvider({ issuer = "http://idp.test" } = {}) {
  const started = Date.now();
  const state = {
    documents: new Map(),
    fallback: jwksOf([]),
    mode: "ok",
    delayMs: 0,
    cacheControl: "",
    fetches: [],
    sockets: new Set(),
    discovery: { issuer, jwksUri: `${issuer}/jwks` },
  };
  const server = createServer((req, res) => {
    const path = new URL(req.url, "http://provider").pathname;
    state.fetches.push({ path, at: Date.now() - started, method: req.method });
    const headers = { "content-type": "application/json" };
    if (path === "/.well-known/openid-configuration") {
      // The discovery document always answers: the misbehaviour is the JWKS's.
      res.writeHead(200, headers);
      const { issuer: named, jwksUri } = state.discovery;
      return res.end(JSON.stringify({ issuer: named, jwks_uri: jwksUri, id_token_signing_alg_values_supported: ["RS256"] }));
    }
    const body = state.documents.get(path) ?? state.fallback;
    if (state.cacheControl) headers["cache-control"] = state.cacheControl;
    switch (state.mode) {
      case "hang":
        return; // never answers; stop() closes the socket
      case "status500":
        res.writeHead(500, headers);
        return res.end('{"error":"provider down"}');
      case "garbage":
        res.writeHead(200, headers);
        return res.end("<html>maintenance</html>");
      case "huge": {
        res.writeHead(200, headers);
        const chunk = Buffer.alloc(1 << 20, 0x20);
        res.write('{"keys":[],"pad":"');
        let sent = 0;
        const more = () => {
          while (sent < 10) {
            sent++;
            if (!res.write(chunk)) return res.once("drain", more);
          }
          res.end('"}');
        };
        return more();
      }
      case "drop": {
        res.writeHead(200, { ...headers, "content-length": String(Buffer.byteLength(body)) });
        res.write(body.slice(0, Math.floor(body.length / 2)));
        return setTimeout(() => res.socket?.destroy(), 20);
      }
      case "latin1":
        // Node writes a field's characters up to U+00FF as single bytes: 0xFF here.
        res.writeHead(200, { ...headers, "cache-control": "max-age=5\u00ff" });
        return res.end(body);
      case "slow":
        return setTimeout(() => {
          res.writeHead(200, headers);
          res.end(body);
        }, state.delayMs);
      default:
        res.writeHead(200, headers);
        return res.end(body);
    }
  });
  server.on("connection", (socket) => {
    state.sockets.add(socket);
    socket.on("close", () => state.sockets.delete(socket));
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address();
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    issuer,
    /** Serves `body` (a string) at `path`, or at every JWKS path when `path` is "*". */
    publish(path, body) {
      if (path === "*") {
        state.documents.clear();
        state.fallback = body;
      } else state.documents.set(path, body);
    },
    /** What the discovery document names from now on: `issuer` and `jwksUri` (each defaults to the start's). */
    discover({ issuer: named = issuer, jwksUri = `${issuer}/jwks` } = {}) {
      state.discovery = { issuer: named, jwksUri };
    },
    /** How the next responses behave (see above). */
    behave(mode, { delayMs = 0 } = {}) {
      state.mode = mode;
      state.delayMs = delayMs;
    },
    /** The Cache-Control field of the next responses ("" for none). */
    cacheControl(value) {
      state.cacheControl = value;
    },
    /** Every request so far. */
    get fetches() {
      return state.fetches.slice();
    },
    /** Requests for `path` since `sinceMs` (ms since start). */
    fetchesOf(path, sinceMs = 0) {
      return state.fetches.filter((f) => f.path === path && f.at >= sinceMs).length;
    },
    /** Milliseconds since the provider started. */
    now() {
      return Date.now() - started;
    },
    stop() {
      for (const socket of state.sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A kid no provider published. */
export function randomKid() {
  return `random-${randomBytes(6).toString("hex")}`;
}

// Run directly, a provider to try the gateway with (examples/identity-provider.toml):
//   node testkit/jwks/provider.mjs [--port 9400] [--aud orders] [--seconds 600]
// serves discovery and a JWKS of one fresh RS256 key at http://127.0.0.1:PORT
// (the issuer), prints a token signed with it, and stops after SECONDS.
if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const port = Number(arg("port", "9400"));
  const issuer = `http://127.0.0.1:${port}`;
  const key = makeKey(`demo-${randomBytes(3).toString("hex")}`);
  const { createServer: create } = await import("node:http");
  const server = create((req, res) => {
    const path = new URL(req.url, issuer).pathname;
    const body = path === "/.well-known/openid-configuration" ? JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }) : jwksOf([key]);
    console.error(`provider: GET ${path}`);
    res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=300" });
    res.end(body);
  });
  server.listen(port, "127.0.0.1", () => {
    const exp = Math.floor(Date.now() / 1000) + 3600;
    console.log(signToken(key, { iss: issuer, aud: arg("aud", "orders"), sub: "alice", exp }));
    console.error(`provider: issuer ${issuer}, kid ${key.kid}; the token above is signed with it`);
  });
  setTimeout(() => server.close(), Number(arg("seconds", "600")) * 1000).unref();
}
