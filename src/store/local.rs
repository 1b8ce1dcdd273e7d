//! The local `file://` store's root model, as the reference's LocalFileStore has it.
//!
//! The root is created `0700`, must not be a symbolic link, must be owned by the effective user
//! (a group/other bit is tightened back to `0700`), and a handle's target, with symlinks
//! resolved, must stay inside the resolved root. Error texts are the reference's.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use object_store::ObjectStore;
use object_store::local::LocalFileSystem;

use crate::limits::StoreError;
use crate::limits::pyfmt::repr;

/// What a caller is about to do with an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read it (or its line index).
    Read,
    /// Write it (or its line index).
    Write,
}

/// The `file://` backend: the root's checks and the object_store filesystem over it, built on
/// first use (once the root exists and passed its checks).
///
/// Every method calls `std::fs` and may block: the store runs them on a blocking thread, within
/// its deadline.
#[derive(Debug)]
pub(crate) struct LocalBackend {
    root: LocalRoot,
    fs: OnceLock<Arc<dyn ObjectStore>>,
}

impl LocalBackend {
    /// A backend over the directory `root` (not touched until the first call).
    pub(crate) fn new(root: PathBuf) -> Self {
        Self {
            root: LocalRoot::new(root),
            fs: OnceLock::new(),
        }
    }

    /// The root directory.
    pub(crate) fn path(&self) -> &Path {
        self.root.path()
    }

    /// The filesystem, once `access` to the object at `relative` passed the root's checks: for a
    /// read, the root checked and the target confined to it; for a write, the root created and
    /// checked, and the directory the object goes into confined to it (see
    /// [`LocalRoot::confine_dir`]).
    pub(crate) fn checked(
        &self,
        access: Access,
        relative: &str,
        handle: &str,
    ) -> Result<Arc<dyn ObjectStore>, StoreError> {
        match access {
            Access::Read => {
                self.root.check()?;
                self.root.confine(relative, handle)?;
            }
            Access::Write => {
                self.root.ensure()?;
                self.root.confine_dir(relative, handle)?;
            }
        }
        self.fs()
    }

    /// Before a listing: the root checked; `None` while it does not exist (nothing is stored).
    pub(crate) fn for_listing(&self) -> Result<Option<Arc<dyn ObjectStore>>, StoreError> {
        match self.root.check() {
            Ok(()) => self.fs().map(Some),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Before deleting `paths`: the root checked, and the paths whose target leaves it dropped
    /// (never delete through a symlink that leads out of the root).
    pub(crate) fn for_delete(
        &self,
        mut paths: Vec<object_store::path::Path>,
    ) -> Result<(Arc<dyn ObjectStore>, Vec<object_store::path::Path>), StoreError> {
        self.root.check()?;
        paths.retain(|p| self.root.confine(p.as_ref(), p.as_ref()).is_ok());
        Ok((self.fs()?, paths))
    }

    /// After a garbage collection: remove the directories it left empty below `base` (never
    /// `base` itself).
    pub(crate) fn prune_empty_dirs(
        &self,
        deleted: &[object_store::path::Path],
        base: &object_store::path::Path,
    ) {
        let stop = self.path().join(base.as_ref());
        for path in deleted {
            let mut dir = self.path().join(path.as_ref());
            while dir.pop() && dir.starts_with(&stop) && dir != stop {
                if std::fs::remove_dir(&dir).is_err() {
                    break;
                }
            }
        }
    }

    fn fs(&self) -> Result<Arc<dyn ObjectStore>, StoreError> {
        if let Some(fs) = self.fs.get() {
            return Ok(fs.clone());
        }
        let built: Arc<dyn ObjectStore> = Arc::new(
            LocalFileSystem::new_with_prefix(self.path())
                .map_err(|e| StoreError::Backend(Box::new(e)))?,
        );
        Ok(self.fs.get_or_init(|| built).clone())
    }
}

/// A local store root and its checks.
#[derive(Debug, Clone)]
struct LocalRoot {
    path: PathBuf,
}

/// The default root: `<system temp dir>/overspill-<euid>`, private to the user.
pub(crate) fn default_root() -> PathBuf {
    #[cfg(unix)]
    let name = format!("overspill-{}", euid());
    #[cfg(not(unix))]
    let name = "overspill".to_owned();
    std::env::temp_dir().join(name)
}

/// The effective user id.
#[cfg(unix)]
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

impl LocalRoot {
    /// A root at `path` (not touched until the first read or write).
    pub(crate) fn new(path: PathBuf) -> Self {
        // Without a trailing `/`, which would make lstat follow a symlinked root.
        let path = path.components().collect();
        Self { path }
    }

    /// The root directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Before a write: create the root (`0700`; parents with the default mode) and check it.
    pub(crate) fn ensure(&self) -> Result<(), StoreError> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&self.path)
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        self.check()
    }

