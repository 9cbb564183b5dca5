//! Keys fetched at run time (`worker/ABI.md`, "Keys fetched at run time"),
//! on the runtime's side: the module's key exports, one long-lived instance
//! that keeps the fetch schedule and reads and installs every document (the
//! keeper), and the image of its key store that every other instance
//! receives. The keeper answers what to fetch and when ([`Keys::fetch`],
//! [`Keys::wait`]) and what follows each document ([`Keys::fetched`]): the
//! host only fetches.
//!
//! Why an image: a fresh instance per request starts from the module's
//! initial memory, without the keys. Parsing the documents again per
//! request would put key parsing on the request path; instead, after each
//! install the keeper's key store (`key_store_len()` bytes at
//! `key_store_ptr()`, plain data, the same address in every instance) is
//! copied once into an image, and the image into each instance before it
//! decides: a few KiB of `memcpy` for a handful of keys
//! (`docs/PERFORMANCE.md` has the cost). A reused instance receives it only
//! when the image is newer than what it holds; the module's cache of
//! verified tokens is bound to the store's generation, so a newer store
//! empties it.

use std::sync::{Arc, Mutex, RwLock};

use std::time::Duration;

use contract::key_schedule::Why;
use contract::key_sources::{KeySource, SourceKind};
use wasmtime::{Memory, Module, ModuleExport, Store, TypedFunc};

use crate::Runtime;
use crate::error::{GuestError, LoadError, classify, one_line};
use crate::limits::HostState;

/// The key exports a module that fetches keys has, resolved once.
#[derive(Clone)]
pub(crate) struct KeyExports {
    key_sources: ModuleExport,
    keys_input_ptr: ModuleExport,
    keys_input_capacity: ModuleExport,
    install_keys: ModuleExport,
    key_fetch: ModuleExport,
    key_fetch_wait: ModuleExport,
    key_fetched: ModuleExport,
    key_fetch_failed: ModuleExport,
    key_store_ptr: ModuleExport,
    key_store_len: ModuleExport,
}

impl KeyExports {
    /// The key exports, `None` for a module that fetches no keys (no
    /// `key_sources`); all of them or an error when it does.
    pub(crate) fn resolve(module: &Module) -> Result<Option<KeyExports>, LoadError> {
        if module.get_export("key_sources").is_none() {
            return Ok(None);
        }
        let find = |name: &'static str| module.get_export_index(name).ok_or(LoadError::MissingExport(name));
        Ok(Some(KeyExports {
            key_sources: find("key_sources")?,
            keys_input_ptr: find("keys_input_ptr")?,
            keys_input_capacity: find("keys_input_capacity")?,
            install_keys: find("install_keys")?,
            key_fetch: find("key_fetch")?,
            key_fetch_wait: find("key_fetch_wait")?,
            key_fetched: find("key_fetched")?,
            key_fetch_failed: find("key_fetch_failed")?,
            key_store_ptr: find("key_store_ptr")?,
            key_store_len: find("key_store_len")?,
        }))
    }
}

/// One issuer's key source, owned (the module's key-source table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySourceBuf {
    /// The issuer's index: what [`crate::Runtime::install_keys`] takes.
    pub issuer: u8,
    /// What `url` is.
    pub kind: SourceKind,
    /// The URL, as the module names it.
    pub url: String,
    /// Fetch again this long after a success, at most.
    pub refresh_secs: u32,
    /// The shortest time between two fetches.
    pub refetch_secs: u32,
    /// How long one fetch may take.
    pub timeout_ms: u32,
    /// How long installed keys stay usable without a successful fetch.
    pub max_stale_secs: u32,
}

impl From<KeySource<'_>> for KeySourceBuf {
    fn from(source: KeySource<'_>) -> Self {
        KeySourceBuf {
            issuer: source.issuer,
            kind: source.kind,
            url: source.url.to_owned(),
            refresh_secs: source.refresh_secs,
            refetch_secs: source.refetch_secs,
            timeout_ms: source.timeout_ms,
            max_stale_secs: source.max_stale_secs,
        }
    }
}

