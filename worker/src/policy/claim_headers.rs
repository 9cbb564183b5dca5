//! Claims to headers: the value of a verified claim as the upstream
//! receives it in the configured header, written so that it reads one way.
//!
//! - A string travels as its decoded text; a number as written in the
//!   token (JSON numbers are visible ASCII); `true` and `false` as words.
//! - An array travels as its elements (strings, numbers, booleans) joined
//!   with `,` (no space); an empty array sets nothing, like `null` or an
//!   absent claim (the client's spellings of the header are dropped
//!   whatever the token says). An empty string is an empty value; an
//!   empty element, which would read as no element, is refused.
//! - A `,` inside an array element, or inside a string unless the header's
//!   `type` is `string`, would read as a list separator: refused (or
//!   encoded, below), so `"staff,admin"` never reads as two roles.
//! - With a `type` (`string`, `number`, `boolean`, `list`), a claim of
//!   another JSON type is refused, so the upstream can tell `"true"` from
//!   `true`; without one, the value travels whatever its type.
//! - A value that cannot travel intact (a byte outside visible ASCII, a
//!   leading or trailing space that HTTP would trim, such a `,`) is
//!   refused with 401, or, when the header is configured to,
//!   percent-encoded: every byte outside `!`..`~`, and `%` and `,`
//!   themselves, as `%XX` (upper-case hex), so the upstream decodes it
//!   back unambiguously. An object never travels (401).

// A module whose config does not use this policy compiles it out
// (`build.rs`); native builds keep it, and lint it whole.
#![cfg_attr(not(policy_claims), allow(dead_code, unused_imports))]

use crate::arena::Arena;
use crate::config::{ClaimHeader, ClaimType};
use crate::jose::json::{self, Reader};
use crate::reject::Rejection;

/// The header value for the raw JSON `value` of the claim `header` maps,
/// built in `arena`; `None` when the claim is absent, `null` or `[]`.
pub fn render<'a>(
    value: Option<&[u8]>,
    header: &ClaimHeader<'_>,
    arena: &mut Arena<'a>,
) -> Result<Option<&'a [u8]>, Rejection> {
    const UNSAFE: Rejection = Rejection::ClaimNotHeaderSafe;
    let Some(value) = value.filter(|v| *v != b"null") else { return Ok(None) };
    let written_type = match value.first() {
        Some(b'[') => ClaimType::List,
        Some(b'"') => ClaimType::String,
        Some(b't' | b'f') => ClaimType::Boolean,
        _ => ClaimType::Number,
    };
    if header.value_type.is_some_and(|wanted| wanted != written_type) && value != b"[]" {
        return Err(Rejection::ClaimTypeMismatch);
    }
    // Percent-encoding at most triples every byte of the raw text, whose
    // escapes never decode to more bytes than they are written with.
    let out = arena.alloc(3 * value.len())?;
    let comma_in_strings = header.value_type == Some(ClaimType::String);
    let mut writer = Writer { out, len: 0, percent: header.percent_encode, comma_in_strings };
    let mut reader = Reader::new(value).ok_or(UNSAFE)?;
    match reader.open(b'[', b']') {
        Some(false) => return Ok(None),
        Some(true) => {
            let mut more = true;
            while more {
                if writer.len > 0 {
                    writer.push(b',');
                }
                let start = writer.len;
                scalar(&mut reader, &mut writer, true)?;
                if writer.len == start {
                    return Err(UNSAFE);
                }
                more = reader.more(b']').ok_or(UNSAFE)?;
            }
        }
        None => scalar(&mut reader, &mut writer, false)?,
    }
    let Writer { out, len, .. } = writer;
    let rendered: &'a [u8] = out;
    Ok(Some(&rendered[..len]))
}

/// Writes one string, number or boolean; refuses anything else.
fn scalar(reader: &mut Reader<'_>, writer: &mut Writer<'_>, in_list: bool) -> Result<(), Rejection> {
    const UNSAFE: Rejection = Rejection::ClaimNotHeaderSafe;
    if let Some(raw) = reader.string() {
        let start = writer.len;
        for ch in json::decoded(raw) {
            let mut utf8 = [0u8; 4];
            for &byte in ch.map_err(|_| UNSAFE)?.encode_utf8(&mut utf8).as_bytes() {
                writer.text_byte(byte, in_list)?;
            }
        }
        // Nothing HTTP trims: a value never starts or ends with a space.
        let written = &writer.out[start..writer.len];
        if written.first() == Some(&b' ') || written.last() == Some(&b' ') {
            return Err(UNSAFE);
        }
        return Ok(());
    }
    if let Some(boolean) = reader.boolean() {
        let word: &[u8] = if boolean { b"true" } else { b"false" };
        word.iter().for_each(|&b| writer.push(b));
        return Ok(());
    }
    // Last: a failed number may have read a byte, and the value is refused then.
    let number = reader.number().ok_or(UNSAFE)?;
    number.iter().for_each(|&b| writer.push(b));
    Ok(())
}

/// The header value being written.
struct Writer<'o> {
    out: &'o mut [u8],
    len: usize,
    percent: bool,
    /// A `,` in a string travels as it is (the header's type is `string`,
    /// so no upstream splits it).
    comma_in_strings: bool,
}

