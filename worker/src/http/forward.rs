//! Forward: exactly what the upstream receives, decided here so that every
//! host executes the same plan (`ABI.md`, "Forward").
//!
//! The plan is the upstream's origin, the path and query (the route's base
//! path, then the normalized target), the request's fields to drop, and the
//! fields to set. Names are compared lower-cased with `_` read as `-`,
//! because CGI, WSGI, Rack and PHP read `X_Gateway_Subject` as
//! `X-Gateway-Subject`. Dropped:
//!
//! - `Authorization` and `Proxy-Authorization`: the token stops here;
//! - every `X-Gateway-*`: only the gateway speaks for the subject;
//! - hop-by-hop fields (`Connection` and the names it lists, `Keep-Alive`,
//!   `TE`, `Trailer`, `Upgrade`, `Proxy-Connection`, `Transfer-Encoding`,
//!   whose framing the host's HTTP stack redoes) and `Host`, which the
//!   host's client sets from the upstream URL;
//! - the client's forwarding fields (`Forwarded`, every `X-Forwarded-*`,
//!   `X-Real-IP`): an edge gateway is the first hop, and speaks for the
//!   peer itself;
//! - `X-Original-URL` and `X-Rewrite-URL`, which some stacks (IIS URL
//!   Rewrite, older Symfony) route on instead of the request's path: the
//!   path is the one the rules judged;
//! - a `Content_Length` spelled with `_`, which is not framing to the
//!   gateway but would be to a CGI upstream.
//!
//! Set: `X-Gateway-Subject` when the token has a `sub`, `X-Gateway-Issuer`
//! (the verified issuer's configured `iss`: a subject means someone only
//! within its issuer, RFC 7519 section 4.1.2), `X-Forwarded-For`
//! (the peer; with trusted proxy hops, the client's chain and then the
//! peer), `X-Forwarded-Proto` and, when the request named one,
//! `X-Forwarded-Host`; with the policies that ask for them, the configured
//! claims as headers ([`crate::policy::claim_headers`]) and the verified
//! payload. Every header the config names (claim headers, the payload
//! header, a token header) is dropped from the client's request in every
//! spelling first; a token cookie is taken out of `Cookie`, the other
//! cookies kept. With CORS, the upstream's own `Access-Control-Allow-*`
//! fields are removed from its response and, for an allowed origin, the
//! gateway's added ([`crate::http::cors`]).

use contract::fields::{ISSUER, SUBJECT};
use contract::{Encoder, Labels};

use contract::Context;

use crate::arena::Arena;
use crate::config::{Config, Route, TokenSource};
use crate::http::cors::{self, CrossOrigin};
use crate::http::request::{self, Head};
use crate::http::target::Target;
use crate::jose::claims::{ClaimValues, Verified};
use crate::reject::Rejection;

/// Fields dropped whatever else is true of the request (canonical names).
const DROPPED: [&str; 14] = [
    "authorization",
    "proxy-authorization",
    // A path the upstream's stack may route on instead of the request's
    // (IIS URL Rewrite, older Symfony): only the gateway chooses the path.
    "x-original-url",
    "x-rewrite-url",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "forwarded",
    "x-real-ip",
];

/// Prefixes of field names that only the gateway may set (canonical).
const DROPPED_PREFIXES: [&str; 2] = ["x-gateway-", "x-forwarded-"];

/// What an accepted request may take upstream: its route, and, when a
/// token was verified, who it speaks for and the claims the policy reads.
#[derive(Debug, Clone, Copy)]
pub struct Grant<'c, 'a> {
    /// The route: the audience's, or a public rule's.
    pub route: &'c Route<'c>,
    /// The token's subject, when it has one.
    pub subject: Option<&'a str>,
    /// The configured `iss` of the issuer that verified the token.
    pub issuer: Option<&'c str>,
    /// The claims the policy reads, raw JSON values, when a token was verified.
    pub claims: Option<ClaimValues<'a>>,
    /// The token, when one was verified (its payload may travel).
    pub token: Option<&'a [u8]>,
    /// The rate limits it falls under (`crate::limits`), by index.
    #[cfg(policy_limits)]
    pub limits: &'c [u8],
    /// The replay key of the DPoP proof the token came with
    /// (`crate::jose::dpop`): a bucket of the `dpop-proofs` limit.
    #[cfg(policy_dpop)]
    pub proof: Option<crate::jose::dpop::ProofId>,
    /// The nonce the client's next proof carries (`DPoP-Nonce` on the
    /// response), when its issuer asks for them.
    #[cfg(policy_dpop)]
    pub dpop_nonce: Option<[u8; crate::jose::dpop::NONCE_LEN]>,
    /// The thumbprint of the DPoP key the request proved (`cnf.jkt`).
    #[cfg(policy_dpop)]
    pub jkt: Option<&'a str>,
}

