//! Rate limits counted by Envoy (`worker/ABI.md`, "Rate limits"): the
//! module names the buckets a forward falls in; the filter hands each to
//! Envoy's `local_ratelimit` as one request field per limit, and turns
//! Envoy's refusal into the module's 429.
//!
//! The rendered bootstrap (`deploy/envoy/render/src/limits.rs`) puts one
//! `envoy.filters.http.local_ratelimit` per limit after this filter. Each
//! makes a descriptor `(<limit name>, <key>)` from the field
//! [`limit_header`] of its limit and counts it in a token bucket of its own
//! per distinct key. A filter that refuses sends Envoy's local reply with
//! [`LIMITED_MARKER`] set to its limit's index; that reply passes back
//! through this filter's response callback, which decides the request again
//! (the core's `limited` writes the answer for the last decision, and other
//! requests were decided since), asks the core for the 429
//! (`Instance::limited`; a 401 for a DPoP proof's replay bucket), and
//! sends it instead. The client gets the same answer as from every other
//! host; the upstream never sees the request.
//!
//! Envoy does not say when its bucket lets a request through again, so
//! `retry-after` is the limit's refill time for one request
//! ([`retry_after_secs`]) and the bucket's reset is the time to refill it
//! from empty ([`reset_secs`]): upper bounds where GCRA gives the exact
//! values.

/// The start of the request field that carries a bucket's key to
/// `local_ratelimit`: `x-gateway-limit-<limit index>`. The module drops
/// every client field starting `x-gateway-`, so only this filter sets it;
/// the route table removes it before the request leaves Envoy.
pub const LIMIT_HEADER_PREFIX: &str = "x-gateway-limit-";

/// The response field each limit's `local_ratelimit` adds to its refusal:
/// the limit's index, which tells this filter which bucket refused.
pub const LIMITED_MARKER: &str = "x-gateway-limited";

/// Envoy's response code details for a refusal: `local_ratelimit`'s, and
/// the global `ratelimit` filter's. A response with [`LIMITED_MARKER`] but
/// other details (an upstream that sends the field) is not a refusal.
pub const REFUSAL_DETAILS: [&str; 2] = ["local_rate_limited", "request_rate_limited"];

/// The request field that carries limit `limit`'s bucket key.
pub fn limit_header(limit: u8) -> String {
    format!("{LIMIT_HEADER_PREFIX}{limit}")
}

/// The limit whose filter refused the request, from the response's
/// [`LIMITED_MARKER`] value and Envoy's response code details; `None` for
/// any other response.
pub fn refused_limit(marker: Option<&[u8]>, details: Option<&[u8]>) -> Option<u8> {
    let details = details?;
    if !REFUSAL_DETAILS.iter().any(|d| d.as_bytes() == details) {
        return None;
    }
    std::str::from_utf8(marker?).ok()?.trim().parse().ok()
}

/// Seconds until one request passes again, as `retry-after` says it: one
/// request's share of the period, `ceil(per_secs / requests)`, at least 1.
/// Envoy's bucket refills continuously, so after a refusal one request
/// passes within this time (GCRA would give the exact wait).
pub fn retry_after_secs(requests: u32, per_secs: u32) -> u32 {
    per_secs.div_ceil(requests.max(1)).max(1)
}

/// Seconds until a spent bucket is full again: `burst` requests' share of
/// the period, at least [`retry_after_secs`].
pub fn reset_secs(requests: u32, per_secs: u32, burst: u32) -> u32 {
    let full = (u64::from(per_secs) * u64::from(burst)).div_ceil(u64::from(requests.max(1)));
    u32::try_from(full).unwrap_or(u32::MAX).max(retry_after_secs(requests, per_secs))
}

/// The position among `forward`'s buckets of the one of limit `limit`: the
/// bucket number `limited` takes.
pub fn bucket_position(forward: &contract::Forward<'_>, limit: u8) -> Option<usize> {
    forward.buckets().position(|bucket| bucket.limit == limit)
}

#[cfg(all(target_arch = "wasm32", limits))]
pub(crate) use refusal::{keep, on_delete, on_response_headers};

