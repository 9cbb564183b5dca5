//! Answer: a rejection as the direct answer the host sends (`ABI.md`,
//! "Answer"): status, fields and body, written with the contract's encoder
//! (a forward is written by `http::forward`, a preflight by `http::cors`).
//!
//! An answer carries its RFC 6750 error code and reason (for the host's
//! log), a `WWW-Authenticate` challenge for 401s and for every answer with
//! an error code (RFC 6750 section 3; `insufficient_scope` names the
//! rule's scopes in its `scope` attribute), `Content-Type:
//! application/json`, a short JSON body, and, for a browser's allowed
//! origin, the CORS fields that let the page read it. Every piece comes
//! from the rejection table or the config, whose checks keep line breaks
//! and quotes out of them.

pub use contract::Full;
use contract::{Encoder, Labels};

use crate::config::Config;
use crate::http::cors;
use crate::reject::{ErrorCode, Rejection};

/// The output buffer's size. The longest answer is a forward plan: the
/// origin and base path (at most 200 bytes), the normalized target (at most
/// 8 KiB), and field operations that each come from a distinct part of the
/// request head (at most 16 KiB with their separators), so 28 KiB holds any.
pub const OUTPUT_CAPACITY: usize = 28 << 10; // 28 KiB

/// What a rejection's answer needs beyond the rejection: facts the request
/// path learned before it refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnswerContext<'x> {
    /// The scopes of the rule that applied, space-separated, for the
    /// `scope` attribute of an `insufficient_scope` challenge; empty: none.
    pub scope: &'x str,
    /// The browser origin to answer with CORS fields, when CORS allows it.
    pub cors: Option<&'x str>,
    /// The issuer whose keys the host should fetch now (the `~` line).
    pub refresh_keys: Option<u8>,
    /// What the request path knew when it answered: the rule, the route,
    /// the issuer (the outcome is the rejection's).
    pub labels: Labels,
    /// For a 429, the bucket that was spent (`crate::limits`).
    #[cfg(policy_limits)]
    pub limited: Option<Refusal>,
    /// For a proof without a fresh nonce, the one to use (`DPoP-Nonce`).
    #[cfg(policy_dpop)]
    pub dpop_nonce: Option<[u8; crate::jose::dpop::NONCE_LEN]>,
}

/// Why a forward was replaced: the bucket the host found spent, and when
/// it has room again.
#[cfg_attr(not(policy_limits), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The limit's index in the config's table.
    pub limit: u8,
    /// Seconds until one request passes again (`Retry-After`).
    pub retry_after: u32,
    /// Seconds until the bucket is full again (the RateLimit field's `t`).
    pub reset: u32,
}