/// What the module said about a document: accepted (with its summary) or
/// refused (with its one-line reason).
pub type Verdict<T> = Result<T, String>;

/// What follows a document handed over in a round (`key_fetched`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoundStep {
    /// Fetch this URL next, in the same round (the `jwks_uri` a discovery
    /// document named).
    Fetch(String),
    /// The round ended with the keys installed: the module's summary.
    Installed(String),
    /// The round ended with the document refused: the module's reason.
    Refused(String),
}

/// The installed keys as bytes for other instances.
#[derive(Debug, Default)]
pub(crate) struct Image {
    /// `key_store_ptr()`.
    ptr: u32,
    /// The key store's bytes; empty before the first install.
    bytes: Vec<u8>,
    /// Bumped on every install, so a reused instance knows it is behind.
    pub(crate) generation: u64,
}

/// The keeper instance and the image of its key store.
pub(crate) struct Keys {
    exports: KeyExports,
    keeper: Mutex<Keeper>,
    image: RwLock<Arc<Image>>,
    capacity: usize,
    /// The keeper's input buffer (`input_ptr`, `input_capacity`), where a
    /// response's `Cache-Control` value goes.
    field: (u32, u32),
}

/// The instance that reads and installs documents.
pub(crate) struct Keeper {
    pub(crate) store: Store<HostState>,
    pub(crate) memory: Memory,
    pub(crate) instance: wasmtime::Instance,
    pub(crate) output_ptr: TypedFunc<(), u32>,
    pub(crate) output_len: TypedFunc<(), u32>,
}

impl Keeper {
    fn func<P: wasmtime::WasmParams, R: wasmtime::WasmResults>(
        &mut self,
        export: &ModuleExport,
    ) -> Result<TypedFunc<P, R>, GuestError> {
        let func = self
            .instance
            .get_module_export(&mut self.store, export)
            .and_then(|e| e.into_func())
            .ok_or(GuestError::BadOutput("key export missing"))?;
        func.typed::<P, R>(&self.store).map_err(|e| GuestError::Instantiate(one_line(&e)))
    }

    fn call<P: wasmtime::WasmParams, R: wasmtime::WasmResults>(
        &mut self,
        export: &ModuleExport,
        params: P,
    ) -> Result<R, GuestError> {
        let func = self.func::<P, R>(export)?;
        self.store.data_mut().cpu.start_call();
        func.call(&mut self.store, params).map_err(|e| classify(&e))
    }

    fn output(&mut self) -> Result<Vec<u8>, GuestError> {
        let ptr = self.output_ptr.call(&mut self.store, ()).map_err(|e| classify(&e))? as usize;
        let len = self.output_len.call(&mut self.store, ()).map_err(|e| classify(&e))? as usize;
        let data = self.memory.data(&self.store);
        data.get(ptr..ptr.saturating_add(len))
            .map(<[u8]>::to_vec)
            .ok_or(GuestError::BadOutput("output outside memory"))
    }

    /// Writes `document` into the module's document buffer.
    fn write_document(
        &mut self,
        exports: &KeyExports,
        document: &[u8],
        capacity: usize,
    ) -> Result<u32, GuestError> {
        let len = u32::try_from(document.len()).unwrap_or(u32::MAX);
        if document.len() <= capacity {
            let ptr = self.call::<(), u32>(&exports.keys_input_ptr, ())? as usize;
            let data = self.memory.data_mut(&mut self.store);
            data.get_mut(ptr..ptr + document.len())
                .ok_or(GuestError::BadOutput("document buffer outside memory"))?
                .copy_from_slice(document);
        }
        // A longer document is passed with its true length: the module refuses it unread.
        Ok(len)
    }

    /// Writes a `Cache-Control` value into the input buffer at `ptr`, of
    /// `capacity` bytes; a longer one is not written and counts as none.
    fn write_field(&mut self, (ptr, capacity): (u32, u32), value: &[u8]) -> Result<u32, GuestError> {
        if value.len() > capacity as usize {
            return Ok(0);
        }
        let start = ptr as usize;
        self.memory
            .data_mut(&mut self.store)
            .get_mut(start..start + value.len())
            .ok_or(GuestError::BadOutput("input buffer outside memory"))?
            .copy_from_slice(value);
        Ok(value.len() as u32)
    }
}

