// Test support: Envoy with the gateway filter (dist/gateway-envoy.wasm or the
// fixture's build) on an ephemeral loopback port, its bootstrap rendered by
// `envoy-filter` from the config. Bounded start, stop by stop(). Loopback only.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
 * Envoy running the filter `wasm` for `config`, with `overrides` as
 * [from, to] origin pairs. Resolves to { port, proc }, and with `admin`
 * also `adminPort`, Envoy's admin interface (its stats).
 */
export async function startEnvoyFilter(overrides, { wasm = FIXTURE_ENVOY_WASM, config = FIXTURE_CONFIG, admin = false } = {}) {
  for (const [path, how] of [[ENVOY, "make envoy"], [ENVOY_FILTER_BIN, "make host"], [wasm, "make fixture"]]) {
    if (!existsSync(path)) throw new Error(`${path} is missing: run '${how}'`);
  }
  const dir = mkdtempSync(join(tmpdir(), "gateway-envoy-"));
  return startEnvoy(dir, "envoy", async (attempt) => {
    const port = await freePort();
    const adminPort = admin ? await freePort() : null;
    const yaml = join(dir, `envoy-${attempt}.yaml`);
    const render = spawnSync(
      ENVOY_FILTER_BIN,
      ["--config", config, "--module", wasm, "--listen", `127.0.0.1:${port}`, "--out", yaml,
        ...(admin ? ["--admin", `127.0.0.1:${adminPort}`] : []),
        ...overrides.flatMap(([from, to]) => ["--upstream-override", `${from}=${to}`])],
      { encoding: "utf8", timeout: 30000 },
    );
    if (render.status !== 0) throw new Error(`envoy-filter failed:\n${render.stderr}`);
    // The filter's key fetches log installs at info, refusals and failures at warn.
    return { yaml, port, adminPort, args: ["--concurrency", "1", "--component-log-level", "wasm:info"] };
  });
}

/**
 * Envoy on the bootstrap `attempt(n)` writes into `dir` (a fresh temporary
 * folder, removed when Envoy stops), tried up to three times, each on the
 * ports that attempt picked (another process may take a free port first).
 * `attempt` resolves to { yaml, port, adminPort?, args }; an error it
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
    const { yaml, port, adminPort = null, args } = config;
    const proc = startProcess(ENVOY, [
      "--config-path", yaml, "--disable-hot-restart", "--base-id-path", join(dir, "base-id"),
      "--use-dynamic-base-id", "--log-level", "warn", ...args,
    ]);
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
