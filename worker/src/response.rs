//! Phase 7, respond: the rejection, written into the output buffer in the
//! format `ABI.md` specifies (a forward is written by [`crate::forward`]).
//!
//! A rejection is four lines: the RFC 6750 error code (empty when there is
//! none), the reason, the `WWW-Authenticate` value (empty for a 500), and
//! the JSON body. Hosts split on `\n`; no field can contain one (the config
//! and the claims checks make sure of that).

use crate::reject::Rejection;

/// The output buffer's size. The longest answer is a forward plan: the
/// origin and base path (at most 200 bytes), the normalized target (at most
/// 8 KiB), and field operations that each come from a distinct part of the
/// request head (at most 16 KiB with their separators), so 28 KiB holds any.
pub const OUTPUT_CAPACITY: usize = 28 << 10; // 28 KiB

/// Appends bytes to a fixed buffer; running out is an error, not a panic.
pub struct Output<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> Output<'a> {
    /// An empty output over `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Output { buf, len: 0 }
    }

    /// The bytes written so far.
    pub fn written(&self) -> usize {
        self.len
    }

    /// Forgets what was written (a forward plan that turned into a rejection).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Appends `bytes`.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), Rejection> {
        let end = self.len + bytes.len();
        self.buf.get_mut(self.len..end).ok_or(Rejection::ScratchExhausted)?.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    /// Appends each of `parts` in turn.
    pub fn push_all(&mut self, parts: &[&[u8]]) -> Result<(), Rejection> {
        parts.iter().try_for_each(|part| self.push(part))
    }

    /// Appends `bytes` in ASCII lower case.
    pub fn push_lower(&mut self, bytes: &[u8]) -> Result<(), Rejection> {
        let start = self.len;
        self.push(bytes)?;
        self.buf[start..self.len].make_ascii_lowercase();
        Ok(())
    }
}

/// Writes a rejection; the status is `rejection.status()`.
pub fn write_rejection(out: &mut Output<'_>, rejection: Rejection, realm: &str) -> Result<(), Rejection> {
    let code = rejection.error_code().map_or("", |c| c.as_str()).as_bytes();
    let reason = rejection.reason().as_bytes();
    out.push_all(&[code, b"\n", reason, b"\n"])?;
    if rejection.status() < 500 {
        out.push_all(&[b"Bearer realm=\"", realm.as_bytes(), b"\""])?;
        if !code.is_empty() {
            out.push_all(&[b", error=\"", code, b"\", error_description=\"", reason, b"\""])?;
        }
    }
    out.push(b"\n{")?;
    if !code.is_empty() {
        out.push_all(&[b"\"error\":\"", code, b"\","])?;
    }
    out.push_all(&[b"\"error_description\":\"", reason, b"\"}"])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut Output<'_>) -> Result<(), Rejection>) -> std::string::String {
        let mut buf = std::vec![0u8; OUTPUT_CAPACITY];
        let mut out = Output::new(&mut buf);
        f(&mut out).expect("fits");
        let len = out.written();
        std::string::String::from_utf8(buf[..len].to_vec()).expect("utf8")
    }

    #[test]
    fn invalid_token_challenge_and_body() {
        let text = written(|o| write_rejection(o, Rejection::Expired, "gateway"));
        assert_eq!(
            text,
            "invalid_token\ntoken expired\n\
             Bearer realm=\"gateway\", error=\"invalid_token\", error_description=\"token expired\"\n\
             {\"error\":\"invalid_token\",\"error_description\":\"token expired\"}"
        );
    }

    #[test]
    fn no_credentials_challenge_has_no_error_code() {
        let text = written(|o| write_rejection(o, Rejection::MissingAuthorization, "gw"));
        assert_eq!(
            text,
            "\nbearer token required\nBearer realm=\"gw\"\n{\"error_description\":\"bearer token required\"}"
        );
    }

    #[test]
    fn server_errors_have_no_challenge() {
        let text = written(|o| write_rejection(o, Rejection::InvalidClock, "gw"));
        assert_eq!(text, "\nhost clock invalid\n\n{\"error_description\":\"host clock invalid\"}");
    }

    #[test]
    fn every_rejection_body_is_json_and_fits() {
        let realm = "r".repeat(200);
        for &rejection in Rejection::ALL {
            let text = written(|o| write_rejection(o, rejection, &realm));
            let lines: std::vec::Vec<&str> = text.split('\n').collect();
            assert_eq!(lines.len(), 4, "{rejection:?}");
            let body: serde_json::Value = serde_json::from_str(lines[3]).expect("JSON body");
            assert_eq!(body["error_description"], rejection.reason());
        }
    }

    #[test]
    fn running_out_of_room_is_an_error() {
        let mut buf = [0u8; 8];
        let mut out = Output::new(&mut buf);
        assert_eq!(write_rejection(&mut out, Rejection::Expired, "gw"), Err(Rejection::ScratchExhausted));
    }
}
