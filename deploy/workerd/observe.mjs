// What the gateway on workerd tells its operators about each decision: one
// JSON log line (Workers Logs indexes a JSON line's fields), off, sampled
// or on, and one Analytics Engine data point when a dataset is bound. Both
// carry the same fields as host-sim's JSON access log and the same names
// as the Prometheus labels of host-sim and the Envoy filter
// (README.md, "Watching the gateway").
//
// Labels come from the module: the outcome's name in the contract's table
// (OUTCOMES, held equal to contract/golden/outcomes.json by
// test/observe.test.mjs), and the rule, route and issuer as the module's
// `labels` and `routes` exports name them. Nothing a request carries
// becomes a label; the target's query (but for its parameters' count) and
// every header stay out of the line (a token may travel in either).

/** Every outcome by id (contract/src/outcome.rs, `NAMES`). */
export const OUTCOMES = [
  "forwarded", "public", "preflight", "malformed_request", "incomplete_request", "head_too_large",
  "too_many_headers", "invalid_field_value", "missing_host", "duplicate_host", "malformed_host",
  "conflicting_framing", "invalid_content_length", "unsupported_transfer_encoding", "content_on_get_or_head",
  "method_not_upper_case", "connect_not_allowed", "asterisk_form", "malformed_target", "control_in_target",
  "encoded_slash", "path_above_root", "dot_segment_parameters", "path_reads_another_rule",
  "method_reads_another_rule", "double_encoded_path", "target_too_long", "missing_authorization",
  "unsupported_scheme", "duplicate_authorization", "malformed_authorization", "malformed_token_field",
  "conflicting_tokens", "ambiguous_token_cookie", "token_too_long", "malformed_token", "bad_encoding",
  "malformed_header", "unsupported_algorithm", "unsupported_type", "critical_header", "unknown_key",
  "keys_unavailable", "key_id_required", "missing_signature", "bad_signature", "malformed_claims",
  "lone_surrogate", "missing_expiry", "expired", "not_yet_valid", "wrong_issuer", "issuer_not_allowed",
  "missing_audience", "no_route", "subject_not_header_safe", "claim_not_header_safe", "claim_type_mismatch",
  "insufficient_scope", "missing_role", "claim_mismatch", "denied", "not_found", "preflight_refused",
  "preflight_with_body", "scratch_exhausted", "invalid_clock", "invalid_context", "upstream_unavailable",
  "upstream_timed_out", "upstream_busy", "module_failed", "module_out_of_time", "gateway_busy",
  "body_too_large", "body_timed_out",
  "whitespace_at_segment_edge", "bound_token", "malformed_head", "rate_limited", "limit_store_unavailable",
  "dpop_required", "dpop_token_unbound", "dpop_key_mismatch", "dpop_proof_missing", "dpop_proof_repeated",
  "dpop_proof_with_bearer", "dpop_proof_malformed", "dpop_proof_bad_signature", "dpop_proof_wrong_method",
  "dpop_proof_wrong_uri", "dpop_proof_stale", "dpop_proof_wrong_token", "dpop_proof_replayed",
  "certificate_required", "certificate_missing", "certificate_mismatch", "dpop_nonce_required",
];

/**
 * How often a decision is logged, from the DECISION_LOG binding: "off"
 * (or unset) never, "on" always, a number between 0 and 1 that share of
 * decisions, chosen at random. Anything else is an error naming the value.
 */
export function logRate(value) {
  if (value == null || value === "" || value === "off") return 0;
  if (value === "on") return 1;
  const rate = Number(value);
  if (!/^(0|1|0?\.\d+)$/.test(String(value)) || !(rate >= 0 && rate <= 1)) {
    throw new Error(`DECISION_LOG: expected off, on or a share between 0 and 1, got ${JSON.stringify(value)}`);
  }
  return rate;
}

/**
 * The target as the logs show it, as host-sim writes it: the path, and of
 * the query only how many parameters it has, as `?<N>` (`/a?x=1&y` is
 * `/a?<2>`). Neither a parameter's value nor its name is written: a client
 * may put a token in either.
 */
