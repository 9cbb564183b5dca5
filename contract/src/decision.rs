//! The decision, as every reader sees it: a typed view over the module's
//! output (`ABI.md`, "The decision"), checked whole before it is handed out.
//!
//! A decision is either a [`Forward`] (status 200: the upstream request,
//! and what to change in the upstream's response) or an [`Answer`] (any
//! other status: the response the host sends itself, fields and body
//! included). [`Decision::decode`] refuses any output that breaks a rule of
//! the format, so a host executes only what it has read completely; the
//! views borrow the output and copy nothing.

use crate::FORWARD_STATUS;
use crate::limits::Bucket;
use crate::outcome::{Cache, Labels};

/// What the module decided for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision<'a> {
    /// Send the request upstream, changed as the forward says.
    Forward(Forward<'a>),
    /// Answer the client directly.
    Answer(Answer<'a>),
}

/// A forward: the upstream request and the changes to its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forward<'a> {
    /// The upstream's scheme and authority (`http://10.0.0.5:8080`).
    pub origin: &'a str,
    /// The path and query to request: starts with `/`, RFC 3986
    /// characters only, already normalized.
    pub path: &'a str,
    /// What decided it, for the host's counters and logs.
    pub labels: Labels,
    /// The `=` lines, checked: the buckets the host counts the request in.
    buckets: &'a str,
    /// The operation lines, checked.
    operations: &'a str,
}

/// One change a forward makes, in the order the module wrote them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation<'a> {
    /// Remove every field of this name (ASCII case-insensitive) from the
    /// client's request.
    DropRequestField(&'a str),
    /// Set this field on the upstream request, replacing any of the name.
    SetRequestField(&'a str, &'a str),
    /// Remove every field of this name from the upstream's response.
    DropResponseField(&'a str),
    /// Add this field to the response the client receives, after the
    /// upstream's fields.
    AddResponseField(&'a str, &'a str),
}

/// A direct answer: status, fields and body, sent as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer<'a> {
    /// The HTTP status (never 200, which is a forward).
    pub status: u16,
    /// The RFC 6750 error code (`invalid_request`, `invalid_token`,
    /// `insufficient_scope`), empty when there is none. For logs: the
    /// answer's fields already carry it.
    pub error: &'a str,
    /// A short reason, for logs.
    pub reason: &'a str,
    /// What decided it, for the host's counters and logs.
    pub labels: Labels,
    /// The issuer whose keys the host should fetch now (a `~<issuer>` line:
    /// the token named a kid its fetched keys lack, or they expired).
    /// Changes nothing the client receives.
    pub refresh_keys: Option<u8>,
    /// The field lines, checked.
    fields: &'a str,
    /// The body.
    pub body: &'a str,
}

/// Why an output is not a decision a host may execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// A byte other than printable ASCII, tab and the line separator.
    NotText,
    /// The status is not 200 or an answer's status (201 to 599).
    Status,
    /// A forward's first line is not an http(s) origin.
    Origin,
    /// A forward's second line is not a path starting with `/`.
    Path,
    /// A line that is not an operation or a field (its number, from 1).
    Line(usize),
    /// An answer with fewer than its code, reason and body lines.
    ShortAnswer,
    /// An answer's error code or reason holds characters it may not.
    Reason,
    /// The label line (`#<outcome> <rule> <route> <issuer> <cache>`) is
    /// missing after the first two lines, or malformed.
    Labels,
}

impl DecodeError {
    /// What is wrong, for a host's log.
    pub const fn describe(self) -> &'static str {
        match self {
            DecodeError::NotText => "output is not ASCII text",
            DecodeError::Status => "status is neither 200 nor 201 to 599",
            DecodeError::Origin => "forward origin is not an http(s) origin",
            DecodeError::Path => "forward path does not start with /",
            DecodeError::Line(_) => "a line is not a valid operation or field",
            DecodeError::ShortAnswer => "answer needs code, reason and body lines",
            DecodeError::Reason => "answer code or reason holds invalid characters",
            DecodeError::Labels => "the label line is missing or malformed",
        }
    }
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DecodeError::Line(n) => write!(f, "line {n}: {}", self.describe()),
            other => f.write_str(other.describe()),
        }
    }
}

impl core::error::Error for DecodeError {}

