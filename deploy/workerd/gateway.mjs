// The host side of the gateway for JavaScript runtimes (workerd, Cloudflare
// Workers, Node.js): it drives dist/gateway.wasm as worker/ABI.md describes
// and turns the module's decision into a Response. Every decision (token,
// claims, route, status, error body) is the module's; this file only moves
// bytes in and out and does the network I/O the module cannot do.
//
// It uses web-standard APIs only (Request, Response, Headers, fetch,
// WebAssembly), so the same code runs in workerd and, for its unit tests, in
// Node.js. A module that fetches keys at run time gets them through keys.mjs.
import { contextLine } from "./context.mjs";
import { KeyFetcher, readKeySources } from "./keys.mjs";
import { LimitsNotBound, UnknownLimit, bindingCounter, countBuckets, readLimits } from "./limits.mjs";

export { contextLine };

/** The contract version this host understands (worker/ABI.md). */
export const ABI_VERSION = 6;

const JSON_TYPE = "application/json";
/**
 * The outcome id of the module's own failure (`module_failed` in
 * contract/src/outcome.rs, whose order contract/golden/outcomes.json keeps;
 * test/shim.test.mjs holds this to it).
 */
export const MODULE_FAILED = 71;
/** The outcome id of a request its rate limits could not be counted for (`limit_store_unavailable`). */
export const LIMIT_STORE_UNAVAILABLE = 80;
/** The outcome ids of a forward: a verified token, a public rule. */
const FORWARDED = 0;
const PUBLIC = 1;
/** The labels of the host's own 500. */
const FAILED_LABELS = { outcome: MODULE_FAILED, rule: null, route: null, issuer: null, cache: "none" };
/** The host's 502 answers, told apart from an upstream's own 502. */
const UPSTREAM_FAILED = new WeakSet();
/** The counter of a host with no counting bound: it refuses every bucket. */
const NOT_BOUND = bindingCounter({});
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A JSON answer the host itself makes (the module is not involved). */
function hostError(status, description) {
  return new Response(JSON.stringify({ error_description: description }), {
    status,
    headers: { "content-type": JSON_TYPE },
  });
}

/** The scheme and authority of an absolute http(s) URL, or null. */
export function originOf(url) {
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:" ? `${u.protocol}//${u.host}` : null;
  } catch {
    return null;
  }
}

/**
 * Parses an upstream override: "FROM=TO[,FROM=TO...]", FROM an audience of
 * the module's route table or an origin the module names, TO an origin. The
 * module still decides where a request goes and with which path; an override
 * only moves an origin (tests run their upstreams on ephemeral loopback
 * ports). `routes` is the module's table ([audience, upstream] pairs).
 * Returns a Map from origin to origin, empty for null or "".
 */
export function parseUpstreamOverride(text, routes = []) {
  const map = new Map();
  if (text == null || text === "") return map;
  for (const pair of String(text).split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0 || at === pair.length - 1) {
      throw new Error(`upstream override: expected FROM=TO, got ${JSON.stringify(pair)}`);
    }
    const key = pair.slice(0, at).trim();
    const to = pair.slice(at + 1).trim().replace(/\/+$/, "");
    if (originOf(to) !== to) throw new Error(`upstream override: ${JSON.stringify(to)} is not an origin`);
    const route = routes.find(([aud]) => aud === key);
    const from = route ? originOf(route[1]) : originOf(key);
    if (from === null) throw new Error(`upstream override: ${JSON.stringify(key)} is neither a routed audience nor a URL`);
    map.set(from, to);
  }
  return map;
}

/** The request target (path and query, as on the request line) of a URL string. */
export function requestTarget(url) {
  const authority = url.indexOf("//");
  const slash = url.indexOf("/", authority < 0 ? 0 : authority + 2);
  return slash < 0 ? "/" : url.slice(slash);
}

/**
 * The request head as the module reads it: request line, header fields and
 * the blank line, CRLF line ends. A string; the module gets its UTF-8 bytes
 * (the runtime decoded the client's bytes as UTF-8, and fetch() encodes them
 * back the same way, so the module judges the bytes that are forwarded).
 */
