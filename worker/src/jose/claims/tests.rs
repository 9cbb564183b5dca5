use super::*;
use crate::config::Policy;

const NOW: u64 = 1_800_000_000;
const ISSUER: Issuer<'static> =
    Issuer { iss: Some("https://issuer.example"), leeway_secs: 30, keys: &[], audiences: &[], fetch: None };
const CONFIG: Config<'static> = Config {
    realm: "test",
    trusted_proxy_hops: 0,
    max_token_bytes: 256,
    issuers: &[ISSUER],
    routes: &[
        Route { audience: "billing", origin: "http://b", base_path: "" },
        Route { audience: "orders", origin: "http://o", base_path: "" },
    ],
    policy: Policy::NONE,
};

fn upstream_of(json: &str) -> Result<(&'static str, Option<std::string::String>), Rejection> {
    checked(json.as_bytes(), NOW, &CONFIG)
}

/// `check` with an arena of its own: the route's origin and the subject.
fn checked(
    json: &[u8],
    now: u64,
    config: &Config<'static>,
) -> Result<(&'static str, Option<std::string::String>), Rejection> {
    let mut region = std::vec![0u8; json.len()];
    let mut arena = Arena::new(&mut region);
    check(json, now, config, &mut arena).map(|g| (g.route.origin, g.subject.map(Into::into)))
}

