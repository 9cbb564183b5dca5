use std::string::String;

use super::*;
use crate::config::{Issuer, KeyFetch as FetchConfig, Policy, Route};

const NOW: f64 = 1_800_000_000.0;
const DISCOVERY: FetchConfig<'static> = FetchConfig {
    kind: SourceKind::Discovery,
    url: "http://idp.test/.well-known/openid-configuration",
    refresh_secs: 2,
    refetch_secs: 1,
    timeout_ms: 1000,
    max_stale_secs: 30,
    max_keys: 4,
};
const JWKS: FetchConfig<'static> =
    FetchConfig { kind: SourceKind::Jwks, url: "http://jwks.test/keys.json", refresh_secs: 600, ..DISCOVERY };
const ISSUERS_OF: &[Issuer<'static>] = &[
    Issuer {
        iss: Some("http://idp.test"),
        leeway_secs: 0,
        keys: &[],
        audiences: &[],
        fetch: Some(&DISCOVERY),
    },
    Issuer { iss: Some("http://jwks.test"), leeway_secs: 0, keys: &[], audiences: &[], fetch: Some(&JWKS) },
    Issuer { iss: Some("http://none.test"), leeway_secs: 0, keys: &[], audiences: &[], fetch: None },
];
const CONFIG: Config<'static> = Config {
    realm: "gw",
    trusted_proxy_hops: 0,
    max_token_bytes: 256,
    issuers: ISSUERS_OF,
    routes: &[Route { audience: "a", origin: "http://a", base_path: "" }],
    policy: Policy::NONE,
};

/// The test JWKS (RFC 7515's RSA and P-256 keys, RFC 8037's Ed25519 key, an encryption key).
fn jwks() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../testkit/keys/idp-jwks.json"))
        .expect("the fixture JWKS")
}

