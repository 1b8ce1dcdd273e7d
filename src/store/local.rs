//! The local `file://` store's root model, as the reference's LocalFileStore has it.
//!
//! The root is created `0700`, must not be a symbolic link, must be owned by the effective user
//! (a group/other bit is tightened back to `0700`), and a handle's target, with symlinks
//! resolved, must stay inside the resolved root. Error texts are the reference's. Reads and
//! writes, once checked, are object_store's `LocalFileSystem`'s.

use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use object_store::ObjectStore;
use object_store::local::LocalFileSystem;

use super::StoreError;
use crate::limits::pyfmt::repr;

/// What a caller is about to do with an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read it (or its line index).
    Read,
    /// Write it (or its line index).
    Write,
}

/// The extended attribute a spill's file keeps its facts in (`SpillFacts`' query form).
const FACTS_XATTR: &str = "user.overspill";

/// Linux's `XATTR_SIZE_MAX`: no extended attribute value is longer.
const XATTR_SIZE_MAX: usize = 64 << 10;

/// The `file://` backend: the root's checks and the object_store filesystem over it, built on
/// first use (once the root exists and passed its checks).
///
/// Every method calls `std::fs` and may block: the store runs them on a blocking thread, within
/// its deadline.
#[derive(Debug)]
pub(crate) struct LocalBackend {
    root: PathBuf,
    fs: OnceLock<Arc<LocalFileSystem>>,
    /// Whether a call found that the root's filesystem keeps no extended attributes (said once).
    no_xattrs: AtomicBool,
}

impl LocalBackend {
    /// A backend over the directory `root` (not touched until the first call).
    pub(crate) fn new(root: PathBuf) -> Self {
        Self {
            // Without a trailing `/`, which would make lstat follow a symlinked root.
            root: root.components().collect(),
            fs: OnceLock::new(),
            no_xattrs: AtomicBool::new(false),
        }
    }

    /// The filesystem, once `access` to the object at `relative` passed the root's checks: for a
    /// read, the root checked and the target confined to it; for a write, the root created and
    /// checked, and the directory the object goes into confined to it (see
    /// [`Self::confine_dir`]).
    pub(crate) fn checked(
        &self,
        access: Access,
        relative: &str,
        handle: &str,
    ) -> Result<Arc<dyn ObjectStore>, StoreError> {
        match access {
            Access::Read => {
                self.check()?;
                self.confine(relative, handle)?;
            }
            Access::Write => {
                self.ensure()?;
                self.confine_dir(relative, handle)?;
            }
        }
        Ok(self.fs()?)
    }

