//! One rule of the policies: its name, path, methods, access and the
//! requirements of a token rule, validated and lowered.

use std::collections::BTreeMap;

use super::{
    AccessConfig, ClaimNames, ClaimValueConfig, LiteralConfig, PathMatchConfig, RequirementsConfig,
    RolesConfig, RuleConfig, invalid, is_token, route_index,
};
use crate::error::ConfigErrorKind;
use crate::raw::RawRule;
use crate::{MAX_TEXT_LEN, RouteConfig};

/// A rule's path: canonical as the module normalizes paths, so that it can
/// match: starts with `/`, RFC 3986 path characters, escapes of reserved
/// bytes only (upper-case hex, never `/` or `\`), no dot or empty segments.
fn rule_path(entry: &str, path: &str) -> Result<String, ConfigErrorKind> {
    let bytes = path.as_bytes();
    let mut ok = path.starts_with('/') && path.len() <= MAX_TEXT_LEN;
    let mut i = 0;
    while ok && i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let byte = hex.filter(|h| h.bytes().all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(&c)));
            let byte = byte.and_then(|h| u8::from_str_radix(h, 16).ok());
            ok = byte.is_some_and(|v| {
                !(v.is_ascii_alphanumeric() || b"-._~/\\".contains(&v) || v < 0x20 || v == 0x7f)
            });
            i += 3;
            continue;
        }
        ok = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b);
        i += 1;
    }
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    let segments_ok = path == "/"
        || segments.iter().enumerate().all(|(i, s)| {
            let name = s.split(';').next().unwrap_or(s);
            (!s.is_empty() || i == last) && name != "." && name != ".."
        });
    match ok && segments_ok {
        true => Ok(path.to_owned()),
        false => Err(invalid(
            entry,
            format!(
                "{path:?} must be a normalized path: starting with '/', no dot or empty segments, no escapes of unreserved characters or slashes"
            ),
        )),
    }
}

pub(super) fn rule(
    entry: &str,
    raw: RawRule,
    routes: &[RouteConfig],
    issuers: &[Option<&str>],
    claims: &mut ClaimNames,
) -> Result<RuleConfig, ConfigErrorKind> {
    let name = match raw.name {
        None => entry.to_owned(),
        Some(name)
            if !name.is_empty()
                && name.len() <= 64
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) =>
        {
            name
        }
        Some(name) => {
            return Err(invalid(
                &format!("{entry}.name"),
                format!("{name:?} must be 1 to 64 letters, digits, '-', '_' or '.'"),
            ));
        }
    };
    let path = match (raw.path, raw.prefix) {
        (Some(path), None) => PathMatchConfig::Exact(rule_path(&format!("{entry}.path"), &path)?),
        (None, Some(prefix)) => PathMatchConfig::Prefix(rule_path(&format!("{entry}.prefix"), &prefix)?),
        _ => return Err(invalid(entry, "needs exactly one of path = \"/exact\" or prefix = \"/below\"")),
    };
    let mut methods = Vec::with_capacity(raw.methods.len());
    for (i, method) in raw.methods.into_iter().enumerate() {
        if !is_token(&method) {
            return Err(invalid(
                &format!("{entry}.methods[{i}]"),
                format!("{method:?} is not an HTTP method"),
            ));
        }
        if methods.contains(&method) {
            return Err(invalid(&format!("{entry}.methods[{i}]"), format!("{method:?} is listed twice")));
        }
        methods.push(method);
    }
    // Every server answers HEAD with its GET handler: a rule for GET is one
    // for HEAD too.
    if methods.iter().any(|m| m == "GET") && !methods.iter().any(|m| m == "HEAD") {
        methods.push("HEAD".to_owned());
    }
    let has_requirements =
        raw.scopes.is_some() || raw.roles.is_some() || raw.claims.is_some() || raw.issuers.is_some();
    let access = match raw.access.as_deref().unwrap_or("token") {
        "public" if has_requirements || raw.status.is_some() => {
            return Err(invalid(entry, "a public rule takes only path or prefix, methods and route"));
        }
        "public" => {
            let aud = raw
                .route
                .ok_or_else(|| invalid(entry, "a public rule needs route = \"AUD\": where it goes"))?;
            AccessConfig::Public { route: route_index(&format!("{entry}.route"), &aud, routes)? }
        }
        "deny" if has_requirements || raw.route.is_some() => {
            return Err(invalid(entry, "a deny rule takes only path or prefix, methods and status"));
        }
        "deny" => match raw.status.unwrap_or(403) {
            status @ (403 | 404) => AccessConfig::Deny { status },
            other => return Err(invalid(&format!("{entry}.status"), format!("{other} must be 403 or 404"))),
        },
        "token" if raw.route.is_some() || raw.status.is_some() => {
            return Err(invalid(entry, "a token rule is routed by the token's audience: no route or status"));
        }
        "token" => {
            let mut requirements = requirements(entry, raw.scopes, raw.roles, raw.claims, claims)?;
            requirements.issuers = rule_issuers(entry, raw.issuers, issuers)?;
            AccessConfig::Token(requirements)
        }
        other => {
            return Err(invalid(
                &format!("{entry}.access"),
                format!("{other:?} must be public, token or deny"),
            ));
        }
    };
    Ok(RuleConfig { name, methods, path, access })
}

