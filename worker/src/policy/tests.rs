use super::*;
use crate::config::{PathMatch, Readings, Rule};
use crate::http::request::{MAX_HEADERS, parse};

const RULES: &[Rule<'static>] = &[
    Rule {
        methods: &["GET", "HEAD"],
        path: PathMatch::Exact("/healthz"),
        access: Access::Public { route: 0 },
    },
    Rule { methods: &[], path: PathMatch::Prefix("/admin"), access: Access::Deny { status: 404 } },
    Rule { methods: &[], path: PathMatch::Exact("/account/export"), access: Access::Deny { status: 403 } },
    Rule {
        methods: &["POST", "DELETE"],
        path: PathMatch::Prefix("/orders"),
        access: Access::Token(Requirements { scope_attribute: "w", ..Requirements::NONE }),
    },
    Rule { methods: &[], path: PathMatch::Prefix("/"), access: Access::Public { route: 1 } },
];

/// What `method` `target` (with `fields`) gets under `readings`.
fn judged(method: &str, target: &str, fields: &str, readings: Readings) -> std::string::String {
    let head = std::format!("{method} {target} HTTP/1.1\r\nHost: gw\r\n{fields}\r\n");
    let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let head = parse(head.as_bytes(), &mut parsed).expect("valid head");
    let path = &target.as_bytes()[..target.find('?').unwrap_or(target.len())];
    let mut region = std::vec![0u8; 1024];
    let mut arena = Arena::new(&mut region);
    let policy = Policy { rules: RULES, readings, ..Policy::NONE };
    let judged = access(&policy, &head, path, &mut arena).and_then(|(access, _, reach)| {
        check_reach(&policy, &reach, &access)?;
        let also: std::vec::Vec<&str> =
            reached_requirements(&policy, &reach).map(|r| r.scope_attribute).collect();
        Ok((access, also))
    });
    let (access, also) = match judged {
        Ok(judged) => judged,
        Err(rejection) => return std::format!("{rejection:?}"),
    };
    let own = match access {
        Access::Public { route } => std::format!("public {route}"),
        Access::Deny { status } => std::format!("deny {status}"),
        Access::Token(r) if r.scope_attribute == "w" => "write".into(),
        Access::Token(r) if r.scope_attribute == "r" => "read".into(),
        Access::Token(_) => "token".into(),
    };
    match also.is_empty() {
        true => own,
        false => std::format!("{own} and {}", also.join(" ")),
    }
}

fn which(method: &str, target: &str) -> std::string::String {
    judged(method, target, "", Readings::ALL)
}

#[test]
fn the_first_matching_rule_decides() {
    assert_eq!(which("GET", "/healthz"), "public 0");
    assert_eq!(which("HEAD", "/healthz"), "public 0");
    assert_eq!(which("POST", "/healthz"), "public 1", "methods narrow the rule");
    assert_eq!(which("GET", "/admin"), "deny 404");
    assert_eq!(which("GET", "/admin/"), "deny 404");
    assert_eq!(which("DELETE", "/admin/users/7"), "deny 404");
    assert_eq!(which("GET", "/administrator"), "public 1", "a prefix ends on a segment boundary");
    assert_eq!(which("DELETE", "/orders/7"), "write");
    assert_eq!(which("GET", "/orders/7"), "public 1");
}

/// Servers that read `;` parameters (Tomcat, Jetty, Spring) strip them
/// from each segment before routing, then merge the empty segments that
/// leaves: `/admin;x/users` and `/;x/admin/users` are `/admin/users` to them.
#[test]
fn path_parameters_cannot_dodge_a_rule() {
    for path in ["/admin;x/users", "/admin;jsessionid=1", "/admin;/users", "/admin/users;x"] {
        let got = which("GET", path);
        assert!(got == "deny 404" || got == "PathReadsAnotherRule", "{path}: {got}");
    }
    for path in [
        "/admin;x/users",
        "/healthz;v=1",
        "/;x/admin/users",
        "/;/admin/users",
        "/%3Bx/admin",
        "/admin%3Bx/users",
        "/healthz%3Bv=1",
    ] {
        assert_eq!(which("GET", path), "PathReadsAnotherRule", "{path}");
    }
    // Other escapes are no parameters.
    assert_eq!(which("GET", "/admin%3Ax/users"), "public 1");
    // Parameters that change no rule pass, as they are.
    assert_eq!(which("GET", "/docs;v=1/x"), "public 1");
    assert_eq!(which("GET", "/admin/users;x"), "deny 404");
    // A config whose upstreams keep parameters reads them as written.
    let keep = Readings { path_parameters: false, ..Readings::ALL };
    assert_eq!(judged("GET", "/admin;x/users", "", keep), "public 1");
}

