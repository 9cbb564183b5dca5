//! A seeded, realistic request mix: mostly valid tokens, plus expired ones,
//! forged signatures, requests without a token and tokens for an audience
//! with no route. The same seed gives the same requests, so benchmarks and
//! tests are repeatable.
//!
//! Every token of [`Mix::generate`] is one the module has not seen (each
//! has its own `iat`), so an instance's cache of verified tokens cannot
//! serve it; [`Mix::generate_repeated`] is the mix where clients present
//! each token many times.
//!
//! ```
//! use testkit::mix::{Mix, RequestKind};
//! let config = gateway_config::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../gateway.toml")))?;
//! let mix = Mix::new(&config, 1_800_000_000, 42);
//! let requests = mix.generate(100);
//! assert_eq!(requests.len(), 100);
//! assert!(requests.iter().any(|r| r.kind == RequestKind::Valid));
//! # Ok::<(), gateway_config::ConfigError>(())
//! ```

use gateway_config::GatewayConfig;

use crate::tokens::{Claims, mint, request_head};

/// What kind of request an entry of the mix is, and what the module must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// A valid token for a routed audience: forwarded (200).
    Valid,
    /// A token expired an hour ago: 401 `invalid_token`.
    Expired,
    /// A token whose signature was made with another key: 401 `invalid_token`.
    BadSignature,
    /// No Authorization header: 401 without an error code.
    NoToken,
    /// A valid token for an audience with no route: 401 `invalid_token`.
    UnknownAudience,
}

impl RequestKind {
    /// Every kind.
    pub const ALL: [RequestKind; 5] = [
        RequestKind::Valid,
        RequestKind::Expired,
        RequestKind::BadSignature,
        RequestKind::NoToken,
        RequestKind::UnknownAudience,
    ];

    /// The status the module answers with.
    pub fn expected_status(self) -> u16 {
        match self {
            RequestKind::Valid => 200,
            _ => 401,
        }
    }

    /// The reason the module gives (`worker/src/reject.rs`), None for a forward.
    pub fn expected_reason(self) -> Option<&'static str> {
        match self {
            RequestKind::Valid => None,
            RequestKind::Expired => Some("token expired"),
            RequestKind::BadSignature => Some("signature mismatch"),
            RequestKind::NoToken => Some("bearer token required"),
            RequestKind::UnknownAudience => Some("no route for audience"),
        }
    }

    /// Its share of the mix, in percent.
    pub fn weight(self) -> u32 {
        match self {
            RequestKind::Valid => 60,
            _ => 10,
        }
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            RequestKind::Valid => "valid",
            RequestKind::Expired => "expired",
            RequestKind::BadSignature => "bad signature",
            RequestKind::NoToken => "no token",
            RequestKind::UnknownAudience => "unknown audience",
        }
    }
}

/// One request of the mix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// What it is.
    pub kind: RequestKind,
    /// The request head, CRLF line ends, ending with the blank line.
    pub head: String,
}

/// A small deterministic generator (SplitMix64): no dependency, same
/// sequence everywhere.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Starts at `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The mix generator for one gateway configuration and clock.
#[derive(Debug, Clone)]
pub struct Mix {
    kid: String,
    key: Vec<u8>,
    issuer: Option<String>,
    audiences: Vec<String>,
    now: u64,
    seed: u64,
}

const SUBJECTS: [&str; 6] = ["alice", "bob", "carol", "dave", "erin", "frank"];
const PATHS: [&str; 6] =
    ["/v1/items", "/v1/items/42", "/v1/search?q=shoes&page=2", "/", "/health", "/v2/a/b/c?x=1"];
const METHODS: [&str; 4] = ["GET", "GET", "POST", "PUT"];

impl Mix {
    /// A mix signed with `config`'s first key, valid at `now` (Unix seconds), from `seed`.
    pub fn new(config: &GatewayConfig, now: u64, seed: u64) -> Mix {
        let (kid, key) = match config.hs256_keys().next() {
            Some(k) => (k.kid.clone(), k.secret().to_vec()),
            None => (String::new(), Vec::new()),
        };
        Mix {
            kid,
            key,
            issuer: config.first_iss().map(str::to_owned),
            audiences: config.routes.iter().map(|r| r.aud.clone()).collect(),
            now,
            seed,
        }
    }

    /// The clock the tokens are minted for.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// One request of `kind`, varied by `rng`.
    pub fn request(&self, kind: RequestKind, rng: &mut SplitMix64) -> Request {
        self.numbered_request(kind, rng, 0)
    }