export function requestHead(request) {
  const url = request.url;
  let head = `${request.method} ${requestTarget(url)} HTTP/1.1\r\n`;
  let sawHost = false;
  for (const [name, value] of request.headers) {
    if (name === "host") sawHost = true;
    head += `${name}: ${value}\r\n`;
  }
  if (!sawHost) head += `host: ${new URL(url).host}\r\n`;
  return head + "\r\n";
}

/** One instance of the module, with the addresses it reported once. */
class ModuleInstance {
  constructor(wasmModule) {
    const instance = new WebAssembly.Instance(wasmModule, {});
    const e = instance.exports;
    const version = e.abi_version() >>> 0;
    if (version !== ABI_VERSION) {
      throw new Error(`gateway.wasm speaks ABI version ${version}; this host understands ${ABI_VERSION}`);
    }
    this.exports = e;
    this.memory = e.memory;
    this.inputPtr = e.input_ptr() >>> 0;
    this.inputCapacity = e.input_capacity() >>> 0;
    // The input buffer as a view, made once (the module never grows its
    // memory; a grown memory detaches the view, which is then made again).
    this.input = new Uint8Array(this.memory.buffer, this.inputPtr, this.inputCapacity);
  }

  /**
   * Decides one request (context line and head, a string) at Unix time
   * `now` (seconds): its status and its output as text.
   */
  decide(input, now) {
    if (this.input.byteLength === 0) {
      this.input = new Uint8Array(this.memory.buffer, this.inputPtr, this.inputCapacity);
    }
    let len;
    // UTF-8 takes at most 3 bytes per UTF-16 unit: an input of at most a
    // third of the buffer is encoded straight into it.
    if (input.length * 3 <= this.inputCapacity) {
      len = encoder.encodeInto(input, this.input).written;
    } else {
      const bytes = encoder.encode(input);
      len = bytes.length;
      // An input longer than the buffer: nothing written, the true length passed (431).
      if (len <= this.inputCapacity) this.input.set(bytes);
    }
    const status = this.exports.handle(len, now) >>> 0;
    return { status, output: this.output() };
  }

  /**
   * Writes `bytes` (a fetched document) at `keys_input_ptr()` and
   * `cacheControl` (its response's Cache-Control value, a byte string) at
   * `input_ptr()`, and calls `call(len, fieldLen)`, a key export (ABI.md,
   * "Keys fetched at run time"): `{ n, text }`, the return value and the
   * output (the next URL, the summary or the reason).
   */
  document(bytes, cacheControl, call) {
    const e = this.exports;
    const ptr = e.keys_input_ptr() >>> 0;
    if (bytes.byteLength > (e.keys_input_capacity() >>> 0)) throw new Error("document larger than the keys input");
    new Uint8Array(this.memory.buffer, ptr, bytes.byteLength).set(bytes);
    // A field's characters are bytes (a ByteString); a value longer than the buffer counts as none.
    let fieldLen = 0;
    if (cacheControl.length <= this.inputCapacity) {
      for (let i = 0; i < cacheControl.length; i++) this.input[i] = cacheControl.charCodeAt(i);
      fieldLen = cacheControl.length;
    }
    const n = call(bytes.byteLength, fieldLen) | 0;
    return { n, text: this.output() };
  }

  /** The installed keys: a copy of the `key_store_len()` bytes at `key_store_ptr()`. */
  keyStore() {
    const ptr = this.exports.key_store_ptr() >>> 0;
    return new Uint8Array(this.memory.buffer, ptr, this.exports.key_store_len() >>> 0).slice();
  }

  /** Starts this (fresh) instance with the keys another instance installed. */
  loadKeyStore(store) {
    new Uint8Array(this.memory.buffer, this.exports.key_store_ptr() >>> 0, store.byteLength).set(store);
  }

  /** The module's route table: [audience, upstream URL] pairs. */
  routes() {
    this.exports.routes();
    return this.output()
      .split("\n")
      .map((line) => [line.slice(0, line.indexOf(" ")), line.slice(line.indexOf(" ") + 1)]);
  }

  output() {
    const ptr = this.exports.output_ptr() >>> 0;
    const len = this.exports.output_len() >>> 0;
    return decoder.decode(new Uint8Array(this.memory.buffer, ptr, len));
  }
}

/**
 * The gateway: one module instance, reused request after request (the
 * module resets its arena on entry), replaced after a trap. A module that
 * fetches keys at run time (it exports `key_sources`) has them installed in
 * that instance; a copy of its key store starts the instance that replaces
 * it.
 */
