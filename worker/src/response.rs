//! Phase 7, respond: a rejection as the direct answer the host sends
//! (`ABI.md`, "Answer"): status, fields and body, written with the
//! contract's encoder (a forward is written by [`crate::forward`]).
//!
//! An answer carries its RFC 6750 error code and reason (for the host's
//! log), a `WWW-Authenticate` challenge for 401s and for every answer with
//! an error code, `Content-Type: application/json`, and a short JSON body.
//! Every piece comes from the rejection table or the config, whose checks
//! keep line breaks and quotes out of them.

use contract::Encoder;
pub use contract::Full;

use crate::reject::Rejection;

/// The output buffer's size. The longest answer is a forward plan: the
/// origin and base path (at most 200 bytes), the normalized target (at most
/// 8 KiB), and field operations that each come from a distinct part of the
/// request head (at most 16 KiB with their separators), so 28 KiB holds any.
pub const OUTPUT_CAPACITY: usize = 28 << 10; // 28 KiB

/// Writes the answer to `rejection`; its status is `rejection.status()`.
pub fn write_rejection(out: &mut Encoder<'_>, rejection: Rejection, realm: &str) -> Result<(), Full> {
    let code = rejection.error_code().map_or("", |c| c.as_str());
    let reason = rejection.reason();
    out.answer(code, reason)?;
    if rejection.status() == 401 || !code.is_empty() {
        let challenge: [&[u8]; 8] = [
            b"Bearer realm=\"",
            realm.as_bytes(),
            b"\"",
            b", error=\"",
            code.as_bytes(),
            b"\", error_description=\"",
            reason.as_bytes(),
            b"\"",
        ];
        let parts = if code.is_empty() { &challenge[..3] } else { &challenge[..] };
        out.add_response_field("www-authenticate", parts)?;
    }
    out.add_response_field("content-type", &[contract::fields::JSON.as_bytes()])?;
    let body: [&[u8]; 6] =
        [b"{\"error\":\"", code.as_bytes(), b"\",", b"\"error_description\":\"", reason.as_bytes(), b"\"}"];
    match code.is_empty() {
        true => out.body(&[b"{", body[3], body[4], body[5]]),
        false => out.body(&body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contract::Decision;

    fn written(rejection: Rejection, realm: &str) -> std::string::String {
        let mut buf = std::vec![0u8; OUTPUT_CAPACITY];
        let mut out = Encoder::new(&mut buf);
        write_rejection(&mut out, rejection, realm).expect("fits");
        std::string::String::from_utf8(out.as_bytes().to_vec()).expect("utf8")
    }

    #[test]
    fn invalid_token_challenge_and_body() {
        assert_eq!(
            written(Rejection::Expired, "gateway"),
            "invalid_token\ntoken expired\n\
             >www-authenticate:Bearer realm=\"gateway\", error=\"invalid_token\", error_description=\"token expired\"\n\
             >content-type:application/json\n\
             {\"error\":\"invalid_token\",\"error_description\":\"token expired\"}"
        );
    }

    #[test]
    fn no_credentials_challenge_has_no_error_code() {
        assert_eq!(
            written(Rejection::MissingAuthorization, "gw"),
            "\nbearer token required\n>www-authenticate:Bearer realm=\"gw\"\n>content-type:application/json\n\
             {\"error_description\":\"bearer token required\"}"
        );
    }

    #[test]
    fn server_errors_have_no_challenge() {
        assert_eq!(
            written(Rejection::InvalidClock, "gw"),
            "\nhost clock invalid\n>content-type:application/json\n{\"error_description\":\"host clock invalid\"}"
        );
    }

    #[test]
    fn every_rejection_is_an_answer_the_contract_reads() {
        let realm = "r".repeat(200);
        for &rejection in Rejection::ALL {
            let text = written(rejection, &realm);
            let decision = Decision::decode(u32::from(rejection.status()), text.as_bytes());
            let Ok(Decision::Answer(answer)) = decision else { panic!("{rejection:?}: {decision:?}") };
            assert_eq!(answer.reason, rejection.reason());
            let body: serde_json::Value = serde_json::from_str(answer.body).expect("JSON body");
            assert_eq!(body["error_description"], rejection.reason());
            assert_eq!(answer.field("content-type"), Some("application/json"));
        }
    }

    #[test]
    fn running_out_of_room_is_an_error() {
        let mut buf = [0u8; 8];
        let mut out = Encoder::new(&mut buf);
        assert_eq!(write_rejection(&mut out, Rejection::Expired, "gw"), Err(Full));
    }
}
