use super::*;

const ALL: Widening = Widening { any_case: true, trailing_slash: true, suffix: true };

#[test]
fn prefixes_with_and_without_a_trailing_slash_are_the_same() {
    for prefix in ["/v1", "/v1/"] {
        let rule = PathMatch::Prefix(prefix);
        assert!(path_matches(rule, b"/v1", EXACT) && path_matches(rule, b"/v1/x", EXACT), "{prefix}");
        assert!(!path_matches(rule, b"/v10", EXACT), "{prefix}");
    }
    assert!(path_matches(PathMatch::Prefix("/"), b"/anything", EXACT));
    assert!(path_matches(PathMatch::Prefix("/"), b"/", EXACT));
}

#[test]
fn widenings_match_what_their_servers_match() {
    let exact = PathMatch::Exact("/account/export");
    let cases: &[(&[u8], Widening, bool)] = &[
        (b"/account/export", EXACT, true),
        (b"/account/export/", EXACT, false),
        (b"/account/export/", Widening { trailing_slash: true, ..EXACT }, true),
        (b"/account/export//", ALL, false),
        (b"/Account/Export", EXACT, false),
        (b"/Account/Export", Widening { any_case: true, ..EXACT }, true),
        (b"/account/export.csv", EXACT, false),
        (b"/account/export.csv", Widening { suffix: true, ..EXACT }, true),
        (b"/account/export.csv/", ALL, true),
        (b"/account/export.csv/x", ALL, false),
        (b"/account/exports", ALL, false),
        (b"/account/expor", ALL, false),
    ];
    for (path, widening, expected) in cases {
        let text = std::string::String::from_utf8_lossy(path);
        assert_eq!(path_matches(exact, path, *widening), *expected, "{text} {widening:?}");
    }
    // A rule written with a trailing slash matches the path without one.
    let slashed = PathMatch::Exact("/docs/");
    assert!(!path_matches(slashed, b"/docs", EXACT));
    assert!(path_matches(slashed, b"/docs", ALL));
    // A rule whose last segment has a dot has no suffix pattern (Spring).
    let dotted = PathMatch::Exact("/openapi.json");
    assert!(path_matches(dotted, b"/openapi.json", ALL));
    assert!(!path_matches(dotted, b"/openapi.json.bak", ALL));
    // A prefix takes a suffix on its last segment: Spring's /admin handler serves /admin.json.
    assert!(path_matches(PathMatch::Prefix("/admin"), b"/admin.json", ALL));
}

#[test]
fn parameters_are_stripped_and_the_segments_they_empty_merged() {
    let cases: &[(&str, &str)] = &[
        ("/admin;x/users", "/admin/users"),
        ("/;x/internal/metrics", "/internal/metrics"),
        ("/;/admin", "/admin"),
        ("/a;x/;y/b", "/a/b"),
        ("/%3Bx/internal", "/internal"),
        ("/a%3Bx/b;c", "/a/b"),
        ("/a/b;x/", "/a/b/"),
        ("/;x", "/"),
        ("/a%3Ax", "/a%3Ax"),
    ];
    for (path, expected) in cases {
        let mut region = std::vec![0u8; 64];
        let mut arena = Arena::new(&mut region);
        let stripped = strip_parameters(path.as_bytes(), &mut arena).expect("room");
        assert_eq!(std::str::from_utf8(stripped), Ok(*expected), "{path}");
    }
}