/// Express and ASP.NET Core match paths in any case: `/ADMIN/users` is
/// their `/admin/users`.
#[test]
fn letter_case_cannot_dodge_a_rule() {
    for path in ["/ADMIN/users", "/Admin", "/aDmIn/x", "/Healthz", "/ACCOUNT/export", "/Orders/7"] {
        let method = if path.starts_with("/Orders") { "DELETE" } else { "GET" };
        assert_eq!(which(method, path), "PathReadsAnotherRule", "{path}");
    }
    assert_eq!(which("GET", "/Orders/7"), "public 1", "no rule for GET there: every case reads the same");
    let exact_case = Readings { any_case: false, ..Readings::ALL };
    assert_eq!(judged("GET", "/ADMIN/users", "", exact_case), "public 1");
}

/// Express (non-strict routing), ASP.NET Core and Spring MVC before 6
/// ignore a trailing slash; Spring's suffix patterns ignore a `.ext`.
#[test]
fn a_trailing_slash_or_a_suffix_cannot_dodge_an_exact_rule() {
    assert_eq!(which("GET", "/account/export"), "deny 403");
    for path in
        ["/account/export/", "/account/export.csv", "/account/export.a.b", "/healthz.json", "/admin.json"]
    {
        assert_eq!(which("GET", path), "PathReadsAnotherRule", "{path}");
    }
    assert_eq!(which("GET", "/account/exports"), "public 1", "another word is another path");
    assert_eq!(which("GET", "/account/export.csv/x"), "public 1", "a suffix ends the path");
    let strict = Readings { trailing_slash: false, suffix: false, ..Readings::ALL };
    assert_eq!(judged("GET", "/account/export/", "", strict), "public 1");
    assert_eq!(judged("GET", "/account/export.csv", "", strict), "public 1");
}

/// Servers answer HEAD with the GET handler, and honour method overrides.
#[test]
fn another_method_reading_cannot_dodge_a_rule() {
    let rules_for_get_only = [
        Rule { methods: &["GET"], path: PathMatch::Prefix("/reports"), access: Access::Deny { status: 403 } },
        Rule { methods: &[], path: PathMatch::Prefix("/"), access: Access::Public { route: 0 } },
    ];
    let head = "HEAD /reports HTTP/1.1\r\nHost: gw\r\n\r\n";
    let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let head = parse(head.as_bytes(), &mut parsed).expect("valid head");
    let mut region = std::vec![0u8; 256];
    let policy = Policy { rules: &rules_for_get_only, ..Policy::NONE };
    let got = access(&policy, &head, b"/reports", &mut Arena::new(&mut region));
    assert!(matches!(got, Err(Rejection::MethodReadsAnotherRule)), "{got:?}");

    for fields in [
        "X-HTTP-Method-Override: DELETE\r\n",
        "x-http-method-override: delete\r\n",
        "X_HTTP_Method_Override: DELETE\r\n",
        "X-HTTP-Method: DELETE\r\n",
        "X-Method-Override: DELETE\r\n",
        "X-HTTP-Method-Override: PUT, DELETE\r\n",
    ] {
        assert_eq!(judged("GET", "/orders/7", fields, Readings::ALL), "MethodReadsAnotherRule", "{fields}");
    }
    for target in ["/orders/7?_method=DELETE", "/orders/7?a=1&_method=delete", "/orders/7?%5Fmethod=DELETE"] {
        assert_eq!(judged("GET", target, "", Readings::ALL), "MethodReadsAnotherRule", "{target}");
    }
    // Query names and values are read as a form decodes them, and names
    // as PHP reads them (Laravel, Symfony).
    for target in [
        "/orders/7?_method=%44ELETE",
        "/orders/7?_m%65thod=DELETE",
        "/orders/7?%5F%6D%65%74%68%6F%64=DELETE",
        "/orders/7?_method=DEL%45TE",
        "/orders/7?_method=+DELETE+",
        "/orders/7?_method=%20delete",
        "/orders/7?.method=DELETE",
        "/orders/7?%5Bmethod=DELETE",
        "/orders/7?+_method=DELETE",
        "/orders/7?x;_method=DELETE",
        "/healthz?_m%65thod=DELETE",
    ] {
        assert_eq!(judged("GET", target, "", Readings::ALL), "MethodReadsAnotherRule", "{target}");
    }
    // A decoded override that names a method of the same rule passes.
    assert_eq!(judged("POST", "/orders/1?_method=%44ELETE", "", Readings::ALL), "write");
    assert_eq!(
        judged("GET", "/orders/7?_methods=DELETE&method_=DELETE&x_method=DELETE", "", Readings::ALL),
        "public 1"
    );
    // An override naming a method of the same rule changes nothing.
    assert_eq!(judged("POST", "/orders/7", "X-HTTP-Method-Override: DELETE\r\n", Readings::ALL), "write");
    assert_eq!(judged("GET", "/orders/7?method=DELETE", "", Readings::ALL), "public 1");
    let no_override = Readings { method_override: false, ..Readings::ALL };
    assert_eq!(judged("GET", "/orders/7", "X-HTTP-Method-Override: DELETE\r\n", no_override), "public 1");
}

