// The Grafana dashboard's PromQL (deploy/grafana/gateway.json), for the
// test that checks each expression against a real scrape.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../../deploy/workerd/harness.mjs";

export const DASHBOARD = join(ROOT, "deploy", "grafana", "gateway.json");

/** Every `expr` of every panel's targets. */
export function dashboardExpressions(path = DASHBOARD) {
  const dashboard = JSON.parse(readFileSync(path, "utf8"));
  return dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr));
}

/** The metric names an expression reads: every name the gateway's hosts could export (`gateway_`). */
export function metricNames(expr) {
  return [...new Set(expr.match(/\bgateway_[a-z0-9_]+\b/g) ?? [])];
}
