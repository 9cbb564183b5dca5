//! Every way a request can be turned away, with its HTTP status, its RFC 6750
//! error code and a short reason.
//!
//! One enum for the whole request path keeps the answers consistent: each
//! phase returns `Err(Rejection::X)` and the response writer turns it into a
//! status, a `WWW-Authenticate` challenge and a JSON body. The enum, its
//! list of variants, and the status, code and reason of each are generated
//! from the one table below, so a new variant cannot be forgotten by any of
//! them.

/// The RFC 6750 section 3.1 error codes the gateway uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The request is malformed: 400.
    InvalidRequest,
    /// The token is expired, malformed, forged or not for us: 401.
    InvalidToken,
    /// The token is valid but lacks what the resource requires: 403
    /// (RFC 6750 section 3.1).
    InsufficientScope,
    /// The DPoP proof is missing, malformed or does not prove the token's
    /// key for this request: 401 (RFC 9449 section 7.1).
    InvalidDpopProof,
    /// The proof carries no nonce the gateway issued, or a stale one: 401
    /// with a fresh one in `DPoP-Nonce` (RFC 9449 section 9).
    UseDpopNonce,
}

impl ErrorCode {
    /// The code as it appears in `error="..."`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::InvalidToken => "invalid_token",
            // Only a module whose rules read claims gives it (the text is not
            // carried otherwise).
            #[cfg(policy_claims)]
            ErrorCode::InsufficientScope => "insufficient_scope",
            #[cfg(not(policy_claims))]
            ErrorCode::InsufficientScope => "",
            #[cfg(policy_dpop)]
            ErrorCode::InvalidDpopProof => "invalid_dpop_proof",
            #[cfg(not(policy_dpop))]
            ErrorCode::InvalidDpopProof => "",
            #[cfg(policy_dpop)]
            ErrorCode::UseDpopNonce => "use_dpop_nonce",
            #[cfg(not(policy_dpop))]
            ErrorCode::UseDpopNonce => "",
        }
    }
}