export class Gateway {
  /**
   * @param {WebAssembly.Module} wasmModule the compiled dist/gateway.wasm
   * @param {{ upstreamOverride?: Map<string, string>, now?: () => number, log?: (line: string) => void }} [options]
   *   `now`: Unix seconds, for the module and the key fetches' schedule; `log`: where the key fetches' lines go (console.error)
   */
  constructor(wasmModule, options = {}) {
    this.wasmModule = wasmModule;
    this.upstreamOverride = options.upstreamOverride ?? new Map();
    this.now = options.now ?? (() => Date.now() / 1000);
    /** What each decision is reported to (observe.mjs's Observer), or null. */
    this.observer = null;
    /**
     * What counts the buckets of a forward (limits.mjs's bindingCounter), or
     * null: a forward with buckets is then refused, not forwarded uncounted.
     */
    this.counter = options.counter ?? null;
    /** How many instances were made: 1, plus one after each trap. */
    this.instances = 0;
    /** The installed keys after the last install, for a fresh instance; null before. */
    this.keyStore = null;
    this.instance = this.instantiate();
    /** The key fetching, or null for a module that fetches no keys. */
    this.keys = null;
    if (typeof this.instance.exports.key_sources === "function") {
      if (typeof this.instance.exports.key_fetch !== "function") {
        throw new Error("gateway.wasm fetches keys but does not export key_fetch: it was built for an older contract");
      }
      this.instance.exports.key_sources();
      const sources = readKeySources(this.instance.output());
      this.keys = new KeyFetcher(sources, {
        module: this.keysModule(),
        mapUrl: (url) => this.mapUrl(url),
        now: () => this.now() * 1000,
        log: options.log,
      });
    }
  }

  instantiate() {
    const instance = new ModuleInstance(this.wasmModule);
    this.instances += 1;
    if (this.keyStore !== null) instance.loadKeyStore(this.keyStore);
    return instance;
  }

  /**
   * What keys.mjs calls (ABI.md, "Keys fetched at run time"): the document
   * buffer's size, and the schedule's questions on the live instance at the
   * gateway's clock. A trap there is answered as the module's refusal
   * ("gateway module failed") and discards the instance.
   */
  keysModule() {
    const call = (what, run) => {
      try {
        this.instance ??= this.instantiate();
        return run(this.instance);
      } catch (error) {
        this.instance = null;
        console.error(`gateway: module failed in ${what}, instance discarded: ${error}`);
        return { n: -1, text: "gateway module failed" };
      }
    };
    /** A result that installed keys: the store a replacing instance starts with. */
    const kept = (m, result, installed) => {
      if (result.n === installed) this.keyStore = m.keyStore();
      return result;
    };
    const WHY = { due: 0, asked: 1, now: 2 };
    return {
      keysCapacity: this.instance.exports.keys_input_capacity() >>> 0,
      fetch: (issuer, why) => {
        const { n, text } = call("key_fetch", (m) => ({ n: m.exports.key_fetch(issuer, this.now(), WHY[why]) | 0, text: m.output() }));
        if (n < 0) console.error(`keys: issuer ${issuer}: the module does not answer: ${text}`);
        return n === 1 ? text : null;
      },
      wait: (issuer) => call("key_fetch_wait", (m) => m.exports.key_fetch_wait(issuer, this.now())),
      fetched: (issuer, bytes, cacheControl) =>
        call("key_fetched", (m) =>
          kept(m, m.document(bytes, cacheControl, (len, fieldLen) => m.exports.key_fetched(issuer, len, fieldLen, this.now())), 0),
        ),
      failed: (issuer) => call("key_fetch_failed", (m) => ({ n: m.exports.key_fetch_failed(issuer, this.now()) | 0, text: m.output() })),
      stored: (issuer, bytes, cacheControl, fetchedSecs) =>
        call("key_stored", (m) =>
          kept(m, m.document(bytes, cacheControl, (len, fieldLen) => m.exports.key_stored(issuer, len, fieldLen, fetchedSecs, this.now())), 0),
        ),
    };
  }

