//! The names a decision's indices stand for, and the label sets of the
//! metrics: read once from the module's tables (`labels`, `routes`) and the
//! contract's outcome table, kept for the life of the process.

use contract::outcome::{self, LabelName, Labels};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use runtime::Runtime;

/// What a decision is counted by: the outcome's name, and the names of
/// the rule, route and issuer (empty when none applied).
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    /// `forwarded`, `public`, `preflight`, or why the request was turned away.
    pub outcome: Value,
    /// The rule that applied.
    pub rule: Value,
    /// The route the request went, or would have gone, to.
    pub route: Value,
    /// The issuer whose token was verified.
    pub issuer: Value,
}

/// An issuer's key fetches are counted by its name.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IssuerLabel {
    /// The issuer's `iss` (`-`: it accepts any), or its index without a label table.
    pub issuer: Value,
}

/// An upstream's answers are counted by route and status.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamLabels {
    /// The route the request was forwarded on.
    pub route: Value,
    /// The upstream's status.
    pub status: u16,
}

/// Forwards that got no upstream answer are counted by route and by the
/// host's own answer.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamFailureLabels {
    /// The route the request was forwarded on.
    pub route: Value,
    /// The host's answer: `upstream_unavailable`, `upstream_timed_out`, ...
    pub outcome: Value,
}

/// An upstream's latency is measured per route.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabel {
    /// The route the request was forwarded on.
    pub route: Value,
}

/// The names the module's indices stand for, read once from the module.
#[derive(Debug, Clone, Default)]
pub struct Names {
    pub(super) rules: Vec<&'static str>,
    pub(super) routes: Vec<&'static str>,
    pub(super) issuers: Vec<&'static str>,
}

/// A name kept for the life of the process. Called once per name of the
/// module's tables, at start.
pub(super) fn kept(name: &str) -> &'static str {
    Box::leak(name.to_owned().into_boxed_str())
}

/// A label value, escaped as the text format wants it (the encoder
/// writes values as they are): `\`, `"` and a line end escaped.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub struct Value(pub &'static str);

impl EncodeLabelValue for Value {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> std::fmt::Result {
        use std::fmt::Write as _;
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

impl Names {
    /// The names of `runtime`'s module: its routes' audiences, and its
    /// rules and issuers from its label table (a module without one has a
    /// single issuer, `0`).
    pub fn of(runtime: &Runtime) -> Result<Names, runtime::GuestError> {
        let routes = runtime.routes()?.iter().map(|(aud, _)| kept(aud)).collect();
        let table = runtime.labels()?;
        let mut names = Names { routes, ..Names::default() };
        for name in outcome::label_names(&table) {
            match name {
                LabelName::Rule(name) => names.rules.push(kept(name)),
                LabelName::Issuer(name) => names.issuers.push(kept(name)),
            }
        }
        if table.is_empty() {
            names.issuers.push("0");
        }
        Ok(names)
    }

    /// The labels a decision with `labels` is counted by.
    pub fn decision(&self, labels: &Labels) -> DecisionLabels {
        DecisionLabels {
            outcome: Value(outcome::name(labels.outcome).unwrap_or("unknown")),
            rule: Value(pick(&self.rules, labels.rule.map(usize::from))),
            route: Value(self.route(labels.route)),
            issuer: Value(pick(&self.issuers, labels.issuer.map(usize::from))),
        }
    }

    /// The name of route `index`, empty for none.
    pub fn route(&self, index: Option<u16>) -> &'static str {
        pick(&self.routes, index.map(usize::from))
    }

    /// The name of issuer `index`.
    pub fn issuer(&self, index: u8) -> &'static str {
        pick(&self.issuers, Some(usize::from(index)))
    }
}

/// The name at `index`, empty for none, `unknown` past the table's end.
fn pick(names: &[&'static str], index: Option<usize>) -> &'static str {
    index.map_or("", |i| names.get(i).copied().unwrap_or("unknown"))
}
