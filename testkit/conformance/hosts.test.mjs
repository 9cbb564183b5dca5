// The conformance corpora over real HTTP, through every host, to a
// recording upstream on loopback: the forwarding corpus (forwarding.jsonl)
// and the attack corpus (attacks.jsonl, written by `write_http_corpus` in
// security/tests/attacks.rs, whose tests keep it current) through the module
// built from testkit/fixture.toml, and the policy corpus (policies.jsonl, with the
// issuers' leeway minted here around the real clock) through the module
// built from testkit/fixture-policies.toml (`make fixture` builds both).
// Each case's bytes go out on a fresh connection, and every response, and
// every request the upstream received, must be the outcome the corpus
// states. A host passes only with the corpus's results, so all hosts give
// the same ones.
//
//   node --test testkit/conformance/
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import net from "node:net";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { FIXTURE_WASM, ROOT, hostSimServeHelp, mintToken, startHostSim, startWorkerd } from "../../deploy/workerd/harness.mjs";
import {
  FIXTURE_CONFIG,
  FIXTURE_ENVOY_WASM,
  FIXTURE_NATIVE,
  envoyFilterReady,
  envoyNativeReady,
  startEnvoyFilter,
  startEnvoyNative,
} from "../../deploy/envoy/harness.mjs";
import { WASI_HTTP_FIXTURES, startWasiHttp, wasiHttpReady, withoutPeer } from "../../deploy/wasi-http/harness.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const readCorpus = (path) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
const CASES = readCorpus(join(HERE, "forwarding.jsonl"));
const POLICY_CASES = readCorpus(join(HERE, "policies.jsonl"));
const ATTACKS = readCorpus(join(HERE, "attacks.jsonl"));

/** The fixture's origins (testkit/fixture.toml); the recorder stands in for each. */
const ORIGINS = ["http://127.0.0.1:9201", "http://127.0.0.1:9202"];

/** The modules each corpus runs through, as each host loads them (`make fixture`). */
const MODULES = {
  forwarding: {
    wasm: FIXTURE_WASM,
    envoy: { wasm: FIXTURE_ENVOY_WASM, config: FIXTURE_CONFIG },
    native: { native: FIXTURE_NATIVE.forwarding, config: FIXTURE_CONFIG },
    wasiHttp: WASI_HTTP_FIXTURES.forwarding,
  },
  policies: {
    wasm: join(ROOT, "target", "fixture", "gateway-policies.wasm"),
    envoy: { wasm: join(ROOT, "target", "fixture", "gateway-policies-envoy.wasm"), config: join(ROOT, "testkit", "fixture-policies.toml") },
    native: { native: FIXTURE_NATIVE.policies, config: join(ROOT, "testkit", "fixture-policies.toml") },
    wasiHttp: WASI_HTTP_FIXTURES.policies,
  },
};

/**
 * The recorder's own response fields (RECORDER_FIELDS of generate.mjs): CORS
 * fields and a Vary of its own, so that the corpus sees what the gateway
 * removes from and adds to an upstream's response.
 */
const RECORDER_FIELDS = {
  "content-type": "application/json",
  "x-recorder": "1",
  "access-control-allow-origin": "*",
  "access-control-allow-credentials": "true",
  "access-control-allow-methods": "*",
  "access-control-allow-headers": "*",
  "access-control-expose-headers": "x-recorder",
  vary: "Accept-Encoding",
};

/**
 * Fields each host's HTTP stack owns: framing and the connection. The plan
 * never sets them; the corpus leaves them out.
 */
const FRAMING = new Set(["host", "content-length", "transfer-encoding", "connection", "keep-alive"]);

/**
 * A recording upstream: one server per fixture origin; answers 200 with a
 * JSON record as its body, or, to a HEAD (whose response has no body), in
 * the field x-recorder-record (base64url), with the Content-Length the
 * body would have had.
 */
