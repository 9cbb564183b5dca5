//! The gateway configuration as the request path reads it: borrowed tables,
//! no allocation, and one compiled-in instance ([`COMPILED`]) generated from
//! `gateway.toml` by `build.rs` with the `config` crate, which validates
//! everything here first (sorted routes, indices in range, names that are
//! tokens, strings without quotes or line breaks). The generated code names
//! only the types of this module and of [`crate::keys`].
//!
//! A config without rules, CORS, claim headers or other token sources
//! decides exactly as the token-for-everything gateway always has; each
//! policy is also compiled out of a wasm module whose config does not use
//! it (`build.rs` sets the `policy_*` cfgs).

pub use contract::key_sources::SourceKind;

pub use crate::keys::{HmacKey, Hs256Key, VerifyingKey};

/// What the gateway checks and where it routes.
#[derive(Debug, Clone, Copy)]
pub struct Config<'c> {
    /// The realm named in `WWW-Authenticate` challenges.
    pub realm: &'c str,
    /// Proxies in front of the gateway whose `X-Forwarded-For` is trusted:
    /// 0 (an edge gateway, the first hop) replaces the client's value with
    /// the peer address; more keeps it and appends the peer, as Envoy's
    /// `xff_num_trusted_hops` does.
    pub trusted_proxy_hops: u32,
    /// The longest bearer token accepted, in bytes (`max_token_bytes`, 256
    /// to 8 KiB). A module's regions are sized for its compiled value
    /// ([`crate::abi::TOKEN_CAPACITY`]); a larger value here than they hold
    /// fails closed as "scratch exhausted", never overruns.
    pub max_token_bytes: usize,
    /// Who issues tokens, each with its keys. One issuer without `iss`
    /// accepts any `iss`; with several, a token's `iss` selects one.
    pub issuers: &'c [Issuer<'c>],
    /// Routes sorted by audience in byte order, without duplicates (the build
    /// guarantees it; [`Config::routes_are_sorted`] checks it).
    pub routes: &'c [Route<'c>],
    /// What each request needs beyond a valid token, and what travels with it.
    pub policy: Policy<'c>,
}

/// One issuer of tokens.
#[derive(Debug, Clone, Copy)]
pub struct Issuer<'c> {
    /// When set, `iss` must equal it exactly (and, with several issuers,
    /// selects this one).
    pub iss: Option<&'c str>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
    /// This issuer's keys; a kid of another issuer's never verifies.
    pub keys: &'c [VerifyingKey<'c>],
    /// The audiences its tokens may be routed by; empty: every route.
    pub audiences: &'c [&'c str],
    /// Where its keys are fetched at run time (`ABI.md`, "Keys fetched at
    /// run time"); `None`: its compiled keys only. A reference, so that
    /// an issuer without one costs the module one word.
    pub fetch: Option<&'c KeyFetch<'c>>,
}

/// Where and how often an issuer's keys are fetched: the key-source table
/// the module lists to its hosts, and the limits it installs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyFetch<'c> {
    /// What `url` is: the JWKS document or the discovery document.
    pub kind: SourceKind,
    /// The absolute http(s) URL the hosts fetch.
    pub url: &'c str,
    /// Fetch again this long after a success, at most.
    pub refresh_secs: u32,
    /// The shortest time between two fetches.
    pub refetch_secs: u32,
    /// How long one fetch may take.
    pub timeout_ms: u32,
    /// How long fetched keys stay usable without a successful fetch.
    pub max_stale_secs: u32,
    /// The most keys a document may hold.
    pub max_keys: u16,
}

/// One route: tokens for `audience` go to `origin`, under `base_path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<'c> {
    /// The audience, compared byte for byte.
    pub audience: &'c str,
    /// The upstream's scheme and authority (`http://10.0.0.5:8080`), no path.
    pub origin: &'c str,
    /// The path every forwarded request stays under: empty, or `/` and
    /// segments without a trailing slash (`/orders-svc`). The build checks
    /// that it is canonical (no dot segments, no escapes a server could
    /// read as a separator).
    pub base_path: &'c str,
}

