//! What a decision was, named for counters and logs (`ABI.md`, "Labels"):
//! every decision carries one label line, `#<outcome> <rule> <route>
//! <issuer> <cache>`, so that hosts count and log what the module decided
//! without reading its reasons or keeping a rule of their own.
//!
//! Outcomes are numbered by their place in [`NAMES`], which only grows:
//! an id keeps its meaning from one version to the next, so dashboards and
//! alerts keep working. The module writes the number; hosts name it from
//! this table (the workerd shim from `contract/golden/decisions.json`,
//! which the tests keep equal to it). Rule, route and issuer are indices
//! into the module's own tables (`labels` and `routes` exports), whose
//! names come from the config: no label ever holds request data.

/// Every outcome, by id: the three kinds of success, then one per reason a
/// request is turned away (the module's rejections, in `snake_case`), then
/// the answers hosts make themselves.
pub const NAMES: &[&str] = &[
    "forwarded",
    "public",
    "preflight",
    "malformed_request",
    "incomplete_request",
    "head_too_large",
    "too_many_headers",
    "invalid_field_value",
    "missing_host",
    "duplicate_host",
    "malformed_host",
    "conflicting_framing",
    "invalid_content_length",
    "unsupported_transfer_encoding",
    "content_on_get_or_head",
    "method_not_upper_case",
    "connect_not_allowed",
    "asterisk_form",
    "malformed_target",
    "control_in_target",
    "encoded_slash",
    "path_above_root",
    "dot_segment_parameters",
    "path_reads_another_rule",
    "method_reads_another_rule",
    "double_encoded_path",
    "target_too_long",
    "missing_authorization",
    "unsupported_scheme",
    "duplicate_authorization",
    "malformed_authorization",
    "malformed_token_field",
    "conflicting_tokens",
    "ambiguous_token_cookie",
    "token_too_long",
    "malformed_token",
    "bad_encoding",
    "malformed_header",
    "unsupported_algorithm",
    "unsupported_type",
    "critical_header",
    "unknown_key",
    "keys_unavailable",
    "key_id_required",
    "missing_signature",
    "bad_signature",
    "malformed_claims",
    "lone_surrogate",
    "missing_expiry",
    "expired",
    "not_yet_valid",
    "wrong_issuer",
    "issuer_not_allowed",
    "missing_audience",
    "no_route",
    "subject_not_header_safe",
    "claim_not_header_safe",
    "claim_type_mismatch",
    "insufficient_scope",
    "missing_role",
    "claim_mismatch",
    "denied",
    "not_found",
    "preflight_refused",
    "preflight_with_body",
    "scratch_exhausted",
    "invalid_clock",
    "invalid_context",
    // The answers hosts make themselves (`fields::HostAnswer`).
    "upstream_unavailable",
    "upstream_timed_out",
    "upstream_busy",
    "module_failed",
    "module_out_of_time",
    "gateway_busy",
    "body_too_large",
    "body_timed_out",
    // Added later: ids only grow.
    "whitespace_at_segment_edge",
    "bound_token",
    // A request head the host's HTTP server refused before the module saw it.
    "malformed_head",
    // A bucket the forward fell in was spent (`limits`): the 429 the module
    // writes when the host asks (`limited`).
    "rate_limited",
    // The host could not reach the store its rate limits are counted in,
    // and is set to fail closed (`fields::HostAnswer::LimitStoreUnavailable`).
    "limit_store_unavailable",
    // DPoP (RFC 9449): a token bound to a key, and the proof of that key.
    "dpop_required",
    "dpop_token_unbound",
    "dpop_key_mismatch",
    "dpop_proof_missing",
    "dpop_proof_repeated",
    "dpop_proof_with_bearer",
    "dpop_proof_malformed",
    "dpop_proof_bad_signature",
    "dpop_proof_wrong_method",
    "dpop_proof_wrong_uri",
    "dpop_proof_stale",
    "dpop_proof_wrong_token",
    "dpop_proof_replayed",
    // Certificate-bound tokens (RFC 8705).
    "certificate_required",
    "certificate_missing",
    "certificate_mismatch",
    // A DPoP proof without a nonce the gateway issued (RFC 9449 section 9).
    "dpop_nonce_required",
];

/// The outcome a forward of a verified token has.
pub const FORWARDED: u8 = id("forwarded");
/// The outcome a forward by a public rule has.
pub const PUBLIC: u8 = id("public");
/// The outcome of a CORS preflight the module answered.
pub const PREFLIGHT: u8 = id("preflight");
/// The outcome of a request head the host's own HTTP parser refused
/// (answered 400 by it, before any module ran).
pub const MALFORMED_HEAD: u8 = id("malformed_head");
/// The outcome of a request refused because a bucket it falls in is spent.
pub const RATE_LIMITED: u8 = id("rate_limited");
/// The outcome of a module that could not write its answer (status 500
/// with no output), as of one that trapped.
pub const MODULE_FAILED: u8 = id("module_failed");

