// The gateway on V8 (Node.js): the same module through Node's WebAssembly,
// and the same validation written in plain JavaScript with node:crypto, on
// the same request corpus (written by `bench-tool corpus`).
//
//   node benches/node/bench.mjs CORPUS.json MODULE.wasm OUT.json
//
// Prints a line per row and writes OUT.json: mean ns per call for every row
// (median of several timed batches) and per-call latency percentiles.
// `benches/run.sh` runs it and puts the figures in docs/PERFORMANCE.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { createHmac, timingSafeEqual } from 'node:crypto';

const [corpusPath, modulePath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error('usage: node bench.mjs CORPUS.json MODULE.wasm OUT.json');
  process.exit(2);
}
const corpus = JSON.parse(readFileSync(corpusPath, 'utf8'));
const bytes = readFileSync(modulePath);
const NOW = corpus.now;
const encoder = new TextEncoder();
// The request mix (testkit::mix::Mix, as every per-request row uses it)
// and one request of each kind.
const mix = corpus.mix.map((c) => ({ ...c, bytes: encoder.encode(c.head) }));
const cases = corpus.cases.map((c) => ({ ...c, bytes: encoder.encode(c.head) }));

// ---- timing helpers ---------------------------------------------------------

const hr = () => process.hrtime.bigint();

// Mean ns per call: BATCHES timed batches of about `ms` each, median batch.
function timeIt(name, fn, { ms = 300, batches = 5 } = {}) {
  let n = 1;
  for (;;) {
    const t0 = hr();
    for (let i = 0; i < n; i++) fn(i);
    const dt = Number(hr() - t0);
    if (dt > 20e6) {
      n = Math.max(1, Math.round((n * ms * 1e6) / dt));
      break;
    }
    n *= 2;
  }
  const means = [];
  for (let b = 0; b < batches; b++) {
    const t0 = hr();
    for (let i = 0; i < n; i++) fn(i);
    means.push(Number(hr() - t0) / n);
  }
  means.sort((a, b) => a - b);
  const ns = means[Math.floor(means.length / 2)];
  console.log(`  ${name.padEnd(44)} ${fmt(ns)}`);
  return ns;
}

async function timeAsync(name, fn, iterations) {
  const samples = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = hr();
    await fn();
    samples.push(Number(hr() - t0));
  }
  samples.sort((a, b) => a - b);
  const ns = samples[Math.floor(samples.length / 2)];
  console.log(`  ${name.padEnd(44)} ${fmt(ns)} (median of ${iterations})`);
  return ns;
}

function fmt(ns) {
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(2)} µs`;
  return `${ns.toFixed(0)} ns`;
}

// Per-call latency, each call timed on its own (hrtime costs are included).
function latency(group, name, fn, calls) {
  for (let i = 0; i < calls / 4; i++) fn(i);
  const samples = new Float64Array(calls);
  for (let i = 0; i < calls; i++) {
    const t0 = hr();
    fn(i);
    samples[i] = Number(hr() - t0);
  }
  samples.sort();
  const q = (p) => Math.round(samples[Math.min(calls - 1, Math.floor((p / 100) * calls))]);
  let sum = 0;
  for (const s of samples) sum += s;
  return {
    group,
    name,
    count: calls,
    mean_ns: sum / calls,
    p50_ns: q(50),
    p90_ns: q(90),
    p95_ns: q(95),
    p99_ns: q(99),
    p999_ns: q(99.9),
    max_ns: Math.round(samples[calls - 1]),
    note: '',
  };
}

// ---- the module through WebAssembly ----------------------------------------

function wrap(instance) {
  const e = instance.exports;
  // The version the contract crate speaks (`bench-tool corpus` writes it).
  if (e.abi_version() !== corpus.abi_version) {
    throw new Error(`the module's abi_version is ${e.abi_version()}; the benches speak ${corpus.abi_version}`);
  }
  const input = new Uint8Array(e.memory.buffer, e.input_ptr(), e.input_capacity());
  // The context line a host writes before the head (worker/ABI.md).
  const context = new TextEncoder().encode('http 127.0.0.1\n');
  input.set(context);
  return (head) => {
    input.set(head, context.length);
    return e.handle(context.length + head.length, NOW);
  };
}

