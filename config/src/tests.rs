use super::*;

const KEY32: &str = "0123456789abcdef0123456789abcdef";

fn parse_with(text: &str, env: &[(&str, &str)]) -> Result<GatewayConfig, ConfigError> {
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    parse(text, Path::new("test.toml"), &move |var| {
        env.iter().find(|(k, _)| k == var).map(|(_, v)| v.clone())
    })
}

fn err_line(text: &str) -> String {
    match parse_with(text, &[]) {
        Ok(config) => panic!("accepted: {config:?}"),
        Err(e) => e.to_string(),
    }
}

fn minimal(extra_routes: &str) -> String {
    format!(
        "[[keys]]\nkid = \"k1\"\ndemo = \"{KEY32}\"\n[[routes]]\naud = \"b\"\nupstream = \"http://127.0.0.1:1/\"\n{extra_routes}"
    )
}

#[test]
fn sorts_routes_and_trims_upstream_slash() {
    let text = minimal("[[routes]]\naud = \"a\"\nupstream = \"https://x.example/api\"\n");
    let config = parse_with(&text, &[]).expect("valid");
    let auds: Vec<&str> = config.routes.iter().map(|r| r.aud.as_str()).collect();
    assert_eq!(auds, ["a", "b"]);
    assert_eq!(config.routes[1].upstream, "http://127.0.0.1:1");
    assert_eq!(config.realm, "gateway");
    assert_eq!(config.issuers[0].leeway_secs, 30);
    assert!(config.has_demo_key());
}

#[test]
fn splits_upstreams_into_origin_and_base_path() {
    let text = minimal("[[routes]]\naud = \"a\"\nupstream = \"https://x.example:8443/api/v1/\"\n");
    let config = parse_with(&text, &[]).expect("valid");
    assert_eq!(config.routes[0].origin(), "https://x.example:8443");
    assert_eq!(config.routes[0].base_path(), "/api/v1");
    assert_eq!(config.routes[1].origin(), "http://127.0.0.1:1");
    assert_eq!(config.routes[1].base_path(), "");
}

#[test]
fn max_token_bytes_defaults_to_256_and_is_bounded() {
    assert_eq!(parse_with(&minimal(""), &[]).expect("valid").max_token_bytes, 256);
    for n in [256, 2048, 8192] {
        let text = format!("max_token_bytes = {n}\n{}", minimal(""));
        assert_eq!(parse_with(&text, &[]).expect("valid").max_token_bytes, n);
    }
    for n in ["255", "8193", "0", "18446744073709551615"] {
        let text = format!("max_token_bytes = {n}\n{}", minimal(""));
        assert_eq!(err_line(&text), format!("test.toml: max_token_bytes = {n} is outside 256..=8192"));
    }
    assert!(err_line(&format!("max_token_bytes = -1\n{}", minimal(""))).starts_with("test.toml: "));
}

#[test]
fn trusted_proxy_hops_default_to_zero_and_are_bounded() {
    assert_eq!(parse_with(&minimal(""), &[]).expect("valid").trusted_proxy_hops, 0);
    let two = format!("trusted_proxy_hops = 2\n{}", minimal(""));
    assert_eq!(parse_with(&two, &[]).expect("valid").trusted_proxy_hops, 2);
    let many = format!("trusted_proxy_hops = 99\n{}", minimal(""));
    assert!(err_line(&many).contains("trusted_proxy_hops = 99 is above"));
}

#[test]
fn refuses_duplicate_audience_naming_the_entry() {
    let text = minimal("[[routes]]\naud = \"b\"\nupstream = \"http://h\"\n");
    assert_eq!(err_line(&text), "test.toml: routes[1].aud \"b\" is already routed by another entry");
}

#[test]
fn refuses_short_keys() {
    let text = "[[keys]]\nkid = \"k\"\ndemo = \"short\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n";
    assert!(err_line(text).contains("keys[0] is 5 bytes"), "{}", err_line(text));
}

