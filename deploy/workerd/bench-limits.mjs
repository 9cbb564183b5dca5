// What counting a request in a Durable Object costs under workerd: the same
// Worker and module, the same public route to the same upstream, a path
// whose rule has no limit (`/open`) beside one whose rule counts every
// request in one bucket (`/healthz`, per address: every request here comes
// from 127.0.0.1, so one object, the hot-key case). The module is built
// from testkit/fixture-limits.toml with that limit raised to a million
// requests (and a burst of a million) per `--per-secs`, so that nothing is
// refused: per 86400 s (the default) every request moves the TAT 86 ms on
// and the object writes it; per 1 s the TAT stays within 10 s of now and
// is never written. Reports workerd's CPU time per request (from /proc) and
// the latency of one request at a time, rounds alternating between paths.
//
//   node deploy/workerd/bench-limits.mjs [--requests 4000] [--rounds 5] [--storage memory|disk] [--per-secs 86400] [--keep]
//
// `--keep` leaves the module built at /tmp/gateway-bench-limits-<per-secs>.wasm;
// `--wasm PATH` runs such a module instead of building one.
//
// Loopback only; workerd and the upstream stop when it ends. Linux (/proc).
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ROOT, startWorkerd } from "./harness.mjs";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "4000" },
    rounds: { type: "string", default: "5" },
    storage: { type: "string", default: "memory" },
    "per-secs": { type: "string", default: "86400" },
    wasm: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);

/** The fixture with per-address raised to a million (the config's most) per `--per-secs`. */
function buildModule(dir) {
  const fixture = readFileSync(join(ROOT, "testkit", "fixture-limits.toml"), "utf8");
  const raised = fixture.replace(/name = "per-address"\nrequests = 4\nper_secs = 3600/, `name = "per-address"\nrequests = 1000000\nper_secs = ${Number(values["per-secs"])}\nburst = 1000000`);
  if (raised === fixture) throw new Error("testkit/fixture-limits.toml: the per-address limit is not where this bench expects it");
  writeFileSync(join(dir, "bench.toml"), raised);
  const wasm = join(dir, "gateway-bench.wasm");
  const built = spawnSync("bash", ["build/worker.sh"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, GATEWAY_CONFIG: join(dir, "bench.toml"), WASM_OUT: wasm } });
  if (built.status !== 0) throw new Error("build/worker.sh failed");
  return wasm;
}

/** A 200 upstream in a process of its own; resolves to { url, stop }. */
function startUpstream() {
  const code = 'require("http").createServer((q, s) => { q.resume(); q.on("end", () => s.end("ok")); }).listen(0, "127.0.0.1", function () { console.log(this.address().port); });';
  const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve) => child.stdout.once("data", (d) => resolve({ url: `http://127.0.0.1:${String(d).trim()}`, stop: () => child.kill() })));
}

/** workerd's user and system CPU time so far, in microseconds. */
function cpuUs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100; // utime, stime in 1/100 s
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
function get(port, path) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`${path}: ${res.statusCode}`))));
    });
    req.setTimeout(10000, () => req.destroy(new Error(`${path}: no answer in 10 s`)));
    req.on("error", reject);
  });
}

/** CPU µs per request with 8 in flight, and the median µs of one request at a time. */
async function round(port, pid, path) {
  const before = cpuUs(pid);
  let sent = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (sent < REQUESTS) {
      sent++;
      await get(port, path);
    }
  }));
  const cpu = (cpuUs(pid) - before) / REQUESTS;
  const times = [];
  for (let i = 0; i < 400; i++) {
    const t = process.hrtime.bigint();
    await get(port, path);
    times.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  times.sort((a, b) => a - b);
  return { cpu, latency: times[times.length >> 1] };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const dir = mkdtempSync(join(tmpdir(), "gateway-bench-limits-"));
const upstream = await startUpstream();
let workerd;
try {
  const wasm = values.wasm ?? buildModule(dir);
  if (values.keep && !values.wasm) copyFileSync(wasm, `/tmp/gateway-bench-limits-${values["per-secs"]}.wasm`);
  workerd = await startWorkerd(`users=${upstream.url}`, wasm, values.storage === "disk" ? { limits: "disk" } : {});
  const pid = workerd.proc.child.pid;
  for (const path of ["/open", "/healthz"]) await round(workerd.port, pid, path); // warm-up
  const results = { "/open": [], "/healthz": [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const path of ["/open", "/healthz"]) results[path].push(await round(workerd.port, pid, path));
  }
  console.log(`workerd, ${values.storage} storage, per-address 1000000 per ${values["per-secs"]} s, ${ROUNDS} rounds of ${REQUESTS} requests (8 in flight) and 400 one at a time, medians:`);
  for (const [path, what] of [["/open", "no limit"], ["/healthz", "one bucket"]]) {
    const cpu = median(results[path].map((x) => x.cpu));
    const latency = median(results[path].map((x) => x.latency));
    console.log(`  ${path.padEnd(9)} ${what.padEnd(11)} workerd CPU ${cpu.toFixed(1)} us/request, latency ${latency.toFixed(0)} us`);
  }
} finally {
  await workerd?.proc.stop();
  upstream.stop();
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });
}
