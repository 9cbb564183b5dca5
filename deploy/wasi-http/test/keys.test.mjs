// Keys fetched at run time under `make deploy-wasi-http`'s defaults
// (deploy/wasi-http/run.sh: instances kept), with the component built from
// testkit/fixture-jwks.toml (issuer http://idp.test: OpenID discovery,
// refresh_secs 2, refetch_secs 1, fetch_timeout_ms 1000) and a provider on loopback:
// - requests with a forged signature under an installed kid cost the
//   provider the refresh schedule's rounds, not a round each (as a fresh
//   instance per request does: INSTANCES=fresh, shown beside it);
// - a refresh is never in front of a request: while the provider hangs on
//   a due refresh, the next requests are answered before that fetch ends.
//
//   node --test deploy/wasi-http/test/
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import { WASI_HTTP_FIXTURES, startDeploy, wasiHttpReady } from "../harness.mjs";
import { startRecorder } from "../recorder.mjs";
import { fixtureRsaKey, jwksOf, makeKey, signToken } from "../../../testkit/jwks/provider.mjs";

const required = process.env.REQUIRE_WASI_HTTP === "1";
const skip = !required && !wasiHttpReady() && "wasmtime or the fixture components are not built (make wasmtime fixture)";

const IDP = "http://idp.test";
const ROUTE_ORIGIN = "http://127.0.0.1:9201";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const claims = () => ({ iss: IDP, aud: "orders", sub: "alice", exp: Math.floor(Date.now() / 1000) + 3600 });

/**
 * A provider for http://idp.test: its discovery document and `keys` at
 * /jwks. With `hang` set, it answers nothing and keeps the connection
 * open. `fetches` lists each request: { path, at, closedAt } (ms since the
 * epoch; closedAt when its connection closed, null while open).
 */
async function startProvider(keys) {
  const fetches = [];
  const state = { hang: false };
  const server = createServer((req, res) => {
    const fetch = { path: new URL(req.url, IDP).pathname, at: Date.now(), closedAt: null };
    fetches.push(fetch);
    req.socket.once("close", () => (fetch.closedAt = Date.now()));
    if (state.hang) return;
    res.writeHead(200, { "content-type": "application/json" });
    if (fetch.path === "/.well-known/openid-configuration") return res.end(JSON.stringify({ issuer: IDP, jwks_uri: `${IDP}/jwks` }));
    res.end(jwksOf(keys));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    fetches,
    state,
    stop: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** GET /orders/x with `token` through the host on `port`: { status, body, at } (at: when answered). */
async function call(port, token) {
  const res = await fetch(`http://127.0.0.1:${port}/orders/x`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(20000) });
  return { status: res.status, body: await res.text(), at: Date.now() };
}

describe("keys fetched at run time under make deploy-wasi-http's defaults", { skip }, () => {
  const keyA = fixtureRsaKey("key-a");
  // The same kid as the installed key, another key: every signature under it is forged.
  const forger = makeKey("key-a");
  let provider;
  let recorder;
  const hosts = [];
  const start = async (env = {}) => {
    const overrides = [[IDP, provider.origin], [ROUTE_ORIGIN, recorder.origin]];
    const host = await startDeploy(WASI_HTTP_FIXTURES.jwks, overrides, env);
    hosts.push(host);
    return host;
  };
  before(async () => {
    provider = await startProvider([keyA]);
    recorder = await startRecorder();
  });
  after(async () => {
    for (const host of hosts) await host.proc.stop();
    await recorder?.stop();
    await provider?.stop();
  });

  test("forged signatures under an installed kid cost the refresh schedule's rounds, not a round each", async () => {
    const host = await start();
    const ok = await call(host.port, signToken(keyA, claims()));
    assert.equal(ok.status, 200, ok.body);
    const since = provider.fetches.length;
    const started = Date.now();
    const N = 40;
    for (let i = 0; i < N; i++) {
      const forged = await call(host.port, signToken(forger, claims()));
      assert.equal(forged.status, 401, forged.body);
      assert.match(forged.body, /signature mismatch/);
    }
    const fetched = provider.fetches.length - since;
    // At most a round (discovery, then the keys) per refetch_secs (1 s, the
    // schedule's shortest interval) of the time they took, and one more.
    const rounds = 2 + Math.ceil((Date.now() - started) / 1000);
    assert.ok(fetched <= 2 * rounds, `${N} requests made ${fetched} fetches; the schedule allows ${2 * rounds}`);
    assert.ok(fetched < N, `${N} requests made ${fetched} fetches`);
    await host.proc.stop();
  });

  test("INSTANCES=fresh (an instance per request): every such request runs a round", async () => {
    const host = await start({ INSTANCES: "fresh" });
    const since = provider.fetches.length;
    const N = 5;
    for (let i = 0; i < N; i++) assert.equal((await call(host.port, signToken(forger, claims()))).status, 401);
    assert.equal(provider.fetches.length - since, 2 * N, "discovery and keys, for each request");
    await host.proc.stop();
  });

  test("a refresh is never in front of a request: requests are answered while a due refresh hangs", async () => {
    const host = await start();
    const first = await call(host.port, signToken(keyA, claims()));
    assert.equal(first.status, 200, first.body);
    provider.state.hang = true;
    try {
      // Past refresh_secs (2 s): the refresh is due after the next response.
      await sleep(2500);
      const since = provider.fetches.length;
      const due = await call(host.port, signToken(keyA, claims()));
      assert.equal(due.status, 200, due.body);
      // The refresh that response started: its fetch reaches the provider, which holds it.
      const deadline = Date.now() + 5000;
      while (provider.fetches.length === since && Date.now() < deadline) await sleep(20);
      const hanging = provider.fetches[since];
      assert.ok(hanging, "a due refresh started after the response");
      const next = [];
      for (let i = 0; i < 5; i++) next.push(await call(host.port, signToken(keyA, claims())));
      for (const answer of next) assert.equal(answer.status, 200, answer.body);
      // The refresh's fetch ends by its timeout (fetch_timeout_ms, 1 s); bounded generously.
      while (hanging.closedAt === null && Date.now() < deadline + 10000) await sleep(50);
      assert.notEqual(hanging.closedAt, null, "the component gave up the hanging fetch");
      assert.ok(next[0].at < hanging.closedAt, "the next request was answered before the refresh under way ended");
      // One round under way at a time: no second fetch while it hung.
      assert.equal(provider.fetches.filter((f) => f.at < hanging.closedAt).length, since + 1);
    } finally {
      provider.state.hang = false;
    }
  });
});
