//! The local `file://` store's root model, as the reference's LocalFileStore has it.
//!
//! The root is created `0700`, must not be a symbolic link, must be owned by the effective user
//! (a group/other bit is tightened back to `0700`), and a handle's target, with symlinks
//! resolved, must stay inside the resolved root. Error texts are the reference's.

use std::io::{self, Read as _, Seek as _, Write as _};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use object_store::local::LocalFileSystem;
use object_store::{GetRange, ObjectStore};

use crate::limits::StoreError;
use crate::limits::pyfmt::repr;
use crate::read::Version;

/// What a caller is about to do with an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read it (or its line index).
    Read,
    /// Write it (or its line index).
    Write,
}

/// An object's file, open for reading.
pub(crate) struct OpenFile {
    pub(crate) file: std::fs::File,
    /// Where it is, for error messages.
    pub(crate) path: PathBuf,
    /// Its version when it was opened.
    pub(crate) version: Version,
}

/// A failed read of the file at `path`, naming it.
fn reading(path: &Path, e: io::Error) -> StoreError {
    let e = io::Error::new(e.kind(), format!("reading {}: {e}", path.display()));
    StoreError::Backend(Box::new(e))
}

/// The `file://` backend: the root's checks and the object_store filesystem over it, built on
/// first use (once the root exists and passed its checks).
///
/// Every method calls `std::fs` and may block: the store runs them on a blocking thread, within
/// its deadline.
#[derive(Debug)]
pub(crate) struct LocalBackend {
    root: PathBuf,
    fs: OnceLock<Arc<LocalFileSystem>>,
}

impl LocalBackend {
    /// A backend over the directory `root` (not touched until the first call).
    pub(crate) fn new(root: PathBuf) -> Self {
        Self {
            // Without a trailing `/`, which would make lstat follow a symlinked root.
            root: root.components().collect(),
            fs: OnceLock::new(),
        }
    }

