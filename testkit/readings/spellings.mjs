// The battery: every spelling of each protected request of
// testkit/fixture-readings.toml that some common server may read as that
// request. Each spelling names the classes it combines, so that a failure
// says which readings the gateway missed.
//
// Classes (README.md says which server reads each how):
//   empty-segments   //x, /x//y, ///x, a leading /;x/ or /%3Bx/ (stripped, //x)
//   case             all upper, title case, alternating, per segment
//   trailing         /, //, ., .json, ;, ;x, %20, /., %2e, %3B, ...
//   path-parameters  ;, ;x, %3B, %3b, %253B, %25253B after a segment
//   encoding         a character as %XX one, two and three deep (%61, %2561,
//                    %252561), lower and upper hex
//   dot-segments     /./, /x/../, /docs/../ and its encoded and parameter forms
//   separators       %2F, %252F, \, %5C between segments
//   method-case      lower and mixed case (HEAD and GET included)
//   head-for-get     HEAD, which servers answer with their GET handler
//   semicolon-query  ;/x, ;x/y, ;a=b/x, ;//x and their %3B forms after the
//                    last segment: Fastify 4 reads ; as the start of the query
//   method-override  X-HTTP-Method-Override and its kin (- and _), _method in
//                    the query (its name or value encoded too) and in a
//                    urlencoded or multipart body, from every other method
//   preflight        OPTIONS with Origin and Access-Control-Request-Method,
//                    allowed and other origins, with and without a body
//   absolute-form    http://gw.test/... as the request target

/**
 * The protected requests: each names the marker its handler answers on
 * every server, the rule that protects it, and its canonical spelling;
 * `deny` the status of a deny rule (no token passes it); `methodScoped`
 * when the rule names methods, so that another method's request
 * overridden to this one must not pass.
 */
export const PROTECTED = [
  { marker: "internal-metrics", rule: "prefix /internal: deny 404", method: "GET", segments: ["internal", "metrics"], deny: 404 },
  // One path denied under a public prefix: a spelling the gateway does not
  // read as /docs/drafts is public, and reaches the handler with no token.
  { marker: "docs-drafts", rule: "path /docs/drafts: deny 403", method: "GET", segments: ["docs", "drafts"], deny: 403 },
  { marker: "admin-users", rule: "prefix /admin: roles any [admin]", method: "GET", segments: ["admin", "users"] },
  { marker: "account-export", rule: "path /account/export: claims tenant = acme", method: "GET", segments: ["account", "export"] },
  {
    marker: "orders-delete",
    rule: "prefix /orders, DELETE: scopes all [orders:write]",
    method: "DELETE",
    segments: ["orders", "5"],
    methodScoped: true,
  },
  {
    marker: "reports-daily",
    rule: "prefix /reports, GET (HEAD): scopes all [reports:read]",
    method: "GET",
    segments: ["reports", "daily"],
    methodScoped: true,
  },
];

/** The origin the fixture's CORS allows, and one it does not. */
export const ALLOWED_ORIGIN = "https://app.test";
const OTHER_ORIGIN = "https://evil.test";

// A path under construction: `before` the first separator, a separator
// before each segment, `after` the last one.
const shape = (segments) => ({ before: "", seps: segments.map(() => "/"), segs: [...segments], after: "" });
const render = (p) => p.before + p.segs.map((s, i) => p.seps[i] + s).join("") + p.after;
const withSeg = (p, i, f) => ({ ...p, segs: p.segs.map((s, j) => (j === i ? f(s) : s)) });
const withSep = (p, i, sep) => ({ ...p, seps: p.seps.map((s, j) => (j === i ? sep : s)) });

const hex = (ch) => ch.charCodeAt(0).toString(16).padStart(2, "0");
/** `%XX` of `ch`, `depth` deep (each level encodes the previous level's `%` as %25), in lower or upper hex. */
function encode(ch, depth, upper) {
  const h = upper ? hex(ch).toUpperCase() : hex(ch).toLowerCase();
  return `%${"25".repeat(depth - 1)}${h}`;
}
/** The index of the `n`th unreserved character of `s` that is not part of an escape (n < 0: from the end). */
function nthPlain(s, n) {
  const plain = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "%") i += 2;
    else if (/[A-Za-z0-9]/.test(s[i])) plain.push(i);
  }
  return plain.at(n);
}
/** Encodes the `n`th plain character of a segment. */
const encodeAt = (n, depth, upper) => (s) => {
  const i = nthPlain(s, n);
  return i === undefined ? s : s.slice(0, i) + encode(s[i], depth, upper) + s.slice(i + 1);
};
const alternate = (s) => [...s].map((c, i) => (i % 2 ? c.toUpperCase() : c.toLowerCase())).join("");
const title = (s) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * Each path class: [name, spellers, representatives], a speller being
 * [label, path => path]. The representatives (indices) are the spellers
 * combined with other classes.
 */
