//! The decision's encoder: the one place that knows the wire form of a
//! decision (`ABI.md`, "The decision"). The module writes every decision
//! through it into its output buffer, in place, with no heap.
//!
//! The encoder writes what it is given; the module's phases guarantee what
//! the format needs of names and values (tokens; printable ASCII without
//! line breaks), and every reader checks it again with
//! [`crate::Decision::decode`]. Running out of room is an error, not a panic.

use crate::outcome::Labels;

/// The output buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// Writes one decision into a fixed buffer.
pub struct Encoder<'o> {
    buf: &'o mut [u8],
    len: usize,
}

impl<'o> Encoder<'o> {
    /// An empty decision over `buf`.
    pub fn new(buf: &'o mut [u8]) -> Self {
        Encoder { buf, len: 0 }
    }

    /// The bytes written so far.
    pub fn written(&self) -> usize {
        self.len
    }

    /// Forgets what was written (a forward that turned into an answer).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Starts a forward: the upstream's origin, then the path and query,
    /// given in pieces (the route's base path, the normalized target).
    pub fn forward(&mut self, origin: &str, path: &[&[u8]]) -> Result<(), Full> {
        self.push_all(&[origin.as_bytes(), b"\n"])?;
        self.push_all(path)
    }

    /// A forward's drop: every field `name` (written in lower case) is
    /// removed from the client's request.
    pub fn drop_request_field(&mut self, name: &[u8]) -> Result<(), Full> {
        self.push(b"\n-")?;
        self.push_lower(name)
    }

    /// A forward's set: `name` (lower case) is set to the value's pieces.
    pub fn set_request_field(&mut self, name: &str, value: &[&[u8]]) -> Result<(), Full> {
        self.field(b"\n+", name, value)
    }

    /// A forward's response drop: every field `name` (lower case) the
    /// upstream sends is removed from its response.
    pub fn drop_response_field(&mut self, name: &str) -> Result<(), Full> {
        self.push_all(&[b"\n!", name.as_bytes()])
    }

    /// A field added to the response: after a forward's drops, or one of a
    /// direct answer's fields.
    pub fn add_response_field(&mut self, name: &str, value: &[&[u8]]) -> Result<(), Full> {
        self.field(b"\n>", name, value)
    }

    /// Appends `parts` to the value of the field, or to the body, written
    /// last (a value written in several steps).
    pub fn extend_value(&mut self, parts: &[&[u8]]) -> Result<(), Full> {
        self.push_all(parts)
    }

    /// Starts a direct answer: its RFC 6750 error code (empty for none) and
    /// its reason. Fields follow with [`Encoder::add_response_field`], then
    /// [`Encoder::body`] ends it.
    pub fn answer(&mut self, error: &str, reason: &str) -> Result<(), Full> {
        self.push_all(&[error.as_bytes(), b"\n", reason.as_bytes()])
    }

    /// The label line, right after the first two lines of either kind of
    /// decision (`ABI.md`, "Labels"): what decided it, by number: outcome,
    /// rule, route and issuer packed in lower-case hex of fixed widths (2,
    /// 4, 4 and 2 digits, all `f` for none), then the cache's letter
    /// (`#1dffff000100 m`). Every build of the module carries this, so it
    /// is one packed number and one loop.
    pub fn labels(&mut self, labels: &Labels) -> Result<(), Full> {
        let packed = u64::from(labels.outcome) << 40
            | u64::from(labels.rule.unwrap_or(0xffff)) << 24
            | u64::from(labels.route.unwrap_or(0xffff)) << 8
            | u64::from(labels.issuer.unwrap_or(0xff));
        let mut line = *b"\n#000000000000 -";
        hex(&mut line[2..14], packed);
        line[15] = b"-hm"[labels.cache as usize];
        self.push(&line)
    }

    /// A direct answer's request to its host, right after
    /// [`Encoder::labels`]: fetch the keys of issuer `issuer` now (`ABI.md`,
    /// "Keys fetched at run time").
    pub fn refresh_keys(&mut self, issuer: u8) -> Result<(), Full> {
        self.push(b"\n~")?;
        self.decimal(u32::from(issuer))
    }

    /// Starts an `=` line right after [`Encoder::labels`]: the bucket of
    /// limit `limit`; the key follows with [`Encoder::extend_value`]
    /// (`ABI.md`, "Rate limits").
    pub fn bucket(&mut self, limit: u8) -> Result<(), Full> {
        let mut line = *b"\n=00 ";
        hex(&mut line[2..4], u64::from(limit));
        self.push(&line)
    }

    /// A number in decimal, into a value, as the contract writes numbers.
    pub fn extend_decimal(&mut self, n: u32) -> Result<(), Full> {
        self.decimal(n)
    }

    /// A number in decimal, as the contract writes numbers. Never inlined:
    /// one copy serves every caller in the module.
    #[inline(never)]
    pub(crate) fn decimal(&mut self, n: u32) -> Result<(), Full> {
        let mut digits = [0u8; 10];
        let mut start = digits.len();
        let mut n = n;
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[start..])
    }

    /// Ends a direct answer with its body (possibly empty), in pieces.
    pub fn body(&mut self, body: &[&[u8]]) -> Result<(), Full> {
        self.push(b"\n")?;
        self.push_all(body)
    }

    fn field(&mut self, marker: &[u8], name: &str, value: &[&[u8]]) -> Result<(), Full> {
        self.push_all(&[marker, name.as_bytes(), b":"])?;
        self.push_all(value)
    }

    fn push(&mut self, bytes: &[u8]) -> Result<(), Full> {
        let end = self.len + bytes.len();
        self.buf.get_mut(self.len..end).ok_or(Full)?.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    fn push_all(&mut self, parts: &[&[u8]]) -> Result<(), Full> {
        parts.iter().try_for_each(|part| self.push(part))
    }

    fn push_lower(&mut self, bytes: &[u8]) -> Result<(), Full> {
        let start = self.len;
        self.push(bytes)?;
        self.buf[start..self.len].make_ascii_lowercase();
        Ok(())
    }
}

/// Writes `value` into `digits` in lower-case hex, as many digits as it
/// has room for. Never inlined: the module keeps one small loop.
#[inline(never)]
fn hex(digits: &mut [u8], value: u64) {
    let mut value = value;
    for digit in digits.iter_mut().rev() {
        *digit = b"0123456789abcdef"[(value & 15) as usize];
        value >>= 4;
    }
}

impl Encoder<'_> {
    /// The bytes written so far (tests and native hosts read them back).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Encoder<'_> {
    /// One line of the route table (`ABI.md`, "Routes"):
    /// `<audience> <origin><base path>`, after a separator unless `first`.
    pub fn route(&mut self, first: bool, audience: &str, origin: &str, base_path: &str) -> Result<(), Full> {
        let separator: &[u8] = if first { b"" } else { b"\n" };
        self.push_all(&[separator, audience.as_bytes(), b" ", origin.as_bytes(), base_path.as_bytes()])
    }
}
