//! A small Redis client: RESP2, one command at a time, every call bounded
//! by a deadline. [`AsyncConnection`] (tokio) is what `serve` counts with;
//! [`Connection`] (blocking std `TcpStream`) is for tools and tests. Only
//! what counting needs: commands of bulk strings, replies of any RESP2
//! type, read by one parser ([`parse`]).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`.
    Status(String),
    /// `:42`.
    Integer(i64),
    /// `$3\r\nabc`, or `$-1` (None).
    Bulk(Option<Vec<u8>>),
    /// `*2\r\n...`, or `*-1` (None).
    Array(Option<Vec<Reply>>),
    /// `-ERR ...`: the server refused the command (the connection is fine).
    Error(String),
}

/// Why a call got no reply.
#[derive(Debug, thiserror::Error)]
pub enum RespError {
    /// Connecting, writing or reading failed, or ran past the deadline.
    #[error("redis at {addr}: {source}")]
    Io {
        /// The server.
        addr: SocketAddr,
        /// The operating system's error (`TimedOut`/`WouldBlock` for the deadline).
        #[source]
        source: std::io::Error,
    },
    /// The server sent something that is not RESP2.
    #[error("redis at {addr}: not a RESP reply ({what})")]
    Protocol {
        /// The server.
        addr: SocketAddr,
        /// What was wrong.
        what: &'static str,
    },
}

/// Largest bulk string or array a reply may hold (counting replies are tiny).
const MAX_LEN: usize = 1 << 20;

/// The bytes of one command: an array of bulk strings.
pub fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut command = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    command.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        command.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        command.extend_from_slice(arg);
        command.extend_from_slice(b"\r\n");
    }
    command
}

/// Reads one reply from the start of `buf`: the reply and the bytes it
/// took, or None when `buf` does not hold all of it yet.
pub fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>, &'static str> {
    parse_at(buf, 0)
}

fn parse_at(buf: &[u8], depth: usize) -> Result<Option<(Reply, usize)>, &'static str> {
    if depth > 4 {
        return Err("nested too deep");
    }
    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() > 256 { Err("line too long") } else { Ok(None) };
    };
    let line = buf[..end].strip_suffix(b"\r").ok_or("line without CR")?;
    let taken = end + 1;
    let (kind, rest) = line.split_first().ok_or("empty line")?;
    let text = || String::from_utf8_lossy(rest).into_owned();
    let number = || std::str::from_utf8(rest).ok().and_then(|t| t.parse::<i64>().ok()).ok_or("length");
    match kind {
        b'+' => Ok(Some((Reply::Status(text()), taken))),
        b'-' => Ok(Some((Reply::Error(text()), taken))),
        b':' => Ok(Some((Reply::Integer(number()?), taken))),
        b'$' => match usize::try_from(number()?) {
            Err(_) => Ok(Some((Reply::Bulk(None), taken))),
            Ok(len) if len > MAX_LEN => Err("bulk string too long"),
            Ok(len) => match buf.get(taken..taken + len + 2) {
                None => Ok(None),
                Some(data) if data.ends_with(b"\r\n") => {
                    Ok(Some((Reply::Bulk(Some(data[..len].to_vec())), taken + len + 2)))
                }
                Some(_) => Err("bulk string without CRLF"),
            },
        },
        b'*' => match usize::try_from(number()?) {
            Err(_) => Ok(Some((Reply::Array(None), taken))),
            Ok(len) if len > MAX_LEN => Err("array too long"),
            Ok(len) => {
                let (mut items, mut at) = (Vec::with_capacity(len.min(64)), taken);
                for _ in 0..len {
                    let Some((item, used)) = parse_at(&buf[at..], depth + 1)? else { return Ok(None) };
                    items.push(item);
                    at += used;
                }
                Ok(Some((Reply::Array(Some(items)), at)))
            }
        },
        _ => Err("unknown type"),
    }
}

/// The first whole reply in `buf`, taken out of it; `None` until one has
/// arrived whole.
fn take_reply(buf: &mut Vec<u8>, addr: SocketAddr) -> Result<Option<Reply>, RespError> {
    match parse(buf) {
        Err(what) => Err(RespError::Protocol { addr, what }),
        Ok(Some((reply, used))) => {
            buf.drain(..used);
            Ok(Some(reply))
        }
        Ok(None) => Ok(None),
    }
}

/// One blocking connection to a Redis server (for `eval`'s tools and the tests).
#[derive(Debug)]
pub struct Connection {
    addr: SocketAddr,
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Connection {
    /// Connects to `addr` within `timeout`.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<Connection, RespError> {
        let io = |source| RespError::Io { addr, source };
        let stream = TcpStream::connect_timeout(&addr, timeout.max(Duration::from_millis(1))).map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        Ok(Connection { addr, stream, buf: Vec::with_capacity(512) })
    }

