// Test support: the gateway's wasi:http component under `wasmtime serve`
// (target/tools/bin/wasmtime, `make wasmtime`) on an ephemeral loopback
// port. The fixture components are built with `upstream-override` (`make
// fixture`), so that their origins can be moved to the tests' recorders and
// providers: `wasmtime serve -Scli` gives them wasi:cli/environment, and
// GATEWAY_UPSTREAM_OVERRIDE names the moves. Bounded start, stop by stop().
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ENVOY, startEnvoy } from "../envoy/harness.mjs";
import { ROOT, freePort, startProcess, waitForPort } from "../workerd/harness.mjs";
import { renderEnvoyFront } from "./front.mjs";

export const WASMTIME = join(ROOT, "target", "tools", "bin", "wasmtime");
/** Envoy, as `make envoy` installs it: the front end of deploy/wasi-http/front.mjs. */
export { ENVOY };
const fixture = (name) => join(ROOT, "target", "fixture", name);
/** The components `make fixture` builds, by the fixture config they hold. */
export const WASI_HTTP_FIXTURES = {
  /** testkit/fixture.toml, with upstream-override. */
  forwarding: fixture("gateway-wasi-http.wasm"),
  /** testkit/fixture-policies.toml, with upstream-override. */
  policies: fixture("gateway-policies-wasi-http.wasm"),
  /** testkit/fixture-jwks.toml (RS256, ES256, EdDSA), with upstream-override. */
  jwks: fixture("gateway-jwks-wasi-http.wasm"),
  /** testkit/fixture.toml without upstream-override: the proxy world alone, as `make worker` builds it. */
  proxy: fixture("gateway-wasi-http-proxy.wasm"),
};

/** Whether wasmtime and the fixture components are built. */
export function wasiHttpReady() {
  return [WASMTIME, ...Object.values(WASI_HTTP_FIXTURES)].every((path) => existsSync(path));
}

/**
 * `wasmtime serve` options that keep one instance for every request, one
 * request at a time: what a long-lived host does (host-sim --isolation
 * reuse, workerd's isolate, Envoy's VM), as near as wasmtime serve can be
 * told to. A request that comes before the last one's instance has marked
 * itself free again still gets a new instance (README, "Rate limits"):
 * a test that needs one instance pauses ONE_INSTANCE_PAUSE_MS first.
 */
export const REUSE_ONE_INSTANCE = [
  "--max-instance-reuse-count", "1000000000",
  "--idle-instance-timeout", "3600s",
  "--max-concurrent-requests", "1",
];

/**
 * The pause before each request of a test that needs REUSE_ONE_INSTANCE's
 * one instance (its counts, its replay store): long enough for the last
 * request's instance to be free again (wasmtime-wasi-http 48's handler
 * starts a new worker for a request that finds none free).
 */
export const ONE_INSTANCE_PAUSE_MS = 50;

/**
 * The corpus as this host must answer it: wasi:http 0.2 shows a component
 * no client address, so its context line's peer is `unknown` and the
 * upstream receives `X-Forwarded-For: unknown` where the corpus, written
 * for hosts that see the loopback peer, says 127.0.0.1. Every other byte
 * is the corpus's.
 */
export function withoutPeer(cases, peer = "127.0.0.1") {
  const adapt = (value) => {
    if (Array.isArray(value)) return value.map(adapt);
    if (value === null || typeof value !== "object") return value;
    const out = {};
    for (const [key, inner] of Object.entries(value)) {
      out[key] =
        key === "headers" && Array.isArray(inner)
          ? inner.map(([name, v]) => [name, name === "x-forwarded-for" && v === peer ? "unknown" : v])
          : adapt(inner);
    }
    return out;
  };
  return cases.map((c) => (c.prepare ? { ...c, prepare: () => adapt(c.prepare()) } : adapt(c)));
}

/**
 * `wasmtime serve` running `wasm` on 127.0.0.1 (an ephemeral port, read from
 * the address it prints), with `overrides` as [from, to] pairs (from an
 * origin or an audience, to an origin) and any further serve options.
 * Resolves to { port, proc }.
 */
export async function startWasiHttp(overrides, wasm = WASI_HTTP_FIXTURES.forwarding, extraArgs = [], timeoutMs = 60000) {
  for (const [path, how] of [[WASMTIME, "make wasmtime"], [wasm, "make fixture"]]) {
    if (!existsSync(path)) throw new Error(`${path} is missing: run '${how}'`);
  }
  const env = overrides.length > 0 ? ["-Scli", "--env", `GATEWAY_UPSTREAM_OVERRIDE=${overrides.map(([from, to]) => `${from}=${to}`).join(",")}`] : [];
  const proc = startProcess(WASMTIME, ["serve", "--addr", "127.0.0.1:0", ...env, ...extraArgs, wasm]);
  return serving(proc, "wasmtime serve", timeoutMs);
}

/**
 * Envoy as deploy/wasi-http/front.mjs renders it, on an ephemeral loopback
 * port in front of `wasmtime serve` on 127.0.0.1:`backendPort`, with any
 * of the renderer's options. Resolves to { port, proc }.
 */
export async function startEnvoyFront(backendPort, options = {}) {
  if (!existsSync(ENVOY)) throw new Error(`${ENVOY} is missing: run 'make envoy'`);
  const dir = mkdtempSync(join(tmpdir(), "gateway-wasi-http-front-"));
  return startEnvoy(dir, "envoy (front end)", async (attempt) => {
    const port = await freePort();
    const yaml = join(dir, `front-${attempt}.yaml`);
    writeFileSync(yaml, renderEnvoyFront({ listen: `127.0.0.1:${port}`, backend: `127.0.0.1:${backendPort}`, ...options }));
    return { yaml, port, args: ["--concurrency", "2"] };
  });
}

/**
 * `make deploy-wasi-http` as a user runs it (deploy/wasi-http/run.sh, its
 * defaults), with `component` instead of dist/gateway-wasi-http.wasm, on
 * an ephemeral loopback port, `overrides` as for startWasiHttp, and `env`
 * added (INSTANCES, say). Resolves to { port, proc }.
 */
export async function startDeploy(component, overrides = [], env = {}, timeoutMs = 60000) {
  for (const [path, how] of [[WASMTIME, "make wasmtime"], [component, "make fixture"]]) {
    if (!existsSync(path)) throw new Error(`${path} is missing: run '${how}'`);
  }
  const moves = overrides.map(([from, to]) => `${from}=${to}`).join(",");
  const proc = startProcess("bash", [join(ROOT, "deploy", "wasi-http", "run.sh")], {
    env: {
      ...process.env,
      LISTEN: "127.0.0.1:0",
      COMPONENT: component,
      WASMTIME_ARGS: moves ? `-Scli --env GATEWAY_UPSTREAM_OVERRIDE=${moves}` : "",
      ...env,
    },
  });
  return serving(proc, "deploy/wasi-http/run.sh", timeoutMs);
}

/**
 * `proc` (`what`) once `wasmtime serve` in it prints its address and
 * accepts connections there, within `timeoutMs`; stopped, with its output
 * in the error, if it does not. Resolves to { port, proc }.
 */
async function serving(proc, what, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const m = proc.output().match(/Serving HTTP on http:\/\/127\.0\.0\.1:(\d+)\//);
    if (m) {
      const port = Number(m[1]);
      await waitForPort(proc, port, what, Math.max(1, deadline - Date.now()));
      return { port, proc };
    }
    if (proc.exited()) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const output = proc.output();
  await proc.stop();
  throw new Error(`${what} printed no listening address within ${timeoutMs} ms:\n${output}`);
}
