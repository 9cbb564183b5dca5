use super::*;
use crate::arena::Arena;
use crate::config::{Config, Issuer, Policy, Route};
use crate::jose::claims;

const CLAIMS: &[&str] = &["scope", "scp", "roles", "tenant", "tier", "verified"];
const POLICY: Policy<'static> = Policy { claims: CLAIMS, scope_claims: &[0, 1], ..Policy::NONE };
const CONFIG: Config<'static> = Config {
    realm: "gw",
    trusted_proxy_hops: 0,
    max_token_bytes: 2048,
    issuers: &[Issuer { iss: None, leeway_secs: 0, keys: &[], audiences: &[], fetch: None }],
    routes: &[Route { audience: "api", origin: "http://api", base_path: "" }],
    policy: POLICY,
};

/// `requirements` judged on a token whose other claims are `members`.
fn judged(requirements: Requirements<'static>, members: &str) -> Result<(), Rejection> {
    let json = std::format!(r#"{{"exp":1900000000,"aud":"api"{members}}}"#);
    let mut region = std::vec![0u8; 4096];
    let mut arena = Arena::new(&mut region);
    let verified = claims::check(json.as_bytes(), 1_800_000_000, &CONFIG, &mut arena)?;
    check(&requirements, &verified, &POLICY)
}

const WRITE: Requirements<'static> =
    Requirements { scopes_all: &["orders:write"], scope_attribute: "orders:write", ..Requirements::NONE };
const READ_OR_ADMIN: Requirements<'static> = Requirements {
    scopes_any: &["orders:read", "admin"],
    scope_attribute: "orders:read admin",
    ..Requirements::NONE
};
const BOTH: Requirements<'static> =
    Requirements { scopes_all: &["a", "b"], scope_attribute: "a b", ..Requirements::NONE };

fn write(members: &&str) -> Result<(), Rejection> {
    judged(WRITE, members)
}

fn read_or_admin(members: &&str) -> Result<(), Rejection> {
    judged(READ_OR_ADMIN, members)
}

fn both(members: &&str) -> Result<(), Rejection> {
    judged(BOTH, members)
}

crate::cases::cases! { write;
    scope_string: r#","scope":"orders:read orders:write""# => Ok(());
    scope_string_alone: r#","scope":"orders:write""# => Ok(());
    scp_string_entra: r#","scp":"orders:write profile""# => Ok(());
    scp_array_okta: r#","scp":["profile","orders:write"]"# => Ok(());
    scope_escaped: r#","scope":"orders:wr\u0069te""# => Ok(());
    scope_missing: r#","scope":"orders:read""# => Err(Rejection::InsufficientScope);
    scope_absent: "" => Err(Rejection::InsufficientScope);
    scope_prefix_is_not_the_scope: r#","scope":"orders:writer""# => Err(Rejection::InsufficientScope);
    scope_suffix_is_not_the_scope: r#","scope":"xorders:write""# => Err(Rejection::InsufficientScope);
    scope_case_matters: r#","scope":"Orders:Write""# => Err(Rejection::InsufficientScope);
    scope_with_comma_is_one_word: r#","scope":"orders:write,admin""# => Err(Rejection::InsufficientScope);
    scope_number: r#","scope":42"# => Err(Rejection::InsufficientScope);
    scope_null: r#","scope":null"# => Err(Rejection::InsufficientScope);
    scope_object: r#","scope":{"orders:write":true}"# => Err(Rejection::InsufficientScope);
    scope_array_of_words: r#","scp":["orders:read orders:write"]"# => Err(Rejection::InsufficientScope);
    scope_lone_surrogate: r#","scope":"orders:write \ud800""# => Err(Rejection::InsufficientScope);
    scope_padded_with_spaces: r#","scope":"  orders:write  ""# => Ok(());
    scope_tab_is_not_a_separator: r#","scope":"a\torders:write""# => Err(Rejection::InsufficientScope);
    scope_twice_is_malformed: r#","scope":"orders:write","scope":"x""# => Err(Rejection::MalformedClaims);
}

crate::cases::cases! { read_or_admin;
    any_first: r#","scope":"orders:read""# => Ok(());
    any_second: r#","scope":"admin""# => Ok(());
    any_none: r#","scope":"orders:write""# => Err(Rejection::InsufficientScope);
}