// ---- the same validation in plain JavaScript -------------------------------

const secret = Buffer.from(corpus.secret_hex, 'hex');
const routes = new Map(corpus.routes.map((r) => [r.aud, r.upstream]));
const B64URL = /^[A-Za-z0-9_-]+$/;
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const REALM = corpus.realm;

function reject(status, code, reason) {
  const www = `Bearer realm="${REALM}"` + (code ? `, error="${code}", error_description="${reason}"` : '');
  const body = JSON.stringify(code ? { error: code, error_description: reason } : { error_description: reason });
  return { status, output: `${code}\n${reason}\n${www}\n${body}` };
}
const badToken = (reason) => reject(401, 'invalid_token', reason);

function decodePart(part) {
  const buf = Buffer.from(part, 'base64url');
  // Canonical only: re-encoding must give the same text.
  if (buf.toString('base64url') !== part) return null;
  return buf;
}

function authorizeJs(headText, now) {
  const end = headText.indexOf('\r\n\r\n');
  if (end < 0) return reject(400, 'invalid_request', 'incomplete request head');
  const lines = headText.slice(0, end).split('\r\n');
  if (!/^[A-Z]+ \S+ HTTP\/1\.[01]$/.test(lines[0])) return reject(400, 'invalid_request', 'malformed request');
  let auth = null;
  for (let i = 1; i < lines.length; i++) {
    const colon = lines[i].indexOf(':');
    if (colon <= 0) return reject(400, 'invalid_request', 'malformed request');
    if (lines[i].slice(0, colon).toLowerCase() === 'authorization') {
      if (auth !== null) return reject(400, 'invalid_request', 'more than one authorization header');
      auth = lines[i].slice(colon + 1).trim();
    }
  }
  if (auth === null) return reject(401, '', 'bearer token required');
  const space = auth.indexOf(' ');
  if (space < 0 || auth.slice(0, space).toLowerCase() !== 'bearer') return reject(401, '', 'bearer token required');
  const token = auth.slice(space + 1).trimStart();
  if (token.length > 256) return badToken('token longer than 256 bytes');
  if (!B64TOKEN.test(token)) return reject(400, 'invalid_request', 'malformed authorization header');
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[0] || !parts[1]) return badToken('malformed token');
  if (!parts[2]) return badToken('missing signature');
  if (!B64URL.test(parts[0]) || !B64URL.test(parts[1]) || !B64URL.test(parts[2])) return badToken('bad encoding');
  const headerBytes = decodePart(parts[0]);
  if (!headerBytes) return badToken('bad encoding');
  let header;
  try {
    header = JSON.parse(headerBytes.toString('utf8'));
  } catch {
    return badToken('malformed header');
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) return badToken('malformed header');
  if (header.alg !== 'HS256') return badToken('unsupported algorithm');
  if (header.typ !== undefined) {
    const typ = String(header.typ).toLowerCase();
    if (typ !== 'jwt' && typ !== 'at+jwt') return badToken('unsupported token type');
  }
  if ('crit' in header) return badToken('critical header present');
  if (header.kid !== undefined && header.kid !== corpus.kid) return badToken('unknown key');
  if (parts[2].length !== 43) return badToken('bad signature');
  const tag = decodePart(parts[2]);
  if (!tag) return badToken('bad encoding');
  const expected = createHmac('sha256', secret).update(`${parts[0]}.${parts[1]}`).digest();
  if (!timingSafeEqual(expected, tag)) return badToken('bad signature');
  const payloadBytes = decodePart(parts[1]);
  if (!payloadBytes) return badToken('bad encoding');
  let claims;
  try {
    claims = JSON.parse(payloadBytes.toString('utf8'));
  } catch {
    return badToken('malformed claims');
  }
  if (claims === null || typeof claims !== 'object') return badToken('malformed claims');
  if (!Number.isSafeInteger(claims.exp) || claims.exp < 0) return badToken('expiry missing');
  if (claims.exp + corpus.leeway < now) return badToken('token expired');
  if (claims.nbf !== undefined && claims.nbf > now + corpus.leeway) return badToken('token not yet valid');
  if (corpus.issuer !== null && claims.iss !== corpus.issuer) return badToken('wrong issuer');
  const sub = claims.sub;
  if (sub !== undefined && (typeof sub !== 'string' || !/^[\x20-\x7e]*$/.test(sub))) {
    return badToken('subject not header safe');
  }
  const auds = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
  if (auds.length === 0) return badToken('audience missing');
  for (const aud of auds) {
    const upstream = routes.get(aud);
    if (upstream !== undefined) return { status: 200, output: `${upstream}\n${sub ?? ''}` };
  }
  return badToken('no route for audience');
}

