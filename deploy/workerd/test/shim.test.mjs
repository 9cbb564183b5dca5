// Unit tests of the shim (gateway.mjs) in Node.js, without workerd: the real
// module, built from the test fixture (target/fixture/gateway.wasm), for the decisions, and small hand-written modules for the
// failures the real one never shows (a trap, another ABI version).
//
//   node --test deploy/workerd/test/
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import binaryen from "binaryen";
import { ABI_VERSION, Gateway, MODULE_FAILED, contextLine, parseUpstreamOverride, readDecision, requestHead, requestTarget } from "../gateway.mjs";
import { FIXTURE_WASM, mintToken, readFixture, startEcho } from "../harness.mjs";

const config = readFixture();
const realModule = new WebAssembly.Module(readFileSync(FIXTURE_WASM));
const route = (aud) => config.routes.find((r) => r.aud === aud);
const now = () => Math.floor(Date.now() / 1000);
const token = (claims) => mintToken(config.key, { iss: config.issuer, exp: now() + 86400, ...claims });

/**
 * A stand-in module with the ABI's exports: `handle` traps when the head
 * (after the context line "http unknown\n", 13 bytes: Node has no peer
 * address) starts with "TRAP", and otherwise answers 401 "bearer token required".
 * Each instance counts its calls in a global, so a fresh one starts at 0.
 */
function fakeModule(abiVersion = ABI_VERSION) {
  const answer =
    '\nbearer token required\n#1bffffffffff -\n>www-authenticate:Bearer realm="t"\n>content-type:application/json\n{"error_description":"bearer token required"}';
  const watString = [...answer].map((c) => (/[\w ]/.test(c) ? c : `\\${c.charCodeAt(0).toString(16).padStart(2, "0")}`)).join("");
  const wat = `(module
    (memory (export "memory") 1)
    (data (i32.const 2048) "${watString}")
    (global $calls (mut i32) (i32.const 0))
    (func (export "abi_version") (result i32) (i32.const ${abiVersion}))
    (func (export "input_ptr") (result i32) (i32.const 0))
    (func (export "input_capacity") (result i32) (i32.const 1024))
    (func (export "calls") (result i32) (global.get $calls))
    (func (export "routes") (result i32) (i32.const 0))
    (func (export "handle") (param $len i32) (param $now f64) (result i32)
      (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
      (if (i32.eq (i32.load (i32.const 13)) (i32.const 0x50415254)) (then (unreachable)))
      (i32.const 401))
    (func (export "output_ptr") (result i32) (i32.const 2048))
    (func (export "output_len") (result i32) (i32.const ${answer.length})))`;
  const m = binaryen.parseText(wat);
  assert.ok(m.validate(), "fixture module validates");
  const bytes = m.emitBinary();
  m.dispose();
  return new WebAssembly.Module(bytes);
}

