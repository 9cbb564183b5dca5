//! The token validator past the signature: the input is a JOSE header and a
//! claims set (arbitrary bytes, split at the first 0xFF byte), minted into a
//! token signed with the gateway's key, so that every input reaches the
//! header, claims, time and route checks.
#![no_main]

use testkit::gateway::{Gateway, NOW, Native, Verdict, bearer_request, config, fixture_secret, mint};
use libfuzzer_sys::fuzz_target;

/// The members a forward depends on; the others are skipped unread.
#[derive(serde::Deserialize)]
struct Routing {
    aud: Option<serde_json::Value>,
    sub: Option<String>,
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0xff).unwrap_or(data.len());
    let header = &data[..split];
    let claims = data.get(split + 1..).unwrap_or(&[]);
    let token = mint(header, claims, fixture_secret());
    let decision = Native::new().decide(&bearer_request(&token), NOW as f64);
    if let Err(why) = decision.check() {
        panic!("invariant broken: {why}");
    }
    if let Ok(Verdict::Forward { upstream, subject }) = decision.verdict() {
        assert!(token.len() <= config().max_token_bytes);
        // The subject travels in a header: printable ASCII.
        assert!(subject.bytes().all(|b| (0x20..=0x7e).contains(&b)));
        // The upstream is a route whose audience the claims name, once their
        // escapes are decoded (by serde_json, not by the gateway's reader),
        // and the subject is the claims' `sub` decoded.
        let route = config()
            .routes
            .iter()
            .find(|r| upstream.starts_with(&format!("{}{}/", r.origin, r.base_path)))
            .expect("a configured upstream");
        let read: Routing = serde_json::from_slice(claims).expect("accepted claims are JSON");
        let audiences = match read.aud {
            Some(serde_json::Value::String(aud)) => vec![aud],
            Some(serde_json::Value::Array(items)) => {
                items.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
            }
            _ => Vec::new(),
        };
        assert!(audiences.iter().any(|aud| aud == route.audience), "{audiences:?}");
        assert_eq!(read.sub.unwrap_or_default(), subject);
        // HS256 is spelled exactly in the header.
        assert!(header.windows(7).any(|w| w == b"\"HS256\""));
    }
});