  /**
   * A URL the module names (a key source, a jwks_uri) with the upstream
   * override applied to its origin, as for the upstreams.
   */
  mapUrl(url) {
    const origin = originOf(url);
    const to = origin === null ? undefined : this.upstreamOverride.get(origin);
    if (to === undefined) return url;
    const u = new URL(url);
    return to + u.pathname + u.search;
  }

  /** The module's route table, read once. */
  routes() {
    this.instance ??= this.instantiate();
    this.routeTable ??= this.instance.routes();
    return this.routeTable;
  }

  /**
   * Answers one request: the module's rejection (a Response), or a promise
   * of the upstream's response. Not async: a rejection is answered without
   * a promise of its own. `ctx` is the runtime's (its `waitUntil` keeps a
   * background key fetch alive after the response); optional.
   */
  fetch(request, ctx) {
    const waitUntil = ctx?.waitUntil ? (promise) => ctx.waitUntil(promise) : () => {};
    // A fresh isolate fetches every key source before its first decision.
    const first = this.keys?.beforeDecision(waitUntil);
    if (first) return first.then(() => this.fetch(request, ctx));
    const started = Date.now();
    const failed = () => this.report(request, started, FAILED_LABELS, "gateway module failed", hostError(500, "gateway module failed"));
    let decision;
    const input = contextLine(request) + requestHead(request);
    const now = this.now();
    try {
      this.instance ??= this.instantiate();
      const { status, output } = this.instance.decide(input, now);
      decision = readOutput(status, output);
    } catch (error) {
      // A trap is a bug in the module (ABI.md: it never traps): drop the
      // instance, make a fresh one for the next request, answer 500.
      this.instance = null;
      console.error(`gateway: module failed, instance discarded: ${error}`);
      return failed();
    }
    if (decision === null) return failed();
    const plan = decision.forward;
    if (plan?.buckets.length > 0) return this.countThenForward(request, started, plan, input, now);
    if (plan) return this.report(request, started, plan.labels, "", this.forward(request, plan));
    if (decision.answer.refresh_keys !== undefined) this.keys?.requested(decision.answer.refresh_keys, waitUntil);
    return this.answer(request, started, decision.answer) ?? failed();
  }

  /** The module's answer as a Response, reported; null when it cannot be sent. */
  answer(request, started, { status, fields, body, labels, reason }) {
    let response;
    try {
      // A 204 (or any null-body status) has no body.
      response = new Response(NULL_BODY.has(status) ? null : body, { status, headers: fields });
    } catch (error) {
      console.error(`gateway: the module's answer cannot be sent: ${error}`);
      return null;
    }
    return this.report(request, started, labels, reason, response);
  }

  /**
   * A forward with buckets (ABI.md, "Rate limits"): each counted in order;
   * the first that refuses gets the module's 429 instead of a forward; when
   * all allow, the forward with a `ratelimit` field per limit whose fields
   * are on. A counter not bound, or failing, refuses (500, 503), outcome
   * `limit_store_unavailable`.
   */
  async countThenForward(request, started, plan, input, now) {
    let counted;
    const host = (status, why, outcome = LIMIT_STORE_UNAVAILABLE) => this.report(request, started, { ...plan.labels, outcome }, why, hostError(status, why));
    try {
      this.limits ??= readLimits(this.labelTable());
      counted = await countBuckets(plan.buckets, this.limits, this.counter ?? NOT_BOUND);
    } catch (error) {
      console.error(`gateway: rate limits not counted, request refused: ${error.message} (deploy/workerd/README.md, "Rate limits")`);
      if (error instanceof UnknownLimit) return host(500, "gateway module failed", MODULE_FAILED);
      return error instanceof LimitsNotBound ? host(500, "rate limits not bound") : host(503, "rate limit store unavailable");
    }
    if (counted.refused === undefined) {
      for (const value of counted.fields) plan.responseAdd.push(["ratelimit", value]);
      return this.report(request, started, plan.labels, "", this.forward(request, plan));
    }
    let answer = null;
    try {
      // Decided again at the same clock (other requests may have used the
      // instance while the buckets were counted), then asked for the 429.
      this.instance ??= this.instantiate();
      this.instance.decide(input, now);
      const clamp = (n) => Math.min(n, 0x7fffffff);
      const status = this.instance.exports.limited(counted.refused, clamp(counted.verdict.retry_after_secs), clamp(counted.verdict.reset_secs));
      answer = readOutput(status >>> 0, this.instance.output())?.answer ?? null;
    } catch (error) {
      this.instance = null;
      console.error(`gateway: module failed in limited, instance discarded: ${error}`);
    }
    return (answer && this.answer(request, started, answer)) ?? host(500, "gateway module failed", MODULE_FAILED);
  }

