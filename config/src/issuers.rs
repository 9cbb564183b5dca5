//! Issuers: today's single-issuer form (`issuer`, `leeway_secs`, `[[keys]]`
//! at the top level) or `[[issuers]]`, each with its `iss`, leeway,
//! audiences and keys. A token's `iss` selects its issuer and only that
//! issuer's keys verify it, so kids are unique within an issuer and may
//! repeat across them.

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::ConfigErrorKind;
use crate::key_fetch::{self, RawKeyFetch};
use crate::raw::{RawIssuer, RawKey, key_fetch_of};
use crate::text::{TextRule, check_text};
use crate::{IssuerConfig, MAX_LEEWAY_SECS, RouteConfig, keys};

/// The issuer entries of the TOML, in both forms.
pub(crate) struct Forms {
    /// The top-level `issuer`.
    pub issuer: Option<String>,
    /// The top-level `leeway_secs`, the default of every issuer.
    pub leeway_secs: u64,
    /// The top-level `[[keys]]`.
    pub keys: Vec<RawKey>,
    /// The top-level `jwks_url` or `discovery` and their settings.
    pub fetch: RawKeyFetch,
    /// `[[issuers]]`.
    pub issuers: Vec<RawIssuer>,
    /// The top-level `dpop` and `dpop_window_secs`.
    pub dpop: (Option<String>, Option<u32>),
    /// The top-level `dpop_nonce`.
    pub dpop_nonce: Option<bool>,
    /// The top-level `certificate_bound`.
    pub certificate_bound: Option<String>,
}

/// The issuers, validated, with their keys read; the keys a JWKS file
/// holds that the gateway skips add their lines to `warnings`.
pub(crate) fn read(
    forms: Forms,
    routes: &[RouteConfig],
    base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Result<Vec<IssuerConfig>, ConfigErrorKind> {
    if forms.leeway_secs > MAX_LEEWAY_SECS {
        return Err(ConfigErrorKind::LeewayTooLarge(forms.leeway_secs));
    }
    let top_fetch = forms.fetch;
    let top_level_fetch = !top_fetch.is_empty();
    let entries: Vec<(String, RawIssuer)> = match (forms.issuers.is_empty(), forms.issuer, forms.keys) {
        (true, issuer, keys) => vec![(
            String::new(),
            RawIssuer {
                iss: issuer,
                leeway_secs: None,
                audiences: Vec::new(),
                keys,
                jwks_url: top_fetch.jwks_url,
                discovery: top_fetch.discovery,
                refresh_secs: top_fetch.refresh_secs,
                refetch_secs: top_fetch.refetch_secs,
                fetch_timeout_ms: top_fetch.fetch_timeout_ms,
                max_stale_secs: top_fetch.max_stale_secs,
                max_keys: top_fetch.max_keys,
                dpop: forms.dpop.0,
                dpop_window_secs: forms.dpop.1,
                dpop_nonce: forms.dpop_nonce,
                certificate_bound: forms.certificate_bound,
            },
        )],
        (false, None, keys)
            if keys.is_empty()
                && !top_level_fetch
                && forms.dpop == (None, None)
                && forms.dpop_nonce.is_none()
                && forms.certificate_bound.is_none() =>
        {
            forms
                .issuers
                .into_iter()
                .enumerate()
                .map(|(i, issuer)| (format!("issuers[{i}]."), issuer))
                .collect()
        }
        _ => return Err(ConfigErrorKind::IssuerForms),
    };
    let several = entries.len() > 1;
    let mut seen_iss = BTreeSet::new();
    let mut issuers = Vec::with_capacity(entries.len());
    for (prefix, raw) in entries {
        let entry = prefix.trim_end_matches('.').to_owned();
        match &raw.iss {
            Some(iss) => {
                check_text(&format!("{prefix}iss").replace(".iss", ".iss"), iss, TextRule::JsonPlain)
                    .map_err(|e| rename_issuer(e, &prefix))?
            }
            None if several => {
                return Err(ConfigErrorKind::IssuerIss {
                    entry,
                    why: "is required when there are several issuers",
                });
            }
            None => {}
        }
        if let Some(iss) = &raw.iss
            && !seen_iss.insert(iss.clone())
        {
            return Err(ConfigErrorKind::IssuerIss { entry, why: "is already another issuer's" });
        }
        let leeway_secs = raw.leeway_secs.unwrap_or(forms.leeway_secs);
        if leeway_secs > MAX_LEEWAY_SECS {
            return Err(ConfigErrorKind::LeewayTooLarge(leeway_secs));
        }
        for (i, aud) in raw.audiences.iter().enumerate() {
            if routes.iter().all(|r| &r.aud != aud) {
                let entry = format!("{prefix}audiences[{i}]");
                return Err(ConfigErrorKind::UnknownAudience { entry, aud: aud.clone() });
            }
        }
        let fetch = key_fetch::read(&prefix, key_fetch_of!(raw), raw.iss.as_deref())?;
        if raw.keys.is_empty() && fetch.is_none() {
            return Err(ConfigErrorKind::NoKeys);
        }
        let dpop = crate::dpop::read(&prefix, raw.dpop.as_deref(), raw.dpop_window_secs, raw.dpop_nonce)?;
        let certificate_bound = crate::certificate::read(&prefix, raw.certificate_bound.as_deref())?;
        let mut issuer = IssuerConfig {
            iss: raw.iss,
            leeway_secs,
            keys: Vec::new(),
            public_keys: Vec::new(),
            audiences: raw.audiences,
            fetch,
            dpop,
            certificate_bound,
        };
        read_keys(&prefix, raw.keys, &mut issuer, base, env, warnings)?;
        issuers.push(issuer);
    }
    Ok(issuers)
}

/// `check_text` names the entry it was given; the issuer's is `iss` or `issuer`.
fn rename_issuer(error: ConfigErrorKind, prefix: &str) -> ConfigErrorKind {
    match (error, prefix.is_empty()) {
        (ConfigErrorKind::BadText { why, .. }, true) => {
            ConfigErrorKind::BadText { entry: "issuer".into(), why }
        }
        (other, _) => other,
    }
}

/// Reads an issuer's key entries: kids unique within it.
fn read_keys(
    prefix: &str,
    raw: Vec<RawKey>,
    issuer: &mut IssuerConfig,
    base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigErrorKind> {
    let mut kids = BTreeSet::new();
    for (i, key) in raw.into_iter().enumerate() {
        let entry = format!("{prefix}keys[{i}]");
        let mut new_kid = |kid: &str| -> Result<(), ConfigErrorKind> {
            check_text(&format!("{entry}.kid"), kid, TextRule::JsonPlain)?;
            match kids.insert(kid.to_owned()) {
                true => Ok(()),
                false => Err(ConfigErrorKind::DuplicateKid { entry: entry.clone(), kid: kid.to_owned() }),
            }
        };
        if key.jwks.is_some() || key.pem.is_some() {
            for public in keys::read_public_keys(&entry, key, base, warnings)? {
                new_kid(&public.kid)?;
                issuer.public_keys.push(public);
            }
            continue;
        }
        let kid = key.kid.clone().ok_or_else(|| ConfigErrorKind::KeySource { entry: entry.clone() })?;
        new_kid(&kid)?;
        issuer.keys.push(keys::read_key(&entry, kid, key, base, env)?);
    }
    Ok(())
}
