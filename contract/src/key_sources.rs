//! The key-source table a module that fetches keys lists (`ABI.md`, "Keys
//! fetched at run time"): one line per issuer whose keys are fetched,
//! `<issuer> <kind> <url> <refresh_secs> <refetch_secs> <timeout_ms>
//! <max_stale_secs>`. The module writes it from its config; every host reads
//! it with [`decode`] to learn which issuers to ask the module about
//! ([`crate::key_schedule`]) and how long one fetch may take, so no host
//! keeps a setting of its own.

use crate::encode::{Encoder, Full};

/// What the URL of a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// The JWKS document itself.
    Jwks,
    /// The issuer's OpenID discovery document, whose `jwks_uri` names the
    /// JWKS document (the module reads it, on every round: `key_fetched`).
    Discovery,
}

impl SourceKind {
    /// The word the table uses.
    pub const fn as_str(self) -> &'static str {
        match self {
            SourceKind::Jwks => "jwks",
            SourceKind::Discovery => "discovery",
        }
    }
}

/// Where and how often one issuer's keys are fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySource<'a> {
    /// The issuer's index: the number the key exports and `~` lines use.
    pub issuer: u8,
    /// What `url` is.
    pub kind: SourceKind,
    /// An absolute http(s) URL, printable ASCII without spaces.
    pub url: &'a str,
    /// Fetch again this long after a success (or sooner, as the response's
    /// `Cache-Control: max-age` says, but never sooner than `refetch_secs`).
    pub refresh_secs: u32,
    /// The shortest time between two fetches started for one issuer,
    /// whatever asks for them: retries, `max-age` and unknown kids.
    pub refetch_secs: u32,
    /// How long one fetch may take, connection to last byte.
    pub timeout_ms: u32,
    /// How long installed keys stay usable without a successful fetch; the
    /// module then fails closed (503). For the host's log.
    pub max_stale_secs: u32,
}

/// A line of the table that is not a key source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadSourceLine;

impl core::fmt::Display for BadSourceLine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(
            "a key-source line is not `<issuer> <kind> <url> <refresh> <refetch> <timeout> <max_stale>`",
        )
    }
}

/// The sources of a table the `key_sources` export wrote.
pub fn decode(table: &[u8]) -> impl Iterator<Item = Result<KeySource<'_>, BadSourceLine>> {
    let text = core::str::from_utf8(table).map_err(|_| BadSourceLine);
    let lines = match text {
        Ok("") | Err(_) => None,
        Ok(text) => Some(text.split('\n').map(|line| line_source(line).ok_or(BadSourceLine))),
    };
    let broken = text.is_err().then_some(Err(BadSourceLine));
    lines.into_iter().flatten().chain(broken)
}

fn line_source(line: &str) -> Option<KeySource<'_>> {
    let mut words = line.split(' ');
    let issuer = u8::try_from(number(words.next())?).ok()?;
    let kind = match words.next()? {
        "jwks" => SourceKind::Jwks,
        "discovery" => SourceKind::Discovery,
        _ => return None,
    };
    let url = words.next()?;
    let absolute = url.starts_with("http://") || url.starts_with("https://");
    if !absolute || !url.bytes().all(|b| (0x21..0x7f).contains(&b)) {
        return None;
    }
    let source = KeySource {
        issuer,
        kind,
        url,
        refresh_secs: number(words.next())?,
        refetch_secs: number(words.next())?,
        timeout_ms: number(words.next())?,
        max_stale_secs: number(words.next())?,
    };
    words.next().is_none().then_some(source)
}

/// A decimal number as the contract writes it: digits only, no sign, no
/// leading zero, at most `u32::MAX`.
pub(crate) fn number(word: Option<&str>) -> Option<u32> {
    let word = word?;
    let canonical = !word.is_empty()
        && word.bytes().all(|b| b.is_ascii_digit())
        && (word == "0" || !word.starts_with('0'));
    canonical.then(|| word.parse().ok()).flatten()
}

impl Encoder<'_> {
    /// One line of the key-source table, after a separator unless `first`.
    pub fn key_source(&mut self, first: bool, source: &KeySource<'_>) -> Result<(), Full> {
        if !first {
            self.extend_value(&[b"\n"])?;
        }
        self.decimal(u32::from(source.issuer))?;
        self.extend_value(&[b" ", source.kind.as_str().as_bytes(), b" ", source.url.as_bytes()])?;
        for n in [source.refresh_secs, source.refetch_secs, source.timeout_ms, source.max_stale_secs] {
            self.extend_value(&[b" "])?;
            self.decimal(n)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: KeySource<'static> = KeySource {
        issuer: 1,
        kind: SourceKind::Discovery,
        url: "https://idp.example/.well-known/openid-configuration",
        refresh_secs: 600,
        refetch_secs: 60,
        timeout_ms: 5000,
        max_stale_secs: 86400,
    };

    #[test]
    fn what_the_encoder_writes_decode_reads_back() {
        let mut buf = [0u8; 256];
        let mut out = Encoder::new(&mut buf);
        let jwks = KeySource { issuer: 0, kind: SourceKind::Jwks, url: "http://127.0.0.1:9/k", ..SOURCE };
        out.key_source(true, &jwks).expect("room");
        out.key_source(false, &SOURCE).expect("room");
        let written = out.as_bytes();
        assert_eq!(
            core::str::from_utf8(written).expect("text"),
            "0 jwks http://127.0.0.1:9/k 600 60 5000 86400\n1 discovery https://idp.example/.well-known/openid-configuration 600 60 5000 86400"
        );
        let read: Result<std::vec::Vec<_>, _> = decode(written).collect();
        assert_eq!(read, Ok(std::vec![jwks, SOURCE]));
        assert_eq!(decode(b"").count(), 0);
    }

    #[test]
    fn refuses_lines_that_are_not_sources() {
        for line in [
            "0 jwks http://h/k 600 60 5000",
            "0 jwks http://h/k 600 60 5000 86400 1",
            "0 pem http://h/k 600 60 5000 86400",
            "0 jwks ftp://h/k 600 60 5000 86400",
            "256 jwks http://h/k 600 60 5000 86400",
            "-1 jwks http://h/k 600 60 5000 86400",
            "0 jwks http://h/k 600 +60 5000 86400",
            "0  jwks http://h/k 600 60 5000 86400",
        ] {
            assert_eq!(decode(line.as_bytes()).next(), Some(Err(BadSourceLine)), "{line}");
        }
        assert_eq!(decode(b"\xff").next(), Some(Err(BadSourceLine)));
    }
}