#[test]
fn no_rules_need_a_token() {
    let head = "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n";
    let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let head = parse(head.as_bytes(), &mut parsed).expect("valid head");
    let mut region = std::vec![0u8; 256];
    let got = access(&Policy::NONE, &head, b"/healthz", &mut Arena::new(&mut region));
    assert!(
        matches!(got, Ok((Access::Token(r), None, reach)) if r.scopes_all.is_empty() && reach.rules().is_empty())
    );
}

/// With what the build works out of these rules (no upper-case letter, no
/// exact rule ending with `/`), a path that needs no widened reading skips
/// it, and one that does still gets it.
#[test]
fn the_rules_facts_skip_only_readings_that_cannot_differ() {
    let facts = Readings { rules_have_upper_case: false, exact_rules_end_with_slash: false, ..Readings::ALL };
    for (path, expected) in [
        ("/admin/users", "deny 404"),
        ("/ADMIN/users", "PathReadsAnotherRule"),
        ("/account/export/", "PathReadsAnotherRule"),
        ("/account/export.csv", "PathReadsAnotherRule"),
        ("/account/export.csv/", "PathReadsAnotherRule"),
        ("/account/export.csv/;x", "PathReadsAnotherRule"),
        ("/Orders/7", "public 1"),
        ("/docs/a.b", "public 1"),
    ] {
        assert_eq!(judged("GET", path, "", facts), expected, "{path}");
    }
    assert_eq!(judged("HEAD", "/account/export", "", facts), "deny 403");
    assert_eq!(
        judged("GET", "/orders/7", "X-HTTP-Method-Override: DELETE\r\n", facts),
        "MethodReadsAnotherRule"
    );
}

/// Fastify 4 reads `;` as the start of the query (`useSemicolonDelimiter`):
/// `/account/export;/x` is its `/account/export`.
#[test]
fn a_semicolon_read_as_the_query_cannot_dodge_a_rule() {
    for path in [
        "/account/export;/x",
        "/account/export;x/y",
        "/account/export;a=b/x",
        "/account/export;//x",
        "/account/export;",
        "/account/export%3B/x",
        "/account/export%3Bx",
    ] {
        assert_eq!(which("GET", path), "PathReadsAnotherRule", "{path}");
        assert_eq!(which("HEAD", path), "PathReadsAnotherRule", "{path}");
    }
    assert_eq!(which("GET", "/docs;v=1/x"), "public 1", "the same rule in every reading");
    let keep = Readings { path_parameters: false, ..Readings::ALL };
    assert_eq!(judged("GET", "/account/export;/x", "", keep), "public 1");
}

