// The wasi:http component under `wasmtime serve`, beyond the corpora
// (testkit/conformance/, testkit/jwks/, which run it too):
// - built as `make worker` builds it (no upstream override), it imports the
//   wasi:http/proxy world alone and serves with wasmtime serve's defaults
//   (no -Scli);
// - bodies stream both ways, byte for byte, chunked or with a length;
// - an upstream that cannot be reached is the host's own 502, a client body
//   that stalls its 408.
//
//   node --test deploy/wasi-http/test/
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, freePort, mintToken, rawRequest, readFixture } from "../../workerd/harness.mjs";
import { WASI_HTTP_FIXTURES, startWasiHttp, wasiHttpReady } from "../harness.mjs";

const required = process.env.REQUIRE_WASI_HTTP === "1";
const skip = !required && !wasiHttpReady() && "wasmtime or the fixture components are not built (make wasmtime fixture)";
const WASM_TOOLS = join(ROOT, "target", "tools", "bin", "wasm-tools");

/** The fixture's route for aud "orders" (testkit/fixture.toml). */
const ORDERS = "http://127.0.0.1:9201";

/**
 * An upstream that answers every request with the SHA-256 and length of
 * the body it received, and, for POST /big, with a body of `x-size` bytes.
 */
async function startUpstream(port = 0) {
  const server = createServer((req, res) => {
    const hash = createHash("sha256");
    let length = 0;
    req.on("data", (c) => {
      hash.update(c);
      length += c.length;
    });
    req.on("end", () => {
      const size = Number(req.headers["x-size"] ?? 0);
      res.writeHead(200, { "content-type": "application/octet-stream", "x-received": `${length} ${hash.digest("hex")}` });
      res.end(Buffer.alloc(size, "z"));
    });
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return { origin: `http://127.0.0.1:${server.address().port}`, stop: () => new Promise((r) => (server.closeAllConnections(), server.close(r))) };
}

const fixture = () => readFixture();
const token = () => {
  const { key, issuer, kid } = fixture();
  return mintToken(key, { iss: issuer, aud: "orders", sub: "alice", exp: Math.floor(Date.now() / 1000) + 600 }, { alg: "HS256", typ: "JWT", kid });
};

describe("the wasi:http component as make worker builds it", { skip }, () => {
  test("imports the wasi:http/proxy world alone and exports its incoming-handler", () => {
    const wit = spawnSync(WASM_TOOLS, ["component", "wit", WASI_HTTP_FIXTURES.proxy], { encoding: "utf8", timeout: 30000 });
    assert.equal(wit.status, 0, wit.stderr);
    const imports = [...wit.stdout.matchAll(/^\s*import ([^;]+);/gm)].map((m) => m[1].replace(/@.*/, "")).sort();
    const exports = [...wit.stdout.matchAll(/^\s*export ([^;]+);/gm)].map((m) => m[1].replace(/@.*/, ""));
    const proxyWorld = ["wasi:cli/stderr", "wasi:clocks/monotonic-clock", "wasi:clocks/wall-clock", "wasi:http/outgoing-handler", "wasi:http/types", "wasi:io/error", "wasi:io/poll", "wasi:io/streams"];
    assert.deepEqual(imports, proxyWorld);
    assert.deepEqual(exports, ["wasi:http/incoming-handler"]);
  });

  test("serves with wasmtime serve's defaults: the module's answer, and a forward to the route's own origin", async (t) => {
    const host = await startWasiHttp([], WASI_HTTP_FIXTURES.proxy);
    try {
      const res = await fetch(`http://127.0.0.1:${host.port}/orders/7`, { signal: AbortSignal.timeout(10000) });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="fixture"');
      assert.deepEqual(await res.json(), { error_description: "bearer token required" });
      // The route's origin is 127.0.0.1:9201; the upstream listens there if it is free.
      const upstream = await startUpstream(new URL(ORDERS).port).catch(() => null);
      if (upstream === null) return t.skip(`${ORDERS} is in use on this machine`);
      try {
        const forwarded = await fetch(`http://127.0.0.1:${host.port}/orders/7`, {
          headers: { authorization: `Bearer ${token()}` },
          signal: AbortSignal.timeout(10000),
        });
        assert.equal(forwarded.status, 200);
        assert.equal(forwarded.headers.get("x-received"), `0 ${createHash("sha256").digest("hex")}`);
      } finally {
        await upstream.stop();
      }
    } finally {
      await host.proc.stop();
    }
  });
});

describe("the wasi:http component streams bodies and answers for an upstream it cannot reach", { skip }, () => {
  let upstream;
  let host;
  let closedPort;
  before(async () => {
    upstream = await startUpstream();
    closedPort = await freePort();
    host = await startWasiHttp([["orders", upstream.origin], ["users", `http://127.0.0.1:${closedPort}`]]);
  });
  after(async () => {
    await host?.proc.stop();
    await upstream?.stop();
  });

  for (const chunked of [false, true]) {
    test(`8 MiB up${chunked ? " (chunked)" : ""} and 8 MiB down, byte for byte`, async () => {
      const body = Buffer.alloc(8 << 20);
      for (let i = 0; i < body.length; i += 4096) body.writeUInt32LE(i, i);
      const sent = chunked
        ? new ReadableStream({
            start(controller) {
              for (let i = 0; i < body.length; i += 1 << 20) controller.enqueue(body.subarray(i, i + (1 << 20)));
              controller.close();
            },
          })
        : body;
      const res = await fetch(`http://127.0.0.1:${host.port}/orders/big`, {
        method: "POST",
        headers: { authorization: `Bearer ${token()}`, "x-size": String(8 << 20) },
        body: sent,
        duplex: "half",
        signal: AbortSignal.timeout(60000),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-received"), `${body.length} ${createHash("sha256").update(body).digest("hex")}`);
      const down = Buffer.from(await res.arrayBuffer());
      assert.equal(down.length, 8 << 20);
      assert.ok(down.every((b) => b === 0x7a), "the upstream's bytes");
    });
  }

  test("an upstream that refuses the connection is the host's 502", async () => {
    const { key, issuer, kid } = fixture();
    const users = mintToken(key, { iss: issuer, aud: "users", sub: "alice", exp: Math.floor(Date.now() / 1000) + 600 }, { alg: "HS256", typ: "JWT", kid });
    const res = await fetch(`http://127.0.0.1:${host.port}/people`, {
      headers: { authorization: `Bearer ${users}` },
      signal: AbortSignal.timeout(20000),
    });
    assert.equal(res.status, 502);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.deepEqual(await res.json(), { error_description: "upstream unavailable" });
  });

  test("a chunked body that stalls before its first byte is the host's 408", async () => {
    const head = `POST /orders/slow HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer ${token()}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`;
    // The head alone; the body never comes (the component waits 10 s).
    const res = await rawRequest(host.port, head, 30000);
    assert.equal(res.status, 408, res.raw ?? res.body);
    assert.deepEqual(JSON.parse(res.body), { error_description: "request body timed out" });
  });
});
