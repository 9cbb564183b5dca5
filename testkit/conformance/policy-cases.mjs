// The policy corpus: testkit/fixture-policies.toml (generate.mjs writes it
// to policies.jsonl).
import { EXP, ORIGIN, USERS, forward, readFixture, refused, req, sign } from "./corpus-kit.mjs";

// The policy corpus: testkit/fixture-policies.toml. Its rules: GET and HEAD
// /healthz and GET /docs public (route "site"), /internal hidden (404), /v1
// refused (403), writes under /orders need the scope orders:write, /admin a
// role admin or ops, /tenants/acme the claims tenant = "acme" and
// email_verified = true, GET /reports one of the scopes reports:read or
// admin; every other request a valid token. Tokens come from
// `Authorization: Bearer`, the cookie __Host-access or `X-Api-Token: Token
// <token>`; tenant, email (percent-encoded) and roles travel as headers,
// the verified payload as x-gateway-claims. CORS allows two origins with
// credentials. Two issuers share the kid "fixture" with different keys;
// the partner's tokens may only reach orders.
const POLICY = readFixture("fixture-policies.json");
const [FIRST, PARTNER] = POLICY.issuers.map((issuer) => ({
  iss: issuer.iss,
  kid: issuer.keys[0].kid,
  key: Buffer.from(issuer.keys[0].secret_hex, "hex"),
}));
if (FIRST.iss !== "https://issuer.test" || PARTNER.iss !== "https://partner.test" || FIRST.kid !== PARTNER.kid) {
  throw new Error("testkit/fixture-policies.toml: expected two issuers sharing one kid");
}
const REALM = POLICY.realm;
const SITE = USERS; // the route "site": http://127.0.0.1:9202/site
const APP = "https://app.test";
const DEV = "http://localhost:5173";
const EVIL = "https://evil.test";

/**
 * The recording upstream's own response fields (hosts.test.mjs sends them;
 * the native runner models them): CORS fields wider than the gateway's,
 * which it must remove, and a Vary it must add to.
 */
const RECORDER_FIELDS = [
  ["content-type", "application/json"],
  ["x-recorder", "1"],
  ["access-control-allow-origin", "*"],
  ["access-control-allow-credentials", "true"],
  ["access-control-allow-methods", "*"],
  ["access-control-allow-headers", "*"],
  ["access-control-expose-headers", "x-recorder"],
  ["vary", "Accept-Encoding"],
];

/**
 * A token of `issuer` (its iss, an exp in 2100) over `claims`, or over raw
 * claims JSON text; signed with `signer`'s key under `kid` (none: no kid).
 */
function ptoken(claims, { issuer = FIRST, signer = issuer, kid = signer.kid } = {}) {
  const json = typeof claims === "string" ? claims : JSON.stringify({ iss: issuer.iss, exp: EXP, ...claims });
  return sign(kid === null ? { alg: "HS256", typ: "JWT" } : { alg: "HS256", typ: "JWT", kid }, json, signer.key);
}
/** A first-issuer token for orders, subject alice, with `claims` besides. */
const alice = (claims = {}) => ptoken({ aud: "orders", sub: "alice", ...claims });
/** The same as raw claims text: `rest` is JSON members spelled as an encoder may (escapes). */
const aliceRaw = (rest) => ptoken(`{"iss":"${FIRST.iss}","exp":${EXP},"aud":"orders","sub":"alice",${rest}}`);
const ALICE_P = alice();
const bearer = (t) => `Authorization: Bearer ${t}`;

/**
 * A forward of a token's request: its subject, its verified payload in
 * x-gateway-claims, and `claims` ([header, value]) as the claim headers.
 */
function granted(method, path, t, { origin = ORIGIN, subject = "alice", issuer = FIRST.iss, claims = [], extra = [], body = "" } = {}) {
  return forward(method, path, { origin, subject, issuer, extra, body, set: [["x-gateway-claims", t.split(".")[1]], ...claims] });
}
/** A forward of a public rule to the site: no subject, no issuer, no claims. */
const publicForward = (method, path, extra = []) => forward(method, path, { origin: SITE, subject: null, issuer: null, extra });

/** The statuses and reasons that carry no RFC 6750 error code, and those that are insufficient_scope. */
const NO_CODE = new Set(["bearer token required", "authorization scheme must be Bearer"]);
const SCOPE_REASONS = new Set(["required scope missing", "required role missing", "required claim value missing"]);
/**
 * The module's answer, with the fields ABI.md ("Answer") gives it: a
 * `WWW-Authenticate` challenge for a 401 and for every answer with an
 * error code (RFC 6750 section 3; `scope` names the rule's scopes), none
 * for a denied path or a refused preflight; JSON.
 */
function answer(status, reason, { scope } = {}) {
  const code = status === 400 ? "invalid_request" : status === 401 ? (NO_CODE.has(reason) ? "" : "invalid_token") : SCOPE_REASONS.has(reason) ? "insufficient_scope" : "";
  const json = ["content-type", "application/json"];
  if (status !== 401 && code === "") return refused(status, reason, { response_headers: [json], absent_response_headers: ["www-authenticate"] });
  let challenge = `Bearer realm="${REALM}"`;
  if (code) challenge += `, error="${code}", error_description="${reason}"`;
  if (scope) challenge += `, scope="${scope}"`;
  return refused(status, reason, { response_headers: [["www-authenticate", challenge], json] });
}

/**
 * The CORS fields the gateway owns on a response: the upstream's own
 * `Access-Control-Allow-*` and `-Expose-Headers` never reach the client
 * (worker/src/http/cors.rs).
 */
const CORS_FIELDS = RECORDER_FIELDS.map(([name]) => name).filter((name) => name.startsWith("access-control-"));
/**
 * `outcome` as an allowed `origin` receives it: the gateway's CORS fields
 * only; on a forward, `Vary: Origin` after the upstream's own Vary.
 */
function readableBy(origin, outcome) {
  const vary = outcome.upstream ? "Accept-Encoding, Origin" : "Origin";
  const cors = [["access-control-allow-origin", origin], ["access-control-allow-credentials", "true"], ["access-control-expose-headers", "www-authenticate"], ["vary", vary]];
  const absent = CORS_FIELDS.filter((name) => !cors.some(([n]) => n === name));
  return {
    ...outcome,
    response_headers: [...(outcome.response_headers ?? []), ...cors],
    absent_response_headers: [...(outcome.absent_response_headers ?? []), ...absent],
  };
}
/** `outcome` with no CORS field: none added, the upstream's own removed (its Vary kept). */
function unreadable(outcome) {
  const vary = outcome.upstream ? [["vary", "Accept-Encoding"]] : [];
  return {
    ...outcome,
    response_headers: [...(outcome.response_headers ?? []), ...vary],
    absent_response_headers: [...(outcome.absent_response_headers ?? []), ...CORS_FIELDS],
  };
}
/**
 * A preflight, and the gateway's 204 to it: exactly the configured fields,
 * `Vary: Origin` and no other Vary (a response to OPTIONS is not cached,
 * RFC 9110 section 9.3.7), no challenge, no body.
 */
const preflight = (target, origin, method, headers = null, fields = []) =>
  req("OPTIONS", target, [`Origin: ${origin}`, `Access-Control-Request-Method: ${method}`, ...(headers === null ? [] : [`Access-Control-Request-Headers: ${headers}`]), ...fields]);
const preflightAnswered = (origin) => ({
  status: 204,
  reason: null,
  response_headers: [
    ["access-control-allow-origin", origin],
    ["access-control-allow-credentials", "true"],
    ["access-control-expose-headers", "www-authenticate"],
    ["access-control-allow-methods", "GET, POST, PUT, PATCH, DELETE"],
    ["access-control-allow-headers", "authorization, content-type, x-api-token"],
    ["access-control-max-age", "600"],
    ["vary", "Origin"],
  ],
  absent_response_headers: ["www-authenticate"],
});
const PREFLIGHT_REFUSED = unreadable(answer(403, "cors preflight not allowed"));