    /// Before every read and write: refuse a symlinked or foreign-owned root, tighten its mode.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        #[cfg(unix)]
        return self.check_as(euid());
        #[cfg(not(unix))]
        return self.check_link().map(|_| ());
    }

    fn check_link(&self) -> Result<std::fs::Metadata, StoreError> {
        let meta = std::fs::symlink_metadata(&self.path).map_err(|e| io_error(e, &self.path))?;
        if meta.file_type().is_symlink() {
            return Err(StoreError::PermissionDenied(format!(
                "Overflow store root {} is a symbolic link; refusing to use it.",
                repr(&self.path.to_string_lossy())
            )));
        }
        Ok(meta)
    }

    /// [`check`](Self::check) for a given effective user (testable without a second account).
    #[cfg(unix)]
    pub(crate) fn check_as(&self, euid: u32) -> Result<(), StoreError> {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let meta = self.check_link()?;
        if meta.uid() != euid {
            return Err(StoreError::PermissionDenied(format!(
                "Overflow store root {} is not owned by the current user; refusing to write spilled tool output there.",
                repr(&self.path.to_string_lossy())
            )));
        }
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| StoreError::Backend(Box::new(e)))?;
        }
        Ok(())
    }

    /// Refuse a target that, with symlinks resolved, leaves the resolved root.
    ///
    /// `relative` is the object's path below the root. A missing target is `NotFound`.
    pub(crate) fn confine(&self, relative: &str, handle: &str) -> Result<PathBuf, StoreError> {
        let root = std::fs::canonicalize(&self.path).map_err(|e| io_error(e, &self.path))?;
        let target = std::fs::canonicalize(self.path.join(relative)).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                StoreError::NotFound {
                    handle: handle.to_owned(),
                }
            } else {
                StoreError::Backend(Box::new(e))
            }
        })?;
        if !target.starts_with(&root) {
            return Err(outside(handle));
        }
        Ok(target)
    }

    /// Before a write: refuse an object at `relative` whose directory, with symlinks resolved,
    /// leaves the resolved root. A directory symlink inside the root would otherwise redirect the
    /// write (and the delete of a stale index beside it) outside.
    ///
    /// Judged on the deepest part of the directory that exists (a symlink counts, dangling or
    /// not): what is missing below it is created inside it.
    pub(crate) fn confine_dir(&self, relative: &str, handle: &str) -> Result<(), StoreError> {
        let root = std::fs::canonicalize(&self.path).map_err(|e| io_error(e, &self.path))?;
        let mut dir = self.path.join(relative);
        dir.pop();
        while std::fs::symlink_metadata(&dir).is_err() && dir.pop() {}
        match std::fs::canonicalize(&dir) {
            Ok(resolved) if resolved.starts_with(&root) => Ok(()),
            // Outside, or a dangling symlink, which resolves nowhere inside the root.
            _ => Err(outside(handle)),
        }
    }
}

/// The reference's refusal of a handle that resolves outside the root.
fn outside(handle: &str) -> StoreError {
    StoreError::PermissionDenied(format!(
        "Handle {} resolves outside the store root.",
        repr(handle)
    ))
}

fn io_error(e: io::Error, path: &Path) -> StoreError {
    match e.kind() {
        io::ErrorKind::NotFound => StoreError::NotFound {
            handle: path.to_string_lossy().into_owned(),
        },
        io::ErrorKind::PermissionDenied => StoreError::PermissionDenied(e.to_string()),
        _ => StoreError::Backend(Box::new(e)),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::{PermissionsExt as _, symlink};

    use super::*;

    #[test]
    fn creates_a_private_root_and_tightens_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = LocalRoot::new(dir.path().join("a/b/root"));
        root.ensure().unwrap();
        let mode = std::fs::metadata(root.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        root.check().unwrap();
        let mode = std::fs::metadata(root.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn refuses_a_symlinked_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        let root = LocalRoot::new(dir.path().join("link"));
        let err = root.ensure().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "Overflow store root '{}' is a symbolic link; refusing to use it.",
                dir.path().join("link").display()
            )
        );
        assert!(err.is_unknown_handle());
    }

    #[test]
    fn refuses_a_foreign_owned_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = LocalRoot::new(dir.path().to_path_buf());
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
        let root = LocalRoot::new(dir.path().join("root"));
        root.ensure().unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::fs::write(root.path().join("inside"), "i").unwrap();
        symlink(dir.path().join("secret"), root.path().join("escape")).unwrap();
        symlink(root.path().join("inside"), root.path().join("alias")).unwrap();
        assert!(root.confine("inside", "inside").is_ok());
        assert!(root.confine("alias", "alias").is_ok());
        let err = root.confine("escape", "run/escape").unwrap_err();
        assert_eq!(
            err.to_string(),
            "Handle 'run/escape' resolves outside the store root."
        );
        assert!(matches!(
            root.confine("missing", "missing"),
            Err(StoreError::NotFound { .. })
        ));
    }
}
