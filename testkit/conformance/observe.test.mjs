// What each host tells its operators, checked against what the module
// decided: the forwarding and policy corpora's requests go through every
// host (host-sim serve with --metrics and --access-log json, Envoy with the
// gateway filter and its admin interface, workerd with DECISION_LOG=on and
// an Analytics Engine binding), and then
//
// - each host's counts of decisions by outcome, rule, route and issuer
//   (Envoy's /stats/prometheus, host-sim's /metrics, host-sim's and
//   workerd's JSON lines, workerd's Analytics Engine data points) equal the
//   module's own labels for the same requests (`host-sim eval`, whose
//   statuses must be the corpus's), and allowed, denied and the cache's
//   hits and misses add up;
// - a request's W3C `traceparent` and `tracestate` reach the upstream
//   untouched, and the JSON lines carry its trace id;
// - no line any host writes holds a token or a cookie, sent in every place
//   a client can put one.
//
// The requests are the corpus cases that every host answers alike (no
// host-specific or front-end outcome, one request without a body, no
// clock-dependent token): hosts.test.mjs checks their answers; this file
// checks what is counted and logged.
//
//   node --test testkit/conformance/observe.test.mjs
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import net from "node:net";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { FIXTURE_WASM, HOST_SIM, ROOT, hostSimServeHelp, startHostSim, startWorkerd } from "../../deploy/workerd/harness.mjs";
import {
  FIXTURE_CONFIG,
  FIXTURE_ENVOY_WASM,
  FIXTURE_NATIVE,
  envoyFilterReady,
  envoyNativeReady,
  startEnvoyFilter,
  startEnvoyNative,
} from "../../deploy/envoy/harness.mjs";
import { parseExposition } from "../metrics/exposition.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ORIGINS = ["http://127.0.0.1:9201", "http://127.0.0.1:9202"];
const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACESTATE = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

