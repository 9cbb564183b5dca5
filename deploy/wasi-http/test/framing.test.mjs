// The request body's framing through `wasmtime serve`, byte for byte: each
// spelling of a body's framing sent on a raw socket (fetch would normalize
// it) to the component and to host-sim serve (the module given the raw
// head), each forwarding to a recorder that reads the upstream request off
// its socket. The component forwards the framing the plan says (no body
// where the request had none; Content-Length or chunked as the client's
// body was), and a body framed two ways never reaches the upstream as a
// complete request.
//
// Where the hosts differ, the case is pinned with why
// (deploy/wasi-http/README.md, "What wasi:http shows a component"): both
// read requests with hyper (host-sim 1.12, wasmtime serve 48's 1.9), which
// refuses some spellings before the module or the component runs and reads
// others as one framing; and wasi:http keeps Transfer-Encoding from the
// component.
//
//   node --test deploy/wasi-http/test/
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { FIXTURE_WASM, hostSimServeHelp, mintToken, rawRequest, readFixture, startHostSim } from "../../workerd/harness.mjs";
import { startRecorder } from "../recorder.mjs";
import { WASI_HTTP_FIXTURES, startWasiHttp, wasiHttpReady } from "../harness.mjs";

const required = process.env.REQUIRE_WASI_HTTP === "1";
const skip =
  !required && (!wasiHttpReady() || !hostSimServeHelp()) && "wasmtime, host-sim or the fixtures are not built (make wasmtime host fixture)";

const token = () => {
  const { key, issuer, kid } = readFixture();
  return mintToken(key, { iss: issuer, aud: "orders", sub: "alice", exp: Math.floor(Date.now() / 1000) + 600 }, { alg: "HS256", typ: "JWT", kid });
};

/** A request head for /orders/<id> with a valid token, `fields` and the body bytes after it. */
const request = (method, id, fields, body = "") =>
  `${method} /orders/${id} HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer ${token()}\r\n${fields.map((f) => `${f}\r\n`).join("")}Connection: close\r\n\r\n${body}`;

const HELLO_CHUNKED = "5\r\nhello\r\n0\r\n\r\n";

/** What a host does with a case: its status, and what the upstream receives (null: no complete request). */
const answered = (status, upstream = null) => ({ status, upstream });
const forwarded = (framing, body) => answered(200, { framing, body });

/**
 * The spellings. `same`: the component answers as host-sim does and the
 * upstream receives what it receives from host-sim. Otherwise `hostSim`
 * and `wasmtime` say what each does, and `why` why they differ; in each
 * such case the upstream receives one reading of the request, or none.
 */
