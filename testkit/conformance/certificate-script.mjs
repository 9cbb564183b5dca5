// The certificate-bound tokens script (RFC 8705): one sequence of requests
// through a host running the module built from testkit/fixture-dpop.toml,
// to a recording upstream, with what each answer must be. A token whose
// `cnf["x5t#S256"]` names a client certificate passes only over TLS with
// that certificate, verified by the host in the handshake; every host
// refuses it otherwise, whatever the client's fields say.
//
// How a host sees the client certificate (`transport`):
// - "tls": host-sim serve and Envoy end TLS themselves with a client CA;
//   requests go over node:https with the certificate (or none);
// - "edge": workerd, where Cloudflare's edge ends TLS and reports the
//   certificate in `request.cf.tlsClientAuth`; the test plays the edge
//   (CF-Blob and X-Forwarded-Proto, read by the test's workerd config only);
// - "none": wasmtime serve, whose component sees no certificate, so every
//   certificate-bound token is refused there.
//
// Certificates are made by openssl for each run: a CA, the server's
// certificate (for 127.0.0.1), two clients under the CA, and one
// self-signed client the CA never issued.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { X509Certificate, createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dpopToken } from "./dpop-script.mjs";

/** The fixture's realm, named in every challenge. */
const REALM = "fixture";

/** The issuer that requires certificate-bound tokens. */
const MTLS = "https://mtls.test";

/**
 * Makes the run's certificates in a new folder: `{ dir, ca, server,
 * clients: { a, b, rogue } }`, each with `cert` and `key` (PEM text) and
 * the paths `certFile`, `keyFile`; a client also its `thumbprint`
 * (`x5t#S256`) and `fingerprint` (hex SHA-256, as Cloudflare reports it).
 * `remove()` deletes the folder.
 */
