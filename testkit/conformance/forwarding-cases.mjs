// The forwarding corpus: testkit/fixture.toml, three routes and one HS256
// key (generate.mjs writes it to forwarding.jsonl).
import { EXP, ORIGIN, USERS, forward, readFixture, refused, req, sign } from "./corpus-kit.mjs";

const FIXTURE = readFixture("fixture.json");
const KEY = Buffer.from(FIXTURE.keys[0].secret_hex, "hex");
const KID = FIXTURE.keys[0].kid;
const ISSUER = FIXTURE.issuer;

/** A token over `claims` (with the fixture's iss and an exp in 2100), or over raw claims JSON text. */
function token(claims, header = { alg: "HS256", typ: "JWT", kid: KID }) {
  return sign(header, typeof claims === "string" ? claims : JSON.stringify({ iss: ISSUER, exp: EXP, ...claims }), KEY);
}
const ALICE = token({ aud: "orders", sub: "alice" });
const NO_SUB = token({ aud: "orders" });
const auth = (t = ALICE) => `Authorization: Bearer ${t}`;

// Tokens shaped like identity providers' access tokens (800 to 1,400 bytes):
// `scope`/`scp`, `azp`, nested objects and arrays, long subjects, and the
// spellings their encoders use (escaped slashes, \u escapes, a fractional
// NumericDate). The fixture accepts tokens up to its max_token_bytes (2048).
const PROVIDER = {
  keycloak: token({
    iat: 4102441200, jti: "5b0f7c9e-3a61-4d2b-9a8e-1f2c3d4e5f60", aud: ["orders", "account"],
    sub: "f3c2a1b0-9d8e-4f7a-8b6c-5d4e3f2a1b0c", typ: "Bearer", azp: "orders-web",
    session_state: "8f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", acr: "1",
    "allowed-origins": ["https://orders.example.com", "https://admin.example.com"],
    realm_access: { roles: ["offline_access", "uma_authorization", "default-roles-example", "orders-reader"] },
    resource_access: { "orders-web": { roles: ["viewer", "editor"] }, account: { roles: ["manage-account", "manage-account-links", "view-profile"] } },
    scope: "openid profile email orders:read orders:write", sid: "8f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    email_verified: true, name: "Alice Example", preferred_username: "alice", given_name: "Alice", family_name: "Example", email: "alice@example.com",
  }),
  // PHP's json_encode and some Java encoders escape every slash.
  auth0: token(JSON.stringify({
    iss: ISSUER, sub: "auth0|64f1c2d3e4b5a69788796a5b", aud: ["billing", "https://example-tenant.eu.auth0.com/userinfo"],
    iat: 4102441200, exp: EXP, azp: "Zx8Kq3Lm9Np2Rs7Tv4Wy6Ab1Cd5Ef0Gh",
    scope: "openid profile email read:invoices write:invoices read:customers offline_access", gty: "client-credentials",
    permissions: ["read:invoices", "write:invoices", "read:customers", "read:reports"],
    "https://example.com/claims": { roles: ["finance", "auditor"], org: { id: "org_7Hk2Lm9Np3Qr", name: "Example Ltd", tier: "enterprise" } },
    org_id: "org_7Hk2Lm9Np3Qr",
  }).replaceAll("/", "\\/")),
  // Entra ID v2: a 43-character pairwise subject, roles and scp, and an exp with a fraction.
  entra: token(`{"aud":"users","iss":"${ISSUER}","iat":1700000000,"nbf":1700000000,"exp":4102444800.5,"aio":"AWQAm/8YAAAA3xk9Lm2Np8Qr4St6Uv1Wx3Yz5Ab7Cd9Ef0Gh2Ij4Kl6Mn8Op0Qr2St4Uv6Wx8Yz0Ab==","azp":"6e74172b-be56-4843-9ff4-e66a39bb12e3","azpacr":"1","name":"Carol Example","oid":"00000000-0000-0000-66f3-3332eca7ea81","preferred_username":"carol@example.com","rh":"0.AQEAv4j5cvGGr0GRqy180BHbR-ZNsJ9jFjVBlYpTjqk8qYcBAAA.","roles":["Users.Read.All","Users.Write"],"scp":"access_as_user User.Read","sub":"AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ","tid":"9188040d-6c67-4c5b-b112-36a304b66dad","uti":"fqiBqXLPj0eQa82S-IYFAA","ver":"2.0","wids":["b79fbf4d-3ef9-4689-8143-76b194e85509"]}`),
  // Okta: an audience and subject spelled with \u escapes (any encoder may emit them).
  okta: token(`{"ver":1,"jti":"AT.W2dpbG1wNkxYY2g3WnJ2T3ZrZ0dfRnB1cnlmZ3FQZ0lFV0QyX3c","iss":"${ISSUER}","aud":"\\u006frders","iat":4102441200,"exp":4.1024448e9,"cid":"0oa1b2c3d4e5f6g7h8i9","uid":"00u1a2b3c4d5e6f7g8h9","scp":["openid","profile","email","orders.read","orders.write"],"auth_time":4102441100,"sub":"dave\\u0040example.com","groups":["Everyone","Orders Team","Orders Admins","EU Staff","Support Tier 2"],"amr":["pwd","mfa","hwk"],"idp":"00o1a2b3c4d5e6f7g8h9","email":"dave@example.com","locale":"en-GB","tenant":{"id":"t-42","region":"eu-west-1","plan":{"name":"business","seats":250}}}`),
};
/** Why hosts differ on a valid Authorization beside an empty one (SECURITY.md, "One corpus for every host"). */
const AUTHORIZATION_FOLDED =
  "Envoy's HTTP/1 codec keeps Authorization as an inline header: a repeat is appended to the first value with a comma, and an empty repeat is dropped, before any filter runs, so the filter's header map (its only view of the request) holds the one valid token, and the core forwards it; workerd keeps one value per name, joining a repeat with ', ' (a trailing ', ' the module refuses as malformed) and replacing an empty first value; host-sim and wasmtime serve (hyper both) pass both fields, and the module refuses two";
