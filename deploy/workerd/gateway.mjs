// The host side of the gateway for JavaScript runtimes (workerd, Cloudflare
// Workers, Node.js): it drives dist/gateway.wasm as worker/ABI.md describes
// and turns the module's decision into a Response. Every decision (token,
// claims, route, status, error body) is the module's; this file only moves
// bytes in and out and does the network I/O the module cannot do.
//
// It uses web-standard APIs only (Request, Response, Headers, fetch,
// WebAssembly), so the same code runs in workerd and, for its unit tests, in
// Node.js.

/** The contract version this host understands (worker/ABI.md). */
export const ABI_VERSION = 1;

const JSON_TYPE = "application/json";

/** A JSON answer the host itself makes (the module is not involved). */
function hostError(status, description) {
  return new Response(JSON.stringify({ error_description: description }), {
    status,
    headers: { "content-type": JSON_TYPE },
  });
}

/**
 * Parses an upstream override: "FROM=TO[,FROM=TO...]", each a base URL. The
 * module still decides which upstream a request goes to; an override only
 * maps the base URL it names to another (tests run their upstreams on
 * ephemeral loopback ports). Returns a Map, empty for null or "".
 */
export function parseUpstreamOverride(text) {
  const map = new Map();
  if (text == null || text === "") return map;
  for (const pair of String(text).split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0 || at === pair.length - 1) {
      throw new Error(`upstream override: expected FROM=TO, got ${JSON.stringify(pair)}`);
    }
    map.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
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
 * the blank line, CRLF line ends. Header values are byte strings (each char
 * code below 256), so the head's length in bytes is its length in chars.
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
  }

  /** Decides one request head (a byte string) at Unix time `now` (seconds). */
  decide(head, now) {
    const bytes = new Uint8Array(this.memory.buffer);
    const len = head.length;
    if (len <= this.inputCapacity) {
      const base = this.inputPtr;
      for (let i = 0; i < len; i++) bytes[base + i] = head.charCodeAt(i);
    }
    // A head longer than the buffer: nothing written, the true length passed (431).
    const status = this.exports.handle(len, now) >>> 0;
    const ptr = this.exports.output_ptr() >>> 0;
    const outLen = this.exports.output_len() >>> 0;
    const output = new TextDecoder().decode(new Uint8Array(this.memory.buffer, ptr, outLen));
    return { status, fields: output.split("\n") };
  }
}

/**
 * The gateway: one module instance, reused request after request (the
 * module resets its arena on entry), replaced after a trap.
 */
export class Gateway {
  /**
   * @param {WebAssembly.Module} wasmModule the compiled dist/gateway.wasm
   * @param {{ upstreamOverride?: Map<string, string>, now?: () => number }} [options]
   */
  constructor(wasmModule, options = {}) {
    this.wasmModule = wasmModule;
    this.upstreamOverride = options.upstreamOverride ?? new Map();
    this.now = options.now ?? (() => Date.now() / 1000);
    /** How many instances were made: 1, plus one after each trap. */
    this.instances = 0;
    this.instance = this.instantiate();
  }

  instantiate() {
    const instance = new ModuleInstance(this.wasmModule);
    this.instances += 1;
    return instance;
  }

  /** Answers one request: the module's rejection, or the upstream's response. */
  async fetch(request) {
    let decision;
    try {
      this.instance ??= this.instantiate();
      decision = this.instance.decide(requestHead(request), this.now());
    } catch (error) {
      // A trap is a bug in the module (ABI.md: it never traps): drop the
      // instance, make a fresh one for the next request, answer 500.
      this.instance = null;
      console.error(`gateway: module failed, instance discarded: ${error}`);
      return hostError(500, "gateway module failed");
    }
    const { status, fields } = decision;
    if (status === 200) {
      if (fields.length !== 2 || fields[0] === "") return hostError(500, "gateway module failed");
      return this.forward(request, fields[0], fields[1]);
    }
    if (fields.length < 4 || status < 200 || status > 599) return hostError(500, "gateway module failed");
    const [, , challenge, ...body] = fields;
    const headers = { "content-type": JSON_TYPE };
    if (challenge !== "") headers["www-authenticate"] = challenge;
    return new Response(body.join("\n"), { status, headers });
  }

  /** Forwards the request to `upstream` + its path and query, without its token. */
  async forward(request, upstream, subject) {
    const base = this.upstreamOverride.get(upstream) ?? upstream;
    const url = base + requestTarget(request.url);
    const headers = new Headers(request.headers);
    headers.delete("authorization");
    // fetch() sets Host from the upstream URL; the client's Host names the gateway.
    headers.delete("host");
    // Only the gateway speaks for the subject: a client's own value never passes.
    headers.delete("x-gateway-subject");
    if (subject !== "") headers.set("x-gateway-subject", subject);
    const init = { method: request.method, headers, redirect: "manual" };
    if (request.body !== null) {
      init.body = request.body; // streamed, never buffered
      init.duplex = "half";
    }
    try {
      return await fetch(url, init);
    } catch (error) {
      console.error(`gateway: upstream ${base} unavailable: ${error}`);
      return hostError(502, "upstream unavailable");
    }
  }
}
