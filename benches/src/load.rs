//! An open-loop HTTP load generator: CONNECTIONS keep-alive connections, each
//! sending its share of RATE requests per second on a fixed schedule for
//! SECONDS, cycling through the request mix. A request whose turn comes while
//! its connection is still busy is sent as soon as the connection is free.
//!
//! Two latencies per request: the round trip (from writing the request to
//! reading the whole response) and the latency from the request's scheduled
//! start, which also counts time spent queued behind a slow response (no
//! coordinated omission) and the sender's own wake-up delay.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant};

use gateway_benches::corpus;
use gateway_benches::http::Client;
use gateway_benches::latency::{Series, histogram};
use hdrhistogram::Histogram;

struct Outcome {
    round_trip: Histogram<u64>,
    scheduled: Histogram<u64>,
    errors: u64,
    statuses: [u64; 6],
}

fn status_slot(status: u16) -> usize {
    match status {
        200 => 0,
        400 => 1,
        401 => 2,
        500..=599 => 4,
        _ => 5,
    }
}

fn connection(
    addr: SocketAddr,
    heads: Vec<Vec<u8>>,
    offset: usize,
    interval: Duration,
    until: Instant,
    start: Instant,
) -> Outcome {
    let mut out = Outcome { round_trip: histogram(), scheduled: histogram(), errors: 0, statuses: [0; 6] };
    let Ok(mut client) = Client::connect(addr) else {
        out.errors += 1;
        return out;
    };
    let mut k: u32 = 0;
    let phase = interval.mul_f64(offset as f64 / 64.0);
    loop {
        let due = start + phase + interval * k;
        if due >= until {
            break;
        }
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
        let head = &heads[(offset + k as usize) % heads.len()];
        let sent = Instant::now();
        match client.round_trip(head) {
            Ok(status) => {
                let done = Instant::now();
                out.round_trip.saturating_record((done - sent).as_nanos() as u64);
                out.scheduled.saturating_record((done - due).as_nanos() as u64);
                out.statuses[status_slot(status)] += 1;
            }
            Err(_) => {
                out.errors += 1;
                match Client::connect(addr) {
                    Ok(c) => client = c,
                    Err(_) => break,
                }
            }
        }
        k += 1;
    }
    out
}

/// `bench-tool load` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// The server, `http://127.0.0.1:PORT` (loopback only).
    url: String,
    /// Requests per second, all connections together.
    rate: f64,
    /// How long to send.
    seconds: f64,
    /// Keep-alive connections, each with one request in flight.
    connections: usize,
    /// The series' group (`http`; the schedule series get `_scheduled`).
    group: String,
    /// The server's name in the series.
    name: String,
    /// The JSON list the two series are appended to.
    file: PathBuf,
}

/// Runs `bench-tool load`: appends two series (round trip; from the
/// scheduled start) to the JSON list in the file.
pub fn run(args: &LoadArgs) -> ExitCode {
    let LoadArgs { url, rate, seconds, connections, group, name, file } = args;
    let (rate, seconds, connections) = (*rate, *seconds, (*connections).max(1));
    let hostport = url.trim_start_matches("http://").trim_end_matches('/');
    let Some(addr) = hostport.to_socket_addrs().ok().and_then(|mut a| a.next()) else {
        eprintln!("error: {url} is not an address");
        return ExitCode::FAILURE;
    };
    if !addr.ip().is_loopback() {
        eprintln!("error: {url}: load goes to loopback only");
        return ExitCode::FAILURE;
    }
    let interval = Duration::from_secs_f64(connections as f64 / rate);
    // The servers read the real clock, so the tokens are minted around it.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let heads = corpus::heads(&corpus::mix_at(now));
    let start = Instant::now() + Duration::from_millis(50);
    let until = start + Duration::from_secs_f64(seconds);
    let threads: Vec<_> = (0..connections)
        .map(|i| {
            let heads = heads.clone();
            thread::spawn(move || connection(addr, heads, i * 64 / connections, interval, until, start))
        })
        .collect();
    let mut round_trip = histogram();
    let mut scheduled = histogram();
    let (mut errors, mut statuses) = (0u64, [0u64; 6]);
    for t in threads {
        let o = t.join().unwrap();
        round_trip.add(&o.round_trip).unwrap();
        scheduled.add(&o.scheduled).unwrap();
        errors += o.errors;
        for (a, b) in statuses.iter_mut().zip(o.statuses) {
            *a += b;
        }
    }
    let elapsed = start.elapsed().as_secs_f64().max(seconds);
    let achieved = round_trip.len() as f64 / elapsed;
    let note = format!(
        "target {rate:.0}/s, achieved {achieved:.0}/s, {connections} connections, {seconds:.0} s; 200: {}, 401: {}, 400: {}, 5xx: {}, other: {}, errors: {errors}",
        statuses[0], statuses[2], statuses[1], statuses[4], statuses[5]
    );
    eprintln!("  {name} @ {rate:.0}/s: {note}");
    let mut all: Vec<Series> =
        std::fs::read(file).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    all.push(Series::of(group, &format!("{name} @ {rate:.0}/s"), &round_trip).with_note(note.clone()));
    all.push(
        Series::of(&format!("{group}_scheduled"), &format!("{name} @ {rate:.0}/s"), &scheduled)
            .with_note(note),
    );
    std::fs::write(file, serde_json::to_string_pretty(&all).unwrap()).unwrap();
    ExitCode::SUCCESS
}
