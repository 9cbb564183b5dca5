//! Strict JSON (RFC 8259): the reader the JOSE header and the claims are
//! read with, each in one pass, and string unescaping (section 7).
//!
//! The whole text must be valid JSON in valid UTF-8, members nobody reads
//! included (`"x":tru` is refused), and arrays and objects may nest at most
//! [`MAX_DEPTH`] deep, so recursion is bounded whatever the token.
//! [`unescape`] turns an escaped string into the text it stands for.
//! Written here rather than taken from a crate because it is small and
//! allocation-free: `serde-json-core` (used before) skipped unknown members
//! unvalidated, recursed without a limit, read strings raw, and cost about
//! 4 KB of module; the crates that validate JSON allocate or are larger than
//! the whole worker.

/// The deepest nesting of arrays and objects a token's JSON may have.
pub const MAX_DEPTH: usize = 16;

/// True when `json` is one valid JSON value, optionally surrounded by
/// whitespace, in valid UTF-8, nested at most [`MAX_DEPTH`] deep.
pub fn is_strict(json: &[u8]) -> bool {
    let Some(mut reader) = Reader::new(json) else { return false };
    reader.skip_whitespace();
    reader.skip_value(0) && reader.at_end()
}

/// Where and why a text is not strict JSON: what a document's refusal says,
/// so that a document cut short in transit reads as that, not as whatever
/// member the cut happened to fall in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonFault {
    /// Nothing but whitespace.
    Empty,
    /// Not UTF-8: the offset of the first byte that is not.
    NotUtf8(usize),
    /// The text ends inside a value: it is this many bytes long, and some
    /// JSON text starts with it (a document cut short).
    CutShort(usize),
    /// Not JSON from this offset on: where the reader stopped (at the byte
    /// it could not read, or just after it, for a control character in a
    /// string or a bad escape).
    Syntax(usize),
}

impl core::fmt::Display for JsonFault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            JsonFault::Empty => f.write_str("it is empty"),
            JsonFault::NotUtf8(at) => write!(f, "not UTF-8 at byte {at}"),
            JsonFault::CutShort(len) => write!(f, "its JSON is cut short after {len} bytes"),
            JsonFault::Syntax(at) => write!(f, "not strict JSON at byte {at}"),
        }
    }
}

/// Checks that `json` is one strict JSON value (as [`is_strict`]) and, when
/// it is not, says where: the same reader, so a text this accepts is one
/// every reader of the gateway reads the same way.
pub fn check(json: &[u8]) -> Result<(), JsonFault> {
    let mut reader = match core::str::from_utf8(json) {
        Ok(text) => Reader { text, at: 0 },
        Err(e) => return Err(JsonFault::NotUtf8(e.valid_up_to())),
    };
    reader.skip_whitespace();
    if reader.at == json.len() {
        return Err(JsonFault::Empty);
    }
    if reader.skip_value(0) && reader.at_end() {
        return Ok(());
    }
    let at = reader.at;
    // The reader stops at a literal it cannot match without eating it: the
    // end of the text within `true`, `false` or `null` is a cut too.
    let rest = &json[at..];
    let cut_literal = !rest.is_empty()
        && [&b"true"[..], b"false", b"null"]
            .iter()
            .any(|word| word.len() > rest.len() && word.starts_with(rest));
    match at >= json.len() || cut_literal {
        true => Err(JsonFault::CutShort(json.len())),
        false => Err(JsonFault::Syntax(at)),
    }
}

/// A string as it is written between its quotes: valid UTF-8 whose escapes
/// have been checked for their syntax, not yet decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawString<'a> {
    /// The text between the quotes.
    pub text: &'a str,
    /// True when the text holds at least one backslash escape.
    pub escaped: bool,
}

/// Why an escaped string cannot be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unescape {
    /// A `\uXXXX` names half of a surrogate pair without the other half: no
    /// Unicode text can hold it (RFC 8259 section 8.2).
    LoneSurrogate,
    /// The decoded text does not fit the buffer given.
    TooLong,
}

/// The longest JOSE header member name, decoded, the gateway reads (`crit`):
/// the header's buffer for [`member_name`].
pub const NAME_BYTES: usize = 4;