/** What a wasi:http component is not shown (deploy/wasi-http/README.md): the fields wasmtime keeps for itself. */
const WASI_HTTP_HIDES = "wasi:http hands a component neither the Host field (only the request's authority: wasmtime takes the target's, or the first Host's) nor Connection, Keep-Alive, Upgrade, Transfer-Encoding and the Proxy-* fields (forbidden fields in wasmtime), so its module judges the request without them";
/** `outcome` pinned on each of `hosts` (keys of a `hosts` outcome). */
const sameOn = (hosts, outcome) => Object.fromEntries(hosts.map((host) => [host, outcome]));
const PROVIDER_TOO_LONG = token({ aud: "orders", sub: "alice", pad: "p".repeat(FIXTURE.max_token_bytes) });

export const FORWARDING_CASES = [
  // Ordinary requests.
  ["GET with a query", req("GET", "/invoices/7?expand=lines&page=2", [auth()]), [forward("GET", "/orders-svc/invoices/7?expand=lines&page=2")]],
  ["root path", req("GET", "/", [auth()]), [forward("GET", "/orders-svc/")]],
  ["empty query kept", req("GET", "/a?", [auth()]), [forward("GET", "/orders-svc/a?")]],
  ["percent-encoded UTF-8 path", req("GET", "/caf%c3%a9/%E2%9C%93", [auth()]), [forward("GET", "/orders-svc/caf%C3%A9/%E2%9C%93")]],
  ["encoded unreserved decoded", req("GET", "/%7Euser/%41b", [auth()]), [forward("GET", "/orders-svc/~user/Ab")]],
  ["dot segments inside the base", req("GET", "/a/./b/../c", [auth()]), [forward("GET", "/orders-svc/a/c")]],
  ["query keeps its dots and slashes", req("GET", "/a?next=../../billing-svc&x=%2F", [auth()]), [forward("GET", "/orders-svc/a?next=../../billing-svc&x=%2F")]],
  ["quote in path encoded", req("GET", '/a"b', [auth()]), [forward("GET", "/orders-svc/a%22b")]],
  ["route without a base path", req("GET", "/u/1", [auth(token({ aud: "users", sub: "carol" }))]), [forward("GET", "/u/1", { origin: USERS, subject: "carol" })]],
  ["POST with a body", req("POST", "/invoices", [auth(), "Content-Type: application/json", "Content-Length: 11"], { body: '{"amount":1' }), [forward("POST", "/orders-svc/invoices", { extra: [["content-type", "application/json"]], body: '{"amount":1' })]],
  ["chunked body", req("PUT", "/invoices/1", [auth(), "Transfer-Encoding: chunked"], { body: "5\r\nhello\r\n0\r\n\r\n" }), [forward("PUT", "/orders-svc/invoices/1", { body: "hello" })]],
  ["ordinary fields pass", req("GET", "/x", [auth(), "Accept: application/json", "X-Request-Id: r-1", "Cookie: a=b"]), [forward("GET", "/orders-svc/x", { extra: [["accept", "application/json"], ["x-request-id", "r-1"], ["cookie", "a=b"]] })]],
  [
    "absolute-form target",
    req("GET", "http://api.example/x/../y?q=1", [auth()]),
    [{ any_of: [forward("GET", "/orders-svc/y?q=1", { host: "api.example" }), forward("GET", "/orders-svc/y?q=1")], why: "RFC 9112 section 3.2.2 makes the target's authority the host (host-sim passes the absolute form); workerd rebuilds the request URL from Host, so its module sees origin-form" }],
  ],

  // Tokens shaped like identity providers', through every host.
  ["Keycloak-shaped token", req("GET", "/orders/7", [auth(PROVIDER.keycloak)]), [forward("GET", "/orders-svc/orders/7", { subject: "f3c2a1b0-9d8e-4f7a-8b6c-5d4e3f2a1b0c" })]],
  ["Auth0-shaped token with escaped slashes", req("GET", "/invoices", [auth(PROVIDER.auth0)]), [forward("GET", "/billing-svc/invoices", { subject: "auth0|64f1c2d3e4b5a69788796a5b" })]],
  ["Entra-shaped token with a fractional exp", req("GET", "/u/7", [auth(PROVIDER.entra)]), [forward("GET", "/u/7", { origin: USERS, subject: "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ" })]],
  ["Okta-shaped token with escaped aud and sub", req("GET", "/orders", [auth(PROVIDER.okta)]), [forward("GET", "/orders-svc/orders", { subject: "dave@example.com" })]],
  ["token over max_token_bytes", req("GET", "/orders", [auth(PROVIDER_TOO_LONG)]), [refused(401, "token longer than the gateway accepts")]],

  // Climbing out of the base path.
  ["dot-dot above the base", req("GET", "/../billing-svc/invoices", [auth()]), [refused(400, "path climbs above its root")]],
  ["encoded dot-dot lower case", req("GET", "/%2e%2e/billing-svc/x", [auth()]), [refused(400, "path climbs above its root")]],
  ["encoded dot-dot mixed case", req("GET", "/%2E%2e/billing-svc/x", [auth()]), [refused(400, "path climbs above its root")]],
  ["climb after a descent", req("GET", "/a/../../billing-svc/x", [auth()]), [refused(400, "path climbs above its root")]],
  ["dot then climb", req("GET", "/./../billing-svc", [auth()]), [refused(400, "path climbs above its root")]],
  ["encoded slash", req("GET", "/..%2fbilling-svc/x", [auth()]), [refused(400, "encoded slash or backslash in path")]],
  ["encoded backslash", req("GET", "/..%5cbilling-svc/x", [auth()]), [refused(400, "encoded slash or backslash in path")]],
  ["dot-dot with parameters", req("GET", "/..;/billing-svc/x", [auth()]), [refused(400, "dot segment with parameters")]],
  // Double-encoded: an upstream (or a framework before it) that decodes twice reads ../ here.
  ["double-encoded dot-dot", req("GET", "/%252e%252e/billing-svc/x", [auth()]), [refused(400, "double-encoded character in path")]],
  ["double-encoded dot-dot upper case", req("GET", "/%252E%252E/billing-svc/x", [auth()]), [refused(400, "double-encoded character in path")]],
  ["double-encoded slash", req("GET", "/..%252f..%252fbilling-svc/x", [auth()]), [refused(400, "double-encoded character in path")]],
  ["double-encoded backslash", req("GET", "/..%255c..%255Cbilling-svc/x", [auth()]), [refused(400, "double-encoded character in path")]],
  ["triple-encoded dot-dot", req("GET", "/%25252e%25252e/billing-svc/x", [auth()]), [refused(400, "double-encoded character in path")]],
  ["double-encoded dot spelled with unreserved escapes", req("GET", "/%25%32%65%25%32%65/billing-svc/x", [auth()]), [refused(400, "double-encoded character in path")]],
  ["a double-encoded letter", req("GET", "/%2561dmin", [auth()]), [refused(400, "double-encoded character in path")]],
  ["a double-encoded control", req("GET", "/x%2500", [auth()]), [refused(400, "double-encoded character in path")]],
  ["encoded percent signs pass", req("GET", "/100%25/50%25off/%25?next=%252e%252e", [auth()]), [forward("GET", "/orders-svc/100%25/50%25off/%25?next=%252e%252e")]],
  ["empty segments merge", req("GET", "//x//y/", [auth()]), [forward("GET", "/orders-svc/x/y/")]],
  ["encoded NUL", req("GET", "/a%00.json", [auth()]), [refused(400, "control or non-ASCII byte in request target")]],
  [
    "fragment cut off",
    req("GET", "/a#/../../billing-svc", [auth()]),
    [{ any_of: [forward("GET", "/orders-svc/a"), { front_end: true }], why: "Envoy refuses a request target with a fragment (400) before any filter runs" }],
  ],

  // Methods and target forms.
  [
    "CONNECT",
    req("CONNECT", "evil.example:443", [auth()], { host: "evil.example:443" }),
    [{ any_of: [refused(400, "CONNECT not supported"), { front_end: true }], why: "workerd refuses CONNECT itself (500) before the Worker runs" }],
  ],
  [
    "OPTIONS *",
    req("OPTIONS", "*", [auth()]),
    [{ any_of: [refused(400, "asterisk-form target not supported"), forward("OPTIONS", "/orders-svc/"), { front_end: true }], why: "workerd turns the asterisk-form into the URL path /, which the module confines to the route's base; Envoy answers it itself (404) and forwards nothing" }],
  ],
  ["odd method passes", req("PROPFIND", "/dav", [auth()]), [forward("PROPFIND", "/orders-svc/dav")]],

  // Fields only the gateway may set.
  ["a client's rewritten URL never travels", req("GET", "/x", [auth(), "X-Original-URL: /admin", "X_Rewrite_URL: /admin", "x-rewrite-url: /admin"]), [forward("GET", "/orders-svc/x")]],
  ["client subject without sub", req("GET", "/x", [auth(NO_SUB), "X_Gateway_Subject: admin"]), [forward("GET", "/orders-svc/x", { subject: null })]],
  ["client subject beside sub", req("GET", "/x", [auth(), "X_Gateway_Subject: admin"]), [forward("GET", "/orders-svc/x")]],
  ["every spelling of the subject", req("GET", "/x", [auth(), "x-gateway-subject: a", "X-GATEWAY-SUBJECT: b", "x_gateway_subject: c", "X-Gateway-Role: admin"]), [forward("GET", "/orders-svc/x")]],
  ["client forwarding fields replaced", req("GET", "/x", [auth(), "X-Forwarded-For: 10.6.6.6", "Forwarded: for=1.2.3.4", "X-Real-IP: 10.6.6.6", "X-Forwarded-Host: evil", "X-Forwarded-Proto: https", "X_Forwarded_For: 10.7.7.7"]), [forward("GET", "/orders-svc/x")]],
  [
    "hop-by-hop fields dropped",
    req("GET", "/x", [auth(), "Connection: X-Secret", "X-Secret: s", "Keep-Alive: timeout=5", "Upgrade: websocket", "TE: trailers", "Proxy-Authorization: Basic eDp5", "Proxy-Connection: keep-alive"]),
    [{ hosts: { ...sameOn(["module", "host-sim", "workerd", "envoy"], forward("GET", "/orders-svc/x")), "wasi-http": forward("GET", "/orders-svc/x", { extra: [["x-secret", "s"]] }) }, why: `${WASI_HTTP_HIDES}: it cannot see that Connection named X-Secret, which travels as a field the client could have sent without naming it (the fields only the gateway may set are dropped by name on every host)` }],
  ],
  ["sub with a leading space", req("GET", "/x", [auth(token({ aud: "orders", sub: " admin" }))]), [refused(401, "sub cannot travel intact in a header")]],
  ["sub with a trailing space", req("GET", "/x", [auth(token({ aud: "orders", sub: "admin " }))]), [refused(401, "sub cannot travel intact in a header")]],
  ["UTF-8 in a field value travels as the same bytes", req("GET", "/x", [auth(), "X-Note: \u00c4\u008d\u00c4\u008a"]), [forward("GET", "/orders-svc/x", { extra: [["x-note", "\u00c4\u008d\u00c4\u008a"]] })]],

  // Request shape and smuggling.
  [
    "no Host",
    req("GET", "/x", [auth()], { host: null }),
    [{ hosts: { ...sameOn(["module", "host-sim", "workerd", "envoy"], refused(400, "host header required", { front_end: true })), "wasi-http": { front_end: true } }, why: "wasmtime's wasi:http takes a request's authority from its target or its Host field, and answers one with neither itself (500) before the component runs" }],
  ],
  [
    "two Host fields",
    req("GET", "/x", [auth(), "Host: other"]),
    [{ hosts: { ...sameOn(["module", "host-sim", "workerd", "envoy"], refused(400, "more than one host header", { front_end: true })), "wasi-http": forward("GET", "/orders-svc/x") }, why: `${WASI_HTTP_HIDES}: the module sees one Host, the first, and forwards; the upstream receives Host from the route and one X-Forwarded-Host, the first, so no second reading of the request reaches it` }],
  ],
  [
    "Content-Length then Transfer-Encoding",
    req("POST", "/x", [auth(), "Content-Length: 4", "Transfer-Encoding: chunked"], { body: "0\r\n\r\n" }),
    [{ any_of: [refused(400, "both content-length and transfer-encoding", { front_end: true }), forward("POST", "/orders-svc/x")], why: `RFC 9112 section 6.1: a server may refuse both, or frame by Transfer-Encoding alone and drop Content-Length (hyper does when Content-Length comes second); either way the upstream gets one request framed one way. ${WASI_HTTP_HIDES}: there hyper reads the body as chunked and keeps Content-Length, and the component, finding a body of another length than it says, hands the module both fields, which it refuses` }],
  ],
  [
    "Transfer-Encoding then Content-Length",
    req("POST", "/x", [auth(), "Transfer-Encoding: chunked", "Content-Length: 4"], { body: "0\r\n\r\n" }),
    [{ any_of: [refused(400, "both content-length and transfer-encoding", { front_end: true }), forward("POST", "/orders-svc/x")], why: "as above" }],
  ],
  ["two different Content-Length", req("POST", "/x", [auth(), "Content-Length: 1", "Content-Length: 2"], { body: "ab" }), [refused(400, "invalid content-length", { front_end: true })]],
  [
    "chunked, identity",
    req("POST", "/x", [auth(), "Transfer-Encoding: chunked, identity"], { body: "0\r\n\r\n" }),
    [{ any_of: [refused(400, "transfer-encoding must be chunked", { front_end: true }), { front_end: true }], why: "RFC 9112 section 6.1: a server answers a transfer coding it does not implement with 501, as Envoy does before any filter runs" }],
  ],
  // Repeated Authorization fields, one of them empty: a module that sees
  // both refuses the pair; a front end that folds them into one field hands
  // it a single valid token. Each host's outcome is pinned (the folding
  // happens before any code of ours runs), and each is safe: the token
  // verified, and the upstream receives no Authorization.
  [
    "a valid Authorization beside an empty one",
    req("GET", "/x", [auth(), "Authorization:"]),
    [{ hosts: { ...sameOn(["module", "host-sim", "wasi-http"], refused(400, "more than one authorization header")), workerd: refused(400, "malformed authorization header"), envoy: forward("GET", "/orders-svc/x") }, why: AUTHORIZATION_FOLDED }],
  ],
  [
    "an empty Authorization before a valid one",
    req("GET", "/x", ["Authorization:", auth()]),
    [{ hosts: { ...sameOn(["module", "host-sim", "wasi-http"], refused(400, "more than one authorization header")), workerd: forward("GET", "/orders-svc/x"), envoy: forward("GET", "/orders-svc/x") }, why: AUTHORIZATION_FOLDED }],
  ],
  // The control: an ordinary field repeated with an empty value reaches the
  // upstream as sent on every host, so what folds the pair above is how a
  // front end treats Authorization, not empty values as such.
  ["an ordinary field repeated with an empty value passes as sent", req("GET", "/x", [auth(), "X-Probe: 1", "X-Probe:", "X-Probe: 2"]), [forward("GET", "/orders-svc/x", { extra: [["x-probe", "1"], ["x-probe", ""], ["x-probe", "2"]] })]],
  ["body on a refused request", req("POST", "/x", ["Content-Length: 5"], { body: "hello" }), [refused(401, "bearer token required")]],
  [
    "pipelined: a forward, then a climb",
    req("GET", "/first", [auth()]) + req("GET", "/../billing-svc/second", [auth(), "Connection: close"]),
    [forward("GET", "/orders-svc/first"), refused(400, "path climbs above its root")],
  ],
];

for (const [name, t] of Object.entries(PROVIDER)) {
  if (t.length < 800 || t.length > 1400) throw new Error(`the ${name} token is ${t.length} bytes, not 800 to 1,400`);
}