const PATH_CLASSES = [
  [
    "case",
    [
      ["all upper", (p) => ({ ...p, segs: p.segs.map((s) => s.toUpperCase()) })],
      ["first segment upper", (p) => withSeg(p, 0, (s) => s.toUpperCase())],
      ["last segment upper", (p) => withSeg(p, p.segs.length - 1, (s) => s.toUpperCase())],
      ["title case", (p) => ({ ...p, segs: p.segs.map(title) })],
      ["first segment title case", (p) => withSeg(p, 0, title)],
      ["alternating", (p) => ({ ...p, segs: p.segs.map(alternate) })],
      ["last letter upper", (p) => withSeg(p, 0, (s) => s.slice(0, -1) + s.slice(-1).toUpperCase())],
    ],
    [0, 1, 3],
  ],
  [
    "encoding",
    [
      ["first character %xx", (p) => withSeg(p, 0, encodeAt(0, 1, false))],
      ["first character %XX", (p) => withSeg(p, 0, encodeAt(0, 1, true))],
      ["last character of the first segment %xx", (p) => withSeg(p, 0, encodeAt(-1, 1, false))],
      ["last character of the first segment %XX", (p) => withSeg(p, 0, encodeAt(-1, 1, true))],
      ["first character of the last segment %xx", (p) => withSeg(p, p.segs.length - 1, encodeAt(0, 1, false))],
      ["whole first segment %XX", (p) => withSeg(p, 0, (s) => [...s].map((c) => encode(c, 1, true)).join(""))],
      ["first character %25xx", (p) => withSeg(p, 0, encodeAt(0, 2, false))],
      ["first character %25XX", (p) => withSeg(p, 0, encodeAt(0, 2, true))],
      ["last character of the first segment %25xx", (p) => withSeg(p, 0, encodeAt(-1, 2, false))],
      ["first character of the last segment %25XX", (p) => withSeg(p, p.segs.length - 1, encodeAt(0, 2, true))],
      ["first character %2525xx", (p) => withSeg(p, 0, encodeAt(0, 3, false))],
      ["first character %2525XX", (p) => withSeg(p, 0, encodeAt(0, 3, true))],
    ],
    [0, 6, 10],
  ],
  [
    "path-parameters",
    [
      ["; after the first segment", (p) => withSeg(p, 0, (s) => `${s};`)],
      [";x after the first segment", (p) => withSeg(p, 0, (s) => `${s};x`)],
      [";x=1 after the last segment", (p) => withSeg(p, p.segs.length - 1, (s) => `${s};x=1`)],
      ["; after every segment", (p) => ({ ...p, segs: p.segs.map((s) => `${s};`) })],
      ["%3B after the first segment", (p) => withSeg(p, 0, (s) => `${s}%3B`)],
      ["%3bx after the first segment", (p) => withSeg(p, 0, (s) => `${s}%3bx`)],
      ["%253B after the first segment", (p) => withSeg(p, 0, (s) => `${s}%253B`)],
      ["%253bx after the last segment", (p) => withSeg(p, p.segs.length - 1, (s) => `${s}%253bx`)],
      ["%25253B after the first segment", (p) => withSeg(p, 0, (s) => `${s}%25253B`)],
    ],
    [1, 4, 6],
  ],
  [
    "empty-segments",
    [
      ["leading //", (p) => ({ ...p, before: "/" })],
      ["leading ///", (p) => ({ ...p, before: "//" })],
      ["inner //", (p) => withSep(p, p.segs.length - 1, "//")],
      ["leading and inner //", (p) => withSep({ ...p, before: "/" }, p.segs.length - 1, "//")],
      ["leading /;/", (p) => ({ ...p, before: "/;" })],
      ["leading /;x/", (p) => ({ ...p, before: "/;x" })],
      ["leading /%3Bx/", (p) => ({ ...p, before: "/%3Bx" })],
      ["leading /%3b/", (p) => ({ ...p, before: "/%3b" })],
      ["leading /%253Bx/", (p) => ({ ...p, before: "/%253Bx" })],
      ["inner /;/", (p) => withSep(p, p.segs.length - 1, "/;/")],
    ],
    [0, 2, 5],
  ],
  [
    "dot-segments",
    [
      ["leading /./", (p) => ({ ...p, before: "/." })],
      ["inner /./", (p) => withSep(p, p.segs.length - 1, "/./")],
      ["inner /x/../", (p) => withSep(p, p.segs.length - 1, "/x/../")],
      ["from /docs/../", (p) => ({ ...p, before: "/docs/.." })],
      ["from /healthz/../", (p) => ({ ...p, before: "/healthz/.." })],
      ["from /docs/%2e%2e/", (p) => ({ ...p, before: "/docs/%2e%2e" })],
      ["from /docs/.%2E/", (p) => ({ ...p, before: "/docs/.%2E" })],
      ["from /docs/..;/", (p) => ({ ...p, before: "/docs/..;" })],
      ["from /docs/..;x/", (p) => ({ ...p, before: "/docs/..;x" })],
      ["from /docs/%2e%2e;/", (p) => ({ ...p, before: "/docs/%2e%2e;" })],
      ["from /docs/..%3B/", (p) => ({ ...p, before: "/docs/..%3B" })],
      ["from /docs/..%253b/", (p) => ({ ...p, before: "/docs/..%253b" })],
      ["from /docs/%252e%252e/", (p) => ({ ...p, before: "/docs/%252e%252e" })],
      ["from /docs/%25%32%65%25%32%65/", (p) => ({ ...p, before: "/docs/%25%32%65%25%32%65" })],
      ["inner /..;/ after a decoy", (p) => withSep(p, p.segs.length - 1, "/x/..;/")],
    ],
    [1, 3, 7],
  ],
  [
    "separators",
    [
      ["%2F between segments", (p) => withSep(p, p.segs.length - 1, "%2F")],
      ["%2f between segments", (p) => withSep(p, p.segs.length - 1, "%2f")],
      ["%252F between segments", (p) => withSep(p, p.segs.length - 1, "%252F")],
      ["\\ between segments", (p) => withSep(p, p.segs.length - 1, "\\")],
      ["%5C between segments", (p) => withSep(p, p.segs.length - 1, "%5C")],
      ["leading \\", (p) => withSep(p, 0, "/\\")],
    ],
    [],
  ],
  [
    "trailing",
    [
      ...["/", "//", ".", ".json", ";", ";x", "%20", "/.", "/;", "%2e", "%2E", "/%2e", "%3B", "%3bx", "%253B", "~", "?", "?x=1", "#x", "%00", "%09"].map(
        (t) => [`trailing ${t}`, (p) => ({ ...p, after: t })],
      ),
    ],
    [0, 2, 3, 5],
  ],
  [
    // Fastify 4 (find-my-way's useSemicolonDelimiter, its default) routes
    // only what is before the first `;`: /account/export;/x is the route
    // /account/export, while a reading that strips path parameters per
    // segment sees /account/export/x. After the trailing class's `after`.
    "semicolon-query",
    [
      ...[";/x", ";x/y", ";a=b/x", ";//x", ";/x?y=1", "%3B/x", "%3b/x", "%253B/x"].map((t) => [`${t} after the last segment`, (p) => ({ ...p, after: p.after + t })]),
    ],
    [0],
  ],
];

