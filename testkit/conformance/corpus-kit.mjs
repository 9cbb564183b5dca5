// What the corpus generators share (generate.mjs): the fixtures `make
// fixture` describes, HS256 signing, request heads and the outcomes a case
// states. See generate.mjs for the format.
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
/** The JSON `make fixture` writes for a fixture config (target/fixture/NAME). */
export const readFixture = (name) => JSON.parse(readFileSync(join(HERE, "..", "..", "target", "fixture", name), "utf8"));
export const EXP = 4102444800; // 2100-01-01
export const ORIGIN = "http://127.0.0.1:9201";
export const USERS = "http://127.0.0.1:9202";
const PEER = "127.0.0.1";

const b64 = (text) => Buffer.from(text).toString("base64url");
/** A compact HS256 JWS: `header` (an object) over the claims JSON text `json`, signed with `key`. */
export function sign(header, json, key) {
  const input = `${b64(JSON.stringify(header))}.${b64(json)}`;
  return `${input}.${createHmac("sha256", key).update(input).digest("base64url")}`;
}

/** A request head: request line, Host, the fields, the blank line. */
export function req(method, target, fields = [], { host = "gw.test", version = "HTTP/1.1", body = "" } = {}) {
  const hostLine = host === null ? "" : `Host: ${host}\r\n`;
  return `${method} ${target} ${version}\r\n${hostLine}${fields.map((f) => `${f}\r\n`).join("")}\r\n${body}`;
}

/** The fixtures' first issuer: the one that verifies every token unless a case says otherwise. */
export const ISSUER = "https://issuer.test";

/**
 * The fields the gateway itself sets on every forward from the loopback
 * peer: with a verified token, its subject and its issuer.
 */
function forwarded({ host = "gw.test", subject = "alice", issuer = ISSUER } = {}) {
  const set = [["x-forwarded-for", PEER], ["x-forwarded-proto", "http"]];
  if (host) set.push(["x-forwarded-host", host]);
  if (subject) set.push(["x-gateway-subject", subject]);
  if (issuer) set.push(["x-gateway-issuer", issuer]);
  return set;
}

/**
 * A forward outcome: `extra` are the client's fields that pass, `set` the
 * fields the gateway sets beside those of `forwarded`.
 */
export function forward(method, path, { origin = ORIGIN, extra = [], set = [], body = "", ...opts } = {}) {
  const headers = [...forwarded(opts), ...set, ...extra.map(([n, v]) => [n.toLowerCase(), v])].sort((a, b) =>
    a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1,
  );
  return { status: 200, upstream: { line: `${method} ${path} HTTP/1.1`, origin, headers, body } };
}
/** A refusal outcome: the status, the module's reason, and what the response must carry. */
export const refused = (status, reason, extra = {}) => ({ status, reason, ...extra });