/// The indices of the issuers a rule's `issuers` names by their `iss`;
/// empty when it names none, or names every issuer there is.
fn rule_issuers(
    entry: &str,
    named: Option<Vec<String>>,
    issuers: &[Option<&str>],
) -> Result<Vec<u8>, ConfigErrorKind> {
    let Some(named) = named else { return Ok(Vec::new()) };
    if named.is_empty() {
        return Err(invalid(&format!("{entry}.issuers"), "must name at least one issuer's iss"));
    }
    let mut indices = Vec::with_capacity(named.len());
    for (i, iss) in named.iter().enumerate() {
        let at = format!("{entry}.issuers[{i}]");
        let index = issuers
            .iter()
            .position(|known| *known == Some(iss.as_str()))
            .ok_or_else(|| invalid(&at, format!("{iss:?} is the iss of no configured issuer")))?;
        if indices.contains(&(index as u8)) {
            return Err(invalid(&at, format!("{iss:?} is listed twice")));
        }
        indices.push(index as u8);
    }
    indices.sort_unstable();
    Ok(match indices.len() == issuers.len() {
        true => Vec::new(),
        false => indices,
    })
}

fn requirements(
    entry: &str,
    scopes: Option<crate::raw::RawSet>,
    roles: Option<crate::raw::RawRoles>,
    values: Option<BTreeMap<String, toml::Value>>,
    claims: &mut ClaimNames,
) -> Result<RequirementsConfig, ConfigErrorKind> {
    let mut requirements = RequirementsConfig::default();
    if let Some(scopes) = scopes {
        for (list, which) in [(&scopes.all, "all"), (&scopes.any, "any")] {
            for (i, scope) in list.iter().enumerate() {
                // RFC 6750 section 3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
                if scope.is_empty() || !scope.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e)) {
                    let entry = format!("{entry}.scopes.{which}[{i}]");
                    return Err(invalid(
                        &entry,
                        format!("{scope:?} must be a scope token (visible ASCII, no quote or backslash)"),
                    ));
                }
            }
        }
        if scopes.all.is_empty() && scopes.any.is_empty() {
            return Err(invalid(&format!("{entry}.scopes"), "lists no scope"));
        }
        requirements.scope_attribute =
            scopes.all.iter().chain(&scopes.any).cloned().collect::<Vec<_>>().join(" ");
        requirements.scopes_all = scopes.all;
        requirements.scopes_any = scopes.any;
    }
    if let Some(roles) = roles {
        let claim_name = roles.claim.unwrap_or_else(|| "roles".into());
        let claim = claims.index(&format!("{entry}.roles.claim"), &claim_name)?;
        if roles.all.is_empty() && roles.any.is_empty() {
            return Err(invalid(&format!("{entry}.roles"), "lists no role"));
        }
        for role in roles.all.iter().chain(&roles.any) {
            if role.is_empty() || role.len() > MAX_TEXT_LEN || role.chars().any(char::is_control) {
                return Err(invalid(
                    &format!("{entry}.roles"),
                    format!("{role:?} must be 1 to 200 bytes of text"),
                ));
            }
        }
        requirements.roles = Some(RolesConfig { claim, all: roles.all, any: roles.any });
    }
    for (name, value) in values.unwrap_or_default() {
        let value_entry = format!("{entry}.claims.{name}");
        let value = match value {
            toml::Value::String(s) if s.len() <= MAX_TEXT_LEN && !s.chars().any(char::is_control) => {
                LiteralConfig::String(s)
            }
            toml::Value::Integer(n) => LiteralConfig::Integer(n),
            toml::Value::Boolean(b) => LiteralConfig::Bool(b),
            other => {
                return Err(invalid(
                    &value_entry,
                    format!(
                        "is a {}; a claim value is a string (up to 200 bytes), an integer or a boolean",
                        other.type_str()
                    ),
                ));
            }
        };
        let claim = claims.index(&value_entry, &name)?;
        requirements.claim_values.push(ClaimValueConfig { claim, value });
    }
    Ok(requirements)
}
