//! `[[limits]]`: what builds, and the one-line refusal of what cannot work.

use crate::policy::tests_support::{parse, refused};
use crate::policy::{LimitConfig, LimitKeyConfig};

const PER_USER: &str = r#"
[[limits]]
name = "per-user"
requests = 100
per_secs = 60
by = "subject"
"#;

#[test]
fn a_limit_builds_with_its_defaults_and_applies_where_named() {
    let config = parse(&format!(
        "default_limits = [\"per-user\"]\n{PER_USER}\n[[limits]]\nname = \"ip\"\nrequests = 5\nper_secs = 1\nburst = 10\nby = \"client_address\"\nfields = false\n\
         [[rules]]\npath = \"/healthz\"\naccess = \"public\"\nroute = \"docs\"\nlimits = [\"ip\"]\n\
         [[rules]]\nprefix = \"/docs\"\naccess = \"public\"\nroute = \"docs\"\nlimits = []\n\
         [[rules]]\nprefix = \"/orders\"\n"
    ))
    .expect("valid");
    let limits = &config.policy.limits;
    assert_eq!(
        limits.table[0],
        LimitConfig {
            name: "per-user".into(),
            requests: 100,
            per_secs: 60,
            burst: 100,
            by: LimitKeyConfig::Subject,
            fields: true
        }
    );
    assert_eq!((limits.table[1].burst, limits.table[1].fields), (10, false));
    assert_eq!(limits.by_rule, [vec![1], vec![], vec![0]]);
    assert_eq!(limits.unmatched, [0]);
    assert!(config.policy_cfgs().contains(&"policy_limits"));
}

#[test]
fn a_claim_key_reads_the_claim() {
    let config = parse(
        "default_limits = [\"t\"]\n[[limits]]\nname = \"t\"\nrequests = 1\nper_secs = 1\nby = \"claim:tenant\"\n",
    )
    .expect("valid");
    assert_eq!(config.policy.claims, ["tenant"]);
    assert_eq!(config.policy.limits.table[0].by, LimitKeyConfig::Claim(0));
}

#[test]
fn what_cannot_work_is_refused_in_one_line() {
    let public = "[[rules]]\npath = \"/p\"\naccess = \"public\"\nroute = \"docs\"\n";
    for (extra, why) in [
        (PER_USER.to_owned(), "is named by no rule's limits nor by default_limits"),
        (format!("default_limits = [\"per-user\"]\n{PER_USER}{public}"), "counts per token, but rules[0]"),
        (format!("{PER_USER}{public}limits = [\"per-user\"]\n"), "nobody is verified there"),
        (format!("default_limits = [\"nope\"]\n{PER_USER}"), "\"nope\" is no limit's name"),
        (format!("default_limits = [\"per-user\", \"per-user\"]\n{PER_USER}"), "named twice"),
        (format!("default_limits = [\"per-user\"]\n{PER_USER}{PER_USER}"), "names another limit too"),
        (
            format!("default_limits = [\"per-user\"]\n{PER_USER}[[rules]]\nprefix = \"/x\"\naccess = \"deny\"\nlimits = [\"per-user\"]\n"),
            "a deny rule forwards nothing to limit",
        ),
        ("default_limits = [\"x\"]\n[[limits]]\nname = \"x\"\nrequests = 0\nper_secs = 1\nby = \"route\"\n".into(), "limits[0].requests 0 must be from 1 to 1000000"),
        ("default_limits = [\"x\"]\n[[limits]]\nname = \"x\"\nrequests = 1\nper_secs = 99999999\nby = \"route\"\n".into(), "per_secs 99999999 must be from 1 to 31536000"),
        ("default_limits = [\"x\"]\n[[limits]]\nname = \"x\"\nrequests = 1\nper_secs = 1\nburst = 0\nby = \"route\"\n".into(), "burst 0 must be from 1"),
        ("default_limits = [\"x\"]\n[[limits]]\nname = \"x\"\nrequests = 1\nper_secs = 1\nby = \"header:x-user\"\n".into(), "must be \"subject\", \"claim:NAME\", \"client_address\" or \"route\""),
        ("default_limits = [\"x\"]\n[[limits]]\nname = \"x\"\nrequests = 1\nper_secs = 31536000\nburst = 1000\nby = \"route\"\n".into(), "takes 1000 years to earn back; at most a century"),
        ("default_limits = [\"X Y\"]\n[[limits]]\nname = \"X Y\"\nrequests = 1\nper_secs = 1\nby = \"route\"\n".into(), "lower-case letters, digits"),
    ] {
        let error = refused(&extra);
        assert!(error.contains(why), "{extra}\n=> {error}");
        assert_eq!(error.lines().count(), 1, "{error}");
    }
}
