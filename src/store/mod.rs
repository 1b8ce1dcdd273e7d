//! Spill storage (stub until the store issue lands: memory only).

use bytes::Bytes;

use crate::limits::{MemoryStore, SpillStore, StoreError};

/// The spill store chosen by URL.
#[derive(Debug, Default)]
pub struct Store {
    inner: MemoryStore,
}

impl Store {
    /// Open the store at `url` (`None`: the local default).
    pub fn open(url: Option<&str>) -> Result<Self, StoreError> {
        let _ = url;
        Ok(Self::default())
    }
}

impl SpillStore for Store {
    async fn write(&self, key: &str, data: Bytes) -> Result<String, StoreError> {
        self.inner.write(key, data).await
    }
    async fn read(&self, handle: &str) -> Result<Bytes, StoreError> {
        self.inner.read(handle).await
    }
}