/// The answer a host sends when the module returned 500 with no output at
/// all (its own arena could not hold an answer): still a decision.
const MODULE_FAILED: Answer<'static> = Answer {
    status: 500,
    error: "",
    reason: "gateway module failed",
    labels: Labels::of(crate::outcome::MODULE_FAILED),
    refresh_keys: None,
    fields: ">content-type:application/json",
    body: r#"{"error_description":"gateway module failed"}"#,
};

impl<'a> Decision<'a> {
    /// Reads the output of a `handle` call that returned `status`.
    pub fn decode(status: u32, output: &'a [u8]) -> Result<Decision<'a>, DecodeError> {
        Decision::read(status, text_of(output)?, Check::Every)
    }

    /// Checks `output` whole as the decision of `status` and returns it as
    /// text: for [`crate::DecisionBuf`], which keeps the text.
    #[cfg(feature = "std")]
    pub(crate) fn checked_text(status: u32, output: &'a [u8]) -> Result<&'a str, DecodeError> {
        let text = text_of(output)?;
        Decision::read(status, text, Check::Every)?;
        Ok(text)
    }

    /// Reads a text [`Decision::decode`] has accepted, without checking its
    /// bytes again: for [`crate::DecisionBuf`], which keeps a checked
    /// output and hands out its view on every use.
    #[cfg(feature = "std")]
    pub(crate) fn read_checked(status: u32, text: &'a str) -> Result<Decision<'a>, DecodeError> {
        Decision::read(status, text, Check::Structure)
    }

    /// Reads `text` as the decision of `status`, checking what `check` says.
    fn read(status: u32, text: &'a str, check: Check) -> Result<Decision<'a>, DecodeError> {
        let status = u16::try_from(status).map_err(|_| DecodeError::Status)?;
        match status {
            FORWARD_STATUS => decode_forward(text, check).map(Decision::Forward),
            500 if text.is_empty() => Ok(Decision::Answer(MODULE_FAILED)),
            201..=599 => decode_answer(status, text, check).map(Decision::Answer),
            _ => Err(DecodeError::Status),
        }
    }

    /// The HTTP status of the decision (200 for a forward).
    pub fn status(&self) -> u16 {
        match self {
            Decision::Forward(_) => FORWARD_STATUS,
            Decision::Answer(answer) => answer.status,
        }
    }
}

impl<'a> Forward<'a> {
    /// The buckets the request falls in (`=` lines, `ABI.md`, "Rate
    /// limits"), in the module's order: the host counts it in each.
    pub fn buckets(&self) -> impl Iterator<Item = Bucket<'a>> + 'a {
        lines(self.buckets).filter_map(bucket)
    }

    /// Every operation, in the module's order: the request's drops, then its
    /// sets, then the response's drops, then its additions.
    pub fn operations(&self) -> impl Iterator<Item = Operation<'a>> + 'a {
        // Every line was checked by the decoder, so none is skipped, and
        // none is checked again: a host reads the plan more than once.
        lines(self.operations).filter_map(split_operation)
    }

    /// The request fields to remove.
    pub fn request_drops(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.operations().filter_map(|op| match op {
            Operation::DropRequestField(name) => Some(name),
            _ => None,
        })
    }

    /// The request fields to set, in order.
    pub fn request_sets(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.operations().filter_map(|op| match op {
            Operation::SetRequestField(name, value) => Some((name, value)),
            _ => None,
        })
    }

    /// The value the forward sets for `name`, if any.
    pub fn request_set(&self, name: &str) -> Option<&'a str> {
        self.request_sets().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }

    /// The upstream response's fields to remove.
    pub fn response_drops(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.operations().filter_map(|op| match op {
            Operation::DropResponseField(name) => Some(name),
            _ => None,
        })
    }

    /// The fields to add to the response, in order.
    pub fn response_adds(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.operations().filter_map(|op| match op {
            Operation::AddResponseField(name, value) => Some((name, value)),
            _ => None,
        })
    }
}

impl<'a> Answer<'a> {
    /// The answer's fields, in order.
    pub fn fields(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        // Each line is `>name:value`, checked by the decoder.
        lines(self.fields).filter_map(|line| split_at_byte(line.strip_prefix('>')?, b':'))
    }

    /// The value of the field `name`, if the answer has it.
    pub fn field(&self, name: &str) -> Option<&'a str> {
        self.fields().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }
}

/// `output` as text: printable ASCII, tab and newline only.
fn text_of(output: &[u8]) -> Result<&str, DecodeError> {
    if !all(output, TEXT) {
        return Err(DecodeError::NotText);
    }
    // Only printable ASCII, tab and newline: valid UTF-8.
    core::str::from_utf8(output).map_err(|_| DecodeError::NotText)
}

/// The lines of `text`, none for an empty text.
fn lines(text: &str) -> Lines<'_> {
    Lines { rest: (!text.is_empty()).then_some(text) }
}

/// The lines of a text, split at each `\n` byte: a search of the bytes,
/// where `str::split` sets up a searcher per call (a host splits every
/// decision's lines, and reads a forward's plan more than once).
struct Lines<'a> {
    rest: Option<&'a str>,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let text = self.rest?;
        let (line, rest) = split_at_byte(text, b'\n').map_or((text, None), |(line, rest)| (line, Some(rest)));
        self.rest = rest;
        Some(line)
    }
}

