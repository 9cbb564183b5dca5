use std::path::Path;

use super::*;
use crate::{ConfigError, GatewayConfig};

const BASE: &str = r#"
[[keys]]
kid = "k"
demo = "0123456789abcdef0123456789abcdef"
[[routes]]
aud = "orders"
upstream = "http://127.0.0.1:1/orders"
[[routes]]
aud = "docs"
upstream = "http://127.0.0.1:2"
"#;

/// The base config with `extra`: its top-level keys first, its tables after.
pub(super) fn parse(extra: &str) -> Result<GatewayConfig, ConfigError> {
    let split = extra.find("\n[").map_or(extra.len(), |i| i + 1);
    let split = if extra.starts_with('[') { 0 } else { split };
    let (top, tables) = extra.split_at(split);
    crate::parse(&format!("{top}\n{BASE}{tables}"), Path::new("gw.toml"), &|_| None)
}

pub(super) fn refused(extra: &str) -> String {
    match parse(extra) {
        Ok(config) => panic!("accepted: {:?}", config.policy),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_config_without_policies_has_none_and_needs_no_policy_code() {
    let config = parse("").expect("valid");
    assert_eq!(config.policy, PolicyConfig::default());
    assert!(config.policy_cfgs().is_empty());
}

#[test]
fn rules_are_lowered_with_route_indices_and_claim_indices() {
    let config = parse(
        r#"
[[rules]]
path = "/healthz"
methods = ["GET", "HEAD"]
access = "public"
route = "docs"
[[rules]]
prefix = "/admin"
access = "deny"
status = 404
[[rules]]
prefix = "/orders"
methods = ["DELETE"]
scopes = { all = ["orders:write"], any = ["admin", "ops"] }
roles = { claim = "groups", any = ["staff"] }
claims = { tenant = "acme", tier = 3, verified = true }
[upstreams]
method_override = false
"#,
    )
    .expect("valid");
    let rules = &config.policy.rules;
    assert_eq!(rules[0].access, AccessConfig::Public { route: 0 }, "routes are sorted: docs, orders");
    assert_eq!(rules[1].access, AccessConfig::Deny { status: 404 });
    let AccessConfig::Token(requirements) = &rules[2].access else { panic!("token rule") };
    assert_eq!(requirements.scope_attribute, "orders:write admin ops");
    assert_eq!(config.policy.claims, ["scope", "scp", "groups", "tenant", "tier", "verified"]);
    assert_eq!(config.policy.scope_claims, [0, 1]);
    assert_eq!(requirements.roles.as_ref().map(|r| r.claim), Some(2));
    assert_eq!(requirements.claim_values.len(), 3);
    assert_eq!(config.policy_cfgs(), ["policy_rules", "policy_claims"]);
    let rust = config.to_rust();
    assert!(rust.contains("PathMatch::Exact(\"/healthz\")"), "{rust}");
    assert!(rust.contains("Literal::Integer(3)"), "{rust}");
}

#[test]
fn a_rule_an_earlier_one_hides_is_refused_in_one_line() {
    let line = refused(
        "[[rules]]\nprefix = \"/v1\"\naccess = \"deny\"\n[[rules]]\npath = \"/v1/x\"\nmethods = [\"GET\"]\n",
    );
    assert_eq!(
        line,
        "gw.toml: rules[1] can never match: rules[0] comes first and matches every request it would"
    );
    let same = refused("[[rules]]\npath = \"/a\"\n[[rules]]\npath = \"/a\"\naccess = \"deny\"\n");
    assert!(same.contains("rules[1] can never match"), "{same}");
    // Narrower methods first, or a path beside the prefix: reachable.
    parse(
        "[[rules]]\nprefix = \"/v1\"\nmethods = [\"GET\"]\n[[rules]]\npath = \"/v1/x\"\naccess = \"deny\"\n",
    )
    .expect("reachable");
    parse("[[rules]]\nprefix = \"/v1\"\naccess = \"deny\"\n[[rules]]\npath = \"/v10\"\naccess = \"deny\"\n")
        .expect("/v10 is not under /v1");
}

#[test]
fn overlapping_rules_with_different_outcomes_are_warned_about() {
    let config = parse(
        "[[rules]]\nprefix = \"/v1\"\nmethods = [\"GET\"]\naccess = \"public\"\nroute = \"docs\"\n[[rules]]\nprefix = \"/v1/admin\"\naccess = \"deny\"\n",
    )
    .expect("valid");
    assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
    assert!(config.warnings[0].contains("rules[0] and rules[1] overlap"), "{:?}", config.warnings);
}

#[test]
fn bad_rules_are_refused_in_one_line_naming_the_entry() {
    for (rule, expected) in [
        ("path = \"/a\"\nprefix = \"/b\"", "rules[0] needs exactly one of path"),
        ("path = \"a\"", "rules[0].path \"a\" must be a normalized path"),
        ("path = \"/a/../b\"", "must be a normalized path"),
        ("prefix = \"/a//b\"", "must be a normalized path"),
        ("path = \"/a%2Fb\"", "must be a normalized path"),
        ("path = \"/%7Euser\"", "must be a normalized path"),
        ("path = \"/a%2fb\"", "must be a normalized path"),
        ("path = \"/a b\"", "must be a normalized path"),
        ("path = \"/a\"\naccess = \"public\"", "a public rule needs route"),
        ("path = \"/a\"\naccess = \"public\"\nroute = \"nope\"", "rules[0].route names audience \"nope\""),
        (
            "path = \"/a\"\naccess = \"public\"\nroute = \"docs\"\nscopes = { all = [\"x\"] }",
            "a public rule takes only",
        ),
        ("path = \"/a\"\naccess = \"deny\"\nstatus = 401", "rules[0].status 401 must be 403 or 404"),
        ("path = \"/a\"\naccess = \"allow\"", "rules[0].access \"allow\" must be public, token or deny"),
        ("path = \"/a\"\nmethods = [\"GET POST\"]", "is not an HTTP method"),
        ("path = \"/a\"\nname = \"\"", "rules[0].name \"\" must be 1 to 64 letters"),
        ("path = \"/a\"\nname = \"admin rule\"", "must be 1 to 64 letters, digits"),
        ("path = \"/a\"\nname = \"rules[1]\"", "must be 1 to 64 letters, digits"),
        ("path = \"/a\"\nscopes = { all = [\"a b\"] }", "must be a scope token"),
        ("path = \"/a\"\nscopes = { all = [\"a\\\"b\"] }", "must be a scope token"),
        ("path = \"/a\"\nscopes = {}", "lists no scope"),
        ("path = \"/a\"\nclaims = { tier = 1.5 }", "rules[0].claims.tier is a float"),
        ("path = \"/a\"\nclaims = { groups = [\"a\"] }", "rules[0].claims.groups is a array"),
        ("path = \"/a\"\nroles = { any = [] }", "rules[0].roles lists no role"),
        ("path = \"/a\"\nsurprise = 1", "unknown field"),
    ] {
        let line = refused(&format!("[[rules]]\n{rule}\n"));
        assert!(line.contains(expected), "{rule}: {line}");
        assert!(!line.contains('\n'), "{line}");
    }
}

#[test]
fn claim_headers_default_under_x_gateway_and_refuse_collisions() {
    let config = parse("[[claim_headers]]\nclaim = \"tenant_id\"\n[[claim_headers]]\nclaim = \"email\"\nheader = \"X-User-Email\"\npercent_encode = true\n").expect("valid");
    let headers: Vec<&str> = config.policy.claim_headers.iter().map(|h| h.header.as_str()).collect();
    assert_eq!(headers, ["x-gateway-tenant-id", "x-user-email"]);
    assert!(config.policy.claim_headers[1].percent_encode);
    for (extra, expected) in [
        (
            "[[claim_headers]]\nclaim = \"sub\"\nheader = \"x-gateway-subject\"",
            "x-gateway-subject\" is a field the gateway",
        ),
        ("[[claim_headers]]\nclaim = \"a\"\nheader = \"x-forwarded-user\"", "is a field the gateway"),
        ("[[claim_headers]]\nclaim = \"a\"\nheader = \"connection\"", "is a field the gateway"),
        ("[[claim_headers]]\nclaim = \"a\"\nheader = \"cookie\"", "is a field the gateway"),
        ("[[claim_headers]]\nclaim = \"a\"\nheader = \"x_user\"", "must be a header name"),
        ("[[claim_headers]]\nclaim = \"a\"\nheader = \"x user\"", "must be a header name"),
        (
            "[[claim_headers]]\nclaim = \"a\"\n[[claim_headers]]\nclaim = \"b\"\nheader = \"x-gateway-a\"",
            "already configured",
        ),
        ("payload_header = \"x-gateway-a\"\n[[claim_headers]]\nclaim = \"a\"", "already configured"),
        ("[[claim_headers]]\nclaim = \"\"", "must be a claim name"),
    ] {
        let line = refused(extra);
        assert!(line.contains(expected), "{extra}: {line}");
    }
}

#[test]
fn too_many_claims_are_refused() {
    let headers: String = (0..17).map(|i| format!("[[claim_headers]]\nclaim = \"c{i}\"\n")).collect();
    assert!(refused(&headers).contains("read 17 distinct claims; at most 16"));
}

#[test]
fn token_sources_name_one_place_each() {
    let config = parse(
        "[[token_sources]]\nbearer = true\n[[token_sources]]\ncookie = \"__Host-at\"\n[[token_sources]]\nheader = \"X-Api-Token\"\nprefix = \"Token \"\n",
    )
    .expect("valid");
    assert_eq!(
        config.policy.token_sources,
        [
            TokenSourceConfig::Bearer,
            TokenSourceConfig::Cookie("__Host-at".into()),
            TokenSourceConfig::Header { name: "x-api-token".into(), prefix: "Token ".into() },
        ]
    );
    for (extra, expected) in [
        ("[[token_sources]]\nbearer = true\ncookie = \"a\"", "needs exactly one of"),
        ("[[token_sources]]\nbearer = false", "needs exactly one of"),
        ("[[token_sources]]\ncookie = \"a b\"", "must be a cookie name"),
        ("[[token_sources]]\nheader = \"authorization\"", "is a field the gateway"),
        ("[[token_sources]]\ncookie = \"a\"\nprefix = \"x\"", "needs exactly one of"),
        (
            "[[token_sources]]\nbearer = true\n[[token_sources]]\nbearer = true",
            "repeats another token source",
        ),
        (
            "[[token_sources]]\nheader = \"x-t\"\n[[claim_headers]]\nclaim = \"a\"\nheader = \"x-t\"",
            "already configured",
        ),
    ] {
        let line = refused(extra);
        assert!(line.contains(expected), "{extra}: {line}");
    }
}

#[test]
fn cors_refuses_a_star_with_credentials_and_origins_browsers_never_send() {
    let config = parse(
        "[[rules]]\nprefix = \"/docs\"\naccess = \"public\"\nroute = \"docs\"\n[cors]\nallow_origins = [\"https://app.example\", \"http://localhost:5173\"]\nallow_methods = [\"GET\", \"POST\"]\nallow_headers = [\"Authorization\", \"content-type\"]\nmax_age_secs = 600\nallow_credentials = true\nunmatched_preflight = \"docs\"\n",
    )
    .expect("valid");
    let cors = config.policy.cors.expect("CORS");
    assert_eq!(cors.headers, ["authorization", "content-type"]);
    assert_eq!(cors.unmatched_preflight_route, Some(0));
    for (cors, expected) in [
        (
            "allow_origins = [\"*\"]\nallow_methods = [\"GET\"]\nallow_credentials = true",
            "\"*\" with allow_credentials = true",
        ),
        ("allow_origins = [\"*\", \"https://a\"]\nallow_methods = [\"GET\"]", "list it alone"),
        ("allow_origins = [\"https://App.example\"]\nallow_methods = [\"GET\"]", "cors.allow_origins[0]"),
        ("allow_origins = [\"https://app.example/\"]\nallow_methods = [\"GET\"]", "must be an origin"),
        ("allow_origins = [\"null\"]\nallow_methods = [\"GET\"]", "must be an origin"),
        ("allow_origins = [\"https://a\"]\nallow_methods = []", "lists no method"),
        (
            "allow_origins = [\"https://a\"]\nallow_methods = [\"GET\"]\nallow_headers = [\"*\"]",
            "'*' is not supported",
        ),
        (
            "allow_origins = [\"https://a\"]\nallow_methods = [\"GET\"]\nmax_age_secs = 999999",
            "at most 86400",
        ),
        (
            "allow_origins = [\"https://a\"]\nallow_methods = [\"GET\"]\nunmatched_preflight = \"nope\"",
            "names audience",
        ),
    ] {
        let line = refused(&format!("[cors]\n{cors}\n"));
        assert!(line.contains(expected), "{cors}: {line}");
    }
    let any = parse("[cors]\nallow_origins = [\"*\"]\nallow_methods = [\"GET\"]\n").expect("any origin");
    assert_eq!(any.policy.cors.map(|c| c.origins), Some(vec!["*".to_owned()]));
}

#[test]
fn several_issuers_each_with_keys_and_distinct_iss() {
    let two = r#"
[[issuers]]
iss = "https://a.example"
audiences = ["orders"]
[[issuers.keys]]
kid = "k"
demo = "0123456789abcdef0123456789abcdef"
[[issuers]]
iss = "https://b.example"
leeway_secs = 5
[[issuers.keys]]
kid = "k"
demo = "fedcba9876543210fedcba9876543210"
[[routes]]
aud = "orders"
upstream = "http://127.0.0.1:1"
"#;
    let config =
        crate::parse(two, Path::new("gw.toml"), &|_| None).expect("two issuers, the same kid in each");
    assert_eq!(config.issuers.len(), 2);
    assert_eq!((config.issuers[0].leeway_secs, config.issuers[1].leeway_secs), (30, 5));
    assert_eq!(config.policy_cfgs(), ["policy_issuers"]);
    let refused_with =
        |text: &str| crate::parse(text, Path::new("gw.toml"), &|_| None).expect_err("refused").to_string();
    assert!(
        refused_with(&two.replace("https://b.example", "https://a.example"))
            .contains("issuers[1].iss is already another issuer's")
    );
    assert!(
        refused_with(&two.replace("iss = \"https://b.example\"\n", ""))
            .contains("issuers[1].iss is required")
    );
    assert!(
        refused_with(&two.replace("audiences = [\"orders\"]", "audiences = [\"nope\"]"))
            .contains("issuers[0].audiences[0] names audience")
    );
    assert!(
        refused_with(&format!("issuer = \"x\"\n{two}")).contains("[[issuers]] replaces the top-level issuer")
    );
    let no_keys =
        two.replace("[[issuers.keys]]\nkid = \"k\"\ndemo = \"fedcba9876543210fedcba9876543210\"\n", "");
    assert!(refused_with(&no_keys).contains("no [[keys]] entry"));
}

#[test]
fn an_unmatched_preflight_needs_a_public_rule_for_options_to_its_route() {
    let cors = "[cors]\nallow_origins = [\"https://a\"]\nallow_methods = [\"GET\"]\nunmatched_preflight = \"docs\"\n";
    let none = refused(cors);
    assert!(none.contains("cors.unmatched_preflight") && none.contains("public rule for OPTIONS"), "{none}");
    let get_only =
        "[[rules]]\nprefix = \"/docs\"\nmethods = [\"GET\"]\naccess = \"public\"\nroute = \"docs\"\n";
    assert!(refused(&format!("{get_only}{cors}")).contains("public rule for OPTIONS"));
    let to_orders = "[[rules]]\nprefix = \"/o\"\naccess = \"public\"\nroute = \"orders\"\n";
    assert!(refused(&format!("{to_orders}{cors}")).contains("public rule for OPTIONS"));
    let options = "[[rules]]\nprefix = \"/docs\"\nmethods = [\"GET\", \"OPTIONS\"]\naccess = \"public\"\nroute = \"docs\"\n";
    parse(&format!("{options}{cors}")).expect("a public rule for OPTIONS to docs");
}

#[test]
fn a_rule_for_get_is_one_for_head_too() {
    let public = "access = \"public\"\nroute = \"docs\"";
    let config =
        parse(&format!("[[rules]]\nprefix = \"/r\"\nmethods = [\"GET\"]\n{public}\n")).expect("valid");
    assert_eq!(config.policy.rules[0].methods, ["GET", "HEAD"]);
    let config = parse(&format!("[[rules]]\nprefix = \"/r\"\nmethods = [\"HEAD\", \"GET\"]\n{public}\n"))
        .expect("valid");
    assert_eq!(config.policy.rules[0].methods, ["HEAD", "GET"]);
    // So a later HEAD rule behind it is hidden.
    let hidden = refused(
        "[[rules]]\nprefix = \"/r\"\nmethods = [\"GET\"]\naccess = \"public\"\nroute = \"docs\"\n[[rules]]\nprefix = \"/r\"\nmethods = [\"HEAD\"]\naccess = \"deny\"\n",
    );
    assert!(hidden.contains("rules[1] can never match"), "{hidden}");
}

#[test]
fn two_rules_of_one_name_are_refused() {
    let rules = "[[rules]]\npath = \"/a\"\nname = \"admin\"\n[[rules]]\npath = \"/b\"\nname = \"admin\"\n";
    assert!(refused(rules).contains("rules[1].name \"admin\" names another rule too"), "{}", refused(rules));
    let config = parse("[[rules]]\npath = \"/a\"\nname = \"admin\"\n[[rules]]\npath = \"/b\"\n")
        .expect("names differ");
    let names: Vec<&str> = config.policy.rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["admin", "rules[1]"]);
}

#[test]
fn rules_are_hidden_as_the_upstreams_read_paths() {
    // Express and ASP.NET Core read /Admin as /admin; Express /x/ as /x.
    let case = "[[rules]]\nprefix = \"/admin\"\naccess = \"deny\"\n[[rules]]\npath = \"/Admin/x\"\naccess = \"public\"\nroute = \"docs\"\n";
    assert!(refused(case).contains("rules[1] can never match"));
    parse(&format!("{case}[upstreams]\nany_case = false\n")).expect("case-sensitive upstreams");
    let slash = "[[rules]]\npath = \"/x\"\naccess = \"deny\"\n[[rules]]\npath = \"/x/\"\naccess = \"public\"\nroute = \"docs\"\n";
    assert!(refused(slash).contains("rules[1] can never match"));
    let config = parse(&format!("{slash}[upstreams]\ntrailing_slash = false\n")).expect("strict slashes");
    assert!(!config.policy.readings.trailing_slash && config.policy.readings.any_case);
    assert!(refused("[upstreams]\nany_case = \"no\"\n").contains("boolean"));
    assert!(refused("[upstreams]\ncase = false\n").contains("unknown field"));
}

#[test]
fn rules_a_form_override_could_meet_build_as_written() {
    // A POST whose form says _method=GET reaches the GET handler (Rails,
    // Laravel, Symfony, Hono): the module judges such a request by every
    // rule its override could meet, so the common pair builds as written.
    parse(
        "[[rules]]\nprefix = \"/orders\"\nmethods = [\"GET\"]\nscopes = { all = [\"orders:read\"] }\n[[rules]]\nprefix = \"/orders\"\nmethods = [\"POST\"]\nscopes = { all = [\"orders:write\"] }\n",
    )
    .expect("GET reads, POST writes");
    parse("[[rules]]\nprefix = \"/reports\"\nmethods = [\"GET\"]\nscopes = { all = [\"reports:read\"] }\n")
        .expect("a rule for GET alone");
    parse("[[rules]]\nprefix = \"/x\"\nmethods = [\"DELETE\"]\naccess = \"deny\"\n")
        .expect("a deny for DELETE");
}

#[test]
fn a_rule_may_name_the_issuers_it_accepts() {
    let two = "[[issuers]]\niss = \"https://a.example\"\n[[issuers.keys]]\nkid = \"a\"\ndemo = \"0123456789abcdef0123456789abcdef\"\n[[issuers]]\niss = \"https://b.example\"\n[[issuers.keys]]\nkid = \"b\"\ndemo = \"0123456789abcdef0123456789abcdef\"\n";
    let text = |rule: &str| {
        format!(
            "{two}[[routes]]\naud = \"orders\"\nupstream = \"http://127.0.0.1:1\"\n[[rules]]\nprefix = \"/admin\"\n{rule}\n"
        )
    };
    let config = crate::parse(&text("issuers = [\"https://b.example\"]"), Path::new("gw.toml"), &|_| None)
        .expect("valid");
    let AccessConfig::Token(requirements) = &config.policy.rules[0].access else { panic!("a token rule") };
    assert_eq!(requirements.issuers, [1]);
    assert!(config.to_rust().contains("issuers: &[1]"));
    let both = crate::parse(
        &text("issuers = [\"https://a.example\", \"https://b.example\"]"),
        Path::new("gw.toml"),
        &|_| None,
    )
    .expect("valid");
    let AccessConfig::Token(requirements) = &both.policy.rules[0].access else { panic!("a token rule") };
    assert!(requirements.issuers.is_empty(), "every issuer: no restriction");
    for (rule, expected) in [
        (
            "issuers = [\"https://c.example\"]",
            "rules[0].issuers[0] \"https://c.example\" is the iss of no configured issuer",
        ),
        ("issuers = []", "must name at least one"),
        ("issuers = [\"https://a.example\", \"https://a.example\"]", "listed twice"),
        (
            "access = \"public\"\nroute = \"orders\"\nissuers = [\"https://a.example\"]",
            "a public rule takes only",
        ),
    ] {
        let line = crate::parse(&text(rule), Path::new("gw.toml"), &|_| None).expect_err(rule).to_string();
        assert!(line.contains(expected), "{rule}: {line}");
    }
}

#[test]
fn a_claim_header_may_name_its_type() {
    let config = parse("[[claim_headers]]\nclaim = \"tenant\"\ntype = \"string\"\n").expect("valid");
    assert_eq!(config.policy.claim_headers[0].value_type, Some(ClaimType::String));
    assert!(config.to_rust().contains("value_type: Some(ClaimType::String)"));
    let line = refused("[[claim_headers]]\nclaim = \"tenant\"\ntype = \"text\"\n");
    assert!(
        line.contains("claim_headers[0].type") && line.contains("string, number, boolean or list"),
        "{line}"
    );
    assert!(
        refused("[[claim_headers]]\nclaim = \"issuer\"\n").contains("sets itself"),
        "x-gateway-issuer is the gateway's"
    );
}