/// The id of the outcome named `name`; a name not in [`NAMES`] fails the
/// build (every rejection of the module must have one).
pub const fn id(name: &str) -> u8 {
    let mut i = 0;
    while i < NAMES.len() {
        if eq(NAMES[i].as_bytes(), name.as_bytes()) {
            assert!(i <= u8::MAX as usize);
            return i as u8;
        }
        i += 1;
    }
    panic!("an outcome without a name in contract::outcome::NAMES")
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The id of the rejection variant `variant` (`UnknownKey` is
/// `unknown_key`): its name in `UpperCamelCase`, compared without the
/// underscores and in any case. A variant with no outcome fails the build.
pub const fn id_of_variant(variant: &str) -> u8 {
    let mut i = 0;
    while i < NAMES.len() {
        if eq_camel(variant.as_bytes(), NAMES[i].as_bytes()) {
            return i as u8;
        }
        i += 1;
    }
    panic!("a rejection without an outcome in contract::outcome::NAMES")
}

/// `camel` equals `snake` once `snake`'s underscores are gone, in any case.
const fn eq_camel(camel: &[u8], snake: &[u8]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < camel.len() && j < snake.len() {
        if snake[j] == b'_' {
            j += 1;
            continue;
        }
        if camel[i].to_ascii_lowercase() != snake[j] {
            return false;
        }
        i += 1;
        j += 1;
    }
    i == camel.len() && j == snake.len()
}

/// The name of outcome `id`, `None` for an id this contract does not know.
pub fn name(id: u8) -> Option<&'static str> {
    NAMES.get(usize::from(id)).copied()
}

/// True for the outcomes that reached an upstream (Envoy `jwt_authn`'s
/// `allowed`; every other outcome is its `denied`, or a preflight).
pub fn allowed(id: u8) -> bool {
    id == FORWARDED || id == PUBLIC
}

/// What decided one request: the label line of its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Labels {
    /// The outcome's id in [`NAMES`].
    pub outcome: u8,
    /// The index of the rule that applied, when one did.
    pub rule: Option<u16>,
    /// The index of the route the request went to, or the token's route.
    pub route: Option<u16>,
    /// The index of the issuer whose token was verified.
    pub issuer: Option<u8>,
    /// Whether the token's signature came from the instance's cache.
    pub cache: Cache,
}

impl Labels {
    /// An outcome with nothing else known yet.
    pub const fn of(outcome: u8) -> Self {
        Labels { outcome, rule: None, route: None, issuer: None, cache: Cache::None }
    }
}

/// Whether a verified token's signature was checked or found checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Cache {
    /// No token was verified, or the instance keeps no cache.
    #[default]
    None,
    /// Found in the cache of verified tokens (`jwt_authn`'s `jwt_cache_hit`).
    Hit,
    /// Verified now (`jwt_cache_miss`).
    Miss,
}

/// One line of a module's label table (its `labels` export, `ABI.md`,
/// "Labels"): the name of a rule or of an issuer, in index order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelName<'a> {
    /// `rule <name>`: the next rule's name.
    Rule(&'a str),
    /// `issuer <name>`: the next issuer's `iss` (`-` for one that accepts any).
    Issuer(&'a str),
}

/// The lines of a label table, in order; a line of another kind is skipped.
pub fn label_names(table: &str) -> impl Iterator<Item = LabelName<'_>> {
    table.split('\n').filter_map(|line| match line.split_once(' ')? {
        ("rule", name) => Some(LabelName::Rule(name)),
        ("issuer", name) => Some(LabelName::Issuer(name)),
        _ => None,
    })
}

impl crate::Encoder<'_> {
    /// One line of the label table, after a separator unless `first`.
    pub fn label_name(&mut self, first: bool, name: &LabelName<'_>) -> Result<(), crate::Full> {
        let (kind, name): (&[u8], &str) = match name {
            LabelName::Rule(name) => (b"rule ", name),
            LabelName::Issuer(name) => (b"issuer ", name),
        };
        let separator: &[u8] = if first { b"" } else { b"\n" };
        self.extend_value(&[separator, kind, name.as_bytes()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_labels_and_ids_fit_a_byte() {
        assert!(NAMES.len() <= 256);
        for (i, name) in NAMES.iter().enumerate() {
            assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{name}");
            assert!(!NAMES[i + 1..].contains(name), "{name} twice");
            assert_eq!(usize::from(id(name)), i);
        }
        assert_eq!((FORWARDED, PUBLIC, PREFLIGHT), (0, 1, 2));
        assert!(allowed(FORWARDED) && allowed(PUBLIC) && !allowed(PREFLIGHT) && !allowed(id("expired")));
    }

    #[test]
    fn a_label_table_reads_back_as_written() {
        let names =
            [LabelName::Rule("admin"), LabelName::Rule("rules[1]"), LabelName::Issuer("https://a.example")];
        let mut buf = [0u8; 128];
        let mut out = crate::Encoder::new(&mut buf);
        for (i, name) in names.iter().enumerate() {
            out.label_name(i == 0, name).expect("room");
        }
        let text = core::str::from_utf8(out.as_bytes()).expect("ASCII");
        assert_eq!(text, "rule admin\nrule rules[1]\nissuer https://a.example");
        assert!(label_names(text).eq(names));
        assert_eq!(label_names("").count(), 0);
    }
}
