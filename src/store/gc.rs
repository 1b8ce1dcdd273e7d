//! The full listing (`overspill spills ls`) and garbage collection: every object under the
//! store's namespace, from one listing without delimiters, the same on every backend.

use std::collections::HashSet;
use std::time::SystemTime;

use futures::{StreamExt as _, TryStreamExt as _};
use object_store::ObjectMeta;
use object_store::path::Path;

use super::StoreError;
use super::{Call, INDEX_SUFFIX, Store};

/// One stored spill, as `overspill spills ls` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillInfo {
    /// The handle: the stored key (readable as a handle: sanitizing is idempotent), or, from
    /// [`Store::list_spills`], the handle its marker shows.
    pub handle: String,
    /// The payload's size in bytes.
    pub size: u64,
    /// When the payload was last written.
    pub last_modified: SystemTime,
}

/// What a garbage collection removed (or would remove, on a dry run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// The spills removed, oldest first.
    pub removed: Vec<SpillInfo>,
    /// Spills newer than the cutoff, kept.
    pub kept: usize,
    /// Objects deleted, line indexes included (0 on a dry run).
    pub deleted_objects: usize,
}

impl Store {
    /// The spills stored (for one run when `run` is given), in path order, within the scan
    /// deadline ([`StoreOptions`](super::StoreOptions)'s `scan_timeout`).
    pub async fn list(&self, run: Option<&str>) -> Result<Vec<SpillInfo>, StoreError> {
        let prefix = run.map_or_else(|| self.inner.base.clone(), |run| self.object_path(run));
        self.scan(async {
            let metas = self.list_objects(&prefix).await?;
            Ok(metas
                .iter()
                .filter(|m| !m.location.as_ref().ends_with(INDEX_SUFFIX))
                .map(|m| self.info(m))
                .collect())
        })
        .await
    }

    /// Delete the spills (and their line indexes) last written before `cutoff` (the CLI passes
    /// now minus `--older-than`), within the scan deadline ([`StoreOptions`](super::StoreOptions)'s
    /// `scan_timeout`).
    ///
    /// Lists every object under the store's namespace (no delimiter listings), so it works the
    /// same on S3-compatible servers and local directories. An index goes with its payload; an
    /// index whose payload is gone goes once it is older than the cutoff.
    pub async fn gc(&self, cutoff: SystemTime, dry_run: bool) -> Result<GcReport, StoreError> {
        self.scan(self.collect(cutoff, dry_run)).await
    }

    async fn collect(&self, cutoff: SystemTime, dry_run: bool) -> Result<GcReport, StoreError> {
        let metas = self.list_objects(&self.inner.base).await?;
        let present: HashSet<&str> = metas.iter().map(|m| m.location.as_ref()).collect();
        let mut report = GcReport::default();
        let mut doomed: Vec<Path> = Vec::new();
        for meta in &metas {
            let path = meta.location.as_ref();
            let old = SystemTime::from(meta.last_modified) < cutoff;
            match path.strip_suffix(INDEX_SUFFIX) {
                Some(payload) => {
                    if old && !present.contains(payload) {
                        doomed.push(meta.location.clone());
                    }
                }
                None if old => {
                    report.removed.push(self.info(meta));
                    doomed.push(meta.location.clone());
                    let index = format!("{path}{INDEX_SUFFIX}");
                    if present.contains(index.as_str()) {
                        doomed.push(Path::from(index));
                    }
                }
                None => report.kept += 1,
            }
        }
        report.removed.sort_by_key(|s| s.last_modified);
        if dry_run || doomed.is_empty() {
            return Ok(report);
        }
        // A missing object (deleted since it was listed) or a local path that leads out of the
        // root is not deleted, and not counted.
        let locations = futures::stream::iter(doomed.into_iter().map(Ok)).boxed();
        let mut deleted = self.inner.store.delete_stream(locations);
        while let Some(result) = deleted.next().await {
            match result.map_err(|e| self.map_error(e, "", Call::List)) {
                Ok(_) => report.deleted_objects += 1,
                Err(e) if e.is_unknown_handle() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(report)
    }

    fn info(&self, meta: &ObjectMeta) -> SpillInfo {
        let location = meta.location.as_ref();
        let base = format!("{}/", self.inner.base);
        SpillInfo {
            handle: location.strip_prefix(&base).unwrap_or(location).to_owned(),
            size: meta.size,
            last_modified: SystemTime::from(meta.last_modified),
        }
    }

    async fn list_objects(&self, prefix: &Path) -> Result<Vec<ObjectMeta>, StoreError> {
        let listed = self.inner.store.list(Some(prefix)).try_collect().await;
        listed.map_err(|e| self.map_error(e, "", Call::List))
    }
}
