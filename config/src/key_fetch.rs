//! Keys fetched at run time: an issuer's `jwks_url` (or `discovery = true`,
//! its OpenID discovery document) and how often the hosts fetch it. The
//! module lists these settings to its hosts (`key_sources`, `worker/ABI.md`)
//! and validates every fetched document itself, with the rules a JWKS file
//! meets here (`gateway_jose::jwks`).

use crate::error::ConfigErrorKind;

/// The most fetched keys an issuer may hold (the module reserves room for
/// each).
pub const MAX_FETCHED_KEYS: u16 = 32;

/// The settings of a fetch as written, beside an issuer's other entries
/// (`raw::key_fetch_of!` gathers them).
#[derive(Debug, Default)]
pub(crate) struct RawKeyFetch {
    pub jwks_url: Option<String>,
    pub discovery: Option<bool>,
    pub refresh_secs: Option<u32>,
    pub refetch_secs: Option<u32>,
    pub fetch_timeout_ms: Option<u32>,
    pub max_stale_secs: Option<u32>,
    pub max_keys: Option<u16>,
}

/// What an issuer's fetched keys come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchKind {
    /// The URL is the JWKS document.
    Jwks,
    /// The URL is the issuer's OpenID discovery document, whose `jwks_uri`
    /// the module reads.
    Discovery,
}

/// Where and how often an issuer's keys are fetched, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFetchConfig {
    /// What `url` is.
    pub kind: FetchKind,
    /// An absolute http(s) URL.
    pub url: String,
    /// Fetch again this long after a success, at most (default 600).
    pub refresh_secs: u32,
    /// The shortest time between two fetches (default 60).
    pub refetch_secs: u32,
    /// How long one fetch may take (default 5000 ms).
    pub timeout_ms: u32,
    /// How long fetched keys stay usable without a successful fetch
    /// (default 86400): then tokens that need them are answered 503.
    pub max_stale_secs: u32,
    /// The most keys a document may hold (default 16).
    pub max_keys: u16,
}

impl RawKeyFetch {
    /// True when no fetch setting is written.
    pub(crate) fn is_empty(&self) -> bool {
        self.jwks_url.is_none()
            && self.discovery.is_none()
            && self.refresh_secs.is_none()
            && self.refetch_secs.is_none()
            && self.fetch_timeout_ms.is_none()
            && self.max_stale_secs.is_none()
            && self.max_keys.is_none()
    }
}

/// The issuer's fetch settings, validated; `None` when it fetches nothing.
/// `entry` is the issuer's prefix (`issuers[1].`, or empty at the top level).
pub(crate) fn read(
    prefix: &str,
    raw: RawKeyFetch,
    iss: Option<&str>,
) -> Result<Option<KeyFetchConfig>, ConfigErrorKind> {
    if raw.is_empty() {
        return Ok(None);
    }
    let invalid =
        |name: &str, why: String| ConfigErrorKind::Invalid { entry: format!("{prefix}{name}"), why };
    let (kind, url) = match (raw.jwks_url, raw.discovery.unwrap_or(false)) {
        (Some(_), true) => {
            return Err(invalid("jwks_url", "and discovery = true name the keys twice: keep one".into()));
        }
        (Some(url), false) => (FetchKind::Jwks, url),
        (None, true) => {
            let iss = iss.ok_or_else(|| {
                invalid(
                    "discovery",
                    "needs the issuer's iss, an https:// URL the discovery document is under".into(),
                )
            })?;
            (FetchKind::Discovery, format!("{}/.well-known/openid-configuration", iss.trim_end_matches('/')))
        }
        (None, false) => {
            return Err(invalid(
                "refresh_secs",
                "and the other fetch settings need jwks_url = \"https://...\" or discovery = true".into(),
            ));
        }
    };
    let name = if kind == FetchKind::Jwks { "jwks_url" } else { "iss" };
    if !is_fetch_url(&url) {
        return Err(invalid(
            name,
            format!("{url:?} must be an absolute http:// or https:// URL of printable ASCII without spaces"),
        ));
    }
    let refresh_secs = raw.refresh_secs.unwrap_or(600);
    let refetch_secs = raw.refetch_secs.unwrap_or(60.min(refresh_secs));
    let timeout_ms = raw.fetch_timeout_ms.unwrap_or(5000);
    let max_stale_secs = raw.max_stale_secs.unwrap_or(86_400.max(refresh_secs));
    let max_keys = raw.max_keys.unwrap_or(16);
    let within = |name: &str, value: u64, low: u64, high: u64| match (low..=high).contains(&value) {
        true => Ok(()),
        false => Err(invalid(name, format!("= {value} is outside {low}..={high}"))),
    };
    within("refresh_secs", refresh_secs.into(), 1, 86_400)?;
    within("refetch_secs", refetch_secs.into(), 1, refresh_secs.into())?;
    within("fetch_timeout_ms", timeout_ms.into(), 100, 60_000)?;
    within("max_stale_secs", max_stale_secs.into(), refresh_secs.into(), 30 * 86_400)?;
    within("max_keys", max_keys.into(), 1, MAX_FETCHED_KEYS.into())?;
    Ok(Some(KeyFetchConfig { kind, url, refresh_secs, refetch_secs, timeout_ms, max_stale_secs, max_keys }))
}

