//! The command line the Envoy renderers share (`envoy-jwt-authn`,
//! `envoy-filter`): the config, the listener, the admin address, upstream
//! overrides, where the YAML goes, and flags of a renderer's own.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderArgs {
    /// `--config FILE` (default `gateway.toml`).
    pub config: PathBuf,
    /// `--out FILE`; stdout without it.
    pub out: Option<PathBuf>,
    /// `--listen ADDR` (default 127.0.0.1:10000).
    pub listen: SocketAddr,
    /// `--admin ADDR`; no admin interface without it.
    pub admin: Option<SocketAddr>,
    /// `--upstream-override KEY=URL`, repeatable.
    pub upstream_overrides: BTreeMap<String, String>,
    /// The renderer's own flags, by name, with their values in order (a
    /// flag may be repeated).
    pub own: BTreeMap<String, Vec<String>>,
}

impl RenderArgs {
    /// The last value of the renderer's own flag `flag`, if it was given.
    pub fn own_value(&self, flag: &str) -> Option<&str> {
        self.own.get(flag).and_then(|values| values.last()).map(String::as_str)
    }

    /// Every value of the renderer's own flag `flag`, in order.
    pub fn own_values(&self, flag: &str) -> &[String] {
        self.own.get(flag).map_or(&[], Vec::as_slice)
    }
}

/// Parses `args`; `own_flags` are the renderer's own flags, each taking a
/// value. An `Err` with an empty message asks for the usage (`--help`).
pub fn parse(mut args: impl Iterator<Item = String>, own_flags: &[&str]) -> Result<RenderArgs, String> {
    let mut parsed = RenderArgs {
        config: PathBuf::from("gateway.toml"),
        out: None,
        listen: SocketAddr::from(([127, 0, 0, 1], 10000)),
        admin: None,
        upstream_overrides: BTreeMap::new(),
        own: BTreeMap::new(),
    };
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        let address =
            |text: String| text.parse::<SocketAddr>().map_err(|_| format!("{flag} {text}: not HOST:PORT"));
        match flag.as_str() {
            "--config" => parsed.config = PathBuf::from(value()?),
            "--out" => parsed.out = Some(PathBuf::from(value()?)),
            "--listen" => parsed.listen = address(value()?)?,
            "--admin" => parsed.admin = Some(address(value()?)?),
            "--upstream-override" => {
                let text = value()?;
                let (key, url) =
                    text.split_once('=').ok_or_else(|| format!("{flag} {text}: expected KEY=URL"))?;
                parsed.upstream_overrides.insert(key.to_owned(), url.to_owned());
            }
            "-h" | "--help" => return Err(String::new()),
            own if own_flags.contains(&own) => {
                let text = value()?;
                parsed.own.entry(flag).or_default().push(text);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(parsed)
}

/// Writes `text` to `out`, or to stdout without one. With `private`, the
/// file is created readable by its owner only (on Unix): it carries keys.
pub fn write_output(out: Option<&Path>, text: &str, private: bool) -> Result<(), String> {
    let Some(path) = out else {
        return std::io::stdout().write_all(text.as_bytes()).map_err(|e| format!("cannot write stdout: {e}"));
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    options
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Runs a renderer's `main`: parses the command line, loads the config,
/// renders it with `render`, and writes the result; errors and the usage go
/// to stderr with exit status 1 (2 for a bad command line).
pub fn main(
    usage: &str,
    own_flags: &[&str],
    private: bool,
    render: impl FnOnce(&gateway_config::GatewayConfig, &RenderArgs) -> Result<String, String>,
) -> std::process::ExitCode {
    let args = match parse(std::env::args().skip(1), own_flags) {
        Ok(args) => args,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("error: {why}");
            }
            eprintln!("{usage}");
            return std::process::ExitCode::from(2);
        }
    };
    let written = gateway_config::load(&args.config)
        .map_err(|e| e.to_string())
        .and_then(|config| render(&config, &args).map_err(|e| format!("{}: {e}", args.config.display())))
        .and_then(|yaml| write_output(args.out.as_deref(), &yaml, private));
    match written {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("error: {why}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Result<RenderArgs, String> {
        parse(text.split_whitespace().map(str::to_owned), &["--module", "--key-origin"])
    }

    #[test]
    fn parses_shared_and_own_flags() {
        let parsed = args(
            "--config c.toml --listen 127.0.0.1:1 --admin [::1]:2 --upstream-override a=http://h \
             --module m.wasm --key-origin https://a --out o.yaml --key-origin https://b",
        )
        .expect("parses");
        assert_eq!(parsed.config, PathBuf::from("c.toml"));
        assert_eq!(parsed.listen.port(), 1);
        assert_eq!(parsed.admin.map(|a| a.port()), Some(2));
        assert_eq!(parsed.upstream_overrides.get("a").map(String::as_str), Some("http://h"));
        assert_eq!(parsed.own_value("--module"), Some("m.wasm"));
        assert_eq!(parsed.own_values("--key-origin"), ["https://a", "https://b"]);
        assert_eq!(parsed.own_value("--key-origin"), Some("https://b"));
        assert!(parsed.own_values("--other").is_empty());
        assert_eq!(parsed.out, Some(PathBuf::from("o.yaml")));
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        assert_eq!(args("--help"), Err(String::new()));
        assert!(args("--bogus x").is_err());
        assert!(args("--listen nowhere").is_err());
        assert!(args("--upstream-override novalue").is_err());
        assert!(args("--module").is_err());
    }
}