  /**
   * Hands what the request came to (`result`, a Response or its promise)
   * to the observer (observe.mjs), when there is one, and returns it.
   */
  report(request, started, labels, reason, result) {
    if (this.observer === null || !this.observer.active()) return result;
    const done = (response) => {
      const forwarded = labels.outcome === FORWARDED || labels.outcome === PUBLIC;
      const upstream = UPSTREAM_FAILED.has(response) ? "upstream_unavailable" : forwarded ? response.status : null;
      const durationMs = Date.now() - started;
      this.observer.write(this.observer.record(request, { labels, reason, status: response.status, upstream, durationMs }));
      return response;
    };
    return result instanceof Response ? done(result) : result.then(done);
  }

  /** The module's label table (`labels` export), "" for a module without one. */
  labelTable() {
    this.instance ??= this.instantiate();
    if (typeof this.instance.exports.labels !== "function") return "";
    this.instance.exports.labels();
    return this.instance.output();
  }

  /**
   * Sends the request upstream exactly as `plan` says, the body streamed,
   * and changes the upstream's response as it says.
   */
  forward(request, plan) {
    const origin = this.upstreamOverride.get(plan.origin) ?? plan.origin;
    const headers = new Headers(request.headers);
    try {
      for (const name of plan.drop) headers.delete(name);
      for (const [name, value] of plan.set) headers.set(name, value);
    } catch (error) {
      console.error(`gateway: the module's plan names an invalid field: ${error}`);
      return hostError(500, "gateway module failed");
    }
    // fetch() sets Host from the URL, and frames the body itself.
    const init = { method: request.method, headers, redirect: "manual" };
    // A GET or HEAD carries no content here (the module refuses one that
    // frames any), and fetch() refuses a body on them, even an empty one.
    if (request.body !== null && request.method !== "GET" && request.method !== "HEAD") {
      init.body = request.body; // streamed, never buffered
      init.duplex = "half";
    }
    const unavailable = (error) => {
      console.error(`gateway: upstream ${origin} unavailable: ${error}`);
      const answer = hostError(502, "upstream unavailable");
      UPSTREAM_FAILED.add(answer);
      return answer;
    };
    let sent;
    try {
      sent = fetch(origin + plan.path, init);
    } catch (error) {
      return unavailable(error);
    }
    return sent.then((response) => {
      if (plan.responseDrop.length === 0 && plan.responseAdd.length === 0) return response;
      const changed = new Headers(response.headers);
      for (const name of plan.responseDrop) changed.delete(name);
      for (const [name, value] of plan.responseAdd) changed.append(name, value);
      return new Response(response.body, { status: response.status, statusText: response.statusText, headers: changed });
    }, unavailable);
  }
}

/** Statuses whose responses have no body (Fetch standard, "null body status"). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

const NAME = /^[a-z0-9!#$%&'*+\-.^_`|~]+$/;
const STACK_OWNED = new Set(["content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer", "host"]);
const TEXT = /^[\t\n\x20-\x7e]*$/;
const TARGET = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@\/?%]*$/;
const AUTHORITY = /^[A-Za-z0-9\-._~!$&'()*+,;=:\[\]%]+$/;
const DESCRIPTION = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/** A bucket line: `=<limit, 2 lower-case hex digits> <key>`, the key printable ASCII without spaces. */
const BUCKET = /^=([0-9a-f]{2}) ([\x21-\x7e]+)$/;

/** `name:value` of a field line without its marker, or null when it breaks the format. */
function readField(text) {
  const colon = text.indexOf(":");
  if (colon < 1) return null;
  const name = text.slice(0, colon);
  const value = text.slice(colon + 1);
  if (!NAME.test(name) || STACK_OWNED.has(name) || /^[ \t]|[ \t]$/.test(value)) return null;
  return [name, value];
}

