// The picture of "Watching the gateway" (README.md): host-sim serve and
// Envoy with the gateway filter under a minute of the demo's kinds of
// request, scraped by a real Prometheus, whose own graph page is shot in
// headless Chromium (Debian's chromium, driven by playwright-core).
// scripts/screenshot.sh installs both and runs this.
//
//   node testkit/metrics/screenshot.mjs OUT.png [SECONDS]
import { createRequire } from "node:module";
import { join } from "node:path";
import { ROOT, freePort, rawRequest, startHostSim } from "../../deploy/workerd/harness.mjs";
import { startEnvoyFilter } from "../../deploy/envoy/harness.mjs";
import { demoRequests, startPrometheus, startUpstream } from "./stack.mjs";

const [out, seconds = "75"] = process.argv.slice(2);
if (!out) throw new Error("usage: node testkit/metrics/screenshot.mjs OUT.png [SECONDS]");
const require = createRequire(join(ROOT, "target", "tools", "screenshot", "node_modules", "x.js"));
const { chromium } = require("playwright-core");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const upstream = await startUpstream();
// The site route's upstream is down: its requests show as upstream failures.
const routes = [["http://127.0.0.1:9201", upstream.origin], ["http://127.0.0.1:9202", `http://127.0.0.1:${await freePort()}`]];
const wasm = join(ROOT, "target", "fixture", "gateway-policies.wasm");
const hostSim = await startHostSim([...routes.flatMap(([f, t]) => ["--upstream-override", `${f}=${t}`]), "--metrics", "127.0.0.1:0"], 60000, wasm);
const metricsPort = /metrics listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(hostSim.proc.output())[1];
const envoy = await startEnvoyFilter(routes, {
  wasm: join(ROOT, "target", "fixture", "gateway-policies-envoy.wasm"),
  config: join(ROOT, "testkit", "fixture-policies.toml"),
  admin: true,
});
const prometheus = await startPrometheus({
  "host-sim": { targets: [`127.0.0.1:${metricsPort}`], path: "/metrics" },
  envoy: { targets: [`127.0.0.1:${envoy.adminPort}`], path: "/stats/prometheus" },
});
try {
  // Traffic that changes over the run: mostly forwards, then a burst of
  // expired tokens and of one rule's denials in the middle third.
  const requests = demoRequests();
  const weighted = (phase) => requests.flatMap(([outcome, times, head]) => {
    const burst = phase === 1 && ["expired", "insufficient_scope"].includes(outcome) ? 6 : 1;
    return Array(times * burst * (outcome === "forwarded" ? 4 : 1)).fill(head);
  });
  const end = Date.now() + Number(seconds) * 1000;
  while (Date.now() < end) {
    const phase = Math.floor((3 * (Number(seconds) * 1000 - (end - Date.now()))) / (Number(seconds) * 1000));
    const heads = weighted(phase);
    const head = heads[Math.floor(Math.random() * heads.length)];
    await Promise.all([rawRequest(hostSim.port, head), rawRequest(envoy.port, head)]);
    await sleep(20);
  }
  await sleep(2500);
  const graphs = [
    ["sum by (outcome) (rate(gateway_decisions_total[15s]))", 1],
    ['sum by (rule, route) (rate(gateway_decisions_total{outcome!~"forwarded|public|preflight"}[15s]))', 0],
    ["histogram_quantile(0.99, sum by (le) (rate(gateway_request_duration_seconds_bucket[15s])))", 0],
  ];
  const query = graphs
    .map(([expr, stacked], i) => `g${i}.expr=${encodeURIComponent(expr)}&g${i}.tab=0&g${i}.stacked=${stacked}&g${i}.range_input=${Math.ceil(Number(seconds) / 60) + 1}m`)
    .join("&");
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1900 } });
    await page.goto(`http://127.0.0.1:${prometheus.port}/graph?${query}`, { waitUntil: "networkidle" });
    await sleep(2000);
    await page.screenshot({ path: out, fullPage: true });
  } finally {
    await browser.close();
  }
  console.log(`written ${out}`);
} finally {
  await prometheus.stop();
  await envoy.proc.stop();
  await hostSim.proc.stop();
  await upstream.close();
}