const readCorpus = (name) =>
  readFileSync(join(HERE, name), "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));

/** The status a case's one expected response has. */
function statusOf(expected) {
  if (expected.forwarded) return 200;
  if (expected.refused) return expected.refused.status;
  return expected.status;
}

/** The cases every host answers alike with one request and no body. */
function alike(cases) {
  return cases.filter((c) => {
    const [expected, ...more] = c.expect;
    const end = c.request.indexOf("\r\n\r\n");
    return more.length === 0 && !expected.any_of && !expected.hosts && !expected.front_end &&
      end === c.request.length - 4 && statusOf(expected) !== undefined;
  });
}

const MODULES = [
  {
    name: "forwarding",
    wasm: FIXTURE_WASM,
    envoy: { wasm: FIXTURE_ENVOY_WASM, config: FIXTURE_CONFIG },
    // A module without a label table: its one issuer is named by the config
    // (host-sim's --config, workerd's ISSUER, the filter's compiled config).
    issuer: "https://issuer.test",
    cases: alike(readCorpus("forwarding.jsonl")),
  },
  {
    name: "policies",
    wasm: join(ROOT, "target", "fixture", "gateway-policies.wasm"),
    envoy: { wasm: join(ROOT, "target", "fixture", "gateway-policies-envoy.wasm"), config: join(ROOT, "testkit", "fixture-policies.toml") },
    cases: alike(readCorpus("policies.jsonl")),
  },
];

/** Every token-shaped string (a compact JWS) in `text`. */
const tokensIn = (text) => text.match(/[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g) ?? [];

/** The module's labels for each case's request (`host-sim eval`), with its status. */
function moduleLabels(module, cases) {
  const input = cases.map((c) => JSON.stringify({ request: c.request })).join("\n") + "\n";
  const r = spawnSync(HOST_SIM, ["eval", "--wasm", module.wasm, "--config", module.envoy.config], { input, encoding: "utf8", timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim().split("\n").map((line) => JSON.parse(line));
}

/** A count per `outcome|rule|route|issuer` of `items`, sorted; `pick` gives each one's four labels. */
function tally(items, pick) {
  const counts = new Map();
  for (const item of items) {
    const key = pick(item).map((v) => v ?? "").join("|");
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts.entries()].sort();
}

/** The same tally from an exposition's `gateway_decisions_total` samples. */
function tallyScrape(samples) {
  const counts = new Map();
  for (const s of samples.filter((s) => s.name === "gateway_decisions_total")) {
    const key = ["outcome", "rule", "route", "issuer"].map((l) => s.labels[l] ?? "").join("|");
    counts.set(key, (counts.get(key) ?? 0) + s.value);
  }
  return [...counts.entries()].filter(([, n]) => n > 0).sort();
}

/** The value of the one sample `name` (0 when absent). */
const single = (samples, name) => samples.filter((s) => s.name === name).reduce((sum, s) => sum + s.value, 0);

/** An upstream that answers 200 and keeps each request's fields. */
async function startRecorder() {
  const received = [];
  const servers = [];
  const addresses = {};
  for (const origin of ORIGINS) {
    const server = createServer((req, res) => {
      received.push({ ...req.headers, ":url": req.url });
      req.resume();
      req.on("end", () => res.end("ok"));
    });
    server.keepAliveTimeout = 1000;
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    addresses[origin] = `http://127.0.0.1:${server.address().port}`;
  }
  const close = () => Promise.all(servers.map((s) => new Promise((r) => (s.closeAllConnections?.(), s.close(() => r())))));
  return { received, addresses, close };
}

/** An Analytics Engine that keeps the data points workerd posts to it (blobs and indexes as text). */
async function startAnalytics() {
  const points = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const event = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const text = (bytes) => Buffer.from(bytes ?? []).toString("utf8");
      points.push({ index: text(event.index1), blobs: [1, 2, 3, 4, 5].map((i) => text(event[`blob${i}`])), status: event.double1 });
      res.end("ok");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { points, address: `127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(() => r())) };
}

/** Sends `bytes` on a fresh connection and resolves with the first response's status once it is whole (bounded). */
function send(port, bytes, timeoutMs = 10000) {
  const head = bytes.startsWith("HEAD ");
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => (sock.destroy(), reject(new Error(`no whole answer from :${port} in ${timeoutMs} ms`))), timeoutMs);
    const done = (status) => (clearTimeout(timer), sock.destroy(), resolve(status));
    sock.on("data", (c) => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const fields = buf.subarray(0, end).toString("latin1");
      const status = Number(fields.split(" ")[1]);
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(fields);
      const chunked = /\r\ntransfer-encoding:\s*chunked/i.test(fields);
      const body = buf.subarray(end + 4);
      if (head || (length && body.length >= Number(length[1])) || (chunked && body.includes("0\r\n\r\n")) || (!length && !chunked)) done(status);
    });
    sock.on("error", () => {});
    sock.on("close", () => done(Number(buf.toString("latin1").split(" ")[1])));
    sock.write(Buffer.from(bytes, "latin1"));
  });
}

/** Everything `proc` writes from now on, line by line. */
function capture(proc) {
  const lines = [];
  let rest = "";
  const keep = (chunk) => {
    const parts = (rest + chunk.toString()).split("\n");
    rest = parts.pop();
    lines.push(...parts);
  };
  proc.child.stdout.on("data", keep);
  proc.child.stderr.on("data", keep);
  return () => (rest === "" ? lines : [...lines, rest]);
}

/** A token-shaped secret a client sends in a query, never the one it is verified by. */
const QUERY_SECRET = "eyJxdWVyeS1zZWNyZXQiOjF9.eyJzdWIiOiJxdWVyeSJ9.c2VjcmV0LXNpZ25hdHVyZQ";

/**
 * `request` (a corpus case's, its target without a query) with the secret
 * in each place a query can hold it: a value, a name, a name with a value,
 * beside another parameter.
 */
function withQuerySecrets(request) {
  const [method, target, ...rest] = request.split(" ");
  return [`access_token=${QUERY_SECRET}`, QUERY_SECRET, `${QUERY_SECRET}=1`, `a=1&${QUERY_SECRET}`].map(
    (query) => [method, `${target}?${query}`, ...rest].join(" "),
  );
}

/** Resolves once `done()` holds, or after 5 s (the assertion that follows then says what is missing). */
async function until(done) {
  for (let i = 0; i < 100 && !done(); i++) await new Promise((r) => setTimeout(r, 50));
}

/** The JSON objects among `lines` that `keep` accepts. */
const jsonLines = (lines, keep) =>
  lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).filter(keep);

const overrides = (recorder) => ORIGINS.map((o) => [o, recorder.addresses[o]]);

/** Each host: how it starts with `module` (and `extra` set-up), and where its counts are. */
const HOSTS = [
  {
    name: "workerd",
    async start(recorder, module, analytics) {
      const gateway = await startWorkerd(overrides(recorder).map(([f, t]) => `${f}=${t}`).join(","), module.wasm, {
        env: { GATEWAY_DECISION_LOG: "on", ...(module.issuer ? { GATEWAY_ISSUER: module.issuer } : {}) },
        analytics: analytics.address,
      });
      return { ...gateway, lines: capture(gateway.proc) };
    },
    jsonLine: (v) => v.gateway === "decision",
  },
];
if (hostSimServeHelp() || process.env.REQUIRE_HOST_SIM === "1") {
  HOSTS.push({
    name: "host-sim serve",
    async start(recorder, module) {
      const args = [...overrides(recorder).flatMap(([f, t]) => ["--upstream-override", `${f}=${t}`]),
        "--metrics", "127.0.0.1:0", "--access-log", "json", "--threads", "2", "--config", module.envoy.config];
      const gateway = await startHostSim(args, 60000, module.wasm);
      const lines = capture(gateway.proc);
      const metricsPort = Number(/metrics listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(gateway.proc.output())?.[1]);
      return { ...gateway, lines, scrape: `http://127.0.0.1:${metricsPort}/metrics` };
    },
    jsonLine: (v) => "outcome" in v,
  });
}
if (envoyFilterReady() || process.env.REQUIRE_ENVOY === "1") {
  HOSTS.push({
    name: "envoy + gateway filter",
    async start(recorder, module) {
      const gateway = await startEnvoyFilter(overrides(recorder), { ...module.envoy, admin: true });
      return { ...gateway, lines: capture(gateway.proc), scrape: `http://127.0.0.1:${gateway.adminPort}/stats/prometheus` };
    },
  });
}
// The native module's counters are Envoy's labeled counters, which
// /stats/prometheus names under `envoy_dynamicmodulescustom_`: read as an
// operator's relabel rule reads them, without that prefix.
if (envoyNativeReady() || process.env.REQUIRE_ENVOY === "1") {
  HOSTS.push({
    name: "envoy + native module",
    async start(recorder, module) {
      const native = { native: FIXTURE_NATIVE[module.name], config: module.envoy.config, admin: true };
      const gateway = await startEnvoyNative(overrides(recorder), native);
      const scrape = `http://127.0.0.1:${gateway.adminPort}/stats/prometheus`;
      return { ...gateway, lines: capture(gateway.proc), scrape, prefix: "envoy_dynamicmodulescustom_" };
    },
  });
}

for (const module of MODULES) {
  describe(`what is counted and logged, ${module.name} corpus`, { timeout: 300000 }, () => {
    let decided;
    let expected;
    before(() => {
      decided = moduleLabels(module, module.cases);
      const labels = (d) => [d.labels.outcome, d.labels.rule, d.labels.route, d.labels.issuer];
      expected = tally(decided, labels);
    });

    test("the module's labels are for the corpus's statuses", () => {
      // The one issuer of a module without a label table is named by its config, never `0`.
      assert.ok(!decided.some((d) => d.labels.issuer === "0"), "an issuer labelled 0");
      if (module.issuer) assert.ok(decided.some((d) => d.labels.issuer === module.issuer), `no decision names ${module.issuer}`);
      assert.ok(module.cases.length >= 40, `only ${module.cases.length} cases`);
      module.cases.forEach((c, i) => assert.equal(decided[i].status, statusOf(c.expect[0]), c.name));
      // The corpus reaches outcomes of every kind.
      const outcomes = new Set(decided.map((d) => d.labels.outcome));
      assert.ok(outcomes.has("forwarded") && outcomes.size >= 8, [...outcomes].join(", "));
    });

    for (const host of HOSTS) {
      describe(host.name, () => {
        let recorder;
        let analytics;
        let gateway;
        before(async () => {
          recorder = await startRecorder();
          analytics = await startAnalytics();
          gateway = await host.start(recorder, module, analytics);
          for (const c of module.cases) await send(gateway.port, c.request);
        });
        after(async () => {
          await gateway?.proc.stop();
          await recorder?.close();
          await analytics?.close();
        });

        if (host.name !== "workerd") {
          test("its scrape counts each decision by outcome, rule, route and issuer", async () => {
            // The Envoy filter hands its counts to Envoy on a tick (at most
            // 1 s after a request): scrape again (bounded) until every
            // decision is there, then read that scrape.
            const unprefixed = (text) => (gateway.prefix ? text.replaceAll(gateway.prefix, "") : text);
            const scrape = async () => parseExposition(unprefixed(await (await fetch(gateway.scrape)).text()));
            let samples = await scrape();
            for (let i = 0; i < 100 && !isDeepStrictEqual(tallyScrape(samples), expected); i++) {
              await new Promise((r) => setTimeout(r, 50));
              samples = await scrape();
            }
            assert.deepEqual(tallyScrape(samples), expected);
            const allowed = decided.filter((d) => ["forwarded", "public"].includes(d.labels.outcome)).length;
            const preflights = decided.filter((d) => d.labels.outcome === "preflight").length;
            assert.equal(single(samples, "gateway_allowed_total"), allowed);
            assert.equal(single(samples, "gateway_denied_total"), decided.length - allowed - preflights);
            const verified = decided.filter((d) => d.labels.cache !== "none").length;
            assert.equal(single(samples, "gateway_jwt_cache_hit_total") + single(samples, "gateway_jwt_cache_miss_total"), verified);
          });
        }

        if (host.jsonLine) {
          test("its JSON lines name each decision as the module labelled it", async () => {
            // A line may follow its response by a moment: wait (bounded) for all of them.
            const lines = () => jsonLines(gateway.lines(), host.jsonLine);
            await until(() => lines().length >= decided.length);
            assert.deepEqual(tally(lines(), (l) => [l.outcome, l.rule, l.route, l.issuer]), expected);
          });
        }

        if (host.name === "workerd") {
          test("its Analytics Engine data points name each decision as the module labelled it", async () => {
            // workerd posts data points after the response: wait (bounded) for all of them.
            await until(() => analytics.points.length >= decided.length);
            assert.deepEqual(tally(analytics.points, (p) => p.blobs.slice(0, 4)), expected.map(([k, n]) => [k, n]));
            assert.ok(analytics.points.every((p) => p.index === p.blobs[0]), "the index is the outcome");
          });
        }

        test("traceparent and tracestate reach the upstream untouched, and the trace id is logged", async () => {
          const forward = module.cases.find((c, i) => decided[i].status === 200 && decided[i].labels.outcome === "forwarded");
          const request = forward.request.replace("\r\n\r\n", `\r\ntraceparent: ${TRACEPARENT}\r\ntracestate: ${TRACESTATE}\r\n\r\n`);
          const seen = recorder.received.length;
          assert.equal(await send(gateway.port, request), 200);
          const got = recorder.received.slice(seen);
          assert.equal(got.length, 1);
          assert.equal(got[0].traceparent, TRACEPARENT);
          assert.equal(got[0].tracestate, TRACESTATE);
          if (host.jsonLine) {
            const traced = () => jsonLines(gateway.lines(), host.jsonLine).filter((l) => l.trace_id === TRACEPARENT.split("-")[1]);
            await until(() => traced().length > 0);
            assert.equal(traced().length, 1, "one line with the trace id");
          }
        });

        test("no line it writes holds a token or a cookie, wherever the client put them", async () => {
          const forward = module.cases.find((c, i) => decided[i].labels.outcome === "forwarded");
          const [token] = tokensIn(forward.request);
          const cookie = "session=cookie-secret-value-4711";
          // The token in the query (RFC 6750 section 2.3), in a cookie, in a header of its own, and twice.
          const requests = [
            `GET /orders/1?access_token=${token} HTTP/1.1\r\nHost: gw.test\r\n\r\n`,
            `GET /orders/1 HTTP/1.1\r\nHost: gw.test\r\nCookie: ${cookie}; t=${token}\r\n\r\n`,
            `GET /orders/1 HTTP/1.1\r\nHost: gw.test\r\nX-Token: ${token}\r\nAuthorization: Bearer ${token}\r\n\r\n`,
            `GET /orders/1 HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer ${token}\r\nAuthorization: Bearer ${token}x\r\n\r\n`,
          ];
          for (const request of requests) await send(gateway.port, request);
          // Forwarded with the secret in the query: on a token path, and
          // anonymously on a public one where the module has one.
          const plain = (outcome) =>
            module.cases.find((c, i) => decided[i].labels.outcome === outcome && decided[i].status === 200 && !c.request.split(" ")[1].includes("?"));
          const queried = [plain("forwarded"), plain("public")].filter((c) => c !== undefined);
          assert.ok(queried.length > 0, "a case to send a query with");
          const seen = recorder.received.length;
          for (const c of queried) {
            for (const request of withQuerySecrets(c.request)) assert.equal(await send(gateway.port, request), 200, request);
          }
          const reached = recorder.received.slice(seen).filter((r) => r[":url"].includes(QUERY_SECRET)).length;
          assert.equal(reached, queried.length * 4, "each query reached the upstream");
          await new Promise((r) => setTimeout(r, 200));
          const secrets = new Set([...module.cases.flatMap((c) => tokensIn(c.request)), token, "cookie-secret-value-4711", QUERY_SECRET, ...QUERY_SECRET.split(".")]);
          const lines = gateway.lines();
          assert.ok(lines.length > 0 || host.name.startsWith("envoy"), "the host wrote lines");
          for (const line of lines) {
            for (const secret of secrets) assert.ok(!line.includes(secret), `a line holds a secret: ${line}`);
          }
        });
      });
    }
  });
}

// The text form of host-sim's access log, the default, holds no token or
// cookie either: the same requests, every line read.
if (hostSimServeHelp() || process.env.REQUIRE_HOST_SIM === "1") {
  describe("host-sim serve's text access log", { timeout: 60000 }, () => {
    let recorder;
    let gateway;
    before(async () => {
      recorder = await startRecorder();
      const args = overrides(recorder).flatMap(([f, t]) => ["--upstream-override", `${f}=${t}`]);
      gateway = await startHostSim([...args, "--access-log"], 60000, FIXTURE_WASM);
      gateway.lines = capture(gateway.proc);
    });
    after(async () => {
      await gateway?.proc.stop();
      await recorder?.close();
    });

    test("no line holds a token or a cookie, wherever the client put them", async () => {
      const forward = MODULES[0].cases.find((c) => (c.expect[0].forwarded || c.expect[0].upstream) && !c.request.split(" ")[1].includes("?"));
      const [token] = tokensIn(forward.request);
      const requests = [
        forward.request,
        ...withQuerySecrets(forward.request),
        `GET /orders/1?access_token=${token}&page=2 HTTP/1.1\r\nHost: gw.test\r\n\r\n`,
        `GET /orders/1 HTTP/1.1\r\nHost: gw.test\r\nCookie: session=cookie-secret-value-4711; t=${token}\r\n\r\n`,
        `GET /orders/1 HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer ${token}\r\nAuthorization: Bearer ${token}x\r\n\r\n`,
      ];
      for (const request of requests) await send(gateway.port, request);
      await until(() => gateway.lines().filter((l) => l.includes('"GET /')).length >= requests.length);
      const lines = gateway.lines().filter((l) => l.includes('"GET /'));
      assert.equal(lines.length, requests.length, lines.join("\n"));
      assert.ok(lines.some((l) => l.includes("/orders/1?<2>")), lines.join("\n"));
      assert.equal(lines.filter((l) => / 200 .*forward /.test(l)).length, 5, `forwarded with the query: ${lines.join("\n")}`);
      for (const line of gateway.lines()) {
        for (const secret of [token, "cookie-secret-value-4711", QUERY_SECRET, ...QUERY_SECRET.split(".")]) {
          assert.ok(!line.includes(secret), `a line holds a secret: ${line}`);
        }
      }
    });
  });
}