/** The classes combined in threes: the readings that stack most often. */
const TRIPLES = [
  ["empty-segments", "case", "trailing"],
  ["path-parameters", "case", "trailing"],
  ["empty-segments", "path-parameters", "case"],
  ["encoding", "case", "trailing"],
  ["dot-segments", "case", "trailing"],
];

const classOf = (name) => PATH_CLASSES.find(([n]) => n === name);

/**
 * Every path spelling of `segments`: each speller of each class alone,
 * each pair of classes' representatives, and the TRIPLES' representatives,
 * in class order. Returns [{ classes, labels, path }], duplicates removed.
 */
export function pathSpellings(segments) {
  const out = new Map();
  const add = (spellers) => {
    const p = spellers.reduce((acc, [, , f]) => f(acc), shape(segments));
    const path = render(p);
    if (path === render(shape(segments)) || out.has(path)) return;
    out.set(path, { classes: [...new Set(spellers.map(([c]) => c))], labels: spellers.map(([, l]) => l), path });
  };
  const reps = (name) => {
    const [, spellers, indices] = classOf(name);
    return indices.map((i) => [name, ...spellers[i]]);
  };
  for (const [name, spellers] of PATH_CLASSES) for (const [label, f] of spellers) add([[name, label, f]]);
  const combinable = PATH_CLASSES.filter(([, , indices]) => indices.length > 0).map(([name]) => name);
  for (let a = 0; a < combinable.length; a++) {
    for (let b = a + 1; b < combinable.length; b++) {
      for (const x of reps(combinable[a])) for (const y of reps(combinable[b])) add([x, y]);
    }
  }
  for (const [a, b, c] of TRIPLES) {
    const ordered = [a, b, c].sort((m, n) => PATH_CLASSES.indexOf(classOf(m)) - PATH_CLASSES.indexOf(classOf(n)));
    for (const x of reps(ordered[0])) for (const y of reps(ordered[1])) for (const z of reps(ordered[2])) add([x, y, z]);
  }
  return [...out.values()];
}

