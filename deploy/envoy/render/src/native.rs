//! The gateway as a native Envoy dynamic module (`envoy-filter --native`):
//! `envoy.filters.http.dynamic_modules` in the gateway filter's place, with
//! the same routes, clusters and Envoy settings around it
//! ([`crate::filter`]). Envoy opens the module by name, `lib<name>.so`,
//! from the folder in the environment variable [`SEARCH_PATH_VAR`]; the
//! filter's configuration names the ABI the module was built for, which the
//! module checks (`deploy/envoy/filter/src/native/`), and, for a config that
//! fetches keys, the key clusters' table on the lines after it (the one the
//! proxy-wasm filter gets as its configuration, [`crate::keys`]).

use std::path::Path;

use crate::bootstrap::EnvoyError;
use crate::yaml::{Yaml, map, text, typed};

/// The environment variable naming the folder Envoy opens modules from.
pub const SEARCH_PATH_VAR: &str = "ENVOY_DYNAMIC_MODULES_SEARCH_PATH";

/// The filter's name the module answers to (`FILTER_NAME` in
/// `deploy/envoy/filter/src/native/mod.rs`).
pub const FILTER_NAME: &str = "gateway";

/// The filter's configuration: the ABI the module was built for
/// (`filter_config()` in `deploy/envoy/filter/src/native/mod.rs`, Envoy
/// 1.40.0's `v0.2.0`); a module built for another refuses it.
pub const FILTER_CONFIG: &str = "gateway abi v0.2.0";

/// The module's name as Envoy looks it up: `gateway_envoy` for
/// `dist/libgateway_envoy.so`.
pub fn module_name(path: &Path) -> Result<&str, EnvoyError> {
    let bad = || EnvoyError::BadNativeModule { path: path.display().to_string() };
    let file = path.file_name().and_then(|f| f.to_str()).ok_or_else(bad)?;
    file.strip_prefix("lib")
        .and_then(|f| f.strip_suffix(".so"))
        .filter(|name| !name.is_empty())
        .ok_or_else(bad)
}

/// The dynamic modules filter running the module at `path`; `key_clusters`
/// is the key clusters' table of a config that fetches keys.
pub fn native_filter(path: &Path, key_clusters: Option<&str>) -> Result<Yaml, EnvoyError> {
    let value = match key_clusters {
        Some(table) => format!("{FILTER_CONFIG}\n{table}"),
        None => FILTER_CONFIG.to_owned(),
    };
    let config = map([
        (
            "dynamic_module_config",
            // Never closed: the module keeps a core instance per worker
            // thread in thread-locals, which must not outlive its code.
            map([("name", text(module_name(path)?)), ("do_not_close", Yaml::Bool(true))]),
        ),
        ("filter_name", text(FILTER_NAME)),
        ("filter_config", typed("google.protobuf.StringValue", map([("value", text(&value))]))),
    ]);
    Ok(map([
        ("name", text("envoy.filters.http.dynamic_modules")),
        (
            "typed_config",
            typed("envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter", config),
        ),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::tree::{at, str_at};

    #[test]
    fn the_module_is_named_by_its_file() {
        assert_eq!(module_name(Path::new("dist/libgateway_envoy.so")).ok(), Some("gateway_envoy"));
        for bad in ["dist/gateway.so", "dist/libgateway_envoy.wasm", "lib.so", "/"] {
            assert!(matches!(module_name(Path::new(bad)), Err(EnvoyError::BadNativeModule { .. })), "{bad}");
        }
    }

    #[test]
    fn the_filter_names_the_module_and_its_abi() {
        let filter = native_filter(Path::new("/x/libgateway_envoy.so"), None).expect("renders");
        assert_eq!(str_at(&filter, "name"), "envoy.filters.http.dynamic_modules");
        assert_eq!(str_at(&filter, "typed_config.dynamic_module_config.name"), "gateway_envoy");
        assert_eq!(at(&filter, "typed_config.dynamic_module_config.do_not_close"), &Yaml::Bool(true));
        assert_eq!(str_at(&filter, "typed_config.filter_name"), FILTER_NAME);
        assert_eq!(str_at(&filter, "typed_config.filter_config.value"), FILTER_CONFIG);
        let table = "http://idp.test key_idp_test idp.test";
        let keys = native_filter(Path::new("/x/libgateway_envoy.so"), Some(table)).expect("renders");
        assert_eq!(str_at(&keys, "typed_config.filter_config.value"), format!("{FILTER_CONFIG}\n{table}"));
    }
}
