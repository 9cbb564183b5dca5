// Test support: the test fixture, tokens signed with its key, an echo upstream, raw HTTP
// requests, and bounded start/stop of the servers under test (workerd,
// host-sim serve). Loopback only.
import { spawn, spawnSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:http";
import net from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const WASM = join(ROOT, "dist", "gateway.wasm");
/** The module the tests drive: built from testkit/fixture.toml by `make fixture`. */
export const FIXTURE_WASM = join(ROOT, "target", "fixture", "gateway.wasm");
export const WORKERD = join(ROOT, "node_modules", ".bin", "workerd");
export const WORKERD_CONFIG = join(ROOT, "deploy", "workerd", "config.capnp");
export const HOST_SIM = join(ROOT, "target", "release", "host-sim");

/** The test fixture (testkit/fixture.toml), as `make fixture` writes it for harnesses. */
export const FIXTURE_JSON = join(ROOT, "target", "fixture", "fixture.json");

/**
 * The fixture's key, issuer, token limit and routes: { kid, key (Buffer),
 * issuer, maxTokenBytes, routes: [{ aud, upstream, origin, base_path }] }. Written by `make fixture` from
 * testkit/fixture.toml, so no TOML is parsed here.
 */
export function readFixture(path = FIXTURE_JSON) {
  if (!existsSync(path)) throw new Error(`${path} is missing: run 'make fixture'`);
  const fixture = JSON.parse(readFileSync(path, "utf8"));
  const [key] = fixture.keys;
  return {
    kid: key.kid,
    key: Buffer.from(key.secret_hex, "hex"),
    issuer: fixture.issuer,
    maxTokenBytes: fixture.max_token_bytes,
    routes: fixture.routes,
  };
}

const b64url = (buf) => Buffer.from(buf).toString("base64url");

/** A compact HS256 JWS over `claims` (an object or a raw JSON string). */
export function mintToken(key, claims, header = { alg: "HS256", typ: "JWT", kid: "fixture" }) {
  const part = (v) => b64url(typeof v === "string" ? v : JSON.stringify(v));
  const signingInput = `${part(header)}.${part(claims)}`;
  return `${signingInput}.${b64url(createHmac("sha256", key).update(signingInput).digest())}`;
}

/** A port the kernel just handed out on 127.0.0.1 (free now; a race is retried by the caller). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Whether something accepts connections on 127.0.0.1:port. */
export function portOpen(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("error", () => resolve(false));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * An echo upstream: one HTTP server per named route, each on its own port,
 * answering 200 with a JSON record of what it received. `ports` maps a route
 * name to a port (0 for an ephemeral one).
 */
export async function startEcho(ports) {
  const servers = [];
  const addresses = {};
  for (const [route, port] of Object.entries(ports)) {
    const server = createServer((req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const record = {
          route,
          method: req.method,
          target: req.url,
          host: req.headers.host ?? null,
          authorization: req.headers.authorization ?? null,
          subject: req.headers["x-gateway-subject"] ?? null,
          body: Buffer.concat(chunks).toString("latin1"),
          headers: req.headers,
        };
        const json = JSON.stringify(record);
        res.writeHead(200, { "content-type": "application/json", "x-echo": route });
        res.end(req.method === "HEAD" ? undefined : json);
      });
    });
    server.keepAliveTimeout = 1000;
    await new Promise((resolve, reject) => {
      server.once("error", (e) =>
        reject(e.code === "EADDRINUSE" ? new Error(`echo upstream: 127.0.0.1:${port} is already in use`) : e),
      );
      server.listen(port, "127.0.0.1", resolve);
    });
    servers.push(server);
    addresses[route] = `http://127.0.0.1:${server.address().port}`;
  }
  return {
    addresses,
    close: () =>
      Promise.all(
        servers.map(
          (s) =>
            new Promise((r) => {
              s.closeAllConnections?.();
              s.close(() => r());
            }),
        ),
      ),
  };
}