impl Keys {
    /// The keys of `keeper`'s module, which must export `exports`; its
    /// input buffer is `field` (`input_ptr`, `input_capacity`).
    pub(crate) fn new(
        exports: KeyExports,
        mut keeper: Keeper,
        field: (u32, u32),
    ) -> Result<Keys, GuestError> {
        let capacity = keeper.call::<(), u32>(&exports.keys_input_capacity, ())? as usize;
        let image = RwLock::new(Arc::default());
        Ok(Keys { exports, keeper: Mutex::new(keeper), image, capacity, field })
    }

    /// The module's key-source table.
    pub(crate) fn sources(&self) -> Result<Vec<KeySourceBuf>, GuestError> {
        let mut keeper = self.lock()?;
        keeper.call::<(), u32>(&self.exports.key_sources, ())?;
        let table = keeper.output()?;
        contract::key_sources::decode(&table)
            .map(|source| source.map(KeySourceBuf::from))
            .collect::<Result<_, _>>()
            .map_err(|_| GuestError::BadOutput("key-source table line"))
    }

    /// The largest document the module takes, in bytes.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Installs issuer `issuer`'s JWKS document at `now` in the keeper and,
    /// when the module accepts it, takes the new image of its key store.
    /// The module's summary, or its reason for refusing the document.
    pub(crate) fn install(
        &self,
        issuer: u8,
        document: &[u8],
        now: f64,
    ) -> Result<Verdict<String>, GuestError> {
        let mut keeper = self.lock()?;
        let len = keeper.write_document(&self.exports, document, self.capacity)?;
        let answer =
            keeper.call::<(u32, u32, f64), i32>(&self.exports.install_keys, (u32::from(issuer), len, now))?;
        let text = String::from_utf8_lossy(&keeper.output()?).into_owned();
        if answer < 0 {
            return Ok(Err(text));
        }
        self.take_image(&mut keeper)?;
        Ok(Ok(text))
    }

    /// Copies the keeper's key store into a new image, after an install.
    fn take_image(&self, keeper: &mut Keeper) -> Result<(), GuestError> {
        let ptr = keeper.call::<(), u32>(&self.exports.key_store_ptr, ())?;
        let store_len = keeper.call::<(), u32>(&self.exports.key_store_len, ())? as usize;
        let bytes = keeper
            .memory
            .data(&keeper.store)
            .get(ptr as usize..ptr as usize + store_len)
            .ok_or(GuestError::BadOutput("key store outside memory"))?
            .to_vec();
        let mut image = self.image.write().map_err(|_| GuestError::BadOutput("key image lock poisoned"))?;
        let generation = image.generation + 1;
        *image = Arc::new(Image { ptr, bytes, generation });
        Ok(())
    }

