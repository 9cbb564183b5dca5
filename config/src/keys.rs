//! Key entries: HS256 secrets from the environment, a file or the inline
//! demo key, and public keys from JWKS or PEM files ([`crate::public_keys`]).

use std::path::Path;

use crate::error::ConfigErrorKind;
use crate::raw::{KeyEncoding, RawKey};
use crate::text::decode_base64url;
use crate::{KeyConfig, KeySource, MIN_KEY_BYTES, PublicKeyConfig, public_keys};

/// Reads a `jwks` or `pem` entry: its keys, validated. Each key a JWKS
/// file holds that the gateway does not verify with adds a line to
/// `warnings`, naming the entry and the file.
pub(crate) fn read_public_keys(
    entry: &str,
    key: RawKey,
    base: &Path,
    warnings: &mut Vec<String>,
) -> Result<Vec<PublicKeyConfig>, ConfigErrorKind> {
    let only_source =
        key.env.is_none() && key.file.is_none() && key.demo.is_none() && key.encoding == KeyEncoding::Utf8;
    let (file, kid) = match (key.jwks, key.pem, key.kid) {
        (Some(file), None, None) if only_source && key.alg.is_none() => (file, None),
        (None, Some(file), Some(kid)) if only_source => (file, Some(kid)),
        _ => return Err(ConfigErrorKind::KeySource { entry: entry.to_owned() }),
    };
    let (path, text) = public_keys::read_file(base, &file)
        .map_err(|(path, why)| ConfigErrorKind::KeyFileUnreadable { entry: entry.to_owned(), path, why })?;
    let refuse =
        |why: String| ConfigErrorKind::PublicKey { entry: entry.to_owned(), path: path.clone(), why };
    match kid {
        None => {
            let read = public_keys::read_jwks(&text).map_err(refuse)?;
            for skipped in read.skipped {
                warnings.push(format!("{entry}: {}: skipped {skipped}", path.display()));
            }
            Ok(read
                .keys
                .into_iter()
                .map(|(kid, key)| PublicKeyConfig { kid, key, file: path.clone() })
                .collect())
        }
        Some(kid) => {
            let public =
                public_keys::read_pem(&text).map_err(|why| refuse(format!("(kid {kid:?}) {why}")))?;
            public_keys::check_alg(&public, key.alg.as_deref())
                .map_err(|why| refuse(format!("(kid {kid:?}) {why}")))?;
            Ok(vec![PublicKeyConfig { kid, key: public, file: path.clone() }])
        }
    }
}

pub(crate) fn read_key(
    entry: &str,
    kid: String,
    key: RawKey,
    base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<KeyConfig, ConfigErrorKind> {
    let (text, source) = match (key.env, key.file, key.demo) {
        (Some(var), None, None) => match env(&var) {
            Some(value) => (value, KeySource::Env(var)),
            None => {
                return Err(ConfigErrorKind::KeyEnvMissing { entry: entry.to_owned(), var });
            }
        },
        (None, Some(file), None) => {
            let path = base.join(&file);
            let text = std::fs::read_to_string(&path).map_err(|e| ConfigErrorKind::KeyFileUnreadable {
                entry: entry.to_owned(),
                path: path.clone(),
                why: e.to_string(),
            })?;
            (text.trim_end_matches(['\r', '\n']).to_owned(), KeySource::File(path))
        }
        (None, None, Some(demo)) => (demo, KeySource::Demo),
        _ => return Err(ConfigErrorKind::KeySource { entry: entry.to_owned() }),
    };
    let secret = decode_key(&text, key.encoding).ok_or(ConfigErrorKind::KeyEncoding {
        entry: entry.to_owned(),
        encoding: match key.encoding {
            KeyEncoding::Utf8 => "utf8",
            KeyEncoding::Base64url => "base64url",
            KeyEncoding::Hex => "hex",
        },
    })?;
    if secret.len() < MIN_KEY_BYTES {
        return Err(ConfigErrorKind::KeyTooShort { entry: entry.to_owned(), bytes: secret.len() });
    }
    Ok(KeyConfig { kid, secret, source })
}

fn decode_key(text: &str, encoding: KeyEncoding) -> Option<Vec<u8>> {
    match encoding {
        KeyEncoding::Utf8 => Some(text.as_bytes().to_vec()),
        KeyEncoding::Hex => {
            let digits = text.as_bytes();
            if !digits.len().is_multiple_of(2) {
                return None;
            }
            digits
                .chunks(2)
                .map(|pair| {
                    let hi = (pair[0] as char).to_digit(16)?;
                    let lo = (pair[1] as char).to_digit(16)?;
                    Some((hi * 16 + lo) as u8)
                })
                .collect()
        }
        KeyEncoding::Base64url => decode_base64url(text.trim_end_matches('=')),
    }
}
