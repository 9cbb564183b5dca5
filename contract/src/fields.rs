//! Header names every host and test shares, and the answers a host makes
//! itself when the module gives none (`ABI.md`, "Answers the host makes
//! itself"), so that every host answers them alike.

/// The prefix of every field only the gateway may set; the module drops
/// every client spelling of it (`_` read as `-`).
pub const GATEWAY_PREFIX: &str = "x-gateway-";

/// The field that carries the token's subject upstream.
pub const SUBJECT: &str = "x-gateway-subject";

/// The field that names the issuer of the verified token (its configured
/// `iss`): a subject is unique only within its issuer (RFC 7519 section
/// 4.1.2), so the upstream reads the two together.
pub const ISSUER: &str = "x-gateway-issuer";

/// The field the Envoy filter sets to the forward's origin, which the
/// rendered route table matches to pick the origin's cluster (Envoy removes
/// it before the request leaves). The module drops any client's spelling of
/// it with the rest of `x-gateway-*`.
pub const UPSTREAM: &str = "x-gateway-upstream";

/// The content type of every JSON body the gateway writes.
pub const JSON: &str = "application/json";

/// An answer a host makes itself: the module could not decide, or the
/// upstream exchange failed after it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAnswer {
    /// The upstream refused the connection, did not connect in time, or reset it.
    UpstreamUnavailable,
    /// The whole upstream exchange ran past its limit.
    UpstreamTimedOut,
    /// The upstream's connection cap stayed full past its queue limit.
    UpstreamBusy,
    /// The module trapped, or its output does not follow the contract.
    ModuleFailed,
    /// The module ran past its CPU deadline.
    ModuleOutOfTime,
    /// Every instance slot, or the connection cap, of the host is in use.
    GatewayBusy,
    /// The client's body passed the host's limit.
    BodyTooLarge,
    /// The client's body stalled.
    BodyTimedOut,
    /// The store rate limits are counted in (Redis) did not answer in
    /// time, and the host is set to fail closed.
    LimitStoreUnavailable,
}

impl HostAnswer {
    /// Every host answer, in table order.
    pub const ALL: [HostAnswer; 9] = [
        HostAnswer::UpstreamUnavailable,
        HostAnswer::UpstreamTimedOut,
        HostAnswer::UpstreamBusy,
        HostAnswer::ModuleFailed,
        HostAnswer::ModuleOutOfTime,
        HostAnswer::GatewayBusy,
        HostAnswer::BodyTooLarge,
        HostAnswer::BodyTimedOut,
        HostAnswer::LimitStoreUnavailable,
    ];

    /// The HTTP status.
    pub const fn status(self) -> u16 {
        match self {
            HostAnswer::UpstreamUnavailable => 502,
            HostAnswer::UpstreamTimedOut => 504,
            HostAnswer::UpstreamBusy
            | HostAnswer::ModuleOutOfTime
            | HostAnswer::GatewayBusy
            | HostAnswer::LimitStoreUnavailable => 503,
            HostAnswer::ModuleFailed => 500,
            HostAnswer::BodyTooLarge => 413,
            HostAnswer::BodyTimedOut => 408,
        }
    }

    /// The id of its outcome (`crate::outcome`), for the host's counters.
    pub const fn outcome(self) -> u8 {
        use crate::outcome::id;
        match self {
            HostAnswer::UpstreamUnavailable => id("upstream_unavailable"),
            HostAnswer::UpstreamTimedOut => id("upstream_timed_out"),
            HostAnswer::UpstreamBusy => id("upstream_busy"),
            HostAnswer::ModuleFailed => id("module_failed"),
            HostAnswer::ModuleOutOfTime => id("module_out_of_time"),
            HostAnswer::GatewayBusy => id("gateway_busy"),
            HostAnswer::BodyTooLarge => id("body_too_large"),
            HostAnswer::BodyTimedOut => id("body_timed_out"),
            HostAnswer::LimitStoreUnavailable => id("limit_store_unavailable"),
        }
    }

    /// The description the client reads.
    pub const fn description(self) -> &'static str {
        match self {
            HostAnswer::UpstreamUnavailable => "upstream unavailable",
            HostAnswer::UpstreamTimedOut => "upstream timed out",
            HostAnswer::UpstreamBusy => "upstream busy",
            HostAnswer::ModuleFailed => "gateway module failed",
            HostAnswer::ModuleOutOfTime => "gateway module out of time",
            HostAnswer::GatewayBusy => "gateway busy",
            HostAnswer::BodyTooLarge => "request body too large",
            HostAnswer::BodyTimedOut => "request body timed out",
            HostAnswer::LimitStoreUnavailable => "rate limit store unavailable",
        }
    }

    /// The JSON body: `{"error_description":"..."}`.
    pub const fn body(self) -> &'static str {
        match self {
            HostAnswer::UpstreamUnavailable => r#"{"error_description":"upstream unavailable"}"#,
            HostAnswer::UpstreamTimedOut => r#"{"error_description":"upstream timed out"}"#,
            HostAnswer::UpstreamBusy => r#"{"error_description":"upstream busy"}"#,
            HostAnswer::ModuleFailed => r#"{"error_description":"gateway module failed"}"#,
            HostAnswer::ModuleOutOfTime => r#"{"error_description":"gateway module out of time"}"#,
            HostAnswer::GatewayBusy => r#"{"error_description":"gateway busy"}"#,
            HostAnswer::BodyTooLarge => r#"{"error_description":"request body too large"}"#,
            HostAnswer::BodyTimedOut => r#"{"error_description":"request body timed out"}"#,
            HostAnswer::LimitStoreUnavailable => r#"{"error_description":"rate limit store unavailable"}"#,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_body_is_json_with_its_description() {
        for answer in HostAnswer::ALL {
            let body: serde_json::Value = serde_json::from_str(answer.body()).expect("JSON");
            assert_eq!(body["error_description"], answer.description(), "{answer:?}");
            assert!(body.as_object().is_some_and(|o| o.len() == 1), "{answer:?}");
        }
    }
}