/// A member name with its escapes decoded (RFC 8259 section 7: `"\u0061lg"`
/// is `alg`), for comparing with the names the gateway reads. The JOSE
/// header and the claims both read their member names with this one
/// function, so an escaped name is the member it spells, and an escaped
/// duplicate a duplicate. `None` when the name is longer than `buf` once
/// decoded ([`NAME_BYTES`] for the header, the longest claim name the policy
/// reads for the claims), or is no text (a lone surrogate): no name the
/// gateway reads.
#[inline(always)] // as a call of its own, the size build is about 170 bytes larger
pub fn member_name<'n>(name: RawString<'n>, buf: &'n mut [u8]) -> Option<&'n str> {
    match name.escaped {
        true => unescape(name, buf).ok(),
        false => Some(name.text),
    }
}

/// Decodes the escapes of `raw` (RFC 8259 section 7) into `out` and returns
/// the decoded text. `out` needs at most `raw.text.len()` bytes: no escape
/// decodes to more bytes than it is written with.
pub fn unescape<'o>(raw: RawString<'_>, out: &'o mut [u8]) -> Result<&'o str, Unescape> {
    let text = raw.text.as_bytes();
    let mut len = 0;
    let mut at = 0;
    while at < text.len() {
        let (ch, used) = match text[at] {
            b'\\' => escape_at(text, at + 1)?,
            _ => {
                // Copy the plain run up to the next escape in one piece.
                let run = text[at..].iter().position(|&b| b == b'\\').unwrap_or(text.len() - at);
                let slot = out.get_mut(len..len + run).ok_or(Unescape::TooLong)?;
                slot.copy_from_slice(&text[at..at + run]);
                len += run;
                at += run;
                continue;
            }
        };
        let mut utf8 = [0u8; 4];
        let bytes = ch.encode_utf8(&mut utf8).as_bytes();
        out.get_mut(len..len + bytes.len()).ok_or(Unescape::TooLong)?.copy_from_slice(bytes);
        len += bytes.len();
        at += used;
    }
    // Plain runs are whole UTF-8 sequences and escapes encode whole
    // characters, so this only fails on a bug; it is never trusted blindly.
    core::str::from_utf8(&out[..len]).map_err(|_| Unescape::LoneSurrogate)
}

/// True when `raw`, its escapes decoded, is exactly `expected`; compared
/// as it is decoded, so no buffer is needed.
pub fn decoded_eq(raw: RawString<'_>, expected: &str) -> Result<bool, Unescape> {
    if !raw.escaped {
        return Ok(raw.text == expected);
    }
    let mut at = 0;
    for ch in decoded(raw) {
        let mut utf8 = [0u8; 4];
        let bytes = ch?.encode_utf8(&mut utf8).as_bytes();
        if expected.as_bytes().get(at..at + bytes.len()) != Some(bytes) {
            return Ok(false);
        }
        at += bytes.len();
    }
    Ok(at == expected.len())
}

/// The characters of `raw` with its escapes decoded, one at a time.
pub fn decoded(raw: RawString<'_>) -> impl Iterator<Item = Result<char, Unescape>> + '_ {
    let text = raw.text.as_bytes();
    let mut at = 0;
    core::iter::from_fn(move || {
        let byte = *text.get(at)?;
        if byte == b'\\' {
            let decoded = escape_at(text, at + 1);
            at += decoded.map_or(text.len(), |(_, used)| used);
            return Some(decoded.map(|(ch, _)| ch));
        }
        // A plain character: its UTF-8 sequence, whole (the text is a str).
        let ch = raw.text.get(at..)?.chars().next()?;
        at += ch.len_utf8();
        Some(Ok(ch))
    })
}

/// The character of the escape whose letter is at `text[at]` (after the
/// backslash), and how many bytes the escape takes with its backslash.
/// The reader has checked the escape's syntax.
fn escape_at(text: &[u8], at: usize) -> Result<(char, usize), Unescape> {
    let simple = match text.get(at) {
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => return unicode_escape(text, at + 1),
        Some(&other) => char::from(other),
        None => return Err(Unescape::LoneSurrogate),
    };
    Ok((simple, 2))
}

/// A `\uXXXX` escape, or a pair of them spelling a surrogate pair.
fn unicode_escape(text: &[u8], at: usize) -> Result<(char, usize), Unescape> {
    let first = hex4(text, at).ok_or(Unescape::LoneSurrogate)?;
    let code = match first {
        0xd800..=0xdbff => {
            let low = match (text.get(at + 4..at + 6), hex4(text, at + 6)) {
                (Some(b"\\u"), Some(low @ 0xdc00..=0xdfff)) => low,
                _ => return Err(Unescape::LoneSurrogate),
            };
            let code = 0x10000 + ((first - 0xd800) << 10) + (low - 0xdc00);
            return char::from_u32(code).map(|ch| (ch, 12)).ok_or(Unescape::LoneSurrogate);
        }
        code => code,
    };
    char::from_u32(code).map(|ch| (ch, 6)).ok_or(Unescape::LoneSurrogate)
}

/// The value of four hex digits at `text[at..]`.
fn hex4(text: &[u8], at: usize) -> Option<u32> {
    let digits = text.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |acc, &b| Some(acc << 4 | char::from(b).to_digit(16)?))
}