    /// Before a listing: the root checked; `None` while it does not exist (nothing is stored).
    pub(crate) fn for_listing(&self) -> Result<Option<Arc<dyn ObjectStore>>, StoreError> {
        match self.check() {
            Ok(()) => Ok(Some(self.fs()?)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Delete the files at `paths` (the root checked; a path whose target leaves it is skipped:
    /// never delete through a symlink that leads out of the root), then the directories that left
    /// empty below `base` (never `base` itself); returns the files deleted.
    pub(crate) fn delete(
        &self,
        paths: &[object_store::path::Path],
        base: &object_store::path::Path,
    ) -> Result<usize, StoreError> {
        self.check()?;
        let stop = self.root.join(base.as_ref());
        let mut deleted = 0;
        for path in paths {
            if self.confine(path.as_ref(), path.as_ref()).is_err() {
                continue;
            }
            let mut file = self.root.join(path.as_ref());
            match std::fs::remove_file(&file) {
                Ok(()) => deleted += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::Backend(Box::new(e))),
            }
            while file.pop() && file.starts_with(&stop) && file != stop {
                if std::fs::remove_dir(&file).is_err() {
                    break;
                }
            }
        }
        Ok(deleted)
    }

    /// Keep `facts` (URL query form) in the `user.overspill` extended attribute of the file at
    /// `location`. When the facts are `required` (they name a writer whose own reads are
    /// scoped), a failure is the write's: a final store error saying why. Otherwise a filesystem
    /// without extended attributes keeps none (said once, at INFO), any other failure is logged
    /// at WARN with its cause, and the spill stands with its facts unknown.
    pub(crate) fn set_facts(
        &self,
        location: &object_store::path::Path,
        facts: &str,
        required: bool,
    ) -> Result<(), StoreError> {
        let path = self.root.join(location.as_ref());
        let flags = rustix::fs::XattrFlags::empty();
        match rustix::fs::setxattr(&path, FACTS_XATTR, facts.as_bytes(), flags) {
            Ok(()) => Ok(()),
            Err(e) if required => Err(keep_failed(&path, e)),
            Err(e) => {
                self.xattr_failed("keep", &path, e);
                Ok(())
            }
        }
    }

    /// The facts (URL query form) the file at `location` keeps, if any: none on a file written
    /// without them, a file gone since, or a filesystem without extended attributes (said once,
    /// at INFO). Any other failure is a store error ([`read_failed`]), never an unknown writer,
    /// which would make a workflow's own spill read as missing. Read into a page, and again into
    /// the largest buffer an attribute needs only when they are longer (every read checks a
    /// writer here).
    pub(crate) fn facts(
        &self,
        location: &object_store::path::Path,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.root.join(location.as_ref());
        for size in [4 << 10, XATTR_SIZE_MAX] {
            let mut buf = vec![0; size];
            match rustix::fs::getxattr(&path, FACTS_XATTR, &mut buf[..]) {
                Ok(len) => {
                    buf.truncate(len);
                    return Ok(Some(buf));
                }
                Err(rustix::io::Errno::RANGE) => {}
                // No such attribute (ENODATA), or the file went away since it was listed.
                Err(rustix::io::Errno::NODATA | rustix::io::Errno::NOENT) => return Ok(None),
                Err(e @ rustix::io::Errno::NOTSUP) => {
                    self.xattr_failed("read", &path, e);
                    return Ok(None);
                }
                Err(e) => return Err(read_failed(&path, e)),
            }
        }
        Ok(None)
    }

    /// Whether the root's filesystem keeps user extended attributes, where a spill's facts (and
    /// its writer) are kept: one is set on the root and removed again.
    pub(crate) fn keeps_facts(&self) -> Result<bool, StoreError> {
        self.ensure()?;
        let probe = "user.overspill-probe";
        match rustix::fs::setxattr(&self.root, probe, b"", rustix::fs::XattrFlags::empty()) {
            Ok(()) => {
                let _ = rustix::fs::removexattr(&self.root, probe);
                Ok(true)
            }
            Err(rustix::io::Errno::NOTSUP) => Ok(false),
            Err(e) => Err(StoreError::Backend(Box::new(io::Error::from(e)))),
        }
    }

    /// Report a failed extended-attribute call on `path`: once at INFO for a filesystem without
    /// them, at WARN with the cause otherwise.
    fn xattr_failed(&self, verb: &str, path: &Path, e: rustix::io::Errno) {
        if e == rustix::io::Errno::NOTSUP {
            if !self
                .no_xattrs
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                tracing::info!(
                    target: "overspill::store",
                    "the filesystem of store root {} keeps no extended attributes: \
                     list_tool_results shows local spills without their tool, sizes and first line",
                    self.root.display()
                );
            }
        } else {
            tracing::warn!(
                target: "overspill::store",
                "could not {verb} the facts ({FACTS_XATTR} attribute) of {}: {e}; its listing \
                 shows them as unknown",
                path.display()
            );
        }
    }

    fn fs(&self) -> Result<Arc<LocalFileSystem>, StoreError> {
        if let Some(fs) = self.fs.get() {
            return Ok(fs.clone());
        }
        let built = LocalFileSystem::new_with_prefix(&self.root)
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        Ok(self.fs.get_or_init(|| Arc::new(built)).clone())
    }

    /// Before a write: create the root (`0700`; parents with the default mode) and check it.
    fn ensure(&self) -> Result<(), StoreError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.root)
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        self.check()
    }