    /// The root directory.
    pub(crate) fn path(&self) -> &Path {
        &self.root
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

    /// Before deleting `paths`: the root checked, and the paths whose target leaves it dropped
    /// (never delete through a symlink that leads out of the root).
    pub(crate) fn for_delete(
        &self,
        mut paths: Vec<object_store::path::Path>,
    ) -> Result<(Arc<dyn ObjectStore>, Vec<object_store::path::Path>), StoreError> {
        self.check()?;
        paths.retain(|p| self.confine(p.as_ref(), p.as_ref()).is_ok());
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

    /// Write `data` to the object at `location` (spill `key`'s) after the root's checks for a
    /// write; returns the filesystem (for the index beside it) and the e-tag its reads report for
    /// the new file.
    ///
    /// As object_store's `LocalFileSystem` writes: a staged `{file}#{n}` created exclusively,
    /// closed (network filesystems report late write errors there), then renamed over the
    /// target, so a reader never sees a torn file. One step more: the staged file's blocks are
    /// reserved before the write, so ext4 neither reserves them page by page nor flushes the file
    /// when the rename replaces an older one. As with object_store's default, nothing is synced:
    /// a spill outlives the process, not a power loss before the kernel writes it back (it may
    /// then read as zeros). A store that must survive one is an object store.
    pub(crate) fn write(
        &self,
        location: &object_store::path::Path,
        key: &str,
        data: &[u8],
    ) -> Result<(Arc<dyn ObjectStore>, String), StoreError> {
        let fs = self.checked(Access::Write, location.as_ref(), key)?;
        let target = self.file_path(location)?;
        let (file, staged) = stage(&target)?;
        match publish(file, &staged, &target, data) {
            Ok(meta) => Ok((fs, e_tag(&meta))),
            Err(e) => {
                let _ = std::fs::remove_file(&staged);
                let e = io::Error::new(e.kind(), format!("writing {}: {e}", staged.display()));
                Err(StoreError::Backend(Box::new(e)))
            }
        }
    }

    /// Bytes `range` of the object at `location` (a part of spill `handle`) and the object's
    /// version, after the root's checks for a read; the range as object_store serves it (its
    /// end clamped to the object; a start past it, an empty or a reversed range refused).
    ///
    /// Runs in one trip to a blocking thread where object_store's reader makes two after the
    /// checks' own, and reads into a buffer it does not zero first.
    pub(crate) fn read(
        &self,
        location: &object_store::path::Path,
        handle: &str,
        range: Range<u64>,
    ) -> Result<(Bytes, Version), StoreError> {
        let OpenFile {
            mut file,
            path,
            version,
        } = self.open(location, handle)?;
        let range = GetRange::Bounded(range)
            .as_range(version.size)
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        let len = range.end - range.start;
        let mut bytes = Vec::with_capacity(len as usize);
        file.seek(io::SeekFrom::Start(range.start))
            .and_then(|_| file.take(len).read_to_end(&mut bytes))
            .map_err(|e| reading(&path, e))?;
        if bytes.len() as u64 != len {
            let short = format!("ended {} bytes into a read of {len}", bytes.len());
            let e = io::Error::new(io::ErrorKind::UnexpectedEof, short);
            return Err(reading(&path, e));
        }
        Ok((bytes.into(), version))
    }

    /// The object at `location` (a part of spill `handle`), opened for reading after the root's
    /// checks, with its version; a directory is `NotFound`.
    pub(crate) fn open(
        &self,
        location: &object_store::path::Path,
        handle: &str,
    ) -> Result<OpenFile, StoreError> {
        self.checked(Access::Read, location.as_ref(), handle)?;
        let path = self.file_path(location)?;
        let not_found = || StoreError::NotFound {
            handle: handle.to_owned(),
        };
        let file = std::fs::File::open(&path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => not_found(),
            _ => reading(&path, e),
        })?;
        let meta = file.metadata().map_err(|e| reading(&path, e))?;
        if meta.is_dir() {
            return Err(not_found());
        }
        let version = Version {
            size: meta.len(),
            tag: Some(e_tag(&meta)),
        };
        Ok(OpenFile {
            file,
            path,
            version,
        })
    }

    /// Keep `facts` (URL query form) in the file's `user.overspill` extended attribute; a
    /// filesystem without them keeps none, and listings show the facts as unknown.
    pub(crate) fn set_facts(&self, location: &object_store::path::Path, facts: &str) {
        if let Ok(path) = self.file_path(location) {
            let flags = rustix::fs::XattrFlags::empty();
            let _ = rustix::fs::setxattr(path, FACTS_XATTR, facts.as_bytes(), flags);
        }
    }

    /// The facts (URL query form) the file at `location` keeps, if any.
    pub(crate) fn facts(&self, location: &object_store::path::Path) -> Option<Vec<u8>> {
        let mut buf = vec![0; 4096];
        let len = rustix::fs::getxattr(self.file_path(location).ok()?, FACTS_XATTR, &mut buf[..]);
        buf.truncate(len.ok()?);
        Some(buf)
    }

    /// The file object_store's filesystem keeps the object at `location` in.
    fn file_path(&self, location: &object_store::path::Path) -> Result<PathBuf, StoreError> {
        self.fs()?
            .path_to_filesystem(location)
            .map_err(|e| StoreError::Backend(Box::new(e)))
    }

    fn fs(&self) -> Result<Arc<LocalFileSystem>, StoreError> {
        if let Some(fs) = self.fs.get() {
            return Ok(fs.clone());
        }
        let built = Arc::new(
            LocalFileSystem::new_with_prefix(self.path())
                .map_err(|e| StoreError::Backend(Box::new(e)))?,
        );
        Ok(self.fs.get_or_init(|| built).clone())
    }
}

/// A new staged file beside `target` (`{target}#1`, or the first free `#n`), its directory
/// created if missing: object_store's naming, which its listings skip.
fn stage(target: &Path) -> Result<(std::fs::File, PathBuf), StoreError> {
    let fail = |e: io::Error| {
        let e = io::Error::new(e.kind(), format!("staging {}: {e}", target.display()));
        StoreError::Backend(Box::new(e))
    };
    let mut n = 1u32;
    loop {
        let mut staged = target.as_os_str().to_owned();
        staged.push(format!("#{n}"));
        let staged = PathBuf::from(staged);
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&staged);
        match opened {
            Ok(file) => return Ok((file, staged)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => n += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => match target.parent() {
                Some(dir) => std::fs::create_dir_all(dir).map_err(fail)?,
                None => return Err(fail(e)),
            },
            Err(e) => return Err(fail(e)),
        }
    }
}

/// Fill the staged `file` with `data`, close it and rename it over `target`; its metadata, taken
/// before the rename (which keeps the inode and mtime).
fn publish(
    mut file: std::fs::File,
    staged: &Path,
    target: &Path,
    data: &[u8],
) -> io::Result<std::fs::Metadata> {
    preallocate(&file, data.len())?;
    file.write_all(data)?;
    let meta = file.metadata()?;
    close(file)?;
    std::fs::rename(staged, target)?;
    Ok(meta)
}

/// Close `file`, with the error a drop would ignore.
fn close(file: std::fs::File) -> io::Result<()> {
    #[cfg(unix)]
    nix::unistd::close(file)?;
    #[cfg(not(unix))]
    drop(file);
    Ok(())
}

/// Reserve `len` bytes of blocks for `file`. A filesystem that cannot is written without; a
/// full disk or quota fails here, before any byte is written.
fn preallocate(file: &std::fs::File, len: usize) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if len > 0 {
        use nix::errno::Errno;
        let len = nix::libc::off_t::try_from(len).unwrap_or(nix::libc::off_t::MAX);
        // `fallocate`, unlike `posix_fallocate`, never emulates by writing zeros: a filesystem
        // without it costs one failed call.
        let mode = nix::fcntl::FallocateFlags::empty();
        if let Err(error @ (Errno::ENOSPC | Errno::EDQUOT)) =
            nix::fcntl::fallocate(file, mode, 0, len)
        {
            return Err(error.into());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, len);
    Ok(())
}

/// object_store's e-tag of a local file: `"{inode:x}-{mtime µs:x}-{size:x}"` (a rename keeps
/// the inode and mtime, so the staged file's metadata names the published one).
fn e_tag(meta: &std::fs::Metadata) -> String {
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::SystemTime::UNIX_EPOCH).ok())
        .unwrap_or_default()
        .as_micros();
    format!("\"{inode:x}-{mtime:x}-{:x}\"", meta.len())
}

