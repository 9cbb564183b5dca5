//! A text with named placeholders, `{{name}}`, filled from a map of values.
//! The report's prose lives in such a template (`benches/report.md.tmpl`),
//! its figures in the map. Filling is strict both ways: a placeholder with no
//! value and a value no placeholder asks for are errors, so the prose and
//! the code that measures cannot drift apart unnoticed.
//!
//! ```
//! use std::collections::BTreeMap;
//! use gateway_benches::template::fill;
//! let values = BTreeMap::from([("reuse".to_string(), "5.13 µs".to_string())]);
//! assert_eq!(fill("reused: {{reuse}}.", &values)?, "reused: 5.13 µs.");
//! # Ok::<(), gateway_benches::template::TemplateError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};

/// Why a template could not be filled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `{{` with no `}}` after it on the same line.
    #[error("line {line}: `{{{{` without a closing `}}}}`")]
    Unclosed {
        /// The line, from 1.
        line: usize,
    },
    /// A placeholder name outside `[a-z0-9_.:/-]`, or empty.
    #[error("line {line}: bad placeholder name {name:?} (allowed: a-z 0-9 _ . : / -)")]
    BadName {
        /// The line, from 1.
        line: usize,
        /// The text between the braces.
        name: String,
    },
    /// Placeholders with no value, values with no placeholder, or both.
    #[error("{}", mismatch(unknown, unused))]
    Mismatch {
        /// Placeholders of the template that have no value.
        unknown: Vec<String>,
        /// Values that no placeholder of the template uses.
        unused: Vec<String>,
    },
}

fn mismatch(unknown: &[String], unused: &[String]) -> String {
    let mut parts = Vec::new();
    if !unknown.is_empty() {
        parts.push(format!("placeholders with no value: {}", unknown.join(", ")));
    }
    if !unused.is_empty() {
        parts.push(format!("values no placeholder uses: {}", unused.join(", ")));
    }
    parts.join("; ")
}

/// One piece of a template: literal text or a placeholder's name.
enum Piece<'t> {
    Text(&'t str),
    Placeholder(&'t str),
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.:/-".contains(&b))
}

fn pieces(template: &str) -> Result<Vec<Piece<'_>>, TemplateError> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let line = template[..template.len() - rest.len() + open].matches('\n').count() + 1;
        out.push(Piece::Text(&rest[..open]));
        let after = &rest[open + 2..];
        let close = after.find("}}").filter(|&c| !after[..c].contains('\n'));
        let Some(close) = close else { return Err(TemplateError::Unclosed { line }) };
        let name = &after[..close];
        if !valid_name(name) {
            return Err(TemplateError::BadName { line, name: name.to_owned() });
        }
        out.push(Piece::Placeholder(name));
        rest = &after[close + 2..];
    }
    out.push(Piece::Text(rest));
    Ok(out)
}

/// The placeholder names of `template`, each once, in order.
pub fn placeholders(template: &str) -> Result<Vec<&str>, TemplateError> {
    let mut seen = BTreeSet::new();
    Ok(pieces(template)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Placeholder(name) => seen.insert(name).then_some(name),
            Piece::Text(_) => None,
        })
        .collect())
}

/// `template` with every placeholder replaced by its value. Every
/// placeholder must have a value and every value must be used.
pub fn fill(template: &str, values: &BTreeMap<String, String>) -> Result<String, TemplateError> {
    let pieces = pieces(template)?;
    let mut used = BTreeSet::new();
    let mut unknown = BTreeSet::new();
    let mut out = String::with_capacity(template.len() * 2);
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Placeholder(name) => match values.get(name) {
                Some(value) => {
                    used.insert(name);
                    out.push_str(value);
                }
                None => {
                    unknown.insert(name.to_owned());
                }
            },
        }
    }
    let unused: Vec<String> = values.keys().filter(|k| !used.contains(k.as_str())).cloned().collect();
    if unknown.is_empty() && unused.is_empty() {
        Ok(out)
    } else {
        Err(TemplateError::Mismatch { unknown: unknown.into_iter().collect(), unused })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn fills_every_placeholder_each_time_it_appears() {
        let text = "a {{x}} b {{cmd:per_request/native}} {{x}}\n";
        let filled = fill(text, &values(&[("x", "1"), ("cmd:per_request/native", "`c`")]));
        assert_eq!(filled, Ok("a 1 b `c` 1\n".to_string()));
    }

    #[test]
    fn single_braces_are_text() {
        assert_eq!(fill(r#"{"request": 1} }"#, &values(&[])), Ok(r#"{"request": 1} }"#.to_string()));
    }

    #[test]
    fn a_placeholder_without_a_value_is_named() {
        let err = fill("{{a}} {{b}} {{c}}", &values(&[("b", "")]));
        assert_eq!(
            err,
            Err(TemplateError::Mismatch { unknown: vec!["a".into(), "c".into()], unused: vec![] })
        );
    }

    #[test]
    fn a_value_without_a_placeholder_is_named() {
        let err = fill("{{a}}", &values(&[("a", "1"), ("gone", "2")]));
        assert_eq!(err, Err(TemplateError::Mismatch { unknown: vec![], unused: vec!["gone".into()] }));
    }

    #[test]
    fn malformed_placeholders_name_their_line() {
        assert_eq!(fill("x\n{{a\n}}", &values(&[])), Err(TemplateError::Unclosed { line: 2 }));
        assert_eq!(
            fill("x\ny\n{{ a }}", &values(&[])),
            Err(TemplateError::BadName { line: 3, name: " a ".into() })
        );
        assert_eq!(fill("{{}}", &values(&[])), Err(TemplateError::BadName { line: 1, name: String::new() }));
    }

    #[test]
    fn placeholders_are_listed_once_in_order() {
        assert_eq!(placeholders("{{b}} {{a}} {{b}}"), Ok(vec!["b", "a"]));
    }
}
