//! Upstream overrides (feature `upstream-override`): origins the module
//! names moved to others, read from the environment variable
//! `GATEWAY_UPSTREAM_OVERRIDE` (`FROM=TO,...`, `FROM` an audience of the
//! module's route table or an origin, `TO` an origin; parsed by the
//! contract's parser, as host-sim and the workerd shim take theirs). The
//! tests' and benchmarks' upstreams and key providers listen on ephemeral
//! loopback ports; the module still decides where a request goes and with
//! which path. Without the feature, every origin is itself and nothing is
//! read.

#[cfg(feature = "upstream-override")]
use alloc::borrow::ToOwned;
use alloc::string::String;
#[cfg(feature = "upstream-override")]
use alloc::vec::Vec;

use worker::abi::Instance;

/// The variable the overrides are read from.
#[cfg(feature = "upstream-override")]
pub const VARIABLE: &str = "GATEWAY_UPSTREAM_OVERRIDE";

/// (origin the module names, origin to connect to) pairs.
pub(crate) struct Overrides {
    #[cfg(feature = "upstream-override")]
    pairs: Option<Vec<(String, String)>>,
}

impl Overrides {
    /// None read yet.
    pub const fn new() -> Self {
        Overrides {
            #[cfg(feature = "upstream-override")]
            pairs: None,
        }
    }

    /// Reads the overrides once per instance, resolving audiences with the
    /// module's route table (read into `instance`'s output, so before a
    /// request is decided). A variable that cannot be read is a line naming
    /// what is wrong.
    #[cfg(feature = "upstream-override")]
    pub fn load(&mut self, instance: &mut Instance) -> Result<(), String> {
        if self.pairs.is_some() {
            return Ok(());
        }
        let variables = crate::bindings::wasi::cli::environment::get_environment();
        let text =
            variables.iter().find(|(name, _)| name == VARIABLE).map_or("", |(_, value)| value.as_str());
        instance.routes(worker::abi::compiled_config());
        let routes: Vec<(String, String)> = contract::routes::decode(instance.output())
            .filter_map(Result::ok)
            .map(|(aud, url)| (aud.to_owned(), url.to_owned()))
            .collect();
        let items = text.split(',').filter(|item| !item.trim().is_empty());
        let pairs = contract::routes::parse_overrides(items, &routes)
            .map_err(|e| alloc::format!("{VARIABLE}: {e}"))?;
        self.pairs = Some(pairs);
        Ok(())
    }

    /// Without the feature there is nothing to read.
    #[cfg(not(feature = "upstream-override"))]
    pub fn load(&mut self, _instance: &mut Instance) -> Result<(), String> {
        Ok(())
    }

    /// The origin to connect to for `origin`.
    pub fn origin<'a>(&'a self, origin: &'a str) -> &'a str {
        #[cfg(feature = "upstream-override")]
        if let Some((_, to)) = self.pairs.iter().flatten().find(|(from, _)| from == origin) {
            return to;
        }
        origin
    }

    /// `url` with its origin moved as [`Overrides::origin`] says.
    #[cfg(runtime_keys)]
    pub fn url(&self, url: &str) -> String {
        match contract::routes::origin_of(url) {
            Some(from) => [self.origin(from), &url[from.len()..]].concat(),
            None => String::from(url),
        }
    }
}