/// Claims with `extra` members spliced in after a valid iss.
fn claims(extra: &str) -> std::string::String {
    std::format!(r#"{{"iss":"https://issuer.example"{extra}}}"#)
}

fn upstream_of_text(
    json: &impl AsRef<str>,
) -> Result<(&'static str, Option<std::string::String>), Rejection> {
    upstream_of(json.as_ref())
}

crate::cases::cases! { upstream_of_text;
    string_aud: claims(r#","exp":1800000100,"aud":"orders","sub":"alice""#) => Ok(("http://o", Some("alice".into())));
    array_aud_first_routed_wins: claims(r#","exp":1800000100,"aud":["nope","billing","orders"]"#) => Ok(("http://b", None));
    exp_above_2_pow_32: claims(r#","exp":9007199254740991,"aud":"orders""#) => Ok(("http://o", None));
    exp_within_leeway: claims(r#","exp":1799999980,"aud":"orders""#) => Ok(("http://o", None));
    nbf_within_leeway: claims(r#","exp":1800000100,"nbf":1800000020,"aud":"orders""#) => Ok(("http://o", None));
    iat_any_time: claims(r#","exp":1800000100,"iat":1,"aud":"orders""#) => Ok(("http://o", None));
    unknown_claims_ignored: claims(r#","exp":1800000100,"aud":"orders","scope":"a b","x":{"y":[1,2]}"#) => Ok(("http://o", None));
    expired: claims(r#","exp":1799999969,"aud":"orders""#) => Err(Rejection::Expired);
    not_yet_valid: claims(r#","exp":1800000100,"nbf":1800000031,"aud":"orders""#) => Err(Rejection::NotYetValid);
    no_exp: claims(r#","aud":"orders""#) => Err(Rejection::MissingExpiry);
    exp_as_string: claims(r#","exp":"1800000100","aud":"orders""#) => Err(Rejection::MalformedClaims);
    exp_negative: claims(r#","exp":-1,"aud":"orders""#) => Err(Rejection::MalformedClaims);
    iat_as_string: claims(r#","exp":1800000100,"iat":"x","aud":"orders""#) => Err(Rejection::MalformedClaims);
    wrong_iss: r#"{"iss":"https://evil.example","exp":1800000100,"aud":"orders"}"# => Err(Rejection::WrongIssuer);
    missing_iss: r#"{"exp":1800000100,"aud":"orders"}"# => Err(Rejection::WrongIssuer);
    dpop_bound: claims(r#","exp":1800000100,"aud":"orders","cnf":{"jkt":"0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}"#) => Err(Rejection::BoundToken);
    certificate_bound: claims(r#","exp":1800000100,"aud":"orders","cnf":{"x5t#S256":"bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}"#) => Err(Rejection::BoundToken);
    bound_by_any_member: claims(r#","exp":1800000100,"aud":"orders","cnf":{"jwk":{"kty":"OKP"}}"#) => Err(Rejection::BoundToken);
    bound_by_an_empty_confirmation: claims(r#","exp":1800000100,"aud":"orders","cnf":{}"#) => Err(Rejection::BoundToken);
    bound_spelled_with_escapes: claims(r#","exp":1800000100,"aud":"orders","\u0063nf":{"jkt":"x"}"#) => Err(Rejection::BoundToken);
    bound_before_the_other_claims: r#"{"cnf":{"jkt":"x"},"iss":"https://issuer.example","exp":1800000100,"aud":"orders"}"# => Err(Rejection::BoundToken);
    bound_twice: claims(r#","exp":1800000100,"aud":"orders","cnf":{"jkt":"x"},"cnf":{"jkt":"y"}"#) => Err(Rejection::MalformedClaims);
    bound_and_malformed: claims(r#","exp":1800000100,"aud":"orders","cnf":{"jkt":}"#) => Err(Rejection::MalformedClaims);
    null_confirmation_is_absent: claims(r#","exp":1800000100,"aud":"orders","cnf":null"#) => Ok(("http://o", None));
    a_name_like_cnf_is_another_claim: claims(r#","exp":1800000100,"aud":"orders","cnf_hint":{"jkt":"x"},"Cnf":1"#) => Ok(("http://o", None));
    no_aud: claims(r#","exp":1800000100"#) => Err(Rejection::MissingAudience);
    empty_aud_list: claims(r#","exp":1800000100,"aud":[]"#) => Err(Rejection::MissingAudience);
    aud_without_route: claims(r#","exp":1800000100,"aud":"admin""#) => Err(Rejection::NoRoute);
    aud_list_without_route: claims(r#","exp":1800000100,"aud":["admin","root"]"#) => Err(Rejection::NoRoute);
    aud_case_differs: claims(r#","exp":1800000100,"aud":"Orders""#) => Err(Rejection::NoRoute);
    escaped_slash_in_iss: r#"{"iss":"https:\/\/issuer.example","exp":1800000100,"aud":"orders"}"# => Ok(("http://o", None));
    escaped_aud: claims(r#","exp":1800000100,"aud":"\u006frders""#) => Ok(("http://o", None));
    escaped_aud_in_list: claims(r#","exp":1800000100,"aud":["admin","ord\u0065rs"]"#) => Ok(("http://o", None));
    escaped_aud_upper_hex: claims(r#","exp":1800000100,"aud":"\u006Frders""#) => Ok(("http://o", None));
    escaped_name_is_the_member: claims(r#","exp":1800000100,"\u0061ud":"orders""#) => Ok(("http://o", None));
    escaped_name_duplicates_the_member: claims(r#","exp":1800000100,"aud":"admin","\u0061ud":"orders""#) => Err(Rejection::MalformedClaims);
    escaped_sub: claims(r#","exp":1800000100,"aud":"orders","sub":"a\u0041\"b\/""#) => Ok(("http://o", Some("aA\"b/".into())));
    escaped_sub_astral: claims(r#","exp":1800000100,"aud":"orders","sub":"\ud834\udd1e""#) => Err(Rejection::SubjectNotHeaderSafe);
    escaped_sub_nul: claims(r#","exp":1800000100,"aud":"orders","sub":"a\u0000""#) => Err(Rejection::SubjectNotHeaderSafe);
    escaped_sub_crlf: claims(r#","exp":1800000100,"aud":"orders","sub":"a\r\nX-Admin: 1""#) => Err(Rejection::SubjectNotHeaderSafe);
    escaped_sub_crlf_as_u: claims(r#","exp":1800000100,"aud":"orders","sub":"a\u000d\u000aX-Admin: 1""#) => Err(Rejection::SubjectNotHeaderSafe);
    escaped_sub_tab: claims(r#","exp":1800000100,"aud":"orders","sub":"a\tb""#) => Err(Rejection::SubjectNotHeaderSafe);
    escaped_aud_nul_routes_nowhere: claims(r#","exp":1800000100,"aud":"orders\u0000""#) => Err(Rejection::NoRoute);
    lone_surrogate_in_aud: claims(r#","exp":1800000100,"aud":"\ud800orders""#) => Err(Rejection::LoneSurrogate);
    lone_surrogate_in_sub: claims(r#","exp":1800000100,"aud":"orders","sub":"\udc00""#) => Err(Rejection::LoneSurrogate);
    lone_surrogate_in_iss: r#"{"iss":"\ud834","exp":1800000100,"aud":"orders"}"# => Err(Rejection::LoneSurrogate);
    lone_surrogate_in_other_member: claims(r#","exp":1800000100,"aud":"orders","x":"\ud800""#) => Ok(("http://o", None));
    exp_fraction_rounds_down: claims(r#","exp":1799999971.9,"aud":"orders""#) => Ok(("http://o", None));
    exp_fraction_rounds_down_to_expired: claims(r#","exp":1799999970.9,"aud":"orders""#) => Err(Rejection::Expired);
    // RFC 7519 section 4.1.4: valid only before exp (+ leeway), so at the
    // second exp + leeway it is expired; nbf is valid from its second on.
    exp_plus_leeway_is_now: claims(r#","exp":1799999970,"aud":"orders""#) => Err(Rejection::Expired);
    exp_plus_leeway_a_second_ahead: claims(r#","exp":1799999971,"aud":"orders""#) => Ok(("http://o", None));
    nbf_minus_leeway_is_now: claims(r#","exp":1800000100,"nbf":1800000030,"aud":"orders""#) => Ok(("http://o", None));
    exp_exponent: claims(r#","exp":1.8000001e9,"aud":"orders""#) => Ok(("http://o", None));
    exp_exponent_exactly_now: claims(r#","exp":1.8e9,"aud":"orders""#) => Ok(("http://o", None));
    exp_exponent_upper_signed: claims(r#","exp":18000001E+2,"aud":"orders""#) => Ok(("http://o", None));
    exp_negative_exponent: claims(r#","exp":18000001000e-1,"aud":"orders""#) => Ok(("http://o", None));
    exp_tiny: claims(r#","exp":1e-400,"aud":"orders""#) => Err(Rejection::Expired);
    exp_huge_exponent: claims(r#","exp":1e400,"aud":"orders""#) => Err(Rejection::MalformedClaims);
    exp_past_u64: claims(r#","exp":18446744073709551616,"aud":"orders""#) => Err(Rejection::MalformedClaims);
    exp_exponent_past_u64: claims(r#","exp":1.8446744073709551616e19,"aud":"orders""#) => Err(Rejection::MalformedClaims);
    exp_giant_exponent_digits: claims(r#","exp":1e99999999999999999999999,"aud":"orders""#) => Err(Rejection::MalformedClaims);
    exp_negative_zero_is_zero: claims(r#","exp":-0,"aud":"orders""#) => Err(Rejection::Expired);
    exp_negative_fraction: claims(r#","exp":-0.5,"aud":"orders""#) => Err(Rejection::MalformedClaims);
    nbf_fraction_rounds_up: claims(r#","exp":1800000100,"nbf":1800000030.1,"aud":"orders""#) => Err(Rejection::NotYetValid);
    nbf_whole_with_zero_fraction: claims(r#","exp":1800000100,"nbf":1800000030.000,"aud":"orders""#) => Ok(("http://o", None));
    nbf_negative_zero: claims(r#","exp":1800000100,"nbf":-0.0e5,"aud":"orders""#) => Ok(("http://o", None));
    nbf_exponent_rounds_up: claims(r#","exp":1800000100,"nbf":18000000301e-1,"aud":"orders""#) => Err(Rejection::NotYetValid);
    iat_fraction: claims(r#","exp":1800000100,"iat":1799999999.25,"aud":"orders""#) => Ok(("http://o", None));
    iat_huge: claims(r#","exp":1800000100,"iat":1e400,"aud":"orders""#) => Err(Rejection::MalformedClaims);
    nulls_read_as_absent: claims(r#","exp":1800000100,"nbf":null,"iat":null,"sub":null,"aud":"orders""#) => Ok(("http://o", None));
    null_aud: claims(r#","exp":1800000100,"aud":null"#) => Err(Rejection::MissingAudience);
    whitespace_everywhere: " {\n \"iss\" : \"https://issuer.example\" ,\t\"exp\" : 1800000100 , \"aud\" : [ \"orders\" ] }\r\n" => Ok(("http://o", None));
    sub_with_utf8: claims(r#","exp":1800000100,"aud":"orders","sub":"zoë""#) => Err(Rejection::SubjectNotHeaderSafe);
    sub_with_leading_space: claims(r#","exp":1800000100,"aud":"orders","sub":" admin""#) => Err(Rejection::SubjectNotHeaderSafe);
    sub_with_trailing_space: claims(r#","exp":1800000100,"aud":"orders","sub":"admin ""#) => Err(Rejection::SubjectNotHeaderSafe);
    sub_with_tab: claims(r#","exp":1800000100,"aud":"orders","sub":"ad	min""#) => Err(Rejection::MalformedClaims);
    sub_empty_is_no_subject: claims(r#","exp":1800000100,"aud":"orders","sub":"""#) => Ok(("http://o", None));
    sub_with_inner_space: claims(r#","exp":1800000100,"aud":"orders","sub":"Ada Lovelace""#) => Ok(("http://o", Some("Ada Lovelace".into())));
    too_many_audiences: claims(r#","exp":1800000100,"aud":["1","2","3","4","5","6","7","8","orders"]"#) => Err(Rejection::MalformedClaims);
    aud_number: claims(r#","exp":1800000100,"aud":7"#) => Err(Rejection::MalformedClaims);
    duplicate_exp: claims(r#","exp":1800000100,"exp":1,"aud":"orders""#) => Err(Rejection::MalformedClaims);
    duplicate_aud: claims(r#","exp":1800000100,"aud":"admin","aud":"orders""#) => Err(Rejection::MalformedClaims);
    duplicate_aud_as_array: claims(r#","exp":1800000100,"aud":["orders"],"aud":"admin""#) => Err(Rejection::MalformedClaims);
    malformed_json: claims(r#","exp":1800000100,"aud":"orders""#).replace('}', "") => Err(Rejection::MalformedClaims);
    not_an_object: "[1,2,3]" => Err(Rejection::MalformedClaims);
    unknown_member_not_json: claims(r#","exp":1800000100,"aud":"orders","x":tru"#) => Err(Rejection::MalformedClaims);
    bad_escape_in_unknown_member: claims(r#","exp":1800000100,"aud":"orders","x":"a\qb""#) => Err(Rejection::MalformedClaims);
    trailing_garbage: claims(r#","exp":1800000100,"aud":"orders""#) + "}" => Err(Rejection::MalformedClaims);
}

#[test]
fn no_issuer_configured_accepts_any_iss() {
    let config = Config { issuers: &[Issuer { iss: None, ..ISSUER }], ..CONFIG };
    let grant = checked(br#"{"exp":1800000100,"aud":"orders"}"#, NOW, &config).expect("accepted");
    assert_eq!(grant.0, "http://o");
}

#[test]
fn clock_past_2038_and_near_u64_max_never_overflows() {
    let json = br#"{"iss":"https://issuer.example","exp":18446744073709551615,"aud":"orders"}"#;
    assert!(checked(json, u64::MAX - 1, &CONFIG).is_ok());
    assert_eq!(checked(json, u64::MAX, &CONFIG).map(|_| ()), Err(Rejection::Expired));
    let json =
        br#"{"iss":"https://issuer.example","exp":2200000000,"nbf":18446744073709551615,"aud":"orders"}"#;
    assert_eq!(checked(json, 2_147_483_648, &CONFIG).map(|_| ()), Err(Rejection::NotYetValid));
    let json = br#"{"iss":"https://issuer.example","exp":2200000000,"aud":"orders"}"#;
    assert!(checked(json, 2_147_483_648, &CONFIG).is_ok(), "a 2038+ clock");
    assert_eq!(checked(json, 2_200_000_031, &CONFIG).map(|_| ()), Err(Rejection::Expired));
    assert_eq!(checked(json, 2_200_000_030, &CONFIG).map(|_| ()), Err(Rejection::Expired));
    assert!(checked(json, 2_200_000_029, &CONFIG).is_ok());
}

/// Two issuers with the same kid: the token's `iss` picks the issuer, its
/// leeway and the audiences it may use.
mod several_issuers {
    use super::*;

    const ISSUERS: &[Issuer<'static>] = &[
        Issuer {
            iss: Some("https://a.example"),
            leeway_secs: 0,
            keys: &[],
            audiences: &["orders"],
            fetch: None,
        },
        Issuer { iss: Some("https://b.example"), leeway_secs: 60, keys: &[], audiences: &[], fetch: None },
    ];
    const TWO: Config<'static> = Config { issuers: ISSUERS, ..CONFIG };

    fn of(json: &str) -> Result<(&'static str, Option<std::string::String>), Rejection> {
        checked(json.as_bytes(), NOW, &TWO)
    }

    #[test]
    fn iss_picks_the_issuer_its_leeway_and_its_audiences() {
        assert_eq!(
            of(r#"{"iss":"https://a.example","exp":1800000100,"aud":"orders"}"#),
            Ok(("http://o", None))
        );
        assert_eq!(
            of(r#"{"iss":"https://b.example","exp":1799999950,"aud":"billing"}"#),
            Ok(("http://b", None))
        );
        assert_eq!(
            of(r#"{"iss":"https://a.example","exp":1799999950,"aud":"orders"}"#),
            Err(Rejection::Expired),
            "a's leeway is 0"
        );
        assert_eq!(
            of(r#"{"iss":"https://a.example","exp":1800000100,"aud":"billing"}"#),
            Err(Rejection::NoRoute),
            "a may not use billing"
        );
        assert_eq!(
            of(r#"{"iss":"https://a.example","exp":1800000100,"aud":["billing","orders"]}"#),
            Ok(("http://o", None)),
            "the first audience a may use"
        );
        assert_eq!(
            of(r#"{"iss":"https://c.example","exp":1800000100,"aud":"orders"}"#),
            Err(Rejection::WrongIssuer)
        );
        assert_eq!(of(r#"{"exp":1800000100,"aud":"orders"}"#), Err(Rejection::WrongIssuer));
        assert_eq!(
            of(r#"{"iss":"https:\/\/a.example","exp":1800000100,"aud":"orders"}"#),
            Ok(("http://o", None)),
            "escapes decoded"
        );
    }

    #[test]
    fn keys_are_the_issuers_own_and_iss_is_read_strictly_before_the_signature() {
        const KEY_A: crate::keys::VerifyingKey<'static> =
            crate::keys::VerifyingKey::Hs256(crate::keys::Hs256Key {
                kid: "k",
                secret: b"0123456789abcdef0123456789abcdef",
                hmac: crate::keys::HmacKey::UNKEYED,
            });
        const A_KEYS: &[Issuer<'static>] = &[
            Issuer {
                iss: Some("https://a.example"),
                leeway_secs: 0,
                keys: &[KEY_A],
                audiences: &[],
                fetch: None,
            },
            Issuer { iss: Some("https://b.example"), leeway_secs: 0, keys: &[], audiences: &[], fetch: None },
        ];
        let config = Config { issuers: A_KEYS, ..CONFIG };
        let keys =
            |json: &str| issuer_index(json.as_bytes(), &config).map(|i| A_KEYS[i.expect("one")].keys.len());
        assert_eq!(keys(r#"{"iss":"https://a.example"}"#), Ok(1));
        assert_eq!(keys(r#"{"iss":"https://b.example"}"#), Ok(0), "b's kid k is not a's");
        assert_eq!(keys(r#"{"iss":"https://c.example"}"#), Err(Rejection::WrongIssuer));
        assert_eq!(
            keys(r#"{"iss":"https://a.example","iss":"https://b.example"}"#),
            Err(Rejection::MalformedClaims)
        );
        assert_eq!(
            keys(r#"{"iss":"https://a.example","\u0069ss":"https://b.example"}"#),
            Err(Rejection::MalformedClaims)
        );
        assert_eq!(keys(r#"{"iss":"\ud800"}"#), Err(Rejection::LoneSurrogate));
        assert_eq!(keys(r#"{"iss":"https://a.example""#), Err(Rejection::MalformedClaims));
    }
}

/// The claims the policy reads are kept raw, once each, escaped names too.
mod policy_claims {
    use super::*;

    const READING: Config<'static> =
        Config { policy: Policy { claims: &["tenant", "roles", "sub"], ..Policy::NONE }, ..CONFIG };

    fn values(json: &str) -> Result<[Option<std::string::String>; 3], Rejection> {
        let mut region = std::vec![0u8; json.len()];
        let mut arena = Arena::new(&mut region);
        let verified = check(json.as_bytes(), NOW, &READING, &mut arena)?;
        let text = |i: u8| {
            verified.claims.get(i).map(|v| std::string::String::from_utf8(v.to_vec()).expect("UTF-8"))
        };
        Ok([text(0), text(1), text(2)])
    }

    #[test]
    fn raw_values_are_kept() {
        let got = values(&claims(
            r#","exp":1800000100,"aud":"orders","tenant":"acme","roles":[ "a" , "b" ],"sub":"x""#,
        ));
        assert_eq!(
            got,
            Ok([Some(r#""acme""#.into()), Some(r#"[ "a" , "b" ]"#.into()), Some(r#""x""#.into())])
        );
        let absent = values(&claims(r#","exp":1800000100,"aud":"orders""#));
        assert_eq!(absent, Ok([None, None, None]));
    }

    #[test]
    fn a_policy_claim_twice_is_refused_in_any_spelling() {
        let twice = claims(r#","exp":1800000100,"aud":"orders","tenant":"a","t\u0065nant":"b""#);
        assert_eq!(values(&twice), Err(Rejection::MalformedClaims));
    }
}