/// The extended attribute a spill's file keeps its facts in (`SpillFacts`' query form).
const FACTS_XATTR: &str = "user.overspill";

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
    nix::unistd::geteuid().as_raw()
}

impl LocalBackend {
    /// Before a write: create the root (`0700`; parents with the default mode) and check it.
    fn ensure(&self) -> Result<(), StoreError> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&self.root)
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        self.check()
    }

    /// Before every read and write: refuse a symlinked or foreign-owned root, tighten its mode.
    fn check(&self) -> Result<(), StoreError> {
        #[cfg(unix)]
        return self.check_as(euid());
        #[cfg(not(unix))]
        return self.check_link().map(|_| ());
    }

    fn check_link(&self) -> Result<std::fs::Metadata, StoreError> {
        let meta = std::fs::symlink_metadata(&self.root).map_err(|e| io_error(e, &self.root))?;
        if meta.file_type().is_symlink() {
            return Err(StoreError::PermissionDenied(format!(
                "Overflow store root {} is a symbolic link; refusing to use it.",
                repr(&self.root.to_string_lossy())
            )));
        }
        Ok(meta)
    }

    /// [`check`](Self::check) for a given effective user (testable without a second account).
    #[cfg(unix)]
    fn check_as(&self, euid: u32) -> Result<(), StoreError> {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let meta = self.check_link()?;
        if meta.uid() != euid {
            return Err(StoreError::PermissionDenied(format!(
                "Overflow store root {} is not owned by the current user; refusing to write spilled tool output there.",
                repr(&self.root.to_string_lossy())
            )));
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
    fn confine(&self, relative: &str, handle: &str) -> Result<PathBuf, StoreError> {
        let root = std::fs::canonicalize(&self.root).map_err(|e| io_error(e, &self.root))?;
        let target = std::fs::canonicalize(self.root.join(relative)).map_err(|e| {
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

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::{PermissionsExt as _, symlink};

    use super::*;

    #[test]
    fn creates_a_private_root_and_tightens_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = LocalBackend::new(dir.path().join("a/b/root"));
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
        let root = LocalBackend::new(dir.path().join("link"));
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

    /// The names in directory `dir`, sorted.
    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    /// A write lands whole under the target's name, with the e-tag object_store's own reads
    /// report (the index of a spill is bound to it), creating its directory; a staged file a
    /// crashed writer left is neither reused nor removed, and listings skip staged files.
    #[tokio::test]
    async fn a_write_is_published_whole_with_object_stores_tag() {
        use futures::TryStreamExt as _;
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("root"));
        let run = dir.path().join("root/tool_output_limits/run");
        let location = object_store::path::Path::from("tool_output_limits/run/call-1.0");
        let mut tags = Vec::new();
        for data in [&b"first version\n"[..], b"second", b""] {
            let (fs, tag) = backend.write(&location, "run/call-1.0", data).unwrap();
            let got = object_store::ObjectStoreExt::get(&fs, &location)
                .await
                .unwrap();
            assert_eq!(got.meta.e_tag.as_deref(), Some(tag.as_str()));
            assert_eq!(got.bytes().await.unwrap(), data);
            tags.push(tag);
            std::fs::write(run.join("call-1.0#1"), "stale").unwrap();
        }
        tags.sort();
        tags.dedup();
        assert_eq!(tags.len(), 3, "every version has its own tag");
        assert_eq!(names_in(&run), ["call-1.0", "call-1.0#1"]);
        assert_eq!(std::fs::read(run.join("call-1.0#1")).unwrap(), b"stale");
        // A write under way.
        let (_writing, _) = stage(&run.join("call-2.0")).unwrap();
        let listed: Vec<_> = backend
            .fs()
            .unwrap()
            .list(None)
            .try_collect()
            .await
            .unwrap();
        let listed: Vec<_> = listed.iter().map(|m| m.location.to_string()).collect();
        assert_eq!(listed, ["tool_output_limits/run/call-1.0"]);
    }

    /// A ranged read answers as object_store's filesystem does: the same bytes, clamped end and
    /// version; a start past the end refused; a missing object or a directory `NotFound`.
    #[tokio::test]
    async fn a_read_serves_ranges_as_object_store_does() {
        use object_store::GetOptions;
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("root"));
        let location = object_store::path::Path::from("tool_output_limits/run/call-1.0");
        let data: Vec<u8> = (0..10_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let (fs, _) = backend.write(&location, "run/call-1.0", &data).unwrap();
        for range in [0..1, 0..40_000, 39_999..40_000, 7..123, 100..1 << 20] {
            let (bytes, version) = backend
                .read(&location, "run/call-1.0", range.clone())
                .unwrap();
            let options = GetOptions::new().with_range(Some(range.clone()));
            let theirs = fs.get_opts(&location, options).await.unwrap();
            assert_eq!(version.size, theirs.meta.size, "{range:?}");
            assert_eq!(version.tag, theirs.meta.e_tag, "{range:?}");
            assert_eq!(bytes, theirs.bytes().await.unwrap(), "{range:?}");
        }
        for range in [40_000..40_001, 50_000..60_000] {
            let err = backend.read(&location, "run/call-1.0", range).unwrap_err();
            assert!(matches!(err, StoreError::Backend(_)), "{err:?}");
        }
        let missing = object_store::path::Path::from("tool_output_limits/run/call-2.0");
        let err = backend.read(&missing, "run/call-2.0", 0..10).unwrap_err();
        assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
        let directory = object_store::path::Path::from("tool_output_limits/run");
        let err = backend.read(&directory, "run", 0..10).unwrap_err();
        assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    }

    /// A write that cannot be published fails and leaves no staged file behind.
    #[test]
    fn a_failed_write_leaves_nothing_staged() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("root"));
        let run = dir.path().join("root/tool_output_limits/run");
        // A non-empty directory where the file would go: the rename fails.
        std::fs::create_dir_all(run.join("call-1.0/inside")).unwrap();
        let location = object_store::path::Path::from("tool_output_limits/run/call-1.0");
        let err = backend
            .write(&location, "run/call-1.0", b"data")
            .unwrap_err();
        assert!(err.to_string().contains("call-1.0#1"), "{err}");
        assert_eq!(names_in(&run), ["call-1.0"]);
    }

    #[test]
    fn confines_targets_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = LocalBackend::new(dir.path().join("root"));
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