/// Why a refusal could not be answered with the module's 429 (the client
/// then gets the 500 every host answers a module failure with).
#[derive(Debug, thiserror::Error)]
pub enum RefusalError {
    /// The host refused a call.
    #[error("host call failed: {0}")]
    Host(String),
    /// A decision or the answer cannot be read.
    #[error("the decision cannot be read: {0}")]
    Decision(#[from] crate::decision::DecodeError),
    /// The instance was in use: a re-entrant call, which Envoy never makes.
    #[error("the core's instance is busy")]
    Busy,
    /// The request, decided again, is no forward with a bucket of the
    /// limit that refused (keys changed in between).
    #[error("the request decided again has no bucket of limit {0}")]
    NoBucket(u8),
    /// The core wrote no refusal for the bucket (429, or 401 for a
    /// DPoP proof's replay bucket).
    #[error("the core answered {0} for the refusal")]
    NotLimited(u32),
}

/// What a forward with buckets keeps until its response: the core's input
/// and clock (to decide it again for the refusal) and its labels (counted
/// when the response shows how it ended).
#[derive(Debug, Clone)]
pub struct Kept {
    /// The context line and head the core decided.
    pub input: Vec<u8>,
    /// The clock it decided at.
    pub now: f64,
    /// The forward's labels.
    pub labels: contract::outcome::Labels,
}

/// Decides `kept`'s request again on `instance` and asks the core for the
/// answer to its bucket of `limit` being spent: the module's 429 (a 401
/// for a DPoP proof's replay bucket), read from `instance`'s output. Both
/// fronts send it in place of Envoy's refusal, and count it.
#[cfg(limits)]
pub fn refusal<'i>(
    instance: &'i mut worker::abi::Instance,
    kept: &Kept,
    limit: u8,
) -> Result<contract::Answer<'i>, RefusalError> {
    use crate::decision::{self, Decision};
    let config = worker::abi::compiled_config();
    let numbers = config.policy.limits.table.get(usize::from(limit)).ok_or(RefusalError::NoBucket(limit))?;
    let retry_after = retry_after_secs(numbers.requests, numbers.per_secs);
    let reset = reset_secs(numbers.requests, numbers.per_secs, numbers.burst);
    let input = instance.input_mut();
    let len = kept.input.len().min(input.len());
    input[..len].copy_from_slice(&kept.input[..len]);
    let position = match decision::decide_written(instance, len, kept.now)? {
        Decision::Forward(forward) => bucket_position(&forward, limit),
        Decision::Answer(_) => None,
    }
    .ok_or(RefusalError::NoBucket(limit))?;
    let position = u32::try_from(position).map_err(|_| RefusalError::NoBucket(limit))?;
    let status = instance.limited(position, retry_after, reset, config);
    let Decision::Answer(answer) = Decision::decode(status, instance.output())? else {
        return Err(RefusalError::NotLimited(status));
    };
    // A bucket's refusal is a 429, but a spent bucket of the
    // `dpop-proofs` limit is a DPoP proof used twice, which the core
    // answers with 401 (`worker/ABI.md`, "Rate limits").
    let replay = numbers.by == worker::config::LimitKey::ProofId;
    if answer.status != if replay { 401 } else { 429 } {
        return Err(RefusalError::NotLimited(status));
    }
    Ok(answer)
}

/// The refusal on the response path: what a forward with buckets keeps
/// until its response, and the module's 429 in place of Envoy's.
#[cfg(all(target_arch = "wasm32", limits))]
mod refusal {
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    use contract::fields::HostAnswer;
    use contract::outcome::Labels;

    use super::*;
    use crate::instance::INSTANCE;
    use crate::metrics;
    use crate::raw::{self, Action, LogLevel};

    impl From<u32> for RefusalError {
        fn from(status: u32) -> Self {
            RefusalError::Host(format!("status {status}"))
        }
    }

    std::thread_local! {
        /// The kept forwards of this VM's streams whose response has not
        /// come yet, by context id.
        static KEPT: RefCell<BTreeMap<u32, Kept>> = const { RefCell::new(BTreeMap::new()) };
    }