#[test]
fn reads_keys_from_env_and_reports_missing_variables() {
    let text = "[[keys]]\nkid = \"k\"\nenv = \"GW_KEY\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n";
    let config = parse_with(text, &[("GW_KEY", KEY32)]).expect("valid");
    assert_eq!(config.issuers[0].keys[0].secret(), KEY32.as_bytes());
    assert!(!config.has_demo_key());
    assert_eq!(err_line(text), "test.toml: keys[0].env names GW_KEY, which is not set");
}

#[test]
fn reads_keys_from_files_relative_to_the_config() {
    let dir = std::env::temp_dir().join(format!("gw-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("key.hex"), format!("{}\n", "ab".repeat(32))).expect("write");
    let text = "[[keys]]\nkid = \"k\"\nfile = \"key.hex\"\nencoding = \"hex\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n";
    let config = parse(text, &dir.join("gw.toml"), &|_| None).expect("valid");
    assert_eq!(config.issuers[0].keys[0].secret(), [0xab; 32]);
    let missing = text.replace("key.hex", "nope.hex");
    let err = parse(&missing, &dir.join("gw.toml"), &|_| None).expect_err("missing file");
    assert!(err.to_string().contains("keys[0].file"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn decodes_base64url_keys() {
    let text = "[[keys]]\nkid = \"k\"\ndemo = \"q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s\"\nencoding = \"base64url\"\n[[routes]]\naud = \"a\"\nupstream = \"http://h\"\n";
    let config = parse_with(text, &[]).expect("valid");
    assert_eq!(config.issuers[0].keys[0].secret(), [0xab; 32]);
}

#[test]
fn refuses_bad_entries_in_one_line() {
    let cases = [
        ("realm = \"a\\\"b\"\n", "realm may hold only"),
        ("leeway_secs = 99999\n", "leeway_secs = 99999 is above"),
        ("surprise = 1\n", "unknown field"),
    ];
    for (prefix, expected) in cases {
        let line = err_line(&format!("{prefix}{}", minimal("")));
        assert!(line.contains(expected), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }
    assert!(err_line("[[routes]]\naud=\"a\"\nupstream=\"http://h\"\n").contains("no [[keys]]"));
    for bad in [
        "ftp://h",
        "http://",
        "http://12pt7//12:.0.0.1:9L\\\\",
        "http://h:0",
        "http://h:99999",
        "http://h:x",
        "http://u@h",
        "http://h/a?b",
        "http://h/a#b",
        "http://[zz]",
        "http://.h",
        "http://h\\ny",
        "http://h/a/../b",
        "http://h/./b",
        "http://h/a//b",
        "http://h/a/..;x",
        "http://h/a%2fb",
        "http://h/%2e%2e",
    ] {
        let bad_upstream = minimal("").replace("http://127.0.0.1:1/", bad);
        let line = err_line(&bad_upstream);
        assert!(line.contains("routes[0].upstream"), "{bad}: {line}");
        assert!(!line.contains('\n'), "{line}");
    }
    for good in ["http://h", "https://api.example.com:8443/v1/", "http://[::1]:9000", "http://10.0.0.1/a/b"] {
        assert!(parse_with(&minimal("").replace("http://127.0.0.1:1/", good), &[]).is_ok(), "{good}");
    }
    let two_sources = minimal("").replace("demo =", "env = \"X\"\ndemo =");
    assert!(err_line(&two_sources).contains("keys[0] needs exactly one of"));
}

#[test]
fn debug_never_prints_the_secret() {
    let config = parse_with(&minimal(""), &[]).expect("valid");
    let shown = format!("{:?}", config.issuers[0].keys[0]);
    assert!(!shown.contains(KEY32), "{shown}");
    assert!(shown.contains("{ ... }"), "{shown}");
}

#[test]
fn renders_rust_tables() {
    let config = parse_with(&minimal(""), &[]).expect("valid");
    let rust = config.to_rust();
    assert!(rust.contains("Route { audience: \"b\", origin: \"http://127.0.0.1:1\", base_path: \"\" }"));
    assert!(rust.contains("trusted_proxy_hops: 0,"));
    assert!(rust.contains("max_token_bytes: 256,"));
    assert!(rust.contains("MAX_TOKEN_BYTES: usize = CONFIG.max_token_bytes;"));
    assert!(!rust.contains("= 256;"), "max_token_bytes written once: {rust}");
}
