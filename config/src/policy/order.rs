//! The order of the rules: a rule an earlier one hides entirely is refused,
//! and two that overlap with different outcomes are warned about, since
//! then the order decides. Both as the servers behind the gateway read
//! paths (`[upstreams]`): where letters in any case or a trailing slash
//! name one resource, `/Admin` after `/admin` is hidden too.
//!
//! A form body's `_method` (Rails, Laravel, Symfony turn a `POST` into any
//! method) is out of the gateway's sight, so the rules must not let it
//! dodge one: wherever a rule for another method asks more than the rule a
//! `POST` meets, the config is refused unless `method_override = false`.

use super::{AccessConfig, PathMatchConfig, ReadingsConfig, RequirementsConfig, RuleConfig};
use crate::error::ConfigErrorKind;

/// True when `wide` matches every path `narrow` matches, read as `readings` says.
fn covers(wide: &PathMatchConfig, narrow: &PathMatchConfig, readings: &ReadingsConfig) -> bool {
    let read = |path: &str| {
        let path = if readings.any_case { path.to_ascii_lowercase() } else { path.to_owned() };
        match readings.trailing_slash && path.len() > 1 {
            true => path.trim_end_matches('/').to_owned(),
            false => path,
        }
    };
    match (wide, narrow) {
        (PathMatchConfig::Exact(a), PathMatchConfig::Exact(b)) => read(a) == read(b),
        (PathMatchConfig::Exact(_), PathMatchConfig::Prefix(_)) => false,
        (PathMatchConfig::Prefix(a), PathMatchConfig::Exact(b) | PathMatchConfig::Prefix(b)) => {
            under(&read(b), &read(a))
        }
    }
}

/// True when some path matches both.
fn overlap(a: &PathMatchConfig, b: &PathMatchConfig, readings: &ReadingsConfig) -> bool {
    covers(a, b, readings) || covers(b, a, readings)
}

/// `path` is `prefix` or below it, on a segment boundary (the worker's rule).
fn under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

fn methods_cover(wide: &[String], narrow: &[String]) -> bool {
    wide.is_empty() || (!narrow.is_empty() && narrow.iter().all(|m| wide.contains(m)))
}

fn methods_overlap(a: &[String], b: &[String]) -> bool {
    a.is_empty() || b.is_empty() || a.iter().any(|m| b.contains(m))
}

/// Refuses a rule an earlier rule hides, and rules a form body's `_method`
/// could dodge; returns a warning for each pair that overlaps with
/// different outcomes.
pub(super) fn check_order(
    rules: &[RuleConfig],
    readings: &ReadingsConfig,
) -> Result<Vec<String>, ConfigErrorKind> {
    let mut warnings = Vec::new();
    for (j, later) in rules.iter().enumerate() {
        for (i, earlier) in rules[..j].iter().enumerate() {
            if covers(&earlier.path, &later.path, readings) && methods_cover(&earlier.methods, &later.methods)
            {
                return Err(ConfigErrorKind::UnreachableRule {
                    entry: format!("rules[{j}]"),
                    hidden_by: format!("rules[{i}]"),
                });
            }
            if overlap(&earlier.path, &later.path, readings)
                && methods_overlap(&earlier.methods, &later.methods)
                && earlier.access != later.access
            {
                warnings.push(format!(
                    "rules[{i}] and rules[{j}] overlap with different outcomes: requests both match take rules[{i}] (first match wins)"
                ));
            }
        }
    }
    if readings.method_override {
        check_form_overrides(rules)?;
    }
    Ok(warnings)
}

/// Refuses rules that a `POST` whose form body says `_method=M` would
/// dodge: at every path a rule names, the rule `M` meets must ask no more
/// than the one `POST` meets (the same rule, a public one, or none).
fn check_form_overrides(rules: &[RuleConfig]) -> Result<(), ConfigErrorKind> {
    let first = |method: &str, path: &str| {
        rules.iter().position(|rule| {
            (rule.methods.is_empty() || rule.methods.iter().any(|m| m == method)) && matches(&rule.path, path)
        })
    };
    let asks_more = |rule: Option<usize>| match rule.map(|i| &rules[i].access) {
        None | Some(AccessConfig::Public { .. }) => false,
        Some(AccessConfig::Token(requirements)) => *requirements != RequirementsConfig::default(),
        Some(AccessConfig::Deny { .. }) => true,
    };
    let probes = rules.iter().flat_map(|rule| match &rule.path {
        PathMatchConfig::Exact(path) => vec![path.clone()],
        PathMatchConfig::Prefix(prefix) => {
            vec![prefix.clone(), format!("{}/-", prefix.trim_end_matches('/'))]
        }
    });
    for probe in probes {
        let post = first("POST", &probe);
        for method in rules.iter().flat_map(|rule| &rule.methods).filter(|m| *m != "POST") {
            let other = first(method, &probe);
            let same = match (post, other) {
                (Some(a), Some(b)) => rules[a].access == rules[b].access,
                (a, b) => a == b,
            };
            if !same && asks_more(other) {
                let j = other.unwrap_or_default();
                let post_rule = post.map_or("no rule".to_owned(), |i| format!("rules[{i}]"));
                return Err(ConfigErrorKind::Invalid {
                    entry: format!("rules[{j}]"),
                    why: format!(
                        "a POST to {probe} meets {post_rule}, and one whose form says _method={method} (Rails, Laravel, Symfony) reaches the {method} handler this rule protects: give POST the same rule (add it to methods), or set method_override = false under [upstreams] if no upstream reads _method"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// True when `rule` matches the normalized `path` as the module's own
/// reading does: exactly, or a prefix on a segment boundary.
fn matches(rule: &PathMatchConfig, path: &str) -> bool {
    match rule {
        PathMatchConfig::Exact(exact) => exact == path,
        PathMatchConfig::Prefix(prefix) => under(path, prefix),
    }
}
