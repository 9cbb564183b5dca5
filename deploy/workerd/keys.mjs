// Keys fetched at run time (worker/ABI.md, "Keys fetched at run time"), the
// host's side for JavaScript runtimes: read the module's key-source table,
// ask the module what to fetch and when, fetch each URL within the
// contract's limits, and hand the bytes to the module, which reads them and
// says what comes next. The module keeps the schedule and parses every
// document; nothing here decides when to fetch or reads JSON.
//
// workerd (and Cloudflare Workers) run code only while a request is being
// served: there is no timer between requests. So each request asks the
// module which rounds are due and runs them in the background
// (ctx.waitUntil), and is decided with the keys installed now.

/** The largest number the table holds (a u32). */
const U32_MAX = 2 ** 32 - 1;

/** A number of the table: digits, no sign, no leading zero, at most u32::MAX. */
function tableNumber(word) {
  if (word === undefined || !/^(0|[1-9][0-9]*)$/.test(word)) return null;
  const n = Number(word);
  return n <= U32_MAX ? n : null;
}

/** One line of the table, or null when it is not a key source. */
function readSourceLine(line) {
  const words = line.split(" ");
  if (words.length !== 7) return null;
  const [issuerWord, kind, url, ...numbers] = words;
  const issuer = tableNumber(issuerWord);
  if (issuer === null || issuer > 255) return null;
  if (kind !== "jwks" && kind !== "discovery") return null;
  if (!/^https?:\/\/[\x21-\x7e]*$/.test(url)) return null;
  const [refreshSecs, refetchSecs, timeoutMs, maxStaleSecs] = numbers.map(tableNumber);
  if ([refreshSecs, refetchSecs, timeoutMs, maxStaleSecs].includes(null)) return null;
  return { issuer, kind, url, refreshSecs, refetchSecs, timeoutMs, maxStaleSecs };
}

/**
 * The key-source table `key_sources()` wrote, read with the rules of
 * contract/src/key_sources.rs: `<issuer> <kind> <url> <refresh_secs>
 * <refetch_secs> <timeout_ms> <max_stale_secs>` per line. Throws, naming the
 * line, when one is not a source (a module that writes one is broken: the
 * Worker refuses to load it, as it refuses another ABI version).
 */
export function readKeySources(text) {
  if (text === "") return [];
  return text.split("\n").map((line) => {
    const source = readSourceLine(line);
    if (source === null) throw new Error(`gateway.wasm lists a key source this host cannot read: ${JSON.stringify(line)}`);
    return source;
  });
}

/** Why a fetch failed: one line of printable text. */
function reasonOf(error) {
  const text = String(error?.message || error?.name || error || "connection failed");
  return text.replace(/[^\x20-\x7e]+/g, " ").trim() || "connection failed";
}

/**
 * Reads a response body, stopping at `capacity` bytes: the bytes, or null
 * when there are more (the rest is not read).
 */
async function readCapped(body, capacity) {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > capacity) {
      reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

/**
 * Fetches `url` as the contract says: GET, no redirect followed,
 * `timeoutMs` from connection to last byte, status 200, at most `capacity`
 * bytes. `{ bytes, cacheControl }` (the response's Cache-Control fields,
 * joined by fetch with ", ", for the module to read; "" for none), or
 * `{ failed }` with the reason for the log.
 */
export async function fetchDocument(url, timeoutMs, capacity) {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(url, { method: "GET", redirect: "manual", signal, headers: { accept: "application/json" } });
    const status = response.status;
    let failed = null;
    if (response.type === "opaqueredirect" || (status >= 300 && status < 400)) failed = "redirect refused";
    else if (status !== 200) failed = `status ${status}`;
    else if (Number(response.headers.get("content-length")) > capacity) failed = `larger than ${capacity} bytes`;
    if (failed !== null) {
      response.body?.cancel().catch(() => {});
      return { failed };
    }
    const bytes = await readCapped(response.body, capacity);
    if (bytes === null) return { failed: `larger than ${capacity} bytes` };
    return { bytes, cacheControl: response.headers.get("cache-control") ?? "" };
  } catch (error) {
    return { failed: signal.aborted ? "timed out" : reasonOf(error) };
  }
}

/**
 * A Workers KV namespace as the store of JWKS documents the isolates of a
 * Worker share (README.md, "On Cloudflare"): each under `jwks:<issuer>`,
 * with the URL it came from, when it was fetched and its response's
 * Cache-Control value as metadata. The documents are kept as fetched; every
 * isolate's module validates them again when it installs them.
 */
export function kvStore(kv) {
  return {
    async get(issuer) {
      const { value, metadata } = await kv.getWithMetadata(`jwks:${issuer}`, { type: "arrayBuffer" });
      if (value === null || typeof metadata?.url !== "string" || !Number.isFinite(metadata?.fetchedMs)) return null;
      const cacheControl = typeof metadata.cacheControl === "string" ? metadata.cacheControl : "";
      return { bytes: new Uint8Array(value), url: metadata.url, fetchedMs: metadata.fetchedMs, cacheControl };
    },
    put(issuer, { bytes, url, fetchedMs, cacheControl }) {
      const value = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
      return kv.put(`jwks:${issuer}`, value, { metadata: { url, fetchedMs, cacheControl } });
    },
  };
}

/**
 * The key fetching of one isolate. `module` is the module's side (the
 * Gateway's `keysModule()`): `keysCapacity`, and the schedule's questions
 * `fetch(issuer, why)` (the URL a round starts with, or null),
 * `wait(issuer)` (seconds until one is due), `fetched(issuer, bytes,
 * cacheControl)`, `failed(issuer)` and `stored(issuer, bytes, cacheControl,
 * fetchedSecs)` (each `{ n, text }`: the export's return value and its
 * output). `now` is the clock in ms (for the store's fetch times); `store`
 * (kvStore) is optional. `mapUrl` applies the upstream override to a URL
 * the module names; `log` takes one line per fetch outcome.
 */
