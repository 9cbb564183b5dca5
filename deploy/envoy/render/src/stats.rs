//! The bootstrap's `stats_config` for the gateway filter's metrics: the
//! filter writes each label into the metric's name as `;<label>=<value>`
//! (`deploy/envoy/filter/src/metrics/`), and one `stats_tags` entry per
//! label takes it out again as a tag, which `/stats/prometheus` writes as a
//! Prometheus label. So Envoy's scrape has the same series as `host-sim
//! serve --metrics`: `gateway_decisions_total{outcome,rule,route,issuer}`.

use crate::yaml::{Yaml, map, text};

/// Every label the filter's metric names carry.
pub const TAGS: &[&str] = &["outcome", "rule", "route", "issuer"];

/// The regex that takes `label` out of a name: the first group is removed
/// from the name, the second is the tag's value (up to the next label).
pub fn tag_regex(label: &str) -> String {
    format!("(;{label}=([^;]*))")
}

/// `stats_config` with a tag extractor per label.
pub fn stats_config() -> Yaml {
    let tags = TAGS
        .iter()
        .map(|label| map([("tag_name", text(label)), ("regex", text(&tag_regex(label)))]))
        .collect();
    map([("stats_tags", Yaml::List(tags))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_label_has_a_tag_whose_regex_takes_it_out() {
        let yaml = stats_config().to_yaml();
        for label in TAGS {
            assert!(yaml.contains(&format!("tag_name: \"{label}\"")), "{yaml}");
        }
        assert!(yaml.contains("(;outcome=([^;]*))"), "{yaml}");
    }
}
