// Keys fetched at run time, the shim's side (keys.mjs and gateway.mjs): the
// key-source table, the module's answers to the schedule's questions (the
// schedule is the module's: the shim only asks), and the fetching itself
// with the real module built from testkit/fixture-jwks.toml (`make
// fixture`) against the test provider over real HTTP, in Node.js and in
// workerd. testkit/jwks/rotation.test.mjs holds the expectations every host
// meets; these are the shim's own.
//
//   node --test deploy/workerd/test/keys.test.mjs
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Gateway, parseUpstreamOverride } from "../gateway.mjs";
import { KeyFetcher, fetchDocument, kvStore, readKeySources } from "../keys.mjs";
import { ROOT, startEcho, startWorkerd } from "../harness.mjs";
import { fixtureRsaKey, jwksOf, makeKey, signToken, startProvider } from "../../../testkit/jwks/provider.mjs";

const JWKS_WASM = join(ROOT, "target", "fixture", "gateway-jwks.wasm");

const IDP = "http://idp.test";
const JWKS = "http://jwks.test";
const ROUTE_ORIGIN = "http://127.0.0.1:9201";
const CAPACITY = 65536;
const jwksModule = new WebAssembly.Module(readFileSync(JWKS_WASM));
const claims = (iss) => ({ iss, aud: "orders", sub: "alice", exp: Math.floor(Date.now() / 1000) + 3600 });
/** Counts the provider's fetches of a path from now on (by position: two fetches can share a millisecond). */
const mark = (provider) => {
  const seen = provider.fetches.length;
  return (path) => provider.fetches.slice(seen).filter((f) => f.path === path).length;
};
const bearer = (token) => new Request("http://gw/orders/x", { headers: { authorization: `Bearer ${token}` } });

/** The fixture's table, as its module writes it. */
const TABLE = "0 discovery http://idp.test/.well-known/openid-configuration 2 1 1000 30\n1 jwks http://jwks.test/keys.json 600 1 1000 86400";

describe("the key-source table", () => {
  test("the fixture module's table, read as contract/src/key_sources.rs reads it", () => {
    const module = new Gateway(jwksModule, { log: () => {} });
    module.instance.exports.key_sources();
    assert.equal(module.instance.output(), TABLE);
    assert.deepEqual(readKeySources(TABLE), [
      { issuer: 0, kind: "discovery", url: "http://idp.test/.well-known/openid-configuration", refreshSecs: 2, refetchSecs: 1, timeoutMs: 1000, maxStaleSecs: 30 },
      { issuer: 1, kind: "jwks", url: "http://jwks.test/keys.json", refreshSecs: 600, refetchSecs: 1, timeoutMs: 1000, maxStaleSecs: 86400 },
    ]);
    assert.deepEqual(readKeySources(""), []);
  });

  test("lines that are not sources are refused (the contract crate's cases)", () => {
    for (const line of [
      "0 jwks http://h/k 600 60 5000",
      "0 jwks http://h/k 600 60 5000 86400 1",
      "0 pem http://h/k 600 60 5000 86400",
      "0 jwks ftp://h/k 600 60 5000 86400",
      "256 jwks http://h/k 600 60 5000 86400",
      "-1 jwks http://h/k 600 60 5000 86400",
      "0 jwks http://h/k 600 +60 5000 86400",
      "0  jwks http://h/k 600 60 5000 86400",
      "0 jwks http://h/k 600 060 5000 86400",
      "0 jwks http://h/k 4294967296 60 5000 86400",
    ]) {
      assert.throws(() => readKeySources(line), /key source this host cannot read/, line);
    }
    assert.equal(readKeySources("0 jwks http://h/k 4294967295 0 0 0")[0].refreshSecs, 2 ** 32 - 1);
  });
});

