//! `host-sim token`: mint a token with the gateway config's key (the demo
//! key of `gateway.toml`), for the demo and for trying requests by hand,
//! with the scopes and claims the config's rules look for.

use std::path::PathBuf;
use std::process::ExitCode;

use testkit::tokens::{Claims, mint};

/// `host-sim token` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct TokenArgs {
    /// The gateway config whose first key signs the token.
    #[arg(long, default_value = "gateway.toml")]
    pub config: PathBuf,
    /// The audience (`aud`).
    #[arg(long)]
    pub aud: String,
    /// The subject (`sub`).
    #[arg(long)]
    pub sub: Option<String>,
    /// Seconds from now until `exp` (negative: already expired).
    #[arg(long, default_value_t = 600, allow_negative_numbers = true)]
    pub exp_in: i64,
    /// The issuer (`iss`), whose first HS256 key signs; default: the config's first issuer.
    #[arg(long)]
    pub iss: Option<String>,
    /// Scopes, space-separated (the `scope` claim).
    #[arg(long)]
    pub scope: Option<String>,
    /// Another claim, `NAME=JSON` (`tenant="acme"`, `roles=["ops"]`, `tier=3`); repeatable.
    #[arg(long = "claim", value_name = "NAME=JSON")]
    pub claims: Vec<String>,
}

/// Runs `host-sim token`: prints the token.
pub fn run(args: &TokenArgs) -> ExitCode {
    let config = match gateway_config::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let issuer = match &args.iss {
        Some(iss) => {
            config.issuers.iter().find(|i| i.iss.as_deref() == Some(iss.as_str())).or(config.issuers.first())
        }
        None => config.issuers.first(),
    };
    let Some(key) = issuer.and_then(|i| i.keys.first()) else {
        eprintln!("error: {}: the issuer has no HS256 key to sign with", args.config.display());
        return ExitCode::FAILURE;
    };
    let (kid, key) = (key.kid.as_str(), key.secret());
    let now = runtime::unix_now() as i64;
    let exp = u64::try_from(now.saturating_add(args.exp_in)).unwrap_or(0);
    let mut claims = Claims::new(&args.aud, exp).issued_at(now as u64);
    if let Some(iss) = args.iss.as_deref().or(issuer.and_then(|i| i.iss.as_deref())) {
        claims = claims.issuer(iss);
    }
    if let Some(sub) = &args.sub {
        claims = claims.subject(sub);
    }
    if let Some(scope) = &args.scope {
        claims = claims.claim("scope", scope.as_str().into());
    }
    for claim in &args.claims {
        let parsed =
            claim.split_once('=').and_then(|(name, json)| Some((name, serde_json::from_str(json).ok()?)));
        let Some((name, value)) = parsed else {
            eprintln!(
                "error: --claim {claim:?}: expected NAME=JSON, such as tenant=\"acme\" or roles=[\"ops\"]"
            );
            return ExitCode::FAILURE;
        };
        claims = claims.claim(name, value);
    }
    println!("{}", mint(Claims::header(kid), claims.to_json(), key));
    ExitCode::SUCCESS
}
