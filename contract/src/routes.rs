//! The route table a module lists (`ABI.md`, "Routes"): one route per line,
//! `<audience> <upstream URL>`, sorted by audience. Hosts read it to
//! resolve what their users name by audience (upstream overrides), never to
//! decide a request.

/// A line of the route table that is not `<audience> <upstream>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadRouteLine;

/// The routes of a table the `routes` export wrote: (audience, upstream URL).
pub fn decode(table: &[u8]) -> impl Iterator<Item = Result<(&str, &str), BadRouteLine>> {
    let text = core::str::from_utf8(table).map_err(|_| BadRouteLine);
    let lines = match text {
        Ok("") => None,
        Ok(text) => Some(text.split('\n').map(|line| line.split_once(' ').ok_or(BadRouteLine))),
        Err(_) => None,
    };
    let broken = text.is_err().then_some(Err(BadRouteLine));
    lines.into_iter().flatten().chain(broken)
}

/// The scheme and authority of an absolute http(s) URL (`http://h:1/x` gives
/// `http://h:1`), or `None` when it is not one.
pub fn origin_of(url: &str) -> Option<&str> {
    let after_scheme =
        url.strip_prefix("http://").map(|_| 7).or_else(|| url.strip_prefix("https://").map(|_| 8))?;
    let end = url[after_scheme..].find(['/', '?', '#']).map_or(url.len(), |i| after_scheme + i);
    let origin = &url[..end];
    let authority = &origin[after_scheme..];
    let valid = !authority.is_empty()
        && !authority.contains('@')
        && authority.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~:[]".contains(&b));
    valid.then_some(origin)
}

#[cfg(feature = "std")]
pub use overrides::{OverrideError, parse_overrides};

#[cfg(feature = "std")]
mod overrides {
    use std::string::{String, ToString};
    use std::vec::Vec;

    use super::origin_of;

    /// Why an upstream override was refused.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum OverrideError {
        /// Not `FROM=TO`.
        Shape(String),
        /// `TO` is not an origin (scheme and authority, no path).
        Target(String),
        /// `FROM` is neither an audience the module routes nor a URL.
        Unknown {
            /// What the override named.
            from: String,
            /// The audiences the module routes, for the message.
            routed: String,
        },
    }

    impl core::fmt::Display for OverrideError {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            match self {
                OverrideError::Shape(text) => write!(f, "upstream override {text:?}: expected FROM=TO"),
                OverrideError::Target(to) => {
                    write!(f, "upstream override: {to:?} is not an http origin (scheme://host:port, no path)")
                }
                OverrideError::Unknown { from, routed } => write!(
                    f,
                    "upstream override: {from:?} is neither an audience the module routes ({routed}) nor an http URL"
                ),
            }
        }
    }

    impl std::error::Error for OverrideError {}

    /// Parses upstream overrides, `FROM=TO` each, `FROM` an audience of
    /// `routes` (the module's table) or an origin, `TO` an origin. Returns
    /// (origin the module names, origin to connect to) pairs. An override
    /// only moves an origin (tests run upstreams on ephemeral ports); the
    /// module still decides where a request goes and with which path.
    pub fn parse_overrides<'t>(
        overrides: impl IntoIterator<Item = &'t str>,
        routes: &[(String, String)],
    ) -> Result<Vec<(String, String)>, OverrideError> {
        let mut pairs = Vec::new();
        for text in overrides {
            let (from, to) = text
                .split_once('=')
                .map(|(f, t)| (f.trim(), t.trim().trim_end_matches('/')))
                .filter(|(f, t)| !f.is_empty() && !t.is_empty())
                .ok_or_else(|| OverrideError::Shape(text.to_string()))?;
            if origin_of(to) != Some(to) {
                return Err(OverrideError::Target(to.to_string()));
            }
            let routed = routes.iter().find(|(aud, _)| aud == from).and_then(|(_, url)| origin_of(url));
            let origin = routed.or_else(|| origin_of(from)).ok_or_else(|| OverrideError::Unknown {
                from: from.to_string(),
                routed: routes.iter().map(|(aud, _)| aud.as_str()).collect::<Vec<_>>().join(", "),
            })?;
            pairs.push((origin.to_string(), to.to_string()));
        }
        Ok(pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_route_table() {
        let routes: Result<std::vec::Vec<_>, _> = decode(b"a http://h:1/x\nb https://g").collect();
        assert_eq!(routes, Ok(std::vec![("a", "http://h:1/x"), ("b", "https://g")]));
        assert_eq!(decode(b"").count(), 0);
        assert!(decode(b"nospace").any(|r| r.is_err()));
        assert!(decode(b"\xff").any(|r| r.is_err()));
    }

    #[test]
    fn origins_of_urls() {
        assert_eq!(origin_of("http://h:1/x?y"), Some("http://h:1"));
        assert_eq!(origin_of("https://[::1]:9"), Some("https://[::1]:9"));
        assert_eq!(origin_of("ftp://h"), None);
        assert_eq!(origin_of("http://"), None);
        assert_eq!(origin_of("http://u@h"), None);
    }
}

#[cfg(all(test, feature = "std"))]
mod override_tests {
    use super::*;
    use std::string::String;
    use std::vec;

    #[test]
    fn overrides_resolve_audiences_and_origins() {
        let routes = vec![("orders".into(), "http://a:1/orders-svc".into())];
        let by_origin = parse_overrides(["http://a:1=http://127.0.0.1:5/"], &routes).expect("valid");
        assert_eq!(by_origin, [(String::from("http://a:1"), String::from("http://127.0.0.1:5"))]);
        let by_audience = parse_overrides(["orders=http://127.0.0.1:6"], &routes).expect("valid");
        assert_eq!(by_audience, [(String::from("http://a:1"), String::from("http://127.0.0.1:6"))]);
        assert!(matches!(parse_overrides(["users=http://x"], &routes), Err(OverrideError::Unknown { .. })));
        assert!(matches!(parse_overrides(["http://a=nope"], &routes), Err(OverrideError::Target(_))));
        assert!(matches!(parse_overrides(["orders=http://x/path"], &routes), Err(OverrideError::Target(_))));
        assert!(matches!(parse_overrides(["orders"], &routes), Err(OverrideError::Shape(_))));
    }
}