describe("the schedule: the module's answers, on a clock the test moves", () => {
  /** A gateway on the fixture module whose clock (Unix seconds) the test sets; its keysModule(). */
  const stepped = () => {
    const clock = { secs: 1_800_000_000 };
    const gateway = new Gateway(jwksModule, { now: () => clock.secs, log: () => {} });
    return { clock, module: gateway.keysModule() };
  };
  const jwks = () => new TextEncoder().encode(jwksOf([fixtureRsaKey("key-a")]));
  const discovery = (jwksUri) => new TextEncoder().encode(JSON.stringify({ issuer: IDP, jwks_uri: jwksUri }));

  test("a discovery source: every round reads discovery, then the document it names", () => {
    const { clock, module } = stepped();
    assert.equal(module.fetch(0, "due"), "http://idp.test/.well-known/openid-configuration", "the first round at once");
    assert.equal(module.wait(0), Infinity, "under way");
    assert.equal(module.fetch(0, "now"), null, "one round at a time");
    assert.deepEqual(module.fetched(0, discovery("http://idp.test/jwks"), ""), { n: 1, text: "http://idp.test/jwks" });
    const installed = module.fetched(0, jwks(), "");
    assert.equal(installed.n, 0, installed.text);
    assert.equal(module.wait(0), 2, "refresh_secs 2");
    clock.secs += 2;
    assert.equal(module.fetch(0, "due"), "http://idp.test/.well-known/openid-configuration", "discovery again");
    assert.deepEqual(module.fetched(0, discovery("http://idp.test/moved"), ""), { n: 1, text: "http://idp.test/moved" });
    assert.equal(module.failed(0).n, 0);
    assert.equal(module.wait(0), 1, "a failed round: retried after 1 s");
  });

  test("after a success refresh_secs, or max-age within [refetch_secs, refresh_secs]; failures back off", () => {
    const { clock, module } = stepped();
    for (const [cacheControl, wait] of [["", 600], ["max-age=120", 120], ["public, max-age=0", 1], ["max-age=86400", 600], ["max-age=5\u00ff", 600]]) {
      assert.equal(module.fetch(1, "now"), "http://jwks.test/keys.json");
      assert.equal(module.fetched(1, jwks(), cacheControl).n, 0);
      assert.equal(module.wait(1), wait, cacheControl);
    }
    assert.equal(module.fetch(1, "now"), "http://jwks.test/keys.json");
    assert.equal(module.failed(1).n, 0);
    assert.equal(module.wait(1), 1, "1 s, capped at refetch_secs 1");
    clock.secs += 1;
    assert.equal(module.fetch(1, "due"), "http://jwks.test/keys.json");
  });

  test("a decision's ~ line: a round at once, once per refetch_secs", () => {
    const { clock, module } = stepped();
    assert.equal(module.fetch(1, "due"), "http://jwks.test/keys.json");
    assert.equal(module.fetched(1, jwks(), "").n, 0);
    assert.equal(module.fetch(1, "asked"), null, "within refetch_secs of the last start");
    clock.secs += 1;
    assert.equal(module.fetch(1, "asked"), "http://jwks.test/keys.json");
    assert.equal(module.fetch(7, "due"), null, "an issuer without a source");
  });
});

describe("the module's key installs", () => {
  test("a JWKS document with an RSA key of 2048, 3072 or 4096 bits installs without a trap", () => {
    for (const bits of [2048, 3072, 4096]) {
      const e = new WebAssembly.Instance(jwksModule, {}).exports;
      const document = new TextEncoder().encode(jwksOf([makeKey(`rsa-${bits}`, "RS256", { bits })]));
      new Uint8Array(e.memory.buffer, e.keys_input_ptr(), document.byteLength).set(document);
      let installed;
      assert.doesNotThrow(() => (installed = e.install_keys(1, document.byteLength, Date.now() / 1000)), `${bits} bits`);
      assert.equal(installed, 1, `${bits} bits`);
    }
  });
});

