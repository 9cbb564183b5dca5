//! The token validator past the signature: the input is a JOSE header and a
//! claims set (arbitrary bytes, split at the first 0xFF byte), minted into a
//! token signed with the gateway's key, so that every input reaches the
//! header, claims, time and route checks.
#![no_main]

use gateway_security::{Gateway, NOW, Native, Verdict, bearer_request, config, fixture_secret, mint};
use libfuzzer_sys::fuzz_target;

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
        assert!(token.len() <= 256);
        // The subject travels in a header: printable ASCII, and never an escape.
        assert!(subject.bytes().all(|b| (0x20..=0x7e).contains(&b)) && !subject.contains('\\'));
        // The upstream is a route whose audience is spelled, unescaped, in the claims.
        let route = config()
            .routes
            .iter()
            .find(|r| upstream.starts_with(&format!("{}{}/", r.origin, r.base_path)))
            .expect("a configured upstream");
        let quoted = format!("\"{}\"", route.audience);
        assert!(claims.windows(quoted.len()).any(|w| w == quoted.as_bytes()));
        // HS256 is spelled exactly in the header.
        assert!(header.windows(7).any(|w| w == b"\"HS256\""));
    }
});
