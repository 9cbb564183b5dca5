//! The limits `host-sim serve` holds hostile clients and slow upstreams to:
//! the flags with their defaults, the two groups they are handed on in
//! ([`ClientLimits`] to the accept loop, [`ForwardLimits`] to the upstream
//! exchange), and the file-descriptor limit the connection cap is derived from.

use std::time::Duration;

use crate::args::parse_size;

/// Descriptors kept back from client connections: standard streams, the
/// runtime's epoll and wake-up descriptors, the listener, the module's
/// memory image, and connections answered "gateway busy".
pub const RESERVED_DESCRIPTORS: u64 = 64;

/// The highest connection cap derived from the descriptor limit: past it the
/// memory of the connections' buffers, not descriptors, is what runs out.
pub const MAX_DERIVED_CONNECTIONS: u64 = 16_384;

/// The most any connection cap may be (a larger flag value is lowered to it).
pub const MAX_CONNECTIONS: usize = u32::MAX as usize;

/// The limits of `serve`, one flag each (the table in `host-sim/README.md`).
#[derive(Debug, Clone, clap::Args)]
pub struct LimitArgs {
    /// Time a client has to send a complete request head, counted from when
    /// the connection is ready for one (opened, or the previous response
    /// sent); past it the connection is closed.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub head_timeout: Duration,

    /// Time a kept-alive connection may stay silent between requests; past it
    /// the connection is closed.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub idle_timeout: Duration,

    /// Time the request body may stall (no byte arriving) while it is
    /// forwarded; past it the client gets 408.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub body_timeout: Duration,

    /// Largest request body forwarded, in bytes (suffixes KiB and MiB
    /// accepted), counted as it streams; past it the client gets 413.
    #[arg(long, value_parser = parse_size, default_value = "10MiB")]
    pub max_body: u64,

    /// Client connections open at once; past it a new connection is answered
    /// 503 "gateway busy" and closed. Default: (the descriptor limit, raised
    /// to the hard limit, less 64) / 2, at most 16384.
    #[arg(long)]
    pub max_connections: Option<usize>,

    /// Time to open a connection to an upstream; past it the client gets 502.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub upstream_connect_timeout: Duration,

    /// Time for the whole upstream exchange: waiting for a connection,
    /// connecting, sending the request, the response head and its body; past
    /// it the client gets 504 (or, once the response has begun, the
    /// connection is cut).
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub upstream_timeout: Duration,

    /// Connections open to one upstream at once; requests beyond wait for one.
    #[arg(long, default_value_t = 256)]
    pub upstream_max_connections: usize,

    /// Time a request may wait for a connection to its upstream; past it the
    /// client gets 503 "upstream busy".
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub upstream_queue_timeout: Duration,
}

impl LimitArgs {
    /// The limits of the client side, with the connection cap derived from
    /// `descriptors` (the process's soft descriptor limit) unless given.
    pub fn client(&self, descriptors: u64) -> ClientLimits {
        ClientLimits {
            head_timeout: self.head_timeout,
            idle_timeout: self.idle_timeout,
            max_connections: self
                .max_connections
                .unwrap_or_else(|| connections_for(descriptors))
                .clamp(1, MAX_CONNECTIONS),
        }
    }

    /// The limits of forwarding upstream.
    pub fn forward(&self) -> ForwardLimits {
        ForwardLimits {
            body_timeout: self.body_timeout,
            max_body: self.max_body,
            connect_timeout: self.upstream_connect_timeout,
            timeout: self.upstream_timeout,
            max_connections: self.upstream_max_connections.clamp(1, MAX_CONNECTIONS),
            queue_timeout: self.upstream_queue_timeout,
        }
    }
}

/// What the accept loop enforces on client connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimits {
    /// Time to receive a complete request head (hyper's header read timeout).
    pub head_timeout: Duration,
    /// Time a connection with no request under way may receive nothing.
    pub idle_timeout: Duration,
    /// Client connections open at once.
    pub max_connections: usize,
}

impl ClientLimits {
    /// The defaults of the flags, for servers without them (the echo upstream).
    pub fn defaults(descriptors: u64) -> ClientLimits {
        ClientLimits {
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(5),
            max_connections: connections_for(descriptors),
        }
    }
}

/// What an upstream exchange enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardLimits {
    /// Time the request body may stall.
    pub body_timeout: Duration,
    /// Largest request body, in bytes.
    pub max_body: u64,
    /// Time to connect to an upstream.
    pub connect_timeout: Duration,
    /// Time for the whole exchange, response body included.
    pub timeout: Duration,
    /// Connections open to one upstream at once.
    pub max_connections: usize,
    /// Time to wait for a connection to an upstream.
    pub queue_timeout: Duration,
}

/// The default connection cap for a process allowed `descriptors` open
/// files: each client connection may hold one upstream connection too.
pub fn connections_for(descriptors: u64) -> usize {
    let derived = (descriptors.saturating_sub(RESERVED_DESCRIPTORS) / 2).clamp(1, MAX_DERIVED_CONNECTIONS);
    usize::try_from(derived).unwrap_or(1)
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, so that the process
/// may hold as many connections as it is allowed, and returns the soft limit
/// in force afterwards (1024, the usual default, when it cannot be read).
pub fn raise_descriptor_limit() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX).or_else(|_| rlimit::Resource::NOFILE.get_soft()).unwrap_or(1024)
}

/// Parses `10s`, `500ms`, `2m` or `10` (seconds) into a positive duration.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, unit) = if let Some(d) = t.strip_suffix("ms") {
        (d, Duration::from_millis(1))
    } else if let Some(d) = t.strip_suffix('s') {
        (d, Duration::from_secs(1))
    } else if let Some(d) = t.strip_suffix('m') {
        (d, Duration::from_secs(60))
    } else {
        (t.as_str(), Duration::from_secs(1))
    };
    let n: u32 =
        digits.trim().parse().map_err(|_| format!("not a duration: {text:?} (e.g. 10s, 500ms, 2m)"))?;
    match unit.checked_mul(n) {
        Some(d) if !d.is_zero() => Ok(d),
        Some(_) => Err(format!("duration must be positive: {text}")),
        None => Err(format!("duration too large: {text}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn the_connection_cap_follows_the_descriptor_limit() {
        assert_eq!(connections_for(1024), 480);
        assert_eq!(connections_for(128), 32);
        assert_eq!(connections_for(10), 1);
        assert_eq!(connections_for(u64::MAX), 16_384);
    }
}