/**
 * Sends raw request bytes on a fresh connection and reads the whole response
 * (the request asks for Connection: close). Resolves to { status, headers,
 * body } or, when the server hangs up without an answer, { status: 0 }.
 * Bounded by `timeoutMs`.
 */
export function rawRequest(port, bytes, timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    const chunks = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no complete answer from 127.0.0.1:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on("data", (c) => chunks.push(c));
    sock.on("error", () => {}); // a reset after the answer is fine; judged on close
    sock.on("close", () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks)));
    });
    sock.write(bytes);
  });
}

function parseResponse(buf) {
  const end = buf.indexOf("\r\n\r\n");
  if (end < 0) return { status: 0, headers: {}, body: "", raw: buf.toString("latin1") };
  const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(lines[0].split(" ")[1]);
  const headers = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = buf.subarray(end + 4);
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) body = dechunk(body);
  return { status, headers, body: body.toString("latin1") };
}

function dechunk(buf) {
  const out = [];
  let at = 0;
  for (;;) {
    const lineEnd = buf.indexOf("\r\n", at);
    if (lineEnd < 0) break;
    const size = parseInt(buf.subarray(at, lineEnd).toString("latin1"), 16);
    if (!(size > 0)) break;
    out.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(out);
}

/**
 * The kill of every child still running. A test runner stops a file that
 * overruns its timeout with SIGTERM, which runs no "exit" handler: the
 * children (each in its own process group) would outlive it and keep
 * calling the loopback ports later tests reuse. So a SIGTERM or SIGINT
 * kills them first.
 */
const running = new Set();
for (const [name, code] of [["SIGTERM", 143], ["SIGINT", 130]]) {
  process.once(name, () => {
    for (const kill of running) kill();
    process.exit(code);
  });
}

/**
 * A child process with its output kept (for failure messages), killed by
 * `stop()` (SIGTERM, then SIGKILL after a grace period). Children are also
 * killed if the test process exits or is told to stop.
 */
export function startProcess(command, args, options = {}) {
  // Its own process group, so stop() also ends any child it starts (an npm
  // wrapper around workerd's binary, say).
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], detached: true, ...options });
  const signal = (sig) => {
    try {
      process.kill(-child.pid, sig);
    } catch {
      child.kill(sig);
    }
  };
  const log = [];
  const keep = (c) => {
    log.push(c.toString());
    if (log.length > 200) log.shift();
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  let exitInfo = null;
  exited.then((info) => (exitInfo = info));
  const killOnExit = () => signal("SIGKILL");
  process.once("exit", killOnExit);
  running.add(killOnExit);
  return {
    child,
    output: () => log.join(""),
    exited: () => exitInfo,
    async stop() {
      process.removeListener("exit", killOnExit);
      running.delete(killOnExit);
      if (exitInfo) return exitInfo;
      signal("SIGTERM");
      const timer = setTimeout(() => signal("SIGKILL"), 3000);
      const info = await exited;
      clearTimeout(timer);
      return info;
    },
  };
}

/** Waits (bounded) until 127.0.0.1:port accepts connections, or the process exits. */
export async function waitForPort(proc, port, what, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exited()) throw new Error(`${what} exited early (${JSON.stringify(proc.exited())}):\n${proc.output()}`);
    if (await portOpen(port)) return;
    await sleep(50);
  }
  throw new Error(`${what} did not listen on 127.0.0.1:${port} within ${timeoutMs} ms:\n${proc.output()}`);
}

/**
 * A Worker for tests only: each request to it sends the gateway Worker a
 * scheduled event, as a Cron Trigger does on Cloudflare (workerd runs no
 * cron), through a service binding.
 */
const TRIGGER_WORKER = `export default {
  async fetch(request, env) {
    await env.GATEWAY.scheduled({ cron: "* * * * *" });
    return new Response("scheduled\\n");
  },
};
`;

/**
 * The workerd config for another module than dist/gateway.wasm, or with the
 * scheduled-event trigger: the shim and the module copied beside a copy of
 * config.capnp in a temporary folder.
 */
