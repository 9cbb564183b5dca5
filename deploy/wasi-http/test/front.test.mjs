// The front end of `wasmtime serve` (deploy/wasi-http/front.mjs): Envoy,
// as `make deploy-wasi-http FRONT=envoy` renders it, in front of the
// component under `wasmtime serve`, all on loopback.
// - Slow clients: a few hundred connections that send half a request head
//   and stall are closed by Envoy (its header timeout), while good
//   requests are answered through it meanwhile, and none of the slow ones
//   reaches the component or the upstream. (`wasmtime serve` alone has no
//   header timeout and a thousand connection slots: such clients would
//   hold them; deploy/wasi-http/README.md.)
// - Framing wasi:http hides from the component: Envoy refuses a
//   Content-Length beside Transfer-Encoding in either order, and codings
//   other than chunked, before the component runs.
//
//   node --test deploy/wasi-http/test/
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { mintToken, rawRequest, readFixture } from "../../workerd/harness.mjs";
import { ENVOY, WASI_HTTP_FIXTURES, startEnvoyFront, startWasiHttp, wasiHttpReady } from "../harness.mjs";
import { startRecorder } from "../recorder.mjs";

const required = process.env.REQUIRE_WASI_HTTP === "1";
const skip = !required && (!wasiHttpReady() || !existsSync(ENVOY)) && "wasmtime, Envoy or the fixtures are not built (make wasmtime envoy fixture)";

/** How many slow clients: well below the machine's limits and wasmtime serve's 1,000 slots. */
const SLOW_CLIENTS = 300;
/** How many good requests are sent while the slow clients hold their connections. */
const GOOD_REQUESTS = 20;

const token = () => {
  const { key, issuer, kid } = readFixture();
  return mintToken(key, { iss: issuer, aud: "orders", sub: "alice", exp: Math.floor(Date.now() / 1000) + 600 }, { alg: "HS256", typ: "JWT", kid });
};

/**
 * A client that sends half a request head and stalls. Resolves `opened`
 * once connected and written; `closed` resolves when the server closes the
 * connection, with what it sent before it did. `destroy()` ends it.
 */
function slowClient(port) {
  const sock = net.connect({ host: "127.0.0.1", port });
  const received = [];
  sock.on("data", (c) => received.push(c));
  sock.on("error", () => {});
  const opened = new Promise((resolve, reject) => {
    sock.once("connect", () => sock.write("GET /orders/slow HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer ", resolve));
    sock.once("error", reject);
  });
  const closed = new Promise((resolve) => sock.once("close", () => resolve(Buffer.concat(received).toString("latin1"))));
  return { opened, closed, destroy: () => sock.destroy() };
}

/** Resolves with `promise`'s value, or rejects after `ms` (a liveness bound). */
function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe("Envoy in front of wasmtime serve (deploy/wasi-http/front.mjs)", { skip }, () => {
  let recorder;
  let wasmtime;
  let front;
  before(async () => {
    recorder = await startRecorder();
    wasmtime = await startWasiHttp([["orders", recorder.origin]], WASI_HTTP_FIXTURES.forwarding);
    front = await startEnvoyFront(wasmtime.port);
  });
  after(async () => {
    await front?.proc.stop();
    await wasmtime?.proc.stop();
    await recorder?.stop();
  });

  test(`${SLOW_CLIENTS} clients that stall mid-head are closed by the front end, and good requests are answered meanwhile`, async () => {
    const slow = Array.from({ length: SLOW_CLIENTS }, () => slowClient(front.port));
    try {
      await within(Promise.all(slow.map((c) => c.opened)), 20000, "the slow clients' connections");
      for (let i = 0; i < GOOD_REQUESTS; i++) {
        const res = await fetch(`http://127.0.0.1:${front.port}/orders/good-${i}`, {
          headers: { authorization: `Bearer ${token()}` },
          signal: AbortSignal.timeout(10000),
        });
        assert.equal(res.status, 200, `good request ${i}`);
        assert.equal(await res.text(), "ok", "the upstream's answer");
      }
      // The header timeout (10 s) closes every slow connection; bounded generously.
      const answers = await within(Promise.all(slow.map((c) => c.closed)), 30000, "the front end closing every slow client");
      for (const answer of answers) assert.doesNotMatch(answer, /^HTTP\/1\.1 200/, "a slow client gets no forward");
      const reached = recorder.requests.map((r) => r.target);
      assert.equal(reached.filter((t) => /\/good-\d+$/.test(t)).length, GOOD_REQUESTS, "every good request reached the upstream");
      assert.ok(!reached.some((t) => t?.endsWith("/slow")), "no slow request reached the upstream");
    } finally {
      for (const c of slow) c.destroy();
    }
  });

  const framed = (fields, body) =>
    `POST /orders/framed HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer ${token()}\r\n${fields.map((f) => `${f}\r\n`).join("")}Connection: close\r\n\r\n${body}`;
  const FRAMINGS = [
    ["Content-Length before Transfer-Encoding", ["Content-Length: 5", "Transfer-Encoding: chunked"], 400],
    ["Transfer-Encoding before Content-Length", ["Transfer-Encoding: chunked", "Content-Length: 4"], 400],
    ["a coding before chunked", ["Transfer-Encoding: gzip, chunked"], 501],
  ];
  for (const [name, fields, status] of FRAMINGS) {
    test(`the front end refuses ${name} (${status}) before the component runs`, async () => {
      const before = recorder.requests.length;
      const res = await rawRequest(front.port, framed(fields, "5\r\nhello\r\n0\r\n\r\n"), 20000);
      assert.equal(res.status, status, res.raw ?? res.body);
      assert.equal(recorder.requests.length, before, "nothing reached the upstream");
    });
  }
});
