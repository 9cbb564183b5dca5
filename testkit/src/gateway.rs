//! The gateway as the attack corpus, the differential tests and the fuzz
//! targets drive it (`security/tests/`, `fuzz/`): minting
//! HS256 tokens, building request heads, deciding a request with the gateway
//! behind one trait (the native rlib here; the real `.wasm` module in the
//! tests), reading a decision back, and checking the invariants every answer
//! must meet whatever the input (`ABI.md`). Everything runs against the test
//! fixture, `testkit/fixture.toml` (its public test key, issuer and routes),
//! never the user's `gateway.toml`: the native gateway reads the fixture, and
//! the tests drive `target/fixture/gateway.wasm`, built from it by
//! `make fixture`.

use worker::Rejection;
use worker::abi::{INPUT_CAPACITY, Instance};
use worker::config::Config;

pub use crate::tokens::{b64url as b64, mint, sign};

/// A fixed clock for the corpus: 2027-01-15, past 2^31 and before 2^32.
pub const NOW: u64 = 1_800_000_000;

/// The module built from the fixture by `make fixture`.
pub fn fixture_wasm() -> std::path::PathBuf {
    crate::fixture::wasm_path()
}

/// The fixture's key (public, test-only).
pub fn fixture_secret() -> &'static [u8] {
    crate::tokens::first_key(crate::fixture::config_ref()).map_or(&[], |(_, secret)| secret)
}

/// The fixture's configuration, as the worker reads it.
pub fn config() -> &'static Config<'static> {
    crate::fixture::worker_config()
}

/// A compact JWS signed with the fixture key.
pub fn mint_fixture(header: &str, claims: &str) -> String {
    mint(header, claims, fixture_secret())
}

/// True when `token` is a compact JWS whose signature is the HMAC of its
/// first two parts under the fixture key (an independent check of a forward).
pub fn signed_by_fixture_key(token: &[u8]) -> bool {
    let Some(dot) = token.iter().rposition(|&b| b == b'.') else { return false };
    sign(fixture_secret(), &token[..dot]).as_bytes() == &token[dot + 1..]
}

/// The credentials of the `Authorization: Bearer` field of `head`, found
/// with httparse: a well-kept parser the worker also uses, so the oracle
/// reads the head exactly as the module does (leading empty lines, bare LF
/// line ends) without re-implementing the module's own checks.
pub fn bearer_token_of(head: &[u8]) -> Option<&[u8]> {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut fields);
    request.parse(head).ok()?.is_complete().then_some(())?;
    let value = request.headers.iter().rev().find(|f| f.name.eq_ignore_ascii_case("authorization"))?.value;
    let value = value.trim_ascii();
    match value.get(..6) {
        Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer") => Some(value[6..].trim_ascii_start()),
        _ => None,
    }
}

/// The fields of `head` as httparse reads them, lower-cased names and raw
/// values, or None when it does not parse.
pub fn fields_of(head: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut fields);
    request.parse(head).ok()?.is_complete().then_some(())?;
    Some(request.headers.iter().map(|f| (f.name.to_ascii_lowercase(), f.value.to_vec())).collect())
}

/// A request head carrying `Authorization: Bearer <token>`.
pub fn bearer_request(token: &str) -> Vec<u8> {
    authorization_request(format!("Bearer {token}").as_bytes())
}

/// A request head carrying `Authorization: <value>` (raw bytes).
pub fn authorization_request(value: &[u8]) -> Vec<u8> {
    let mut head = b"GET /v1/orders?id=7 HTTP/1.1\r\nHost: gateway.example\r\nAuthorization: ".to_vec();
    head.extend_from_slice(value);
    head.extend_from_slice(b"\r\nAccept: application/json\r\n\r\n");
    head
}

/// Something that decides a request head the way the module does.
pub trait Gateway {
    /// What it is, for messages ("native", "wasm").
    fn name(&self) -> &'static str;
    /// Decides `head` at Unix time `now` and returns the status and the output.
    fn decide(&mut self, head: &[u8], now: f64) -> Decision;
}

/// The native rlib behind the same contract as the wasm exports: an
/// [`Instance`], whose input buffer and 431 rule are the module's.
pub struct Native {
    instance: Box<Instance>,
}

impl Native {
    /// A fresh instance with the fixture's config.
    pub fn new() -> Self {
        Native { instance: Box::new(Instance::new()) }
    }
}

impl Default for Native {
    fn default() -> Self {
        Self::new()
    }
}