describe("request head", () => {
  test("request line, header fields, blank line, CRLF", () => {
    const req = new Request("http://gw.example/orders/7?x=1&y", {
      method: "POST",
      headers: { authorization: "Bearer abc", "x-one": "1" },
      body: "ignored",
    });
    const head = requestHead(req);
    assert.match(head, /^POST \/orders\/7\?x=1&y HTTP\/1\.1\r\n/);
    assert.match(head, /\r\nauthorization: Bearer abc\r\n/);
    assert.match(head, /\r\nhost: gw\.example\r\n/, "a Host field is always there");
    assert.ok(head.endsWith("\r\n\r\n"));
    assert.ok(!head.includes("ignored"), "the body never crosses into the module");
  });

  test("the target keeps an empty query and the path as sent", () => {
    assert.equal(requestTarget("http://h:1/a/b?"), "/a/b?");
    assert.equal(requestTarget("http://h/"), "/");
    assert.equal(requestTarget("https://h:8443/p?q=%20"), "/p?q=%20");
  });

  test("upstream override: FROM=TO pairs of origins, FROM an origin or a routed audience", () => {
    assert.deepEqual(parseUpstreamOverride(null), new Map());
    assert.deepEqual(parseUpstreamOverride(""), new Map());
    const routes = [["orders", "http://10.0.0.5/orders-svc"]];
    assert.deepEqual(
      parseUpstreamOverride("http://127.0.0.1:9101=http://127.0.0.1:5000, orders=http://b/", routes),
      new Map([
        ["http://127.0.0.1:9101", "http://127.0.0.1:5000"],
        ["http://10.0.0.5", "http://b"],
      ]),
    );
    assert.throws(() => parseUpstreamOverride("http://a"), /expected FROM=TO/);
    assert.throws(() => parseUpstreamOverride("users=http://b", routes), /neither a routed audience nor a URL/);
    assert.throws(() => parseUpstreamOverride("orders=http://b/path", routes), /not an origin/);
  });

  test("the context line: scheme and peer, or unknown", () => {
    const plain = new Request("http://gw/x");
    assert.equal(contextLine(plain), "http unknown\n");
    const withPeer = (clientIp) => Object.assign(new Request("https://gw/x"), { cf: { clientIp } });
    assert.equal(contextLine(withPeer("192.0.2.7:5555")), "https 192.0.2.7\n");
    assert.equal(contextLine(withPeer("[2001:db8::1]:443")), "https 2001:db8::1\n");
    assert.equal(contextLine(withPeer("2001:db8::1")), "https 2001:db8::1\n");
    assert.equal(contextLine(withPeer("1.2.3.4\nhttp 5.6.7.8")), "https unknown\n");
  });

  test("decisions are read as the contract crate reads them (contract/golden/decisions.json)", () => {
    const golden = JSON.parse(readFileSync(fileURLToPath(new URL("../../../contract/golden/decisions.json", import.meta.url)), "utf8"));
    assert.ok(golden.length >= 30);
    for (const { name, status, output, expect } of golden) {
      const got = readDecision(status, output.split("\n"));
      if (expect.refused) {
        assert.equal(got, null, name);
      } else if (expect.forward) {
        const ops = [
          ...got.forward.drop.map((n) => ["drop_request", n]),
          ...got.forward.set.map(([n, v]) => ["set_request", n, v]),
          ...got.forward.responseDrop.map((n) => ["drop_response", n]),
          ...got.forward.responseAdd.map(([n, v]) => ["add_response", n, v]),
        ];
        const read = { origin: got.forward.origin, path: got.forward.path, operations: ops, labels: got.forward.labels };
        // The golden file writes the buckets only for a forward that has some.
        if (got.forward.buckets.length > 0) read.buckets = got.forward.buckets.map(({ limit, key }) => [limit, key]);
        assert.deepEqual(read, expect.forward, name);
      } else {
        assert.deepEqual(got.answer, expect.answer, name);
      }
    }
  });

  test("the outcome ids the shim names are the contract's (contract/golden/outcomes.json)", () => {
    const outcomes = JSON.parse(readFileSync(fileURLToPath(new URL("../../../contract/golden/outcomes.json", import.meta.url)), "utf8"));
    assert.equal(outcomes[MODULE_FAILED], "module_failed");
  });

  test("the head is UTF-8 bytes: a value decoded from UTF-8 is judged as those bytes", () => {
    // As workerd hands it over (Node's Headers refuses such a value): the
    // field's bytes C4 8D C4 8A decoded as UTF-8.
    const req = { method: "GET", url: "http://gw/x", headers: [["host", "gw"], ["x-note", "\u010d\u010a"]] };
    const bytes = new TextEncoder().encode(requestHead(req));
    const at = Buffer.from(bytes).indexOf("x-note: ");
    assert.deepEqual([...bytes.subarray(at + 8, at + 12)], [0xc4, 0x8d, 0xc4, 0x8a], "never CR LF");
  });
});