/// `text` before and after the first `byte` (an ASCII byte, so both
/// halves are on character boundaries), or `None` without one.
fn split_at_byte(text: &str, byte: u8) -> Option<(&str, &str)> {
    let at = text.bytes().position(|b| b == byte)?;
    Some((text.get(..at)?, text.get(at + 1..)?))
}

/// How much of a decision to check: every rule of the format (a module's
/// output), or only its structure (a text that was checked whole before).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    Every,
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    Structure,
}

fn decode_forward(text: &str, check: Check) -> Result<Forward<'_>, DecodeError> {
    let (origin, rest) = split_at_byte(text, b'\n').unwrap_or((text, ""));
    let (path, rest) = split_at_byte(rest, b'\n').unwrap_or((rest, ""));
    let (labels, operations) = split_at_byte(rest, b'\n').unwrap_or((rest, ""));
    if check == Check::Every && !is_origin(origin) {
        return Err(DecodeError::Origin);
    }
    if check == Check::Every && (!path.starts_with('/') || !all(path.as_bytes(), TARGET)) {
        return Err(DecodeError::Path);
    }
    let labels = label_line(labels).ok_or(DecodeError::Labels)?;
    // The `=` lines come first, right after the labels.
    let mut split = 0;
    for line in lines(operations) {
        if !line.starts_with('=') {
            break;
        }
        split += line.len() + 1;
    }
    let buckets = operations.get(..split.saturating_sub(1)).unwrap_or("");
    let operations = operations.get(split.min(operations.len())..).unwrap_or("");
    if check == Check::Structure {
        return Ok(Forward { origin, path, labels, buckets, operations });
    }
    if text.ends_with('\n') {
        // A forward has no trailing newline: an empty last line is no operation.
        return Err(DecodeError::Line(text.bytes().filter(|&b| b == b'\n').count() + 1));
    }
    let bucket_lines = lines(buckets).count();
    for (i, line) in lines(buckets).enumerate() {
        bucket(line).ok_or(DecodeError::Line(i + 4))?;
    }
    for (i, line) in lines(operations).enumerate() {
        operation(line).ok_or(DecodeError::Line(i + 4 + bucket_lines))?;
    }
    Ok(Forward { origin, path, labels, buckets, operations })
}

/// The label line `#oorrrrttttii c`: outcome, rule, route and issuer in
/// lower-case hex of fixed widths (2, 4, 4, 2 digits; all `f` for none),
/// a space, and the cache: `h`, `m` or `-`.
fn label_line(line: &str) -> Option<Labels> {
    let bytes = line.as_bytes();
    let (b'#', Some(digits), Some(b' '), Some(&cache), true) =
        (bytes.first()?, bytes.get(1..13), bytes.get(13), bytes.get(14), bytes.len() == 15)
    else {
        return None;
    };
    if !digits.iter().all(|&b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let packed = u64::from_str_radix(core::str::from_utf8(digits).ok()?, 16).ok()?;
    let field = |shift: u32, none: u64| {
        let value = packed >> shift & none;
        (value != none).then_some(value)
    };
    let cache = match cache {
        b'h' => Cache::Hit,
        b'm' => Cache::Miss,
        b'-' => Cache::None,
        _ => return None,
    };
    Some(Labels {
        outcome: (packed >> 40) as u8,
        rule: field(24, 0xffff).map(|r| r as u16),
        route: field(8, 0xffff).map(|r| r as u16),
        issuer: field(0, 0xff).map(|i| i as u8),
        cache,
    })
}

/// The bucket an `=` line names: `=<limit, 2 hex digits> <key>`, the key
/// printable ASCII without spaces.
fn bucket(line: &str) -> Option<Bucket<'_>> {
    let rest = line.strip_prefix('=')?;
    let (digits, key) = split_at_byte(rest, b' ')?;
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if digits.len() != 2
        || !digits.bytes().all(hex)
        || key.is_empty()
        || !key.bytes().all(|b| b.is_ascii_graphic())
    {
        return None;
    }
    Some(Bucket { limit: u8::from_str_radix(digits, 16).ok()?, key })
}