/// The policies: rules per path and method, CORS, where tokens come from,
/// and the claims that travel upstream. [`Policy::NONE`] is the gateway
/// without any: a valid token for every request, its subject forwarded.
#[derive(Debug, Clone, Copy)]
pub struct Policy<'c> {
    /// Rules in the order written; the first that matches decides. No match:
    /// a valid token is needed, as without rules.
    pub rules: &'c [Rule<'c>],
    /// Cross-origin requests from browsers; `None`: no CORS answers.
    pub cors: Option<Cors<'c>>,
    /// Where tokens are taken from; empty: `Authorization: Bearer` only.
    pub token_sources: &'c [TokenSource<'c>],
    /// The claims the rules and claim headers read, by name; rules and
    /// headers name them by index.
    pub claims: &'c [&'c str],
    /// Indices in [`Policy::claims`] of the claims scopes are read from
    /// (`scope`, `scp`, or the configured ones).
    pub scope_claims: &'c [u8],
    /// Claims forwarded as headers.
    pub claim_headers: &'c [ClaimHeader<'c>],
    /// A header that carries the whole verified payload, base64url, as the
    /// token holds it (Envoy's `forward_payload_header`).
    pub payload_header: Option<&'c str>,
    /// How the servers behind the gateway may read a request: every reading
    /// must meet the rule the gateway's own reading meets.
    pub readings: Readings,
    /// Each rule's name (`name`, or `rules[i]`), by index: what hosts label
    /// the rule with (the `labels` export).
    pub rule_names: &'c [&'c str],
    /// Rate limits, and which of them each request falls under.
    pub limits: Limits<'c>,
    /// DPoP-bound tokens (RFC 9449), per issuer.
    pub dpop: Dpop<'c>,
    /// Certificate-bound tokens (RFC 8705): what each issuer accepts, by
    /// issuer index; an issuer past the end accepts none.
    pub certificate_bound: &'c [BindingMode],
}

/// Whether an issuer's tokens may be bound to their sender in one way
/// (a client certificate, RFC 8705), and whether they must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindingMode {
    /// Whether tokens bound this way are accepted with their binding proved.
    pub accept: bool,
    /// Whether only they are.
    pub required: bool,
}

impl BindingMode {
    /// Not accepted: a token bound this way is refused, as any token with `cnf`.
    pub const OFF: BindingMode = BindingMode { accept: false, required: false };

    /// Issuer `index`'s mode in `modes`.
    pub fn of(modes: &[BindingMode], index: usize) -> BindingMode {
        modes.get(index).copied().unwrap_or(BindingMode::OFF)
    }
}

/// DPoP (`crate::dpop`): what each issuer accepts, and the limit that
/// refuses a proof used twice.
#[derive(Debug, Clone, Copy)]
pub struct Dpop<'c> {
    /// By issuer index; an issuer past the end accepts no DPoP token.
    pub issuers: &'c [DpopIssuer],
    /// The index of the `dpop-proofs` limit in [`Limits::table`].
    pub replay_limit: u8,
    /// The header that carries a verified proof's key thumbprint upstream.
    pub thumbprint_header: Option<&'c str>,
    /// The nonces proofs must carry, for issuers that ask for them.
    pub nonce: Option<DpopNonce>,
}

/// The gateway's DPoP nonces (RFC 9449 section 9): the period each names,
/// and the key that signs it (`crate::jose::dpop::nonce`).
#[derive(Clone, Copy)]
pub struct DpopNonce {
    /// The period, in seconds; a nonce of this one or the one before passes.
    pub secs: u32,
    /// HMAC-SHA256's key states, which the build computes from the key.
    pub key: HmacKey,
}

/// Never prints the key.
impl core::fmt::Debug for DpopNonce {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DpopNonce").field("secs", &self.secs).finish_non_exhaustive()
    }
}