/** `outcome` pinned on each of `hosts` (keys of a `hosts` outcome). */
const sameOn = (hosts, outcome) => Object.fromEntries(hosts.map((host) => [host, outcome]));
const MISSING = answer(401, "bearer token required");
const READS_ANOTHER_RULE = answer(400, "path meets another rule on some servers");
const METHOD_READS_ANOTHER_RULE = answer(400, "method override meets another rule");
const METHOD_CASE = answer(400, "method not in upper case");
const TYPE_MISMATCH = answer(401, "claim is not of its header's type");
const AMBIGUOUS_COOKIE = answer(400, "token cookie spelled ambiguously");
const SCOPE_MISSING = answer(403, "required scope missing", { scope: "orders:write" });
const ROLE_MISSING = answer(403, "required role missing");
const VALUE_MISSING = answer(403, "required claim value missing");
const UNSAFE_CLAIM = answer(401, "claim cannot travel intact in a header");
const MALFORMED_SOURCE = answer(400, "malformed token cookie or header");
const TWO_TOKENS = answer(400, "more than one token");
/** A write under /orders with `t`, and its forward. */
const write = (t, fields = []) => req("DELETE", "/orders/7", [bearer(t), ...fields]);
const written = (t, opts) => granted("DELETE", "/orders-svc/orders/7", t, opts);
const admin = (t) => req("GET", "/admin/users", [bearer(t)]);
const tenant = (t, target = "/tenants/acme/users") => req("GET", target, [bearer(t)]);
const profile = (t, fields = []) => req("GET", "/profile", [bearer(t), ...fields]);
const BOB = ptoken({ aud: "orders", sub: "bob" }, { issuer: PARTNER });
const OTHER_ALICE = alice({ jti: "2" });