/// An absolute http(s) URL whose authority an upstream URL could have
/// (`text::is_authority`), printable ASCII without spaces (the key-source
/// table separates its fields with spaces); its path and query are the
/// provider's own.
fn is_fetch_url(url: &str) -> bool {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|rest| {
        crate::text::is_authority(rest.split(['/', '?', '#']).next().unwrap_or("")) && url.len() <= 2048
    }) && url.bytes().all(|b| (0x21..0x7f).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetch(raw: RawKeyFetch, iss: Option<&str>) -> Result<Option<KeyFetchConfig>, String> {
        read("issuers[0].", raw, iss)
            .map_err(|kind| crate::ConfigError { file: "gw.toml".into(), kind }.to_string())
    }

    #[test]
    fn defaults_follow_providers_schedules() {
        let raw = RawKeyFetch { jwks_url: Some("https://idp.example/jwks".into()), ..Default::default() };
        let got = fetch(raw, None).expect("valid").expect("fetches");
        assert_eq!(
            got,
            KeyFetchConfig {
                kind: FetchKind::Jwks,
                url: "https://idp.example/jwks".into(),
                refresh_secs: 600,
                refetch_secs: 60,
                timeout_ms: 5000,
                max_stale_secs: 86_400,
                max_keys: 16,
            }
        );
        assert_eq!(fetch(RawKeyFetch::default(), None), Ok(None));
    }

    #[test]
    fn discovery_is_under_the_issuer() {
        let raw = RawKeyFetch { discovery: Some(true), ..Default::default() };
        let got = fetch(raw, Some("https://idp.example/tenant/")).expect("valid").expect("fetches");
        assert_eq!(got.kind, FetchKind::Discovery);
        assert_eq!(got.url, "https://idp.example/tenant/.well-known/openid-configuration");
    }

    #[test]
    fn refuses_settings_naming_the_entry() {
        let url = || Some("https://idp.example/jwks".to_owned());
        for (raw, iss, expected) in [
            (
                RawKeyFetch { jwks_url: url(), discovery: Some(true), ..Default::default() },
                None,
                "issuers[0].jwks_url and discovery = true",
            ),
            (
                RawKeyFetch { discovery: Some(true), ..Default::default() },
                None,
                "issuers[0].discovery needs the issuer's iss",
            ),
            (
                RawKeyFetch { discovery: Some(true), ..Default::default() },
                Some("idp"),
                "issuers[0].iss \"idp/.well-known",
            ),
            (RawKeyFetch { refresh_secs: Some(60), ..Default::default() }, None, "need jwks_url"),
            (
                RawKeyFetch { jwks_url: Some("ftp://h/k".into()), ..Default::default() },
                None,
                "issuers[0].jwks_url \"ftp://h/k\" must be",
            ),
            (
                RawKeyFetch { jwks_url: Some("https://h/a b".into()), ..Default::default() },
                None,
                "without spaces",
            ),
            (RawKeyFetch { jwks_url: Some("https://u@h/k".into()), ..Default::default() }, None, "must be"),
            (RawKeyFetch { jwks_url: Some("http://:80/jwks".into()), ..Default::default() }, None, "must be"),
            (
                RawKeyFetch { jwks_url: Some("https://h:99999/k".into()), ..Default::default() },
                None,
                "must be",
            ),
            (RawKeyFetch { jwks_url: Some("https://-h/k".into()), ..Default::default() }, None, "must be"),
            (
                RawKeyFetch { jwks_url: url(), refresh_secs: Some(0), ..Default::default() },
                None,
                "issuers[0].refresh_secs = 0 is outside 1..=86400",
            ),
            (
                RawKeyFetch { jwks_url: url(), refetch_secs: Some(700), ..Default::default() },
                None,
                "refetch_secs = 700 is outside 1..=600",
            ),
            (
                RawKeyFetch { jwks_url: url(), fetch_timeout_ms: Some(10), ..Default::default() },
                None,
                "fetch_timeout_ms = 10",
            ),
            (
                RawKeyFetch { jwks_url: url(), max_stale_secs: Some(10), ..Default::default() },
                None,
                "max_stale_secs = 10 is outside 600..=",
            ),
            (
                RawKeyFetch { jwks_url: url(), max_keys: Some(33), ..Default::default() },
                None,
                "max_keys = 33 is outside 1..=32",
            ),
        ] {
            let line = fetch(raw, iss).expect_err(expected);
            assert!(line.contains(expected), "{expected}: {line}");
            assert!(!line.contains('\n'));
        }
    }
}