describe("decisions of the real module", () => {
  const gateway = new Gateway(realModule);

  test("no token: 401 with a challenge and no error code", async () => {
    const res = await gateway.fetch(new Request("http://gw/orders"));
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="fixture"');
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.deepEqual(await res.json(), { error_description: "bearer token required" });
  });

  test("expired token: 401 invalid_token, as ABI.md shows", async () => {
    const t = mintToken(config.key, { iss: config.issuer, aud: "orders", exp: 1000 });
    const res = await gateway.fetch(new Request("http://gw/", { headers: { authorization: `Bearer ${t}` } }));
    assert.equal(res.status, 401);
    assert.equal(
      res.headers.get("www-authenticate"),
      'Bearer realm="fixture", error="invalid_token", error_description="token expired"',
    );
    assert.deepEqual(await res.json(), { error: "invalid_token", error_description: "token expired" });
  });

  test("a head longer than the input buffer: nothing written, the module answers 431", async () => {
    const instance = gateway.instance;
    const input = new Uint8Array(instance.memory.buffer, instance.inputPtr, instance.inputCapacity);
    input.fill(0x5a);
    const res = await gateway.fetch(new Request("http://gw/", { headers: { "x-big": "a".repeat(instance.inputCapacity) } }));
    assert.equal(res.status, 431);
    assert.equal((await res.json()).error, "invalid_request");
    assert.ok(new Uint8Array(instance.memory.buffer, instance.inputPtr, instance.inputCapacity).every((b) => b === 0x5a));
  });

  test("a clock the module refuses: 500 without a challenge", async () => {
    const broken = new Gateway(realModule, { now: () => Number.NaN });
    const res = await broken.fetch(new Request("http://gw/"));
    assert.equal(res.status, 500);
    assert.equal(res.headers.get("www-authenticate"), null);
    assert.deepEqual(await res.json(), { error_description: "host clock invalid" });
  });
});

describe("forwarding", () => {
  let echo;
  let gateway;
  before(async () => {
    echo = await startEcho({ orders: 0 });
    gateway = new Gateway(realModule, { upstreamOverride: new Map([[route("orders").origin, echo.addresses.orders]]) });
  });
  after(() => echo.close());

  test("method, path, query and body pass; the token and a client's subject do not", async () => {
    const req = new Request("http://gw/orders/42?expand=items&x=%2F", {
      method: "PUT",
      headers: {
        authorization: `Bearer ${token({ aud: "orders", sub: "alice" })}`,
        "x-gateway-subject": "mallory",
        "x-request-id": "r1",
      },
      body: "payload",
      duplex: "half",
    });
    const res = await gateway.fetch(req);
    assert.equal(res.status, 200);
    const seen = await res.json();
    assert.equal(seen.route, "orders");
    assert.equal(seen.method, "PUT");
    assert.equal(seen.target, `${route("orders").base_path}/orders/42?expand=items&x=%2F`);
    assert.equal(seen.body, "payload");
    assert.equal(seen.authorization, null);
    assert.equal(seen.subject, "alice");
    assert.equal(seen.headers["x-request-id"], "r1");
    assert.equal(seen.host, new URL(echo.addresses.orders).host, "Host names the upstream");
  });

  test("no sub: no subject header, even when the client sends one", async () => {
    const req = new Request("http://gw/o", {
      headers: { authorization: `Bearer ${token({ aud: "orders" })}`, "x-gateway-subject": "mallory" },
    });
    const seen = await (await gateway.fetch(req)).json();
    assert.equal(seen.subject, null);
  });

  test("an upstream that is down: 502 with a JSON reason", async () => {
    const down = new Gateway(realModule, {
      upstreamOverride: new Map([[config.routes[0].origin, "http://127.0.0.1:1"]]),
    });
    const req = new Request("http://gw/", {
      headers: { authorization: `Bearer ${token({ aud: config.routes[0].aud })}` },
    });
    const res = await down.fetch(req);
    assert.equal(res.status, 502);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.deepEqual(await res.json(), { error_description: "upstream unavailable" });
  });
});

describe("module failures", () => {
  test("a trap: 500, the instance is discarded, the next request gets a fresh one", async () => {
    const gateway = new Gateway(fakeModule());
    assert.equal((await gateway.fetch(new Request("http://gw/"))).status, 401);
    assert.equal(gateway.instance.exports.calls(), 1);

    const trapped = await gateway.fetch(new Request("http://gw/", { method: "TRAP" }));
    assert.equal(trapped.status, 500);
    assert.deepEqual(await trapped.json(), { error_description: "gateway module failed" });

    assert.equal((await gateway.fetch(new Request("http://gw/"))).status, 401);
    assert.equal(gateway.instances, 2);
    assert.equal(gateway.instance.exports.calls(), 1, "a fresh instance served the request after the trap");
  });

  test("a module of another ABI version is refused", () => {
    assert.throws(() => new Gateway(fakeModule(1)), new RegExp(`ABI version 1; this host understands ${ABI_VERSION}`));
  });
});