export function makeCertificates() {
  const dir = mkdtempSync(join(tmpdir(), "gateway-certs-"));
  const openssl = (...args) => {
    const run = spawnSync("openssl", args, { cwd: dir, encoding: "utf8" });
    if (run.status !== 0) throw new Error(`openssl ${args.join(" ")} failed:\n${run.stderr}`);
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=gateway test CA");
  const issue = (name, extensions) => {
    writeFileSync(join(dir, `${name}.ext`), extensions);
    openssl("req", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
    openssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
      "-out", `${name}.pem`, "-days", "2", "-extfile", `${name}.ext`);
  };
  issue("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  for (const client of ["a", "b"]) issue(client, "extendedKeyUsage=clientAuth\n");
  openssl("req", "-x509", ...ec, "-keyout", "rogue.key", "-out", "rogue.pem", "-days", "2", "-subj", "/CN=rogue",
    "-addext", "extendedKeyUsage=clientAuth");
  const read = (name) => {
    const cert = readFileSync(join(dir, `${name}.pem`), "utf8");
    const der = new X509Certificate(cert).raw;
    return {
      cert,
      key: readFileSync(join(dir, `${name}.key`), "utf8"),
      certFile: join(dir, `${name}.pem`),
      keyFile: join(dir, `${name}.key`),
      thumbprint: createHash("sha256").update(der).digest("base64url"),
      fingerprint: createHash("sha256").update(der).digest("hex"),
    };
  };
  return {
    dir,
    ca: read("ca"),
    server: read("server"),
    clients: { a: read("a"), b: read("b"), rogue: read("rogue") },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A token of the issuer that requires certificate-bound tokens. */
function mtlsToken(claims) {
  return dpopToken(claims, { iss: MTLS });
}

/**
 * GET /orders/1 with `token` as a bearer token on a fresh connection to the
 * gateway on 127.0.0.1:`port`, presenting `client`'s certificate (or none)
 * by `transport`: over TLS, or as the edge reports it (`verified: false`,
 * as it reports a certificate that failed verification). `fields` are
 * added. Resolves to { status, headers, body }, or to { error } when the
 * connection failed (a handshake refused).
 */
export function sendPresenting(port, { transport, certificates }, token, client, { fields = {}, verified = true } = {}) {
  const headers = { connection: "close", authorization: `Bearer ${token}`, ...fields };
  const options = { host: "127.0.0.1", port, method: "GET", path: "/orders/1", agent: false, timeout: 10000 };
  let request = httpRequest;
  if (transport === "tls") {
    request = httpsRequest;
    Object.assign(options, { ca: certificates.ca.cert, ...(client ? { cert: client.cert, key: client.key } : {}) });
  } else if (transport === "edge") {
    const tlsClientAuth = client
      ? { certPresented: "1", certVerified: verified ? "SUCCESS" : "FAILED:self signed certificate", certFingerprintSHA256: client.fingerprint }
      : { certPresented: "0", certVerified: "NONE", certFingerprintSHA256: "" };
    headers["x-forwarded-proto"] = "https";
    headers["cf-blob"] = JSON.stringify({ clientIp: "127.0.0.1", tlsClientAuth });
  }
  options.headers = headers;
  return new Promise((resolve) => {
    const req = request(options, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on("error", (error) => resolve({ error }));
    });
    req.on("timeout", () => req.destroy(new Error(`no answer from 127.0.0.1:${port} within 10 s`)));
    req.on("error", (error) => resolve({ error }));
    req.end();
  });
}

/**
 * Runs the script against the gateway on 127.0.0.1:`port` whose upstreams
 * are `recorder` (startLimitsRecorder in limits-script.mjs), reaching it by
 * `transport` ("tls", "edge" or "none", above) with `certificates` from
 * makeCertificates.
 */
export async function runCertificateScript(port, recorder, { transport, certificates }) {
  const run = randomBytes(4).toString("hex");
  const { a, b, rogue } = certificates.clients;
  const reached = () => recorder.received.length;

  const send = (token, client, options) => sendPresenting(port, { transport, certificates }, token, client, options);

  const forwarded = async (token, client, sub, what, options) => {
    const before = reached();
    const res = await send(token, client, options);
    assert.equal(res.status, 200, `${what}: ${res.status ?? res.error} ${res.body ?? ""}`);
    assert.equal(reached() - before, 1, `${what}: reached the upstream once`);
    const upstream = recorder.received.at(-1);
    assert.equal(upstream.url, "/orders-svc/orders/1", what);
    assert.equal(upstream.headers.authorization, undefined, `${what}: the token never travels upstream`);
    assert.equal(upstream.headers["x-gateway-subject"], sub, what);
    for (const forged of ["x-forwarded-client-cert", "ssl-client-cert", "x-client-cert"]) {
      assert.equal(upstream.headers[forged], undefined, `${what}: ${forged} never travels upstream`);
    }
  };
  const refused = async (token, client, reason, what, options) => {
    const before = reached();
    const res = await send(token, client, options);
    assert.equal(res.status, 401, `${what}: ${res.status ?? res.error} ${res.body ?? ""}`);
    assert.deepEqual(JSON.parse(res.body), { error: "invalid_token", error_description: reason }, what);
    assert.equal(
      res.headers["www-authenticate"],
      `Bearer realm="${REALM}", error="invalid_token", error_description="${reason}"`,
      `${what}: the challenge`,
    );
    assert.equal(reached(), before, `${what}: a refused request never reaches the upstream`);
  };
  const MISMATCH = "token bound to another client certificate";
  const MISSING = "token bound to a client certificate, none presented";
  const REQUIRED = "certificate-bound token required";
  const UNVERIFIED = "token bound to a key (cnf) not verified here";

  const sub = `mtls-${run}`;
  const boundToA = dpopToken({ sub, cnf: { "x5t#S256": a.thumbprint } });
  const plain = dpopToken({ sub: `plain-${run}` });
  // Fields a client could send to claim a certificate it does not have.
  const claims = {
    "x-forwarded-client-cert": `Hash=${a.fingerprint};Subject="CN=a"`,
    "ssl-client-cert": encodeURIComponent(a.cert),
    "x-client-cert": a.thumbprint,
  };

  // 1. A bearer token bound to nothing passes as before, with a client
  //    certificate or without one.
  await forwarded(plain, null, `plain-${run}`, "a bearer token, no certificate");
  if (transport !== "none") await forwarded(plain, b, `plain-${run}`, "a bearer token over a connection with a certificate");

  // 2. The bound token: with its certificate only.
  if (transport === "none") {
    await refused(boundToA, null, MISSING, "wasmtime serve sees no client certificate");
  } else {
    await forwarded(boundToA, a, sub, "the bound token with its certificate");
    await refused(boundToA, b, MISMATCH, "the bound token with another client's certificate");
  }
  await refused(boundToA, null, MISSING, "the bound token without a certificate");
  await refused(boundToA, null, MISSING, "the bound token without a certificate, its fields claiming one", { fields: claims });

  // 3. A certificate the CA never issued: refused in the handshake by a host
  //    that ends TLS, reported unverified by the edge. Nothing reaches the
  //    upstream either way.
  if (transport === "tls") {
    const before = reached();
    const res = await send(dpopToken({ sub, cnf: { "x5t#S256": rogue.thumbprint } }), rogue);
    assert.ok(res.error || res.status === 401, `a self-signed client certificate: ${res.status} ${res.body ?? ""}`);
    assert.equal(reached(), before, "a self-signed client certificate reaches nothing");
  } else if (transport === "edge") {
    await refused(dpopToken({ sub, cnf: { "x5t#S256": rogue.thumbprint } }), rogue, MISSING,
      "a certificate the edge could not verify", { verified: false });
  }

  // 4. The thumbprint as the token writes it, in other spellings: the
  //    certificate's hex digest, padded base64url, standard base64, another
  //    case. None is the certificate's x5t#S256.
  const spellings = [
    a.fingerprint,
    `${a.thumbprint}=`,
    Buffer.from(a.thumbprint, "base64url").toString("base64"),
    a.thumbprint.toLowerCase() === a.thumbprint ? a.thumbprint.toUpperCase() : a.thumbprint.toLowerCase(),
  ].filter((spelling) => spelling !== a.thumbprint);
  for (const spelling of spellings) {
    const token = dpopToken({ sub, cnf: { "x5t#S256": spelling } });
    await refused(token, transport === "none" ? null : a, transport === "none" ? MISSING : MISMATCH, `cnf["x5t#S256"] spelled ${spelling}`);
  }

  // 5. Confirmations the gateway does not verify: never a bearer token.
  for (const cnf of [
    { "x5t#S256": a.thumbprint, jwk: { kty: "EC" } },
    { x5t: a.thumbprint },
    { "x5t#s256": a.thumbprint },
  ]) {
    await refused(dpopToken({ sub, cnf }), transport === "none" ? null : a, UNVERIFIED, `cnf ${JSON.stringify(cnf)}`);
  }

  // 6. An issuer that requires the binding refuses its bearer tokens; its
  //    bound tokens pass with their certificate.
  await refused(mtlsToken({ sub }), transport === "none" ? null : a, REQUIRED, "a bearer token of an issuer that requires the binding");
  const strictBound = mtlsToken({ sub, cnf: { "x5t#S256": a.thumbprint } });
  if (transport === "none") await refused(strictBound, null, MISSING, "the required binding, no certificate seen");
  else await forwarded(strictBound, a, sub, "a bound token of an issuer that requires the binding");
}
