//! The guest bindings of `wit/` by `wit-bindgen`: the `gateway` world (the
//! wasi:http/proxy world), or `gateway-override` with the feature
//! `upstream-override`. Only the interfaces the component calls end up
//! imported: `wasm-tools component new` keeps what the module uses.
// The generated code is unsafe where it crosses the canonical ABI (pointers
// into linear memory, resource handles); it is wit-bindgen's, not written here.
#![allow(unsafe_code, missing_docs, clippy::all)]

#[cfg(not(feature = "upstream-override"))]
wit_bindgen::generate!({
    path: "wit",
    world: "gateway",
    generate_all,
});

#[cfg(feature = "upstream-override")]
wit_bindgen::generate!({
    path: "wit",
    world: "gateway-override",
    generate_all,
});

/// The component's export: `handler` implements
/// `wasi:http/incoming-handler` for it.
pub(crate) struct Component;

export!(Component with_types_in self);
