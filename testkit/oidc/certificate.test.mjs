// Certificate-bound tokens from a real OpenID provider (RFC 8705), on every
// host: node-oidc-provider (provider.mjs) issues a JWT access token bound to
// the client certificate it was asked with (cnf["x5t#S256"]); the gateway,
// running the module built from testkit/fixture-oidc.toml, finds the
// provider's keys through discovery and forwards the token only from a
// connection with that certificate. host-sim serve and Envoy end the
// client's TLS themselves with a client CA; workerd gets the certificate
// as Cloudflare's edge reports it (request.cf.tlsClientAuth, played by
// the test); wasmtime serve sees no client certificate and refuses the
// token. Certificates are made with openssl by the test.
//
//   node --test testkit/oidc/certificate.test.mjs
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { ROOT, startHostSim, startWorkerd } from "../../deploy/workerd/harness.mjs";
import { startEnvoyFilter } from "../../deploy/envoy/harness.mjs";
import { REUSE_ONE_INSTANCE, startWasiHttp } from "../../deploy/wasi-http/harness.mjs";
import { makeCertificates, sendPresenting } from "../conformance/certificate-script.mjs";
import { OIDC_CONFIG, OIDC_ENVOY_WASM, OIDC_WASI_HTTP_WASM, OIDC_WASM, throughOidcHosts } from "./provider.mjs";


const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const decode = (part) => JSON.parse(Buffer.from(part, "base64url").toString());

const certificates = makeCertificates();
after(() => certificates.remove());
const { ca, server, clients } = certificates;
const serverTls = ["--tls-cert", server.certFile, "--tls-key", server.keyFile];

/** Each host: [name, REQUIRE_* variable, what it needs built, start(overrides), transport]. */
const HOSTS = [
  ["host-sim serve", "REQUIRE_HOST_SIM", [OIDC_WASM, join(ROOT, "target", "release", "host-sim")],
    (overrides) => startHostSim([...overrides.flatMap(([from, to]) => ["--upstream-override", `${from}=${to}`]), ...serverTls, "--tls-client-ca", ca.certFile], 60000, OIDC_WASM), "tls"],
  ["workerd", "REQUIRE_HOST_SIM", [OIDC_WASM, join(ROOT, "node_modules", ".bin", "workerd")],
    (overrides) => startWorkerd(overrides.map(([from, to]) => `${from}=${to}`).join(","), OIDC_WASM, { edge: true }), "edge"],
  ["envoy + gateway filter", "REQUIRE_ENVOY", [OIDC_ENVOY_WASM, join(ROOT, "target", "envoy-venv", "bin", "envoy")],
    (overrides) => startEnvoyFilter(overrides, { wasm: OIDC_ENVOY_WASM, config: OIDC_CONFIG, flags: [...serverTls, "--client-ca", ca.certFile] }), "tls"],
  ["wasmtime serve (wasi:http component)", "REQUIRE_WASI_HTTP", [OIDC_WASI_HTTP_WASM, join(ROOT, "target", "tools", "bin", "wasmtime")],
    (overrides) => startWasiHttp(overrides, OIDC_WASI_HTTP_WASM, REUSE_ONE_INSTANCE), "none"],
];

throughOidcHosts("certificate-bound tokens from node-oidc-provider", HOSTS, (started, transport) => {
  let provider;
  let recorder;
  let host;
  before(() => ({ provider, recorder, host } = started));

  const send = (token, client) => sendPresenting(host.port, { transport, certificates }, token, client);
  /** The first call, tried again while the host answers 503 for keys it has not fetched yet. */
  const firstCall = async (token, client) => {
    const deadline = Date.now() + 15000;
    let res = await send(token, client);
    while (res.status === 503 && Date.now() < deadline) {
      await sleep(200);
      res = await send(token, client);
    }
    return res;
  };
  const refusedAs = (res, description, what) => {
    assert.equal(res.status, 401, `${what}: ${res.status ?? res.error} ${res.body ?? ""}`);
    assert.deepEqual(JSON.parse(res.body), { error: "invalid_token", error_description: description }, what);
  };

  test("the provider binds the token to the client's certificate; the gateway forwards it only with that certificate", async () => {
    const issued = await provider.token(null, { certificate: clients.a.cert });
    assert.equal(issued.status, 200, JSON.stringify(issued.body));
    assert.equal(issued.body.token_type, "Bearer");
    const token = issued.body.access_token;
    const claims = decode(token.split(".")[1]);
    assert.deepEqual(claims.cnf, { "x5t#S256": clients.a.thumbprint }, "bound to client a's certificate");
    assert.equal(claims.sub, provider.mtlsClientId);

    const before = recorder.received.length;
    if (transport === "none") {
      refusedAs(await firstCall(token, null), "token bound to a client certificate, none presented", "no certificate reaches a component");
    } else {
      const res = await firstCall(token, clients.a);
      assert.equal(res.status, 200, `with its certificate: ${res.status ?? res.error} ${res.body ?? ""}`);
      assert.equal(recorder.received.length, before + 1, "reached the upstream once");
      const upstream = recorder.received.at(-1);
      assert.equal(upstream.headers["x-gateway-subject"], provider.mtlsClientId);
      assert.equal(upstream.headers.authorization, undefined, "the token never travels upstream");
      refusedAs(await send(token, clients.b), "token bound to another client certificate", "another client's certificate");
      assert.equal(recorder.received.length, before + 1, "a refused request never reaches the upstream");
    }
    refusedAs(await send(token, null), "token bound to a client certificate, none presented", "no certificate");
  });
});