    /// One request of `kind`, varied by `rng`, whose token was issued
    /// `serial` seconds before the others (so requests with different
    /// serials never carry the same token; the token's length is the same).
    fn numbered_request(&self, kind: RequestKind, rng: &mut SplitMix64, serial: u64) -> Request {
        let method = METHODS[rng.below(METHODS.len() as u64) as usize];
        let path = PATHS[rng.below(PATHS.len() as u64) as usize];
        let sub = SUBJECTS[rng.below(SUBJECTS.len() as u64) as usize];
        let aud = if self.audiences.is_empty() {
            "none".to_owned()
        } else {
            self.audiences[rng.below(self.audiences.len() as u64) as usize].clone()
        };
        let claims = |aud: &str, exp: u64| {
            let mut c = Claims::new(aud, exp).subject(sub).issued_at(self.now.saturating_sub(60 + serial));
            if let Some(iss) = &self.issuer {
                c = c.issuer(iss);
            }
            c.to_json()
        };
        let header = Claims::header(&self.kid);
        let token = match kind {
            RequestKind::Valid => Some(mint(&header, claims(&aud, self.now + 600), &self.key)),
            RequestKind::Expired => {
                Some(mint(&header, claims(&aud, self.now.saturating_sub(3600)), &self.key))
            }
            RequestKind::BadSignature => {
                Some(mint(&header, claims(&aud, self.now + 600), b"not-the-gateway-key-0123456789abcdef"))
            }
            RequestKind::NoToken => None,
            RequestKind::UnknownAudience => {
                Some(mint(&header, claims("no-such-audience", self.now + 600), &self.key))
            }
        };
        Request { kind, head: request_head(method, path, token.as_deref()) }
    }

    /// `n` requests drawn with the weights of [`RequestKind::weight`].
    pub fn generate(&self, n: usize) -> Vec<Request> {
        let mut rng = SplitMix64::new(self.seed);
        let total: u32 = RequestKind::ALL.iter().map(|k| k.weight()).sum();
        (0..n)
            .map(|i| {
                let mut pick = rng.below(u64::from(total)) as u32;
                let mut kind = RequestKind::Valid;
                for k in RequestKind::ALL {
                    if pick < k.weight() {
                        kind = k;
                        break;
                    }
                    pick -= k.weight();
                }
                self.numbered_request(kind, &mut rng, i as u64)
            })
            .collect()
    }

    /// `tokens` distinct requests of [`Mix::generate`], each presented
    /// `presentations` times, as `clients` clients interleaved round robin
    /// would send them (a client sends its request `presentations` times,
    /// then the next one). Each request comes with how many times its token
    /// was presented before (0 for its first time).
    pub fn generate_repeated(
        &self,
        tokens: usize,
        presentations: usize,
        clients: usize,
    ) -> Vec<(Request, usize)> {
        let distinct = self.generate(tokens);
        let mut queue = distinct.iter();
        let mut active: Vec<(&Request, usize)> =
            queue.by_ref().take(clients.max(1)).map(|r| (r, 0)).collect();
        let mut out = Vec::with_capacity(tokens * presentations);
        while !active.is_empty() {
            let mut i = 0;
            while i < active.len() {
                let (request, sent) = active[i];
                out.push((request.clone(), sent));
                if sent + 1 < presentations {
                    active[i].1 += 1;
                    i += 1;
                } else if let Some(next) = queue.next() {
                    active[i] = (next, 0);
                    i += 1;
                } else {
                    active.remove(i);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn mix() -> Mix {
        Mix::new(&crate::fixture::config(), 1_800_000_000, 7)
    }

    #[test]
    fn every_token_of_the_mix_is_new_and_of_one_length_per_kind() {
        let requests = mix().generate(2000);
        let mut seen = std::collections::HashSet::new();
        for r in requests.iter().filter(|r| r.kind != RequestKind::NoToken) {
            assert!(seen.insert(r.head.lines().find(|l| l.starts_with("Authorization")).unwrap_or_default()));
        }
        assert!(seen.len() > 1500);
    }

    #[test]
    fn a_repeated_mix_presents_each_token_the_given_times() {
        let repeated = mix().generate_repeated(50, 20, 8);
        assert_eq!(repeated.len(), 1000);
        let mut counts: HashMap<&str, Vec<usize>> = HashMap::new();
        // Requests without a token can be alike; every token is its own.
        for (request, before) in repeated.iter().filter(|(r, _)| r.kind != RequestKind::NoToken) {
            counts.entry(request.head.as_str()).or_default().push(*before);
        }
        assert!(counts.len() > 30);
        assert!(counts.values().all(|b| *b == (0..20).collect::<Vec<_>>()));
        // Eight clients interleaved: the second presentation comes 8 requests after the first.
        assert_eq!(repeated[8].0, repeated[0].0);
        assert_eq!(repeated[8].1, 1);
    }
}
