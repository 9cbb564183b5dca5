//! What a JWK is to the gateway: the limits, the algorithms, and a
//! validated key's material in the form each algorithm computes with.

/// The largest document read: providers' sets are a few KiB.
pub const MAX_DOCUMENT_BYTES: usize = 64 << 10;

/// The longest `kid`, in bytes.
pub const MAX_KID_BYTES: usize = 200;

/// The smallest RSA modulus accepted, in bits (RFC 7518 section 3.3).
pub const MIN_RSA_BITS: usize = 2048;

/// The largest RSA modulus accepted, in bits (the worker's widest integer).
pub const MAX_RSA_BITS: usize = 4096;

/// The private members of RFC 7518 section 6 (6.2.2 for EC and OKP `d`,
/// 6.3.2 for RSA, 6.4 for a secret's `k`).
pub const PRIVATE_MEMBERS: [&str; 8] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/// A public-key algorithm a JWK can be for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// EdDSA on Ed25519.
    EdDsa,
}

impl Alg {
    /// The JOSE name (`alg`).
    pub const fn name(self) -> &'static str {
        match self {
            Alg::Rs256 => "RS256",
            Alg::Es256 => "ES256",
            Alg::EdDsa => "EdDSA",
        }
    }

    /// The algorithm a JOSE `alg` names, exactly.
    pub fn from_name(name: &str) -> Option<Alg> {
        [Alg::Rs256, Alg::Es256, Alg::EdDsa].into_iter().find(|alg| alg.name() == name)
    }
}

/// A validated key's material, in the form each algorithm computes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Material<'b> {
    /// RSA: the modulus (big-endian, no leading zero byte) and the exponent.
    Rsa {
        /// `n`, 2048 to 4096 bits, odd.
        modulus: &'b [u8],
        /// `e`, odd and at least 3.
        exponent: u64,
    },
    /// P-256: the uncompressed SEC1 point `04 || x || y`, on the curve.
    P256 {
        /// `04 || x || y`.
        sec1: [u8; 65],
    },
    /// Ed25519: the compressed point, not of small order.
    Ed25519 {
        /// RFC 8032 section 5.1.2.
        public: [u8; 32],
    },
}

impl Material<'_> {
    /// The one algorithm the key verifies.
    pub fn alg(&self) -> Alg {
        match self {
            Material::Rsa { .. } => Alg::Rs256,
            Material::P256 { .. } => Alg::Es256,
            Material::Ed25519 { .. } => Alg::EdDsa,
        }
    }
}

/// One validated signing key of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jwk<'b> {
    /// Its `kid`, decoded.
    pub kid: &'b str,
    /// Its material.
    pub material: Material<'b>,
}
