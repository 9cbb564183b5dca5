//! The order of the rules: a rule an earlier one hides entirely is refused,
//! and two that overlap with different outcomes are warned about, since
//! then the order decides. Both as the servers behind the gateway read
//! paths (`[upstreams]`): where letters in any case or a trailing slash
//! name one resource, `/Admin` after `/admin` is hidden too.
//!
//! A body's `_method` (Rails, Laravel and Symfony turn a `POST` into any
//! method, Hono any method but `GET`) is judged by the module at run time:
//! a request with a body passes only with what every rule its override
//! could meet asks (`worker/src/policy/readings.rs`).

use super::{PathMatchConfig, ReadingsConfig, RuleConfig};
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

/// Refuses a rule an earlier rule hides; returns a warning for each pair that overlaps with
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
    Ok(warnings)
}
