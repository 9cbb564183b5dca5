//! The forward decision: any request target and any header fields on a
//! request with a valid token. Whatever the input, a forward stays under its
//! route's base path with no dot segment, and no field that only the gateway
//! may set (or that carries the token) survives the plan.
//!
//! Input: the target up to the first `\n`, then header fields, one per line
//! (each `\n` becomes CRLF).
#![no_main]

use std::sync::OnceLock;

use testkit::gateway::{Gateway, Native, config, fields_of, mint_fixture};
use libfuzzer_sys::fuzz_target;

/// A token for `orders` with subject `alice`, valid at the fuzzer's clock.
fn token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let issuer = config().issuers[0].iss.unwrap_or("any");
        let claims = format!(r#"{{"iss":"{issuer}","aud":"orders","sub":"alice","exp":4102444800}}"#);
        mint_fixture(r#"{"alg":"HS256","typ":"JWT"}"#, &claims)
    })
}

/// Lower-cased with `_` read as `-`: how CGI-style upstreams read names.
fn canonical(name: &str) -> String {
    name.to_ascii_lowercase().replace('_', "-")
}

fuzz_target!(|data: &[u8]| {
    let (target, fields) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let mut head = b"GET ".to_vec();
    head.extend_from_slice(target);
    head.extend_from_slice(b" HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ");
    head.extend_from_slice(token().as_bytes());
    head.extend_from_slice(b"\r\n");
    for &b in fields {
        if b == b'\n' { head.extend_from_slice(b"\r\n") } else { head.push(b) }
    }
    head.extend_from_slice(b"\r\n\r\n");
    let decision = Native::new().decide(&head, 1_800_000_000.0);
    if let Err(why) = decision.check() {
        panic!("invariant broken: {why}");
    }
    if decision.status != 200 {
        return;
    }
    let text = decision.shown();
    let lines: Vec<&str> = text.split('\n').collect();
    let (origin, path) = (lines[0], lines[1]);
    // Under the route's base path, with no dot segment left to climb with.
    // The token is for `orders`: its route, whatever else shares its origin.
    let route = config().routes.iter().find(|r| r.audience == "orders").expect("the fixture routes orders");
    assert_eq!(origin, route.origin, "{text}");
    let path_only = path.split('?').next().unwrap_or(path);
    assert!(path_only.starts_with(&format!("{}/", route.base_path)), "{path} leaves {}", route.base_path);
    for segment in path_only.split('/') {
        let lower = segment.to_ascii_lowercase();
        assert!(!matches!(lower.as_str(), "." | ".." | "%2e" | "%2e%2e" | ".%2e" | "%2e."), "{path}");
        assert!(!lower.contains("%2f") && !lower.contains("%5c") && !segment.contains('\\'), "{path}");
    }
    // No field that carries the token or that only the gateway may set survives.
    let dropped: Vec<String> = lines[2..].iter().filter_map(|l| l.strip_prefix('-')).map(str::to_ascii_lowercase).collect();
    let set: Vec<String> =
        lines[2..].iter().filter_map(|l| l.strip_prefix('+')?.split(':').next()).map(canonical).collect();
    let fields = fields_of(&head).expect("a forwarded head parses");
    for (name, _) in &fields {
        let guarded = matches!(canonical(name).as_str(), "authorization" | "proxy-authorization" | "forwarded" | "x-real-ip" | "host")
            || canonical(name).starts_with("x-gateway-")
            || canonical(name).starts_with("x-forwarded-");
        if guarded {
            assert!(dropped.contains(name), "{name} survives: {text}");
        }
    }
    assert!(!set.iter().any(|n| n == "authorization"), "{text}");
    assert!(set.iter().filter(|n| *n == "x-gateway-subject").count() == 1, "{text}");
});
