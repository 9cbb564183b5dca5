// The DPoP conformance script (RFC 9449): one sequence of requests through
// a host running the module built from testkit/fixture-dpop.toml, to a
// recording upstream, with what each answer must be. Every host's test
// runs it (host-sim, workerd, Envoy, wasmtime serve), so that all verify
// proofs alike and all refuse a proof used twice, each with its own store;
// `differences` names what a host cannot do the same way, and says why.
//
// Keys, thumbprints, tokens and proofs are made here with node:crypto:
// ES256 (P-256) and Ed25519 key pairs, their public JWKs, the RFC 7638
// thumbprint of each (the canonical JSON of the required members, its
// SHA-256 in base64url), HS256 access tokens bound to a thumbprint with
// `cnf.jkt`, and proofs signed by the keys. Requests go through node:http
// with their fields as given, so that a case can repeat a field or send a
// Host the connection does not name. Every run uses fresh subjects and fresh
// `jti`s, so a host whose store outlives one test starts clean.
import assert from "node:assert/strict";
import { createHash, createHmac, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { request } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { mintToken } from "../../deploy/workerd/harness.mjs";

/** The fixture's token signing keys by issuer (testkit/fixture-dpop.toml). */
const KEYS = {
  "https://issuer.test": ["TEST-ONLY-fixture-signing-key-0123456789", "fixture"],
  "https://strict.test": ["TEST-ONLY-strict-issuer-signing-key-0123", "strict"],
  "https://mtls.test": ["TEST-ONLY-mtls-issuer-signing-key-012345", "mtls"],
};

/** The fixture's realm, named in every challenge. */
const REALM = "fixture";

/** The fixture's upstream origins; a host's test moves both to the recorder. */
export const DPOP_ORIGINS = ["http://127.0.0.1:9201", "http://127.0.0.1:9202"];

const b64url = (bytes) => Buffer.from(bytes).toString("base64url");
const sha256 = (data) => createHash("sha256").update(data).digest();

/** The members RFC 7638 section 3.2 requires, by key type, in lexicographic order. */
const REQUIRED_MEMBERS = { EC: ["crv", "kty", "x", "y"], OKP: ["crv", "kty", "x"], RSA: ["e", "kty", "n"] };

/** The proof algorithms the fixture's module is built with, as its DPoP challenge lists them. */
export const PROOF_ALGS = "ES256 EdDSA RS256";

/**
 * The RFC 7638 thumbprint of a public JWK: the required members, in
 * lexicographic order, as JSON without whitespace, hashed with SHA-256,
 * in base64url.
 */
export function thumbprint(jwk) {
  const members = REQUIRED_MEMBERS[jwk.kty];
  if (!members) throw new Error(`no thumbprint members for kty ${jwk.kty}`);
  const canonical = `{${members.map((m) => `${JSON.stringify(m)}:${JSON.stringify(jwk[m])}`).join(",")}}`;
  return b64url(sha256(canonical));
}

/**
 * A proof key: `alg` "ES256" (P-256), "EdDSA" (Ed25519) or "RS256" (RSA,
 * `modulusLength` bits), its public JWK, its private JWK (with "d") and its
 * thumbprint.
 */
export function proofKey(alg, { modulusLength = 2048 } = {}) {
  const { publicKey, privateKey } =
    alg === "ES256"
      ? generateKeyPairSync("ec", { namedCurve: "P-256" })
      : alg === "RS256"
        ? generateKeyPairSync("rsa", { modulusLength })
        : generateKeyPairSync("ed25519");
  const jwk = publicKey.export({ format: "jwk" });
  return { alg, privateKey, jwk, privateJwk: privateKey.export({ format: "jwk" }), jkt: thumbprint(jwk) };
}

/** A token of `iss` for `aud` with `claims`, valid for ten minutes. */
export function dpopToken(claims, { aud = "orders", iss = "https://issuer.test" } = {}) {
  const [key, kid] = KEYS[iss];
  const exp = Math.floor(Date.now() / 1000) + 600;
  return mintToken(key, { iss, aud, exp, ...claims }, { alg: "HS256", typ: "JWT", kid });
}

/**
 * A DPoP proof by `key` for `htm` `htu` and `token` (its `ath`), made now
 * with a fresh `jti`; `header` and `claims` replace or add members (a
 * member set to undefined is left out), `spell` rewrites the header's JSON
 * text (to escape a member's name), `signature` replaces how the signing
 * input is signed.
 */
export function proof(key, { htm, htu, token, header = {}, claims = {}, spell = (json) => json, signature } = {}) {
  const head = { typ: "dpop+jwt", alg: key.alg, jwk: key.jwk, ...header };
  const body = {
    jti: b64url(randomBytes(16)),
    htm,
    htu,
    iat: Math.floor(Date.now() / 1000),
    ath: b64url(sha256(token)),
    ...claims,
  };
  const part = (v) => b64url(JSON.stringify(v));
  const input = `${b64url(spell(JSON.stringify(head)))}.${part(body)}`;
  const sig = signature
    ? signature(input)
    : key.alg === "ES256"
      ? // JWS ES256 is raw r||s, 64 bytes, not DER (RFC 7518 section 3.4).
        sign("sha256", Buffer.from(input), { key: key.privateKey, dsaEncoding: "ieee-p1363" })
      : key.alg === "RS256"
        ? sign("sha256", Buffer.from(input), key.privateKey)
        : sign(null, Buffer.from(input), key.privateKey);
  return `${input}.${b64url(sig)}`;
}

/**
 * Runs the script against the gateway on 127.0.0.1:`port` whose upstreams
 * are `recorder` (startLimitsRecorder in limits-script.mjs). `differences`:
 * `{ pauseMs: N }` for a host whose replay store is one instance's, kept
 * only while each request finds that instance free again (wasmtime serve:
 * ONE_INSTANCE_PAUSE_MS in deploy/wasi-http/harness.mjs). Two DPoP fields that a host's
 * front end joins into one value (workerd's Headers) are refused as two by
 * the module, which reads a comma as the join (no proof holds one).
 */
export async function runDpopScript(port, recorder, differences = {}) {
  const run = randomBytes(4).toString("hex");
  const authority = `127.0.0.1:${port}`;
  const url = (path, { scheme = "http", at = authority } = {}) => `${scheme}://${at}${path}`;
  const reached = () => recorder.received.length;

  // Each request on a fresh connection, its fields in order, a repeated
  // field as as many lines; the answer is read up to its end, not to the
  // connection's close (Envoy closes only after its delayed-close timeout).
  const send = async (fields, { method = "GET", path = "/orders/1", host = authority } = {}) => {
    if (differences.pauseMs) await sleep(differences.pauseMs);
    const headers = { host, connection: "close" };
    for (const [name, value] of fields) headers[name] = name in headers ? [headers[name], value].flat() : value;
    return new Promise((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, method, path, headers, agent: false, timeout: 10000 }, (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
        res.on("error", reject);
      });
      req.on("timeout", () => req.destroy(new Error(`no answer from 127.0.0.1:${port} within 10 s`)));
      req.on("error", reject);
      req.end();
    });
  };
  const dpop = (token, ...proofs) => [["Authorization", `DPoP ${token}`], ...proofs.map((p) => ["DPoP", p])];

  // A forward: 200 from the recorder, which saw the request once, without
  // the proof or the token, and with the subject.
  const forwarded = async (fields, sub, what, options = {}) => {
    const before = reached();
    const res = await send(fields, options);
    assert.equal(res.status, 200, `${what}: ${res.status} ${res.body}`);
    assert.equal(res.body, "upstream", what);
    assert.equal(reached() - before, 1, `${what}: reached the upstream once`);
    const upstream = recorder.received.at(-1);
    assert.equal(upstream.url, `/orders-svc${options.path ?? "/orders/1"}`, what);
    assert.equal(upstream.headers.dpop, undefined, `${what}: the proof never travels upstream`);
    assert.equal(upstream.headers.authorization, undefined, `${what}: the token never travels upstream`);
    assert.equal(upstream.headers["x-gateway-subject"], sub, what);
    // The key the request proved travels in the header the fixture names
    // (dpop_thumbprint_header); a client's own spelling of it never does.
    const [, credentials] = fields.find(([name]) => name.toLowerCase() === "authorization");
    const claims = JSON.parse(Buffer.from(credentials.split(" ")[1].split(".")[1], "base64url").toString());
    assert.equal(upstream.headers["x-gateway-dpop-jkt"], claims.cnf.jkt, `${what}: the proved key's thumbprint`);
    assert.equal(upstream.headers["x_gateway_dpop_jkt"], undefined, what);
    return res;
  };

  // A refusal: its status, its challenge (the DPoP scheme, with the proof
  // algorithms, for a refusal about the binding or the proof; Bearer for
  // the others), its JSON body, and nothing reached the upstream.
  const refused = async (fields, [status, scheme, code, reason], what, options = {}) => {
    const before = reached();
    const res = await send(fields, options);
    assert.equal(res.status, status, `${what}: ${res.status} ${res.body}`);
    assert.deepEqual(JSON.parse(res.body), { error: code, error_description: reason }, what);
    const challenge = scheme === "DPoP" ? `DPoP algs="${PROOF_ALGS}", realm="${REALM}"` : `Bearer realm="${REALM}"`;
    assert.equal(
      res.headers["www-authenticate"],
      `${challenge}, error="${code}", error_description="${reason}"`,
      `${what}: the challenge`,
    );
    assert.equal(res.headers["content-type"], "application/json", what);
    assert.equal(reached(), before, `${what}: a refused request never reaches the upstream`);
    return res;
  };
  const proofRefusal = (reason) => [401, "DPoP", "invalid_dpop_proof", reason];
  const MALFORMED = proofRefusal("malformed DPoP proof");

  const es256 = proofKey("ES256");
  const eddsa = proofKey("EdDSA");
  const rs256 = proofKey("RS256");
  const rs4096 = proofKey("RS256", { modulusLength: 4096 });
  const rs1024 = proofKey("RS256", { modulusLength: 1024 });
  const htu = url("/orders/1");

  // 1. A bound token with its proof passes, for each proof algorithm; the
  //    same proof a second time is a replay, refused by the host's store.
  for (const key of [es256, eddsa, rs256, rs4096]) {
    const sub = `${key.alg.toLowerCase()}-${run}`;
    const token = dpopToken({ sub, cnf: { jkt: key.jkt } });
    const p = proof(key, { htm: "GET", htu, token });
    const forged = [["X-Gateway-DPoP-JKT", "forged"], ["X_Gateway_DPoP_JKT", "forged"]];
    await forwarded([...dpop(token, p), ...forged], sub, `${key.alg}: a valid proof`);
    await refused(dpop(token, p), proofRefusal("DPoP proof replayed"), `${key.alg}: the same proof again`);
    // A fresh proof of the same key still passes: only the jti was spent.
    await forwarded(dpop(token, proof(key, { htm: "GET", htu, token })), sub, `${key.alg}: a fresh proof`);
  }

  const sub = `alice-${run}`;
  const token = dpopToken({ sub, cnf: { jkt: es256.jkt } });
  const bearer = dpopToken({ sub: `bob-${run}` });
  const good = (options = {}) => proof(es256, { htm: "GET", htu, token, ...options });

  // 2. How the token and the proof are presented.
  await refused(
    [["Authorization", `Bearer ${token}`]],
    [401, "Bearer", "invalid_token", "token bound to a key (cnf) not verified here"],
    "a bound token as a bearer token",
  );
  await refused(
    dpop(bearer, proof(es256, { htm: "GET", htu, token: bearer })),
    [401, "DPoP", "invalid_token", "DPoP token not bound to a key"],
    "an unbound token as a DPoP token",
  );
  await refused(
    [["Authorization", `Bearer ${bearer}`], ["DPoP", proof(es256, { htm: "GET", htu, token: bearer })]],
    [400, "Bearer", "invalid_request", "DPoP proof with a bearer token"],
    "a proof beside a bearer token",
  );
  await refused(
    dpop(token, good(), good()),
    [400, "Bearer", "invalid_request", "more than one DPoP proof"],
    "two DPoP fields",
  );
  await refused(dpop(token), proofRefusal("DPoP proof required"), "a DPoP token without a proof");

  // 3. A proof made for another request, another time or another token.
  const wrongUri = proofRefusal("DPoP proof for another URI");
  const stale = proofRefusal("DPoP proof outside its time window");
  const now = Math.floor(Date.now() / 1000);
  const otherPort = port === 65535 ? port - 1 : port + 1;
  const cases = [
    ["another method", good({ htm: "POST" }), proofRefusal("DPoP proof for another method")],
    ["another path", good({ htu: url("/orders/2") }), wrongUri],
    ["another port", good({ htu: url("/orders/1", { at: `127.0.0.1:${otherPort}` }) }), wrongUri],
    ["the https scheme", good({ htu: url("/orders/1", { scheme: "https" }) }), wrongUri],
    ["an iat ten minutes old", good({ claims: { iat: now - 600 } }), stale],
    ["an iat ten minutes ahead", good({ claims: { iat: now + 600 } }), stale],
    ["another token's hash", good({ token: bearer }), proofRefusal("DPoP proof for another token")],
    ["a key that is not the token's", proof(eddsa, { htm: "GET", htu, token }), [401, "DPoP", "invalid_token", "token bound to another DPoP key"]],
    ["a jwk with its private member d", good({ header: { jwk: es256.privateJwk } }), MALFORMED],
    ["an RSA jwk with its private members", proof(rs256, { htm: "GET", htu, token, header: { jwk: rs256.privateJwk } }), MALFORMED],
    ["alg RS256 over a P-256 key", good({ header: { alg: "RS256" } }), MALFORMED],
    ["alg ES256 over an RSA key", proof(rs256, { htm: "GET", htu, token, header: { alg: "ES256" } }), MALFORMED],
    ["a 1024-bit RSA key", proof(rs1024, { htm: "GET", htu, token }), MALFORMED],
    ["typ JWT", good({ header: { typ: "JWT" } }), MALFORMED],
    [
      "alg HS256",
      good({ header: { alg: "HS256" }, signature: (input) => createHmac("sha256", "any key").update(input).digest() }),
      MALFORMED,
    ],
    ["alg none", good({ header: { alg: "none" }, signature: () => Buffer.alloc(0) }), MALFORMED],
    ["a tampered signature", tamper(good()), proofRefusal("DPoP proof signature invalid")],
    ["the access token itself as the proof", token, MALFORMED],
    // Escaped member names are the members they spell (RFC 8259 section 7):
    // a second `typ` written with an escape is a duplicate.
    ["typ twice, once escaped", good({ spell: (json) => json.replace('{"typ":"dpop+jwt"', '{"typ":"dpop+jwt","\\u0074yp":"JWT"') }), MALFORMED],
    ["jwk twice, once escaped", good({ spell: (json) => json.replace('"jwk":', `"\\u006awk":${JSON.stringify(eddsa.jwk)},"jwk":`) }), MALFORMED],
    ["an escaped crit", good({ spell: (json) => json.replace('{"typ"', '{"\\u0063rit":["x"],"typ"') }), MALFORMED],
  ];
  for (const [what, p, refusal] of cases) await refused(dpop(token, p), refusal, `a proof with ${what}`);

  // 4. htu is compared without case in its scheme and host, and without the
  //    scheme's default port; the path as the gateway normalizes it.
  await forwarded(dpop(token, good({ htu: `HTTP://${authority}/orders/1` })), sub, "an upper-case scheme");
  await forwarded(
    dpop(token, good({ htu: `http://Gateway.TEST:${port}/orders/1` })),
    sub,
    "a host in another case",
    { host: `gateway.test:${port}` },
  );
  await forwarded(dpop(token, good({ htu: "http://127.0.0.1:80/orders/1" })), sub, "htu with :80, Host without", {
    host: "127.0.0.1",
  });
  await forwarded(dpop(token, good({ htu: "http://127.0.0.1/orders/1" })), sub, "Host with :80, htu without", {
    host: "127.0.0.1:80",
  });
  await forwarded(dpop(token, good({ htu: `${htu}?page=2` })), sub, "htu with a query, the request without");
  await forwarded(
    dpop(token, good({ spell: (json) => json.replace('"typ"', '"\\u0074yp"').replace('"alg"', '"\\u0061lg"') })),
    sub,
    "typ and alg with escaped names",
  );

  // 5. An issuer that requires DPoP: a bearer token of it is refused, the
  //    same caller with a bound token and its proof passes.
  const strictSub = `carol-${run}`;
  const strictBearer = dpopToken({ sub: strictSub }, { iss: "https://strict.test" });
  await refused(
    [["Authorization", `Bearer ${strictBearer}`]],
    [401, "DPoP", "invalid_token", "DPoP-bound token required"],
    "a bearer token of an issuer that requires DPoP",
  );
  const strictToken = dpopToken({ sub: strictSub, cnf: { jkt: eddsa.jkt } }, { iss: "https://strict.test" });
  const strictProof = (claims = {}) => proof(eddsa, { htm: "GET", htu, token: strictToken, claims });

  // 6. That issuer asks for server nonces (RFC 9449 section 9): a proof
  //    without one, or with one the gateway did not issue, is refused with
  //    use_dpop_nonce and a fresh nonce; with it, forwarded, and the
  //    response carries the nonce to use next.
  const NONCE = [401, "DPoP", "use_dpop_nonce", "DPoP proof needs a fresh nonce"];
  const first = await refused(dpop(strictToken, strictProof()), NONCE, "a proof without the nonce the issuer asks for");
  const nonce = first.headers["dpop-nonce"];
  assert.match(nonce ?? "", /^[A-Za-z0-9_-]{27}$/, "the refusal hands out a nonce");
  const forgedNonce = `${nonce.slice(0, 26)}${nonce.at(-1) === "A" ? "B" : "A"}`;
  for (const [bad, what] of [
    [forgedNonce, "a nonce with its last character changed"],
    [nonce.slice(0, 26), "a nonce cut short"],
    ["AAAAAAAAAAAAAAAAAAAAAAAAAAA", "a nonce of the right shape the gateway never issued"],
    [`${nonce} `, "a nonce with a space"],
  ]) {
    const res = await refused(dpop(strictToken, strictProof({ nonce: bad })), NONCE, what);
    assert.equal(res.headers["dpop-nonce"], nonce, `${what}: the current nonce again`);
  }
  const passed = await forwarded(dpop(strictToken, strictProof({ nonce })), strictSub, "a bound token of that issuer with its proof and the nonce");
  assert.equal(passed.headers["dpop-nonce"], nonce, "the forward's response carries the nonce to use next");
  // The nonce is the gateway's, never the client's or the upstream's:
  // another issuer's forwards carry none.
  const plain = await forwarded(dpop(token, good()), sub, "a proof of an issuer that asks for no nonce");
  assert.equal(plain.headers["dpop-nonce"], undefined, "no nonce where none is asked for");
}

/** `compact` with one bit of its signature's first byte flipped. */
function tamper(compact) {
  const dot = compact.lastIndexOf(".");
  const sig = Buffer.from(compact.slice(dot + 1), "base64url");
  sig[0] ^= 1;
  return `${compact.slice(0, dot + 1)}${b64url(sig)}`;
}
