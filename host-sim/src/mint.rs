//! `host-sim token`: mint a token with the gateway config's key (the demo
//! key of `gateway.toml`), for the demo and for trying requests by hand.

use std::path::PathBuf;
use std::process::ExitCode;

use testkit::tokens::{Claims, first_key, mint};

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
    /// The issuer (`iss`); default: the config's issuer.
    #[arg(long)]
    pub iss: Option<String>,
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
    let Some((kid, key)) = first_key(&config) else {
        eprintln!("error: {} has no key", args.config.display());
        return ExitCode::FAILURE;
    };
    let now = runtime::unix_now() as i64;
    let exp = u64::try_from(now.saturating_add(args.exp_in)).unwrap_or(0);
    let mut claims = Claims::new(&args.aud, exp).issued_at(now as u64);
    if let Some(iss) = args.iss.as_ref().or(config.issuer.as_ref()) {
        claims = claims.issuer(iss);
    }
    if let Some(sub) = &args.sub {
        claims = claims.subject(sub);
    }
    println!("{}", mint(Claims::header(kid), claims.to_json(), key));
    ExitCode::SUCCESS
}