    /// Sends `args` as one command and reads its reply, all within `timeout`.
    /// After an `Err` the connection is in an unknown state: drop it.
    pub fn call(&mut self, args: &[&[u8]], timeout: Duration) -> Result<Reply, RespError> {
        let deadline = Instant::now() + timeout;
        let addr = self.addr;
        let io = |source| RespError::Io { addr, source };
        self.stream.set_write_timeout(Some(left(deadline).map_err(io)?)).map_err(io)?;
        self.stream.write_all(&command(args)).map_err(io)?;
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(reply) = take_reply(&mut self.buf, addr)? {
                return Ok(reply);
            }
            self.stream.set_read_timeout(Some(left(deadline).map_err(io)?)).map_err(io)?;
            match self.stream.read(&mut chunk).map_err(io)? {
                0 => return Err(io(std::io::ErrorKind::UnexpectedEof.into())),
                n => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// One connection to a Redis server for a serving thread's tasks: the
/// thread serves its other connections while a call waits for its reply.
#[derive(Debug)]
pub struct AsyncConnection {
    addr: SocketAddr,
    stream: tokio::net::TcpStream,
    buf: Vec<u8>,
}

impl AsyncConnection {
    /// Connects to `addr` before `deadline`.
    pub async fn connect(
        addr: SocketAddr,
        deadline: tokio::time::Instant,
    ) -> Result<AsyncConnection, RespError> {
        let io = |source| RespError::Io { addr, source };
        let stream = tokio::time::timeout_at(deadline, tokio::net::TcpStream::connect(addr))
            .await
            .map_err(|_| io(std::io::ErrorKind::TimedOut.into()))?
            .map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        Ok(AsyncConnection { addr, stream, buf: Vec::with_capacity(512) })
    }

    /// Sends `args` as one command and reads its reply before `deadline`.
    /// After an `Err` the connection is in an unknown state: drop it.
    pub async fn call(&mut self, args: &[&[u8]], deadline: tokio::time::Instant) -> Result<Reply, RespError> {
        let addr = self.addr;
        match tokio::time::timeout_at(deadline, self.exchange(args)).await {
            Ok(result) => result,
            Err(_) => Err(RespError::Io { addr, source: std::io::ErrorKind::TimedOut.into() }),
        }
    }

    async fn exchange(&mut self, args: &[&[u8]]) -> Result<Reply, RespError> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let addr = self.addr;
        let io = |source| RespError::Io { addr, source };
        self.stream.write_all(&command(args)).await.map_err(io)?;
        loop {
            if let Some(reply) = take_reply(&mut self.buf, addr)? {
                return Ok(reply);
            }
            if self.stream.read_buf(&mut self.buf).await.map_err(io)? == 0 {
                return Err(io(std::io::ErrorKind::UnexpectedEof.into()));
            }
        }
    }
}

/// What is left until `deadline` (an error once it has passed).
fn left(deadline: Instant) -> std::io::Result<Duration> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(d) if !d.is_zero() => Ok(d),
        _ => Err(std::io::ErrorKind::TimedOut.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that answers each command with `reply` (None: never answers).
    fn server(reply: Option<&'static [u8]>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("addr: {e}"));
        std::thread::spawn(move || {
            if let Ok((mut stream, _)) = listener.accept() {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0; 4096];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Some(reply) = reply {
                        let _ = stream.write_all(reply);
                    }
                }
            }
        });
        addr
    }

    #[test]
    fn reads_every_reply_type() {
        let addr = server(Some(b"*5\r\n+OK\r\n:-3\r\n$3\r\nabc\r\n$-1\r\n*1\r\n-ERR no\r\n"));
        let mut c = Connection::connect(addr, Duration::from_secs(5)).unwrap_or_else(|e| panic!("{e}"));
        let reply = c.call(&[b"PING"], Duration::from_secs(5)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            reply,
            Reply::Array(Some(vec![
                Reply::Status("OK".into()),
                Reply::Integer(-3),
                Reply::Bulk(Some(b"abc".to_vec())),
                Reply::Bulk(None),
                Reply::Array(Some(vec![Reply::Error("ERR no".into())])),
            ]))
        );
    }

    #[test]
    fn a_silent_server_is_a_timeout_not_a_hang() {
        let addr = server(None);
        let mut c = Connection::connect(addr, Duration::from_secs(5)).unwrap_or_else(|e| panic!("{e}"));
        match c.call(&[b"PING"], Duration::from_millis(30)) {
            Err(RespError::Io { source, .. }) => assert!(
                matches!(source.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
                "{source}"
            ),
            other => panic!("expected a timeout, got {other:?}"),
        }
    }

    #[test]
    fn a_reply_split_anywhere_waits_for_its_rest() {
        let whole: &[u8] = b"*2\r\n*5\r\n:1\r\n:1765000000600001\r\n:19\r\n:1\r\n:0\r\n$3\r\nabc\r\n";
        for cut in 0..whole.len() {
            assert_eq!(parse(&whole[..cut]), Ok(None), "cut at {cut}");
        }
        let (reply, used) = parse(whole).ok().flatten().unwrap_or_else(|| panic!("a whole reply"));
        assert_eq!(used, whole.len());
        assert!(matches!(reply, Reply::Array(Some(items)) if items.len() == 2));
        assert_eq!(parse(b"$2\r\nabXY"), Err("bulk string without CRLF"));
        assert_eq!(parse(b"+OK\n"), Err("line without CR"));
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        let addr = server(Some(b"?what\r\n"));
        let mut c = Connection::connect(addr, Duration::from_secs(5)).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(c.call(&[b"PING"], Duration::from_secs(5)), Err(RespError::Protocol { .. })));
    }
}