/** An HTTP server on loopback answering every request with `handler`. */
async function serve(handler) {
  const server = createServer(handler);
  const sockets = new Set();
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    stop: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe("fetching a document within the contract's limits", () => {
  let provider;
  let redirect;
  let exact;
  before(async () => {
    provider = await startProvider({ issuer: IDP });
    redirect = await serve((req, res) => {
      res.writeHead(302, { location: `${provider.origin}/redirected` });
      res.end();
    });
    // A body of exactly `capacity` bytes, then one more, without Content-Length.
    exact = await serve((req, res) => {
      res.writeHead(200);
      res.end(Buffer.alloc(req.url === "/over" ? CAPACITY + 1 : CAPACITY, 0x20));
    });
  });
  after(async () => {
    await redirect?.stop();
    await exact?.stop();
    await provider?.stop();
  });

  test("200: the bytes and the Cache-Control value", async () => {
    provider.behave("ok");
    provider.publish("*", '{"keys":[]}');
    provider.cacheControl("max-age=30");
    const got = await fetchDocument(`${provider.origin}/jwks`, 1000, CAPACITY);
    provider.cacheControl("");
    assert.equal(new TextDecoder().decode(got.bytes), '{"keys":[]}');
    assert.equal(got.cacheControl, "max-age=30");
  });

  test("each failure has its reason", async () => {
    const cases = [
      ["status500", `${provider.origin}/jwks`, /^status 500$/],
      ["huge", `${provider.origin}/jwks`, new RegExp(`^larger than ${CAPACITY} bytes$`)],
      ["hang", `${provider.origin}/jwks`, /^timed out$/],
      ["drop", `${provider.origin}/jwks`, /^[A-Za-z]/],
      ["ok", `${redirect.url}/jwks`, /^redirect refused$/],
      ["ok", "http://127.0.0.1:1/jwks", /^[A-Za-z]/],
    ];
    for (const [mode, url, reason] of cases) {
      provider.behave(mode);
      const got = await fetchDocument(url, 1000, CAPACITY);
      assert.match(got.failed ?? "", reason, `${mode} ${url}`);
    }
    provider.behave("ok");
    assert.equal(provider.fetchesOf("/redirected"), 0, "the redirect was not followed");
  });

  test("a body is cut at the capacity, streamed: exactly the capacity passes, one byte more does not", async () => {
    assert.equal((await fetchDocument(`${exact.url}/exact`, 1000, CAPACITY)).bytes.byteLength, CAPACITY);
    assert.deepEqual(await fetchDocument(`${exact.url}/over`, 1000, CAPACITY), { failed: `larger than ${CAPACITY} bytes` });
  });
});

/** The test provider, publishing `key`, and an echo upstream for the route: started before a suite's tests, stopped after. */
function providerAndUpstream(key) {
  const env = {};
  before(async () => {
    env.provider = await startProvider({ issuer: IDP });
    env.echo = await startEcho({ orders: 0 });
    env.provider.publish("*", jwksOf([key]));
  });
  after(async () => {
    await env.echo?.close();
    await env.provider?.stop();
  });
  return env;
}

/**
 * The fixture module in a Gateway in Node.js, its provider origins mapped to
 * `provider` and its route to `upstream`; the log lines kept.
 */
function gatewayFor(provider, upstream) {
  const lines = [];
  const gateway = new Gateway(jwksModule, { log: (line) => lines.push(line) });
  gateway.upstreamOverride = parseUpstreamOverride(
    `${IDP}=${provider.origin},${JWKS}=${provider.origin},${ROUTE_ORIGIN}=${upstream}`,
    gateway.routes(),
  );
  return { gateway, lines };
}

/**
 * `gatewayFor`, on a clock (Unix seconds) the test moves: the module's
 * schedule reads it. Its key fetcher, and its background rounds collected.
 */
function steppedGateway(provider, upstream) {
  const clock = { secs: 1_800_000_000 };
  const lines = [];
  const gateway = new Gateway(jwksModule, { now: () => clock.secs, log: (line) => lines.push(line) });
  gateway.upstreamOverride = parseUpstreamOverride(
    `${IDP}=${provider.origin},${JWKS}=${provider.origin},${ROUTE_ORIGIN}=${upstream}`,
    gateway.routes(),
  );
  const started = [];
  return { gateway, keys: gateway.keys, module: gateway.keys.module, lines, clock, started, waitUntil: (p) => started.push(p) };
}

describe("the shim fetches keys with the real module (Node.js)", () => {
  const keyA = fixtureRsaKey("key-a");
  const env = providerAndUpstream(keyA);
  const fresh = () => gatewayFor(env.provider, env.echo.addresses.orders);

  test("concurrent first requests wait for one fetch of every source, then are decided", async () => {
    env.provider.behave("ok");
    const since = mark(env.provider);
    const { gateway, lines } = fresh();
    const answers = await Promise.all(Array.from({ length: 8 }, () => gateway.fetch(bearer(signToken(keyA, claims(IDP))))));
    assert.deepEqual(answers.map((r) => r.status), Array(8).fill(200));
    assert.equal(since("/.well-known/openid-configuration"), 1);
    assert.equal(since("/jwks"), 1);
    assert.equal(since("/keys.json"), 1);
    assert.deepEqual(lines.sort(), [
      'keys: issuer 0 http://idp.test/jwks: installed "key-a": 1 key for issuer 0',
      'keys: issuer 1 http://jwks.test/keys.json: installed "key-a": 1 key for issuer 1',
    ]);
  });

  test("one line per outcome, naming the URL as the module names it", async () => {
    const { keys, lines, clock } = steppedGateway(env.provider, env.echo.addresses.orders);
    for (const [mode, publish] of [
      ["ok", jwksOf([keyA])],
      ["ok", jwksOf([makeKey("short", "RS256", { bits: 1024 })])],
      ["garbage", null],
      ["status500", null],
      ["huge", null],
      ["hang", null],
    ]) {
      env.provider.behave(mode);
      if (publish) env.provider.publish("*", publish);
      clock.secs += 1;
      await keys.start(1, "now");
    }
    env.provider.behave("ok");
    env.provider.publish("*", jwksOf([keyA]));
    const expected = [
      /^installed "key-a": 1 key for issuer 1$/,
      /^refused: JWKS key 0 \(kid "short"\) is a 1024-bit RSA key/,
      /^refused: JWKS document is not a JWKS document: not strict JSON at byte 0$/,
      /^fetch failed: status 500$/,
      new RegExp(`^fetch failed: larger than ${CAPACITY} bytes$`),
      /^fetch failed: timed out$/,
    ];
    assert.equal(lines.length, expected.length, lines.join("\n"));
    lines.forEach((line, i) => {
      assert.ok(line.startsWith("keys: issuer 1 http://jwks.test/keys.json: "), line);
      assert.match(line.slice("keys: issuer 1 http://jwks.test/keys.json: ".length), expected[i]);
      assert.doesNotMatch(line, /\n/);
    });
  });

  test("discovery: every round reads the discovery document, then the jwks_uri it names", async () => {
    const { keys, lines, clock } = steppedGateway(env.provider, env.echo.addresses.orders);
    env.provider.behave("ok");
    const since = mark(env.provider);
    await keys.start(0, "due");
    clock.secs += 2;
    await keys.start(0, "due");
    assert.equal(since("/.well-known/openid-configuration"), 2, "discovery read on every round");
    assert.equal(since("/jwks"), 2);
    env.provider.behave("status500");
    clock.secs += 2;
    await keys.start(0, "due");
    env.provider.behave("ok");
    assert.equal(lines.at(-1), "keys: issuer 0 http://idp.test/jwks: fetch failed: status 500");
    assert.match(lines.at(-2), /^keys: issuer 0 http:\/\/idp\.test\/jwks: installed /);
  });

  test("rounds start when the module says they are due, in the background; failures back off; max-age moves the next one", async () => {
    const { keys, module, clock, started, waitUntil } = steppedGateway(env.provider, env.echo.addresses.orders);
    env.provider.behave("ok");
    const first = keys.beforeDecision(waitUntil);
    assert.ok(first, "the first request waits");
    await first;
    assert.equal(module.wait(0), 2, "refresh_secs 2");
    assert.equal(module.wait(1), 600, "refresh_secs 600");
    started.length = 0;
    // Not yet due: nothing starts.
    clock.secs += 1.999;
    assert.equal(keys.beforeDecision(waitUntil), null);
    assert.equal(started.length, 0);
    // Due: the discovery issuer's round starts in the background; it fails.
    clock.secs += 0.001;
    env.provider.behave("status500");
    assert.equal(keys.beforeDecision(waitUntil), null);
    assert.equal(started.length, 1);
    await Promise.all(started);
    assert.equal(module.wait(0), 1, "the first retry after 1 s (refetch_secs 1 caps the rest)");
    // A max-age of 0 is clamped to refetch_secs, 86400 to refresh_secs.
    env.provider.behave("ok");
    for (const [maxAge, delay] of [["0", 1], ["86400", 600], ["5", 5]]) {
      env.provider.cacheControl(`max-age=${maxAge}`);
      clock.secs += 1;
      await keys.start(1, "now");
      assert.equal(module.wait(1), delay, `max-age=${maxAge}`);
    }
    env.provider.cacheControl("");
  });

  test("an unknown kid asks for one round per refetch_secs, none while one is under way", async () => {
    const { keys, clock, started, waitUntil } = steppedGateway(env.provider, env.echo.addresses.orders);
    env.provider.behave("ok");
    await keys.beforeDecision(waitUntil);
    started.length = 0;
    const since = mark(env.provider);
    clock.secs += 1;
    env.provider.behave("slow", { delayMs: 200 });
    keys.requested(1, waitUntil);
    keys.requested(1, waitUntil);
    assert.equal(started.length, 1, "one round under way");
    await Promise.all(started);
    keys.requested(1, waitUntil);
    assert.equal(started.length, 1, "within refetch_secs of the last start");
    clock.secs += 1;
    keys.requested(1, waitUntil);
    keys.requested(7, waitUntil);
    assert.equal(started.length, 2, "refetch_secs later; an issuer without a source asks nothing");
    await Promise.all(started);
    env.provider.behave("ok");
    assert.equal(since("/keys.json"), 2);
  });

  test("an answer's ~ line reaches the fetcher", async () => {
    const { gateway } = fresh();
    env.provider.behave("ok");
    const waits = [];
    const ctx = { waitUntil: (p) => waits.push(p) };
    assert.equal((await gateway.fetch(bearer(signToken(keyA, claims(JWKS))), ctx)).status, 200);
    await Promise.all(waits);
    await new Promise((r) => setTimeout(r, 1100)); // past refetch_secs (1) since the first fetch
    const since = mark(env.provider);
    const unknown = await gateway.fetch(bearer(signToken(makeKey("unpublished"), claims(JWKS))), ctx);
    assert.equal(unknown.status, 401);
    await Promise.all(waits);
    assert.equal(since("/keys.json"), 1);
  });

  test("the instance that replaces a trapped one starts with the installed keys", async () => {
    const { gateway } = fresh();
    env.provider.behave("ok");
    const token = signToken(keyA, claims(IDP));
    assert.equal((await gateway.fetch(bearer(token))).status, 200);
    const store = gateway.keyStore;
    assert.ok(store.byteLength > 0);
    gateway.instance = null; // what a trap does
    assert.deepEqual(gateway.instantiate().keyStore(), store, "the replacing instance starts with the keys");
    assert.equal((await gateway.fetch(bearer(token))).status, 200, "not 503: the keys came along");
    assert.equal(gateway.instances, 3);
  });

  test("RSA keys of 2048, 3072 and 4096 bits install and verify", async () => {
    const { gateway, lines } = fresh();
    const rsa = [2048, 3072, 4096].map((bits) => makeKey(`rsa-${bits}`, "RS256", { bits }));
    env.provider.behave("ok");
    env.provider.publish("*", jwksOf(rsa));
    for (const key of rsa) {
      const res = await gateway.fetch(bearer(signToken(key, claims(IDP))));
      assert.equal(res.status, 200, `${key.kid}: ${await res.text()} ${lines.join("\n")}`);
    }
    env.provider.publish("*", jwksOf([keyA]));
  });
});

/**
 * An in-memory stand-in for a Workers KV namespace, with the two calls
 * kvStore makes: `getWithMetadata(key, { type: "arrayBuffer" })` and
 * `put(key, value, { metadata })` (metadata kept as JSON, as KV keeps it).
 * Cloudflare's KV itself is not run here.
 */
function memoryKv() {
  const entries = new Map();
  return {
    entries,
    async getWithMetadata(key, { type }) {
      assert.equal(type, "arrayBuffer");
      const entry = entries.get(key);
      return entry ? { value: entry.value.slice().buffer, metadata: JSON.parse(entry.metadata) } : { value: null, metadata: null };
    },
    async put(key, value, { metadata }) {
      entries.set(key, { value: new Uint8Array(value).slice(), metadata: JSON.stringify(metadata) });
    },
  };
}

describe("documents shared through a KV store (the Cloudflare recipe, in Node.js)", () => {
  const kv = memoryKv();
  const keyA = fixtureRsaKey("key-a");
  const keyB = makeKey("key-b", "ES256");
  const env = providerAndUpstream(keyA);
  /** A fresh isolate's gateway with the store; `waits` collects its background work. */
  const isolate = () => {
    const { gateway, lines } = gatewayFor(env.provider, env.echo.addresses.orders);
    gateway.keys.store = kvStore(kv);
    const waits = [];
    const call = async (token) => {
      const res = await gateway.fetch(bearer(token), { waitUntil: (p) => waits.push(p) });
      return { status: res.status, body: await res.text() };
    };
    return { gateway, lines, waits, call };
  };
  const decoded = (key) => new TextDecoder().decode(kv.entries.get(key).value);

  test("a Cron Trigger's refresh fetches every source from its provider and stores each document", async () => {
    env.provider.behave("ok");
    const { gateway } = isolate();
    const since = mark(env.provider);
    await gateway.keys.refreshAll();
    assert.equal(since("/jwks"), 1);
    assert.equal(since("/keys.json"), 1);
    assert.equal(decoded("jwks:0"), jwksOf([keyA]));
    assert.equal(decoded("jwks:1"), jwksOf([keyA]));
    const metadata = JSON.parse(kv.entries.get("jwks:0").metadata);
    assert.equal(metadata.url, "http://idp.test/jwks");
    assert.ok(Math.abs(metadata.fetchedMs - Date.now()) < 60_000);
  });

  test("a fresh isolate installs the stored documents before its first decision, without the provider", async () => {
    env.provider.behave("status500");
    const { lines, call } = isolate();
    const since = mark(env.provider);
    const res = await call(signToken(keyA, claims(IDP)));
    env.provider.behave("ok");
    assert.equal(res.status, 200, res.body);
    assert.equal(since("/jwks") + since("/keys.json") + since("/.well-known/openid-configuration"), 0);
    assert.match(lines.join("\n"), /^keys: issuer 0 http:\/\/idp\.test\/jwks \(stored, fetched \S+Z\): installed "key-a"/m);
  });

  test("an unknown kid installs a newer stored document before asking the provider", async () => {
    env.provider.behave("ok");
    const { call, waits } = isolate();
    assert.equal((await call(signToken(keyA, claims(IDP)))).status, 200);
    env.provider.publish("*", jwksOf([keyA, keyB]));
    await isolate().gateway.keys.refreshAll(); // the Cron Trigger, in another isolate
    await new Promise((r) => setTimeout(r, 1100)); // past refetch_secs (1) since this isolate's first fetch
    const since = mark(env.provider);
    const unknown = await call(signToken(keyB, claims(IDP)));
    assert.equal(unknown.status, 401, unknown.body);
    await Promise.all(waits);
    assert.equal((await call(signToken(keyB, claims(IDP)))).status, 200);
    assert.equal(since("/jwks"), 0, "the store had it");
    env.provider.publish("*", jwksOf([keyA]));
  });

  test("a stored document dated more than a minute ahead is ignored: it would outlive max_stale_secs", async () => {
    const entry = kv.entries.get("jwks:0");
    const metadata = JSON.parse(entry.metadata);
    const clock = metadata.fetchedMs / 1000 - 3600; // an hour behind the isolate that stored it
    const lines = [];
    const gateway = new Gateway(jwksModule, { now: () => clock, log: (line) => lines.push(line) });
    gateway.upstreamOverride = parseUpstreamOverride(`${IDP}=${env.provider.origin},${JWKS}=${env.provider.origin}`, gateway.routes());
    gateway.keys.store = kvStore(kv);
    env.provider.behave("status500");
    const res = await gateway.fetch(bearer(signToken(keyA, claims(IDP))));
    env.provider.behave("ok");
    assert.equal(res.status, 503, await res.text());
    assert.match(
      lines.join("\n"),
      /^keys: issuer 0 http:\/\/idp\.test\/jwks \(stored, fetched \S+\): refused: fetched more than 60 s after now, by this clock$/m,
    );
    assert.equal(entry.metadata, JSON.stringify(metadata), "the store is unchanged");
  });

  test("a stored document older than max_stale_secs counts from its fetch: 503 until the provider answers", async () => {
    const entry = kv.entries.get("jwks:0");
    entry.metadata = JSON.stringify({ ...JSON.parse(entry.metadata), fetchedMs: Date.now() - 31_000 }); // max_stale_secs 30
    env.provider.behave("status500");
    const { call, waits, lines } = isolate();
    const down = await call(signToken(keyA, claims(IDP)));
    assert.equal(down.status, 503, down.body);
    assert.match(down.body, /signing keys unavailable/);
    assert.match(lines.join("\n"), /keys: issuer 0 \S+: fetch failed: status 500/, "not fresh: the provider was asked");
    env.provider.behave("ok");
    await new Promise((r) => setTimeout(r, 1100)); // past refetch_secs (1)
    await call(signToken(keyA, claims(IDP)));
    await Promise.all(waits);
    assert.equal((await call(signToken(keyA, claims(IDP)))).status, 200);
    assert.ok(JSON.parse(kv.entries.get("jwks:0").metadata).fetchedMs > Date.now() - 30_000, "the provider's document was stored");
  });
});

describe("the shim fetches keys in workerd", () => {
  test("concurrent first requests to a fresh isolate share one fetch of every source", async () => {
    const provider = await startProvider({ issuer: IDP });
    const echo = await startEcho({ orders: 0 });
    const keyA = fixtureRsaKey("key-a");
    provider.publish("*", jwksOf([keyA]));
    const host = await startWorkerd(`${IDP}=${provider.origin},${JWKS}=${provider.origin},${ROUTE_ORIGIN}=${echo.addresses.orders}`, JWKS_WASM);
    try {
      const token = signToken(keyA, claims(IDP));
      const call = () =>
        fetch(`http://127.0.0.1:${host.port}/orders/x`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10000) });
      const answers = await Promise.all(Array.from({ length: 12 }, call));
      assert.deepEqual(answers.map((r) => r.status), Array(12).fill(200), host.proc.output());
      assert.equal(provider.fetchesOf("/.well-known/openid-configuration"), 1);
      assert.equal(provider.fetchesOf("/jwks"), 1);
      assert.equal(provider.fetchesOf("/keys.json"), 1);
      assert.match(host.proc.output(), /keys: issuer 0 http:\/\/idp\.test\/jwks: installed "key-a": 1 key for issuer 0/);
      assert.match(host.proc.output(), /keys: issuer 1 http:\/\/jwks\.test\/keys\.json: installed "key-a": 1 key for issuer 1/);
    } finally {
      await host.proc.stop();
      await echo.close();
      await provider.stop();
    }
  });

  test("a scheduled event (a Cron Trigger on Cloudflare) refreshes every source with no request", async () => {
    const provider = await startProvider({ issuer: IDP });
    const echo = await startEcho({ orders: 0 });
    const keyA = fixtureRsaKey("key-a");
    const keyB = makeKey("key-b", "EdDSA");
    provider.publish("*", jwksOf([keyA]));
    const overrides = `${IDP}=${provider.origin},${JWKS}=${provider.origin},${ROUTE_ORIGIN}=${echo.addresses.orders}`;
    const host = await startWorkerd(overrides, JWKS_WASM, { scheduledTrigger: true });
    try {
      const call = (key) =>
        fetch(`http://127.0.0.1:${host.port}/orders/x`, {
          headers: { authorization: `Bearer ${signToken(key, claims(JWKS))}` },
          signal: AbortSignal.timeout(10000),
        });
      assert.equal((await call(keyA)).status, 200);
      provider.publish("*", jwksOf([keyA, keyB]));
      const since = mark(provider);
      const triggered = await fetch(`http://127.0.0.1:${host.triggerPort}/`, { signal: AbortSignal.timeout(10000) });
      assert.equal(triggered.status, 200, await triggered.text());
      const deadline = Date.now() + 8000;
      while (since("/keys.json") < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(since("/keys.json"), 1, "refresh_secs is 600: only the scheduled event fetched");
      assert.equal(since("/jwks"), 1);
      // The module holds key-b before any request could have asked for it.
      const logged = /keys: issuer 1 http:\/\/jwks\.test\/keys\.json: installed "key-a" "key-b"/;
      while (!logged.test(host.proc.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.match(host.proc.output(), logged);
      const since2 = mark(provider);
      assert.equal((await call(keyB)).status, 200);
      assert.equal(since2("/keys.json"), 0);
    } finally {
      await host.proc.stop();
      await echo.close();
      await provider.stop();
    }
  });
});