impl Writer<'_> {
    fn push(&mut self, byte: u8) {
        // The buffer holds three bytes per byte of the raw value.
        if let Some(slot) = self.out.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    /// A byte of decoded text: as it is when it travels intact, else
    /// percent-encoded when the header allows it, else refused.
    fn text_byte(&mut self, byte: u8, in_list: bool) -> Result<(), Rejection> {
        let comma_splits = byte == b',' && (in_list || !self.comma_in_strings);
        let intact = byte == b' ' || ((0x21..=0x7e).contains(&byte) && !comma_splits);
        if intact && !(self.percent && (byte == b'%' || byte == b' ')) {
            self.push(byte);
            return Ok(());
        }
        if !self.percent {
            return Err(Rejection::ClaimNotHeaderSafe);
        }
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        for b in [b'%', HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 15)]] {
            self.push(b);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(value: &str, percent: bool) -> Result<Option<std::string::String>, Rejection> {
        typed(value, percent, None)
    }

    fn typed(
        value: &str,
        percent: bool,
        value_type: Option<ClaimType>,
    ) -> Result<Option<std::string::String>, Rejection> {
        let header = ClaimHeader { claim: 0, header: "x-gateway-x", percent_encode: percent, value_type };
        let mut region = std::vec![0u8; 4096];
        let mut arena = Arena::new(&mut region);
        render(Some(value.as_bytes()), &header, &mut arena)
            .map(|v| v.map(|v| std::string::String::from_utf8(v.to_vec()).expect("ASCII")))
    }

    fn plain(value: &&str) -> Result<Option<std::string::String>, Rejection> {
        rendered(value, false)
    }

    fn encoded(value: &&str) -> Result<Option<std::string::String>, Rejection> {
        rendered(value, true)
    }

    crate::cases::cases! { plain;
        string: r#""acme""# => Ok(Some("acme".into()));
        string_with_inner_space: r#""Ada Lovelace""# => Ok(Some("Ada Lovelace".into()));
        escaped_string: r#""a\u0063me""# => Ok(Some("acme".into()));
        number: "42" => Ok(Some("42".into()));
        number_as_written: "-1.5e3" => Ok(Some("-1.5e3".into()));
        boolean: "true" => Ok(Some("true".into()));
        array: r#"["read","write",3,false]"# => Ok(Some("read,write,3,false".into()));
        empty_array_sets_nothing: "[]" => Ok(None);
        empty_string: r#""""# => Ok(Some("".into()));
        empty_element: r#"[""]"# => Err(Rejection::ClaimNotHeaderSafe);
        empty_element_among_others: r#"["a","","b"]"# => Err(Rejection::ClaimNotHeaderSafe);
        null: "null" => Ok(None);
        object: r#"{"a":1}"# => Err(Rejection::ClaimNotHeaderSafe);
        nested_array: "[[1]]" => Err(Rejection::ClaimNotHeaderSafe);
        crlf: r#""a\r\nX-Admin: 1""# => Err(Rejection::ClaimNotHeaderSafe);
        utf8: r#""zoë""# => Err(Rejection::ClaimNotHeaderSafe);
        leading_space: r#"" admin""# => Err(Rejection::ClaimNotHeaderSafe);
        comma_in_an_element: r#"["a,b"]"# => Err(Rejection::ClaimNotHeaderSafe);
        comma_in_a_string_reads_as_a_list: r#""staff,admin""# => Err(Rejection::ClaimNotHeaderSafe);
        lone_surrogate: r#""\ud800""# => Err(Rejection::ClaimNotHeaderSafe);
    }

    crate::cases::cases! { encoded;
        encoded_crlf: r#""a\r\nb""# => Ok(Some("a%0D%0Ab".into()));
        encoded_utf8: r#""zoë""# => Ok(Some("zo%C3%AB".into()));
        encoded_percent_and_space: r#""50% off""# => Ok(Some("50%25%20off".into()));
        encoded_comma_in_an_element: r#"["a,b","c"]"# => Ok(Some("a%2Cb,c".into()));
        encoded_comma_in_a_string: r#""staff,admin""# => Ok(Some("staff%2Cadmin".into()));
        encoded_plain: r#""acme""# => Ok(Some("acme".into()));
        encoded_object_still_refused: r#"{"a":1}"# => Err(Rejection::ClaimNotHeaderSafe);
    }

    #[test]
    fn a_type_tells_a_string_from_what_it_spells() {
        let t = |value: &str, value_type| typed(value, false, Some(value_type));
        assert_eq!(t(r#""true""#, ClaimType::String), Ok(Some("true".into())));
        assert_eq!(t("true", ClaimType::String), Err(Rejection::ClaimTypeMismatch));
        assert_eq!(t(r#""true""#, ClaimType::Boolean), Err(Rejection::ClaimTypeMismatch));
        assert_eq!(t("false", ClaimType::Boolean), Ok(Some("false".into())));
        assert_eq!(t("42", ClaimType::Number), Ok(Some("42".into())));
        assert_eq!(t(r#""42""#, ClaimType::Number), Err(Rejection::ClaimTypeMismatch));
        // A string typed as one keeps its commas: no upstream splits it.
        assert_eq!(t(r#""Lovelace, Ada""#, ClaimType::String), Ok(Some("Lovelace, Ada".into())));
        assert_eq!(t(r#"["staff","admin"]"#, ClaimType::List), Ok(Some("staff,admin".into())));
        assert_eq!(t(r#""staff,admin""#, ClaimType::List), Err(Rejection::ClaimTypeMismatch));
        assert_eq!(t(r#"["a,b"]"#, ClaimType::List), Err(Rejection::ClaimNotHeaderSafe));
        assert_eq!(t(r#""""#, ClaimType::List), Err(Rejection::ClaimTypeMismatch));
        assert_eq!(t("[]", ClaimType::String), Ok(None), "an empty list sets nothing whatever the type");
        assert_eq!(t("null", ClaimType::Number), Ok(None));
    }
}
