// Reads the Prometheus text exposition format (and OpenMetrics, its
// successor, which host-sim serves): the samples, each { name, labels,
// value }. Comments, `# EOF` and timestamps are skipped. Enough for the
// tests to compare what a host exports; the Prometheus test
// (prometheus.test.mjs) has Prometheus itself read the same scrapes.

/** A label value with its escapes (`\\`, `\"`, `\n`) read. */
const unescape = (value) => value.replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));

/** The samples of exposition `text`. A line that is not a sample is an error naming it. */
export function parseExposition(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \S+)?$/.exec(line);
    if (m === null) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const labels = {};
    for (const [, name, value] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g)) {
      labels[name] = unescape(value);
    }
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}
