//! The one table-driven test macro the unit tests share: each `name:
//! input => expected;` row becomes a `#[test]` that asserts `check(input)`
//! equals `expected`, where `check` is a function the calling module
//! defines.

/// Generates one `#[test]` per row: `name: input => expected;` asserts
/// `$check(input) == expected`.
macro_rules! cases {
    ($check:expr; $($name:ident: $input:expr => $expected:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!($check(&$input), $expected, "{}", stringify!($name));
        }
    )*};
}

pub(crate) use cases;