impl<'c, 'a> Grant<'c, 'a> {
    /// A request forwarded with no token: no subject, no claims.
    pub fn public(route: &'c Route<'c>) -> Self {
        Grant {
            route,
            subject: None,
            issuer: None,
            claims: None,
            token: None,
            #[cfg(policy_limits)]
            limits: &[],
            #[cfg(policy_dpop)]
            proof: None,
            #[cfg(policy_dpop)]
            jkt: None,
            #[cfg(policy_dpop)]
            dpop_nonce: None,
        }
    }

    /// A request whose `token` verified as `verified`.
    pub fn token(verified: Verified<'c, 'a>, token: &'a [u8]) -> Self {
        Grant {
            subject: verified.subject,
            issuer: verified.issuer.1.iss,
            claims: Some(verified.claims),
            token: Some(token),
            ..Grant::public(verified.route)
        }
    }
}

#[cfg(policy_limits)]
impl<'c, 'a> Grant<'c, 'a> {
    /// What its rate-limit buckets are keyed by (`crate::limits`).
    pub fn keyed(&self) -> crate::limits::Keyed<'c, '_> {
        crate::limits::Keyed {
            limits: self.limits,
            #[cfg(policy_dpop)]
            proof: self.proof.as_ref().map(|p| &p[..]),
            #[cfg(not(policy_dpop))]
            proof: None,
            subject: self.subject,
            claims: self.claims,
        }
    }
}

/// Writes the forward plan for an accepted request.
#[allow(clippy::too_many_arguments)] // the phases' results, each needed once
pub fn write_plan(
    out: &mut Encoder<'_>,
    grant: &Grant<'_, '_>,
    head: &Head<'_, '_>,
    target: &Target<'_, '_>,
    context: &Context<'_>,
    config: &Config<'_>,
    cross_origin: &CrossOrigin<'_>,
    labels: &Labels,
    arena: &mut Arena<'_>,
) -> Result<(), Rejection> {
    let route = grant.route;
    out.forward(route.origin, &[route.base_path.as_bytes(), target.path_and_query])?;
    out.labels(labels)?;
    #[cfg(policy_limits)]
    crate::limits::write_buckets(out, &grant.keyed(), labels, context.peer, config)?;
    for (i, field) in head.fields.iter().enumerate() {
        let seen_before = head.fields[..i].iter().any(|f| f.name.eq_ignore_ascii_case(field.name));
        if !seen_before && is_dropped(field.name.as_bytes(), head, config) {
            out.drop_request_field(field.name.as_bytes())?;
        }
    }
    if let Some(subject) = grant.subject {
        out.set_request_field(SUBJECT, &[subject.as_bytes()])?;
    }
    if let Some(issuer) = grant.issuer {
        out.set_request_field(ISSUER, &[issuer.as_bytes()])?;
    }
    #[cfg(policy_dpop)]
    if let (Some(name), Some(jkt)) = (config.policy.dpop.thumbprint_header, grant.jkt) {
        out.set_request_field(name, &[jkt.as_bytes()])?;
    }
    write_forwarded_for(out, head, context, config)?;
    out.set_request_field("x-forwarded-proto", &[context.scheme.as_str().as_bytes()])?;
    if let Some(host) = target.authority.or_else(|| head.host()).filter(|h| !h.is_empty()) {
        out.set_request_field("x-forwarded-host", &[host])?;
    }
    if cfg!(any(policy_sources, policy_claims)) {
        write_policy_fields(out, grant, head, config, arena)?;
    }
    if cfg!(policy_cors) && config.policy.cors.is_some() {
        for name in cors::UPSTREAM_FIELDS_REMOVED {
            out.drop_response_field(name)?;
        }
    }
    // The nonce the client's next proof carries; the upstream's own is not
    // the gateway's to hand out. Dropped here, with the other response
    // drops, before any addition (`ABI.md`: the operations in their order).
    #[cfg(policy_dpop)]
    if grant.dpop_nonce.is_some() {
        out.drop_response_field("dpop-nonce")?;
    }
    if let (true, Some(origin), Some(cors)) =
        (cfg!(policy_cors), cross_origin.allowed(), config.policy.cors.as_ref())
    {
        cors::write_response_fields(out, origin, cors)?;
    }
    #[cfg(policy_limits)]
    crate::limits::write_policy_fields(out, &grant.keyed(), config)?;
    #[cfg(policy_dpop)]
    if let Some(nonce) = &grant.dpop_nonce {
        out.add_response_field("dpop-nonce", &[nonce])?;
    }
    Ok(())
}

