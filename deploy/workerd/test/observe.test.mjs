// observe.mjs without workerd: the outcome table against the contract's,
// the DECISION_LOG setting, and what a decision's line and data point hold.
// (testkit/conformance/observe.test.mjs checks both under workerd.)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ROOT } from "../harness.mjs";
import { MODULE_FAILED } from "../gateway.mjs";
import { OUTCOMES, Observer, labelNames, logRate, redactedTarget, traceId } from "../observe.mjs";

test("the outcome table is the contract's", () => {
  const golden = JSON.parse(readFileSync(join(ROOT, "contract", "golden", "outcomes.json"), "utf8"));
  assert.deepEqual(OUTCOMES, golden);
  assert.equal(OUTCOMES[MODULE_FAILED], "module_failed");
});

test("DECISION_LOG is off, on or a share, and anything else is refused by name", () => {
  assert.deepEqual([undefined, "", "off", "on", "0.25", "1", "0", ".5"].map(logRate), [0, 0, 0, 1, 0.25, 1, 0, 0.5]);
  for (const bad of ["yes", "2", "-0.1", "0.5x", "NaN"]) assert.throws(() => logRate(bad), /DECISION_LOG: expected off, on or a share between 0 and 1, got/);
});

test("nothing of a query but its size, and no invalid trace id, is in the line", () => {
  const token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln";
  const cases = [[`access_token=${token}`, 1], [token, 1], [`${token}=1`, 1], [`a=1&${token}`, 2], [`a=1&&${token}&b=`, 3], [`${token}?x=${token}`, 1], ["", 0]];
  for (const [query, parameters] of cases) assert.equal(redactedTarget(`/a?${query}`), `/a?<${parameters}>`, query);
  assert.equal(redactedTarget("/plain"), "/plain");
  const id = "4bf92f3577b34da6a3ce929d0e0e4736";
  assert.equal(traceId(`00-${id}-00f067aa0ba902b7-01`), id);
  for (const bad of [null, `00-${"0".repeat(32)}-00f067aa0ba902b7-01`, `ff-${id}-00f067aa0ba902b7-01`, `00-${id.toUpperCase()}-00f067aa0ba902b7-01`, `00-${id}-00f067aa0ba902b7-01-x`]) {
    assert.equal(traceId(bad), null, String(bad));
  }
});

test("a decision's line and data point name its labels by the module's tables", () => {
  const names = labelNames([["billing", "http://b"], ["orders", "http://o"]], "rule healthz\nrule rules[1]\nissuer https://issuer.test\nissuer -");
  assert.deepEqual(names, { rules: ["healthz", "rules[1]"], routes: ["billing", "orders"], issuers: ["https://issuer.test", "-"] });
  assert.deepEqual(labelNames([], "").issuers, ["0"]);
  assert.deepEqual(labelNames([], "", "https://issuer.test").issuers, ["https://issuer.test"]);
  assert.deepEqual(labelNames([], "issuer https://a.test", "https://issuer.test").issuers, ["https://a.test"], "a label table names its own");
  const lines = [];
  const points = [];
  const observer = new Observer(names, { rate: 0.5, dataset: { writeDataPoint: (p) => points.push(p) }, log: (l) => lines.push(l), random: () => 0.7 });
  const request = new Request("http://gw.test/orders/7?access_token=secret", { headers: { traceparent: `00-${"a".repeat(32)}-${"b".repeat(16)}-01` } });
  const labels = { outcome: 49, rule: 1, route: 1, issuer: 0, cache: "miss" };
  const record = observer.record(request, { labels, reason: "token expired", status: 401 });
  assert.deepEqual(
    [record.outcome, record.rule, record.route, record.issuer, record.target, record.trace_id],
    ["expired", "rules[1]", "orders", "https://issuer.test", "/orders/7?<1>", "a".repeat(32)],
  );
  observer.write(record);
  assert.equal(lines.length, 0, "not in the sampled share");
  assert.deepEqual(points[0].blobs.slice(0, 4), ["expired", "rules[1]", "orders", "https://issuer.test"]);
  observer.random = () => 0.2;
  observer.write(record);
  assert.deepEqual(JSON.parse(lines[0]), record);
  assert.ok(!lines[0].includes("secret"));
});