function workerdConfigFor(wasm, trigger, analytics, limits = true, edge = false) {
  if (wasm === WASM && !trigger && !analytics && limits === true && !edge) return WORKERD_CONFIG;
  const dir = mkdtempSync(join(tmpdir(), "gateway-workerd-"));
  for (const file of ["worker.mjs", "gateway.mjs", "keys.mjs", "observe.mjs", "limits.mjs", "context.mjs"]) copyFileSync(join(ROOT, "deploy", "workerd", file), join(dir, file));
  copyFileSync(wasm, join(dir, "gateway.wasm"));
  let config = readFileSync(WORKERD_CONFIG, "utf8").replace('embed "../../dist/gateway.wasm"', 'embed "gateway.wasm"');
  if (trigger) {
    writeFileSync(join(dir, "trigger.mjs"), TRIGGER_WORKER);
    const parts = [
      ["services = [\n", '    (name = "trigger", worker = .triggerWorker),\n'],
      ["sockets = [\n", '    (name = "scheduled", address = "127.0.0.1:0", http = (), service = "trigger"),\n'],
    ];
    for (const [list, entry] of parts) {
      if (!config.includes(list)) throw new Error(`config.capnp has no "${list.trim()}" list`);
      config = config.replace(list, list + entry);
    }
    config += `
const triggerWorker :Workerd.Worker = (
  modules = [(name = "trigger.mjs", esModule = embed "trigger.mjs")],
  compatibilityDate = "2026-05-01",
  bindings = [(name = "GATEWAY", service = "gateway")],
);
`;
  }
  if (edge) {
    // What Cloudflare's edge gives a Worker, from fields the test sends:
    // `request.cf` (its client address and mTLS result, tlsClientAuth)
    // from CF-Blob, and the client's scheme from X-Forwarded-Proto. Only
    // for tests: a deployed Worker gets both from the edge, never from a
    // client.
    const socket = 'http = (), service = "gateway"';
    if (!config.includes(socket)) throw new Error(`config.capnp has no "${socket}"`);
    config = config.replace(socket, 'http = (cfBlobHeader = "cf-blob", forwardedProtoHeader = "x-forwarded-proto"), service = "gateway"');
  }
  if (limits === false) {
    // The Worker without its rate-limit buckets (the namespace stays declared).
    const binding = '    (name = "LIMITS", durableObjectNamespace = "GatewayLimiter"),\n';
    if (!config.includes(binding)) throw new Error("config.capnp binds no LIMITS namespace");
    config = config.replace(binding, "");
  } else if (limits === "disk") {
    // The buckets stored on disk (in this folder), as config.capnp's comment shows.
    const storage = "durableObjectStorage = (inMemory = void),";
    if (!config.includes(storage)) throw new Error(`config.capnp has no "${storage}"`);
    mkdirSync(join(dir, "limits"));
    config = config
      .replace(storage, 'durableObjectStorage = (localDisk = "limits-disk"),')
      .replace("services = [\n", `services = [\n    (name = "limits-disk", disk = (path = ${JSON.stringify(join(dir, "limits"))}, writable = true)),\n`);
  }
  if (analytics) {
    // The Analytics Engine binding, posting each data point to `analytics` (HOST:PORT).
    const parts = [
      ["services = [\n", `    (name = "analytics", external = (address = "${analytics}", http = ())),\n`],
      ["bindings = [\n", '    (name = "DECISIONS", analyticsEngine = "analytics"),\n'],
    ];
    for (const [list, entry] of parts) {
      if (!config.includes(list)) throw new Error(`config.capnp has no "${list.trim()}" list`);
      config = config.replace(list, list + entry);
    }
  }
  writeFileSync(join(dir, "config.capnp"), config);
  return join(dir, "config.capnp");
}