async function startRecorder() {
  const received = [];
  let inFlight = 0; // requests begun and not yet over: a forward still arriving
  const servers = [];
  const addresses = {};
  for (const origin of ORIGINS) {
    const server = createServer((req, res) => {
      const chunks = [];
      inFlight += 1;
      req.once("close", () => (inFlight -= 1));
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const headers = [];
        for (let i = 0; i < req.rawHeaders.length; i += 2) {
          const name = req.rawHeaders[i].toLowerCase();
          if (!FRAMING.has(name)) headers.push([name, req.rawHeaders[i + 1]]);
        }
        headers.sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1));
        const record = {
          line: `${req.method} ${req.url} HTTP/${req.httpVersion}`,
          origin,
          headers,
          body: Buffer.concat(chunks).toString("latin1"),
          host: req.headers.host ?? null,
        };
        received.push(record);
        const json = JSON.stringify(record);
        if (req.method === "HEAD") {
          const fields = { "x-recorder-record": Buffer.from(json).toString("base64url"), "content-length": Buffer.byteLength(json) };
          res.writeHead(200, { ...RECORDER_FIELDS, ...fields });
          res.end();
        } else {
          res.writeHead(200, RECORDER_FIELDS);
          res.end(json);
        }
      });
    });
    server.keepAliveTimeout = 1000;
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    addresses[origin] = `http://127.0.0.1:${server.address().port}`;
  }
  return {
    received,
    addresses,
    /** Waits (at most `ms`) until no request is still arriving. */
    settled: async (ms = 3000) => {
      await new Promise((r) => setTimeout(r, 150)); // a forward's first bytes on their way
      for (const end = Date.now() + ms; inFlight > 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
    },
    close: () =>
      Promise.all(servers.map((s) => new Promise((r) => (s.closeAllConnections?.(), s.close(() => r()))))),
  };
}

/**
 * The method of each request in `bytes` (pipelined requests, each with its
 * Content-Length body), as far as they can be told apart: a response to
 * HEAD has no body whatever its fields say (RFC 9110 section 9.3.2).
 */
function methodsOf(bytes) {
  const methods = [];
  let at = 0;
  while (at < bytes.length) {
    const end = bytes.indexOf("\r\n\r\n", at);
    if (end < 0) break;
    const head = bytes.slice(at, end);
    methods.push(head.slice(0, head.indexOf(" ")));
    if (/\r\ntransfer-encoding:/i.test(head)) break; // chunked: the rest is not told apart
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    at = end + 4 + (length ? Number(length[1]) : 0);
  }
  return methods;
}

/**
 * Parses as many complete responses as `buf` holds: { status, headers (the
 * last of each name), fields ([name, value] in order), body }. The
 * responses to the requests `methods` names HEAD are read without a body.
 */
function parseResponses(buf, methods = []) {
  const out = [];
  let at = 0;
  while (at < buf.length) {
    const end = buf.indexOf("\r\n\r\n", at);
    if (end < 0) break;
    const lines = buf.subarray(at, end).toString("latin1").split("\r\n");
    const status = Number(lines[0].split(" ")[1]);
    const headers = {};
    const fields = [];
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      headers[name] = line.slice(colon + 1).trim();
      fields.push([name, headers[name]]);
    }
    let bodyStart = end + 4;
    let body;
    if (methods[out.length] === "HEAD") {
      body = Buffer.alloc(0);
    } else if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      const parts = [];
      for (;;) {
        const lineEnd = buf.indexOf("\r\n", bodyStart);
        if (lineEnd < 0) return out;
        const size = parseInt(buf.subarray(bodyStart, lineEnd).toString("latin1"), 16);
        if (size === 0) {
          bodyStart = lineEnd + 4;
          break;
        }
        if (lineEnd + 2 + size > buf.length) return out;
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        bodyStart = lineEnd + 2 + size + 2;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers["content-length"] ?? 0);
      if (bodyStart + length > buf.length) break;
      body = buf.subarray(bodyStart, bodyStart + length);
      bodyStart += length;
    }
    out.push({ status, headers, fields, body: body.toString("utf8") });
    at = bodyStart;
  }
  return out;
}

