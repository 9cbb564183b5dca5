//! `check-config PATH`: validates a gateway config the way the worker's build
//! will, and prints a one-line summary, or a one-line error and exit code 1.
//! `make worker` runs it first, so a bad config is reported without cargo's
//! build-script noise.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: check-config PATH");
        return ExitCode::from(2);
    };
    match gateway_config::load(&path) {
        Ok(config) => {
            let issuer = config.issuer.as_deref().unwrap_or("any issuer");
            println!(
                "config: {}: {} route(s), {} key(s), issuer {issuer}, leeway {} s",
                path.display(),
                config.routes.len(),
                config.keys.len(),
                config.leeway_secs
            );
            if config.has_demo_key() {
                println!("config: WARNING: this build carries the public DEMO key: never deploy it");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