/// The fields the policies add: the cookies left once a token cookie is
/// taken out, the claims as headers, the verified payload.
fn write_policy_fields(
    out: &mut Encoder<'_>,
    grant: &Grant<'_, '_>,
    head: &Head<'_, '_>,
    config: &Config<'_>,
    arena: &mut Arena<'_>,
) -> Result<(), Rejection> {
    if cfg!(policy_sources) && takes_token_cookies(config) {
        write_other_cookies(out, head, config, arena)?;
    }
    #[cfg(policy_claims)]
    if let Some(claims) = &grant.claims {
        for mapping in config.policy.claim_headers {
            if let Some(value) =
                crate::policy::claim_headers::render(claims.get(mapping.claim), mapping, arena)?
            {
                out.set_request_field(mapping.header, &[value])?;
            }
        }
    }
    if let (true, Some(name), Some(token)) = (cfg!(policy_claims), config.policy.payload_header, grant.token)
    {
        let payload = token.split(|&b| b == b'.').nth(1).unwrap_or_default();
        out.set_request_field(name, &[payload])?;
    }
    let _ = (grant, arena);
    Ok(())
}

/// True when a cookie is a token source.
fn takes_token_cookies(config: &Config<'_>) -> bool {
    config.policy.token_sources.iter().any(|s| matches!(s, TokenSource::Cookie(_)))
}

/// `Cookie` again without the token cookies (every `Cookie` field is
/// dropped when a cookie is a token source): the other pairs, in order,
/// joined with `; `. A cookie pair that is not printable ASCII cannot be
/// set again as it was: the request is refused.
fn write_other_cookies(
    out: &mut Encoder<'_>,
    head: &Head<'_, '_>,
    config: &Config<'_>,
    arena: &mut Arena<'_>,
) -> Result<(), Rejection> {
    // A pair any server reads as a token cookie is taken out whole.
    let is_token = |name: &[u8], pair: &[u8]| {
        config.policy.token_sources.iter().any(|s| {
            matches!(s, TokenSource::Cookie(c) if c.as_bytes() == name || crate::http::tokens::reads_as_cookie(pair, c))
        })
    };
    // Each kept pair (at least one byte) gains at most a `; ` of two
    // bytes for the `;` of one it had: twice a field's length holds it.
    let total: usize = head.named("cookie").map(|v| 2 * v.len() + 2).sum();
    if total == 0 {
        return Ok(());
    }
    let buf = arena.alloc(total)?;
    let mut len = 0;
    crate::http::tokens::each_cookie(head, |name, _, pair| {
        if pair.is_empty() || is_token(name, pair) {
            return Ok(());
        }
        if !pair.iter().all(|b| (0x20..0x7f).contains(b)) {
            return Err(Rejection::InvalidFieldValue);
        }
        let separator: &[u8] = if len == 0 { b"" } else { b"; " };
        for part in [separator, pair] {
            buf[len..len + part.len()].copy_from_slice(part);
            len += part.len();
        }
        Ok(())
    })?;
    match len {
        0 => Ok(()),
        _ => Ok(out.set_request_field("cookie", &[&buf[..len]])?),
    }
}

