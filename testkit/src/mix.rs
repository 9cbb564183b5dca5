//! A seeded, realistic request mix: mostly valid tokens, plus expired ones,
//! forged signatures, requests without a token and tokens for an audience
//! with no route. The same seed gives the same requests, so benchmarks and
//! tests are repeatable.
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
        let (kid, key) = match config.keys.first() {
            Some(k) => (k.kid.clone(), k.secret().to_vec()),
            None => (String::new(), Vec::new()),
        };
        Mix {
            kid,
            key,
            issuer: config.issuer.clone(),
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
        let method = METHODS[rng.below(METHODS.len() as u64) as usize];
        let path = PATHS[rng.below(PATHS.len() as u64) as usize];
        let sub = SUBJECTS[rng.below(SUBJECTS.len() as u64) as usize];
        let aud = if self.audiences.is_empty() {
            "none".to_owned()
        } else {
            self.audiences[rng.below(self.audiences.len() as u64) as usize].clone()
        };
        let claims = |aud: &str, exp: u64| {
            let mut c = Claims::new(aud, exp).subject(sub).issued_at(self.now.saturating_sub(60));
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
            .map(|_| {
                let mut pick = rng.below(u64::from(total)) as u32;
                let mut kind = RequestKind::Valid;
                for k in RequestKind::ALL {
                    if pick < k.weight() {
                        kind = k;
                        break;
                    }
                    pick -= k.weight();
                }
                self.request(kind, &mut rng)
            })
            .collect()
    }
}
