// Keys fetched at run time (worker/ABI.md, "Keys fetched at run time"), the
// host's side for JavaScript runtimes: read the module's key-source table,
// fetch each document within the contract's limits, hand the bytes to the
// module, and decide when to fetch again. The module parses and validates
// every document; nothing here reads JSON.
//
// workerd (and Cloudflare Workers) run code only while a request is being
// served: there is no timer between requests. So the schedule is lazy: each
// request starts the refreshes that are due, in the background
// (ctx.waitUntil), and is decided with the keys installed now.

/** How far ahead of this isolate's clock a stored document's fetch time may be (clock skew between machines). */
const MAX_SKEW_MS = 60_000;

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

/**
 * The `max-age` of a Cache-Control field value, in seconds, or null when it
 * has none (or a malformed one). Only the directive is read; `no-cache` and
 * the others do not apply to a host that refetches on its own schedule.
 */
export function maxAgeOf(cacheControl) {
  if (cacheControl == null) return null;
  for (const directive of cacheControl.split(",")) {
    const m = /^\s*max-age\s*=\s*"?([0-9]+)"?\s*$/i.exec(directive);
    if (m) return Number(m[1]);
  }
  return null;
}

/**
 * When to fetch again (ABI.md, "Fetching", step 3), as a delay in seconds
 * after a fetch ended: `refresh_secs` after a success, or the response's
 * `max-age` clamped to [`refetch_secs`, `refresh_secs`]; after the n-th
 * failure in a row (n >= 1), 1, 2, 4, ... seconds, at most `refetch_secs`.
 * Pure, so that the schedule is tested without a clock.
 */
export function nextFetchDelay(source, outcome) {
  if (outcome.ok) {
    const { maxAge } = outcome;
    if (maxAge == null) return source.refreshSecs;
    return Math.min(Math.max(maxAge, source.refetchSecs), source.refreshSecs);
  }
  const backoff = 2 ** Math.min(outcome.failures - 1, 31);
  return Math.min(backoff, source.refetchSecs);
}

/**
 * Whether an answer's `~<issuer>` line starts a fetch (step 4): not while
 * one is in flight, nor within `refetch_secs` of the last one started.
 * `nowMs` and `startedMs` are milliseconds (startedMs -Infinity for never).
 */
export function mayFetchOnRequest(source, { inFlight, startedMs }, nowMs) {
  return !inFlight && nowMs - startedMs >= source.refetchSecs * 1000;
}

/** Whether a scheduled fetch is due: its time came and none is in flight. */
export function isDue({ inFlight, nextMs }, nowMs) {
  return !inFlight && nowMs >= nextMs;
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
 * Fetches `url` as the contract says (step 1): GET, no redirect followed,
 * `timeoutMs` from connection to last byte, status 200, at most `capacity`
 * bytes. `{ bytes, maxAge }`, or `{ failed }` with the reason for the log.
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
    return { bytes, maxAge: maxAgeOf(response.headers.get("cache-control")) };
  } catch (error) {
    return { failed: signal.aborted ? "timed out" : reasonOf(error) };
  }
}

/**
 * A Workers KV namespace as the store of JWKS documents the isolates of a
 * Worker share (README.md, "On Cloudflare"): each under `jwks:<issuer>`,
 * with the URL it came from, when it was fetched and its max-age as
 * metadata. The documents are kept as fetched; every isolate's module
 * validates them again when it installs them.
 */
export function kvStore(kv) {
  return {
    async get(issuer) {
      const { value, metadata } = await kv.getWithMetadata(`jwks:${issuer}`, { type: "arrayBuffer" });
      if (value === null || typeof metadata?.url !== "string" || !Number.isFinite(metadata?.fetchedMs)) return null;
      return { bytes: new Uint8Array(value), url: metadata.url, fetchedMs: metadata.fetchedMs, maxAge: metadata.maxAge ?? null };
    },
    put(issuer, { bytes, url, fetchedMs, maxAge }) {
      const value = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
      return kv.put(`jwks:${issuer}`, value, { metadata: { url, fetchedMs, maxAge } });
    },
  };
}