    /// Before every read and write: refuse a symlinked or foreign-owned root, tighten its mode.
    fn check(&self) -> Result<(), StoreError> {
        self.check_as(euid())
    }

    /// [`check`](Self::check) for a given effective user (testable without a second account).
    fn check_as(&self, euid: u32) -> Result<(), StoreError> {
        let meta = std::fs::symlink_metadata(&self.root).map_err(|e| io_error(e, &self.root))?;
        let refuse = |why: &str| {
            let root = repr(&self.root.to_string_lossy());
            Err(StoreError::PermissionDenied(format!(
                "Overflow store root {root} {why}"
            )))
        };
        if meta.file_type().is_symlink() {
            return refuse("is a symbolic link; refusing to use it.");
        }
        if meta.uid() != euid {
            return refuse(
                "is not owned by the current user; refusing to write spilled tool output there.",
            );
        }
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(&self.root, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| StoreError::Backend(Box::new(e)))?;
        }
        Ok(())
    }

    /// Refuse a target that, with symlinks resolved, leaves the resolved root.
    ///
    /// `relative` is the object's path below the root. A missing target is `NotFound`.
    fn confine(&self, relative: &str, handle: &str) -> Result<(), StoreError> {
        let root = std::fs::canonicalize(&self.root).map_err(|e| io_error(e, &self.root))?;
        match std::fs::canonicalize(self.root.join(relative)) {
            Ok(target) if target.starts_with(&root) => Ok(()),
            Ok(_) => Err(outside(handle)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(StoreError::NotFound {
                handle: handle.to_owned(),
            }),
            Err(e) => Err(io_error(e, &self.root.join(relative))),
        }
    }

    /// Before a write: refuse an object at `relative` whose directory, with symlinks resolved,
    /// leaves the resolved root. A directory symlink inside the root would otherwise redirect the
    /// write (and the delete of a stale index beside it) outside.
    ///
    /// Judged on the deepest part of the directory that exists (a symlink counts, dangling or
    /// not): what is missing below it is created inside it.
    fn confine_dir(&self, relative: &str, handle: &str) -> Result<(), StoreError> {
        let root = std::fs::canonicalize(&self.root).map_err(|e| io_error(e, &self.root))?;
        let mut dir = self.root.join(relative);
        dir.pop();
        while std::fs::symlink_metadata(&dir).is_err() && dir.pop() {}
        match std::fs::canonicalize(&dir) {
            Ok(resolved) if resolved.starts_with(&root) => Ok(()),
            // Outside, or a dangling symlink, which resolves nowhere inside the root.
            _ => Err(outside(handle)),
        }
    }
}

/// The refusal of a handle that resolves outside the root: to a reader, the same as a missing
/// handle.
fn outside(handle: &str) -> StoreError {
    StoreError::OutsideStore {
        handle: handle.to_owned(),
    }
}

/// The store's error for `e`, met on `path`: a missing path is `NotFound`, a path this user may
/// not read is the store refusing ([`StoreError::PermissionDenied`], never an unknown handle).
fn io_error(e: io::Error, path: &Path) -> StoreError {
    match e.kind() {
        io::ErrorKind::NotFound => StoreError::NotFound {
            handle: path.to_string_lossy().into_owned(),
        },
        io::ErrorKind::PermissionDenied => StoreError::PermissionDenied(format!(
            "the store cannot use {}: {e}",
            repr(&path.to_string_lossy())
        )),
        _ => StoreError::Backend(Box::new(e)),
    }
}

/// The default root: `<system temp dir>/overspill-<euid>`, private to the user.
pub(crate) fn default_root() -> PathBuf {
    std::env::temp_dir().join(format!("overspill-{}", euid()))
}