/// Reads a JSON text front to back, one token at a time. Each method
/// returns `false` or `None` when the text is not strict JSON there; the
/// caller then refuses the whole text.
pub struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `json`, or `None` when it is not UTF-8.
    pub fn new(json: &'a [u8]) -> Option<Self> {
        core::str::from_utf8(json).ok().map(|text| Reader { text, at: 0 })
    }

    #[inline(always)] // opt-level "z" would otherwise make this a call per byte
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    #[inline(always)]
    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    /// Eats `byte` when it comes next.
    #[inline(always)]
    pub fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    /// Skips the whitespace JSON allows between tokens. A call of its own
    /// (it runs once per token, not per byte): inlined into each of its
    /// callers, the size build is about 600 bytes larger.
    pub fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// True when only whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.skip_whitespace();
        self.at == self.text.len()
    }

    /// After a member or an element: eats the `,` (true: another follows)
    /// or the closing bracket `close` (false), and the whitespace after a
    /// comma; `None` when neither comes.
    pub fn more(&mut self, close: u8) -> Option<bool> {
        self.skip_whitespace();
        if self.eat(close) {
            return Some(false);
        }
        if !self.eat(b',') {
            return None;
        }
        self.skip_whitespace();
        Some(true)
    }

    /// Opens a container with `open`: true when it is not empty (an empty
    /// one is read to its closing bracket `close`). `None` when the next
    /// token is not `open`.
    pub fn open(&mut self, open: u8, close: u8) -> Option<bool> {
        if !self.eat(open) {
            return None;
        }
        self.skip_whitespace();
        Some(!self.eat(close))
    }

    /// Reads a member's name and its colon, and the whitespace around it.
    pub fn name(&mut self) -> Option<RawString<'a>> {
        let name = self.string()?;
        self.skip_whitespace();
        self.eat(b':').then_some(())?;
        self.skip_whitespace();
        Some(name)
    }

    /// The offset of the next byte to read: with the offset before a value,
    /// it delimits the value's raw text.
    pub fn position(&self) -> usize {
        self.at
    }

    /// Reads `true` or `false`.
    pub fn boolean(&mut self) -> Option<bool> {
        if self.literal(b"true") {
            return Some(true);
        }
        self.literal(b"false").then_some(false)
    }

    /// Eats `null` when it comes next.
    pub fn null(&mut self) -> bool {
        self.literal(b"null")
    }

    /// Reads a number and returns its text (RFC 8259 section 6 grammar).
    pub fn number(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.eat(b'-');
        match self.next() {
            Some(b'0') => {}
            Some(b'1'..=b'9') => self.digits(),
            _ => return None,
        }
        if self.eat(b'.') && !self.some_digits() {
            return None;
        }
        if self.eat(b'e') || self.eat(b'E') {
            let _ = self.eat(b'+') || self.eat(b'-');
            if !self.some_digits() {
                return None;
            }
        }
        Some(&self.text.as_bytes()[start..self.at])
    }

    /// Reads a string and returns it as written, its escapes checked.
    pub fn string(&mut self) -> Option<RawString<'a>> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.at;
        let mut escaped = false;
        loop {
            // Plain characters in one tight scan; stop at a quote, an escape
            // or a control character.
            let rest = &self.text.as_bytes()[self.at..];
            self.at += rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).unwrap_or(rest.len());
            match self.next() {
                Some(b'"') => {
                    // Quotes are ASCII, so both ends are character boundaries.
                    let text = self.text.get(start..self.at - 1)?;
                    return Some(RawString { text, escaped });
                }
                Some(b'\\') => {
                    escaped = true;
                    match self.next() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {}
                        Some(b'u') => {
                            for _ in 0..4 {
                                self.next().filter(u8::is_ascii_hexdigit)?;
                            }
                        }
                        _ => return None,
                    }
                }
                // A control character, or the end of the text.
                _ => return None,
            }
        }
    }

    /// Reads any value at nesting `depth` (the containers around it) and
    /// checks it, without keeping it.
    pub fn skip_value(&mut self, depth: usize) -> bool {
        match self.peek() {
            Some(b'{') => self.container(depth + 1, b'{', b'}', true),
            Some(b'[') => self.container(depth + 1, b'[', b']', false),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number().is_some(),
            _ => false,
        }
    }

    /// An object (`keyed`) or an array, the opening bracket not yet eaten.
    fn container(&mut self, depth: usize, open: u8, close: u8, keyed: bool) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        let mut more = self.open(open, close);
        while more == Some(true) {
            if keyed && self.name().is_none() {
                return false;
            }
            if !self.skip_value(depth) {
                return false;
            }
            more = self.more(close);
        }
        more.is_some()
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let end = self.at + word.len();
        let found = self.text.as_bytes().get(self.at..end) == Some(word);
        if found {
            self.at = end;
        }
        found
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> bool {
        let start = self.at;
        self.digits();
        self.at > start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_json_is_accepted_and_anything_else_refused() {
        let cases: &[(&str, &[u8], bool)] = &[
            (
                "object",
                r#"{"alg":"HS256","n":-1.5e+3,"a":[true,false,null,{}],"s":"\u00e9\n\"\\\/"}"#.as_bytes(),
                true,
            ),
            ("whitespace_around", " \r\n\t{ \"a\" : [ 1 , 2 ] } \n".as_bytes(), true),
            ("empty_containers", "[[],{}]".as_bytes(), true),
            ("zero_and_fractions", "[0,0.5,-0,1E9,2e-3]".as_bytes(), true),
            ("scalar_root", "42".as_bytes(), true),
            ("utf8_string", "\"zoë\"".as_bytes(), true),
            ("bad_literal", r#"{"x":tru}"#.as_bytes(), false),
            ("bad_escape", r#"{"x":"a\qb"}"#.as_bytes(), false),
            ("short_unicode_escape", r#"{"x":"\u12"}"#.as_bytes(), false),
            ("numbers_in_a_row", r#"{"x":1 2 3}"#.as_bytes(), false),
            ("control_character", "{\"x\":\"a\u{1}b\"}".as_bytes(), false),
            ("raw_newline_in_string", "{\"x\":\"a\nb\"}".as_bytes(), false),
            ("leading_zero", "[01]".as_bytes(), false),
            ("bare_fraction", "[.5]".as_bytes(), false),
            ("trailing_dot", "[1.]".as_bytes(), false),
            ("empty_exponent", "[1e]".as_bytes(), false),
            ("plus_sign", "[+1]".as_bytes(), false),
            ("trailing_comma_array", "[1,]".as_bytes(), false),
            ("trailing_comma_object", r#"{"a":1,}"#.as_bytes(), false),
            ("missing_colon", r#"{"a" 1}"#.as_bytes(), false),
            ("non_string_key", "{1:2}".as_bytes(), false),
            ("single_quotes", "{'a':1}".as_bytes(), false),
            ("unclosed", r#"{"a":[1,2}"#.as_bytes(), false),
            ("two_values", "{}{}".as_bytes(), false),
            ("empty", "".as_bytes(), false),
            ("only_whitespace", "  ".as_bytes(), false),
            ("invalid_utf8", b"\"\xff\"", false),
            ("nan", "[NaN]".as_bytes(), false),
        ];
        for &(name, json, valid) in cases {
            assert_eq!(is_strict(json), valid, "{name}: {:?}", std::string::String::from_utf8_lossy(json));
        }
    }

    #[test]
    fn nesting_is_limited() {
        let nested = |depth: usize| std::format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(is_strict(nested(MAX_DEPTH).as_bytes()));
        assert!(!is_strict(nested(MAX_DEPTH + 1).as_bytes()));
        assert!(!is_strict(nested(10_000).as_bytes()), "deep input is refused, not a stack overflow");
        let objects = std::format!("{}1{}", "{\"a\":".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
        assert!(is_strict(objects.as_bytes()));
    }

    fn decoded(json: &str) -> Result<std::string::String, Unescape> {
        let raw = Reader::new(json.as_bytes()).and_then(|mut r| r.string()).expect("a valid string");
        let mut out = std::vec![0u8; raw.text.len()];
        unescape(raw, &mut out).map(Into::into)
    }

    #[test]
    fn unescapes_every_escape_of_rfc8259_section_7() {
        assert_eq!(decoded(r#""https:\/\/a.example""#), Ok("https://a.example".into()));
        assert_eq!(decoded(r#""\"\\\/\b\f\n\r\t""#), Ok("\"\\/\u{8}\u{c}\n\r\t".into()));
        assert_eq!(decoded(r#""\u006frders""#), Ok("orders".into()));
        assert_eq!(decoded(r#""z\u00EB \u20ac""#), Ok("zë €".into()));
        assert_eq!(decoded(r#""\ud834\udd1e!""#), Ok("\u{1d11e}!".into()), "a surrogate pair (G clef)");
        assert_eq!(decoded(r#""a\u0000b""#), Ok("a\0b".into()), "NUL is text; its users judge it");
        assert_eq!(decoded("\"plain zoë\""), Ok("plain zoë".into()));
    }

    #[test]
    fn a_lone_surrogate_cannot_be_decoded() {
        for json in [r#""\ud834""#, r#""\udd1e""#, r#""\ud834x""#, r#""\ud834\u0041""#, r#""\udd1e\ud834""#] {
            assert_eq!(decoded(json), Err(Unescape::LoneSurrogate), "{json}");
        }
    }

    #[test]
    fn decoding_never_writes_past_its_buffer() {
        let raw = RawString { text: r"\u00e9\u00e9", escaped: true };
        let mut out = [0u8; 3];
        assert_eq!(unescape(raw, &mut out), Err(Unescape::TooLong));
        let raw = RawString { text: r"abcd\n", escaped: true };
        assert_eq!(unescape(raw, &mut out), Err(Unescape::TooLong));
    }

    #[test]
    fn member_names_are_compared_decoded() {
        let name = |json: &str| {
            let raw = Reader::new(json.as_bytes()).and_then(|mut r| r.string()).expect("a valid string");
            let mut buf = [0u8; NAME_BYTES];
            member_name(raw, &mut buf).map(std::string::String::from)
        };
        assert_eq!(name(r#""alg""#).as_deref(), Some("alg"));
        assert_eq!(name(r#""\u0063rit""#).as_deref(), Some("crit"));
        assert_eq!(name(r#""\u0063\u0072\u0069\u0074""#).as_deref(), Some("crit"));
        assert_eq!(name(r#""k\u0069d""#).as_deref(), Some("kid"));
        assert_eq!(name(r#""\u0041\u0000""#).as_deref(), Some("A\0"));
        assert_eq!(
            name(r#""an unescaped name of any length""#).as_deref(),
            Some("an unescaped name of any length")
        );
        assert_eq!(name(r#""\u0061lgorithm""#), None, "longer than any name read, decoded");
        assert_eq!(name(r#""\u0063rit\u0000""#), None);
        assert_eq!(name(r#""\ud800""#), None, "no text: no name");
    }

    #[test]
    fn the_reader_returns_strings_and_numbers_as_written() {
        let mut reader = Reader::new(br#"{"a\n":-1.5e+3}"#).expect("UTF-8");
        assert_eq!(reader.open(b'{', b'}'), Some(true));
        assert_eq!(reader.name(), Some(RawString { text: r"a\n", escaped: true }));
        assert_eq!(reader.number(), Some(&b"-1.5e+3"[..]));
        assert_eq!(reader.more(b'}'), Some(false));
        assert!(reader.at_end());
    }
}