/// Writes the answer to `rejection`; its status is `rejection.status()`.
pub fn write_rejection(
    out: &mut Encoder<'_>,
    rejection: Rejection,
    config: &Config<'_>,
    context: &AnswerContext<'_>,
) -> Result<(), Full> {
    let code = rejection.error_code().map_or("", ErrorCode::as_str);
    let reason = rejection.reason();
    out.answer(code, reason)?;
    out.labels(&Labels { outcome: rejection.outcome(), ..context.labels })?;
    if let (true, Some(issuer)) = (cfg!(runtime_keys), context.refresh_keys) {
        out.refresh_keys(issuer)?;
    }
    if rejection.status() == 401 || !code.is_empty() {
        // A DPoP refusal challenges with the DPoP scheme and the proof
        // algorithms the build takes (RFC 9449 section 7.1).
        #[cfg(policy_dpop)]
        let scheme: &[&[u8]] = match rejection.is_dpop() {
            true => &[
                b"DPoP algs=\"",
                crate::jose::dpop::PROOF_ALG_NAMES.as_bytes(),
                b"\", realm=\"",
                config.realm.as_bytes(),
                b"\"",
            ],
            false => &[b"Bearer realm=\"", config.realm.as_bytes(), b"\""],
        };
        #[cfg(not(policy_dpop))]
        let scheme: &[&[u8]] = &[b"Bearer realm=\"", config.realm.as_bytes(), b"\""];
        out.add_response_field("www-authenticate", scheme)?;
        if !code.is_empty() {
            out.extend_value(&[
                b", error=\"",
                code.as_bytes(),
                b"\", error_description=\"",
                reason.as_bytes(),
                b"\"",
            ])?;
        }
        if cfg!(policy_claims)
            && rejection.error_code() == Some(ErrorCode::InsufficientScope)
            && !context.scope.is_empty()
        {
            out.extend_value(&[b", scope=\"", context.scope.as_bytes(), b"\""])?;
        }
    }
    // The nonce a proof must carry next (RFC 9449 section 9).
    #[cfg(policy_dpop)]
    if let Some(nonce) = &context.dpop_nonce {
        out.add_response_field("dpop-nonce", &[nonce])?;
    }
    // A 429's `Retry-After` and RateLimit fields.
    #[cfg(policy_limits)]
    if let (Some(refusal), Some(limit)) =
        (&context.limited, context.limited.and_then(|r| config.policy.limits.table.get(usize::from(r.limit))))
    {
        out.add_response_field("retry-after", &[])?;
        out.extend_decimal(refusal.retry_after)?;
        out.ratelimit_policy_field(limit.name, limit.requests, limit.per_secs)?;
        out.ratelimit_field(limit.name, 0, refusal.reset)?;
    }
    out.add_response_field("content-type", &[contract::fields::JSON.as_bytes()])?;
    if let (true, Some(origin), Some(cors)) = (cfg!(policy_cors), context.cors, config.policy.cors.as_ref()) {
        cors::write_response_fields(out, origin, cors)?;
    }
    out.body(&[b"{"])?;
    if !code.is_empty() {
        out.extend_value(&[b"\"error\":\"", code.as_bytes(), b"\","])?;
    }
    #[cfg(policy_limits)]
    if let Some(refusal) = &context.limited {
        let name =
            config.policy.limits.table.get(usize::from(refusal.limit)).map_or("", |l| l.name).as_bytes();
        return out.extend_value(&[
            b"\"error_description\":\"",
            reason.as_bytes(),
            b"\",\"limit\":\"",
            name,
            b"\"}",
        ]);
    }
    out.extend_value(&[b"\"error_description\":\"", reason.as_bytes(), b"\"}"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Cors, Policy};
    use contract::Decision;

    const CONFIG: Config<'static> = Config {
        realm: "gateway",
        trusted_proxy_hops: 0,
        max_token_bytes: 256,
        issuers: &[],
        routes: &[],
        policy: Policy::NONE,
    };

    fn written(
        rejection: Rejection,
        config: &Config<'_>,
        context: &AnswerContext<'_>,
    ) -> std::string::String {
        let mut buf = std::vec![0u8; OUTPUT_CAPACITY];
        let mut out = Encoder::new(&mut buf);
        write_rejection(&mut out, rejection, config, context).expect("fits");
        std::string::String::from_utf8(out.as_bytes().to_vec()).expect("utf8")
    }

    #[test]
    fn invalid_token_challenge_and_body() {
        assert_eq!(
            written(Rejection::Expired, &CONFIG, &AnswerContext::default()),
            "invalid_token\ntoken expired\n#31ffffffffff -\n\
             >www-authenticate:Bearer realm=\"gateway\", error=\"invalid_token\", error_description=\"token expired\"\n\
             >content-type:application/json\n\
             {\"error\":\"invalid_token\",\"error_description\":\"token expired\"}"
        );
    }

    #[test]
    fn no_credentials_challenge_has_no_error_code() {
        let config = Config { realm: "gw", ..CONFIG };
        assert_eq!(
            written(Rejection::MissingAuthorization, &config, &AnswerContext::default()),
            "\nbearer token required\n#1bffffffffff -\n>www-authenticate:Bearer realm=\"gw\"\n>content-type:application/json\n\
             {\"error_description\":\"bearer token required\"}"
        );
    }

    #[test]
    fn server_errors_and_denials_have_no_challenge() {
        assert_eq!(
            written(Rejection::InvalidClock, &CONFIG, &AnswerContext::default()),
            "\nhost clock invalid\n#42ffffffffff -\n>content-type:application/json\n{\"error_description\":\"host clock invalid\"}"
        );
        let denied = written(Rejection::Denied, &CONFIG, &AnswerContext::default());
        assert!(!denied.contains("www-authenticate"), "{denied}");
    }

    #[test]
    fn insufficient_scope_names_the_rules_scopes() {
        let context = AnswerContext { scope: "orders:write admin", ..AnswerContext::default() };
        let text = written(Rejection::InsufficientScope, &CONFIG, &context);
        assert!(
            text.contains(
                ">www-authenticate:Bearer realm=\"gateway\", error=\"insufficient_scope\", \
                 error_description=\"required scope missing\", scope=\"orders:write admin\"\n"
            ),
            "{text}"
        );
        let no_scopes = written(Rejection::MissingRole, &CONFIG, &AnswerContext::default());
        assert!(!no_scopes.contains("scope=\""), "{no_scopes}");
        assert!(no_scopes.contains("error=\"insufficient_scope\""), "{no_scopes}");
    }

    #[test]
    fn an_allowed_origin_can_read_the_answer() {
        let cors = Cors {
            origins: &["https://app.example"],
            methods: &["GET"],
            methods_joined: "GET",
            headers: &[],
            headers_joined: "",
            expose_headers: "www-authenticate",
            max_age: "",
            credentials: true,
            unmatched_preflight_route: None,
        };
        let config = Config { policy: Policy { cors: Some(cors), ..Policy::NONE }, ..CONFIG };
        let context = AnswerContext { cors: Some("https://app.example"), ..AnswerContext::default() };
        let text = written(Rejection::Expired, &config, &context);
        for field in [
            ">access-control-allow-origin:https://app.example\n",
            ">access-control-allow-credentials:true\n",
            ">access-control-expose-headers:www-authenticate\n",
            ">vary:Origin\n",
        ] {
            assert!(text.contains(field), "{field}: {text}");
        }
    }

    #[test]
    fn every_rejection_is_an_answer_the_contract_reads() {
        let realm = "r".repeat(200);
        let config = Config { realm: &realm, ..CONFIG };
        let context = AnswerContext { scope: "a b", ..AnswerContext::default() };
        for &rejection in Rejection::ALL {
            let text = written(rejection, &config, &context);
            let decision = Decision::decode(u32::from(rejection.status()), text.as_bytes());
            let Ok(Decision::Answer(answer)) = decision else { panic!("{rejection:?}: {decision:?}") };
            assert_eq!(answer.reason, rejection.reason());
            let body: serde_json::Value = serde_json::from_str(answer.body).expect("JSON body");
            assert_eq!(body["error_description"], rejection.reason());
            assert_eq!(answer.field("content-type"), Some("application/json"));
            assert_eq!(contract::outcome::name(answer.labels.outcome), Some(snake_case(rejection).as_str()));
        }
    }

    /// The variant's name in `snake_case`, as the contract's outcomes name it.
    fn snake_case(rejection: Rejection) -> std::string::String {
        let mut name = std::string::String::new();
        for (i, c) in std::format!("{rejection:?}").chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                name.push('_');
            }
            name.push(c.to_ascii_lowercase());
        }
        name
    }

    #[test]
    fn the_labels_say_what_the_request_path_knew() {
        let labels = Labels { rule: Some(2), route: Some(1), issuer: Some(0), ..Labels::default() };
        let context = AnswerContext { labels, ..AnswerContext::default() };
        let text = written(Rejection::MissingRole, &CONFIG, &context);
        let Ok(Decision::Answer(answer)) = Decision::decode(403, text.as_bytes()) else { panic!("{text}") };
        assert_eq!(answer.labels, Labels { outcome: Rejection::MissingRole.outcome(), ..labels });
    }

    #[test]
    fn running_out_of_room_is_an_error() {
        let mut buf = [0u8; 8];
        let mut out = Encoder::new(&mut buf);
        assert_eq!(
            write_rejection(&mut out, Rejection::Expired, &CONFIG, &AnswerContext::default()),
            Err(Full)
        );
    }
}