/// The effective user id.
pub(crate) fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// The store error for a failed read of the facts of the file at `path`: the file refusing to be
/// read is [`StoreError::PermissionDenied`] (final), any other failure (an I/O error) is retryable.
fn read_failed(path: &Path, e: rustix::io::Errno) -> StoreError {
    let text = format!(
        "could not read the writer ({FACTS_XATTR} attribute) of {}: {e}",
        path.display()
    );
    match e {
        rustix::io::Errno::ACCESS | rustix::io::Errno::PERM => StoreError::PermissionDenied(text),
        _ => StoreError::Backend(text.into()),
    }
}

/// The store error for a spill at `path` whose writer could not be kept: final, since its own
/// workflow could never read it back ([`StoreError::PermissionDenied`] for a file that refuses
/// it, else [`StoreError::Misconfigured`]: a filesystem without or out of room for extended
/// attributes).
fn keep_failed(path: &Path, e: rustix::io::Errno) -> StoreError {
    let text = format!(
        "could not record the writer ({FACTS_XATTR} attribute) of {}: {e}; without it the \
         workflow that wrote the spill could not read it back under --read-scope workflow or \
         namespace. Put the store on a filesystem that keeps user extended attributes, or run \
         the worker with --read-scope any",
        path.display()
    );
    match e {
        rustix::io::Errno::ACCESS | rustix::io::Errno::PERM => StoreError::PermissionDenied(text),
        _ => StoreError::Misconfigured(text),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt as _, symlink};

    use super::*;

    /// A failed read of a spill's writer is the store failing, never an unknown writer (which
    /// would read the workflow's own spill as missing); a missing attribute is an unknown writer.
    #[test]
    fn a_failed_read_of_the_writer_is_a_store_error() {
        let path = Path::new("/root/tool_output_limits/r/c.0");
        let denied = read_failed(path, rustix::io::Errno::ACCESS);
        assert!(
            matches!(denied, StoreError::PermissionDenied(_)),
            "{denied}"
        );
        let io = read_failed(path, rustix::io::Errno::IO);
        assert!(io.is_retryable() && !io.is_unknown_handle(), "{io}");
        assert!(io.to_string().contains("user.overspill"), "{io}");

        let dir = tempfile::tempdir().unwrap();
        let local = LocalBackend::new(dir.path().join("root"));
        local.ensure().unwrap();
        std::fs::write(dir.path().join("root/plain"), "x").unwrap();
        let plain = object_store::path::Path::from("plain");
        assert_eq!(local.facts(&plain).unwrap(), None);
        let gone = object_store::path::Path::from("gone");
        assert_eq!(local.facts(&gone).unwrap(), None);
    }

    /// A writer that could not be kept fails the write with a final error saying why, when the
    /// writer's own reads need it.
    #[test]
    fn a_writer_that_cannot_be_kept_fails_the_write() {
        let path = Path::new("/root/tool_output_limits/r/c.0");
        for e in [
            rustix::io::Errno::NOTSUP,
            rustix::io::Errno::NOSPC,
            rustix::io::Errno::PERM,
        ] {
            let failed = keep_failed(path, e);
            assert!(!failed.is_retryable(), "{failed}");
            assert!(failed.to_string().contains("--read-scope any"), "{failed}");
        }
        // A file that cannot take the attribute (here: gone) fails a write that needs it.
        let dir = tempfile::tempdir().unwrap();
        let local = LocalBackend::new(dir.path().join("root"));
        local.ensure().unwrap();
        let gone = object_store::path::Path::from("gone");
        let failed = local
            .set_facts(&gone, "scope=default%2Fwf", true)
            .unwrap_err();
        assert!(matches!(failed, StoreError::Misconfigured(_)), "{failed}");
        assert!(local.set_facts(&gone, "chars=1", false).is_ok());
    }

    #[test]
    fn creates_a_private_root_and_tightens_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = LocalBackend::new(dir.path().join("a/b/root"));
        root.ensure().unwrap();
        let mode = std::fs::metadata(&root.root).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(&root.root, std::fs::Permissions::from_mode(0o755)).unwrap();
        root.check().unwrap();
        let mode = std::fs::metadata(&root.root).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn refuses_a_symlinked_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        let root = LocalBackend::new(dir.path().join("link"));
        let err = root.ensure().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "Overflow store root '{}' is a symbolic link; refusing to use it.",
                dir.path().join("link").display()
            )
        );
        assert!(
            !err.is_unknown_handle(),
            "the store's failure, not a missing spill"
        );
    }

    #[test]
    fn refuses_a_foreign_owned_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = LocalBackend::new(dir.path().to_path_buf());
        let err = root.check_as(euid().wrapping_add(1)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "Overflow store root '{}' is not owned by the current user; refusing to write spilled tool output there.",
                dir.path().display()
            )
        );
    }

    #[test]
    fn confines_targets_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = LocalBackend::new(dir.path().join("root"));
        root.ensure().unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::fs::write(root.root.join("inside"), "i").unwrap();
        symlink(dir.path().join("secret"), root.root.join("escape")).unwrap();
        symlink(root.root.join("inside"), root.root.join("alias")).unwrap();
        assert!(root.confine("inside", "inside").is_ok());
        assert!(root.confine("alias", "alias").is_ok());
        let err = root.confine("escape", "run/escape").unwrap_err();
        assert_eq!(
            err.to_string(),
            "handle \"run/escape\" resolves outside the store"
        );
        assert!(err.is_unknown_handle());
        assert!(matches!(
            root.confine("missing", "missing"),
            Err(StoreError::NotFound { .. })
        ));
    }

    /// A filesystem without extended attributes is said once, at INFO; any other failure to keep
    /// or read the facts is a WARN with its cause.
    #[test]
    fn xattr_failures_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().to_path_buf());
        let logs = crate::test_logs::Logs::default();
        let _guard = logs.capture();
        let file = dir.path().join("spill");
        backend.xattr_failed("keep", &file, rustix::io::Errno::NOTSUP);
        backend.xattr_failed("keep", &file, rustix::io::Errno::NOTSUP);
        let text = logs.text();
        assert_eq!(
            text.matches("keeps no extended attributes").count(),
            1,
            "{text}"
        );
        assert!(text.contains("INFO"), "{text}");
        let missing = object_store::path::Path::from("gone/spill");
        backend.set_facts(&missing, "chars=1", false).unwrap();
        let text = logs.text();
        assert!(
            text.contains("WARN") && text.contains("could not keep the facts"),
            "{text}"
        );
        assert!(text.contains("No such file or directory"), "{text}");
        // A file without the attribute has no facts, and nothing to report.
        std::fs::write(&file, "x").unwrap();
        let before = logs.text().len();
        assert_eq!(
            backend
                .facts(&object_store::path::Path::from("spill"))
                .unwrap(),
            None
        );
        assert_eq!(logs.text().len(), before, "{}", logs.text());
    }

    /// Facts longer than a page read back whole (a long percent-encoded handle), where the
    /// filesystem keeps them: tmpfs does, ext4 only about 4 KB.
    #[test]
    fn long_facts_read_back_whole() {
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
            return;
        };
        let backend = LocalBackend::new(dir.path().to_path_buf());
        std::fs::write(dir.path().join("spill"), "").unwrap();
        let location = object_store::path::Path::from("spill");
        let facts = format!("handle={}&first=x", "%C3%BC".repeat(2_000));
        backend.set_facts(&location, &facts, true).unwrap();
        let kept = backend.facts(&location).unwrap();
        assert_eq!(kept.as_deref(), Some(facts.as_bytes()));
    }
}