/** A spelling: what is sent (method, target, fields, body) and which classes it combines. */
const spelling = (p, classes, method, target, { fields = [], body = "", note = "" } = {}) => ({
  marker: p.marker,
  rule: p.rule,
  classes,
  method,
  target,
  fields,
  body,
  note,
});

/** Method spellings of `method`: lower and mixed case, and HEAD (in its cases) for GET. */
function methodSpellings(method) {
  const cases = [method.toLowerCase(), title(method.toLowerCase()), alternate(method), method.slice(0, -1) + method.slice(-1).toLowerCase()];
  const head = method === "GET" ? ["HEAD", "head", "Head"] : [];
  return [...new Set([...cases, ...head])].filter((m) => m !== method);
}

/** A form body naming `method` in `_method`, as urlencoded or multipart: [fields, body]. */
function formBody(kind, method) {
  if (kind === "multipart") {
    const body = `--readings\r\nContent-Disposition: form-data; name="_method"\r\n\r\n${method}\r\n--readings--\r\n`;
    return [["Content-Type: multipart/form-data; boundary=readings", `Content-Length: ${body.length}`], body];
  }
  const forms = {
    urlencoded: ["application/x-www-form-urlencoded", `_method=${method}`],
    "urlencoded lower case": ["application/x-www-form-urlencoded", `_method=${method.toLowerCase()}`],
    "urlencoded with a charset": ["application/x-www-form-urlencoded; charset=UTF-8", `_method=${method}`],
    "urlencoded, name and value encoded": ["application/x-www-form-urlencoded", `%5Fmethod=%${hex(method[0]).toUpperCase()}${method.slice(1)}`],
    "urlencoded, named twice": ["application/x-www-form-urlencoded", `_method=PUT&_method=${method}`],
  };
  const [type, body] = forms[kind];
  return [[`Content-Type: ${type}`, `Content-Length: ${body.length}`], body];
}
const FORM_KINDS = ["urlencoded", "multipart", "urlencoded lower case", "urlencoded with a charset", "urlencoded, name and value encoded", "urlencoded, named twice"];

/**
 * `_method` in the query, naming `method`: [label, query]. Names and values
 * encoded as a query parser decodes them before it looks the name up.
 */
function overrideQueries(method) {
  const first = `%${hex(method[0]).toUpperCase()}${method.slice(1)}`;
  return [
    ["plain", `?_method=${method}`],
    ["lower case", `?_method=${method.toLowerCase()}`],
    ["value encoded", `?_method=${first}`],
    ["a letter of the name encoded", "?_m%65thod=" + method],
    ["name encoded", `?%5F%6D%65%74%68%6F%64=${method}`],
    ["after another", `?x=1&_method=${method}`],
    ["value and a +", `?_method=${method}+`],
  ];
}

