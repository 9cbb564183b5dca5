// Test support: Envoy with the gateway filter (dist/gateway-envoy.wasm or the
// fixture's build) on an ephemeral loopback port, its bootstrap rendered by
// `envoy-filter` from the config. Bounded start, stop by stop(). Loopback only.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { ROOT, freePort, removingOnStop, startProcess, waitForPort } from "../workerd/harness.mjs";

export const ENVOY = join(ROOT, "target", "envoy-venv", "bin", "envoy");
export const ENVOY_FILTER_BIN = join(ROOT, "target", "release", "envoy-filter");
/** The filter the tests drive: built from testkit/fixture.toml by `make fixture`. */
export const FIXTURE_ENVOY_WASM = join(ROOT, "target", "fixture", "gateway-envoy.wasm");
export const FIXTURE_CONFIG = join(ROOT, "testkit", "fixture.toml");

/** Whether Envoy, the renderer and the fixture filter are all built. */
export function envoyFilterReady() {
  return [ENVOY, ENVOY_FILTER_BIN, FIXTURE_ENVOY_WASM].every((path) => existsSync(path));
}

/**
 * The native modules the tests drive (`make fixture`, build/envoy-native.sh),
 * by the fixture config each is built from: Envoy opens each by name
 * (`lib<name>.so`), so each has its own folder.
 */
export const FIXTURE_NATIVE = {
  forwarding: join(ROOT, "target", "fixture", "native", "forwarding", "libgateway_envoy.so"),
  policies: join(ROOT, "target", "fixture", "native", "policies", "libgateway_envoy.so"),
  jwks: join(ROOT, "target", "fixture", "native", "jwks", "libgateway_envoy.so"),
  oidc: join(ROOT, "target", "fixture", "native", "oidc", "libgateway_envoy.so"),
};

/** Whether Envoy, the renderer and the native fixture modules are all built. */
export function envoyNativeReady() {
  return [ENVOY, ENVOY_FILTER_BIN, ...Object.values(FIXTURE_NATIVE)].every((path) => existsSync(path));
}

/**
 * Envoy running the filter `wasm` for `config`, with `overrides` as
 * [from, to] origin pairs. Resolves to { port, proc }, and with `admin`
 * also `adminPort`, Envoy's admin interface (its stats).
 */
export async function startEnvoyFilter(overrides, { wasm = FIXTURE_ENVOY_WASM, config = FIXTURE_CONFIG, admin = false, flags = [] } = {}) {
  // The filter's key fetches log installs at info, refusals and failures at warn.
  // `flags`: more of envoy-filter's (the listener's TLS: --tls-cert, ...).
  return startRendered("envoy", wasm, ["--module", wasm, ...flags], { overrides, config, admin, log: "wasm:info" });
}

/**
 * Envoy running the native module `native` (a `lib<name>.so` from
 * build/envoy-native.sh) for `config`, in the gateway filter's place, with
 * `overrides` as [from, to] origin pairs; as startEnvoyFilter resolves.
 */
export async function startEnvoyNative(overrides, { native = FIXTURE_NATIVE.forwarding, config = FIXTURE_CONFIG, admin = false, flags = [] } = {}) {
  if (!/^lib.+\.so$/.test(basename(native))) throw new Error(`${native}: Envoy opens a module as lib<name>.so`);
  // Envoy opens the module from this folder, by the name the bootstrap gives.
  const env = { ...process.env, ENVOY_DYNAMIC_MODULES_SEARCH_PATH: dirname(native) };
  return startRendered("envoy (native module)", native, ["--native", native, ...flags], { overrides, config, admin, env, log: "dynamic_modules:info" });
}

/**
 * Envoy on the bootstrap `envoy-filter` renders with `flags` (the gateway
 * filter's: `module`, built by `make fixture`) for `config`; see startEnvoyFilter.
 */
async function startRendered(what, module, flags, { overrides, config, admin, env, log }) {
  for (const [path, how] of [[ENVOY, "make envoy"], [ENVOY_FILTER_BIN, "make host"], [module, "make fixture"]]) {
    if (!existsSync(path)) throw new Error(`${path} is missing: run '${how}'`);
  }
  const dir = mkdtempSync(join(tmpdir(), "gateway-envoy-"));
  return startEnvoy(dir, what, async (attempt) => {
    const port = await freePort();
    const adminPort = admin ? await freePort() : null;
    const yaml = join(dir, `envoy-${attempt}.yaml`);
    const render = spawnSync(
      ENVOY_FILTER_BIN,
      ["--config", config, ...flags, "--listen", `127.0.0.1:${port}`, "--out", yaml,
        ...(admin ? ["--admin", `127.0.0.1:${adminPort}`] : []),
        ...overrides.flatMap(([from, to]) => ["--upstream-override", `${from}=${to}`])],
      { encoding: "utf8", timeout: 30000 },
    );
    if (render.status !== 0) throw new Error(`envoy-filter failed:\n${render.stderr}`);
    return { yaml, port, adminPort, env, args: ["--concurrency", "1", "--component-log-level", log] };
  });
}

/**
 * Envoy on the bootstrap `attempt(n)` writes into `dir` (a fresh temporary
 * folder, removed when Envoy stops), tried up to three times, each on the
 * ports that attempt picked (another process may take a free port first).
 * `attempt` resolves to { yaml, port, adminPort?, args, env? } (`env`:
 * Envoy's environment, the test's without it); an error it
 * throws ends the tries. Resolves to { port, proc } (and `adminPort` when
 * one was asked for) once Envoy listens.
 */
export async function startEnvoy(dir, what, attempt) {
  let lastError;
  for (let n = 0; n < 3; n++) {
    let config;
    try {
      config = await attempt(n);
    } catch (e) {
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    const { yaml, port, adminPort = null, args, env } = config;
    const proc = startProcess(ENVOY, [
      "--config-path", yaml, "--disable-hot-restart", "--base-id-path", join(dir, "base-id"),
      "--use-dynamic-base-id", "--log-level", "warn", ...args,
    ], env ? { env } : {});
    // The folder holds this Envoy's bootstrap and base id: removed when it stops.
    const stop = removingOnStop(proc, dir);
    try {
      await waitForPort(proc, port, what);
      if (adminPort !== null) {
        await waitForPort(proc, adminPort, `${what} (admin)`);
        return { port, proc, adminPort };
      }
      return { port, proc };
    } catch (e) {
      lastError = e;
      await stop();
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError;
}