    /// Keeps stream `context_id`'s forward, decided from `input` at `now`
    /// with `labels`, until its response.
    pub(crate) fn keep(context_id: u32, input: Vec<u8>, now: f64, labels: Labels) {
        KEPT.with(|kept| kept.borrow_mut().insert(context_id, Kept { input, now, labels }));
    }

    /// The response of stream `context_id`: `Some` when a limit refused its
    /// forward and this sent the module's 429 instead; `None` otherwise,
    /// after counting the forward.
    pub(crate) fn on_response_headers(context_id: u32) -> Option<Action> {
        let kept = KEPT.with(|kept| kept.borrow_mut().remove(&context_id))?;
        let marker = raw::header_value(raw::HTTP_RESPONSE_HEADERS, LIMITED_MARKER).ok().flatten();
        let details = raw::property(raw::RESPONSE_CODE_DETAILS).ok().flatten();
        let Some(limit) = refused_limit(marker.as_deref(), details.as_deref()) else {
            metrics::count_decision(&kept.labels);
            return None;
        };
        Some(answer_refusal(&kept, limit).unwrap_or_else(|e| {
            raw::log(LogLevel::Error, &format!("gateway: rate limit refusal: {e}"));
            metrics::count_decision(&Labels::of(HostAnswer::ModuleFailed.outcome()));
            crate::reply::host_answer(HostAnswer::ModuleFailed)
                .unwrap_or_else(|e| panic!("gateway: cannot answer 500: {e}"))
        }))
    }

    /// Stream `context_id` ended: a forward whose response never came is
    /// counted as the forward it was.
    pub(crate) fn on_delete(context_id: u32) {
        if let Some(kept) = KEPT.with(|kept| kept.borrow_mut().remove(&context_id)) {
            metrics::count_decision(&kept.labels);
        }
    }

    /// Decides the kept request again, asks the core for the 429 of its
    /// bucket of `limit`, counts it, and sends it.
    fn answer_refusal(kept: &Kept, limit: u8) -> Result<Action, RefusalError> {
        INSTANCE.with(|cell| {
            let mut instance = cell.try_borrow_mut().map_err(|_| RefusalError::Busy)?;
            let answer = refusal(&mut instance, kept, limit)?;
            metrics::count_decision(&answer.labels);
            Ok(crate::reply::answer_with(&answer)?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_refusal_with_its_marker_names_a_limit() {
        let local = Some(&b"local_rate_limited"[..]);
        assert_eq!(refused_limit(Some(b"2"), local), Some(2));
        assert_eq!(refused_limit(Some(b"0"), Some(b"request_rate_limited")), Some(0));
        // An upstream's response with the field: other details.
        assert_eq!(refused_limit(Some(b"1"), Some(b"via_upstream")), None);
        assert_eq!(refused_limit(None, local), None);
        assert_eq!(refused_limit(Some(b"x"), local), None);
        assert_eq!(refused_limit(Some(b"1"), None), None);
        assert_eq!(limit_header(3), "x-gateway-limit-3");
    }

    #[test]
    fn retry_after_is_one_requests_refill_time() {
        assert_eq!(retry_after_secs(3, 60), 20);
        assert_eq!(retry_after_secs(7, 60), 9);
        assert_eq!(retry_after_secs(100, 1), 1, "at least 1");
        assert_eq!(reset_secs(3, 60, 3), 60);
        assert_eq!(reset_secs(5, 60, 2), 24);
        assert_eq!(reset_secs(4, 3600, 4), 3600);
        assert_eq!(reset_secs(100, 1, 1), 1);
    }

    #[test]
    fn a_bucket_is_found_by_its_limit() {
        let text = "http://127.0.0.1:9201\n/orders\n#00ffff000100 -\n=01 per-tenant:c:0.acme\n\
                    =00 per-user:s:0.alice\n-authorization";
        let Ok(contract::Decision::Forward(forward)) = contract::Decision::decode(200, text.as_bytes())
        else {
            panic!("a forward");
        };
        assert_eq!(bucket_position(&forward, 0), Some(1));
        assert_eq!(bucket_position(&forward, 1), Some(0));
        assert_eq!(bucket_position(&forward, 2), None);
    }
}