/**
 * The label line (worker/ABI.md, "Labels"): `#oorrrrttttii c`, outcome,
 * rule, route and issuer in lower-case hex of fixed widths (all `f`: none),
 * then the cache's letter; null when it breaks the format.
 */
function readLabels(line) {
  const m = /^#([0-9a-f]{2})([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{2}) ([-hm])$/.exec(line ?? "");
  if (m === null) return null;
  const index = (hex, none) => (hex === none ? null : parseInt(hex, 16));
  const cache = { "-": "none", h: "hit", m: "miss" }[m[5]];
  return { outcome: parseInt(m[1], 16), rule: index(m[2], "ffff"), route: index(m[3], "ffff"), issuer: index(m[4], "ff"), cache };
}

/**
 * The decision in the module's output (worker/ABI.md, "The decision"), with
 * the contract crate's rules (contract/src/decision.rs; both are held to
 * contract/golden/decisions.json): `{ forward: { origin, path, labels,
 * buckets, drop, set, responseDrop, responseAdd } }` for status 200 (buckets:
 * `{ limit, key }` from the `=` lines), `{ answer: { status,
 * error, reason, labels, fields, body } }` otherwise, or null when the
 * output breaks the format (the host then answers 500 and executes nothing).
 */
export function readDecision(status, lines) {
  return readOutput(status, lines.join("\n"));
}

/** The decision in the module's output `text`, as `readDecision` reads it. */
function readOutput(status, text) {
  if (!TEXT.test(text) || !Number.isInteger(status)) return null;
  const lines = text.split("\n");
  if (status === 200) return readForward(lines);
  if (status === 500 && text === "") {
    const labels = { outcome: MODULE_FAILED, rule: null, route: null, issuer: null, cache: "none" };
    return { answer: { status, error: "", reason: "gateway module failed", fields: [["content-type", JSON_TYPE]], body: JSON.stringify({ error_description: "gateway module failed" }), labels } };
  }
  if (status < 201 || status > 599 || lines.length < 3) return null;
  const [error, reason] = lines;
  if (!/^[a-z_]*$/.test(error) || !DESCRIPTION.test(reason)) return null;
  const labels = lines.length > 3 ? readLabels(lines[2]) : null;
  if (labels === null) return null;
  // An optional `~<issuer>` line (fetch that issuer's keys now), then the fields.
  let first = 3;
  let refreshKeys;
  if (lines.length > 4 && lines[3].startsWith("~")) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(lines[3].slice(1)) || Number(lines[3].slice(1)) > 255) return null;
    refreshKeys = Number(lines[3].slice(1));
    first = 4;
  }
  const fields = [];
  for (const line of lines.slice(first, -1)) {
    const field = line.startsWith(">") ? readField(line.slice(1)) : null;
    if (field === null) return null;
    fields.push(field);
  }
  const answer = { status, error, reason, fields, body: lines[lines.length - 1], labels };
  if (refreshKeys !== undefined) answer.refresh_keys = refreshKeys;
  return { answer };
}

function readForward(lines) {
  const [origin, path, labelLine, ...ops] = lines;
  const authority = /^https?:\/\/(.*)$/.exec(origin ?? "")?.[1];
  if (authority === undefined || !AUTHORITY.test(authority)) return null;
  if (path === undefined || !TARGET.test(path)) return null;
  const labels = readLabels(labelLine);
  if (labels === null) return null;
  const plan = { origin, path, labels, buckets: [], drop: [], set: [], responseDrop: [], responseAdd: [] };
  // The `=` lines (the buckets to count) come first, right after the labels.
  let first = 0;
  for (; first < ops.length && ops[first].startsWith("="); first++) {
    const bucket = BUCKET.exec(ops[first]);
    if (bucket === null) return null;
    plan.buckets.push({ limit: parseInt(bucket[1], 16), key: bucket[2] });
  }
  for (const op of ops.slice(first)) {
    const marker = op.slice(0, 1);
    const rest = op.slice(1);
    if ((marker === "-" || marker === "!") && NAME.test(rest)) {
      (marker === "-" ? plan.drop : plan.responseDrop).push(rest);
    } else {
      const field = marker === "+" || marker === ">" ? readField(rest) : null;
      if (field === null) return null;
      (marker === "+" ? plan.set : plan.responseAdd).push(field);
    }
  }
  return { forward: plan };
}
