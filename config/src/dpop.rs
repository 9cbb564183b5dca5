//! DPoP (RFC 9449) per issuer: `dpop = "accept"` (a token bound to a key
//! with `cnf.jkt` passes with a valid proof of that key; bearer tokens
//! without `cnf` as before) or `"require"` (only DPoP-bound tokens with
//! their proof), and `dpop_window_secs`, how old a proof's `iat` may be.
//!
//! A proof's `jti` must not be used twice within the window: the module
//! names a bucket per proof (`ABI.md`, "Rate limits") in a limit of its
//! own, `dpop-proofs` (one request per key, for the window and both
//! leeways), so each host's store (Redis, a Durable Object, Envoy's
//! buckets, an instance's table) keeps the proofs it has seen, with the
//! guarantee its rate limits have.

use crate::IssuerConfig;
use crate::error::ConfigErrorKind;
use crate::policy::{LimitConfig, LimitKeyConfig, LimitsConfig};

/// The name of the limit that refuses a proof's `jti` seen before.
pub const REPLAY_LIMIT: &str = "dpop-proofs";

/// The default and the longest proof window, in seconds.
const DEFAULT_WINDOW_SECS: u32 = 60;
const MAX_WINDOW_SECS: u32 = 600;

/// An issuer's DPoP settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpopConfig {
    /// Only DPoP-bound tokens, with their proofs.
    pub required: bool,
    /// How far a proof's `iat` may be from now, before the leeway.
    pub window_secs: u32,
    /// Whether its proofs must carry a nonce the gateway issued (RFC 9449
    /// section 9).
    pub nonce: bool,
}

/// The nonces the module issues (`dpop_nonce_key`, `dpop_nonce_secs`): a
/// nonce names the period it was issued in and is signed with the key, so
/// every instance of every host checks it without shared state; one from
/// this period or the one before is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpopNonceConfig {
    /// The HMAC-SHA256 key nonces are signed with (at least 32 bytes).
    pub key: crate::KeyConfig,
    /// The period, in seconds: a nonce lasts one to two of them.
    pub secs: u32,
}

/// The default and the longest nonce period, in seconds.
const DEFAULT_NONCE_SECS: u32 = 300;
const MAX_NONCE_SECS: u32 = 86_400;

/// An issuer's `dpop` and `dpop_window_secs`.
pub(crate) fn read(
    prefix: &str,
    mode: Option<&str>,
    window: Option<u32>,
    nonce: Option<bool>,
) -> Result<Option<DpopConfig>, ConfigErrorKind> {
    let invalid =
        |entry: &str, why: String| ConfigErrorKind::Invalid { entry: format!("{prefix}{entry}"), why };
    let required = match mode {
        None if window.is_some() || nonce.is_some() => {
            let entry = if window.is_some() { "dpop_window_secs" } else { "dpop_nonce" };
            return Err(invalid(entry, "is set without dpop = \"accept\" or \"require\"".into()));
        }
        None => return Ok(None),
        Some("accept") => false,
        Some("require") => true,
        Some(other) => return Err(invalid("dpop", format!("{other:?} must be \"accept\" or \"require\""))),
    };
    let window_secs = window.unwrap_or(DEFAULT_WINDOW_SECS);
    if !(1..=MAX_WINDOW_SECS).contains(&window_secs) {
        return Err(invalid(
            "dpop_window_secs",
            format!("{window_secs} must be from 1 to {MAX_WINDOW_SECS}"),
        ));
    }
    Ok(Some(DpopConfig { required, window_secs, nonce: nonce.unwrap_or(false) }))
}

