//! Helpers shared by the integration tests: the real module built from the
//! test fixture (`testkit/fixture.toml`, never the user's `gateway.toml`),
//! small WAT modules, the fixture config, child processes that stop by themselves,
//! and a minimal HTTP/1.1 client for loopback.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use runtime::Runtime;
use runtime::{EngineOptions, ModuleSource};

/// A clock well inside the test tokens' validity.
pub const NOW: u64 = 1_800_000_000;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The fixture's configuration file.
pub fn fixture_toml() -> PathBuf {
    root().join("testkit/fixture.toml")
}

/// `target/fixture/gateway.wasm`, built from the fixture by `make fixture`.
pub fn gateway_wasm() -> PathBuf {
    let path = root().join("target/fixture/gateway.wasm");
    assert!(
        path.exists(),
        "{} is missing: build it with `make fixture` before running the host-sim tests",
        path.display()
    );
    path
}

/// The fixture config compiled into that module.
pub fn config() -> gateway_config::GatewayConfig {
    gateway_config::load(&fixture_toml()).expect("testkit/fixture.toml loads")
}

/// Engine options for tests that are not about the deadline.
pub fn relaxed() -> EngineOptions {
    // A generous CPU deadline: on a loaded two-core machine a request's CPU
    // time can pass the production 2 ms (cache misses, frequency scaling).
    EngineOptions { deadline_ms: 100.0, ..EngineOptions::default() }
}

/// A runtime over the real module.
pub fn runtime() -> Runtime {
    Runtime::load(&relaxed(), &ModuleSource::Wasm(gateway_wasm()), 4).expect("the real module loads")
}

/// A scratch directory unique to this test process and `name`.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("host-sim-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `tests/fixtures/NAME.wat`.
pub fn fixture_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(format!("{name}.wat"))
}

/// Compiles `tests/fixtures/NAME.wat` into a `.wasm` file and returns its path.
pub fn fixture(name: &str) -> PathBuf {
    let source = fixture_source(name);
    let bytes = wat::parse_file(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
    let path = scratch("fixtures").join(format!("{name}.wasm"));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The host-sim binary.
pub fn bin() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_host-sim"));
    command.current_dir(root());
    command
}

/// A child process killed (and reaped) when dropped.
pub struct Guard {
    pub child: Child,
    pub addr: SocketAddr,
    pub stderr: Option<std::thread::JoinHandle<String>>,
}

impl Guard {
    /// Sends SIGTERM and waits for the process to stop by itself (at most 15 s).
    pub fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        for _ in 0..300 {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = self.stderr.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
                return (status, log);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("process {pid} did not stop after SIGTERM");
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `host-sim ARGS` (a server), waits for its `listening on http://ADDR` line.
pub fn start(args: &[&str]) -> Guard {
    let mut command = bin();
    command.args(args);
    start_command(command)
}

/// Starts `command` (a server, host-sim or a wrapper that execs it), waits
/// for its `listening on http://ADDR` line.
pub fn start_command(mut command: Command) -> Guard {
    let args = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn host-sim");
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        for _ in lines {}
    });
    let mut guard = Guard { child, addr: "127.0.0.1:1".parse().unwrap(), stderr: Some(stderr) };
    let line = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(line) => line,
        Err(_) => {
            let _ = guard.child.kill();
            let log = guard.stderr.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
            panic!("{args} printed no address: {log}");
        }
    };
    let addr = line
        .rsplit("http://")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("address in {line:?}"));
    guard.addr = addr;
    guard
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }
}

/// Sends `head` (with `Connection: close` added by the caller) and `body` to
/// `addr`; reads the whole response. Bounded by a 20 s read timeout.
pub fn send(addr: SocketAddr, head: &str, body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read response");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head end in {text:?}"));
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect::<Vec<_>>();
    let chunked =
        headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_owned() };
    Reply { status, headers, body }
}

fn dechunk(mut text: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        text = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// A request head with `Host`, `Connection: close`, optional token and extra lines.
pub fn head(method: &str, target: &str, token: Option<&str>, extra: &[&str]) -> String {
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: gateway.test\r\nConnection: close\r\n");
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for line in extra {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}
