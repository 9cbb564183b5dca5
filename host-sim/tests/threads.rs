//! `serve`'s serving threads (`src/threads.rs`): every request of a
//! connection is served by the one thread it was handed to, connections are
//! spread over the threads, the connection cap counts all threads, and a
//! stop lets them all finish.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use host_sim::body::full;
use host_sim::limits::ClientLimits;
use hyper::Response;

/// Sends a GET on `stream` (kept alive) and returns the answer's body.
fn get(stream: &mut TcpStream) -> String {
    stream.write_all(b"GET / HTTP/1.1\r\nhost: test\r\n\r\n").unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    String::from_utf8(body).unwrap()
}

/// Serves on `threads` threads (each answers its own name) until the
/// returned sender is dropped or sent to.
fn server(
    threads: usize,
    limits: ClientLimits,
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>, std::thread::JoinHandle<()>) {
    let runtime = host_sim::listen::thread_runtime().unwrap();
    let listener = runtime.block_on(host_sim::listen::bind("127.0.0.1:0".parse().unwrap(), "test")).unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = std::thread::spawn(move || {
        // Each answers the name of the thread that runs it.
        let handler = |_request, _remote| async move {
            Response::new(full(std::thread::current().name().unwrap_or("unnamed").to_owned()))
        };
        let stopped = async move {
            let _ = tokio::time::timeout(Duration::from_secs(60), stopped).await;
        };
        runtime
            .block_on(host_sim::threads::serve(
                listener,
                vec![handler; threads],
                limits,
                None,
                Default::default(),
                stopped,
            ))
            .unwrap();
    });
    (addr, stop, serving)
}

#[test]
fn a_connection_stays_on_one_thread_and_connections_are_spread_over_all() {
    let (addr, stop, serving) = server(3, ClientLimits::defaults(1024));
    let mut connections: Vec<TcpStream> = (0..6).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let mut threads_seen = Vec::new();
    for stream in &mut connections {
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let first = get(stream);
        assert!(first.starts_with("serve-"), "answered by a serving thread: {first}");
        for _ in 0..5 {
            assert_eq!(get(stream), first, "every request of a connection on the thread that got it");
        }
        threads_seen.push(first);
    }
    // Each connection went to the thread with the fewest open: 2 each.
    threads_seen.sort();
    assert_eq!(threads_seen, ["serve-0", "serve-0", "serve-1", "serve-1", "serve-2", "serve-2"]);
    drop(connections);
    stop.send(()).unwrap();
    serving.join().unwrap();
}

#[test]
fn the_connection_cap_counts_every_thread() {
    let limits = ClientLimits { max_connections: 2, ..ClientLimits::defaults(1024) };
    let (addr, stop, serving) = server(2, limits);
    let mut held: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(addr).unwrap()).collect();
    for stream in &mut held {
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        assert!(get(stream).starts_with("serve-"));
    }
    // A third connection is past the cap of 2, though each thread has only one.
    let mut third = TcpStream::connect(addr).unwrap();
    third.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut answer = String::new();
    third.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("gateway busy"), "{answer}");
    drop(held);
    stop.send(()).unwrap();
    serving.join().unwrap();
}
