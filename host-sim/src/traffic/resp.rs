//! A small Redis client: RESP2 over a std `TcpStream`, one command at a
//! time, every call bounded by one deadline (connect, write and each read
//! get what is left of it). Only what counting needs: commands of bulk
//! strings, and replies of any RESP2 type.

use std::io::{BufRead, BufReader, Read, Write};
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

/// One connection to a Redis server.
#[derive(Debug)]
pub struct Connection {
    addr: SocketAddr,
    reader: BufReader<TcpStream>,
}

impl Connection {
    /// Connects to `addr` within `timeout`.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<Connection, RespError> {
        let io = |source| RespError::Io { addr, source };
        let stream = TcpStream::connect_timeout(&addr, timeout.max(Duration::from_millis(1))).map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        Ok(Connection { addr, reader: BufReader::with_capacity(4096, stream) })
    }

    /// Sends `args` as one command and reads its reply, all within `timeout`.
    /// After an `Err` the connection is in an unknown state: drop it.
    pub fn call(&mut self, args: &[&[u8]], timeout: Duration) -> Result<Reply, RespError> {
        let deadline = Instant::now() + timeout;
        let mut command = Vec::with_capacity(64 + args.iter().map(|a| a.len() + 16).sum::<usize>());
        command.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for arg in args {
            command.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            command.extend_from_slice(arg);
            command.extend_from_slice(b"\r\n");
        }
        let addr = self.addr;
        let io = |source| RespError::Io { addr, source };
        let stream = self.reader.get_mut();
        stream.set_write_timeout(Some(left(deadline).map_err(io)?)).map_err(io)?;
        stream.write_all(&command).map_err(io)?;
        self.read_reply(deadline, 0)
    }

    fn read_reply(&mut self, deadline: Instant, depth: usize) -> Result<Reply, RespError> {
        let addr = self.addr;
        let bad = |what| RespError::Protocol { addr, what };
        if depth > 4 {
            return Err(bad("nested too deep"));
        }
        let line = self.read_line(deadline)?;
        let (kind, rest) = line.split_first().ok_or(bad("empty line"))?;
        let text = || String::from_utf8_lossy(rest).into_owned();
        let number =
            || std::str::from_utf8(rest).ok().and_then(|t| t.parse::<i64>().ok()).ok_or(bad("length"));
        match kind {
            b'+' => Ok(Reply::Status(text())),
            b'-' => Ok(Reply::Error(text())),
            b':' => Ok(Reply::Integer(number()?)),
            b'$' => match usize::try_from(number()?) {
                Err(_) => Ok(Reply::Bulk(None)),
                Ok(len) if len > MAX_LEN => Err(bad("bulk string too long")),
                Ok(len) => {
                    let mut data = vec![0; len + 2];
                    self.read_exact(&mut data, deadline)?;
                    if !data.ends_with(b"\r\n") {
                        return Err(bad("bulk string without CRLF"));
                    }
                    data.truncate(len);
                    Ok(Reply::Bulk(Some(data)))
                }
            },
            b'*' => match usize::try_from(number()?) {
                Err(_) => Ok(Reply::Array(None)),
                Ok(len) if len > MAX_LEN => Err(bad("array too long")),
                Ok(len) => {
                    let mut items = Vec::with_capacity(len.min(64));
                    for _ in 0..len {
                        items.push(self.read_reply(deadline, depth + 1)?);
                    }
                    Ok(Reply::Array(Some(items)))
                }
            },
            _ => Err(bad("unknown type")),
        }
    }

    /// One line without its CRLF.
    fn read_line(&mut self, deadline: Instant) -> Result<Vec<u8>, RespError> {
        let addr = self.addr;
        let io = |source| RespError::Io { addr, source };
        let mut line = Vec::with_capacity(32);
        loop {
            if self.reader.buffer().is_empty() {
                self.reader.get_ref().set_read_timeout(Some(left(deadline).map_err(io)?)).map_err(io)?;
            }
            let available = self.reader.fill_buf().map_err(io)?;
            if available.is_empty() {
                return Err(io(std::io::ErrorKind::UnexpectedEof.into()));
            }
            match available.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    line.extend_from_slice(&available[..end]);
                    self.reader.consume(end + 1);
                    if line.pop() != Some(b'\r') {
                        return Err(RespError::Protocol { addr, what: "line without CR" });
                    }
                    return Ok(line);
                }
                None => {
                    let n = available.len();
                    line.extend_from_slice(available);
                    self.reader.consume(n);
                    if line.len() > 256 {
                        return Err(RespError::Protocol { addr, what: "line too long" });
                    }
                }
            }
        }
    }

    fn read_exact(&mut self, buf: &mut [u8], deadline: Instant) -> Result<(), RespError> {
        let addr = self.addr;
        let io = |source| RespError::Io { addr, source };
        let mut filled = 0;
        while filled < buf.len() {
            if self.reader.buffer().is_empty() {
                self.reader.get_ref().set_read_timeout(Some(left(deadline).map_err(io)?)).map_err(io)?;
            }
            match self.reader.read(&mut buf[filled..]).map_err(io)? {
                0 => return Err(io(std::io::ErrorKind::UnexpectedEof.into())),
                n => filled += n,
            }
        }
        Ok(())
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
    fn garbage_is_a_protocol_error() {
        let addr = server(Some(b"?what\r\n"));
        let mut c = Connection::connect(addr, Duration::from_secs(5)).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(c.call(&[b"PING"], Duration::from_secs(5)), Err(RespError::Protocol { .. })));
    }
}