crate::cases::cases! { both;
    all_in_one_claim: r#","scope":"b a""# => Ok(());
    all_across_claims: r#","scope":"a","scp":["b"]"# => Ok(());
    all_but_one: r#","scope":"a""# => Err(Rejection::InsufficientScope);
}

const ROLES: Requirements<'static> = Requirements {
    roles: Some(Roles { claim: 2, all: &["staff"], any: &["ops", "admin"] }),
    ..Requirements::NONE
};

fn roles(members: &&str) -> Result<(), Rejection> {
    judged(ROLES, members)
}

crate::cases::cases! { roles;
    roles_met: r#","roles":["staff","ops"]"# => Ok(());
    roles_any_second: r#","roles":["admin","staff"]"# => Ok(());
    roles_all_missing: r#","roles":["ops"]"# => Err(Rejection::MissingRole);
    roles_any_missing: r#","roles":["staff"]"# => Err(Rejection::MissingRole);
    roles_string_is_one_role: r#","roles":"staff""# => Err(Rejection::MissingRole);
    roles_not_space_separated: r#","roles":["staff ops"]"# => Err(Rejection::MissingRole);
    roles_with_numbers_skipped: r#","roles":[1,"staff",{"x":1},"admin"]"# => Ok(());
    roles_absent: "" => Err(Rejection::MissingRole);
}

const VALUES: Requirements<'static> = Requirements {
    claim_values: &[
        ClaimValue { claim: 3, value: Literal::String("acme") },
        ClaimValue { claim: 4, value: Literal::Integer(3) },
        ClaimValue { claim: 5, value: Literal::Bool(true) },
    ],
    ..Requirements::NONE
};

fn values(members: &&str) -> Result<(), Rejection> {
    judged(VALUES, members)
}

crate::cases::cases! { values;
    values_met: r#","tenant":"acme","tier":3,"verified":true"# => Ok(());
    values_escaped_string: r#","tenant":"\u0061cme","tier":3,"verified":true"# => Ok(());
    values_other_tenant: r#","tenant":"acme-evil","tier":3,"verified":true"# => Err(Rejection::ClaimMismatch);
    values_tenant_case: r#","tenant":"ACME","tier":3,"verified":true"# => Err(Rejection::ClaimMismatch);
    values_tier_as_string: r#","tenant":"acme","tier":"3","verified":true"# => Err(Rejection::ClaimMismatch);
    values_tier_fraction: r#","tenant":"acme","tier":3.0,"verified":true"# => Err(Rejection::ClaimMismatch);
    values_tier_exponent: r#","tenant":"acme","tier":3e0,"verified":true"# => Err(Rejection::ClaimMismatch);
    values_tier_other: r#","tenant":"acme","tier":4,"verified":true"# => Err(Rejection::ClaimMismatch);
    values_bool_as_string: r#","tenant":"acme","tier":3,"verified":"true""# => Err(Rejection::ClaimMismatch);
    values_bool_false: r#","tenant":"acme","tier":3,"verified":false"# => Err(Rejection::ClaimMismatch);
    values_absent: r#","tenant":"acme","tier":3"# => Err(Rejection::ClaimMismatch);
    values_tenant_array: r#","tenant":["acme"],"tier":3,"verified":true"# => Err(Rejection::ClaimMismatch);
}

#[test]
fn no_requirements_accept_any_valid_token() {
    assert_eq!(judged(Requirements::NONE, ""), Ok(()));
}

#[test]
fn integers_compare_by_value_within_i64() {
    assert!(integer_eq(b"-7", -7));
    assert!(integer_eq(b"9223372036854775807", i64::MAX));
    assert!(!integer_eq(b"9223372036854775808", i64::MAX));
    assert!(!integer_eq(b"99999999999999999999999", 0));
    assert!(!integer_eq(b"-0.0", 0));
    assert!(integer_eq(b"-0", 0), "-0 is zero");
    assert!(integer_eq(b"0", 0));
    assert!(!integer_eq(b"7", -7) && !integer_eq(b"-7", 7), "the sign counts");
    assert!(integer_eq(b"-9223372036854775808", i64::MIN));
    assert!(!integer_eq(b"9223372036854775808", i64::MIN));
    assert!(!integer_eq(b"18446744073709551616", 0), "past u64::MAX");
    assert!(!integer_eq(b"18446744073709551615", -1));
}
