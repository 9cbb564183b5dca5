//! Counting in Redis (`--limits redis://HOST:PORT`), so that several
//! gateways share one budget: all of a decision's buckets in one call of
//! one server-side script ([`SCRIPT`], GCRA as `contract::limits::gcra`),
//! atomic on the server, on the server's clock (`TIME`), so that gateways
//! whose clocks differ still count alike. The script is called by its SHA
//! (`EVALSHA`, learnt from `SCRIPT LOAD` when a connection opens), and
//! sent whole (`EVAL`) when the server answers `NOSCRIPT` (restarted, or
//! its scripts flushed). Each key expires when its TAT passes.
//!
//! Each serving thread has a connection of its own ([`RedisStore::for_thread`]),
//! opened on first use and dropped on any failure; after a failure the
//! thread waits [`RECONNECT_AFTER`] before connecting again, so that a
//! server that is down costs a request nothing but the check.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use contract::limits::{Limit, Verdict};

use super::resp::{Connection, Reply, RespError};

/// The counting script.
pub const SCRIPT: &str = include_str!("gcra.lua");

/// How long a thread waits after a failed call before connecting again.
pub const RECONNECT_AFTER: Duration = Duration::from_millis(200);

/// Why a count got no verdict from Redis.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No connection, or the call failed or ran past its timeout.
    #[error(transparent)]
    Unreachable(#[from] RespError),
    /// A recent call failed: not trying again yet.
    #[error("redis at {0} failed recently; reconnecting shortly")]
    Waiting(SocketAddr),
    /// The server answered with an error.
    #[error("redis at {addr} refused the script: {message}")]
    Refused {
        /// The server.
        addr: SocketAddr,
        /// Its error.
        message: String,
    },
    /// The script's reply is not what it returns.
    #[error("redis at {0}: unexpected reply to the script")]
    Reply(SocketAddr),
}

/// One thread's way to count in Redis: every count, from connecting to the
/// reply, within one timeout.
#[derive(Debug)]
pub struct RedisStore {
    addr: SocketAddr,
    timeout: Duration,
    /// The script's SHA, learnt once for the process.
    sha: Arc<OnceLock<String>>,
    /// This thread's connection, or when to try again after a failure.
    connection: Mutex<Result<Option<Connection>, Instant>>,
}

impl RedisStore {
    /// A store at `addr` whose every call is bounded by `timeout`.
    pub fn new(addr: SocketAddr, timeout: Duration) -> RedisStore {
        RedisStore { addr, timeout, sha: Arc::default(), connection: Mutex::new(Ok(None)) }
    }

    /// The same server, with a connection of its own.
    pub fn for_thread(&self) -> RedisStore {
        RedisStore {
            addr: self.addr,
            timeout: self.timeout,
            sha: Arc::clone(&self.sha),
            connection: Mutex::new(Ok(None)),
        }
    }

    /// The server.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Counts one request in every bucket (`(key, limit)`, in order) at
    /// `now_us` (None: the server's clock), stopping at the first that
    /// refuses: one verdict per bucket counted.
    pub fn count(
        &self,
        buckets: &[(&str, Limit<'_>)],
        now_us: Option<u64>,
    ) -> Result<Vec<Verdict>, StoreError> {
        // One deadline for the whole count: connecting, loading the script, the call.
        let deadline = Instant::now() + self.timeout;
        let mut slot = self.connection.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(retry) = &*slot
            && Instant::now() < *retry
        {
            return Err(StoreError::Waiting(self.addr));
        }
        if !matches!(&*slot, Ok(Some(_))) {
            match Connection::connect(self.addr, self.timeout) {
                Ok(connection) => *slot = Ok(Some(connection)),
                Err(e) => {
                    *slot = Err(Instant::now() + RECONNECT_AFTER);
                    return Err(e.into());
                }
            }
        }
        let result = match &mut *slot {
            Ok(Some(connection)) => self.run(connection, buckets, now_us, deadline),
            _ => Err(StoreError::Waiting(self.addr)),
        };
        if result.is_err() {
            *slot = Err(Instant::now() + RECONNECT_AFTER);
        }
        result
    }

    fn run(
        &self,
        connection: &mut Connection,
        buckets: &[(&str, Limit<'_>)],
        now_us: Option<u64>,
        deadline: Instant,
    ) -> Result<Vec<Verdict>, StoreError> {
        let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_micros(1));
        let sha = match self.sha.get() {
            Some(sha) => sha.clone(),
            None => match connection.call(&[b"SCRIPT", b"LOAD", SCRIPT.as_bytes()], left())? {
                Reply::Bulk(Some(sha)) => {
                    let sha = String::from_utf8_lossy(&sha).into_owned();
                    self.sha.get_or_init(|| sha).clone()
                }
                other => return Err(self.refused(other)),
            },
        };
        let keys = buckets.len().to_string();
        let now = now_us.map(|n| n.to_string()).unwrap_or_default();
        let numbers: Vec<(String, String)> =
            buckets.iter().map(|(_, l)| (l.interval_us().to_string(), l.burst.to_string())).collect();
        let mut args: Vec<&[u8]> = Vec::with_capacity(4 + 3 * buckets.len());
        args.extend([b"EVALSHA".as_slice(), sha.as_bytes(), keys.as_bytes()]);
        args.extend(buckets.iter().map(|(key, _)| key.as_bytes()));
        args.push(now.as_bytes());
        for (interval, burst) in &numbers {
            args.extend([interval.as_bytes(), burst.as_bytes()]);
        }
        let mut reply = connection.call(&args, left())?;
        if matches!(&reply, Reply::Error(e) if e.starts_with("NOSCRIPT")) {
            args[0] = b"EVAL";
            args[1] = SCRIPT.as_bytes();
            reply = connection.call(&args, left())?;
        }
        self.verdicts(reply)
    }

    fn refused(&self, reply: Reply) -> StoreError {
        match reply {
            Reply::Error(message) => StoreError::Refused { addr: self.addr, message },
            _ => StoreError::Reply(self.addr),
        }
    }

    /// The script's reply as verdicts.
    fn verdicts(&self, reply: Reply) -> Result<Vec<Verdict>, StoreError> {
        let Reply::Array(Some(items)) = reply else { return Err(self.refused(reply)) };
        let number = |r: &Reply| match r {
            Reply::Integer(n) => u64::try_from(*n).ok(),
            _ => None,
        };
        let small = |r: &Reply| number(r).map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        items
            .iter()
            .map(|item| match item {
                Reply::Array(Some(f)) if f.len() == 5 => Some(Verdict {
                    allowed: number(&f[0])? == 1,
                    tat_us: number(&f[1])?,
                    remaining: small(&f[2])?,
                    reset_secs: small(&f[3])?,
                    retry_after_secs: small(&f[4])?,
                }),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .ok_or(StoreError::Reply(self.addr))
    }
}
