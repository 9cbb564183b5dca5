//! The token validator: arbitrary bytes as the credentials of an
//! `Authorization: Bearer` header, at a fixed clock.
#![no_main]

use testkit::gateway::{
    Gateway, NOW, Native, authorization_request, bearer_token_of, config, signed_by_fixture_key,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|token: &[u8]| {
    let mut value = b"Bearer ".to_vec();
    value.extend_from_slice(token);
    let head = authorization_request(&value);
    let decision = Native::new().decide(&head, NOW as f64);
    if let Err(why) = decision.check() {
        panic!("invariant broken: {why}");
    }
    if decision.status == 200 {
        // Nothing but a token signed with the gateway's key gets through.
        // (The input may end the field early with a line break, and the
        // scheme may be followed by several spaces: read the field back.)
        let token = bearer_token_of(&head).expect("a forward has a bearer token");
        assert!(signed_by_fixture_key(token), "accepted a token not signed with the key");
        assert!(token.len() <= config().max_token_bytes);
    }
});