export function redactedTarget(target) {
  const at = target.indexOf("?");
  if (at < 0) return target;
  const parameters = target.slice(at + 1).split("&").filter((p) => p !== "").length;
  return `${target.slice(0, at)}?<${parameters}>`;
}

/** The trace id of a valid W3C `traceparent`, or null. */
export function traceId(traceparent) {
  const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/.exec(traceparent ?? "");
  if (m === null || m[1] === "ff" || /^0+$/.test(m[2]) || /^0+$/.test(m[3]) || (m[1] === "00" && m[5] !== undefined)) return null;
  return m[2];
}

/**
 * The names a module's label indices stand for: `routes` its route table
 * ([audience, upstream] pairs), `table` its label table (`labels` export,
 * "" for a module without one). The one issuer of a module without one is
 * `issuer` (the ISSUER binding: the `iss` of the config it was built from),
 * or `0` when none is bound.
 */
export function labelNames(routes, table, issuer = null) {
  const names = { rules: [], routes: routes.map(([aud]) => aud), issuers: [] };
  for (const line of table === "" ? [] : table.split("\n")) {
    const space = line.indexOf(" ");
    const [kind, name] = [line.slice(0, space), line.slice(space + 1)];
    if (kind === "rule") names.rules.push(name);
    else if (kind === "issuer") names.issuers.push(name);
  }
  if (table === "") names.issuers.push(issuer || "0");
  return names;
}

/**
 * Writes what each decision came to: a JSON line through `log` (at the
 * DECISION_LOG rate) and a data point into `dataset` (a Workers Analytics
 * Engine binding), when there is one.
 */
export class Observer {
  /**
   * @param {{ rules: string[], routes: string[], issuers: string[] }} names
   * @param {{ rate?: number, dataset?: { writeDataPoint(point: object): void } | null,
   *   log?: (line: string) => void, random?: () => number }} options
   */
  constructor(names, { rate = 0, dataset = null, log = console.log, random = Math.random } = {}) {
    this.names = names;
    this.rate = rate;
    this.dataset = dataset;
    this.log = log;
    this.random = random;
  }

  /** Whether anything is written at all. */
  active() {
    return this.rate > 0 || this.dataset !== null;
  }

  /**
   * The record of one request: `labels` as the shim's reader gives them,
   * the module's (or the host's) `reason`, the `status` the client got,
   * the upstream's status (or the host's outcome when it gave none), and
   * the time from the request to the response head.
   */
  record(request, { labels, reason, status, upstream = null, durationMs = null }) {
    const pick = (names, index) => (index === null || index === undefined ? null : names[index] ?? "unknown");
    const url = request.url;
    const slash = url.indexOf("/", url.indexOf("//") + 2);
    return {
      gateway: "decision",
      method: request.method,
      target: redactedTarget(slash < 0 ? "/" : url.slice(slash)),
      status,
      outcome: OUTCOMES[labels.outcome] ?? "unknown",
      reason,
      rule: pick(this.names.rules, labels.rule),
      route: pick(this.names.routes, labels.route),
      issuer: pick(this.names.issuers, labels.issuer),
      cache: labels.cache,
      upstream_status: typeof upstream === "number" ? upstream : null,
      upstream_failure: typeof upstream === "string" ? upstream : null,
      duration_ms: durationMs,
      trace_id: traceId(request.headers.get("traceparent")),
    };
  }

  /** Writes `record` as a log line (sampled) and a data point. */
  write(record) {
    if (this.rate > 0 && (this.rate >= 1 || this.random() < this.rate)) this.log(JSON.stringify(record));
    if (this.dataset !== null) {
      try {
        this.dataset.writeDataPoint({
          // Analytics Engine's one sampling key: the outcome.
          indexes: [record.outcome],
          blobs: [record.outcome, record.rule ?? "", record.route ?? "", record.issuer ?? "", record.cache, record.method, record.trace_id ?? ""],
          doubles: [record.status, record.upstream_status ?? 0, record.duration_ms ?? 0],
        });
      } catch (error) {
        console.error(`gateway: analytics data point not written: ${error}`);
      }
    }
  }
}
