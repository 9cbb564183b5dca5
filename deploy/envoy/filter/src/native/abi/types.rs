//! The ABI's enumerations the module passes to Envoy or reads from it, with
//! the values of Envoy 1.40.0's `abi.h` (ABI `v0.2.0`).

/// `envoy_dynamic_module_type_http_header_type`: which header map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Map {
    /// `..._RequestHeader`.
    Request = 0,
    /// `..._ResponseHeader`.
    Response = 2,
}

/// `envoy_dynamic_module_type_attribute_id`: the attributes the module reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Attribute {
    /// `response.code_details`: why Envoy answered as it did
    /// (`local_rate_limited` for `local_ratelimit`'s refusal).
    ResponseCodeDetails = 16,
    /// `source.address`: the downstream peer, `ip:port`.
    SourceAddress = 24,
    /// `connection.tls_version`: empty or absent without TLS.
    ConnectionTlsVersion = 31,
    /// `connection.sha256_peer_certificate_digest`: the client certificate
    /// Envoy verified, in hex.
    ConnectionSha256PeerCertificateDigest = 38,
}

/// `envoy_dynamic_module_type_log_level`: the levels the module logs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum LogLevel {
    /// `..._Info`.
    #[cfg(runtime_keys)]
    Info = 2,
    /// `..._Warn`.
    #[cfg(runtime_keys)]
    Warn = 3,
    /// `..._Error`.
    Error = 4,
}

/// What a headers hook tells Envoy
/// (`envoy_dynamic_module_type_on_http_filter_{request,response}_headers_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Status {
    /// `..._Continue`: the stream goes on.
    Continue = 0,
    /// `..._StopIteration`: the stream stops here (after a local reply).
    StopIteration = 1,
    /// `..._StopAllIterationAndBuffer`: the request waits, its content
    /// buffered, until the module lets it go on.
    #[cfg(runtime_keys)]
    StopAllIterationAndBuffer = 3,
}