fn discovery(issuer: &str, jwks_uri: &str) -> String {
    std::format!(r#"{{"issuer":"{issuer}","jwks_uri":"{jwks_uri}"}}"#)
}

/// The instance's parts the rounds work with.
struct Module {
    rounds: std::boxed::Box<Rounds>,
    keys: std::boxed::Box<FetchedKeys>,
}

impl Module {
    fn new() -> Self {
        Module { rounds: std::boxed::Box::new(Rounds::new()), keys: std::boxed::Box::new(FetchedKeys::new()) }
    }

    fn start(&mut self, issuer: usize, now: f64, why: u32) -> Result<Option<String>, RoundError> {
        let mut out = String::new();
        self.rounds.start(issuer, now, why, &CONFIG, &mut out).map(|started| started.then_some(out))
    }

    fn fetched(
        &mut self,
        issuer: usize,
        document: &str,
        cache_control: &str,
        now: f64,
    ) -> (Result<Next, RoundError>, String) {
        let mut out = String::new();
        let next = self.rounds.fetched(
            issuer,
            document.as_bytes(),
            cache_control.as_bytes(),
            now,
            &mut self.keys,
            &CONFIG,
            &mut out,
        );
        (next, out)
    }

    fn stored(&mut self, document: &str, fetched_at: f64, now: f64) -> (Result<Stored, RoundError>, String) {
        let mut out = String::new();
        let stored = self.rounds.stored(
            0,
            document.as_bytes(),
            b"",
            fetched_at,
            now,
            &mut self.keys,
            &CONFIG,
            &mut out,
        );
        (stored, out)
    }

    fn wait(&mut self, issuer: usize, now: f64) -> Option<f64> {
        self.rounds.wait(issuer, now, &CONFIG).expect("an issuer that fetches")
    }
}

#[cfg(all(feature = "rs256", feature = "es256", feature = "eddsa"))]
#[test]
fn every_round_of_a_discovery_source_reads_discovery_then_the_document_it_names() {
    let mut m = Module::new();
    assert_eq!(m.start(0, NOW, 0), Ok(Some(DISCOVERY.url.into())), "the first round at once");
    assert_eq!(m.wait(0, NOW), None, "under way");
    assert_eq!(m.start(0, NOW, 2), Ok(None), "one round at a time");
    let (next, out) = m.fetched(0, &discovery("http://idp.test", "http://idp.test/jwks"), "", NOW);
    assert_eq!((next, out.as_str()), (Ok(Next::Fetch), "http://idp.test/jwks"));
    let (next, out) = m.fetched(0, &jwks(), "max-age=1", NOW);
    assert_eq!(next, Ok(Next::Installed(3)));
    assert!(
        out.starts_with(r#"installed "rsa-a2" "ec-a3" "ed-8037": 3 keys for issuer 0; skipped 1 key: "#),
        "{out}"
    );
    assert_eq!(m.wait(0, NOW), Some(1.0), "max-age 1, within refetch_secs 1 and refresh_secs 2");
    assert_eq!(m.start(0, NOW + 0.5, 0), Ok(None));
    // The next round reads the discovery document again, and follows a new jwks_uri.
    assert_eq!(m.start(0, NOW + 1.0, 0), Ok(Some(DISCOVERY.url.into())));
    let (next, out) = m.fetched(0, &discovery("http://idp.test", "http://idp.test/moved"), "", NOW + 1.0);
    assert_eq!((next, out.as_str()), (Ok(Next::Fetch), "http://idp.test/moved"));
    assert_eq!(m.fetched(0, &jwks(), "", NOW + 1.0).0, Ok(Next::Installed(3)));
    assert_eq!(m.wait(0, NOW + 1.0), Some(2.0), "refresh_secs");
}

#[cfg(all(feature = "rs256", feature = "es256", feature = "eddsa"))]
#[test]
fn a_discovery_document_of_another_issuer_ends_the_round_as_a_failure() {
    let mut m = Module::new();
    m.start(0, NOW, 0).expect("started");
    assert_eq!(
        m.fetched(0, &discovery("http://idp.test", "http://idp.test/jwks"), "", NOW).0,
        Ok(Next::Fetch)
    );
    assert_eq!(m.fetched(0, &jwks(), "", NOW).0, Ok(Next::Installed(3)));
    assert_eq!(m.start(0, NOW + 2.0, 0), Ok(Some(DISCOVERY.url.into())));
    let (next, out) = m.fetched(0, &discovery("http://other.test", "http://idp.test/other"), "", NOW + 2.0);
    assert_eq!(next, Ok(Next::Refused(Refusal::Discovery(discovery::DiscoveryError::WrongIssuer))));
    assert_eq!(out, "", "no jwks_uri to fetch");
    assert_eq!(
        Refusal::Discovery(discovery::DiscoveryError::WrongIssuer).to_string(),
        "discovery document names an issuer other than the configured iss"
    );
    assert_eq!(m.wait(0, NOW + 2.0), Some(1.0), "retried after 1 s");
    assert_eq!(m.keys.installed_at(0), Some(NOW as u64), "the installed keys stay");
    // A cut-short discovery document is named as one.
    m.start(0, NOW + 3.0, 0).expect("started");
    let cut = discovery("http://idp.test", "http://idp.test/jwks");
    let (next, _) = m.fetched(0, &cut[..20], "", NOW + 3.0);
    let Ok(Next::Refused(refusal)) = next else { panic!("{next:?}") };
    assert_eq!(
        refusal.to_string(),
        "discovery document is not an OpenID discovery document: its JSON is cut short after 20 bytes"
    );
}

#[cfg(all(feature = "rs256", feature = "es256", feature = "eddsa"))]
#[test]
fn a_jwks_round_asked_for_and_failed() {
    let mut m = Module::new();
    assert_eq!(m.start(1, NOW, 0), Ok(Some(JWKS.url.into())));
    let (next, _) = m.fetched(1, "{\"keys\":[", "", NOW);
    let Ok(Next::Refused(refusal)) = next else { panic!("{next:?}") };
    assert_eq!(
        refusal.to_string(),
        "JWKS document is not a JWKS document: its JSON is cut short after 9 bytes"
    );
    assert_eq!(m.wait(1, NOW), Some(1.0));
    assert_eq!(m.start(1, NOW + 1.0, 0), Ok(Some(JWKS.url.into())));
    assert_eq!(m.rounds.failed(1, NOW + 1.0, &CONFIG), Ok(()));
    assert_eq!(m.wait(1, NOW + 1.0), Some(1.0), "1, 2, 4 ... capped at refetch_secs 1");
    assert_eq!(m.start(1, NOW + 2.0, 0).map(|u| u.is_some()), Ok(true));
    assert_eq!(m.fetched(1, &jwks(), "", NOW + 2.0).0, Ok(Next::Installed(3)));
    assert_eq!(m.wait(1, NOW + 2.0), Some(600.0));
    // A decision's ~ line: a round at once, once per refetch_secs.
    assert_eq!(m.start(1, NOW + 2.5, 1), Ok(None), "within refetch_secs of the last start");
    assert_eq!(m.start(1, NOW + 3.0, 1), Ok(Some(JWKS.url.into())));
}

#[test]
fn questions_without_an_answer_say_why() {
    let mut m = Module::new();
    assert_eq!(m.start(2, NOW, 0), Err(RoundError::NotFetching(2)));
    assert_eq!(m.start(9, NOW, 0), Err(RoundError::NotFetching(9)));
    assert_eq!(m.start(0, f64::NAN, 0), Err(RoundError::Clock));
    assert_eq!(m.start(0, NOW, 3), Err(RoundError::Why(3)));
    assert_eq!(m.fetched(0, "{}", "", NOW).0, Err(RoundError::NoRound(0)));
    assert_eq!(m.rounds.failed(1, NOW, &CONFIG), Err(RoundError::NoRound(1)));
    assert_eq!(RoundError::NoRound(1).to_string(), "issuer 1 has no fetch under way");
    assert_eq!(m.rounds.wait(2, NOW, &CONFIG), Err(RoundError::NotFetching(2)));
}

#[cfg(all(feature = "rs256", feature = "es256", feature = "eddsa"))]
#[test]
fn a_stored_document_is_installed_as_of_its_fetch_when_newer() {
    let mut m = Module::new();
    m.start(0, NOW, 0).expect("started");
    let (stored, out) = m.stored(&jwks(), NOW - 1.0, NOW);
    assert_eq!(stored, Ok(Stored::Installed(3)), "{out}");
    assert_eq!(m.keys.installed_at(0), Some(NOW as u64 - 1));
    assert_eq!(m.wait(0, NOW), Some(1.0), "the round ended as of its fetch: refresh_secs 2 from then");
    assert_eq!(m.stored(&jwks(), NOW - 1.0, NOW).0, Ok(Stored::NotNewer));
    assert_eq!(m.stored(&jwks(), NOW - 5.0, NOW).0, Ok(Stored::NotNewer));
    assert_eq!(m.stored(&jwks(), NOW + 61.0, NOW).0, Ok(Stored::Refused(Refusal::FetchedAfterNow)));
    assert_eq!(m.keys.installed_at(0), Some(NOW as u64 - 1), "unchanged");
    let (stored, _) = m.stored("garbage", NOW, NOW);
    assert!(matches!(stored, Ok(Stored::Refused(Refusal::Install(_)))), "{stored:?}");
    // Fetched long ago: installed, and a round is due at once.
    let mut late = Module::new();
    assert_eq!(late.stored(&jwks(), NOW - 100.0, NOW).0, Ok(Stored::Installed(3)));
    assert_eq!(late.wait(0, NOW), Some(0.0));
}