    /// The current image.
    pub(crate) fn image(&self) -> Arc<Image> {
        match self.image.read() {
            Ok(image) => Arc::clone(&image),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Keeper>, GuestError> {
        self.keeper.lock().map_err(|_| GuestError::BadOutput("keeper lock poisoned"))
    }
}

impl Image {
    /// Copies the installed keys into an instance's memory (nothing before
    /// the first install).
    pub(crate) fn apply(&self, memory: &Memory, store: &mut Store<HostState>) -> Result<(), GuestError> {
        if self.bytes.is_empty() {
            return Ok(());
        }
        let start = self.ptr as usize;
        memory
            .data_mut(store)
            .get_mut(start..start + self.bytes.len())
            .ok_or(GuestError::BadOutput("key store outside memory"))?
            .copy_from_slice(&self.bytes);
        Ok(())
    }
}

/// The key fetching a host does through the runtime: each question goes to
/// the keeper instance.
impl Runtime {
    /// The module's key-source table (`ABI.md`, "Keys fetched at run
    /// time"): empty for a module that fetches no keys.
    pub fn key_sources(&self) -> Result<Vec<KeySourceBuf>, GuestError> {
        self.keys.as_deref().map_or(Ok(Vec::new()), Keys::sources)
    }

    /// The largest document the module reads, in bytes (0: it fetches no keys).
    pub fn keys_capacity(&self) -> usize {
        self.keys.as_deref().map_or(0, Keys::capacity)
    }

    /// Asks the module whether a round of issuer `issuer`'s key fetching
    /// starts at `now` (Unix seconds), for `why`: the URL to fetch, none, or
    /// the module's reason for not answering (an issuer that fetches no
    /// keys, a clock that is not a time).
    pub fn key_fetch(&self, issuer: u8, now: f64, why: Why) -> Result<Verdict<Option<String>>, GuestError> {
        let keys = self.keys()?;
        let mut keeper = keys.lock()?;
        let code = match why {
            Why::Due => 0u32,
            Why::Asked => 1,
            Why::Now => 2,
        };
        let answer =
            keeper.call::<(u32, f64, u32), i32>(&keys.exports.key_fetch, (u32::from(issuer), now, code))?;
        let text = String::from_utf8_lossy(&keeper.output()?).into_owned();
        Ok(match answer {
            1 => Ok(Some(text)),
            0 => Ok(None),
            _ => Err(text),
        })
    }

    /// How long from `now` until issuer `issuer`'s next round is due
    /// without an ask; `None` while one is under way.
    pub fn key_fetch_wait(&self, issuer: u8, now: f64) -> Result<Option<Duration>, GuestError> {
        let keys = self.keys()?;
        let mut keeper = keys.lock()?;
        let secs = keeper.call::<(u32, f64), f64>(&keys.exports.key_fetch_wait, (u32::from(issuer), now))?;
        match secs {
            secs if secs.is_infinite() => Ok(None),
            secs if secs >= 0.0 => Ok(Some(Duration::from_secs_f64(secs))),
            _ => Err(GuestError::BadOutput("key_fetch_wait")),
        }
    }

    /// Hands issuer `issuer`'s round the document it fetched at `now`, with
    /// the response's `Cache-Control` value: what comes next. When the keys
    /// were installed, every instance made or reused afterwards decides
    /// with them.
    pub fn key_fetched(
        &self,
        issuer: u8,
        document: &[u8],
        cache_control: &[u8],
        now: f64,
    ) -> Result<RoundStep, GuestError> {
        let keys = self.keys()?;
        let mut keeper = keys.lock()?;
        let len = keeper.write_document(&keys.exports, document, keys.capacity)?;
        let field_len = keeper.write_field(keys.field, cache_control)?;
        let params = (u32::from(issuer), len, field_len, now);
        let answer = keeper.call::<(u32, u32, u32, f64), i32>(&keys.exports.key_fetched, params)?;
        let text = String::from_utf8_lossy(&keeper.output()?).into_owned();
        match answer {
            1 => Ok(RoundStep::Fetch(text)),
            0 => {
                keys.take_image(&mut keeper)?;
                Ok(RoundStep::Installed(text))
            }
            _ => Ok(RoundStep::Refused(text)),
        }
    }

    /// Tells the module the fetch of issuer `issuer`'s round failed at `now`.
    pub fn key_fetch_failed(&self, issuer: u8, now: f64) -> Result<(), GuestError> {
        let keys = self.keys()?;
        let mut keeper = keys.lock()?;
        match keeper.call::<(u32, f64), i32>(&keys.exports.key_fetch_failed, (u32::from(issuer), now))? {
            0 => Ok(()),
            _ => Err(GuestError::BadOutput("key_fetch_failed: no round under way")),
        }
    }

    fn keys(&self) -> Result<&Keys, GuestError> {
        self.keys.as_deref().ok_or(GuestError::BadOutput("the module fetches no keys"))
    }

    /// Has the module validate and install issuer `issuer`'s JWKS document
    /// at `now`: its one-line summary, or its reason for refusing the
    /// document (the installed keys then stay as they were). Every instance
    /// made or reused afterwards decides with the new keys.
    pub fn install_keys(&self, issuer: u8, document: &[u8], now: f64) -> Result<Verdict<String>, GuestError> {
        self.keys()?.install(issuer, document, now)
    }
}