/**
 * The method-override spellings that name `p`'s method from another one:
 * the header fields (from POST, GET, PUT, PATCH, DELETE), `_method` in the
 * query (from every other method, HEAD and OPTIONS included: Hono's
 * middleware overrides every method but GET) and `_method` in a form body
 * (from every other method that carries one: POST, PUT, PATCH, DELETE,
 * OPTIONS). The plain forms go with each of `paths`, the encoded ones with
 * the canonical path.
 */
function overrideSpellings(p, paths) {
  const out = [];
  const names = ["X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "X_HTTP_Method_Override", "X_HTTP_Method", "X_Method_Override"];
  const headerBases = ["POST", "GET", "PUT", "PATCH", "DELETE"].filter((m) => m !== p.method);
  const queryBases = ["POST", "GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"].filter((m) => m !== p.method);
  const bodyBases = ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"].filter((m) => m !== p.method);
  const cls = (classes) => [...classes, "method-override"];
  for (const { path, classes } of paths) {
    const canonical = classes.length === 0;
    for (const base of headerBases) {
      for (const name of names) {
        for (const value of [p.method, p.method.toLowerCase()]) {
          out.push(spelling(p, cls(classes), base, path, { fields: [`${name}: ${value}`] }));
        }
      }
    }
    for (const [label, query] of overrideQueries(p.method)) {
      if (!canonical && label !== "plain") continue;
      for (const base of queryBases) out.push(spelling(p, cls(classes), base, path + query, { note: `_method in the query, ${label}` }));
    }
    for (const kind of FORM_KINDS) {
      if (!canonical && kind !== "urlencoded" && kind !== "multipart") continue;
      const [fields, body] = formBody(kind, p.method);
      for (const base of bodyBases) out.push(spelling(p, cls(classes), base, path, { fields, body, note: `_method in a ${kind} body` }));
    }
  }
  return out;
}

/** Preflight-shaped OPTIONS requests to `paths`. */
function preflightSpellings(p, paths) {
  const out = [];
  const body = "dump=1&all=1";
  for (const { path, classes } of paths) {
    for (const origin of [ALLOWED_ORIGIN, OTHER_ORIGIN]) {
      for (const requested of [p.method, "PUT"]) {
        for (const query of ["", "?dump=1"]) {
          for (const withBody of [false, true]) {
            const fields = [`Origin: ${origin}`, `Access-Control-Request-Method: ${requested}`];
            if (withBody) fields.push("Content-Type: application/x-www-form-urlencoded", `Content-Length: ${body.length}`);
            out.push(spelling(p, [...classes, "preflight"], "OPTIONS", path + query, { fields, body: withBody ? body : "" }));
          }
        }
      }
    }
  }
  return out;
}

/**
 * The whole battery: for each protected request, every path spelling with
 * its method (and HEAD for GET), the method spellings, override requests
 * (for the method-scoped rule), preflights and absolute-form targets, each
 * combined with a few path spellings. Duplicates are removed.
 */
export function battery() {
  const out = new Map();
  const keep = (s) => {
    const key = JSON.stringify([s.method, s.target, s.fields, s.body]);
    if (!out.has(key)) out.set(key, s);
  };
  for (const p of PROTECTED) {
    const canonical = `/${p.segments.join("/")}`;
    const paths = pathSpellings(p.segments);
    const singles = paths.filter((s) => s.classes.length === 1);
    // A few readings every class is combined with: canonical, upper case, a leading //, a trailing /.
    const few = [{ path: canonical, classes: [] }, ...["all upper", "leading //", "trailing /", ";x after the first segment"].map(
      (label) => paths.find((s) => s.labels.length === 1 && s.labels[0] === label),
    )];
    for (const s of paths) keep(spelling(p, s.classes, p.method, s.path, { note: s.labels.join(" + ") }));
    for (const method of methodSpellings(p.method)) {
      const combined = method === "HEAD" ? [{ path: canonical, classes: [] }, ...singles] : few;
      const cls = method === "HEAD" ? "head-for-get" : "method-case";
      for (const s of combined) keep(spelling(p, [...s.classes, cls], method, s.path));
    }
    if (p.methodScoped) for (const s of overrideSpellings(p, few)) keep(s);
    for (const s of preflightSpellings(p, few)) keep(s);
    for (const s of [{ path: canonical, classes: [] }, ...singles]) {
      keep(spelling(p, [...s.classes, "absolute-form"], p.method, `http://gw.test${s.path}`));
    }
  }
  return [...out.values()];
}