/**
 * workerd serving deploy/workerd/config.capnp (with `wasm` as the module) on
 * an ephemeral loopback port, with the given upstream override. Resolves to
 * { port, proc }; `env` adds to its environment (GATEWAY_DECISION_LOG, say),
 * `analytics` (HOST:PORT) binds DECISIONS to an Analytics Engine that posts
 * there; with `scheduledTrigger`, also `triggerPort`, where a
 * request sends the gateway a scheduled event; `limits: false` leaves the
 * LIMITS Durable Object namespace unbound, `limits: "disk"` stores its
 * objects on disk (in the config's folder) instead of in memory.
 */
export async function startWorkerd(upstreamOverride = "", wasm = WASM, { scheduledTrigger = false, env = {}, analytics = null, limits = true, edge = false } = {}) {
  if (!existsSync(WORKERD)) throw new Error(`${WORKERD} is missing: run 'make setup'`);
  if (!existsSync(wasm)) throw new Error(`${wasm} is missing: run 'make worker' (or 'make fixture')`);
  const configPath = workerdConfigFor(wasm, scheduledTrigger, analytics, limits, edge);
  // A config written for this start lives in a folder of its own, removed when workerd stops.
  const configDir = configPath === WORKERD_CONFIG ? null : dirname(configPath);
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const triggerPort = scheduledTrigger ? await freePort() : null;
    const sockets = ["--socket-addr", `http=127.0.0.1:${port}`];
    if (scheduledTrigger) sockets.push("--socket-addr", `scheduled=127.0.0.1:${triggerPort}`);
    // Analytics Engine bindings are experimental in workerd.
    const experimental = analytics ? ["--experimental"] : [];
    const proc = startProcess(WORKERD, ["serve", configPath, ...sockets, ...experimental], {
      env: { ...process.env, GATEWAY_UPSTREAM_OVERRIDE: upstreamOverride, ...env },
    });
    const stop = removingOnStop(proc, configDir);
    try {
      await waitForPort(proc, port, "workerd");
      if (scheduledTrigger) {
        await waitForPort(proc, triggerPort, "workerd (scheduled trigger)");
        return { port, proc, triggerPort };
      }
      return { port, proc };
    } catch (e) {
      lastError = e;
      await stop();
    }
  }
  if (configDir) rmSync(configDir, { recursive: true, force: true });
  throw lastError;
}

/**
 * Makes `proc.stop()` also remove `dir` (a folder written for that process
 * alone; none when null). Returns the stop that leaves it, for a retry.
 */
export function removingOnStop(proc, dir) {
  const stop = proc.stop.bind(proc);
  if (dir) {
    proc.stop = async () => {
      const info = await stop();
      rmSync(dir, { recursive: true, force: true });
      return info;
    };
  }
  return stop;
}

/** Whether target/release/host-sim is built and has the `serve` command. */
export function hostSimServeHelp() {
  if (!existsSync(HOST_SIM)) return null;
  const r = spawnSync(HOST_SIM, ["serve", "--help"], { encoding: "utf8", timeout: 10000 });
  return r.status === 0 ? r.stdout : null;
}

/**
 * `host-sim serve` on an ephemeral loopback port (`--listen 127.0.0.1:0`);
 * the port is read from the address it prints. Resolves to { port, proc }.
 */
export async function startHostSim(extraArgs = [], timeoutMs = 60000, wasm = WASM) {
  const proc = startProcess(HOST_SIM, ["serve", "--listen", "127.0.0.1:0", "--wasm", wasm, ...extraArgs]);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    // The gateway's own line: others (the rate-limit store's) name addresses too.
    const m = proc.output().match(/gateway listening on https?:\/\/127\.0\.0\.1:(\d+)/);
    if (m && Number(m[1]) !== 0) {
      const port = Number(m[1]);
      await waitForPort(proc, port, "host-sim serve", Math.max(1, deadline - Date.now()));
      return { port, proc };
    }
    if (proc.exited()) break;
    await sleep(50);
  }
  const output = proc.output();
  await proc.stop();
  throw new Error(`host-sim serve printed no listening address within ${timeoutMs} ms:\n${output}`);
}
