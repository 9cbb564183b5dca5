//! The JSON type a claim forwarded as a header must have (`type` in a
//! `[[claim_headers]]` entry): one definition for the build, which reads it
//! from the config, and the module, which checks each claim against it.

/// The JSON type of a claim forwarded as a header, so that the upstream
/// reads one value one way: `"true"` is not `true`, `"a,b"` is not a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimType {
    /// A string.
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// An array of strings, numbers or booleans.
    List,
}

impl ClaimType {
    /// Each type with the name the config writes it by.
    pub const NAMES: [(ClaimType, &'static str); 4] = [
        (ClaimType::String, "string"),
        (ClaimType::Number, "number"),
        (ClaimType::Boolean, "boolean"),
        (ClaimType::List, "list"),
    ];

    /// The type the config's `type = "<name>"` names.
    pub fn from_name(name: &str) -> Option<ClaimType> {
        Self::NAMES.iter().find(|(_, n)| *n == name).map(|(t, _)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::ClaimType;

    #[test]
    fn each_name_reads_as_its_type_and_nothing_else_does() {
        for (claim_type, name) in ClaimType::NAMES {
            assert_eq!(ClaimType::from_name(name), Some(claim_type));
        }
        assert_eq!(ClaimType::from_name("String"), None);
        assert_eq!(ClaimType::from_name("array"), None);
    }
}