/**
 * One issuer's fetching: its source, the JWKS URL (the source's, or the
 * `jwks_uri` its discovery document named), its schedule, and when the
 * installed document was fetched.
 */
class IssuerKeys {
  constructor(source) {
    this.source = source;
    /** The URL of the JWKS document; null until discovery names it. */
    this.jwksUrl = source.kind === "jwks" ? source.url : null;
    this.nextMs = 0;
    this.startedMs = -Infinity;
    this.failures = 0;
    /** The fetch under way, or null. */
    this.inFlight = null;
    /** When the installed document was fetched (ms), and its max-age. */
    this.installedMs = -Infinity;
    this.maxAge = null;
  }

  /** Whether the installed document is recent enough that its refresh is not yet due. */
  fresh(nowMs) {
    return this.installedMs + nextFetchDelay(this.source, { ok: true, maxAge: this.maxAge }) * 1000 > nowMs;
  }
}

/**
 * The key fetching of one isolate. `module` is the gateway's side of the
 * module: `keysCapacity`, `discovered(issuer, bytes)` and
 * `installKeys(issuer, bytes, atSecs?)`, each returning `{ n, text }` (the
 * export's return value and its output). `now` is the clock in ms; `store`
 * (kvStore) is optional. `mapUrl` applies the upstream override to a
 * URL the module names; `log` takes one line per fetch outcome.
 */
export class KeyFetcher {
  constructor(sources, { module, mapUrl = (url) => url, now = () => Date.now(), log = (line) => console.error(line), store = null }) {
    this.issuers = new Map(sources.map((source) => [source.issuer, new IssuerKeys(source)]));
    this.module = module;
    this.mapUrl = mapUrl;
    this.now = now;
    this.log = log;
    /** The shared store of documents (kvStore), or null: every document comes from its provider. */
    this.store = store;
    /** The first fetch of every source, shared by the requests that wait for it; true once settled. */
    this.ready = null;
  }

  /**
   * Called before each decision. Null when the first fetches are done;
   * otherwise the promise of them (started by the first request), which
   * the request awaits. Starts, in the background, every fetch that is due.
   */
  beforeDecision(waitUntil) {
    if (this.ready === true) {
      const nowMs = this.now();
      for (const keys of this.issuers.values()) {
        if (isDue(keys, nowMs)) waitUntil(this.refresh(keys));
      }
      return null;
    }
    if (this.ready === null) {
      this.ready = Promise.all([...this.issuers.values()].map((keys) => this.refresh(keys))).then(() => {
        this.ready = true;
      });
    }
    waitUntil(this.ready);
    return this.ready;
  }

  /** An answer asked for `issuer`'s keys (its `~` line): fetch unless too soon. */
  requested(issuer, waitUntil) {
    const keys = this.issuers.get(issuer);
    if (keys !== undefined && mayFetchOnRequest(keys.source, keys, this.now())) waitUntil(this.refresh(keys, "asked"));
  }

  /**
   * A Cron Trigger's refresh (worker.mjs, `scheduled`): every source from
   * its provider now, each document stored; a fetch in flight is awaited
   * instead. Never rejects.
   */
  refreshAll() {
    return Promise.all([...this.issuers.values()].map((keys) => keys.inFlight ?? this.refresh(keys, "provider")));
  }

  /**
   * Fetches and installs `keys`' document now; the promise never rejects.
   * `why`: "due" (the first fetch, or its time came), "asked" (an answer's
   * `~` line) or "provider" (a Cron Trigger: the store is not read).
   */
  refresh(keys, why = "due") {
    keys.startedMs = this.now();
    keys.inFlight = this.round(keys, why)
      .catch((error) => {
        this.log(`keys: issuer ${keys.source.issuer} ${keys.jwksUrl ?? keys.source.url}: fetch failed: ${reasonOf(error)}`);
        return { ok: false };
      })
      .then((outcome) => {
        keys.failures = outcome.ok ? 0 : keys.failures + 1;
        const delay = nextFetchDelay(keys.source, { ...outcome, failures: keys.failures });
        keys.nextMs = (outcome.ok ? keys.installedMs : this.now()) + delay * 1000;
        keys.inFlight = null;
      });
    return keys.inFlight;
  }