export class KeyFetcher {
  constructor(sources, { module, mapUrl = (url) => url, now = () => Date.now(), log = (line) => console.error(line), store = null }) {
    this.sources = new Map(sources.map((source) => [source.issuer, source]));
    this.module = module;
    this.mapUrl = mapUrl;
    this.now = now;
    this.log = log;
    /** The shared store of documents (kvStore), or null: every document comes from its provider. */
    this.store = store;
    /** The round under way per issuer: its promise. */
    this.rounds = new Map();
    /** The first round of every source, shared by the requests that wait for it; true once settled. */
    this.ready = null;
  }

  /**
   * Called before each decision. Null when the first rounds are done;
   * otherwise the promise of them (started by the first request), which
   * the request awaits. Starts, in the background, every round the module
   * says is due.
   */
  beforeDecision(waitUntil) {
    if (this.ready === true) {
      for (const issuer of this.sources.keys()) this.start(issuer, "due", waitUntil);
      return null;
    }
    if (this.ready === null) {
      const first = [...this.sources.keys()].map((issuer) => this.start(issuer, "due") ?? this.rounds.get(issuer));
      this.ready = Promise.all(first).then(() => {
        this.ready = true;
      });
    }
    waitUntil(this.ready);
    return this.ready;
  }

  /** An answer asked for `issuer`'s keys (its `~` line): a round, when the module grants one. */
  requested(issuer, waitUntil) {
    this.start(issuer, "asked", waitUntil);
  }

  /**
   * A Cron Trigger's refresh (worker.mjs, `scheduled`): a round of every
   * source from its provider now, each document stored; a round under way
   * is awaited instead. Never rejects.
   */
  refreshAll() {
    return Promise.all([...this.sources.keys()].map((issuer) => this.start(issuer, "now") ?? this.rounds.get(issuer)));
  }

  /**
   * Asks the module whether a round of `issuer` starts, for `why` ("due",
   * "asked" or "now": ABI.md), and runs it in the background: its promise
   * (which never rejects), or null when none starts.
   */
  start(issuer, why, waitUntil = () => {}) {
    // The module runs one round at a time; this keeps a round that
    // outlived a trapped instance from meeting the new instance's.
    if (!this.sources.has(issuer) || this.rounds.has(issuer)) return null;
    const url = this.module.fetch(issuer, why);
    if (url === null) return null;
    const round = this.round(issuer, url, why)
      .catch((error) => {
        this.log(`keys: issuer ${issuer} ${url}: fetch failed: ${reasonOf(error)}`);
        this.module.failed(issuer);
      })
      .finally(() => this.rounds.delete(issuer));
    this.rounds.set(issuer, round);
    waitUntil(round);
    return round;
  }

  /**
   * One round from `url`. With a store (and not a Cron Trigger's round), a
   * stored document newer than the installed keys is installed first: it
   * ends the round as of its fetch, and the provider is asked only when the
   * module says the keys are due again (a round that was asked for ends
   * with the newer document). The provider's document is stored.
   */
  async round(issuer, url, why) {
    if (this.store !== null && why !== "now" && (await this.installStored(issuer))) {
      if (why === "asked" || this.module.wait(issuer) > 0) return;
      url = this.module.fetch(issuer, "due");
      if (url === null) return;
    }
    const installed = await this.fetchRound(issuer, url);
    if (installed !== null && this.store !== null) {
      await this.store.put(issuer, installed).catch((error) => this.log(`keys: issuer ${issuer}: storing the document failed: ${reasonOf(error)}`));
    }
  }

  /** Installs the stored document when the module finds it newer than the installed keys: whether it did. */
  async installStored(issuer) {
    let stored;
    try {
      stored = await this.store.get(issuer);
    } catch (error) {
      this.log(`keys: issuer ${issuer}: reading the store failed: ${reasonOf(error)}`);
      return false;
    }
    if (stored === null) return false;
    const { n, text } = this.module.stored(issuer, stored.bytes, stored.cacheControl, stored.fetchedMs / 1000);
    if (n === 1) return false; // not newer than the installed keys
    const from = `${stored.url} (stored, fetched ${new Date(stored.fetchedMs).toISOString()})`;
    this.log(`keys: issuer ${issuer} ${from}: ${n < 0 ? `refused: ${text}` : text}`);
    return n === 0;
  }

  /**
   * Fetches each URL of the round the module names, from `url` on, and
   * hands each document over, until the module ends the round: the
   * installed document `{ bytes, url, fetchedMs, cacheControl }`, or null.
   */
  async fetchRound(issuer, url) {
    const { timeoutMs } = this.sources.get(issuer);
    for (;;) {
      const got = await fetchDocument(this.mapUrl(url), timeoutMs, this.module.keysCapacity);
      if (got.failed) {
        this.log(`keys: issuer ${issuer} ${url}: fetch failed: ${got.failed}`);
        this.module.failed(issuer);
        return null;
      }
      const fetchedMs = this.now();
      const { n, text } = this.module.fetched(issuer, got.bytes, got.cacheControl);
      if (n === 1) {
        url = text;
        continue;
      }
      this.log(`keys: issuer ${issuer} ${url}: ${n === 0 ? text : `refused: ${text}`}`);
      return n === 0 ? { bytes: got.bytes, url, fetchedMs, cacheControl: got.cacheControl } : null;
    }
  }
}