impl Dpop<'_> {
    /// No issuer accepts DPoP.
    pub const NONE: Dpop<'static> =
        Dpop { issuers: &[], replay_limit: 0, thumbprint_header: None, nonce: None };

    /// Whether any issuer accepts DPoP: otherwise the request path reads no
    /// `Authorization: DPoP` and no `DPoP` field, as a module built without
    /// DPoP does.
    pub fn accepted(&self) -> bool {
        self.issuers.iter().any(|i| i.accept)
    }

    /// What issuer `index` accepts.
    pub fn of(&self, index: usize) -> DpopIssuer {
        self.issuers.get(index).copied().unwrap_or(DpopIssuer::OFF)
    }
}

/// One issuer's DPoP settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpopIssuer {
    /// Whether DPoP-bound tokens are accepted with their proofs.
    pub accept: bool,
    /// Whether only they are (bearer tokens refused).
    pub required: bool,
    /// How far a proof's `iat` may be from now, before the leeway.
    pub window_secs: u32,
    /// Whether its proofs must carry a nonce the gateway issued.
    pub nonce: bool,
}

impl DpopIssuer {
    /// No DPoP: a bound token is refused, as any token with `cnf`.
    pub const OFF: DpopIssuer = DpopIssuer { accept: false, required: false, window_secs: 0, nonce: false };
}

/// Rate limits (`crate::limits`): the table hosts count with, and the
/// limits of each rule's requests.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'c> {
    /// Every limit; a decision names them by index.
    pub table: &'c [Limit<'c>],
    /// For each rule (by index), the limits its forwards fall under.
    pub by_rule: &'c [&'c [u8]],
    /// The limits of a forward no rule matched.
    pub unmatched: &'c [u8],
}

impl Limits<'_> {
    /// No limits.
    pub const NONE: Limits<'static> = Limits { table: &[], by_rule: &[], unmatched: &[] };
}

/// One rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit<'c> {
    /// Its name: the start of every bucket key, and what hosts report.
    pub name: &'c str,
    /// Requests per `per_secs`, on average.
    pub requests: u32,
    /// The period, in seconds.
    pub per_secs: u32,
    /// At most this many at once.
    pub burst: u32,
    /// What a bucket is kept per.
    pub by: LimitKey,
    /// Whether forwards carry the RateLimit fields for it.
    pub fields: bool,
}

impl<'c> Limit<'c> {
    /// The limit as hosts count it (`contract::limits`), the numbers of its
    /// `limit` line.
    pub fn counted(&self) -> contract::limits::Limit<'c> {
        contract::limits::Limit {
            name: self.name,
            requests: self.requests,
            per_secs: self.per_secs,
            burst: self.burst,
            fields: self.fields,
        }
    }
}

/// What a limit's buckets are kept per: only what the gateway verified, or
/// the address the host saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKey {
    /// The issuer and the verified subject.
    Subject,
    /// The issuer and a verified claim (its index in [`Policy::claims`]).
    Claim(u8),
    /// The peer address of the context line.
    ClientAddress,
    /// The route: one bucket for every caller.
    Route,
    /// A DPoP proof's `jti` (the replay limit: `crate::dpop`).
    ProofId,
}

/// The ways the servers behind the gateway may read a path or a method
/// differently from the gateway (`policy::readings`). All are on unless the
/// config says no upstream reads a request that way (`[upstreams]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Readings {
    /// Paths matched in any letter case (Express, ASP.NET Core).
    pub any_case: bool,
    /// A trailing slash ignored (Express, ASP.NET Core, Spring MVC before 6).
    pub trailing_slash: bool,
    /// A `.ext` suffix ignored (Spring MVC's suffix patterns).
    pub suffix: bool,
    /// `;` parameters stripped from each segment (Tomcat, Jetty, Spring).
    pub path_parameters: bool,
    /// A method-override header or `_method` honoured (Express
    /// `method-override`, ASP.NET Core, Laravel, Symfony, Rails).
    pub method_override: bool,
    /// Whether some rule's path has an upper-case letter (the build works
    /// it out): otherwise a path without one reads as no other rule in
    /// another case, and the request path skips that reading.
    pub rules_have_upper_case: bool,
    /// Whether some exact rule's path ends with `/` (the build works it
    /// out): otherwise only a path ending with `/` reads as another rule
    /// without it.
    pub exact_rules_end_with_slash: bool,
}