/// Rules a form body's `_method` could reach: Rails, Laravel and Symfony
/// override from POST, Hono from any method but GET (and GET or HEAD with
/// content is refused before the rules).
const FORM_RULES: &[Rule<'static>] = &[
    Rule {
        methods: &["GET", "HEAD"],
        path: PathMatch::Prefix("/orders"),
        access: Access::Token(Requirements { scope_attribute: "r", ..Requirements::NONE }),
    },
    Rule {
        methods: &["POST"],
        path: PathMatch::Prefix("/orders"),
        access: Access::Token(Requirements { scope_attribute: "w", ..Requirements::NONE }),
    },
    Rule {
        methods: &["DELETE"],
        path: PathMatch::Prefix("/orders/archive"),
        access: Access::Deny { status: 403 },
    },
    Rule { methods: &["GET", "POST"], path: PathMatch::Exact("/login"), access: Access::Public { route: 0 } },
    Rule { methods: &[], path: PathMatch::Prefix("/"), access: Access::Public { route: 1 } },
];

fn with_form_rules(method: &str, target: &str, fields: &str) -> std::string::String {
    let head = std::format!("{method} {target} HTTP/1.1\r\nHost: gw\r\n{fields}\r\n");
    let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let head = parse(head.as_bytes(), &mut parsed).expect("valid head");
    let mut region = std::vec![0u8; 1024];
    let policy = Policy { rules: FORM_RULES, ..Policy::NONE };
    let got = access(&policy, &head, target.as_bytes(), &mut Arena::new(&mut region)).and_then(
        |(own, _, reach)| {
            check_reach(&policy, &reach, &own)?;
            Ok(reached_requirements(&policy, &reach).map(|r| r.scope_attribute).collect::<std::vec::Vec<_>>())
        },
    );
    std::format!("{got:?}")
}

#[test]
fn a_body_is_judged_by_every_rule_its_method_override_could_meet() {
    const FORM: &str = "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 14\r\n";
    const CHUNKED: &str = "Transfer-Encoding: chunked\r\n";
    // GET needs `r`, POST needs `w`: a POST with a body needs both, as it
    // may be a GET on the upstream; without a body it is a POST.
    for body in [FORM, CHUNKED, "Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 99\r\n"] {
        assert_eq!(with_form_rules("POST", "/orders/5", body), r#"Ok(["r"])"#, "{body}");
    }
    assert_eq!(with_form_rules("POST", "/orders/5", ""), "Ok([])");
    assert_eq!(with_form_rules("POST", "/orders/5", "Content-Length: 0\r\n"), "Ok([])");
    // Methods no rule names at /orders are public there, and a body could
    // make them a GET or a POST: refused.
    for method in ["PUT", "PATCH", "OPTIONS", "DELETE", "PROPFIND"] {
        assert_eq!(with_form_rules(method, "/orders/5", FORM), "Err(MethodReadsAnotherRule)", "{method}");
        assert_eq!(with_form_rules(method, "/orders/5", CHUNKED), "Err(MethodReadsAnotherRule)", "{method}");
        assert_eq!(with_form_rules(method, "/orders/5", ""), "Ok([])", "{method} without a body");
    }
    // A deny rule a body could reach refuses the request.
    assert_eq!(with_form_rules("POST", "/orders/archive/1", FORM), "Err(MethodReadsAnotherRule)");
    assert_eq!(with_form_rules("POST", "/orders/archive/1", ""), "Ok([])");
    // A public POST whose other methods meet public rules stays public.
    assert_eq!(with_form_rules("POST", "/login", FORM), "Ok([])");
    // No reading of overrides configured: nothing is reached.
    let head = std::format!("PUT /orders/5 HTTP/1.1\r\nHost: gw\r\n{FORM}\r\n");
    let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let head = parse(head.as_bytes(), &mut parsed).expect("valid head");
    let mut region = std::vec![0u8; 1024];
    let readings = Readings { method_override: false, ..Readings::ALL };
    let policy = Policy { rules: FORM_RULES, readings, ..Policy::NONE };
    let (_, _, reach) = access(&policy, &head, b"/orders/5", &mut Arena::new(&mut region)).expect("judged");
    assert!(reach.rules().is_empty());
}