// ---- run ---------------------------------------------------------------------

const out = { node: process.version, v8: process.versions.v8, rows: {}, series: [] };
const rows = out.rows;

console.log(`node ${process.version} (V8 ${process.versions.v8})`);
console.log('cold:');
rows.compile = await timeAsync('WebAssembly.compile', () => WebAssembly.compile(bytes), 200);
const module = await WebAssembly.compile(bytes);
rows.instantiate = await timeAsync('WebAssembly.instantiate(module)', () => WebAssembly.instantiate(module), 200);
rows.compile_instantiate_first_request = await timeAsync(
  'compile + instantiate + first request',
  async () => {
    const instance = await WebAssembly.instantiate(await WebAssembly.compile(bytes));
    wrap(instance)(cases[0].bytes);
  },
  200,
);

// Both implementations must agree with the corpus before anything is timed.
const call = wrap(await WebAssembly.instantiate(module));
for (const c of [...cases, ...mix]) {
  const wasmStatus = call(c.bytes);
  const js = authorizeJs(c.head, NOW);
  if (wasmStatus !== c.status || js.status !== c.status) {
    throw new Error(`${c.name}: expected ${c.status}, wasm ${wasmStatus}, js ${js.status} ${js.output}`);
  }
}

console.log(`per request (the mix of ${mix.length}):`);
const n = mix.length;
rows.wasm_reuse_mix = timeIt('wasm, one reused instance', (i) => call(mix[i % n].bytes));
rows.wasm_fresh_mix = timeIt('wasm, new instance per request', (i) => {
  wrap(new WebAssembly.Instance(module))(mix[i % n].bytes);
});
rows.js_mix = timeIt('plain JavaScript + node:crypto', (i) => authorizeJs(mix[i % n].head, NOW));
console.log('per request, each kind:');
for (const c of cases) {
  rows[`wasm_reuse_${c.name}`] = timeIt(`wasm reuse: ${c.name}`, () => call(c.bytes));
  rows[`js_${c.name}`] = timeIt(`JavaScript: ${c.name}`, () => authorizeJs(c.head, NOW));
}
const valid = cases.find((c) => c.name === 'valid').token;
const signingInput = valid.slice(0, valid.lastIndexOf('.'));
rows.js_hmac_only = timeIt('node:crypto HMAC-SHA256 of the same bytes', () =>
  createHmac('sha256', secret).update(signingInput).digest(),
);

console.log('per-call latency (percentiles)');
out.series.push(latency('per_request', 'node: wasm reuse', (i) => call(mix[i % n].bytes), 200000));
out.series.push(latency('per_request', 'node: plain JavaScript', (i) => authorizeJs(mix[i % n].head, NOW), 200000));

writeFileSync(outPath, JSON.stringify(out, null, 2));
console.log(`wrote ${outPath}`);
