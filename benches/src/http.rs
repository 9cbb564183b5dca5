//! Minimal HTTP/1.1 over `std::net`, enough for the benchmarks: a keep-alive
//! client that sends a request head and reads one response, and the
//! "microservice": a server that answers every request with the worker's
//! decision, computed natively by `worker::handle`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;

use worker::config::COMPILED;

/// A keep-alive connection.
pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The value of header `name` in `head`, case-insensitive.
fn header<'h>(head: &'h [u8], name: &str) -> Option<&'h [u8]> {
    head.split(|&b| b == b'\n').skip(1).find_map(|line| {
        let colon = line.iter().position(|&b| b == b':')?;
        line[..colon].eq_ignore_ascii_case(name.as_bytes()).then(|| line[colon + 1..].trim_ascii())
    })
}

impl Client {
    /// Connects to `addr` (loopback only), with Nagle off.
    pub fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Client { stream, buf: Vec::with_capacity(4096) })
    }

    /// Sends `head` and reads the response; returns its status.
    pub fn round_trip(&mut self, head: &[u8]) -> io::Result<u16> {
        self.stream.write_all(head)?;
        self.read_response()
    }

    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    fn read_response(&mut self) -> io::Result<u16> {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            self.fill()?;
        };
        let head = &self.buf[..head_end];
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "bad response head");
        let status: u16 = std::str::from_utf8(head.get(9..12).ok_or_else(bad)?)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)?;
        let chunked = header(head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case(b"chunked"));
        let length = header(head, "content-length")
            .and_then(|v| std::str::from_utf8(v).ok()?.parse::<usize>().ok())
            .unwrap_or(0);
        self.buf.drain(..head_end);
        if chunked {
            loop {
                let line_end = loop {
                    if let Some(i) = find(&self.buf, b"\r\n") {
                        break i;
                    }
                    self.fill()?;
                };
                let size = std::str::from_utf8(&self.buf[..line_end])
                    .ok()
                    .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok())
                    .ok_or_else(bad)?;
                let total = line_end + 2 + size + 2;
                while self.buf.len() < total {
                    self.fill()?;
                }
                self.buf.drain(..total);
                if size == 0 {
                    break;
                }
            }
        } else {
            while self.buf.len() < length {
                self.fill()?;
            }
            self.buf.drain(..length);
        }
        Ok(status)
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    }
}

fn serve_connection(mut stream: TcpStream, now: f64) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(4096);
    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    let mut response = Vec::with_capacity(1024);
    let mut chunk = [0u8; 8192];
    loop {
        let end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        // The context line a host writes before the head (`worker/ABI.md`).
        let input = [b"http 127.0.0.1\n".as_slice(), &buf[..end]].concat();
        let answer = worker::handle(&input, now, &COMPILED, &mut scratch);
        response.clear();
        let _ = write!(
            response,
            "HTTP/1.1 {} {}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n",
            answer.status,
            reason(answer.status),
            answer.output.len()
        );
        response.extend_from_slice(answer.output);
        stream.write_all(&response)?;
        buf.drain(..end);
    }
}

/// Starts the microservice on an ephemeral loopback port: one thread per
/// connection, keep-alive, the decision as a `text/plain` body. It runs until
/// the process ends.
pub fn spawn_microservice(now: f64) -> io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            thread::spawn(move || serve_connection(stream, now));
        }
    });
    Ok(addr)
}