/// `X-Forwarded-For`: the peer, after the client's chain when proxies in
/// front are trusted. A trusted chain travels as written, so it must be
/// printable ASCII (the contract's values are); anything else is refused.
fn write_forwarded_for(
    out: &mut Encoder<'_>,
    head: &Head<'_, '_>,
    context: &Context<'_>,
    config: &Config<'_>,
) -> Result<(), Rejection> {
    out.set_request_field("x-forwarded-for", &[])?;
    if config.trusted_proxy_hops > 0 {
        for value in head.named("x-forwarded-for") {
            if !value.iter().all(|b| (0x20..0x7f).contains(b)) {
                return Err(Rejection::InvalidFieldValue);
            }
            out.extend_value(&[value, b", "])?;
        }
    }
    Ok(out.extend_value(&[context.peer.as_bytes()])?)
}

/// True when the field `name` of `head` must not reach the upstream.
fn is_dropped(name: &[u8], head: &Head<'_, '_>, config: &Config<'_>) -> bool {
    DROPPED.iter().any(|d| canonical_eq(name, d.as_bytes()))
        || DROPPED_PREFIXES
            .iter()
            .any(|p| name.get(..p.len()).is_some_and(|start| canonical_eq(start, p.as_bytes())))
        || (crate::http::has_byte(name, b'_') && canonical_eq(name, b"content-length"))
        || connection_options(head).any(|option| canonical_eq(name, option))
        || (cfg!(any(policy_sources, policy_claims)) && the_config_sets(name, config))
        // A DPoP proof is the client's to the gateway: never forwarded.
        || (cfg!(policy_dpop) && canonical_eq(name, b"dpop") && config.policy.dpop.accepted())
        || (cfg!(policy_dpop) && config.policy.dpop.thumbprint_header.is_some_and(|h| canonical_eq(name, h.as_bytes())))
}

/// True when `name` is a field the config makes the gateway's own: a claim
/// header, the payload header, a token header, or `Cookie` when a cookie
/// carries tokens.
fn the_config_sets(name: &[u8], config: &Config<'_>) -> bool {
    let policy = &config.policy;
    let is = |configured: &str| canonical_eq(name, configured.as_bytes());
    policy.claim_headers.iter().any(|h| is(h.header))
        || policy.payload_header.is_some_and(is)
        || policy.token_sources.iter().any(|source| match source {
            TokenSource::Header { name, .. } => is(name),
            TokenSource::Cookie(_) => is("cookie"),
            TokenSource::Bearer => false,
        })
}

/// The field names listed in the request's `Connection` fields.
fn connection_options<'b>(head: &Head<'b, '_>) -> impl Iterator<Item = &'b [u8]> {
    head.fields
        .iter()
        .filter(|f| canonical_eq(f.name.as_bytes(), b"connection"))
        .flat_map(|f| f.value.split(|&b| b == b','))
        .map(request::trim_ows)
        .filter(|option| !option.is_empty())
}

/// `name` equals `canonical` (lower case, `-`) when lower-cased with `_` read as `-`.
/// The lengths are compared where it is called (most names differ in
/// length), the bytes in one shared loop.
#[inline(always)]
pub(crate) fn canonical_eq(name: &[u8], canonical: &[u8]) -> bool {
    name.len() == canonical.len() && folded_eq(name, canonical)
}