/// Generates [`Rejection`] from rows of `doc, Variant => (status, code,
/// reason)`, optionally `if policy_x`: the policy cfg that alone gives the
/// rejection. A module built without that policy never gives it, so its
/// reason is not carried (the module stays the size of its config). A row
/// marked `only x` exists only with cfg `x`: its variant too.
macro_rules! rejections {
    ($($(#[doc = $doc:literal])+ $variant:ident => ($status:literal, $code:expr, $reason:literal) $(if $given:meta)? $(only $only:meta)?,)+) => {
        /// Why a request was not forwarded. Variants carry no data, so a
        /// rejection is one byte and its reason a static string; the byte
        /// is the id of its outcome in `contract::outcome`, which every
        /// decision's label line carries.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Rejection {
            $($(#[doc = $doc])+ $(#[cfg($only)])? $variant = contract::outcome::id_of_variant(stringify!($variant)),)+
        }

        impl Rejection {
            /// Every variant, in table order.
            pub const ALL: &'static [Rejection] = &[$($(#[cfg($only)])? Rejection::$variant,)+];

            /// The HTTP status of the answer.
            pub const fn status(self) -> u16 {
                match self {
                    $($(#[cfg($only)])? Rejection::$variant => $status,)+
                }
            }

            /// The RFC 6750 error code. None for a request with no
            /// credentials (RFC 6750 section 3.1: no error code when
            /// authentication was not attempted) and for the gateway's own
            /// failures.
            pub const fn error_code(self) -> Option<ErrorCode> {
                match self {
                    $($(#[cfg($only)])? Rejection::$variant => $code,)+
                }
            }

            /// The id of this rejection's outcome (`contract::outcome`),
            /// which the decision's label line carries.
            pub const fn outcome(self) -> u8 {
                self as u8
            }

            /// A short reason for `error_description`, made only of the
            /// characters RFC 6750 allows there (%x20-21 / %x23-5B / %x5D-7E).
            pub fn reason(self) -> &'static str {
                // One table, indexed by the variant's outcome id: a reason
                // whose policy is compiled out is empty, so its text is not
                // carried, and so are the outcomes that are no rejection.
                // The table ends at the last rejection of this build, so
                // outcomes added later cost a module without them nothing.
                const LEN: usize = {
                    let mut len = 0;
                    $($(#[cfg($only)])? {
                        let id = Rejection::$variant as usize;
                        if id >= len {
                            len = id + 1;
                        }
                    })+
                    len
                };
                const REASONS: [&str; LEN] = {
                    let mut table = [""; LEN];
                    $($(#[cfg($only)])? {
                        $(#[cfg($given)])? let reason = $reason;
                        $(#[cfg(not($given))] let reason = "";)?
                        table[Rejection::$variant as usize] = reason;
                    })+
                    table
                };
                const TEXT: Reasons<{ REASONS.len() + 1 }, { joined_len(&REASONS) }> = Reasons::join(&REASONS);
                TEXT.get(self as usize)
            }
        }
    };
}

/// The reasons end to end in one string, and where each starts: two bytes
/// a reason beside its text, where a table of `&str` takes eight (a pointer
/// and a length).
struct Reasons<const BOUNDS: usize, const LEN: usize> {
    /// Every reason, in table order, with nothing between them.
    text: [u8; LEN],
    /// Where reason `i` starts (`bounds[i]`) and ends (`bounds[i + 1]`).
    bounds: [u16; BOUNDS],
}

/// The length of `reasons` end to end.
const fn joined_len(reasons: &[&str]) -> usize {
    let (mut len, mut i) = (0, 0);
    while i < reasons.len() {
        len += reasons[i].len();
        i += 1;
    }
    len
}

impl<const BOUNDS: usize, const LEN: usize> Reasons<BOUNDS, LEN> {
    /// Joins `reasons`; the build fails if they do not fit.
    const fn join(reasons: &[&str]) -> Self {
        assert!(BOUNDS == reasons.len() + 1 && LEN <= u16::MAX as usize);
        let mut joined = Reasons { text: [0; LEN], bounds: [0; BOUNDS] };
        let (mut at, mut i) = (0, 0);
        while i < reasons.len() {
            let reason = reasons[i].as_bytes();
            let mut j = 0;
            while j < reason.len() {
                joined.text[at] = reason[j];
                at += 1;
                j += 1;
            }
            i += 1;
            joined.bounds[i] = at as u16;
        }
        joined
    }

    /// Reason `index`; empty past the last.
    fn get(&'static self, index: usize) -> &'static str {
        let bound = |i: usize| self.bounds.get(i).map_or(0, |&b| usize::from(b));
        let bytes = self.text.get(bound(index)..bound(index + 1)).unwrap_or_default();
        // Whole reasons are whole strings, so this never falls back.
        core::str::from_utf8(bytes).unwrap_or_default()
    }
}

const REQUEST: Option<ErrorCode> = Some(ErrorCode::InvalidRequest);
const TOKEN: Option<ErrorCode> = Some(ErrorCode::InvalidToken);
const SCOPE: Option<ErrorCode> = Some(ErrorCode::InsufficientScope);
const NONE: Option<ErrorCode> = None;
#[cfg(policy_dpop)]
const PROOF: Option<ErrorCode> = Some(ErrorCode::InvalidDpopProof);
#[cfg(policy_dpop)]
const NONCE: Option<ErrorCode> = Some(ErrorCode::UseDpopNonce);

rejections! {
    /// The request head is not valid HTTP/1.x.
    MalformedRequest => (400, REQUEST, "malformed request head"),
    /// The request head ends before its blank line.
    IncompleteRequest => (400, REQUEST, "incomplete request head"),
    /// The request head is larger than the module's input buffer.
    HeadTooLarge => (431, REQUEST, "request head too large"),
    /// The request head has more header fields than the parser holds.
    TooManyHeaders => (431, REQUEST, "too many header fields"),
    /// A header value holds a control byte (RFC 9110 section 5.5).
    InvalidFieldValue => (400, REQUEST, "invalid header field value"),
    /// An HTTP/1.1 request without `Host` (RFC 9112 section 3.2).
    MissingHost => (400, REQUEST, "host header required"),
    /// More than one `Host` field.
    DuplicateHost => (400, REQUEST, "more than one host header"),
    /// A `Host` value that is not an authority (host and optional port).
    MalformedHost => (400, REQUEST, "malformed host header"),
    /// Both `Content-Length` and `Transfer-Encoding`: the classic request
    /// smuggling shape (RFC 9112 section 6.1).
    ConflictingFraming => (400, REQUEST, "both content-length and transfer-encoding"),
    /// More than one `Content-Length`, or one that is not a decimal number.
    InvalidContentLength => (400, REQUEST, "invalid content-length"),
    /// A `Transfer-Encoding` other than exactly `chunked`, or one on HTTP/1.0.
    UnsupportedTransferEncoding => (400, REQUEST, "transfer-encoding must be chunked"),
    /// A `GET` or `HEAD` that frames content (RFC 9110 sections 9.3.1 and
    /// 9.3.2: it has no defined meaning there, and some servers read it as
    /// the next request). Refused on every host alike: workerd's `fetch()`
    /// cannot send it, where hyper and Envoy would.
    ContentOnGetOrHead => (400, REQUEST, "content on a GET or HEAD request"),
    /// A method with a lower-case letter: methods are case-sensitive (RFC
    /// 9110 section 9.1) and every registered one is upper case, but Flask,
    /// Django and ASP.NET Core fold `delete` into `DELETE`.
    MethodNotUpperCase => (400, REQUEST, "method not in upper case"),
    /// `CONNECT`: the gateway forwards requests, it does not open tunnels.
    ConnectNotAllowed => (400, REQUEST, "CONNECT not supported"),
    /// An asterisk-form target (`OPTIONS *`) names no resource to forward.
    AsteriskForm => (400, REQUEST, "asterisk-form target not supported"),
    /// A target that is neither origin-form nor an http(s) absolute-form,
    /// holds user info, or has a broken percent-escape.
    MalformedTarget => (400, REQUEST, "malformed request target"),
    /// A control byte or non-ASCII byte in the target, raw or (controls) percent-encoded.
    ControlInTarget => (400, REQUEST, "control or non-ASCII byte in request target"),
    /// `%2F`, `%5C` or a raw backslash in the path: read as a separator by
    /// some servers and not by others (Envoy's `REJECT_REQUEST` default).
    EncodedSlash => (400, REQUEST, "encoded slash or backslash in path"),
    /// A `..` segment that would climb above the path's root.
    PathAboveRoot => (400, REQUEST, "path climbs above its root"),
    /// A `.` or `..` segment with `;` parameters, which some servers read as
    /// a dot segment (`/..;/`).
    DotSegmentParameters => (400, REQUEST, "dot segment with parameters"),
    /// A path that servers behind the gateway read under another rule than
    /// the gateway's own reading: `;` parameters stripped (Tomcat, Jetty,
    /// Spring), letters in another case (Express, ASP.NET Core), a trailing
    /// slash or a `.ext` suffix ignored (Express, Spring MVC), so
    /// `/admin;x/users`, `/ADMIN/users` or `/account/export/` past a rule
    /// for `/admin` or `/account/export` (`policy::readings`).
    PathReadsAnotherRule => (400, REQUEST, "path meets another rule on some servers") if policy_rules,
    /// A method-override header, `_method` in the query or a form body a
    /// framework reads `_method` from, on a path where the method it names
    /// meets another rule than the request's own method (or `HEAD` where
    /// `GET` meets another rule: servers answer `HEAD` with `GET` handlers).
    MethodReadsAnotherRule => (400, REQUEST, "method override meets another rule") if policy_rules,
    /// `%25` followed by two hex digits in the path (`%2561`, `%252e`): a
    /// server, or a proxy before it, that decodes twice reads another byte
    /// there, a letter or a separator (RFC 3986 section 2.4).
    DoubleEncodedPath => (400, REQUEST, "double-encoded character in path"),
    /// Encoded whitespace (`%20`, `%A0`, `%85`, or a UTF-8 space such as
    /// `%C2%A0` or `%E3%80%80`) at the start or end of a path segment, or
    /// of a segment's name before its `;` parameters: a server, or a proxy
    /// before it, that decodes the path and trims it reads another path
    /// there (`/account/export%20` as `/account/export`).
    WhitespaceAtSegmentEdge => (400, REQUEST, "encoded whitespace at a path segment's edge") if policy_rules,
    /// The normalized target is longer than the gateway forwards.
    TargetTooLong => (414, REQUEST, "request target too long"),
    /// No `Authorization` header.
    MissingAuthorization => (401, NONE, "bearer token required"),
    /// An `Authorization` header with a scheme other than Bearer.
    UnsupportedScheme => (401, NONE, "authorization scheme must be Bearer"),
    /// More than one `Authorization` header.
    DuplicateAuthorization => (400, REQUEST, "more than one authorization header"),
    /// `Bearer` without a token, a tab after the scheme, or characters that
    /// RFC 6750's b64token does not allow.
    MalformedAuthorization => (400, REQUEST, "malformed authorization header"),
    /// A token cookie or token header that is empty, repeated in one field
    /// kind with another value, or holds characters RFC 6750's b64token does
    /// not allow (after the configured prefix).
    MalformedTokenField => (400, REQUEST, "malformed token cookie or header") if policy_sources,
    /// Tokens in more than one place (header, cookie, `Authorization`) that
    /// differ: exactly one token per request.
    ConflictingTokens => (400, REQUEST, "more than one token") if policy_sources,
    /// A `Cookie` field that some server reads as holding a token cookie
    /// where the gateway reads none (or another): pairs joined with `,`
    /// (RFC 2109, which Java and Python parsers still accept), a name
    /// percent-encoded (PHP decodes it), in another case (ASP.NET Core
    /// compares names case-insensitively) or with `.` or a space for `_`
    /// (PHP). The gateway would neither read nor drop that token.
    AmbiguousTokenCookie => (400, REQUEST, "token cookie spelled ambiguously") if policy_sources,
    /// The token is longer than `max_token_bytes` of the config (256 by
    /// default). The reason names no number, so that every build answers
    /// alike whatever its setting.
    TokenTooLong => (401, TOKEN, "token longer than the gateway accepts"),
    /// The token is not three dot-separated parts.
    MalformedToken => (401, TOKEN, "token is not a compact JWS"),
    /// A part holds a character outside base64url, padding, or non-canonical bits.
    BadEncoding => (401, TOKEN, "token is not canonical base64url"),
    /// The JOSE header is not strict JSON (RFC 8259, nested at most 16 deep)
    /// or not an object of the expected shape.
    MalformedHeader => (401, TOKEN, "malformed token header"),
    /// `alg` is missing, names an algorithm this build does not verify, or
    /// is not the algorithm of the key `kid` selects. One reason for every
    /// build, so that a host or test reads the same answer from any of them.
    UnsupportedAlgorithm => (401, TOKEN, "alg not accepted for this key"),
    /// `typ` is present and neither `JWT` nor `at+jwt`.
    UnsupportedType => (401, TOKEN, "typ must be JWT or at+jwt"),
    /// The header carries `crit`, which this gateway does not understand.
    CriticalHeader => (401, TOKEN, "crit header not supported"),
    /// `kid` names no configured key.
    UnknownKey => (401, TOKEN, "unknown kid"),
    /// The token's issuer fetches its keys at run time, and none are
    /// installed or they are older than its `max_stale_secs`: the gateway
    /// fails closed rather than trust keys the provider may have withdrawn.
    KeysUnavailable => (503, NONE, "signing keys unavailable") only runtime_keys,
    /// No `kid`, and more than one key is configured.
    KeyIdRequired => (401, TOKEN, "kid required"),
    /// The signature part is empty.
    MissingSignature => (401, TOKEN, "signature missing"),
    /// The HMAC does not match (or is not 32 bytes).
    BadSignature => (401, TOKEN, "signature mismatch"),
    /// The claims are not strict JSON (RFC 8259, nested at most 16 deep) or
    /// not an object of the expected shape (wrong types, duplicate keys, too
    /// many audiences).
    MalformedClaims => (401, TOKEN, "malformed claims"),
    /// `iss`, `sub` or `aud` holds a `\uXXXX` escape naming half a surrogate
    /// pair: no Unicode text can hold it, so it cannot be compared or forwarded.
    LoneSurrogate => (401, TOKEN, "lone surrogate escape in a claim"),
    /// The token carries `cnf` (RFC 7800): it is bound to a key its sender
    /// must prove (DPoP, RFC 9449; a client certificate, RFC 8705), and the
    /// gateway did not verify that binding for this request. Accepting it
    /// as a bearer token would let whoever copied it use it.
    BoundToken => (401, TOKEN, "token bound to a key (cnf) not verified here"),
    /// No `exp` claim.
    MissingExpiry => (401, TOKEN, "exp claim required"),
    /// `exp` plus leeway is in the past.
    Expired => (401, TOKEN, "token expired"),
    /// `nbf` minus leeway is in the future.
    NotYetValid => (401, TOKEN, "token not yet valid"),
    /// `iss` is missing or not the configured issuer.
    WrongIssuer => (401, TOKEN, "issuer not accepted"),
    /// A valid token whose issuer the rule does not accept (`issuers` on the
    /// rule: Envoy `jwt_authn`'s `requires: provider_name`).
    IssuerNotAllowed => (401, TOKEN, "issuer not accepted for this path") if policy_issuers,
    /// No `aud` claim, or an empty list.
    MissingAudience => (401, TOKEN, "aud claim required"),
    /// No audience of the token has a route.
    NoRoute => (401, TOKEN, "no route for audience"),
    /// `sub` cannot travel intact in a header: a leading or trailing space
    /// (which HTTP trims), or a byte outside visible ASCII and space.
    SubjectNotHeaderSafe => (401, TOKEN, "sub cannot travel intact in a header"),
    /// A claim configured to travel as a header cannot travel intact (and
    /// is not configured to be percent-encoded), or is an object.
    ClaimNotHeaderSafe => (401, TOKEN, "claim cannot travel intact in a header") if policy_claims,
    /// A claim forwarded as a header whose JSON type is not the header's
    /// configured `type` (`"true"` where `true` is expected).
    ClaimTypeMismatch => (401, TOKEN, "claim is not of its header's type") if policy_claims,
    /// The rule needs scopes the token does not carry.
    InsufficientScope => (403, SCOPE, "required scope missing") if policy_claims,
    /// The rule needs a role (or group) the token does not carry.
    MissingRole => (403, SCOPE, "required role missing") if policy_claims,
    /// The rule needs a claim value the token does not carry.
    ClaimMismatch => (403, SCOPE, "required claim value missing") if policy_claims,
    /// A rule denies the path and method.
    Denied => (403, NONE, "forbidden") if policy_rules,
    /// A rule hides the path and method.
    NotFound => (404, NONE, "not found") if policy_rules,
    /// A CORS preflight whose origin, method or headers the config does not allow.
    PreflightRefused => (403, NONE, "cors preflight not allowed") if policy_cors,
    /// A preflight the gateway does not answer, forwarded by the config's
    /// `unmatched_preflight` to a public path, that carries a body: a
    /// preflight never has one, and the upstream must not receive one.
    PreflightWithBody => (400, REQUEST, "preflight with a body") if policy_cors,
    /// The request-scoped arena ran out (a bug or a misconfigured build).
    ScratchExhausted => (500, NONE, "gateway scratch space exhausted"),
    /// The host passed a time that is negative, not finite, or beyond 2^53.
    InvalidClock => (500, NONE, "host clock invalid"),
    /// The host's connection line (scheme and peer address) is malformed.
    InvalidContext => (500, NONE, "host context invalid"),
    /// A bucket the forward falls in is spent, as the host counted it: the
    /// answer `limited` writes in place of the forward (`crate::limits`).
    RateLimited => (429, NONE, "rate limit exceeded") if policy_limits,
    /// Its issuer takes only DPoP-bound tokens (`dpop = "require"`), and
    /// this one came as a bearer token.
    DpopRequired => (401, TOKEN, "DPoP-bound token required") only policy_dpop,
    /// `Authorization: DPoP` with a token bound to no key.
    DpopTokenUnbound => (401, TOKEN, "DPoP token not bound to a key") only policy_dpop,
    /// The proof's key is not the one the token is bound to (`cnf.jkt`).
    DpopKeyMismatch => (401, TOKEN, "token bound to another DPoP key") only policy_dpop,
    /// `Authorization: DPoP` without a `DPoP` proof.
    DpopProofMissing => (401, PROOF, "DPoP proof required") only policy_dpop,
    /// More than one `DPoP` field (RFC 9449 section 4.3, check 1).
    DpopProofRepeated => (400, REQUEST, "more than one DPoP proof") only policy_dpop,
    /// A `DPoP` proof beside a bearer token: one of them is not what it says.
    DpopProofWithBearer => (400, REQUEST, "DPoP proof with a bearer token") only policy_dpop,
    /// The proof is not a DPoP proof JWT: its form, `typ`, `alg`, `jwk`
    /// (a public key of an algorithm verified here), or its claims.
    DpopProofMalformed => (401, PROOF, "malformed DPoP proof") only policy_dpop,
    /// The proof's signature is not its `jwk`'s.
    DpopProofBadSignature => (401, PROOF, "DPoP proof signature invalid") only policy_dpop,
    /// `htm` is not the request's method.
    DpopProofWrongMethod => (401, PROOF, "DPoP proof for another method") only policy_dpop,
    /// `htu` is not the request's URI.
    DpopProofWrongUri => (401, PROOF, "DPoP proof for another URI") only policy_dpop,
    /// `iat` is outside the proof window, with the issuer's leeway.
    DpopProofStale => (401, PROOF, "DPoP proof outside its time window") only policy_dpop,
    /// `ath` is not the hash of this access token.
    DpopProofWrongToken => (401, PROOF, "DPoP proof for another token") only policy_dpop,
    /// The proof's `jti` was seen within its window (counted by the host's
    /// store, as a rate limit: `crate::limits`).
    DpopProofReplayed => (401, PROOF, "DPoP proof replayed") only policy_dpop,
    /// Its issuer takes only certificate-bound tokens (`certificate_bound
    /// = "require"`), and this one is bound to no certificate.
    CertificateRequired => (401, TOKEN, "certificate-bound token required") only policy_certificate,
    /// A certificate-bound token over a connection without a verified
    /// client certificate (RFC 8705 section 3).
    CertificateMissing => (401, TOKEN, "token bound to a client certificate, none presented") only policy_certificate,
    /// A certificate-bound token over a connection with another client
    /// certificate than the one it is bound to (`cnf["x5t#S256"]`).
    CertificateMismatch => (401, TOKEN, "token bound to another client certificate") only policy_certificate,
    /// The issuer asks for server nonces (`dpop_nonce = true`) and the proof
    /// carries none the gateway issued in this period or the one before:
    /// the answer carries a fresh one (RFC 9449 section 9).
    DpopNonceRequired => (401, NONCE, "DPoP proof needs a fresh nonce") only policy_dpop,
}

impl Rejection {
    /// Whether the refusal is about a DPoP binding or proof, which the
    /// answer challenges with the DPoP scheme.
    #[cfg(policy_dpop)]
    pub const fn is_dpop(self) -> bool {
        matches!(
            self,
            Rejection::DpopRequired
                | Rejection::DpopTokenUnbound
                | Rejection::DpopKeyMismatch
                | Rejection::DpopProofMissing
                | Rejection::DpopProofMalformed
                | Rejection::DpopProofBadSignature
                | Rejection::DpopProofWrongMethod
                | Rejection::DpopProofWrongUri
                | Rejection::DpopProofStale
                | Rejection::DpopProofWrongToken
                | Rejection::DpopProofReplayed
                | Rejection::DpopNonceRequired
        )
    }
}

impl From<contract::Full> for Rejection {
    /// The output buffer could not hold the decision: the gateway's own
    /// failure, answered 500.
    fn from(_: contract::Full) -> Self {
        Rejection::ScratchExhausted
    }
}

#[cfg(test)]
mod tests;