  /**
   * One round. With a store, a document newer than the installed one is
   * installed from it first; that ends the round when it leaves the keys
   * fresh ("due") or brought a newer document ("asked"). Otherwise the
   * provider's document is fetched, installed and stored.
   */
  async round(keys, why) {
    if (this.store !== null && why !== "provider") {
      const newer = await this.installStored(keys);
      if (why === "due" ? keys.fresh(this.now()) : newer) return { ok: true, maxAge: keys.maxAge };
    }
    const outcome = await this.fetchAndInstall(keys);
    if (outcome.ok && this.store !== null) {
      const { issuer } = keys.source;
      const document = { bytes: outcome.bytes, url: keys.jwksUrl, fetchedMs: keys.installedMs, maxAge: keys.maxAge };
      await this.store.put(issuer, document).catch((error) => this.log(`keys: issuer ${issuer}: storing the document failed: ${reasonOf(error)}`));
    }
    return outcome;
  }

  /** Installs the stored document when it is newer than the installed one: whether it did. */
  async installStored(keys) {
    const { issuer } = keys.source;
    let stored;
    try {
      stored = await this.store.get(issuer);
    } catch (error) {
      this.log(`keys: issuer ${issuer}: reading the store failed: ${reasonOf(error)}`);
      return false;
    }
    if (stored === null || stored.fetchedMs <= keys.installedMs) return false;
    const from = `${stored.url} (stored, fetched ${new Date(stored.fetchedMs).toISOString()})`;
    // A fetch time ahead of this clock would keep the keys fresh past
    // max_stale_secs: beyond a minute of clock skew, the document is ignored.
    if (stored.fetchedMs > this.now() + MAX_SKEW_MS) {
      this.log(`keys: issuer ${issuer} ${from}: ignored: fetched after now`);
      return false;
    }
    // Installed as of when it was fetched: the module counts max_stale_secs from then.
    const { n, text } = this.module.installKeys(issuer, stored.bytes, stored.fetchedMs / 1000);
    this.log(`keys: issuer ${issuer} ${from}: ${n < 0 ? `refused: ${text}` : text}`);
    if (n < 0) return false;
    keys.installedMs = stored.fetchedMs;
    keys.maxAge = stored.maxAge;
    return true;
  }

  /** The provider's documents: discovery when no JWKS URL is known, then the JWKS document. */
  async fetchAndInstall(keys) {
    const { issuer } = keys.source;
    if (keys.jwksUrl === null) {
      const found = await this.fetchInto(keys, keys.source.url, (bytes) => this.module.discovered(issuer, bytes));
      if (found === null) return { ok: false };
      keys.jwksUrl = found.text;
    }
    const url = keys.jwksUrl;
    // After a failed JWKS fetch, the next one reads the discovery document
    // again: the provider may have moved its keys.
    if (keys.source.kind === "discovery") keys.jwksUrl = null;
    const installed = await this.fetchInto(keys, url, (bytes) => this.module.installKeys(issuer, bytes));
    if (installed === null) return { ok: false };
    keys.jwksUrl = url;
    keys.installedMs = this.now();
    keys.maxAge = installed.maxAge;
    this.log(`keys: issuer ${issuer} ${url}: ${installed.text}`);
    return { ok: true, maxAge: installed.maxAge, bytes: installed.bytes };
  }

  /**
   * Fetches `url` (as the module names it) and hands the body to `call`
   * (`discovered` or `installKeys`): its `{ n, text }` and the response's
   * max-age, or null after logging the failure or the refusal.
   */
  async fetchInto(keys, url, call) {
    const { issuer, timeoutMs } = keys.source;
    const got = await fetchDocument(this.mapUrl(url), timeoutMs, this.module.keysCapacity);
    const result = got.failed ? null : call(got.bytes);
    if (result === null || result.n < 0) {
      const outcome = result === null ? `fetch failed: ${got.failed}` : `refused: ${result.text}`;
      this.log(`keys: issuer ${issuer} ${url}: ${outcome}`);
      return null;
    }
    return { ...result, maxAge: got.maxAge, bytes: got.bytes };
  }
}