/// The operation a forward line spells, `None` when it breaks the format.
fn operation(line: &str) -> Option<Operation<'_>> {
    let operation = split_operation(line)?;
    let checked = match operation {
        Operation::DropRequestField(name) | Operation::DropResponseField(name) => is_name(name),
        Operation::SetRequestField(name, value) | Operation::AddResponseField(name, value) => {
            is_name(name) && is_value(name, value)
        }
    };
    checked.then_some(operation)
}

/// The operation of a line by its first character and its `:`, unchecked
/// (`None` for neither): the decoder checks every line with [`operation`].
fn split_operation(line: &str) -> Option<Operation<'_>> {
    let (kind, rest) = line.split_at_checked(1)?;
    match kind {
        "-" => Some(Operation::DropRequestField(rest)),
        "+" => split_at_byte(rest, b':').map(|(n, v)| Operation::SetRequestField(n, v)),
        "!" => Some(Operation::DropResponseField(rest)),
        ">" => split_at_byte(rest, b':').map(|(n, v)| Operation::AddResponseField(n, v)),
        _ => None,
    }
}

fn decode_answer(status: u16, text: &str, check: Check) -> Result<Answer<'_>, DecodeError> {
    let (error, rest) = split_at_byte(text, b'\n').ok_or(DecodeError::ShortAnswer)?;
    let (reason, rest) = split_at_byte(rest, b'\n').ok_or(DecodeError::ShortAnswer)?;
    if check == Check::Every && (!all(error.as_bytes(), CODE) || !all(reason.as_bytes(), DESCRIPTION)) {
        return Err(DecodeError::Reason);
    }
    let (labels, rest) = split_at_byte(rest, b'\n').ok_or(DecodeError::Labels)?;
    let labels = label_line(labels).ok_or(DecodeError::Labels)?;
    let (fields, body) = match rest.rfind('\n') {
        Some(last) => (&rest[..last], &rest[last + 1..]),
        None => ("", rest),
    };
    // An optional `~<issuer>` line first, then the fields.
    let (refresh_keys, fields, first_field_line) = match fields.strip_prefix('~') {
        Some(after) => {
            let (number, fields) = split_at_byte(after, b'\n').unwrap_or((after, ""));
            (Some(issuer_number(number).ok_or(DecodeError::Line(4))?), fields, 5)
        }
        None => (None, fields, 4),
    };
    if check == Check::Every {
        for (i, line) in lines(fields).enumerate() {
            line.strip_prefix('>').and_then(field).ok_or(DecodeError::Line(i + first_field_line))?;
        }
    }
    Ok(Answer { status, error, reason, labels, refresh_keys, fields, body })
}

/// An issuer's index as a `~` line writes it: a contract number, 0 to 255.
fn issuer_number(text: &str) -> Option<u8> {
    crate::key_sources::number(Some(text)).and_then(|n| u8::try_from(n).ok())
}

/// `name:value`, both valid.
fn field(text: &str) -> Option<(&str, &str)> {
    let (name, value) = split_at_byte(text, b':')?;
    (is_name(name) && is_value(name, value)).then_some((name, value))
}

/// A field name: an RFC 9110 token in lower case.
fn is_name(name: &str) -> bool {
    !name.is_empty() && all(name.as_bytes(), NAME)
}

/// A value the module may set: printable ASCII and tabs, not starting or
/// ending with whitespace (HTTP would trim it), and never for a field the
/// host's HTTP stack owns (framing and the connection).
fn is_value(name: &str, value: &str) -> bool {
    const STACK_OWNED: [&str; 8] = [
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "host",
    ];
    let ws = |b: Option<u8>| matches!(b, Some(b' ' | b'\t'));
    !ws(value.bytes().next()) && !ws(value.bytes().last()) && !STACK_OWNED.contains(&name)
}

