// What the Prometheus test and the dashboard's screenshot share: an
// upstream, the demo's kinds of request against
// testkit/fixture-policies.toml, and Prometheus itself on loopback with a
// generated config, the alerting rules loaded and a temporary storage
// folder, stopped (and the folder removed) by stop().
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, freePort, mintToken, startProcess, waitForPort } from "../../deploy/workerd/harness.mjs";

/** Debian's Prometheus (the package `make test` installs). */
export const PROMETHEUS = process.env.PROMETHEUS ?? "/usr/bin/prometheus";

/** An upstream that answers 200 to anything. */
export async function startUpstream() {
  const server = createServer((req, res) => (req.resume(), req.on("end", () => res.end("{}"))));
  server.keepAliveTimeout = 1000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { origin: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => (server.closeAllConnections?.(), server.close(() => r()))) };
}

/**
 * The demo's kinds of request against testkit/fixture-policies.toml (two
 * issuers, rules, three routes), each with the outcome it must have and
 * how many times it is sent.
 */
export function demoRequests() {
  const policy = JSON.parse(readFileSync(join(ROOT, "target", "fixture", "fixture-policies.json"), "utf8"));
  const now = Math.floor(Date.now() / 1000);
  const token = (issuer, claims) =>
    mintToken(Buffer.from(issuer.keys[0].secret_hex, "hex"), { iss: issuer.iss, sub: "alice", aud: "orders", exp: now + 3600, ...claims }, { alg: "HS256", typ: "JWT", kid: issuer.keys[0].kid });
  const [shop, partner] = policy.issuers;
  const alice = token(shop, {});
  const head = (line, fields = []) => `${line} HTTP/1.1\r\nHost: gw.test\r\n${fields.map((f) => `${f}\r\n`).join("")}Connection: close\r\n\r\n`;
  const bearer = (t) => `Authorization: Bearer ${t}`;
  return [
    ["forwarded", 3, head("GET /orders/7?page=2", [bearer(alice)])],
    ["forwarded", 2, head("GET /orders/7", [bearer(token(partner, {}))])],
    ["forwarded", 1, head("GET /invoices/1", [bearer(token(shop, { aud: "billing", sub: "bob" }))])],
    ["public", 2, head("GET /healthz")],
    ["missing_authorization", 2, head("GET /orders/7")],
    ["expired", 1, head("GET /orders/7", [bearer(token(shop, { exp: now - 3600 }))])],
    ["bad_signature", 1, head("GET /orders/7", [bearer(`${alice.slice(0, -5)}AAAAA`)])],
    ["no_route", 1, head("GET /orders/7", [bearer(token(shop, { aud: "payroll" }))])],
    ["unsupported_scheme", 1, head("GET /orders/7", ["Authorization: Basic YWxpY2U6c2VjcmV0"])],
    ["path_above_root", 1, head("GET /%2e%2e/admin", [bearer(alice)])],
    ["insufficient_scope", 2, head("DELETE /orders/7", [bearer(alice)])],
    ["missing_role", 1, head("GET /admin/users", [bearer(alice)])],
    ["denied", 1, head("GET /v1/anything", [bearer(alice)])],
  ];
}

/** Prometheus on loopback scraping `jobs` ({ name: { targets, path } }) every second. */
export async function startPrometheus(jobs) {
  const dir = mkdtempSync(join(tmpdir(), "gateway-prometheus-"));
  const scrapes = Object.entries(jobs).map(([name, { targets, path }]) =>
    `  - job_name: ${name}\n    metrics_path: ${path}\n    static_configs:\n      - targets: [${targets.map((t) => `"${t}"`).join(", ")}]\n`);
  const rules = `rule_files:\n  - "${join(ROOT, "deploy", "prometheus", "alerts.yml")}"\n`;
  writeFileSync(join(dir, "prometheus.yml"), `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n${rules}scrape_configs:\n${scrapes.join("")}`);
  const port = await freePort();
  const proc = startProcess(PROMETHEUS, [
    `--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`,
    `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn",
  ]);
  await waitForPort(proc, port, "prometheus", 30000);
  return {
    port,
    proc,
    /** The instant vector of `expr` now: [{ metric, value }]. */
    async query(expr) {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(expr)}`, { signal: AbortSignal.timeout(10000) });
      const body = await res.json();
      if (body.status !== "success") throw new Error(`${expr}: ${body.error}`);
      return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    /** The alerting rules Prometheus loaded, with their health. */
    async rules() {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/rules`, { signal: AbortSignal.timeout(10000) });
      return (await res.json()).data.groups.flatMap((g) => g.rules);
    },
    async names() {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/label/__name__/values`, { signal: AbortSignal.timeout(10000) });
      return (await res.json()).data;
    },
    async stop() {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

