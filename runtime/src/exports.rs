//! The contract's exports (`worker/ABI.md`): a module must import nothing
//! and export these, with these types. Checked once per module, and resolved
//! to indices so that each instance finds them without a name lookup.

use wasmtime::{ExternType, Module, ModuleExport, ValType};

use crate::error::LoadError;

/// The exports of the contract, resolved to indices once per module so that
/// each instance finds them without a name lookup.
#[derive(Clone)]
pub(crate) struct Exports {
    pub(crate) memory: ModuleExport,
    pub(crate) abi_version: ModuleExport,
    pub(crate) input_ptr: ModuleExport,
    pub(crate) input_capacity: ModuleExport,
    pub(crate) handle: ModuleExport,
    /// Checked after `abi_version`, so that a module of another version is
    /// refused for its version, not for an export that version lacks.
    pub(crate) routes: Option<ModuleExport>,
    /// The label table (`ABI.md`, "Labels"): only in a module that has one.
    pub(crate) labels: Option<ModuleExport>,
    /// The 429 of a spent bucket (`ABI.md`, "Rate limits"): only in a
    /// module with limits.
    pub(crate) limited: Option<ModuleExport>,
    pub(crate) output_ptr: ModuleExport,
    pub(crate) output_len: ModuleExport,
}

impl Exports {
    /// Checks that the module imports nothing and exports the contract with
    /// the right types.
    pub(crate) fn resolve(module: &Module) -> Result<Exports, LoadError> {
        if let Some(import) = module.imports().next() {
            return Err(LoadError::HasImports(format!("{}::{}", import.module(), import.name())));
        }
        let func = |name: &'static str, params: &[ValType], results: &[ValType]| {
            let export = module.get_export(name).ok_or(LoadError::MissingExport(name))?;
            match export {
                // Compared type by type: this runs on every cold start, so the
                // signature is spelled out only for the error.
                ExternType::Func(ty) => {
                    if !same_types(ty.params(), params) || !same_types(ty.results(), results) {
                        let found_params: Vec<ValType> = ty.params().collect();
                        let found_results: Vec<ValType> = ty.results().collect();
                        return Err(LoadError::ExportType {
                            name,
                            expected: expected_signature(name),
                            found: format!("a function {}", signature(&found_params, &found_results)),
                        });
                    }
                }
                other => {
                    return Err(LoadError::ExportType {
                        name,
                        expected: expected_signature(name),
                        found: kind(&other).into(),
                    });
                }
            }
            module.get_export_index(name).ok_or(LoadError::MissingExport(name))
        };
        let i32_ = [ValType::I32];
        let exports = Exports {
            abi_version: func("abi_version", &[], &i32_)?,
            input_ptr: func("input_ptr", &[], &i32_)?,
            input_capacity: func("input_capacity", &[], &i32_)?,
            handle: func("handle", &[ValType::I32, ValType::F64], &i32_)?,
            routes: match module.get_export("routes") {
                None => None,
                Some(_) => Some(func("routes", &[], &i32_)?),
            },
            labels: match module.get_export("labels") {
                None => None,
                Some(_) => Some(func("labels", &[], &i32_)?),
            },
            limited: match module.get_export("limited") {
                None => None,
                Some(_) => Some(func("limited", &[ValType::I32, ValType::I32, ValType::I32], &i32_)?),
            },
            output_ptr: func("output_ptr", &[], &i32_)?,
            output_len: func("output_len", &[], &i32_)?,
            memory: match module.get_export("memory") {
                None => return Err(LoadError::MissingExport("memory")),
                Some(ExternType::Memory(_)) => {
                    module.get_export_index("memory").ok_or(LoadError::MissingExport("memory"))?
                }
                Some(other) => {
                    return Err(LoadError::ExportType {
                        name: "memory",
                        expected: "a memory",
                        found: kind(&other).into(),
                    });
                }
            },
        };
        Ok(exports)
    }
}

fn expected_signature(name: &str) -> &'static str {
    match name {
        "handle" => "a function (i32, f64) -> i32",
        "limited" => "a function (i32, i32, i32) -> i32",
        _ => "a function () -> i32",
    }
}

/// True when `found` is exactly the types `expected`, in order.
fn same_types(found: impl ExactSizeIterator<Item = ValType>, expected: &[ValType]) -> bool {
    found.len() == expected.len() && found.zip(expected).all(|(f, e)| ValType::eq(&f, e))
}

fn signature(params: &[ValType], results: &[ValType]) -> String {
    let list = |types: &[ValType]| types.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
    format!("({}) -> {}", list(params), list(results))
}

fn kind(ty: &ExternType) -> &'static str {
    match ty {
        ExternType::Func(_) => "a function",
        ExternType::Global(_) => "a global",
        ExternType::Table(_) => "a table",
        ExternType::Memory(_) => "a memory",
        _ => "another kind of export",
    }
}
