//! Counting in Redis (`--limits redis://HOST:PORT`), so that several
//! gateways share one budget: all of a decision's buckets in one call of
//! one server-side script ([`SCRIPT`], GCRA as `contract::limits::gcra`),
//! atomic on the server, on the server's clock (`TIME`), so that gateways
//! whose clocks differ still count alike. The script is called by its SHA
//! (`EVALSHA`, learnt from `SCRIPT LOAD` when a connection opens), and
//! sent whole (`EVAL`) when the server answers `NOSCRIPT` (restarted, or
//! its scripts flushed). Each key expires when its TAT passes.
//!
//! Each serving thread has connections of its own ([`RedisStore::for_thread`]):
//! a count takes an idle one or opens one, and gives it back after a reply
//! (at most [`MAX_IDLE`] kept idle, [`MAX_OPEN`] open); the thread serves its other connections
//! while a reply is awaited. A connection that fails is dropped, and the
//! thread waits [`RECONNECT_AFTER`] before connecting again, so that a
//! server that is down costs a request nothing but the check.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use contract::limits::{Limit, Verdict};

use super::resp::{AsyncConnection, Reply, RespError};

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
    /// Every connection of this thread stayed busy past the deadline.
    #[error("redis at {0}: every connection busy until the timeout")]
    Busy(SocketAddr),
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

/// Idle connections a serving thread keeps for its next counts.
pub const MAX_IDLE: usize = 8;

/// Connections a serving thread has open to Redis at most; a count that
/// finds them all busy waits for one, within its deadline.
pub const MAX_OPEN: usize = 32;

/// One thread's way to count in Redis: every count, from connecting to the
/// reply, within one timeout.
#[derive(Debug)]
pub struct RedisStore {
    addr: SocketAddr,
    timeout: Duration,
    /// The script's SHA, learnt once for the process.
    sha: Arc<OnceLock<String>>,
    /// This thread's idle connections (a count in flight holds its own).
    idle: Mutex<Vec<AsyncConnection>>,
    /// After a failure: when to connect again.
    retry_at: Mutex<Option<Instant>>,
    /// One permit per connection this thread may have open.
    open: Arc<tokio::sync::Semaphore>,
}

impl RedisStore {
    /// A store at `addr` whose every count is bounded by `timeout`.
    pub fn new(addr: SocketAddr, timeout: Duration) -> RedisStore {
        RedisStore {
            addr,
            timeout,
            sha: Arc::default(),
            idle: Mutex::default(),
            retry_at: Mutex::default(),
            open: Arc::new(tokio::sync::Semaphore::new(MAX_OPEN)),
        }
    }

    /// The same server, with connections of its own.
    pub fn for_thread(&self) -> RedisStore {
        RedisStore { sha: Arc::clone(&self.sha), ..RedisStore::new(self.addr, self.timeout) }
    }

    /// The server.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Counts one request in every bucket (`(key, limit)`, in order) at
    /// `now_us` (None: the server's clock), stopping at the first that
    /// refuses: one verdict per bucket counted. The serving thread goes on
    /// with its other connections while the reply is awaited.
    pub async fn count(
        &self,
        buckets: &[(&str, Limit<'_>)],
        now_us: Option<u64>,
    ) -> Result<Vec<Verdict>, StoreError> {
        // One deadline for the whole count: connecting, loading the script, the call.
        let deadline = tokio::time::Instant::now() + self.timeout;
        let waiting = locked(&self.retry_at).is_some_and(|retry| Instant::now() < retry);
        if waiting {
            return Err(StoreError::Waiting(self.addr));
        }
        // A permit per connection in use: at most MAX_OPEN per thread.
        let Ok(Ok(_permit)) = tokio::time::timeout_at(deadline, self.open.acquire()).await else {
            return Err(StoreError::Busy(self.addr));
        };
        let idle = locked(&self.idle).pop();
        let mut connection = match idle {
            Some(connection) => connection,
            None => match AsyncConnection::connect(self.addr, deadline).await {
                Ok(connection) => connection,
                Err(e) => return Err(self.failed(e.into())),
            },
        };
        match self.run(&mut connection, buckets, now_us, deadline).await {
            Ok(verdicts) => {
                let mut idle = locked(&self.idle);
                if idle.len() < MAX_IDLE {
                    idle.push(connection);
                }
                Ok(verdicts)
            }
            Err(e) => Err(self.failed(e)),
        }
    }

    /// Notes a failure: no new connection for [`RECONNECT_AFTER`].
    fn failed(&self, error: StoreError) -> StoreError {
        *locked(&self.retry_at) = Some(Instant::now() + RECONNECT_AFTER);
        error
    }

    async fn run(
        &self,
        connection: &mut AsyncConnection,
        buckets: &[(&str, Limit<'_>)],
        now_us: Option<u64>,
        deadline: tokio::time::Instant,
    ) -> Result<Vec<Verdict>, StoreError> {
        let sha = match self.sha.get() {
            Some(sha) => sha.clone(),
            None => match connection.call(&[b"SCRIPT", b"LOAD", SCRIPT.as_bytes()], deadline).await? {
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
        let mut reply = connection.call(&args, deadline).await?;
        if matches!(&reply, Reply::Error(e) if e.starts_with("NOSCRIPT")) {
            args[0] = b"EVAL";
            args[1] = SCRIPT.as_bytes();
            reply = connection.call(&args, deadline).await?;
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

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
