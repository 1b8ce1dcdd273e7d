//! The engine's door to storage: a Spill reaches a store only through [`SpillStore`], so the
//! engine runs unchanged over `object_store` in an activity, over an activity call inside
//! workflow code, or over [`MemoryStore`] in a test.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Mutex;

use bytes::Bytes;

/// Why a write to a [`SpillStore`] failed, as the engine logs it when a Spill falls back.
pub trait SpillError: std::error::Error {
    /// The error's type name, as logged in fallback warnings (`Spilling output … failed
    /// (Timeout)`).
    fn type_name(&self) -> &'static str;
}

/// A store that never fails.
impl SpillError for Infallible {
    fn type_name(&self) -> &'static str {
        match *self {}
    }
}

/// Where spilled payloads go: write a key, get a handle back. Reading them back is paging's
/// concern (`read::SpillReader`), not the engine's.
///
/// A write of an existing key must be an overwrite (replays and retries write the same key again).
/// The engine never needs `Send` futures, so the trait serves workflow code too.
#[allow(async_fn_in_trait)]
pub trait SpillStore {
    /// Why a write failed.
    type Error: SpillError;

    /// Persist `data` under `key` and return the handle the model will use to read it back.
    async fn write(&self, key: &str, data: Bytes) -> Result<String, Self::Error>;

    /// [`SpillStore::write`] by run step `step`, which the store records with the spill where it
    /// can ([`SpillStore::step_of`] finds it). By default the step is not recorded.
    async fn write_at_step(
        &self,
        key: &str,
        data: Bytes,
        step: u64,
    ) -> Result<String, Self::Error> {
        let _ = step;
        self.write(key, data).await
    }

    /// Whether a spill is stored under `key`, and the run step that wrote it: `None` for no
    /// spill, `Some(None)` for one whose step is not known. By default a store keeps no steps and
    /// answers `None`, so that every spill takes its plain key.
    async fn step_of(&self, key: &str) -> Result<Option<Option<u64>>, Self::Error> {
        let _ = key;
        Ok(None)
    }
}

/// A store for configurations that never spill: every write fails, so a Spill falls back.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoStore;

impl SpillStore for NoStore {
    type Error = NoStoreConfigured;

    async fn write(&self, _key: &str, _data: Bytes) -> Result<String, NoStoreConfigured> {
        Err(NoStoreConfigured)
    }
}

/// Every write to [`NoStore`] fails so: the store refuses to be used.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("no spill store is configured")]
pub struct NoStoreConfigured;

impl SpillError for NoStoreConfigured {
    fn type_name(&self) -> &'static str {
        "PermissionDenied"
    }
}

/// An in-memory [`SpillStore`], for tests and workflow-side experiments. Handle = key. It
/// records the run step of a write ([`SpillStore::write_at_step`]).
#[derive(Debug, Default)]
pub struct MemoryStore {
    objects: Mutex<BTreeMap<String, (Bytes, Option<u64>)>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The handles stored so far, in order.
    pub fn handles(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// The payload stored under `handle`.
    pub fn get(&self, handle: &str) -> Option<Bytes> {
        self.lock().get(handle).map(|(data, _)| data.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (Bytes, Option<u64>)>> {
        self.objects.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SpillStore for MemoryStore {
    type Error = Infallible;

    async fn write(&self, key: &str, data: Bytes) -> Result<String, Infallible> {
        self.lock().insert(key.to_owned(), (data, None));
        Ok(key.to_owned())
    }

    async fn write_at_step(&self, key: &str, data: Bytes, step: u64) -> Result<String, Infallible> {
        self.lock().insert(key.to_owned(), (data, Some(step)));
        Ok(key.to_owned())
    }

    async fn step_of(&self, key: &str) -> Result<Option<Option<u64>>, Infallible> {
        Ok(self.lock().get(key).map(|(_, step)| *step))
    }
}