/// The bytes of two names of one length are equal once folded as
/// [`canonical_eq`] folds them.
fn folded_eq(name: &[u8], canonical: &[u8]) -> bool {
    let fold = |b: u8| if b == b'_' { b'-' } else { b.to_ascii_lowercase() };
    name.iter().zip(canonical).all(|(&a, &b)| fold(a) == fold(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Policy;
    use crate::http::request::{MAX_HEADERS, parse};
    use std::string::String;
    use std::vec::Vec;

    const ROUTE: Route<'static> =
        Route { audience: "orders", origin: "http://10.0.0.5:8080", base_path: "/orders-svc" };

    fn config(trusted_proxy_hops: u32) -> Config<'static> {
        Config {
            realm: "gw",
            trusted_proxy_hops,
            max_token_bytes: 256,
            issuers: &[],
            routes: &[ROUTE],
            policy: Policy::NONE,
        }
    }

    /// The plan for `head` with subject `sub`, split into lines.
    fn plan(head: &str, sub: Option<&str>, hops: u32) -> Vec<String> {
        let grant = Grant { subject: sub, ..Grant::public(&ROUTE) };
        plan_with(head, &grant, &config(hops), &CrossOrigin::None)
    }

    /// The plan for `head` under `grant`, `config` and `cross_origin`, split into lines.
    fn plan_with(
        head: &str,
        grant: &Grant<'_, '_>,
        config: &Config<'_>,
        cross_origin: &CrossOrigin<'_>,
    ) -> Vec<String> {
        let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let head = parse(head.as_bytes(), &mut fields).expect("valid head");
        let mut region = std::vec![0u8; 16 << 10];
        let mut arena = Arena::new(&mut region);
        let target =
            crate::http::target::normalize(head.method, head.target, &mut arena).expect("valid target");
        let mut buf = std::vec![0u8; 16 << 10];
        let mut out = Encoder::new(&mut buf);
        let context = Context { scheme: contract::Scheme::Https, peer: "192.0.2.7", certificate: None };
        write_plan(
            &mut out,
            grant,
            &head,
            &target,
            &context,
            config,
            cross_origin,
            &Labels::default(),
            &mut arena,
        )
        .expect("fits");
        String::from_utf8(out.as_bytes().to_vec()).expect("ASCII").split('\n').map(String::from).collect()
    }

    /// The operations in `ABI.md`'s order, every policy that writes them
    /// on: the request's drops, its sets, the response's drops, its
    /// additions.
    #[test]
    fn the_operations_are_written_in_their_order() {
        #[cfg_attr(not(policy_dpop), allow(unused_mut))]
        let mut grant = Grant { subject: Some("alice"), ..Grant::public(&ROUTE) };
        #[cfg(policy_dpop)]
        {
            grant.dpop_nonce = Some([b'n'; crate::jose::dpop::NONCE_LEN]);
        }
        let config = Config {
            policy: Policy { cors: Some(crate::http::cors::tests::CORS), ..Policy::NONE },
            ..config(0)
        };
        let lines = plan_with(
            "GET /a HTTP/1.1\r\nHost: gw.example\r\nOrigin: https://app.example\r\n\r\n",
            &grant,
            &config,
            &CrossOrigin::Allowed("https://app.example"),
        );
        let text = lines.join("\n");
        let kinds: Vec<usize> = lines[3..]
            .iter()
            .map(|line| "-+!>".find(&line[..1]).unwrap_or_else(|| panic!("an operation: {line}")))
            .collect();
        assert!(kinds.is_sorted(), "out of order:\n{text}");
        assert!(kinds.contains(&2) && kinds.contains(&3), "response drops and additions:\n{text}");
        #[cfg(policy_dpop)]
        assert!(text.contains("!dpop-nonce") && text.contains(">dpop-nonce:"), "the nonce:\n{text}");
    }

    #[test]
    fn an_ordinary_request() {
        let lines = plan(
            "GET /a/b?x=1 HTTP/1.1\r\nHost: gw.example\r\nAccept: */*\r\nAuthorization: Bearer t\r\n\r\n",
            Some("alice"),
            0,
        );
        assert_eq!(
            lines,
            [
                "http://10.0.0.5:8080",
                "/orders-svc/a/b?x=1",
                "#00ffffffffff -",
                "-host",
                "-authorization",
                "+x-gateway-subject:alice",
                "+x-forwarded-for:192.0.2.7",
                "+x-forwarded-proto:https",
                "+x-forwarded-host:gw.example",
            ]
        );
    }

    #[test]
    fn every_spelling_of_a_gateway_field_is_dropped_once() {
        let head = "GET / HTTP/1.1\r\nHost: gw\r\nX_Gateway_Subject: admin\r\nx-gateway-subject: root\r\n\
                    X-GATEWAY-ROLE: admin\r\nx_gateway_subject: again\r\nX-Gatewayish: kept\r\n\r\n";
        let lines = plan(head, None, 0);
        let drops: Vec<&str> = lines.iter().filter(|l| l.starts_with('-')).map(String::as_str).collect();
        assert_eq!(drops, ["-host", "-x_gateway_subject", "-x-gateway-subject", "-x-gateway-role"]);
        assert!(!lines.iter().any(|l| l.starts_with("+x-gateway-subject")), "{lines:?}");
    }

    #[test]
    fn hop_by_hop_and_connection_listed_fields_are_dropped() {
        let head = "POST / HTTP/1.1\r\nHost: gw\r\nConnection: keep-alive, X-Secret ,x_other\r\nKeep-Alive: 5\r\n\
                    X-Secret: s\r\nX-Other: o\r\nTE: trailers\r\nUpgrade: websocket\r\nTrailer: x\r\n\
                    Proxy-Authorization: Basic x\r\nProxy-Connection: close\r\nTransfer-Encoding: chunked\r\n\
                    Content_Length: 5\r\nX-Kept: k\r\n\r\n";
        let lines = plan(head, None, 0);
        let drops: Vec<&str> = lines.iter().filter(|l| l.starts_with('-')).map(String::as_str).collect();
        assert_eq!(
            drops,
            [
                "-host",
                "-connection",
                "-keep-alive",
                "-x-secret",
                "-x-other",
                "-te",
                "-upgrade",
                "-trailer",
                "-proxy-authorization",
                "-proxy-connection",
                "-transfer-encoding",
                "-content_length"
            ]
        );
    }

    #[test]
    fn client_forwarding_fields_are_replaced_by_the_peer() {
        let head = "GET / HTTP/1.1\r\nHost: gw\r\nX-Forwarded-For: 10.6.6.6\r\nForwarded: for=1.2.3.4\r\n\
                    X-Real-IP: 10.6.6.6\r\nX_Forwarded_Host: evil\r\nX-Forwarded-Proto: http\r\n\
                    X-Forwarded-Prefix: /admin\r\nx-forwarded-for: 10.7.7.7\r\n\r\n";
        let lines = plan(head, None, 0);
        assert_eq!(
            &lines[3..],
            [
                "-host",
                "-x-forwarded-for",
                "-forwarded",
                "-x-real-ip",
                "-x_forwarded_host",
                "-x-forwarded-proto",
                "-x-forwarded-prefix",
                "+x-forwarded-for:192.0.2.7",
                "+x-forwarded-proto:https",
                "+x-forwarded-host:gw",
            ]
        );
    }

    #[test]
    fn trusted_hops_keep_the_client_chain_and_append_the_peer() {
        let head = "GET / HTTP/1.1\r\nHost: gw\r\nX-Forwarded-For: 203.0.113.1, 10.0.0.1\r\n\
                    X_Forwarded_For: 6.6.6.6\r\nx-forwarded-for: 10.0.0.2\r\n\r\n";
        let lines = plan(head, None, 1);
        assert!(
            lines.contains(&"+x-forwarded-for:203.0.113.1, 10.0.0.1, 10.0.0.2, 192.0.2.7".into()),
            "{lines:?}"
        );
        assert!(lines.contains(&"-x_forwarded_for".into()), "{lines:?}");
    }

    #[test]
    fn absolute_form_authority_is_the_forwarded_host_and_empty_host_is_none() {
        let lines = plan("GET http://api.example/x HTTP/1.1\r\nHost: other\r\n\r\n", None, 0);
        assert_eq!(lines[1], "/orders-svc/x");
        assert!(lines.contains(&"+x-forwarded-host:api.example".into()), "{lines:?}");
        let lines = plan("GET /x HTTP/1.1\r\nHost:\r\n\r\n", None, 0);
        assert!(!lines.iter().any(|l| l.starts_with("+x-forwarded-host")), "{lines:?}");
        let lines = plan("GET /x HTTP/1.0\r\n\r\n", None, 0);
        assert!(!lines.iter().any(|l| l.starts_with("+x-forwarded-host")), "{lines:?}");
    }

    #[test]
    fn names_fold_case_and_underscore_only() {
        assert!(canonical_eq(b"X_Gateway_Subject", b"x-gateway-subject"));
        assert!(canonical_eq(b"TE", b"te"));
        assert!(!canonical_eq(b"te", b"tea"));
        assert!(!canonical_eq(b"x.gateway.subject", b"x-gateway-subject"));
    }
}
