//! The YAML every rendered bootstrap is written in: a small tree with one
//! writer that does all the quoting, so tests check structure, not text.

/// A YAML value: the little an Envoy bootstrap needs. Built as a tree so
/// that tests check the structure and one writer does all the quoting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Yaml {
    /// A mapping, in the order written.
    Map(Vec<(String, Yaml)>),
    /// A sequence.
    List(Vec<Yaml>),
    /// A string, always written double-quoted.
    Str(String),
    /// An unsigned integer.
    Int(u64),
    /// A boolean.
    Bool(bool),
}

impl Yaml {
    /// The value under `key` when this is a mapping.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text when this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The items when this is a sequence (empty otherwise).
    pub fn items(&self) -> &[Yaml] {
        match self {
            Yaml::List(items) => items,
            _ => &[],
        }
    }

    /// Block-style YAML text, two spaces per level.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        self.write_block(&mut out, 0, false);
        out
    }

    /// Writes a mapping or sequence one entry per line at `indent`; with
    /// `continues_line`, the first entry goes on the current line (after `- `).
    fn write_block(&self, out: &mut String, indent: usize, continues_line: bool) {
        let pad = |out: &mut String, first: bool| {
            if !(first && continues_line) {
                out.push_str(&" ".repeat(indent));
            }
        };
        match self {
            Yaml::Map(entries) if !entries.is_empty() => {
                for (i, (key, value)) in entries.iter().enumerate() {
                    pad(out, i == 0);
                    write_key(out, key);
                    out.push(':');
                    value.write_after(out, indent + 2, false);
                }
            }
            Yaml::List(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    pad(out, i == 0);
                    out.push('-');
                    item.write_after(out, indent + 2, true);
                }
            }
            _ => {
                pad(out, true);
                self.write_inline(out);
                out.push('\n');
            }
        }
    }

    /// Writes this value after `key:` or, for a sequence item, `-`: a scalar
    /// on the same line, a mapping starting on the same line only after `-`.
    fn write_after(&self, out: &mut String, indent: usize, after_dash: bool) {
        match self {
            Yaml::Map(entries) if !entries.is_empty() && after_dash => {
                out.push(' ');
                self.write_block(out, indent, true);
            }
            Yaml::Map(entries) if !entries.is_empty() => {
                out.push('\n');
                self.write_block(out, indent, false);
            }
            Yaml::List(items) if !items.is_empty() => {
                out.push('\n');
                self.write_block(out, indent, false);
            }
            _ => {
                out.push(' ');
                self.write_inline(out);
                out.push('\n');
            }
        }
    }

    fn write_inline(&self, out: &mut String) {
        match self {
            Yaml::Map(_) => out.push_str("{}"),
            Yaml::List(_) => out.push_str("[]"),
            Yaml::Str(text) => write_quoted(out, text),
            Yaml::Int(n) => out.push_str(&n.to_string()),
            Yaml::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        }
    }
}

/// A key as written: bare when it is a plain identifier, quoted otherwise (`"@type"`).
fn write_key(out: &mut String, key: &str) {
    if !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        out.push_str(key);
    } else {
        write_quoted(out, key);
    }
}

/// A YAML double-quoted scalar: `\` and `"` escaped, control characters as `\uXXXX`.
fn write_quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

pub(crate) fn map<const N: usize>(entries: [(&str, Yaml); N]) -> Yaml {
    Yaml::Map(entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

pub(crate) fn text(value: &str) -> Yaml {
    Yaml::Str(value.to_owned())
}

pub(crate) fn typed(type_name: &str, mut fields: Yaml) -> Yaml {
    if let Yaml::Map(entries) = &mut fields {
        entries.insert(0, ("@type".to_owned(), text(&format!("type.googleapis.com/{type_name}"))));
    }
    fields
}

/// Test helpers: paths into a rendered tree.
#[cfg(test)]
pub(crate) mod tree {
    use super::Yaml;

    /// Where the connection manager's settings are in a rendered bootstrap.
    pub(crate) const HCM: &str = "static_resources.listeners.0.filter_chains.0.filters.0.typed_config";

    /// Follows `path` (`key` or list index, dot-separated) from `root`.
    pub(crate) fn at<'a>(root: &'a Yaml, path: &str) -> &'a Yaml {
        path.split('.').fold(root, |node, step| match step.parse::<usize>() {
            Ok(i) => node.items().get(i).unwrap_or_else(|| panic!("no item {i} at {path}")),
            Err(_) => node.get(step).unwrap_or_else(|| panic!("no {step:?} at {path}")),
        })
    }

    /// The string at `path`.
    pub(crate) fn str_at<'a>(root: &'a Yaml, path: &str) -> &'a str {
        at(root, path).as_str().unwrap_or_else(|| panic!("{path} is not a string"))
    }
}
