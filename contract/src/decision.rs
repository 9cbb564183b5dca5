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
    refresh_keys: None,
    fields: ">content-type:application/json",
    body: r#"{"error_description":"gateway module failed"}"#,
};

impl<'a> Decision<'a> {
    /// Reads the output of a `handle` call that returned `status`.
    pub fn decode(status: u32, output: &'a [u8]) -> Result<Decision<'a>, DecodeError> {
        if !output.iter().all(|&b| b == b'\n' || b == b'\t' || (0x20..0x7f).contains(&b)) {
            return Err(DecodeError::NotText);
        }
        // Only printable ASCII, tab and newline: valid UTF-8.
        let text = core::str::from_utf8(output).map_err(|_| DecodeError::NotText)?;
        let status = u16::try_from(status).map_err(|_| DecodeError::Status)?;
        match status {
            FORWARD_STATUS => decode_forward(text).map(Decision::Forward),
            500 if text.is_empty() => Ok(Decision::Answer(MODULE_FAILED)),
            201..=599 => decode_answer(status, text).map(Decision::Answer),
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
        lines(self.fields).filter_map(|line| line.strip_prefix('>')?.split_once(':'))
    }

    /// The value of the field `name`, if the answer has it.
    pub fn field(&self, name: &str) -> Option<&'a str> {
        self.fields().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }
}

/// The lines of `text`, none for an empty text.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n').filter(move |_| !text.is_empty())
}

fn decode_forward(text: &str) -> Result<Forward<'_>, DecodeError> {
    let (origin, rest) = text.split_once('\n').unwrap_or((text, ""));
    if !is_origin(origin) {
        return Err(DecodeError::Origin);
    }
    let (path, operations) = rest.split_once('\n').unwrap_or((rest, ""));
    if !path.starts_with('/') || !path.bytes().all(is_target_char) {
        return Err(DecodeError::Path);
    }
    if text.ends_with('\n') {
        // A forward has no trailing newline: an empty last line is no operation.
        return Err(DecodeError::Line(text.split('\n').count()));
    }
    for (i, line) in lines(operations).enumerate() {
        operation(line).ok_or(DecodeError::Line(i + 3))?;
    }
    Ok(Forward { origin, path, operations })
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
        "+" => rest.split_once(':').map(|(n, v)| Operation::SetRequestField(n, v)),
        "!" => Some(Operation::DropResponseField(rest)),
        ">" => rest.split_once(':').map(|(n, v)| Operation::AddResponseField(n, v)),
        _ => None,
    }
}

fn decode_answer(status: u16, text: &str) -> Result<Answer<'_>, DecodeError> {
    let (error, rest) = text.split_once('\n').ok_or(DecodeError::ShortAnswer)?;
    let (reason, rest) = rest.split_once('\n').ok_or(DecodeError::ShortAnswer)?;
    if !error.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') || !reason.bytes().all(is_description_char)
    {
        return Err(DecodeError::Reason);
    }
    let (fields, body) = match rest.rfind('\n') {
        Some(last) => (&rest[..last], &rest[last + 1..]),
        None => ("", rest),
    };
    // An optional `~<issuer>` line first, then the fields.
    let (refresh_keys, fields, first_field_line) = match fields.strip_prefix('~') {
        Some(after) => {
            let (number, fields) = after.split_once('\n').unwrap_or((after, ""));
            (Some(issuer_number(number).ok_or(DecodeError::Line(3))?), fields, 4)
        }
        None => (None, fields, 3),
    };
    for (i, line) in lines(fields).enumerate() {
        line.strip_prefix('>').and_then(field).ok_or(DecodeError::Line(i + first_field_line))?;
    }
    Ok(Answer { status, error, reason, refresh_keys, fields, body })
}

/// An issuer's index as a `~` line writes it: a contract number, 0 to 255.
fn issuer_number(text: &str) -> Option<u8> {
    crate::key_sources::number(Some(text)).and_then(|n| u8::try_from(n).ok())
}

/// `name:value`, both valid.
fn field(text: &str) -> Option<(&str, &str)> {
    let (name, value) = text.split_once(':')?;
    (is_name(name) && is_value(name, value)).then_some((name, value))
}

/// A field name: an RFC 9110 token in lower case.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b))
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
    authority.is_some_and(|a| {
        !a.is_empty() && a.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:[]%".contains(&b))
    })
}

/// RFC 3986 characters of a path and query.
fn is_target_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b)
}

/// RFC 6750 `error_description` characters: %x20-21 / %x23-5B / %x5D-7E.
fn is_description_char(b: u8) -> bool {
    matches!(b, 0x20..=0x21 | 0x23..=0x5b | 0x5d..=0x7e)
}
