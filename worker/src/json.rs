//! A strict JSON check (RFC 8259) run on the decoded header and claims before
//! `serde-json-core` reads them.
//!
//! `serde-json-core` skips members it does not know without validating them
//! (`"x":tru` passes) and recurses without a depth limit. This check closes
//! both gaps in one pass: the whole text must be valid JSON, and arrays and
//! objects may nest at most [`MAX_DEPTH`] deep, so the parser's recursion is
//! bounded whatever the token. Written here rather than taken from a crate
//! because it is 100 lines, allocation-free, and the crates that validate
//! JSON either allocate or are larger than the whole worker.

/// The deepest nesting of arrays and objects a token's JSON may have.
pub const MAX_DEPTH: usize = 16;

/// True when `json` is one valid JSON value, optionally surrounded by
/// whitespace, in valid UTF-8, nested at most [`MAX_DEPTH`] deep.
pub fn is_strict(json: &[u8]) -> bool {
    if core::str::from_utf8(json).is_err() {
        return false;
    }
    let mut parser = Parser { text: json, at: 0 };
    parser.skip_whitespace();
    let valid = parser.value(0);
    parser.skip_whitespace();
    valid && parser.at == json.len()
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    #[inline(always)] // opt-level "z" would otherwise make this a call per byte
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    #[inline(always)]
    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    #[inline(always)]
    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    #[inline(always)]
    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> bool {
        match self.peek() {
            Some(b'{') => self.container(depth + 1, b'}', true),
            Some(b'[') => self.container(depth + 1, b']', false),
            Some(b'"') => self.string(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    /// An object (`keyed`) or an array, the opening bracket not yet eaten.
    fn container(&mut self, depth: usize, close: u8, keyed: bool) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        self.at += 1;
        self.skip_whitespace();
        if self.eat(close) {
            return true;
        }
        loop {
            if keyed {
                if !self.string() {
                    return false;
                }
                self.skip_whitespace();
                if !self.eat(b':') {
                    return false;
                }
                self.skip_whitespace();
            }
            if !self.value(depth) {
                return false;
            }
            self.skip_whitespace();
            if self.eat(close) {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
            self.skip_whitespace();
        }
    }

    fn string(&mut self) -> bool {
        if !self.eat(b'"') {
            return false;
        }
        loop {
            // Plain characters in one tight scan; stop at a quote, an escape
            // or a control character.
            let rest = self.text.get(self.at..).unwrap_or(&[]);
            self.at += rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).unwrap_or(rest.len());
            match self.next() {
                Some(b'"') => return true,
                Some(b'\\') => match self.next() {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {}
                    Some(b'u') => {
                        for _ in 0..4 {
                            if !self.next().is_some_and(|b| b.is_ascii_hexdigit()) {
                                return false;
                            }
                        }
                    }
                    _ => return false,
                },
                Some(0x20..) => {}
                // A control character, or the end of the text.
                _ => return false,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let end = self.at + word.len();
        let found = self.text.get(self.at..end) == Some(word);
        if found {
            self.at = end;
        }
        found
    }

    fn number(&mut self) -> bool {
        self.eat(b'-');
        match self.next() {
            Some(b'0') => {}
            Some(b'1'..=b'9') => self.digits(),
            _ => return false,
        }
        if self.eat(b'.') && !self.some_digits() {
            return false;
        }
        if self.eat(b'e') || self.eat(b'E') {
            let _ = self.eat(b'+') || self.eat(b'-');
            if !self.some_digits() {
                return false;
            }
        }
        true
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

    macro_rules! cases {
        ($($name:ident: $json:expr => $valid:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(is_strict($json.as_ref()), $valid, "{:?}", $json);
            }
        )*};
    }

    cases! {
        object: r#"{"alg":"HS256","n":-1.5e+3,"a":[true,false,null,{}],"s":"\u00e9\n\"\\\/"}"# => true;
        whitespace_around: " \r\n\t{ \"a\" : [ 1 , 2 ] } \n" => true;
        empty_containers: "[[],{}]" => true;
        zero_and_fractions: "[0,0.5,-0,1E9,2e-3]" => true;
        scalar_root: "42" => true;
        utf8_string: "\"zoë\"" => true;
        bad_literal: r#"{"x":tru}"# => false;
        bad_escape: r#"{"x":"a\qb"}"# => false;
        short_unicode_escape: r#"{"x":"\u12"}"# => false;
        numbers_in_a_row: r#"{"x":1 2 3}"# => false;
        control_character: "{\"x\":\"a\u{1}b\"}" => false;
        raw_newline_in_string: "{\"x\":\"a\nb\"}" => false;
        leading_zero: "[01]" => false;
        bare_fraction: "[.5]" => false;
        trailing_dot: "[1.]" => false;
        empty_exponent: "[1e]" => false;
        plus_sign: "[+1]" => false;
        trailing_comma_array: "[1,]" => false;
        trailing_comma_object: r#"{"a":1,}"# => false;
        missing_colon: r#"{"a" 1}"# => false;
        non_string_key: "{1:2}" => false;
        single_quotes: "{'a':1}" => false;
        unclosed: r#"{"a":[1,2}"# => false;
        two_values: "{}{}" => false;
        empty: "" => false;
        only_whitespace: "  " => false;
        invalid_utf8: b"\"\xff\"" => false;
        nan: "[NaN]" => false;
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
}
