//! `envoy-jwt-authn`: writes the Envoy bootstrap in which Envoy's native
//! `jwt_authn` filter does the gateway's job, rendered from a gateway config
//! (see `gateway_config::envoy`). The benchmarks and the Envoy tests run it.
//!
//! usage: envoy-jwt-authn [--config FILE] [--listen ADDR] [--admin ADDR]
//!                        [--upstream-override AUD=URL]... [--out FILE]
//!
//! Without `--out` the YAML goes to stdout; with it, the file is created
//! readable by its owner only, since it carries the signing keys.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use gateway_config::envoy::EnvoyOptions;

const USAGE: &str = "usage: envoy-jwt-authn [--config FILE] [--listen ADDR] [--admin ADDR] \
                     [--upstream-override AUD=URL]... [--out FILE]";

/// The parsed command line.
struct Args {
    config: PathBuf,
    out: Option<PathBuf>,
    options: EnvoyOptions,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        config: PathBuf::from("gateway.toml"),
        out: None,
        options: EnvoyOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 10000)),
            admin: None,
            upstream_overrides: Default::default(),
        },
    };
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        let address =
            |text: String| text.parse::<SocketAddr>().map_err(|_| format!("{flag} {text}: not HOST:PORT"));
        match flag.as_str() {
            "--config" => parsed.config = PathBuf::from(value()?),
            "--out" => parsed.out = Some(PathBuf::from(value()?)),
            "--listen" => parsed.options.listen = address(value()?)?,
            "--admin" => parsed.options.admin = Some(address(value()?)?),
            "--upstream-override" => {
                let text = value()?;
                let (aud, url) =
                    text.split_once('=').ok_or_else(|| format!("{flag} {text}: expected AUD=URL"))?;
                parsed.options.upstream_overrides.insert(aud.to_owned(), url.to_owned());
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(parsed)
}

/// Creates `path` (mode 0600 on Unix) and writes `text`.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(text.as_bytes())
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("error: {why}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let config = match gateway_config::load(&args.config) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let yaml = match config.to_envoy_jwt_authn_yaml(&args.options) {
        Ok(yaml) => yaml,
        Err(e) => {
            eprintln!("error: {}: {e}", args.config.display());
            return ExitCode::FAILURE;
        }
    };
    let written = match &args.out {
        Some(path) => write_private(path, &yaml).map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => std::io::stdout().write_all(yaml.as_bytes()).map_err(|e| format!("cannot write stdout: {e}")),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("error: {why}");
            ExitCode::FAILURE
        }
    }
}