const CASES = [
  // The framings every host forwards as they came.
  { id: "length", bytes: (id) => request("POST", id, ["Content-Length: 5"], "hello"), same: forwarded("length 5", "hello") },
  { id: "chunked", bytes: (id) => request("POST", id, ["Transfer-Encoding: chunked"], HELLO_CHUNKED), same: forwarded("chunked", "hello") },
  { id: "zero-length", bytes: (id) => request("POST", id, ["Content-Length: 0"]), same: forwarded("length 0", "") },
  // No body: none is forwarded, and no framing field.
  ...["DELETE", "OPTIONS", "POST", "PUT", "GET", "HEAD", "PATCH"].map((method) => ({
    id: `no-body-${method.toLowerCase()}`,
    bytes: (id) => request(method, id, []),
    same: forwarded("none", ""),
  })),
  // Content-Length beside chunked.
  ...[
    ["longer", ["Content-Length: 4", "Transfer-Encoding: chunked"]],
    ["shorter", ["Content-Length: 9", "Transfer-Encoding: chunked"]],
    ["zero", ["Content-Length: 0", "Transfer-Encoding: chunked"]],
  ].map(([than, fields]) => ({
    id: `length-then-chunked-${than}`,
    bytes: (id) => request("POST", id, fields, HELLO_CHUNKED),
    hostSim: forwarded("chunked", "hello"),
    wasmtime: answered(400),
    why:
      "host-sim's hyper drops a Content-Length that Transfer-Encoding follows and forwards the chunks; wasmtime serve's keeps it and reads the chunks, " +
      "and the component, finding the body's length not the field's, refuses (the module's answer to both fields) before the upstream has a complete request",
  })),
  {
    id: "length-then-chunked-equal",
    bytes: (id) => request("POST", id, ["Content-Length: 5", "Transfer-Encoding: chunked"], HELLO_CHUNKED),
    hostSim: forwarded("chunked", "hello"),
    wasmtime: forwarded("length 5", "hello"),
    why: "wasmtime serve's hyper keeps the Content-Length and reads the chunks; a body of exactly that length shows the component nothing else: the same bytes, under that length",
  },
  { id: "chunked-then-length", bytes: (id) => request("POST", id, ["Transfer-Encoding: chunked", "Content-Length: 4"], HELLO_CHUNKED), same: forwarded("chunked", "hello") },
  { id: "get-length-then-chunked", bytes: (id) => request("GET", id, ["Content-Length: 4", "Transfer-Encoding: chunked"], HELLO_CHUNKED), same: answered(400) },
  // Codings other than chunked.
  {
    id: "gzip-then-chunked",
    bytes: (id) => request("POST", id, ["Transfer-Encoding: gzip, chunked"], HELLO_CHUNKED),
    hostSim: answered(400),
    wasmtime: forwarded("chunked", "hello"),
    why: "hyper reads a coding list that ends in chunked as chunked and keeps Transfer-Encoding from the component, which forwards the bytes chunked (the gzip coding is not passed on)",
  },
  { id: "chunked-then-identity", bytes: (id) => request("POST", id, ["Transfer-Encoding: chunked, identity"], HELLO_CHUNKED), same: answered(400) },
  { id: "identity", bytes: (id) => request("POST", id, ["Transfer-Encoding: identity"], "hello"), same: answered(400) },
  // Two lengths.
  { id: "two-lengths", bytes: (id) => request("POST", id, ["Content-Length: 4", "Content-Length: 5"], "hello"), same: answered(400) },
  { id: "two-equal-lengths", bytes: (id) => request("POST", id, ["Content-Length: 5", "Content-Length: 5"], "hello"), same: forwarded("length 5", "hello") },
  // Content on GET.
  { id: "get-with-content", bytes: (id) => request("GET", id, ["Transfer-Encoding: chunked"], HELLO_CHUNKED), same: answered(400) },
  {
    id: "get-empty-chunked",
    bytes: (id) => request("GET", id, ["Transfer-Encoding: chunked"], "0\r\n\r\n"),
    hostSim: answered(400),
    wasmtime: forwarded("none", ""),
    why: "an empty chunked body shows the component a body that ends at once, as no body does: it forwards the GET with none",
  },
];

describe("the request body's framing through wasmtime serve, beside host-sim", { skip }, () => {
  const hosts = {};
  before(async () => {
    for (const name of ["wasmtime", "hostSim"]) hosts[name] = { recorder: await startRecorder() };
    hosts.wasmtime.server = await startWasiHttp([["orders", hosts.wasmtime.recorder.origin]], WASI_HTTP_FIXTURES.forwarding);
    hosts.hostSim.server = await startHostSim(["--upstream-override", `orders=${hosts.hostSim.recorder.origin}`], 60000, FIXTURE_WASM);
  });
  after(async () => {
    for (const host of Object.values(hosts)) {
      await host.server?.proc.stop();
      await host.recorder.stop();
    }
  });

  /** Sends the case to `host`; its answer and what its upstream received. */
  async function exchange(host, c) {
    const answer = await rawRequest(host.server.port, c.bytes(c.id), 20000);
    // A request the upstream got incomplete is recorded when its connection closes.
    await new Promise((r) => setTimeout(r, 100));
    const received = host.recorder.requests.filter((r) => r.target?.endsWith(`/${c.id}`));
    const complete = received.filter((r) => r.complete);
    assert.ok(complete.length <= 1, `${c.id}: one request at most`);
    const upstream = complete.length === 1 ? { framing: complete[0].framing, body: complete[0].body } : null;
    return { status: answer.status, body: answer.body, upstream };
  }

  for (const c of CASES) {
    test(`${c.id}${c.same ? "" : " (wasmtime serve differs, pinned)"}`, async () => {
      const viaHostSim = await exchange(hosts.hostSim, c);
      const viaWasmtime = await exchange(hosts.wasmtime, c);
      const outcome = ({ status, upstream }) => ({ status, upstream });
      assert.deepEqual(outcome(viaHostSim), c.same ?? c.hostSim, `host-sim: ${c.id}`);
      assert.deepEqual(outcome(viaWasmtime), c.same ?? c.wasmtime, `wasmtime serve: ${c.id}${c.why ? `: ${c.why}` : ""}`);
      // Where the module answered on both hosts, the same answer.
      if (c.same && c.same.status !== 200 && viaWasmtime.body !== "" && viaHostSim.body !== "") assert.equal(viaWasmtime.body, viaHostSim.body, c.id);
    });
  }
});
