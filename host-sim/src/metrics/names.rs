//! The names a decision's indices stand for, and the label sets of the
//! metrics: read once from the module's tables (`labels`, `routes`) and the
//! contract's outcome table, kept for the life of the process.

use std::path::{Path, PathBuf};

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
    /// The upstream's status, or its class (see [`StatusLabel`]).
    pub status: StatusLabel,
}

/// An upstream's status as a label: a registered status keeps its code
/// (`200`, `404`, `503`), any other is named by its class (`2xx`, `4xx`,
/// `9xx`), so that an upstream that answers with whatever status a request
/// asks for makes no more than one series per class.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub struct StatusLabel(u16);

impl StatusLabel {
    /// The label of status `code`.
    pub fn of(code: u16) -> StatusLabel {
        let registered =
            http::StatusCode::from_u16(code).ok().and_then(|status| status.canonical_reason()).is_some();
        if registered { StatusLabel(code) } else { StatusLabel(code / 100) }
    }
}

impl EncodeLabelValue for StatusLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> std::fmt::Result {
        use std::fmt::Write as _;
        // A code is at least 100 (`http::StatusCode`); below, a class.
        if self.0 >= 100 { write!(encoder, "{}", self.0) } else { write!(encoder, "{}xx", self.0) }
    }
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
    /// The module has no label table: its one issuer is `0` until a
    /// config names it ([`Names::name_issuer_from`]).
    pub(super) unnamed_issuer: bool,
}

/// Why a config cannot name the one issuer of a module without a label
/// table: it is not the config the module was built from, as far as the
/// module shows.
#[derive(Debug, thiserror::Error)]
pub enum IssuerNameError {
    /// The config does not load.
    #[error("{0}: {1}")]
    Load(PathBuf, String),
    /// It has more than one issuer (or none).
    #[error("{0} has {1} issuers, the module one")]
    Issuers(PathBuf, usize),
    /// Its routes are not the module's route table.
    #[error("{0} names other routes than the module's")]
    Routes(PathBuf),
    /// The module's bytes do not hold its issuer's `iss`.
    #[error("the module does not hold {0}'s issuer {1}")]
    NotInModule(PathBuf, String),
}

/// The config a module is built from unless told otherwise (`make worker`).
pub const DEFAULT_CONFIG: &str = "gateway.toml";

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
            names.unnamed_issuer = true;
        }
        Ok(names)
    }

    /// The names of `runtime`'s module (read from `source`), its one issuer
    /// named by `config` when it has no label table
    /// ([`Names::name_issuer_from`]): the config given, which must be the
    /// module's (stderr says why not, and the issuer stays `0`), or else
    /// `gateway.toml` when there is one and it is the module's.
    pub fn of_module(
        runtime: &Runtime,
        source: &runtime::ModuleSource,
        config: Option<&Path>,
    ) -> Result<Names, runtime::GuestError> {
        let mut names = Names::of(runtime)?;
        let default = Path::new(DEFAULT_CONFIG);
        let path = match config {
            Some(path) => path,
            None if names.unnamed_issuer && default.exists() => default,
            None => return Ok(names),
        };
        let routes = runtime.routes()?;
        let named = std::fs::read(source.path())
            .map_err(|e| IssuerNameError::Load(source.path().to_path_buf(), e.to_string()))
            .and_then(|module| names.name_issuer_from(path, &routes, &module));
        if let (Err(e), Some(_)) = (named, config) {
            eprintln!("labels: {e}: the module's one issuer is labelled 0");
        }
        Ok(names)
    }

    /// Names the one issuer of a module without a label table (which the
    /// module labels `0`, ABI.md "Labels") as `config` names it: its `iss`,
    /// or `-` for one that accepts any. Only a config that is the module's
    /// as far as the module shows names it: one issuer, the module's route
    /// table (`routes`, as the `routes` export gives it), and an `iss` the
    /// module's bytes (`module`) hold. A module with a label table is left
    /// as it names itself.
    pub fn name_issuer_from(
        &mut self,
        config: &Path,
        routes: &[(String, String)],
        module: &[u8],
    ) -> Result<(), IssuerNameError> {
        if !self.unnamed_issuer {
            return Ok(());
        }
        let path = || config.to_path_buf();
        let loaded =
            gateway_config::load(config).map_err(|e| IssuerNameError::Load(path(), e.to_string()))?;
        let [issuer] = loaded.issuers.as_slice() else {
            return Err(IssuerNameError::Issuers(path(), loaded.issuers.len()));
        };
        let theirs = loaded.routes.iter().map(|r| (r.aud.as_str(), r.upstream.as_str()));
        if !theirs.eq(routes.iter().map(|(aud, url)| (aud.as_str(), url.as_str()))) {
            return Err(IssuerNameError::Routes(path()));
        }
        let name = match issuer.iss.as_deref() {
            None => "-",
            Some(iss) if module.windows(iss.len().max(1)).any(|w| w == iss.as_bytes()) => iss,
            Some(iss) => return Err(IssuerNameError::NotInModule(path(), iss.to_owned())),
        };
        self.issuers = vec![kept(name)];
        self.unnamed_issuer = false;
        Ok(())
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