impl Readings {
    /// Every reading: the safe default.
    pub const ALL: Readings = Readings {
        any_case: true,
        trailing_slash: true,
        suffix: true,
        path_parameters: true,
        method_override: true,
        rules_have_upper_case: true,
        exact_rules_end_with_slash: true,
    };
}

impl Policy<'_> {
    /// No policy at all.
    pub const NONE: Policy<'static> = Policy {
        rules: &[],
        cors: None,
        token_sources: &[],
        claims: &[],
        scope_claims: &[],
        claim_headers: &[],
        payload_header: None,
        readings: Readings::ALL,
        rule_names: &[],
        limits: Limits::NONE,
        dpop: Dpop::NONE,
        certificate_bound: &[],
    };
}

/// One rule: requests of its methods whose normalized path it matches need
/// what its access says.
#[derive(Debug, Clone, Copy)]
pub struct Rule<'c> {
    /// Methods (exact tokens, `GET`, `POST`, ...); empty: any method.
    pub methods: &'c [&'c str],
    /// Which normalized paths.
    pub path: PathMatch<'c>,
    /// What a matching request needs.
    pub access: Access<'c>,
}

/// Which normalized paths a rule matches (the path as the module forwards
/// it, before the route's base path: dot segments removed, unreserved
/// escapes decoded, no query).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathMatch<'c> {
    /// Exactly this path.
    Exact(&'c str),
    /// This path and every path below it, on a segment boundary: `/admin`
    /// matches `/admin`, `/admin/` and `/admin/x`, never `/adminx`.
    Prefix(&'c str),
}

/// What a request needs.
#[derive(Debug, Clone, Copy)]
pub enum Access<'c> {
    /// No token: forwarded to the route at this index of the route table,
    /// with no subject and no claims (a token sent anyway is ignored and
    /// dropped like any other).
    Public {
        /// The route's index in [`Config::routes`].
        route: u16,
    },
    /// A valid token, routed by its audience, that meets these requirements.
    Token(Requirements<'c>),
    /// Never forwarded: answered with this status (403 or 404).
    Deny {
        /// 403 or 404.
        status: u16,
    },
}

/// What a valid token must carry besides its audience, read from its
/// verified claims with their escapes decoded. A token without it is 403
/// `insufficient_scope` (RFC 6750 section 3.1).
#[derive(Debug, Clone, Copy, Default)]
pub struct Requirements<'c> {
    /// Every one of these scopes.
    pub scopes_all: &'c [&'c str],
    /// At least one of these scopes (when not empty).
    pub scopes_any: &'c [&'c str],
    /// The `scope` attribute of the challenge: the scopes above, space-separated.
    pub scope_attribute: &'c str,
    /// Membership in an array claim (`roles`, `groups`).
    pub roles: Option<Roles<'c>>,
    /// Exact claim values.
    pub claim_values: &'c [ClaimValue<'c>],
    /// The issuers (indices in [`Config::issuers`]) whose tokens the rule
    /// accepts; empty: every issuer.
    pub issuers: &'c [u8],
}

impl Requirements<'_> {
    /// A valid token and nothing more.
    pub const NONE: Requirements<'static> = Requirements {
        scopes_all: &[],
        scopes_any: &[],
        scope_attribute: "",
        roles: None,
        claim_values: &[],
        issuers: &[],
    };
}

/// Membership in the strings of an array claim (or a string claim, as one
/// member).
#[derive(Debug, Clone, Copy)]
pub struct Roles<'c> {
    /// The claim's index in [`Policy::claims`].
    pub claim: u8,
    /// Every one of these.
    pub all: &'c [&'c str],
    /// At least one of these (when not empty).
    pub any: &'c [&'c str],
}

/// A claim that must have exactly this value.
#[derive(Debug, Clone, Copy)]
pub struct ClaimValue<'c> {
    /// The claim's index in [`Policy::claims`].
    pub claim: u8,
    /// The value.
    pub value: Literal<'c>,
}

