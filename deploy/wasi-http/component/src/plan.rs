//! A forward decision carried out on wasi:http's field lists (`ABI.md`,
//! "Forward"): the upstream request's fields from the client's, the
//! upstream response's fields for the client, and where the request goes.
//! Field names in wasi:http are lower case; the plan's are too, and are
//! still compared without case.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use contract::Forward;

/// A field as wasi:http lists it: name and value bytes.
pub type Field = (String, Vec<u8>);

/// The upstream request's fields: the client's, less every field the plan
/// drops, then each field it sets (replacing any of that name), in order.
pub fn request_fields(mut fields: Vec<Field>, forward: &Forward<'_>) -> Vec<Field> {
    for name in forward.request_drops() {
        fields.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }
    for (name, value) in forward.request_sets() {
        fields.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        fields.push((name.to_owned(), value.as_bytes().to_vec()));
    }
    fields
}

/// The upstream response's fields for the client: less every field the
/// plan drops, then each field it adds, after the upstream's own. The
/// drops all come first, whatever the order of the plan's lines, as on
/// every other host.
pub fn response_fields(mut fields: Vec<Field>, forward: &Forward<'_>) -> Vec<Field> {
    for name in forward.response_drops() {
        fields.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }
    for (name, value) in forward.response_adds() {
        fields.push((name.to_owned(), value.as_bytes().to_vec()));
    }
    fields
}

/// Whether an origin is https, and its authority: the decoder has checked
/// that it is `http://` or `https://` and authority characters.
pub fn split_origin(origin: &str) -> (bool, &str) {
    match origin.strip_prefix("https://") {
        Some(authority) => (true, authority),
        None => (false, origin.strip_prefix("http://").unwrap_or(origin)),
    }
}

/// The URL a key source names split for an outgoing request: whether it is
/// https, the authority, the path and query (`/` when it has none); `None`
/// when it is not an absolute http(s) URL.
pub fn split_url(url: &str) -> Option<(bool, &str, &str)> {
    let origin = contract::routes::origin_of(url)?;
    let (https, authority) = split_origin(origin);
    let rest = &url[origin.len()..];
    let rest = rest.split('#').next().unwrap_or("");
    let path = if rest.is_empty() { "/" } else { rest };
    Some((https, authority, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use contract::Decision;

    fn fields(pairs: &[(&str, &str)]) -> Vec<Field> {
        pairs.iter().map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec())).collect()
    }

    fn forward(output: &str) -> Forward<'_> {
        match Decision::decode(200, output.as_bytes()) {
            Ok(Decision::Forward(forward)) => forward,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_plan_drops_then_sets_then_edits_the_response() {
        let plan = forward(
            "http://10.0.0.5\n/orders-svc/items?x=1\n#00ffff000000 m\n-authorization\n-x_gateway_subject\n\
             +x-gateway-subject:alice\n+x-forwarded-for:unknown\n!access-control-allow-origin\n>vary:Origin",
        );
        let client = fields(&[
            ("authorization", "Bearer t"),
            ("accept", "*/*"),
            ("x_gateway_subject", "mallory"),
            ("x-forwarded-for", "6.6.6.6"),
            ("x-gateway-subject", "eve"),
        ]);
        assert_eq!(
            request_fields(client, &plan),
            fields(&[("accept", "*/*"), ("x-gateway-subject", "alice"), ("x-forwarded-for", "unknown")])
        );
        let upstream = fields(&[
            ("content-type", "text/plain"),
            ("access-control-allow-origin", "*"),
            ("vary", "Accept"),
        ]);
        assert_eq!(
            response_fields(upstream, &plan),
            fields(&[("content-type", "text/plain"), ("vary", "Accept"), ("vary", "Origin")])
        );
    }

    /// The response's drops come before its additions, whatever the order
    /// of the plan's lines, as every host applies them (`ABI.md`: an
    /// addition is made after the response drops).
    #[test]
    fn the_responses_drops_come_before_its_additions() {
        let plan = forward("http://10.0.0.5\n/\n#00ffff000000 m\n>vary:Origin\n!vary");
        let upstream = fields(&[("content-type", "text/plain"), ("vary", "Accept")]);
        assert_eq!(
            response_fields(upstream, &plan),
            fields(&[("content-type", "text/plain"), ("vary", "Origin")])
        );
    }

    #[test]
    fn origins_and_urls_split_for_an_outgoing_request() {
        assert_eq!(split_origin("http://127.0.0.1:9201"), (false, "127.0.0.1:9201"));
        assert_eq!(split_origin("https://api.example"), (true, "api.example"));
        assert_eq!(split_url("http://idp.test/jwks?v=2#frag"), Some((false, "idp.test", "/jwks?v=2")));
        assert_eq!(split_url("https://login.example"), Some((true, "login.example", "/")));
        assert_eq!(split_url("https://login.example?x"), Some((true, "login.example", "?x")));
        assert_eq!(split_url("ftp://idp.test/k"), None);
    }
}
