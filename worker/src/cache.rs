//! A per-instance cache of recently verified tokens, so a client that sends
//! the same token request after request pays for its signature once (the
//! idea of Envoy's `jwt_cache_config`).
//!
//! What is cached is what verification established and nothing more: that
//! this exact token's header selected a key and its signature checked out
//! under it, and the decoded claims JSON. Every hit runs the claims check
//! again (`exp`, `nbf`, `iat`, `iss`, `aud`, `sub`, the route) at the
//! request's clock, and the forward plan is built per request, so a hit
//! never decides differently from a miss. A rejected token is never cached.
//!
//! Lookup: a hash of the token finds the candidate, and a constant-time
//! comparison (`ct`, on `subtle`) confirms it, so the time a lookup takes does not
//! tell how much of a cached token a guess matched: of the whole token, for
//! one of at most [`CACHED_TOKEN_CAPACITY`] bytes (the service tokens), or,
//! in a module with a public-key algorithm, of the SHA-256 digest of the
//! whole token, for a longer one (an identity provider's RS256 token is
//! about a kilobyte): a collision of SHA-256 would be needed to pass for a
//! cached token.
//! The entries are bound to the key table they were verified with: another
//! table (a native caller switching configs), or another generation of the
//! keys fetched at run time, empties the cache.
//!
//! A token is admitted on its second verification (its hash is remembered
//! on the first): a fresh instance, which serves one request, then never
//! writes an entry, and a stream of tokens seen once does not evict the
//! ones that repeat. Entries are replaced oldest first.

use crate::config::Issuer;

/// How many tokens an instance remembers.
pub const ENTRIES: usize = 16;

/// The longest token the cache keeps as it is; a longer one is kept as its
/// SHA-256 digest.
pub const CACHED_TOKEN_CAPACITY: usize = 256;

/// The longest claims JSON an entry keeps: what the module's longest token
/// can carry (three quarters of it), at most 1.5 KiB, so a module of the
/// default 256-byte tokens keeps its 7.5 KiB cache and one of identity
/// providers' tokens (`max_token_bytes = 2048`) a 28 KiB one.
const CLAIMS_CAPACITY: usize = {
    let most = crate::config::MAX_TOKEN_BYTES * 3 / 4;
    let floor = CACHED_TOKEN_CAPACITY * 3 / 4;
    if most < floor {
        floor
    } else if most > 1536 {
        1536
    } else {
        most
    }
};

/// The cache itself (about 7.5 KiB by default). The index comes first and the entries
/// last (`repr(C)`): a fresh instance's lookup and first sighting read and
/// write the index alone, so they touch one page, not eight.
#[repr(C)]
pub struct TokenCache {
    /// The key table the entries were verified with (its address and
    /// length, and the generation of the keys fetched at run time).
    keys: Identity,
    /// Hashes of verified tokens seen once, not yet admitted.
    seen: [u64; ENTRIES],
    /// Where the next seen hash goes.
    next_seen: usize,
    /// Each entry's token hash (0, which no token hashes to, for an empty entry).
    hashes: [u64; ENTRIES],
    /// The entries.
    entries: [Entry; ENTRIES],
    /// Which entry is replaced next.
    next: usize,
}

#[derive(Clone, Copy)]
struct Entry {
    token_len: usize,
    claims_len: usize,
    token: [u8; CACHED_TOKEN_CAPACITY],
    claims: [u8; CLAIMS_CAPACITY],
}

const EMPTY: Entry =
    Entry { token_len: 0, claims_len: 0, token: [0; CACHED_TOKEN_CAPACITY], claims: [0; CLAIMS_CAPACITY] };

impl TokenCache {
    /// An empty cache (zeroed, so in wasm it costs no bytes of module).
    pub const fn new() -> Self {
        TokenCache {
            keys: NO_KEYS,
            seen: [0; ENTRIES],
            next_seen: 0,
            hashes: [0; ENTRIES],
            entries: [EMPTY; ENTRIES],
            next: 0,
        }
    }