/// The top-level `dpop_nonce_key` and `dpop_nonce_secs`: needed when an
/// issuer asks for nonces, refused when none does.
pub(crate) fn read_nonce(
    key: Option<crate::raw::RawKey>,
    secs: Option<u32>,
    issuers: &[IssuerConfig],
    base: &std::path::Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<DpopNonceConfig>, ConfigErrorKind> {
    let asked = issuers.iter().any(|i| i.dpop.is_some_and(|d| d.nonce));
    let invalid = |entry: &str, why: &str| ConfigErrorKind::Invalid { entry: entry.into(), why: why.into() };
    let key = match (key, asked) {
        (None, false) if secs.is_none() => return Ok(None),
        (None, true) => return Err(invalid("dpop_nonce_key", "is needed: an issuer has dpop_nonce = true")),
        (_, false) => {
            let entry = if secs.is_some() { "dpop_nonce_secs" } else { "dpop_nonce_key" };
            return Err(invalid(entry, "is set, but no issuer has dpop_nonce = true"));
        }
        (Some(key), true) => crate::keys::read_key("dpop_nonce_key", String::new(), key, base, env)?,
    };
    let secs = secs.unwrap_or(DEFAULT_NONCE_SECS);
    if !(1..=MAX_NONCE_SECS).contains(&secs) {
        return Err(ConfigErrorKind::Invalid {
            entry: "dpop_nonce_secs".into(),
            why: format!("{secs} must be from 1 to {MAX_NONCE_SECS}"),
        });
    }
    Ok(Some(DpopNonceConfig { key, secs }))
}

/// Adds the replay limit when an issuer accepts DPoP: one use of a proof's
/// `jti` per window and both leeways, whichever issuer's is longest.
pub(crate) fn add_replay_limit(
    issuers: &[IssuerConfig],
    limits: &mut LimitsConfig,
) -> Result<(), ConfigErrorKind> {
    let Some(span) =
        issuers.iter().filter_map(|i| i.dpop.map(|d| u64::from(d.window_secs) + 2 * i.leeway_secs)).max()
    else {
        return Ok(());
    };
    if let Some(i) = limits.table.iter().position(|l| l.name == REPLAY_LIMIT) {
        return Err(ConfigErrorKind::Invalid {
            entry: format!("limits[{i}].name"),
            why: format!("{REPLAY_LIMIT:?} is the name of the limit that refuses a DPoP proof used twice"),
        });
    }
    if limits.table.len() >= crate::policy::limits::MAX_LIMITS {
        return Err(ConfigErrorKind::Invalid {
            entry: "limits".into(),
            why: "leaves no room for DPoP's replay limit".into(),
        });
    }
    limits.table.push(LimitConfig {
        name: REPLAY_LIMIT.to_owned(),
        requests: 1,
        per_secs: u32::try_from(span).unwrap_or(u32::MAX),
        burst: 1,
        by: LimitKeyConfig::ProofId,
        fields: false,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    const ISSUER: &str = "[[issuers]]\niss = \"https://a.test\"\nkeys = [{ kid = \"k\", demo = \"0123456789abcdef0123456789abcdef\" }]\n";
    const ROUTE: &str = "[[routes]]\naud = \"orders\"\nupstream = \"http://127.0.0.1:1\"\n";

    fn parse(top: &str, issuer: &str) -> Result<crate::GatewayConfig, String> {
        let text = format!("{top}\n{ISSUER}{issuer}\n{ROUTE}");
        crate::parse(&text, Path::new("gw.toml"), &|_| None).map_err(|e| e.to_string())
    }

    #[test]
    fn an_issuer_that_takes_dpop_adds_the_replay_limit() {
        let config = parse(
            "dpop_thumbprint_header = \"x-gateway-dpop-jkt\"",
            "dpop = \"require\"\ndpop_window_secs = 30",
        )
        .expect("valid");
        let dpop = config.issuers[0].dpop.expect("dpop");
        assert!(dpop.required && dpop.window_secs == 30);
        let replay = config.policy.limits.table.last().expect("the replay limit");
        assert_eq!(
            (replay.name.as_str(), replay.requests, replay.burst, replay.per_secs),
            (super::REPLAY_LIMIT, 1, 1, 30 + 2 * 30)
        );
        assert_eq!(config.policy.dpop_thumbprint_header.as_deref(), Some("x-gateway-dpop-jkt"));
    }

    #[test]
    fn what_cannot_work_is_refused_in_one_line() {
        for (top, issuer, why) in [
            ("", "dpop = \"maybe\"", "must be \"accept\" or \"require\""),
            ("", "dpop_window_secs = 30", "is set without dpop"),
            ("", "dpop = \"accept\"\ndpop_window_secs = 0", "must be from 1 to 600"),
            ("dpop_thumbprint_header = \"x-gateway-jkt\"", "", "no issuer accepts DPoP"),
            ("dpop_thumbprint_header = \"authorization\"", "dpop = \"accept\"", "sets itself"),
        ] {
            let error = parse(top, issuer).expect_err(why);
            assert!(error.contains(why) && error.lines().count() == 1, "{error}");
        }
    }

    #[test]
    fn nonces_need_the_key_and_an_issuer_that_asks() {
        let key = "dpop_nonce_key = { demo = \"TEST-ONLY-nonce-key-0123456789abcdef\" }";
        let config = parse(key, "dpop = \"accept\"\ndpop_nonce = true").expect("valid");
        let nonce = config.dpop_nonce.as_ref().expect("nonces");
        assert_eq!(nonce.secs, 300);
        assert!(config.issuers[0].dpop.expect("dpop").nonce);
        assert!(config.has_demo_key());
        for (top, issuer, entry) in [
            ("", "dpop = \"accept\"\ndpop_nonce = true", "dpop_nonce_key"),
            (key, "dpop = \"accept\"", "dpop_nonce_key"),
            ("dpop_nonce_secs = 30", "dpop = \"accept\"", "dpop_nonce_secs"),
            (
                &format!("{key}\ndpop_nonce_secs = 0"),
                "dpop = \"accept\"\ndpop_nonce = true",
                "dpop_nonce_secs",
            ),
            ("", "dpop_nonce = true", "issuers[0].dpop_nonce"),
        ] {
            let error = parse(top, issuer).expect_err("refused");
            assert!(error.contains(entry) && !error.contains('\n'), "{entry}: {error}");
        }
    }
}