export const POLICY_CASES = [
  // Public paths: no token needed, none read, none forwarded.
  ["public path without a token", req("GET", "/healthz"), [unreadable(publicForward("GET", "/site/healthz"))]],
  ["public path: a valid token is neither read nor forwarded", req("GET", "/healthz", [bearer(ALICE_P)]), [publicForward("GET", "/site/healthz")]],
  ["public path: a forged token is not read", req("GET", "/healthz", ["Authorization: Bearer forged.token.here"]), [publicForward("GET", "/site/healthz")]],
  ["public path: a malformed token cookie is not read and does not travel", req("GET", "/healthz", ["Cookie: theme=dark; __Host-access=not a token"]), [publicForward("GET", "/site/healthz", [["cookie", "theme=dark"]])]],
  ["public path: client gateway fields dropped", req("GET", "/healthz", ["X-Gateway-Claims: e30", "X_Gateway_Tenant: acme", "X-User-Email: root@evil.test", "X-Gateway-Subject: admin", "X-Api-Token: Token forged"]), [publicForward("GET", "/site/healthz")]],
  ["public path: two Authorization fields are not read", req("GET", "/healthz", [bearer(ALICE_P), "Authorization: Bearer forged.token.here"]), [publicForward("GET", "/site/healthz")]],
  ["public path reached through dot segments", req("GET", "/internal/../healthz"), [publicForward("GET", "/site/healthz")]],
  ["public path with an encoded unreserved byte", req("GET", "/%68ealthz"), [publicForward("GET", "/site/healthz")]],
  ["public path keeps its query", req("GET", "/healthz?probe=1"), [publicForward("GET", "/site/healthz?probe=1")]],
  ["public prefix", req("GET", "/docs/guide/../intro"), [publicForward("GET", "/site/docs/intro")]],
  ["public prefix only on a segment boundary", req("GET", "/docsx"), [MISSING]],
  ["public exact path: a trailing slash reads as the same path to Express", req("GET", "/healthz/"), [READS_ANOTHER_RULE]],
  ["public path with parameters: a server that strips them reads the public path, so it is refused", req("GET", "/healthz;v=1"), [READS_ANOTHER_RULE]],
  ["public path: another method needs a token", req("POST", "/healthz", ["Content-Length: 0"]), [MISSING]],
  // HEAD: a rule names it or it needs a token like any other method; a
  // refused HEAD gets its status and fields without a body, so the next
  // request on the connection is read as a request of its own.
  ["public path: HEAD where the rule names it", req("HEAD", "/healthz"), [unreadable(publicForward("HEAD", "/site/healthz"))]],
  ["public prefix for GET: HEAD too, as every server answers HEAD with the GET handler", req("HEAD", "/docs/guide"), [unreadable(publicForward("HEAD", "/site/docs/guide"))]],
  // Content on a GET or HEAD is refused before any rule: it has no defined
  // meaning there, some servers read it as the next request, and workerd's
  // fetch() cannot send it, so no host forwards it.
  ["HEAD with content is refused, even on a public path", req("HEAD", "/healthz", ["Content-Length: 5"], { body: "hello" }), [answer(400, "content on a GET or HEAD request")]],
  ["GET with content is refused, even on a public path", req("GET", "/healthz", ["Content-Length: 5"], { body: "hello" }), [answer(400, "content on a GET or HEAD request")]],
  ["GET with chunked content is refused", req("GET", "/orders/7", [bearer(ALICE_P), "Transfer-Encoding: chunked"], { body: "5\r\nhello\r\n0\r\n\r\n" }), [answer(400, "content on a GET or HEAD request")]],
  ["GET with a zero Content-Length frames no content: forwarded", req("GET", "/healthz", ["Content-Length: 0"]), [publicForward("GET", "/site/healthz")]],
  ["HEAD with a valid token is forwarded as a read", req("HEAD", "/orders/7", [bearer(ALICE_P)]), [granted("HEAD", "/orders-svc/orders/7", ALICE_P)]],
  ["HEAD with a forged token is refused", req("HEAD", "/orders/7", ["Authorization: Bearer forged.token.here"]), [answer(401, "token is not canonical base64url")]],
  [
    "a refused HEAD sends no body: the request after it on the connection is answered as its own",
    req("HEAD", "/orders/7") + req("GET", "/healthz"),
    [MISSING, publicForward("GET", "/site/healthz")],
  ],
  [
    "a method in lower case is refused",
    req("get", "/healthz"),
    [{ hosts: { ...sameOn(["module", "host-sim", "wasi-http"], METHOD_CASE), workerd: { front_end: true }, envoy: { front_end: true } }, why: "RFC 9110 section 9.1 makes methods case-sensitive, but Flask, Django and ASP.NET Core fold them, so the module refuses one with a lower-case letter (hyper, in host-sim and wasmtime serve, passes it on); workerd answers 501 and Envoy 400 before any module runs" }],
  ],
  ["dot segments out of a public path need a token", req("GET", "/healthz/../orders/7"), [MISSING]],
  ["an encoded slash never reaches a rule", req("GET", "/docs%2f..%2forders"), [answer(400, "encoded slash or backslash in path")]],

  // Denied paths: never forwarded, no challenge.
  ["hidden path: 404 whatever the token", req("GET", "/internal/metrics", [bearer(ALICE_P)]), [answer(404, "not found")]],
  ["hidden path without a token", req("GET", "/internal"), [answer(404, "not found")]],
  ["hidden path reached through dot segments", req("GET", "/docs/../internal/metrics"), [answer(404, "not found")]],
  ["hidden path with an encoded unreserved byte", req("GET", "/%69nternal/x"), [answer(404, "not found")]],
  // Tomcat, Jetty and Spring route /internal;x/metrics as /internal/metrics.
  ["hidden path behind a path parameter", req("GET", "/internal;x/metrics", [bearer(ALICE_P)]), [READS_ANOTHER_RULE]],
  ["hidden path behind an empty path parameter", req("GET", "/internal;/metrics"), [READS_ANOTHER_RULE]],
  ["hidden path behind a session parameter", req("GET", "/internal;jsessionid=1"), [READS_ANOTHER_RULE]],
  // A server (or a framework before it) that decodes once or twice before it
  // strips parameters reads %3B and %253B as ";" there.
  ["hidden path behind an encoded path parameter", req("GET", "/internal%3Bx/metrics", [bearer(ALICE_P)]), [READS_ANOTHER_RULE]],
  ["hidden path behind an encoded path parameter in lower case", req("GET", "/internal%3bjsessionid=1"), [READS_ANOTHER_RULE]],
  ["hidden path behind a double-encoded path parameter", req("GET", "/internal%253Bx/metrics", [bearer(ALICE_P)]), [answer(400, "double-encoded character in path")]],
  ["hidden path behind a triple-encoded path parameter in lower case", req("GET", "/internal%25253b/metrics"), [answer(400, "double-encoded character in path")]],
  ["public path with an encoded parameter", req("GET", "/healthz%3Bv=1"), [READS_ANOTHER_RULE]],
  ["parameters that change no rule are forwarded as they are", req("GET", "/orders;v=2/7", [bearer(ALICE_P)]), [granted("GET", "/orders-svc/orders;v=2/7", ALICE_P)]],
  ["encoded parameters that change no rule are forwarded as they are", req("GET", "/orders%3bv=2/7;x", [bearer(ALICE_P)]), [granted("GET", "/orders-svc/orders%3Bv=2/7;x", ALICE_P)]],
  ["parameters inside a hidden path keep it hidden", req("GET", "/internal/metrics;x", [bearer(ALICE_P)]), [answer(404, "not found")]],
  ["hidden prefix only on a segment boundary", req("GET", "/internals", [bearer(ALICE_P)]), [granted("GET", "/orders-svc/internals", ALICE_P)]],
  ["a hidden path in another case: Express and ASP.NET Core read it as the rule's path", req("GET", "/Internal/x", [bearer(ALICE_P)]), [READS_ANOTHER_RULE]],
  ["refused path: 403 whatever the token", req("DELETE", "/v1/orders/7", [bearer(alice({ scope: "orders:write" }))]), [answer(403, "forbidden")]],
  ["refused path without a token", req("GET", "/v1"), [answer(403, "forbidden")]],
  ["hidden path answered readably to an allowed origin", req("GET", "/internal", [`Origin: ${APP}`]), [readableBy(APP, answer(404, "not found"))]],

  // Scopes: writes under /orders need orders:write.
  ["scope in a scope string", write(alice({ scope: "orders:read orders:write" })), [written(alice({ scope: "orders:read orders:write" }))]],
  ["scope in an scp string", write(alice({ scp: "orders:write" })), [written(alice({ scp: "orders:write" }))]],
  ["scope in an scp array", write(alice({ scp: ["orders:read", "orders:write"] })), [written(alice({ scp: ["orders:read", "orders:write"] }))]],
  ["scope in a scope array", write(alice({ scope: ["orders:write"] })), [written(alice({ scope: ["orders:write"] }))]],
  ["scope after elements of other types", write(alice({ scp: [1, { s: "orders:write" }, "orders:write"] })), [written(alice({ scp: [1, { s: "orders:write" }, "orders:write"] }))]],
  [
    "scope on a write with a body",
    req("POST", "/orders", [bearer(alice({ scope: "orders:write" })), "Content-Type: application/json", "Content-Length: 2"], { body: "{}" }),
    [granted("POST", "/orders-svc/orders", alice({ scope: "orders:write" }), { extra: [["content-type", "application/json"]], body: "{}" })],
  ],
  ["scope missing", write(alice({ scope: "orders:read" })), [SCOPE_MISSING]],
  ["no scope claim", write(ALICE_P), [SCOPE_MISSING]],
  ["scope of the wrong type: a number", write(alice({ scope: 42 })), [SCOPE_MISSING]],
  ["scope of the wrong type: an object", write(alice({ scope: { "orders:write": true } })), [SCOPE_MISSING]],
  ["scope of the wrong type: a boolean", write(alice({ scp: true })), [SCOPE_MISSING]],
  ["scope in a nested array", write(alice({ scp: [["orders:write"]] })), [SCOPE_MISSING]],
  ["a prefix of the scope", write(alice({ scope: "orders:writ" })), [SCOPE_MISSING]],
  ["the scope as a prefix", write(alice({ scope: "orders:writer" })), [SCOPE_MISSING]],
  ["the scope as a suffix", write(alice({ scope: "xorders:write" })), [SCOPE_MISSING]],
  ["the scope in another case", write(alice({ scope: "Orders:Write" })), [SCOPE_MISSING]],
  ["scopes separated by a comma", write(alice({ scope: "orders:read,orders:write" })), [SCOPE_MISSING]],
  ["scopes separated by a tab", write(alice({ scope: "orders:read\torders:write" })), [SCOPE_MISSING]],
  ["scope spelled with escapes", write(aliceRaw(String.raw`"scope":"orders\u003awrite"`)), [written(aliceRaw(String.raw`"scope":"orders\u003awrite"`))]],
  ["scopes separated by an escaped space", write(aliceRaw(String.raw`"scope":"orders:read\u0020orders:write"`)), [written(aliceRaw(String.raw`"scope":"orders:read\u0020orders:write"`))]],
  ["scp element spelled with escapes", write(aliceRaw(String.raw`"scp":["\u006frders:write"]`)), [written(aliceRaw(String.raw`"scp":["\u006frders:write"]`))]],
  ["scope twice, once spelled with escapes", write(aliceRaw(String.raw`"scope":"orders:read","sc\u006fpe":"orders:write"`)), [answer(401, "malformed claims")]],
  ["a lone surrogate makes the scope string no text", write(aliceRaw(String.raw`"scope":"orders:write \ud800"`)), [SCOPE_MISSING]],
  ["a read needs no scope", req("GET", "/orders/7", [bearer(ALICE_P)]), [granted("GET", "/orders-svc/orders/7", ALICE_P)]],
  ["the scope rule applies to the normalized path", req("DELETE", "/reports/../orders/7", [bearer(ALICE_P)]), [SCOPE_MISSING]],
  ["one of several scopes: the first", req("GET", "/reports", [bearer(alice({ scope: "reports:read" }))]), [granted("GET", "/orders-svc/reports", alice({ scope: "reports:read" }))]],
  ["one of several scopes: the second", req("GET", "/reports/q1", [bearer(alice({ scp: ["admin"] }))]), [granted("GET", "/orders-svc/reports/q1", alice({ scp: ["admin"] }))]],
  ["one of several scopes: none", req("GET", "/reports", [bearer(alice({ scope: "reports:write" }))]), [answer(403, "required scope missing", { scope: "reports:read admin" })]],
  ["a missing scope answered readably to an allowed origin", write(ALICE_P, [`Origin: ${APP}`]), [readableBy(APP, SCOPE_MISSING)]],

  // Roles: /admin needs admin or ops in the roles claim (which also travels as x-gateway-roles).
  ["role in an array", admin(alice({ roles: ["viewer", "ops"] })), [granted("GET", "/orders-svc/admin/users", alice({ roles: ["viewer", "ops"] }), { claims: [["x-gateway-roles", "viewer,ops"]] })]],
  ["role as a string", admin(alice({ roles: "admin" })), [granted("GET", "/orders-svc/admin/users", alice({ roles: "admin" }), { claims: [["x-gateway-roles", "admin"]] })]],
  ["role spelled with escapes", admin(aliceRaw(String.raw`"roles":["\u0061dmin"]`)), [granted("GET", "/orders-svc/admin/users", aliceRaw(String.raw`"roles":["\u0061dmin"]`), { claims: [["x-gateway-roles", "admin"]] })]],
  ["role missing", admin(alice({ roles: ["viewer"] })), [ROLE_MISSING]],
  ["no roles claim", admin(ALICE_P), [ROLE_MISSING]],
  ["roles in one string are one role", admin(alice({ roles: "viewer admin" })), [ROLE_MISSING]],
  ["role in another case", admin(alice({ roles: ["Admin"] })), [ROLE_MISSING]],
  ["role of the wrong type: an object", admin(alice({ roles: { admin: true } })), [ROLE_MISSING]],
  ["role of the wrong type: a boolean", admin(alice({ roles: true })), [ROLE_MISSING]],
  ["role in a nested array", admin(alice({ roles: [["admin"]] })), [ROLE_MISSING]],
  ["role rule only on a segment boundary", req("GET", "/administrator", [bearer(ALICE_P)]), [granted("GET", "/orders-svc/administrator", ALICE_P)]],

  // Claim values: /tenants/acme needs tenant "acme" and email_verified true.
  ["claim values met", tenant(alice({ tenant: "acme", email_verified: true })), [granted("GET", "/orders-svc/tenants/acme/users", alice({ tenant: "acme", email_verified: true }), { claims: [["x-gateway-tenant", "acme"]] })]],
  ["claim value spelled with escapes", tenant(aliceRaw(String.raw`"tenant":"\u0061cme","email_verified":true`)), [granted("GET", "/orders-svc/tenants/acme/users", aliceRaw(String.raw`"tenant":"\u0061cme","email_verified":true`), { claims: [["x-gateway-tenant", "acme"]] })]],
  ["a boolean claim as a string", tenant(alice({ tenant: "acme", email_verified: "true" })), [VALUE_MISSING]],
  ["a boolean claim false", tenant(alice({ tenant: "acme", email_verified: false })), [VALUE_MISSING]],
  ["a boolean claim as a number", tenant(alice({ tenant: "acme", email_verified: 1 })), [VALUE_MISSING]],
  ["a string claim in another case", tenant(alice({ tenant: "ACME", email_verified: true })), [VALUE_MISSING]],
  ["a string claim with a trailing space", tenant(alice({ tenant: "acme ", email_verified: true })), [VALUE_MISSING]],
  ["a string claim as an array", tenant(alice({ tenant: ["acme"], email_verified: true })), [VALUE_MISSING]],
  ["a claim missing", tenant(alice({ email_verified: true })), [VALUE_MISSING]],
  ["the claim rule through an encoded path", tenant(ALICE_P, "/tenants/%61cme"), [VALUE_MISSING]],
  ["another tenant's path is not the rule's", tenant(alice({ tenant: "globex" }), "/tenants/acmecorp"), [granted("GET", "/orders-svc/tenants/acmecorp", alice({ tenant: "globex" }), { claims: [["x-gateway-tenant", "globex"]] })]],

  // Claims to headers: tenant and roles as they are, email percent-encoded.
  [
    "claims as headers",
    profile(alice({ tenant: "acme", email: "alice@example.com", roles: ["viewer", "editor"] })),
    [granted("GET", "/orders-svc/profile", alice({ tenant: "acme", email: "alice@example.com", roles: ["viewer", "editor"] }), { claims: [["x-gateway-tenant", "acme"], ["x-user-email", "alice@example.com"], ["x-gateway-roles", "viewer,editor"]] })],
  ],
  ["claim name spelled with escapes", profile(aliceRaw(String.raw`"t\u0065nant":"acme"`)), [granted("GET", "/orders-svc/profile", aliceRaw(String.raw`"t\u0065nant":"acme"`), { claims: [["x-gateway-tenant", "acme"]] })]],
  ["a claim header's claim twice", profile(aliceRaw(String.raw`"tenant":"acme","t\u0065nant":"globex"`)), [answer(401, "malformed claims")]],
  ["inner spaces travel", profile(alice({ tenant: "Acme Corp" })), [granted("GET", "/orders-svc/profile", alice({ tenant: "Acme Corp" }), { claims: [["x-gateway-tenant", "Acme Corp"]] })]],
  ["a number where the header's type is string", profile(alice({ tenant: 42 })), [TYPE_MISMATCH]],
  ["a boolean where the header's type is string: never read as the string \"true\"", profile(alice({ tenant: true })), [TYPE_MISMATCH]],
  ["an array where the header's type is string", profile(alice({ tenant: ["acme"] })), [TYPE_MISMATCH]],
  ["a string typed as one keeps its commas", profile(alice({ tenant: "Acme, Inc" })), [granted("GET", "/orders-svc/profile", alice({ tenant: "Acme, Inc" }), { claims: [["x-gateway-tenant", "Acme, Inc"]] })]],
  ["an empty string typed as one is an empty value", profile(alice({ tenant: "" })), [granted("GET", "/orders-svc/profile", alice({ tenant: "" }), { claims: [["x-gateway-tenant", ""]] })]],
  ["a list typed as one", profile(alice({ groups: ["staff", "admin"] })), [granted("GET", "/orders-svc/profile", alice({ groups: ["staff", "admin"] }), { claims: [["x-gateway-groups", "staff,admin"]] })]],
  ["a string where the header's type is list: never read as two", profile(alice({ groups: "staff,admin" })), [TYPE_MISMATCH]],
  ["a string where the header's type is list", profile(alice({ groups: "staff" })), [TYPE_MISMATCH]],
  ["an untyped string with a comma would read as a list", profile(alice({ roles: "staff,admin" })), [UNSAFE_CLAIM]],
  ["an untyped string with a comma, percent-encoded", profile(alice({ email: "a,b@x.test" })), [granted("GET", "/orders-svc/profile", alice({ email: "a,b@x.test" }), { claims: [["x-user-email", "a%2Cb@x.test"]] })]],
  ["an empty element would read as none", profile(alice({ roles: [""] })), [UNSAFE_CLAIM]],
  ["an empty element among others", profile(alice({ groups: ["staff", ""] })), [UNSAFE_CLAIM]],
  ["a number claim as an untyped header", profile(alice({ roles: 42 })), [granted("GET", "/orders-svc/profile", alice({ roles: 42 }), { claims: [["x-gateway-roles", "42"]] })]],
  ["an array of numbers and booleans", profile(alice({ roles: [7, false] })), [granted("GET", "/orders-svc/profile", alice({ roles: [7, false] }), { claims: [["x-gateway-roles", "7,false"]] })]],
  ["a null claim sets no header", profile(alice({ tenant: null }), ["X-Gateway-Tenant: forged"]), [granted("GET", "/orders-svc/profile", alice({ tenant: null }))]],
  ["an empty array sets no header, like an absent claim", profile(alice({ roles: [] }), ["X-Gateway-Roles: admin"]), [granted("GET", "/orders-svc/profile", alice({ roles: [] }))]],
  ["an empty array of a list header sets no header", profile(alice({ groups: [] })), [granted("GET", "/orders-svc/profile", alice({ groups: [] }))]],
  ["percent-encoded: non-ASCII", profile(alice({ email: "zoë@example.com" })), [granted("GET", "/orders-svc/profile", alice({ email: "zoë@example.com" }), { claims: [["x-user-email", "zo%C3%AB@example.com"]] })]],
  ["percent-encoded: CR LF", profile(alice({ email: "a@x.test\r\nX-Admin: 1" })), [granted("GET", "/orders-svc/profile", alice({ email: "a@x.test\r\nX-Admin: 1" }), { claims: [["x-user-email", "a@x.test%0D%0AX-Admin:%201"]] })]],
  ["percent-encoded: a percent and spaces", profile(alice({ email: " 50% off@x.test " })), [granted("GET", "/orders-svc/profile", alice({ email: " 50% off@x.test " }), { claims: [["x-user-email", "%2050%25%20off@x.test%20"]] })]],
  ["percent-encoded: a comma inside an array element", profile(alice({ email: ["a,b@x.test", "c@x.test"] })), [granted("GET", "/orders-svc/profile", alice({ email: ["a,b@x.test", "c@x.test"] }), { claims: [["x-user-email", "a%2Cb@x.test,c@x.test"]] })]],
  ["percent-encoded: an escaped control", profile(aliceRaw(String.raw`"email":"a\u0000@x.test"`)), [granted("GET", "/orders-svc/profile", aliceRaw(String.raw`"email":"a\u0000@x.test"`), { claims: [["x-user-email", "a%00@x.test"]] })]],
  ["percent-encoded: an object is still refused", profile(alice({ email: { address: "a@x.test" } })), [UNSAFE_CLAIM]],
  ["hostile claim: CR LF", profile(alice({ tenant: "acme\r\nX-Admin: 1" })), [UNSAFE_CLAIM]],
  ["hostile claim: an escaped NUL", profile(aliceRaw(String.raw`"tenant":"acme\u0000"`)), [UNSAFE_CLAIM]],
  ["hostile claim: non-ASCII", profile(alice({ tenant: "zoë" })), [UNSAFE_CLAIM]],
  ["hostile claim: escaped non-ASCII", profile(aliceRaw(String.raw`"tenant":"caf\u00e9"`)), [UNSAFE_CLAIM]],
  ["hostile claim: a leading space", profile(alice({ tenant: " acme" })), [UNSAFE_CLAIM]],
  ["hostile claim: a trailing space", profile(alice({ tenant: "acme " })), [UNSAFE_CLAIM]],
  ["hostile claim: a tab", profile(alice({ tenant: "ac\tme" })), [UNSAFE_CLAIM]],
  ["hostile claim: a comma inside an array element", profile(alice({ roles: ["viewer", "admin,ops"] })), [UNSAFE_CLAIM]],
  ["hostile claim: a role check passes, its header cannot travel", admin(alice({ roles: ["admin", "a,b"] })), [UNSAFE_CLAIM]],
  ["hostile claim: an object", profile(alice({ roles: { id: "acme" } })), [UNSAFE_CLAIM]],
  ["hostile claim: an array of objects", profile(alice({ roles: [{ role: "admin" }] })), [UNSAFE_CLAIM]],
  ["hostile claim: a lone surrogate", profile(aliceRaw(String.raw`"tenant":"\ud800"`)), [UNSAFE_CLAIM]],
  [
    "every client spelling of the claim headers is dropped",
    profile(alice({ tenant: "acme" }), ["X-Gateway-Tenant: evil", "x_gateway_tenant: evil", "X-USER-EMAIL: root@evil.test", "x_user_email: root@evil.test", "X-Gateway-Roles: admin", "X_Gateway_Claims: e30", "x-gateway-claims: e30"]),
    [granted("GET", "/orders-svc/profile", alice({ tenant: "acme" }), { claims: [["x-gateway-tenant", "acme"]] })],
  ],
  ["claim headers the token does not fill stay dropped", profile(ALICE_P, ["X-Gateway-Roles: admin", "X-User-Email: root@evil.test", "X-Gateway-Tenant: acme"]), [granted("GET", "/orders-svc/profile", ALICE_P)]],

  // Token sources: the __Host-access cookie, X-Api-Token with its prefix, Authorization.
  ["token in the cookie among others", req("GET", "/orders/7", [`Cookie: theme=dark; __Host-access=${ALICE_P}; lang=en`]), [granted("GET", "/orders-svc/orders/7", ALICE_P, { extra: [["cookie", "theme=dark; lang=en"]] })]],
  ["token in the cookie alone", req("GET", "/orders/7", [`Cookie: __Host-access=${ALICE_P}`]), [granted("GET", "/orders-svc/orders/7", ALICE_P)]],
  ["token cookie quoted", req("GET", "/orders/7", [`Cookie: __Host-access="${ALICE_P}"`]), [granted("GET", "/orders-svc/orders/7", ALICE_P)]],
  ["token cookie twice with one value", req("GET", "/orders/7", [`Cookie: __Host-access=${ALICE_P}; a=1; __Host-access=${ALICE_P}`]), [granted("GET", "/orders-svc/orders/7", ALICE_P, { extra: [["cookie", "a=1"]] })]],
  ["token cookie twice with two values", req("GET", "/orders/7", [`Cookie: __Host-access=${ALICE_P}; __Host-access=${OTHER_ALICE}`]), [TWO_TOKENS]],
  [
    "token cookie in a second Cookie field",
    req("GET", "/orders/7", ["Cookie: theme=dark", `Cookie: __Host-access=${ALICE_P}`]),
    [{ hosts: { ...sameOn(["module", "host-sim", "envoy", "wasi-http"], granted("GET", "/orders-svc/orders/7", ALICE_P, { extra: [["cookie", "theme=dark"]] })), workerd: AMBIGUOUS_COOKIE }, why: "an HTTP/1.1 client sends one Cookie field (RFC 6265 section 5.4); hyper (host-sim, wasmtime serve) and Envoy keep two apart, and the module reads both; workerd's Headers (Fetch) join them with \", \", so its module reads one pair, theme, whose value holds the token cookie after a comma, which servers that split on commas read as the token cookie: refused, nothing is forwarded" }],
  ],
  ["token cookie name in another case: ASP.NET Core reads it as the token cookie", req("GET", "/orders/7", [`Cookie: __host-access=${ALICE_P}`]), [AMBIGUOUS_COOKIE]],
  ["token cookie not a token", req("GET", "/orders/7", ["Cookie: __Host-access=a,b"]), [MALFORMED_SOURCE]],
  ["token cookie empty", req("GET", "/orders/7", ["Cookie: theme=dark; __Host-access="]), [MALFORMED_SOURCE]],
  ["token cookie and Authorization with one token", req("GET", "/orders/7", [bearer(ALICE_P), `Cookie: __Host-access=${ALICE_P}`]), [granted("GET", "/orders-svc/orders/7", ALICE_P)]],
  ["token cookie conflicting with Authorization", req("GET", "/orders/7", [bearer(ALICE_P), `Cookie: __Host-access=${OTHER_ALICE}`]), [TWO_TOKENS]],
  ["token cookie beside another scheme", req("GET", "/orders/7", ["Authorization: Basic YTpi", `Cookie: __Host-access=${ALICE_P}`]), [granted("GET", "/orders-svc/orders/7", ALICE_P)]],
  ["another scheme alone", req("GET", "/orders/7", ["Authorization: Basic YTpi"]), [answer(401, "authorization scheme must be Bearer")]],
  ["another cookie that is not ASCII", req("GET", "/orders/7", [`Cookie: theme=d\u00c3\u00a4rk; __Host-access=${ALICE_P}`]), [answer(400, "invalid header field value")]],
  ["token cookie over max_token_bytes", req("GET", "/orders/7", [`Cookie: __Host-access=${alice({ pad: "p".repeat(POLICY.max_token_bytes) })}`]), [answer(401, "token longer than the gateway accepts")]],
  ["token in the header with its prefix", req("GET", "/orders/7", [`X-Api-Token: Token ${ALICE_P}`]), [granted("GET", "/orders-svc/orders/7", ALICE_P)]],
  ["token header prefix in another case", req("GET", "/orders/7", [`x-api-token: TOKEN ${ALICE_P}`]), [granted("GET", "/orders-svc/orders/7", ALICE_P)]],
  ["token header without its prefix", req("GET", "/orders/7", [`X-Api-Token: ${ALICE_P}`]), [MALFORMED_SOURCE]],
  ["token header with another prefix", req("GET", "/orders/7", [`X-Api-Token: Bearer ${ALICE_P}`]), [MALFORMED_SOURCE]],
  ["token header empty after its prefix", req("GET", "/orders/7", ["X-Api-Token: Token"]), [MALFORMED_SOURCE]],
  [
    "token header twice",
    req("GET", "/orders/7", [`X-Api-Token: Token ${ALICE_P}`, `X-Api-Token: Token ${ALICE_P}`]),
    [{ hosts: { ...sameOn(["module", "host-sim", "envoy", "wasi-http"], TWO_TOKENS), workerd: MALFORMED_SOURCE }, why: "workerd's Headers (Fetch) join the two fields into one value, \"Token <t>, Token <t>\", which holds no b64token: 400 either way" }],
  ],
  ["token header conflicting with Authorization", req("GET", "/orders/7", [bearer(ALICE_P), `X-Api-Token: Token ${OTHER_ALICE}`]), [TWO_TOKENS]],
  ["token header spelled with underscores is no source and never travels", req("GET", "/orders/7", [bearer(ALICE_P), `X_Api_Token: Token ${OTHER_ALICE}`]), [granted("GET", "/orders-svc/orders/7", ALICE_P)]],
  ["one token in all three places", req("GET", "/orders/7", [bearer(ALICE_P), `X-Api-Token: Token ${ALICE_P}`, `Cookie: __Host-access=${ALICE_P}`]), [granted("GET", "/orders-svc/orders/7", ALICE_P)]],
  ["the query is never a source", req("GET", `/orders/7?access_token=${ALICE_P}`), [MISSING]],

  // Two issuers sharing the kid "fixture": the token's iss picks the keys.
  ["partner token for its audience", req("GET", "/orders/7", [bearer(BOB)]), [granted("GET", "/orders-svc/orders/7", BOB, { subject: "bob", issuer: PARTNER.iss })]],
  ["partner token for an audience it may not use", req("GET", "/invoices", [bearer(ptoken({ aud: "billing", sub: "bob" }, { issuer: PARTNER }))]), [answer(401, "no route for audience")]],
  ["partner token: the first audience it may use", req("GET", "/x", [bearer(ptoken({ aud: ["billing", "orders"], sub: "bob" }, { issuer: PARTNER }))]), [granted("GET", "/orders-svc/x", ptoken({ aud: ["billing", "orders"], sub: "bob" }, { issuer: PARTNER }), { subject: "bob", issuer: PARTNER.iss })]],
  ["first issuer: the first routed audience", req("GET", "/x", [bearer(alice({ aud: ["billing", "orders"] }))]), [granted("GET", "/billing-svc/x", alice({ aud: ["billing", "orders"] }))]],
  ["partner token signed with the first issuer's key", req("GET", "/orders/7", [bearer(ptoken({ aud: "orders", sub: "bob" }, { issuer: PARTNER, signer: FIRST }))]), [answer(401, "signature mismatch")]],
  ["first issuer's token signed with the partner's key", req("GET", "/orders/7", [bearer(ptoken({ aud: "orders", sub: "alice" }, { issuer: FIRST, signer: PARTNER }))]), [answer(401, "signature mismatch")]],
  ["an issuer neither is", req("GET", "/orders/7", [bearer(ptoken({ iss: EVIL, aud: "orders", sub: "eve" }))]), [answer(401, "issuer not accepted")]],
  ["no iss with two issuers", req("GET", "/orders/7", [bearer(ptoken(`{"exp":${EXP},"aud":"orders","sub":"eve"}`))]), [answer(401, "issuer not accepted")]],
  ["iss twice", req("GET", "/orders/7", [bearer(ptoken(`{"iss":"${PARTNER.iss}","iss":"${FIRST.iss}","exp":${EXP},"aud":"orders","sub":"eve"}`))]), [answer(401, "malformed claims")]],
  ["iss spelled with escapes", req("GET", "/orders/7", [bearer(ptoken(String.raw`{"iss":"https:\/\/partner.test","exp":4102444800,"aud":"orders","sub":"bob"}`, { issuer: PARTNER }))]), [granted("GET", "/orders-svc/orders/7", ptoken(String.raw`{"iss":"https:\/\/partner.test","exp":4102444800,"aud":"orders","sub":"bob"}`, { issuer: PARTNER }), { subject: "bob", issuer: PARTNER.iss })]],
  ["a kid neither issuer has", req("GET", "/orders/7", [bearer(ptoken({ aud: "orders", sub: "bob" }, { issuer: PARTNER, kid: "other" }))]), [answer(401, "unknown kid")]],
  ["partner token without a kid: its one key", req("GET", "/orders/7", [bearer(ptoken({ aud: "orders", sub: "bob" }, { issuer: PARTNER, kid: null }))]), [granted("GET", "/orders-svc/orders/7", ptoken({ aud: "orders", sub: "bob" }, { issuer: PARTNER, kid: null }), { subject: "bob", issuer: PARTNER.iss })]],
  ["partner token on a scope rule", write(ptoken({ aud: "orders", sub: "bob", scope: "orders:write" }, { issuer: PARTNER })), [written(ptoken({ aud: "orders", sub: "bob", scope: "orders:write" }, { issuer: PARTNER }), { subject: "bob", issuer: PARTNER.iss })]],

  // CORS: https://app.test and http://localhost:5173, with credentials.
  ["preflight answered", preflight("/orders/7", APP, "DELETE", "authorization, content-type"), [preflightAnswered(APP)]],
  ["preflight from the second origin", preflight("/reports", DEV, "GET"), [preflightAnswered(DEV)]],
  ["preflight with allowed headers in another case", preflight("/orders/7", APP, "PUT", "Content-Type,X-Api-Token"), [preflightAnswered(APP)]],
  ["preflight to a hidden path is denied like any request", preflight("/internal/x", APP, "GET"), [answer(404, "not found")]],
  ["preflight carrying a forged token", preflight("/orders/7", APP, "GET", null, ["Authorization: Bearer forged.token.here"]), [preflightAnswered(APP)]],
  ["preflight with an empty request-headers list", preflight("/orders/7", APP, "POST", ""), [preflightAnswered(APP)]],
  ["preflight to a public path", preflight("/healthz", DEV, "GET", "content-type"), [preflightAnswered(DEV)]],
  ["preflight from another origin", preflight("/orders/7", EVIL, "GET"), [PREFLIGHT_REFUSED]],
  ["preflight origin in another case", preflight("/orders/7", "HTTPS://APP.TEST", "GET"), [PREFLIGHT_REFUSED]],
  ["preflight origin with a trailing slash", preflight("/orders/7", `${APP}/`, "GET"), [PREFLIGHT_REFUSED]],
  ["preflight origin extended", preflight("/orders/7", `${APP}.evil.test`, "GET"), [PREFLIGHT_REFUSED]],
  ["preflight origin with another port", preflight("/orders/7", "http://localhost:5174", "GET"), [PREFLIGHT_REFUSED]],
  ["preflight origin null", preflight("/orders/7", "null", "GET"), [PREFLIGHT_REFUSED]],
  ["preflight for a method not allowed", preflight("/orders/7", APP, "PROPFIND"), [PREFLIGHT_REFUSED]],
  ["preflight for a method in another case", preflight("/orders/7", APP, "delete"), [PREFLIGHT_REFUSED]],
  ["preflight for a header not allowed", preflight("/orders/7", APP, "GET", "authorization, x-gateway-subject"), [PREFLIGHT_REFUSED]],
  ["preflight with two origins", preflight("/orders/7", APP, "GET", null, [`Origin: ${APP}`]), [PREFLIGHT_REFUSED]],
  ["preflight from another origin to a public path", preflight("/healthz", EVIL, "GET"), [PREFLIGHT_REFUSED]],
  ["preflight with two request methods", preflight("/orders/7", APP, "GET", null, ["Access-Control-Request-Method: GET"]), [PREFLIGHT_REFUSED]],
  ["OPTIONS without a request method is no preflight", req("OPTIONS", "/orders/7", [`Origin: ${APP}`]), [readableBy(APP, MISSING)]],
  ["a 401 is readable by an allowed origin", req("GET", "/orders/7", [`Origin: ${APP}`]), [readableBy(APP, MISSING)]],
  ["a 401 for a bad token is readable by an allowed origin", req("GET", "/orders/7", [`Origin: ${DEV}`, bearer(ptoken({ aud: "orders", sub: "eve" }, { signer: PARTNER }))]), [readableBy(DEV, answer(401, "signature mismatch"))]],
  ["a 401 is not readable by another origin", req("GET", "/orders/7", [`Origin: ${EVIL}`]), [unreadable(MISSING)]],
  ["a forward to an allowed origin: the gateway's CORS fields, not the upstream's", req("GET", "/orders/7", [`Origin: ${APP}`, bearer(ALICE_P)]), [readableBy(APP, granted("GET", "/orders-svc/orders/7", ALICE_P, { extra: [["origin", APP]] }))]],
  ["a forward to another origin: no CORS field", req("GET", "/orders/7", [`Origin: ${EVIL}`, bearer(ALICE_P)]), [unreadable(granted("GET", "/orders-svc/orders/7", ALICE_P, { extra: [["origin", EVIL]] }))]],
  ["a forward without an origin: the upstream's CORS fields removed", req("GET", "/orders/7", [bearer(ALICE_P)]), [unreadable(granted("GET", "/orders-svc/orders/7", ALICE_P))]],
  ["a public forward to an allowed origin", req("GET", "/healthz", [`Origin: ${DEV}`]), [readableBy(DEV, publicForward("GET", "/site/healthz", [["origin", DEV]]))]],

  // Every reading of the request: a rule holds for the loosest reading of
  // the servers behind the gateway (worker/src/policy/readings.rs).
  // Empty segments merge, as nginx, Tomcat and Go read them: the rule of the
  // merged path applies and the merged path is forwarded.
  ["empty segments merge: a hidden path", req("GET", "//internal/metrics", [bearer(ALICE_P)]), [answer(404, "not found")]],
  ["empty segments merge: the admin path needs its role", admin(ALICE_P).replace("/admin/users", "//admin/users"), [ROLE_MISSING]],
  ["empty segments merge: forwarded merged", req("GET", "/admin//users", [bearer(alice({ roles: ["admin"] }))]), [granted("GET", "/orders-svc/admin/users", alice({ roles: ["admin"] }), { claims: [["x-gateway-roles", "admin"]] })]],
  ["empty segments merge: a public path", req("GET", "///healthz"), [publicForward("GET", "/site/healthz")]],
  // Tomcat and Spring strip ;x and then merge the empty segment it leaves.
  ["a parameter segment before a hidden path", req("GET", "/;x/internal/metrics", [bearer(ALICE_P)]), [READS_ANOTHER_RULE]],
  ["an encoded parameter segment before a hidden path", req("GET", "/%3Bx/internal/metrics"), [READS_ANOTHER_RULE]],
  ["an empty parameter segment before the admin path", req("GET", "/;/admin/users", [bearer(ALICE_P)]), [READS_ANOTHER_RULE]],
  // Express and ASP.NET Core match paths in any case.
  ["a hidden path in upper case", req("GET", "/INTERNAL/metrics"), [READS_ANOTHER_RULE]],
  ["the admin path in upper case", req("GET", "/ADMIN/users", [bearer(ALICE_P)]), [READS_ANOTHER_RULE]],
  ["a public path in upper case", req("GET", "/HEALTHZ"), [READS_ANOTHER_RULE]],
  ["a write in another case", req("DELETE", "/Orders/7", [bearer(ALICE_P)]), [READS_ANOTHER_RULE]],
  ["another case that meets no other rule is forwarded as it is", req("GET", "/Orders/7", [bearer(ALICE_P)]), [granted("GET", "/orders-svc/Orders/7", ALICE_P)]],
  // Express (non-strict routing), ASP.NET Core and Spring MVC before 6
  // ignore a trailing slash; Spring's suffix patterns ignore a .ext.
  ["an exact rule with claim requirements", req("GET", "/account/export", [bearer(ALICE_P)]), [VALUE_MISSING]],
  ["an exact rule met", req("GET", "/account/export", [bearer(alice({ tenant: "acme" }))]), [granted("GET", "/orders-svc/account/export", alice({ tenant: "acme" }), { claims: [["x-gateway-tenant", "acme"]] })]],
  ["a trailing slash past an exact rule", req("GET", "/account/export/", [bearer(ALICE_P)]), [READS_ANOTHER_RULE]],
  ["a suffix past an exact rule", req("GET", "/account/export.csv", [bearer(ALICE_P)]), [READS_ANOTHER_RULE]],
  ["a longer segment is another path", req("GET", "/account/exports", [bearer(ALICE_P)]), [granted("GET", "/orders-svc/account/exports", ALICE_P)]],
  // Double encoding of any byte: never decoded twice (RFC 3986 section 2.4).
  ["a double-encoded letter", req("GET", "/%2561dmin/users", [bearer(ALICE_P)]), [answer(400, "double-encoded character in path")]],
  ["a double-encoded NUL", req("GET", "/healthz%2500"), [answer(400, "double-encoded character in path")]],
  // Methods: folded by Flask, Django, ASP.NET Core; overridden by headers
  // and _method (Express method-override, ASP.NET Core, Laravel, Symfony).
  [
    "a write method in lower case",
    req("delete", "/orders/7", [bearer(ALICE_P)]),
    [{ hosts: { ...sameOn(["module", "host-sim", "wasi-http"], METHOD_CASE), workerd: { front_end: true }, envoy: { front_end: true } }, why: "the module refuses a method with a lower-case letter (hyper, in host-sim and wasmtime serve, passes it on); workerd answers 501 and Envoy 400 before any module runs" }],
  ],
  [
    "a write method in mixed case",
    req("Delete", "/orders/7", [bearer(ALICE_P)]),
    [{ hosts: { ...sameOn(["module", "host-sim", "wasi-http"], METHOD_CASE), workerd: { front_end: true }, envoy: { front_end: true } }, why: "the module refuses a method with a lower-case letter (hyper, in host-sim and wasmtime serve, passes it on); workerd answers 501 and Envoy 400 before any module runs" }],
  ],
  ["a read overridden into a write", req("GET", "/orders/7", [bearer(ALICE_P), "X-HTTP-Method-Override: DELETE"]), [METHOD_READS_ANOTHER_RULE]],
  ["an override header spelled with underscores", req("GET", "/orders/7", [bearer(ALICE_P), "X_HTTP_Method_Override: DELETE"]), [METHOD_READS_ANOTHER_RULE]],
  ["an override header in lower case", req("GET", "/orders/7", [bearer(ALICE_P), "X-HTTP-Method: delete"]), [METHOD_READS_ANOTHER_RULE]],
  ["another override header", req("GET", "/orders/7", [bearer(ALICE_P), "X-Method-Override: PUT"]), [METHOD_READS_ANOTHER_RULE]],
  ["_method in the query", req("GET", "/orders/7?_method=DELETE", [bearer(ALICE_P)]), [METHOD_READS_ANOTHER_RULE]],
  ["_method in the query with its underscore encoded", req("GET", "/orders/7?x=1&%5Fmethod=delete", [bearer(ALICE_P)]), [METHOD_READS_ANOTHER_RULE]],
  [
    "an override that meets the same rule is forwarded",
    req("POST", "/orders/7", [bearer(alice({ scope: "orders:write" })), "X-HTTP-Method-Override: DELETE", "Content-Length: 0"]),
    [granted("POST", "/orders-svc/orders/7", alice({ scope: "orders:write" }), { extra: [["x-http-method-override", "DELETE"]] })],
  ],
  // Query names and values read as a form decodes them (+ a space, each
  // escape its byte), names as PHP reads them (Laravel, Symfony).
  ["_method with an encoded letter in its value", req("GET", "/orders/7?_method=%44ELETE", [bearer(ALICE_P)]), [METHOD_READS_ANOTHER_RULE]],
  ["_method with an encoded letter in its name, on a public path", req("GET", "/healthz?_m%65thod=DELETE"), [METHOD_READS_ANOTHER_RULE]],
  ["_method spelled wholly in escapes", req("GET", "/orders/7?%5F%6D%65%74%68%6F%64=DELETE", [bearer(ALICE_P)]), [METHOD_READS_ANOTHER_RULE]],
  ["_method with spaces as plus signs", req("GET", "/orders/7?_method=+DELETE+", [bearer(ALICE_P)]), [METHOD_READS_ANOTHER_RULE]],
  ["_method named as PHP reads .method", req("GET", "/orders/7?.method=DELETE", [bearer(ALICE_P)]), [METHOD_READS_ANOTHER_RULE]],
  [
    "an encoded _method that meets the same rule is forwarded",
    req("POST", "/orders/7?_method=%44ELETE", [bearer(alice({ scope: "orders:write" })), "Content-Length: 0"]),
    [granted("POST", "/orders-svc/orders/7?_method=%44ELETE", alice({ scope: "orders:write" }))],
  ],
  // A body may carry _method (Rails, Laravel, Symfony from POST; Hono from
  // any method but GET): a request with a body passes only with what every
  // rule its override could meet asks.
  ...["PUT", "PATCH", "OPTIONS"].map((method) => [
    `${method} with a form body needs what GET and POST there ask`,
    req(method, "/reports/q1", [bearer(alice({ scope: "reports:read" })), "Content-Type: application/x-www-form-urlencoded", "Content-Length: 14"], { body: "_method=DELETE" }),
    [answer(403, "required scope missing", { scope: "reports:write" })],
  ]),
  [
    "PUT with a chunked form body needs what GET and POST there ask",
    req("PUT", "/reports/q1", [bearer(alice({ scope: "reports:write" })), "Content-Type: application/x-www-form-urlencoded", "Transfer-Encoding: chunked"], { body: "e\r\n_method=DELETE\r\n0\r\n\r\n" }),
    [answer(403, "required scope missing", { scope: "reports:read admin" })],
  ],
  [
    "a POST with a body and both scopes is forwarded",
    req("POST", "/reports/q1", [bearer(alice({ scope: "reports:read reports:write" })), "Content-Type: application/x-www-form-urlencoded", "Content-Length: 3"], { body: "a=1" }),
    [granted("POST", "/orders-svc/reports/q1", alice({ scope: "reports:read reports:write" }), { extra: [["content-type", "application/x-www-form-urlencoded"]], body: "a=1" })],
  ],
  [
    "a POST with a body needs the read scope too: it may be a GET upstream",
    req("POST", "/reports/q1", [bearer(alice({ scope: "reports:write" })), "Content-Length: 3"], { body: "a=1" }),
    [answer(403, "required scope missing", { scope: "reports:read admin" })],
  ],
  [
    "a POST without a body is a POST",
    req("POST", "/reports/q1", [bearer(alice({ scope: "reports:write" })), "Content-Length: 0"]),
    [granted("POST", "/orders-svc/reports/q1", alice({ scope: "reports:write" }))],
  ],
  // Fastify 4 reads ; as the start of the query: /account/export;/x is its
  // /account/export, whose exact rule needs a claim.
  ...["/account/export;/x", "/account/export;x/y", "/account/export;a=b/x", "/account/export;//x", "/account/export%3B/x"].map((target) => [
    `a semicolon read as the query: ${target}`,
    req("GET", target, [bearer(ALICE_P)]),
    [READS_ANOTHER_RULE],
  ]),
  ["a semicolon read as the query, HEAD", req("HEAD", "/account/export;/x", [bearer(ALICE_P)]), [READS_ANOTHER_RULE]],
  ["a semicolon that meets the same rule in every reading is forwarded", req("GET", "/docs/intro;/x"), [publicForward("GET", "/site/docs/intro;/x")]],
  // Encoded whitespace a second decoding trims: never at a segment's edge.
  ...["/account/export%20", "/account/export%a0", "/account/export%C2%A0", "/account/export%E3%80%80", "/account/%20export", "/account/export%20;x"].map((target) => [
    `encoded whitespace at a segment's edge: ${target}`,
    req("GET", target, [bearer(ALICE_P)]),
    [answer(400, "encoded whitespace at a path segment's edge")],
  ]),
  ["an encoded tab is a control", req("GET", "/account/export%09", [bearer(ALICE_P)]), [answer(400, "control or non-ASCII byte in request target")]],
  ["encoded whitespace inside a segment is forwarded", req("GET", "/docs/my%20file"), [publicForward("GET", "/site/docs/my%20file")]],
  // A token bound to its sender's key (cnf) is no bearer token, from any source.
  ["a DPoP-bound token as a bearer token", req("GET", "/orders/7", [bearer(alice({ cnf: { jkt: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" } }))]), [answer(401, "token bound to a key (cnf) not verified here")]],
  ["a certificate-bound token in the token cookie", req("GET", "/orders/7", [`Cookie: __Host-access=${alice({ cnf: { "x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2" } })}`]), [answer(401, "token bound to a key (cnf) not verified here")]],
  ["a bound token in the token header", req("GET", "/orders/7", [`X-Api-Token: Token ${alice({ cnf: { jkt: "x" } })}`]), [answer(401, "token bound to a key (cnf) not verified here")]],
  ["a bound token with its cnf name escaped", req("GET", "/orders/7", [bearer(aliceRaw('"\\u0063nf":{"jkt":"x"}'))]), [answer(401, "token bound to a key (cnf) not verified here")]],
  ["a bound token on a public path is not read", req("GET", "/healthz", [bearer(alice({ cnf: { jkt: "x" } }))]), [publicForward("GET", "/site/healthz")]],
  // A preflight is a request like any other: the rules judge it first.
  ["a preflight-shaped request to a hidden path, with a body", preflight("/internal/metrics?dump=1", EVIL, "GET", null, ["Content-Length: 4"]) + "dump", [answer(404, "not found")]],
  ["an unanswered preflight to the admin path is refused", preflight("/admin/users", EVIL, "GET"), [PREFLIGHT_REFUSED]],
  ["an unanswered preflight to a token path is refused", preflight("/orders/7", EVIL, "DELETE"), [PREFLIGHT_REFUSED]],
  [
    "an unanswered preflight to a public path of its route is forwarded there",
    preflight("/docs/guide", EVIL, "GET"),
    [unreadable(publicForward("OPTIONS", "/site/docs/guide", [["origin", EVIL], ["access-control-request-method", "GET"]]))],
  ],
  ["an unanswered preflight with a body is refused", preflight("/docs/guide", EVIL, "GET", null, ["Content-Length: 4"]) + "dump", [answer(400, "preflight with a body")]],
  ["an allowed preflight to a public path is answered", preflight("/docs/guide", APP, "GET"), [preflightAnswered(APP)]],
  // The issuer travels with the subject, and rules can name issuers.
  ["a partner's admin role is not the first issuer's", admin(ptoken({ aud: "orders", sub: "alice", roles: ["admin"] }, { issuer: PARTNER })), [answer(401, "issuer not accepted for this path")]],
  ["the first issuer's admin role", admin(alice({ roles: ["ops"] })), [granted("GET", "/orders-svc/admin/users", alice({ roles: ["ops"] }), { claims: [["x-gateway-roles", "ops"]] })]],
  ["a client's issuer header never travels", req("GET", "/orders/7", [bearer(BOB), "X-Gateway-Issuer: https://issuer.test", "x_gateway_issuer: https://issuer.test"]), [granted("GET", "/orders-svc/orders/7", BOB, { subject: "bob", issuer: PARTNER.iss })]],
  // A token cookie some server reads where the gateway reads none.
  ["a token cookie after a comma beside a bearer token", req("GET", "/orders/7", [bearer(ALICE_P), `Cookie: a=1, __Host-access=${OTHER_ALICE}`]), [AMBIGUOUS_COOKIE]],
  ["a token cookie name percent-encoded", req("GET", "/orders/7", [bearer(ALICE_P), `Cookie: __Host%2Daccess=${OTHER_ALICE}`]), [AMBIGUOUS_COOKIE]],
  ["a token cookie name with dots for underscores", req("GET", "/orders/7", [`Cookie: ..Host-access=${ALICE_P}`]), [AMBIGUOUS_COOKIE]],
  ["other cookies with commas pass", req("GET", "/orders/7", [`Cookie: prefs=a,b; __Host-access=${ALICE_P}`]), [granted("GET", "/orders-svc/orders/7", ALICE_P, { extra: [["cookie", "prefs=a,b"]] })]],
  ["a public path: a token cookie after a comma is taken out with its pair", req("GET", "/healthz", [`Cookie: theme=dark, __Host-access=${ALICE_P}; lang=en`]), [publicForward("GET", "/site/healthz", [["cookie", "lang=en"]])]],
  ["cookies packed without spaces are joined again with them", req("GET", "/healthz", ["Cookie: a;b;c;d;e;f;g;h;i;j;k;l"]), [publicForward("GET", "/site/healthz", [["cookie", "a; b; c; d; e; f; g; h; i; j; k; l"]])]],
  // Roles and scopes: one reading each (SECURITY.md).
  ["a roles string with a comma is one role", admin(alice({ roles: "admin,ops" })), [ROLE_MISSING]],
];