    /// The claims JSON of `token` if it was verified with the keys of `keys`
    /// (the config's issuers) and of fetched-key generation `generation`.
    pub fn claims(&self, token: &[u8], keys: &[Issuer<'_>], generation: u32) -> Option<&[u8]> {
        if token.is_empty() || self.keys != identity(keys, generation) {
            return None;
        }
        let hash = hash(token);
        let entry = &self.entries[self.hashes.iter().position(|&h| h == hash)?];
        if entry.token_len != token.len() {
            return None;
        }
        let same = match kept(token)? {
            Kept::Bytes(bytes) => crate::ct::eq(entry.token.get(..bytes.len())?, bytes),
            Kept::Digest(digest) => crate::ct::eq(&entry.token[..32], &digest),
        };
        bool::from(same).then(|| &entry.claims[..entry.claims_len])
    }

    /// Records that `token`'s header and signature checked out under `keys`
    /// and that its payload decoded to `claims`.
    pub fn insert(&mut self, token: &[u8], claims: &[u8], keys: &[Issuer<'_>], generation: u32) {
        if token.is_empty() || claims.len() > CLAIMS_CAPACITY {
            return;
        }
        let Some(kept) = kept(token) else { return };
        if self.keys != identity(keys, generation) {
            // Forget every entry: an entry is empty while its hash is 0.
            self.hashes = [0; ENTRIES];
            self.seen = [0; ENTRIES];
            self.keys = identity(keys, generation);
        }
        let hash = hash(token);
        if !self.seen.contains(&hash) {
            self.seen[self.next_seen] = hash;
            self.next_seen = (self.next_seen + 1) % ENTRIES;
            return;
        }
        let slot = self.next;
        self.next = (slot + 1) % ENTRIES;
        let entry = &mut self.entries[slot];
        match kept {
            Kept::Bytes(bytes) => entry.token[..bytes.len()].copy_from_slice(bytes),
            Kept::Digest(digest) => entry.token[..32].copy_from_slice(&digest),
        }
        entry.token_len = token.len();
        entry.claims[..claims.len()].copy_from_slice(claims);
        entry.claims_len = claims.len();
        self.hashes[slot] = hash;
    }
}

impl Default for TokenCache {
    fn default() -> Self {
        Self::new()
    }
}

/// Which keys: the issuer table's address and length, and the generation
/// of the keys fetched at run time (a new document, or a copy of a newer
/// key store, empties the cache). A module that fetches no keys keeps no
/// generation.
#[cfg(runtime_keys)]
type Identity = (usize, usize, u32);
#[cfg(not(runtime_keys))]
type Identity = (usize, usize);

#[cfg(runtime_keys)]
const NO_KEYS: Identity = (0, 0, 0);
#[cfg(not(runtime_keys))]
const NO_KEYS: Identity = (0, 0);

fn identity(keys: &[Issuer<'_>], generation: u32) -> Identity {
    #[cfg(runtime_keys)]
    return (keys.as_ptr() as usize, keys.len(), generation);
    #[cfg(not(runtime_keys))]
    {
        let _ = generation;
        (keys.as_ptr() as usize, keys.len())
    }
}

/// What an entry keeps of a token: the token, or its digest when longer
/// than [`CACHED_TOKEN_CAPACITY`].
enum Kept<'t> {
    Bytes(&'t [u8]),
    Digest([u8; 32]),
}

/// What an entry keeps of `token`; `None` when the module keeps no digest
/// and the token is too long to keep.
///
/// Only a module with a public-key algorithm keeps digests: an HS256
/// token's digest costs about what verifying it does (both hash the whole
/// token once), so caching it would save nothing.
fn kept(token: &[u8]) -> Option<Kept<'_>> {
    if token.len() <= CACHED_TOKEN_CAPACITY {
        return Some(Kept::Bytes(token));
    }
    // A module whose tokens all fit keeps no digest code: the branch folds
    // away (its tokens are never longer than its config's limit; a native
    // embedder's configs may be longer).
    let all_fit = cfg!(target_arch = "wasm32") && crate::config::MAX_TOKEN_BYTES <= CACHED_TOKEN_CAPACITY;
    let asymmetric = cfg!(any(feature = "rs256", feature = "es256", feature = "eddsa"));
    (asymmetric && !all_fit).then(|| Kept::Digest(crate::jose::signature::sha256(token)))
}

/// A fast hash of the token, 8 bytes at a time (only to find the candidate;
/// the whole token or its digest is compared after it).
fn hash(token: &[u8]) -> u64 {
    let (words, tail) = token.as_chunks::<8>();
    let mut last = [0u8; 8];
    last[..tail.len()].copy_from_slice(tail);
    let mix = |h: u64, word: [u8; 8]| {
        (h ^ u64::from_le_bytes(word)).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
    };
    let h = words.iter().fold(token.len() as u64, |h, &w| mix(h, w));
    mix(h, last) | 1
}

#[cfg(test)]
mod tests {
    use super::*;
    static KEYS: &[Issuer<'static>] =
        &[Issuer { iss: None, leeway_secs: 0, keys: &[], audiences: &[], fetch: None }];
    static OTHER_KEYS: &[Issuer<'static>] =
        &[Issuer { iss: Some("other"), leeway_secs: 0, keys: &[], audiences: &[], fetch: None }];

    fn twice(cache: &mut TokenCache, token: &[u8], claims: &[u8]) {
        cache.insert(token, claims, KEYS, 0);
        cache.insert(token, claims, KEYS, 0);
    }

    #[test]
    fn a_token_is_admitted_on_its_second_verification() {
        let mut cache = std::boxed::Box::new(TokenCache::new());
        cache.insert(b"a.b.c", b"{}", KEYS, 0);
        assert_eq!(cache.claims(b"a.b.c", KEYS, 0), None);
        cache.insert(b"a.b.c", b"{}", KEYS, 0);
        assert_eq!(cache.claims(b"a.b.c", KEYS, 0), Some(&b"{}"[..]));
    }

    #[test]
    fn only_the_whole_token_hits() {
        let mut cache = std::boxed::Box::new(TokenCache::new());
        twice(&mut cache, b"head.body.sig1", b"{\"a\":1}");
        for other in [&b"head.body.sig2"[..], b"head.body.sig", b"head.body.sig11", b"", b"Head.body.sig1"] {
            assert_eq!(cache.claims(other, KEYS, 0), None, "{other:?}");
        }
        assert_eq!(cache.claims(b"head.body.sig1", KEYS, 0), Some(&b"{\"a\":1}"[..]));
    }

    #[test]
    fn another_key_table_misses_and_empties_the_cache() {
        let mut cache = std::boxed::Box::new(TokenCache::new());
        twice(&mut cache, b"a.b.c", b"{}");
        assert_eq!(cache.claims(b"a.b.c", OTHER_KEYS, 0), None);
        #[cfg(runtime_keys)]
        assert_eq!(cache.claims(b"a.b.c", KEYS, 1), None, "another generation of fetched keys");
        cache.insert(b"x.y.z", b"{}", OTHER_KEYS, 0);
        assert_eq!(cache.claims(b"a.b.c", KEYS, 0), None);
    }

    #[test]
    fn the_oldest_entry_goes_first_and_oversized_input_is_not_cached() {
        let mut cache = std::boxed::Box::new(TokenCache::new());
        let tokens: std::vec::Vec<std::string::String> =
            (0..=ENTRIES).map(|i| std::format!("t.{i}.s")).collect();
        for token in &tokens {
            twice(&mut cache, token.as_bytes(), b"{}");
        }
        assert_eq!(cache.claims(tokens[0].as_bytes(), KEYS, 0), None);
        assert!(tokens[1..].iter().all(|t| cache.claims(t.as_bytes(), KEYS, 0).is_some()));
        twice(&mut cache, b"a.b.c", &[b' '; CLAIMS_CAPACITY + 1]);
        assert_eq!(cache.claims(b"a.b.c", KEYS, 0), None);
    }

    /// An identity provider's token, longer than the bytes an entry keeps,
    /// is kept as its digest: found again, and no other token of its length
    /// passes for it, however much of it matches.
    #[cfg(any(feature = "rs256", feature = "es256", feature = "eddsa"))]
    #[test]
    fn long_tokens_are_kept_as_their_digest() {
        let mut cache = std::boxed::Box::new(TokenCache::new());
        let long: std::vec::Vec<u8> = (0..1200u32).map(|i| b'a' + (i % 26) as u8).collect();
        twice(&mut cache, &long, b"{\"sub\":\"alice\"}");
        assert_eq!(cache.claims(&long, KEYS, 0), Some(&b"{\"sub\":\"alice\"}"[..]));
        for at in [0, 255, 256, 700, 1199] {
            let mut other = long.clone();
            other[at] ^= 1;
            assert_eq!(cache.claims(&other, KEYS, 0), None, "byte {at}");
        }
        assert_eq!(cache.claims(&long[..1199], KEYS, 0), None);
        // The short tokens still compare byte for byte.
        twice(&mut cache, b"a.b.c", b"{}");
        assert_eq!(cache.claims(b"a.b.c", KEYS, 0), Some(&b"{}"[..]));
    }
}