/// `http://` or `https://` and a non-empty authority: no path, query,
/// fragment, user info or whitespace.
fn is_origin(origin: &str) -> bool {
    let authority = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    authority.is_some_and(|a| !a.is_empty() && all(a.as_bytes(), AUTHORITY))
}

// The byte classes of the format, one bit each in [`CLASSES`]: one table
// lookup per byte instead of a search of a character list (a host checks
// every byte of every decision).
/// Printable ASCII, tab and the line separator: the whole output.
const TEXT: u8 = 1;
/// A field name's bytes: an RFC 9110 token in lower case.
const NAME: u8 = 1 << 1;
/// RFC 3986 characters of a path and query.
const TARGET: u8 = 1 << 2;
/// An origin's authority: RFC 3986 characters without path, query,
/// fragment, user info or whitespace.
const AUTHORITY: u8 = 1 << 3;
/// RFC 6750 `error_description` characters: %x20-21 / %x23-5B / %x5D-7E.
const DESCRIPTION: u8 = 1 << 4;
/// An RFC 6750 error code's characters here: lower case and `_`.
const CODE: u8 = 1 << 5;

/// Each byte's classes.
static CLASSES: [u8; 256] = classes();

const fn classes() -> [u8; 256] {
    const fn any_of(list: &[u8], b: u8) -> bool {
        let mut i = 0;
        while i < list.len() {
            if list[i] == b {
                return true;
            }
            i += 1;
        }
        false
    }
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut class = 0;
        if b == b'\n' || b == b'\t' || (b >= 0x20 && b < 0x7f) {
            class |= TEXT;
        }
        if b.is_ascii_lowercase() || b.is_ascii_digit() || any_of(b"!#$%&'*+-.^_`|~", b) {
            class |= NAME;
        }
        if b.is_ascii_alphanumeric() || any_of(b"-._~!$&'()*+,;=:@/?%", b) {
            class |= TARGET;
        }
        if b.is_ascii_alphanumeric() || any_of(b"-._~!$&'()*+,;=:[]%", b) {
            class |= AUTHORITY;
        }
        if matches!(b, 0x20..=0x21 | 0x23..=0x5b | 0x5d..=0x7e) {
            class |= DESCRIPTION;
        }
        if b.is_ascii_lowercase() || b == b'_' {
            class |= CODE;
        }
        table[i] = class;
        i += 1;
    }
    table
}

/// Whether every byte of `bytes` is of `class`.
fn all(bytes: &[u8], class: u8) -> bool {
    bytes.iter().all(|&b| CLASSES[usize::from(b)] & class != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table against the rules as character lists, for every byte.
    #[test]
    fn each_class_is_its_rule() {
        for b in 0..=255u8 {
            let is = |class| CLASSES[usize::from(b)] & class != 0;
            assert_eq!(is(TEXT), b == b'\n' || b == b'\t' || (0x20..0x7f).contains(&b), "text {b}");
            let name = b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b);
            assert_eq!(is(NAME), name, "name {b}");
            assert_eq!(
                is(TARGET),
                b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b),
                "target {b}"
            );
            let authority = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:[]%".contains(&b);
            assert_eq!(is(AUTHORITY), authority, "authority {b}");
            assert_eq!(
                is(DESCRIPTION),
                matches!(b, 0x20..=0x21 | 0x23..=0x5b | 0x5d..=0x7e),
                "description {b}"
            );
            assert_eq!(is(CODE), b.is_ascii_lowercase() || b == b'_', "code {b}");
        }
    }

    /// The lines as `str::split` gives them, none for an empty text.
    #[test]
    fn lines_are_those_of_split() {
        for text in ["", "a", "a\n", "\n", "\n\n", "a\nb", "a\n\nb\n", "-x\n+y:z"] {
            let expected = text.split('\n').filter(|_| !text.is_empty());
            assert!(lines(text).eq(expected), "{text:?}");
        }
        assert_eq!(split_at_byte("a:b:c", b':'), Some(("a", "b:c")));
        assert_eq!(split_at_byte("abc", b':'), None);
    }
}