impl Gateway for Native {
    fn name(&self) -> &'static str {
        "native"
    }

    fn decide(&mut self, head: &[u8], now: f64) -> Decision {
        // As a host does: the context line, then the head; an input that does
        // not fit is not written, only its length passed.
        let input = [CONTEXT_LINE.as_bytes(), head].concat();
        if let Some(slot) = self.instance.input_mut().get_mut(..input.len()) {
            slot.copy_from_slice(&input);
        }
        let len = u32::try_from(input.len()).unwrap_or(u32::MAX);
        let status = self.instance.handle(len, now, config());
        Decision { status, output: self.instance.output().to_vec() }
    }
}

/// The context line every gateway here sends: a loopback client over plain HTTP.
pub const CONTEXT_LINE: &str = "http 127.0.0.1\n";

/// The biggest head a host hands to the module; longer ones are answered 431.
pub const HEAD_CAPACITY: usize = INPUT_CAPACITY - CONTEXT_LINE.len();

/// One answer: the status and the output bytes (`ABI.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The HTTP status `handle` returned.
    pub status: u32,
    /// The output bytes.
    pub output: Vec<u8>,
}

/// What a decision means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Forward to `upstream`, with the subject (empty for none).
    Forward {
        /// The upstream URL: the origin, then the path and query.
        upstream: String,
        /// The subject, empty when the token has none.
        subject: String,
    },
    /// Rejected for this reason.
    Reject(Rejection),
}

impl Decision {
    /// The decision as the contract reads it.
    pub fn view(&self) -> Result<contract::Decision<'_>, contract::DecodeError> {
        contract::Decision::decode(self.status, &self.output)
    }

    /// The verdict, once [`Decision::check`] has passed.
    pub fn verdict(&self) -> Result<Verdict, String> {
        self.check()?;
        match self.view().map_err(|e| e.to_string())? {
            contract::Decision::Forward(forward) => Ok(Verdict::Forward {
                upstream: format!("{}{}", forward.origin, forward.path),
                subject: forward.request_set(contract::fields::SUBJECT).unwrap_or_default().to_owned(),
            }),
            contract::Decision::Answer(answer) => Rejection::ALL
                .iter()
                .copied()
                .find(|r| r.reason() == answer.reason)
                .map(Verdict::Reject)
                .ok_or_else(|| format!("unknown reason {:?}", answer.reason)),
        }
    }

    /// True for a forward decision.
    pub fn accepted(&self) -> bool {
        self.status == 200
    }

    /// The invariants every answer meets, whatever the request (`ABI.md`):
    /// a decision the contract reads; a known status; a forward to a
    /// configured origin under its route's base path that never sets
    /// Authorization; an answer's reason is one of the gateway's, with that
    /// status, error code and challenge; its body is JSON naming the same
    /// reason.
    pub fn check(&self) -> Result<(), String> {
        let fail = |why: &str| Err(format!("{why}: status {} output {:?}", self.status, self.shown()));
        if !matches!(self.status, 200 | 400 | 401 | 403 | 404 | 414 | 431 | 500) {
            return fail("unexpected status");
        }
        let answer = match self.view() {
            Err(e) => return fail(&format!("not a decision the contract reads ({e})")),
            Ok(contract::Decision::Forward(forward)) => {
                let url = format!("{}{}", forward.origin, forward.path);
                let under_a_route = config().routes.iter().any(|r| {
                    forward.origin == r.origin
                        && url[r.origin.len()..].starts_with(r.base_path)
                        && url[r.origin.len() + r.base_path.len()..].starts_with('/')
                });
                if !under_a_route {
                    return fail("forward to an upstream that is not configured");
                }
                if forward.request_sets().any(|(name, _)| name == "authorization") {
                    return fail("a forward never sets Authorization");
                }
                return Ok(());
            }
            Ok(contract::Decision::Answer(answer)) => answer,
        };
        let Some(rejection) = Rejection::ALL.iter().copied().find(|r| r.reason() == answer.reason) else {
            return fail("unknown reason");
        };
        if rejection.status() != answer.status {
            return fail("status does not match the reason");
        }
        let code = rejection.error_code().map_or("", |c| c.as_str());
        if answer.error != code {
            return fail("error code does not match the reason");
        }
        let realm = format!("Bearer realm=\"{}\"", config().realm);
        let expected = match (answer.status, code) {
            (500, _) => None,
            (_, "") => Some(realm),
            _ => Some(format!("{realm}, error=\"{code}\", error_description=\"{}\"", rejection.reason())),
        };
        if answer.field("www-authenticate") != expected.as_deref() {
            return fail("WWW-Authenticate does not match the reason");
        }
        if answer.field("content-type") != Some(contract::fields::JSON) {
            return fail("the body is not declared JSON");
        }
        match serde_json::from_str::<serde_json::Value>(answer.body) {
            Ok(body) if body["error_description"] == rejection.reason() => Ok(()),
            _ => fail("body is not JSON with the reason"),
        }
    }

    /// The output as text, for messages.
    pub fn shown(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }
}