/** Sends `bytes` on a fresh connection and reads `count` responses (bounded). */
function exchange(port, bytes, count, timeoutMs = 10000) {
  const methods = methodsOf(bytes);
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    let buf = Buffer.alloc(0);
    const done = (result) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => {
      sock.destroy();
      const got = parseResponses(buf, methods);
      got.length > 0 ? resolve(got) : reject(new Error(`no answer from 127.0.0.1:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on("data", (c) => {
      buf = Buffer.concat([buf, c]);
      const got = parseResponses(buf, methods);
      if (got.length >= count) done(got);
    });
    sock.on("error", () => {});
    sock.on("close", () => done(parseResponses(buf, methods)));
    sock.write(Buffer.from(bytes, "latin1"));
  });
}

/**
 * What a response shows, in the corpus's terms. A response to HEAD has no
 * body, so no reason: its status and fields are what it shows.
 */
function outcomeOf(response) {
  if (response.headers["x-recorder"]) {
    const kept = response.headers["x-recorder-record"];
    const record = JSON.parse(kept ? Buffer.from(kept, "base64url").toString() : response.body);
    return { status: 200, upstream: { line: record.line, origin: record.origin, headers: record.headers, body: record.body } };
  }
  let reason = null;
  try {
    reason = JSON.parse(response.body).error_description ?? null;
  } catch {
    // not the module's JSON: the host's HTTP parser answered
  }
  return { status: response.status, reason };
}

/** The value of the response field `name`: its lines joined with ", " (RFC 9110 section 5.3), or null. */
function combined(fields, name) {
  const values = fields.filter(([n]) => n === name).map(([, v]) => v);
  return values.length > 0 ? values.join(", ") : null;
}

/** A field value with the spaces around its list commas made one (RFC 9110 section 5.6.1). */
const listValue = (value) => value?.split(",").map((item) => item.trim()).join(", ") ?? null;

/** Whether the response's `fields` have the values and absences `expected` states. */
function responseMatches(expected, fields) {
  return (
    (expected.response_headers ?? []).every(([name, value]) => listValue(combined(fields, name)) === listValue(value)) &&
    (expected.absent_response_headers ?? []).every((name) => combined(fields, name) === null)
  );
}

/**
 * Whether `got`, from `host` (a key of HOSTS), with the response's
 * `fields`, is the stated outcome (or one of its choices).
 */
function matches(expected, got, host, fields = [], method = "") {
  if (expected.any_of) return expected.any_of.some((choice) => matches(choice, got, host, fields, method));
  // Pinned per host: every host must be listed, so a new one states its own.
  if (expected.hosts) return host in expected.hosts && matches(expected.hosts[host], got, host, fields, method);
  // The attack corpus: refused with the module's status and reason.
  if (expected.refused) {
    return !got.upstream && got.status === expected.refused.status && got.reason === expected.refused.reason;
  }
  // Forwarded to the route's origin with the token's subject (or none).
  if (expected.forwarded) {
    const subject = got.upstream?.headers.find(([name]) => name === "x-gateway-subject")?.[1] ?? null;
    return got.upstream?.origin === expected.forwarded.origin && subject === expected.forwarded.subject;
  }
  const { front_end, response_headers, absent_response_headers, ...stated } = expected;
  // The reason travels in the body, which a response to HEAD does not
  // have: there the status and the fields are compared (the native runner,
  // worker/tests/conformance.rs, compares the module's reason).
  const exact = method === "HEAD" && "reason" in stated ? { ...stated, reason: null } : stated;
  if (front_end && exact.status === undefined) return got.status >= 400 && got.reason === null && !got.upstream;
  try {
    assert.deepEqual(got, exact);
    return responseMatches(expected, fields);
  } catch {
    // The host's own parser may refuse first: the same status, no module reason.
    return front_end === true && got.status === exact.status && got.reason !== exact.reason && !got.upstream;
  }
}

/**
 * One host under `title`: a recorder and the gateway `start` makes to
 * forward to it, then `check(c, gateway, recorder, host)` for each case.
 */
function describeHost(title, host, start, cases, timeout, check) {
  describe(title, { timeout }, () => {
    let recorder;
    let gateway;
    before(async () => {
      recorder = await startRecorder();
      gateway = await start(recorder);
    });
    after(async () => {
      await gateway?.proc.stop();
      await recorder?.close();
    });
    for (const c of cases) test(c.name, () => check(c, gateway, recorder, host));
  });
}

/**
 * The forwarding and policy corpora: every response, and every forward, as
 * the corpus states. A case minted at run time has `prepare()` instead of
 * its request and expectations.
 */
async function checkForwarding(c, gateway, recorder, host) {
  const { request, expect } = c.prepare ? c.prepare() : c;
  const seen = recorder.received.length;
  const responses = await exchange(gateway.port, request, expect.length);
  const got = responses.map(outcomeOf);
  const methods = methodsOf(request);
  assert.equal(got.length, expect.length, `responses: ${JSON.stringify(got)}`);
  expect.forEach((expected, i) =>
    assert.ok(
      matches(expected, got[i], host, responses[i].fields, methods[i]),
      `response ${i + 1}\n  expected ${JSON.stringify(expected)}\n  got      ${JSON.stringify(got[i])}\n  fields   ${JSON.stringify(responses[i].fields)}`,
    ),
  );
  // Nothing reaches the upstream but the forwards the corpus states.
  const forwards = got.filter((g) => g.upstream).length;
  assert.equal(recorder.received.length - seen, forwards, "requests the upstream received");
  for (const record of recorder.received.slice(seen)) {
    assert.equal(`http://${record.host}`, recorder.addresses[record.origin], "Host is the upstream's");
  }
}

/**
 * The attack corpus (see `write_http_corpus` in security/tests/attacks.rs):
 * a canonical request gets the module's exact answer; any other is refused
 * (by the module, by the host's own parser, or by not answering a request
 * the host does not take as HTTP/1), or forwarded only when it carries a
 * valid token. Nothing unauthorised reaches the upstream.
 */
async function checkAttack(c, gateway, recorder, host) {
  const seen = recorder.received.length;
  const responses = await exchange(gateway.port, c.request, 1, 5000).catch((e) => (c.front_end ? [] : Promise.reject(e)));
  // A request whose framing the host reads otherwise than the module (such
  // as a body the client never ends) may reach the upstream only as its
  // connection closes: counted here, not in the next case.
  if (responses.length === 0) await recorder.settled();
  const got = responses.map(outcomeOf)[0];
  const forwards = recorder.received.length - seen;
  if (!c.front_end) {
    assert.ok(got && matches(c.expect[0], got, host), `expected ${JSON.stringify(c.expect[0])}\n  got      ${JSON.stringify(got)}`);
    assert.equal(forwards, got.upstream ? 1 : 0, "requests the upstream received");
  } else if (forwards > 0 || got?.upstream) {
    assert.ok(c.front_end.valid_token, `forwarded without a valid token: ${JSON.stringify(got)}`);
  } else if (got) {
    assert.ok(got.status >= 400, `neither refused nor forwarded: ${JSON.stringify(got)}`);
  }
}

/**
 * The issuers' own leeway (30 s for the first, none for the partner), with
 * tokens minted around the real clock just before each is sent: the
 * corpus's tokens expire in 2100, and hosts read the real clock. The native
 * runner checks the same at its fixed clock (`each_issuer_has_its_own_leeway`).
 */
function leewayCases() {
  const policy = JSON.parse(readFileSync(join(ROOT, "target", "fixture", "fixture-policies.json"), "utf8"));
  const [first, partner] = policy.issuers;
  const minted = (issuer, times) => () => {
    const now = Math.floor(Date.now() / 1000);
    const key = Buffer.from(issuer.keys[0].secret_hex, "hex");
    const token = mintToken(key, { iss: issuer.iss, aud: "orders", sub: "alice", ...times(now) }, { alg: "HS256", typ: "JWT", kid: issuer.keys[0].kid });
    return `GET /orders/7 HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer ${token}\r\n\r\n`;
  };
  const forwarded = { forwarded: { origin: ORIGINS[0], subject: "alice" } };
  const cases = [
    ["first issuer: expired 10 s ago, within its 30 s leeway", first, (now) => ({ exp: now - 10 }), forwarded],
    ["partner: expired 10 s ago, no leeway", partner, (now) => ({ exp: now - 10 }), { refused: { status: 401, reason: "token expired" } }],
    ["first issuer: valid 10 s from now, within its leeway", first, (now) => ({ exp: now + 600, nbf: now + 10 }), forwarded],
    ["partner: valid 10 s from now, no leeway", partner, (now) => ({ exp: now + 600, nbf: now + 10 }), { refused: { status: 401, reason: "token not yet valid" } }],
    // RFC 7519 section 4.1.4: valid only before exp, so a token is expired
    // from its exp second on (the host reads the clock after this one).
    ["partner: exp is this second", partner, (now) => ({ exp: now }), { refused: { status: 401, reason: "token expired" } }],
    ["first issuer: exp + leeway is this second", first, (now) => ({ exp: now - 30 }), { refused: { status: 401, reason: "token expired" } }],
  ];
  return cases.map(([name, issuer, times, expected]) => ({
    name: `leeway: ${name}`,
    prepare: () => ({ request: minted(issuer, times)(), expect: [expected] }),
  }));
}

const overrides = (recorder) => ORIGINS.map((o) => [o, recorder.addresses[o]]);

/**
 * Each host (its title, its key in a corpus's `hosts` outcomes), started
 * with `module` to forward to `recorder`, when it is there to run.
 */
const HOSTS = [
  ["workerd", "workerd", (recorder, module) => startWorkerd(overrides(recorder).map(([from, to]) => `${from}=${to}`).join(","), module.wasm)],
];
// Required in `make test` (REQUIRE_HOST_SIM=1); skipped elsewhere when host-sim is not built.
if (hostSimServeHelp() || process.env.REQUIRE_HOST_SIM === "1") {
  HOSTS.push([
    "host-sim serve",
    "host-sim",
    (recorder, module) =>
      startHostSim(overrides(recorder).flatMap(([from, to]) => ["--upstream-override", `${from}=${to}`]), 60000, module.wasm),
  ]);
}
// Required in `make test` (REQUIRE_ENVOY=1); skipped elsewhere when Envoy or the filter is not built.
// Envoy joins repeated Host fields into one :authority ("gw.test,other")
// before any filter runs; the core refuses a comma in a host, so the pair
// is still a 400.
if (envoyFilterReady() || process.env.REQUIRE_ENVOY === "1") {
  HOSTS.push(["envoy + gateway filter", "envoy", (recorder, module) => startEnvoyFilter(overrides(recorder), module.envoy)]);
}

// The same core as a native Envoy dynamic module in the filter's place
// (build/envoy-native.sh, `envoy-filter --native`): Envoy's HTTP stack is
// the same, so it states the same outcomes as the filter (`envoy`).
// Required in `make test` (REQUIRE_ENVOY=1), as the filter is.
if (envoyNativeReady() || process.env.REQUIRE_ENVOY === "1") {
  HOSTS.push(["envoy + native module", "envoy", (recorder, module) => startEnvoyNative(overrides(recorder), module.native)]);
}

// Required in `make test` (REQUIRE_WASI_HTTP=1); skipped elsewhere when wasmtime or the components are not built.
// wasi:http shows a component no client address: on this host the corpus's
// forwards carry X-Forwarded-For: unknown (withoutPeer, deploy/wasi-http/harness.mjs).
if (wasiHttpReady() || process.env.REQUIRE_WASI_HTTP === "1") {
  HOSTS.push(["wasmtime serve (wasi:http component)", "wasi-http", (recorder, module) => startWasiHttp(overrides(recorder), module.wasiHttp), withoutPeer]);
}

for (const [name, host, start, corpus = (cases) => cases] of HOSTS) {
  const forwarding = (recorder) => start(recorder, MODULES.forwarding);
  describeHost(`forwarding conformance: ${name}`, host, forwarding, corpus(CASES), 180000, checkForwarding);
  const policies = (recorder) => start(recorder, MODULES.policies);
  describeHost(`policy conformance: ${name}`, host, policies, corpus([...POLICY_CASES, ...leewayCases()]), 300000, checkForwarding);
  describeHost(`attack corpus: ${name}`, host, forwarding, corpus(ATTACKS), 600000, checkAttack);
}

// Envoy calls a filter's callback only when the module exports it
// (deploy/envoy/filter/src/callbacks.rs compiles the response callback, and the
// delete callback that forgets a stream's response edits, when the config
// changes responses: CORS). The policy corpus's CORS cases need them; the
// forwarding corpus runs without them, and the recorder's own CORS fields
// come back untouched: one call into the VM per request, with nothing kept
// per stream (the tick, once a second, hands Envoy the counts).
if (envoyFilterReady() || process.env.REQUIRE_ENVOY === "1") {
  test("the Envoy filter has stream callbacks beside the request's exactly when its config changes responses", () => {
    const callbacks = (path) =>
      WebAssembly.Module.exports(new WebAssembly.Module(readFileSync(path)))
        .map((e) => e.name)
        .filter((name) => name.startsWith("proxy_on_"));
    // Beside them, every counting build has the root context's configure
    // and tick: the counts go to Envoy on the tick, not per request.
    assert.deepEqual(callbacks(MODULES.forwarding.envoy.wasm).sort(), [
      "proxy_on_configure",
      "proxy_on_request_headers",
      "proxy_on_tick",
    ]);
    assert.deepEqual(callbacks(MODULES.policies.envoy.wasm).sort(), [
      "proxy_on_configure",
      "proxy_on_delete",
      "proxy_on_request_headers",
      "proxy_on_response_headers",
      "proxy_on_tick",
    ]);
  });
}