/// A JSON value a claim is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Literal<'c> {
    /// A string, compared with the claim's decoded text.
    String(&'c str),
    /// An integer, compared with a JSON number written as an integer.
    Integer(i64),
    /// `true` or `false`.
    Bool(bool),
}

/// A claim forwarded upstream as a header.
#[derive(Debug, Clone, Copy)]
pub struct ClaimHeader<'c> {
    /// The claim's index in [`Policy::claims`].
    pub claim: u8,
    /// The header (lower case), dropped from the client's request in every spelling.
    pub header: &'c str,
    /// A value that cannot travel intact (outside visible ASCII, a leading
    /// or trailing space, a `,` that would read as a list separator) is
    /// percent-encoded (`%` included) instead of refused with 401.
    pub percent_encode: bool,
    /// The JSON type the claim must have (`type`); `None`: any of string,
    /// number, boolean or list.
    pub value_type: Option<ClaimType>,
}

pub use contract::ClaimType;

/// Where a token may come from. A request carries at most one token: the
/// same token in two places is one, different ones are refused (400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource<'c> {
    /// `Authorization: Bearer <token>` (RFC 6750 section 2.1).
    Bearer,
    /// A header of this name (lower case), its value the token after an
    /// optional prefix (compared ASCII case-insensitively).
    Header {
        /// The header.
        name: &'c str,
        /// What precedes the token (`Token `), or empty.
        prefix: &'c str,
    },
    /// A cookie of this name (RFC 6265 section 5.4; the name is case-sensitive).
    Cookie(&'c str),
}

/// CORS (the Fetch standard): which browser origins may call the API.
#[derive(Debug, Clone, Copy)]
pub struct Cors<'c> {
    /// Allowed origins, exactly as browsers send them (`https://app.example`);
    /// `["*"]` allows any origin and is refused with credentials.
    pub origins: &'c [&'c str],
    /// Allowed methods (exact tokens).
    pub methods: &'c [&'c str],
    /// The same, joined for `Access-Control-Allow-Methods`.
    pub methods_joined: &'c str,
    /// Allowed request headers (lower case).
    pub headers: &'c [&'c str],
    /// The same, joined for `Access-Control-Allow-Headers` (empty: none).
    pub headers_joined: &'c str,
    /// `Access-Control-Expose-Headers` (empty: none).
    pub expose_headers: &'c str,
    /// `Access-Control-Max-Age` in seconds, as written (empty: none).
    pub max_age: &'c str,
    /// `Access-Control-Allow-Credentials: true` (cookies and `Authorization`).
    pub credentials: bool,
    /// A preflight this config does not allow is forwarded, with no token,
    /// to the route at this index instead of refused with 403.
    pub unmatched_preflight_route: Option<u16>,
}

impl Config<'_> {
    /// True when the route table is strictly ascending, as binary search needs.
    pub fn routes_are_sorted(&self) -> bool {
        self.routes.windows(2).all(|w| w[0].audience.as_bytes() < w[1].audience.as_bytes())
    }

    /// The token buffer the config needs at least: the longest token it accepts.
    pub fn max_token_len(&self) -> usize {
        self.max_token_bytes
    }
}

include!(concat!(env!("OUT_DIR"), "/config.rs"));

/// The compiled config's issuers: the store of fetched keys keeps a clock
/// for each.
pub const ISSUER_COUNT: usize = CONFIG.issuers.len();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_config_is_sorted_and_has_keys() {
        assert!(COMPILED.routes_are_sorted());
        assert!(COMPILED.issuers.iter().all(|issuer| !issuer.keys.is_empty()));
        let hs256 = COMPILED.issuers.iter().flat_map(|i| i.keys).filter_map(|k| match k {
            VerifyingKey::Hs256(key) => Some(key),
            #[allow(unreachable_patterns)]
            _ => None,
        });
        for key in hs256 {
            assert!(key.secret.len() >= 32);
            assert!(key.hmac == crate::jose::signature::tests::keyed(key.secret), "{}", key.kid);
        }
    }
}
