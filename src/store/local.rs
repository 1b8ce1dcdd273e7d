//! The local `file://` store: object_store's `LocalFileSystem` under the reference
//! LocalFileStore's root model, as one [`ObjectStore`] ([`LocalStore`]).
//!
//! The root is created `0700` (by the first write, or the store's check), must not be a symbolic
//! link, must be owned by the effective user (a group/other bit is tightened back to `0700`), and
//! the object a call names, with symlinks resolved, must stay inside the resolved root (a delete
//! never goes through a symlink that leads out of it). Error texts are the reference's; a refusal
//! is a [`StoreError`] carried in an `object_store::Error::Generic`, which the store passes on.
//!
//! An object's user metadata (`Attribute::Metadata(name)`, other attributes are not kept) lives
//! in its `user.<name>` extended attribute. Reading one costs a system call, so a get returns only
//! the entry its options ask for ([`WithMetadata`]; an object store sends all with every reply),
//! read after the file was opened (a file replaced since has another version, which a reader's
//! checks refuse).

use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use futures::StreamExt as _;
use futures::stream::{self, BoxStream};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{
    Attribute, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

use super::StoreError;
use crate::limits::pyfmt::repr;

/// A get's option extension: return the object's user metadata entry of this name with it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WithMetadata(pub(crate) &'static str);

/// A put's option extension: fail the put when its user metadata cannot be kept (else the put
/// stands without it, the failure logged).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MetadataRequired;

/// Linux's `XATTR_SIZE_MAX`: no extended attribute value is longer.
const XATTR_SIZE_MAX: usize = 64 << 10;

/// A local directory as an object store: each call checks the root and confines its object, on a
/// blocking thread, before `LocalFileSystem` serves it. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct LocalStore {
    root: Arc<Root>,
}

/// The root's checks and the filesystem over it, built on first use (once the root exists and
/// passed its checks). Every method calls `std::fs` and may block.
#[derive(Debug)]
struct Root {
    path: PathBuf,
    fs: OnceLock<Arc<LocalFileSystem>>,
    /// Whether a call found that the root's filesystem keeps no extended attributes (said once).
    no_xattrs: AtomicBool,
}

impl LocalStore {
    /// A store over the directory `root` (not touched until the first call).
    pub(crate) fn new(root: PathBuf) -> Self {
        let root = Root {
            // Without a trailing `/`, which would make lstat follow a symlinked root.
            path: root.components().collect(),
            fs: OnceLock::new(),
            no_xattrs: AtomicBool::new(false),
        };
        Self {
            root: Arc::new(root),
        }
    }

    /// Create the root (`0700`; parents with the default mode) and check it.
    pub(crate) async fn ensure(&self) -> Result<(), StoreError> {
        self.on_disk(Root::ensure).await
    }

    /// Whether the root's filesystem keeps user extended attributes, where the metadata is kept:
    /// one is set on the root and removed again.
    pub(crate) async fn keeps_metadata(&self) -> Result<bool, StoreError> {
        self.on_disk(Root::keeps_xattrs).await
    }

    /// Run the blocking `work` on a blocking thread.
    async fn on_disk<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Root) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let root = self.root.clone();
        tokio::task::spawn_blocking(move || work(&root))
            .await
            .map_err(|e| crate::read::joined("a local store call", e))?
    }

    /// [`Self::on_disk`] for the object at `location`, a refusal carried in object_store's error.
    async fn at<T: Send + 'static>(
        &self,
        location: &ObjectPath,
        work: impl FnOnce(&Root, &ObjectPath) -> Result<T, StoreError> + Send + 'static,
    ) -> object_store::Result<T> {
        let location = location.clone();
        let done = self.on_disk(move |root| work(root, &location)).await;
        done.map_err(|e| object_store::Error::Generic {
            store: "LocalStore",
            source: Box::new(e),
        })
    }
}

impl std::fmt::Display for LocalStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LocalStore({})", self.root.path.display())
    }
}

#[async_trait::async_trait]
impl ObjectStore for LocalStore {
    async fn put_opts(
        &self,
        location: &ObjectPath,
        payload: PutPayload,
        mut opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let attributes = std::mem::take(&mut opts.attributes);
        let required = opts.extensions.get::<MetadataRequired>().is_some();
        let fs = self.at(location, Root::for_write).await?;
        let put = fs.put_opts(location, payload, opts).await?;
        if !attributes.is_empty() {
            let kept = move |root: &Root, at: &ObjectPath| {
                (attributes.iter()).try_for_each(|(key, value)| match key {
                    Attribute::Metadata(name) => root.set_xattr(at, name, value, required),
                    _ => Ok(()),
                })
            };
            self.at(location, kept).await?;
        }
        Ok(put)
    }

    async fn put_multipart_opts(
        &self,
        location: &ObjectPath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let fs = self.at(location, Root::for_write).await?;
        fs.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &ObjectPath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let wanted = options.extensions.get::<WithMetadata>().copied();
        let fs = self.at(location, Root::for_read).await?;
        let mut got = fs.get_opts(location, options).await?;
        if let Some(WithMetadata(name)) = wanted
            && let Some(value) = self
                .at(location, move |root, at| root.xattr(at, name))
                .await?
        {
            got.attributes
                .insert(Attribute::Metadata(name.into()), value.into());
        }
        Ok(got)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<ObjectPath>>,
    ) -> BoxStream<'static, object_store::Result<ObjectPath>> {
        let this = self.clone();
        let delete = move |location: object_store::Result<ObjectPath>| {
            let this = this.clone();
            async move { this.at(&location?, Root::delete).await }
        };
        locations.map(delete).buffered(10).boxed()
    }

    /// A root that does not exist yet lists nothing.
    fn list(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let (this, prefix) = (self.clone(), prefix.cloned());
        let listed = async move {
            match this.at(&ObjectPath::default(), Root::for_listing).await {
                Ok(Some(fs)) => fs.list(prefix.as_ref()),
                Ok(None) => stream::empty().boxed(),
                Err(e) => stream::iter([Err(e)]).boxed(),
            }
        };
        stream::once(listed).flatten().boxed()
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> object_store::Result<ListResult> {
        let fs = self.at(&ObjectPath::default(), Root::for_read).await?;
        fs.list_with_delimiter(prefix).await
    }

    /// Refused: the store never copies, and a copy would need both ends confined.
    async fn copy_opts(
        &self,
        _: &ObjectPath,
        _: &ObjectPath,
        _: CopyOptions,
    ) -> object_store::Result<()> {
        let implementer = self.to_string();
        Err(object_store::Error::NotImplemented {
            operation: "copy".into(),
            implementer,
        })
    }
}

impl Root {
    /// Before a read: the root checked, the object confined to it.
    fn for_read(&self, location: &ObjectPath) -> Result<Arc<LocalFileSystem>, StoreError> {
        self.check()?;
        self.confine(location.as_ref())?;
        self.fs()
    }

    /// Before a write: the root created and checked, and the directory the object goes into
    /// confined to it (see [`Self::confine_dir`]).
    fn for_write(&self, location: &ObjectPath) -> Result<Arc<LocalFileSystem>, StoreError> {
        self.ensure()?;
        self.confine_dir(location.as_ref())?;
        self.fs()
    }

    /// Before a listing: the root checked; `None` while it does not exist (nothing is stored).
    fn for_listing(&self, _: &ObjectPath) -> Result<Option<Arc<LocalFileSystem>>, StoreError> {
        match self.check() {
            Ok(()) => Ok(Some(self.fs()?)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Delete the file at `location` (confined to the checked root; a missing file is
    /// `NotFound`), then the directories that left empty below the root's top-level one (the
    /// store's namespace), which stays.
    fn delete(&self, location: &ObjectPath) -> Result<ObjectPath, StoreError> {
        self.for_read(location)?;
        let top = location.as_ref().split('/').next().unwrap_or_default();
        let (stop, mut file) = (self.path.join(top), self.path.join(location.as_ref()));
        std::fs::remove_file(&file).map_err(|e| io_error(e, &file))?;
        while file.pop() && file.starts_with(&stop) && file != stop {
            if std::fs::remove_dir(&file).is_err() {
                break;
            }
        }
        Ok(location.clone())
    }

    /// Keep `value` in the `user.<name>` extended attribute of the file at `location`. When it
    /// is `required` (it names a writer whose own reads are scoped), a failure is the write's: a
    /// final store error saying why. Otherwise a filesystem without extended attributes keeps
    /// none (said once, at INFO), any other failure is logged at WARN with its cause, and the
    /// spill stands with its facts unknown.
    fn set_xattr(
        &self,
        location: &ObjectPath,
        name: &str,
        value: &str,
        required: bool,
    ) -> Result<(), StoreError> {
        let (path, attribute) = (self.path.join(location.as_ref()), format!("user.{name}"));
        let flags = rustix::fs::XattrFlags::empty();
        match rustix::fs::setxattr(&path, &attribute, value.as_bytes(), flags) {
            Ok(()) => Ok(()),
            Err(e) if required => Err(keep_failed(&path, &attribute, e)),
            Err(e) => {
                self.xattr_failed("keep", &path, &attribute, e);
                Ok(())
            }
        }
    }

    /// The value of the `user.<name>` extended attribute of the file at `location`, if any: none
    /// on a file written without it, a file gone since, or a filesystem without extended
    /// attributes (said once, at INFO). Any other failure is a store error ([`read_failed`]),
    /// never an unknown writer, which would make a workflow's own spill read as missing. Read
    /// into a page, and again into the largest buffer an attribute needs only when it is longer
    /// (every scoped read checks a writer here).
    fn xattr(&self, location: &ObjectPath, name: &str) -> Result<Option<String>, StoreError> {
        let (path, attribute) = (self.path.join(location.as_ref()), format!("user.{name}"));
        for size in [4 << 10, XATTR_SIZE_MAX] {
            let mut buf = vec![0; size];
            match rustix::fs::getxattr(&path, &attribute, &mut buf[..]) {
                Ok(len) => return Ok(Some(String::from_utf8_lossy(&buf[..len]).into())),
                Err(rustix::io::Errno::RANGE) => {}
                // No such attribute (ENODATA), or the file went away since it was listed.
                Err(rustix::io::Errno::NODATA | rustix::io::Errno::NOENT) => return Ok(None),
                Err(e @ rustix::io::Errno::NOTSUP) => {
                    self.xattr_failed("read", &path, &attribute, e);
                    return Ok(None);
                }
                Err(e) => return Err(read_failed(&path, &attribute, e)),
            }
        }
        Ok(None)
    }

    /// Whether the root's filesystem keeps user extended attributes: one is set on the root and
    /// removed again.
    fn keeps_xattrs(&self) -> Result<bool, StoreError> {
        self.ensure()?;
        let probe = "user.overspill-probe";
        match rustix::fs::setxattr(&self.path, probe, b"", rustix::fs::XattrFlags::empty()) {
            Ok(()) => {
                let _ = rustix::fs::removexattr(&self.path, probe);
                Ok(true)
            }
            Err(rustix::io::Errno::NOTSUP) => Ok(false),
            Err(e) => Err(StoreError::Backend(Box::new(io::Error::from(e)))),
        }
    }

    /// Report a failed extended-attribute call on `path`: once at INFO for a filesystem without
    /// them, at WARN with the cause otherwise.
    fn xattr_failed(&self, verb: &str, path: &Path, attribute: &str, e: rustix::io::Errno) {
        if e != rustix::io::Errno::NOTSUP {
            tracing::warn!(
                target: "overspill::store",
                "could not {verb} the facts ({attribute} attribute) of {}: {e}; its listing \
                 shows them as unknown",
                path.display()
            );
        } else if !self.no_xattrs.swap(true, Ordering::Relaxed) {
            tracing::info!(
                target: "overspill::store",
                "the filesystem of store root {} keeps no extended attributes: \
                 list_tool_results shows local spills without their tool, sizes and first line",
                self.path.display()
            );
        }
    }

    fn fs(&self) -> Result<Arc<LocalFileSystem>, StoreError> {
        if let Some(fs) = self.fs.get() {
            return Ok(fs.clone());
        }
        let built = LocalFileSystem::new_with_prefix(&self.path)
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        Ok(self.fs.get_or_init(|| Arc::new(built)).clone())
    }

    /// Before a write: create the root (`0700`; parents with the default mode) and check it.
    fn ensure(&self) -> Result<(), StoreError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.path)
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        self.check()
    }

    /// Before every read and write: refuse a symlinked or foreign-owned root, tighten its mode.
    fn check(&self) -> Result<(), StoreError> {
        self.check_as(euid())
    }

    /// [`check`](Self::check) for a given effective user (testable without a second account).
    fn check_as(&self, euid: u32) -> Result<(), StoreError> {
        let meta = std::fs::symlink_metadata(&self.path).map_err(|e| io_error(e, &self.path))?;
        let refuse = |why: &str| {
            let root = repr(&self.path.to_string_lossy());
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
            std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| StoreError::Backend(Box::new(e)))?;
        }
        Ok(())
    }

    /// Refuse a target at `relative` (below the root) that, with symlinks resolved, leaves the
    /// resolved root. A missing target is `NotFound`.
    fn confine(&self, relative: &str) -> Result<(), StoreError> {
        let root = std::fs::canonicalize(&self.path).map_err(|e| io_error(e, &self.path))?;
        match std::fs::canonicalize(self.path.join(relative)) {
            Ok(target) if target.starts_with(&root) => Ok(()),
            Ok(_) => Err(outside(relative)),
            Err(e) => Err(io_error(e, &self.path.join(relative))),
        }
    }

    /// Before a write: refuse an object at `relative` whose directory, with symlinks resolved,
    /// leaves the resolved root. A directory symlink inside the root would otherwise redirect the
    /// write (and the delete of a stale index beside it) outside.
    ///
    /// Judged on the deepest part of the directory that exists (a symlink counts, dangling or
    /// not): what is missing below it is created inside it.
    fn confine_dir(&self, relative: &str) -> Result<(), StoreError> {
        let root = std::fs::canonicalize(&self.path).map_err(|e| io_error(e, &self.path))?;
        let mut dir = self.path.join(relative);
        dir.pop();
        while std::fs::symlink_metadata(&dir).is_err() && dir.pop() {}
        match std::fs::canonicalize(&dir) {
            Ok(resolved) if resolved.starts_with(&root) => Ok(()),
            // Outside, or a dangling symlink, which resolves nowhere inside the root.
            _ => Err(outside(relative)),
        }
    }
}

/// The refusal of an object at `relative` that resolves outside the root: to a reader, the same
/// as a missing handle.
fn outside(relative: &str) -> StoreError {
    let handle = relative.to_owned();
    StoreError::OutsideStore { handle }
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
fn read_failed(path: &Path, attribute: &str, e: rustix::io::Errno) -> StoreError {
    let text = format!(
        "could not read the writer ({attribute} attribute) of {}: {e}",
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
fn keep_failed(path: &Path, attribute: &str, e: rustix::io::Errno) -> StoreError {
    let text = format!(
        "could not record the writer ({attribute} attribute) of {}: {e}; without it the \
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

    const ATTRIBUTE: &str = "user.overspill";

    /// A failed read of a spill's writer is the store failing, never an unknown writer (which
    /// would read the workflow's own spill as missing); a missing attribute is an unknown writer.
    #[test]
    fn a_failed_read_of_the_writer_is_a_store_error() {
        let path = Path::new("/root/tool_output_limits/r/c.0");
        let denied = read_failed(path, ATTRIBUTE, rustix::io::Errno::ACCESS);
        assert!(
            matches!(denied, StoreError::PermissionDenied(_)),
            "{denied}"
        );
        let io = read_failed(path, ATTRIBUTE, rustix::io::Errno::IO);
        assert!(io.is_retryable() && !io.is_unknown_handle(), "{io}");
        assert!(io.to_string().contains("user.overspill"), "{io}");

        let dir = tempfile::tempdir().unwrap();
        let local = LocalStore::new(dir.path().join("root")).root;
        local.ensure().unwrap();
        std::fs::write(dir.path().join("root/plain"), "x").unwrap();
        let plain = object_store::path::Path::from("plain");
        assert_eq!(local.xattr(&plain, "overspill").unwrap(), None);
        let gone = object_store::path::Path::from("gone");
        assert_eq!(local.xattr(&gone, "overspill").unwrap(), None);
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
            let failed = keep_failed(path, ATTRIBUTE, e);
            assert!(!failed.is_retryable(), "{failed}");
            assert!(failed.to_string().contains("--read-scope any"), "{failed}");
        }
        // A file that cannot take the attribute (here: gone) fails a write that needs it.
        let dir = tempfile::tempdir().unwrap();
        let local = LocalStore::new(dir.path().join("root")).root;
        local.ensure().unwrap();
        let gone = object_store::path::Path::from("gone");
        let failed = local
            .set_xattr(&gone, "overspill", "scope=default%2Fwf", true)
            .unwrap_err();
        assert!(matches!(failed, StoreError::Misconfigured(_)), "{failed}");
        assert!(
            local
                .set_xattr(&gone, "overspill", "chars=1", false)
                .is_ok()
        );
    }

    #[test]
    fn creates_a_private_root_and_tightens_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = LocalStore::new(dir.path().join("a/b/root")).root;
        root.ensure().unwrap();
        let mode = std::fs::metadata(&root.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(&root.path, std::fs::Permissions::from_mode(0o755)).unwrap();
        root.check().unwrap();
        let mode = std::fs::metadata(&root.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn refuses_a_symlinked_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        let root = LocalStore::new(dir.path().join("link")).root;
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
        let root = LocalStore::new(dir.path().to_path_buf()).root;
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
        let root = LocalStore::new(dir.path().join("root")).root;
        root.ensure().unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::fs::write(root.path.join("inside"), "i").unwrap();
        symlink(dir.path().join("secret"), root.path.join("escape")).unwrap();
        symlink(root.path.join("inside"), root.path.join("alias")).unwrap();
        assert!(root.confine("inside").is_ok());
        assert!(root.confine("alias").is_ok());
        let err = root.confine("escape").unwrap_err();
        assert_eq!(
            err.to_string(),
            "handle \"escape\" resolves outside the store"
        );
        assert!(err.is_unknown_handle());
        assert!(matches!(
            root.confine("missing"),
            Err(StoreError::NotFound { .. })
        ));
    }

    /// A filesystem without extended attributes is said once, at INFO; any other failure to keep
    /// or read the facts is a WARN with its cause.
    #[test]
    fn xattr_failures_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalStore::new(dir.path().to_path_buf()).root;
        let logs = crate::test_logs::Logs::default();
        let _guard = logs.capture();
        let file = dir.path().join("spill");
        backend.xattr_failed("keep", &file, ATTRIBUTE, rustix::io::Errno::NOTSUP);
        backend.xattr_failed("keep", &file, ATTRIBUTE, rustix::io::Errno::NOTSUP);
        let text = logs.text();
        assert_eq!(
            text.matches("keeps no extended attributes").count(),
            1,
            "{text}"
        );
        assert!(text.contains("INFO"), "{text}");
        let missing = object_store::path::Path::from("gone/spill");
        backend
            .set_xattr(&missing, "overspill", "chars=1", false)
            .unwrap();
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
                .xattr(&object_store::path::Path::from("spill"), "overspill")
                .unwrap(),
            None
        );
        assert_eq!(logs.text().len(), before, "{}", logs.text());
    }

    /// Filesystem work runs on a blocking thread, under the store's deadline: a call that hangs
    /// (a dead network mount) cannot stall the async threads or the caller.
    #[tokio::test(flavor = "current_thread")]
    async fn blocking_disk_work_is_bounded_by_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path().to_path_buf());
        let hung = store.on_disk(|_| {
            std::thread::sleep(std::time::Duration::from_secs(1));
            Ok(())
        });
        let deadline = std::time::Duration::from_millis(100);
        let outcome = tokio::time::timeout(
            std::time::Duration::from_millis(500),
            super::super::within(deadline, hung),
        );
        assert!(
            matches!(outcome.await, Ok(Err(StoreError::Timeout(_)))),
            "the deadline ended the call"
        );
    }

    /// Facts longer than a page read back whole (a long percent-encoded handle), where the
    /// filesystem keeps them: tmpfs does, ext4 only about 4 KB.
    #[test]
    fn long_facts_read_back_whole() {
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
            return;
        };
        let backend = LocalStore::new(dir.path().to_path_buf()).root;
        std::fs::write(dir.path().join("spill"), "").unwrap();
        let location = object_store::path::Path::from("spill");
        let facts = format!("handle={}&first=x", "%C3%BC".repeat(2_000));
        backend
            .set_xattr(&location, "overspill", &facts, true)
            .unwrap();
        let kept = backend.xattr(&location, "overspill").unwrap();
        assert_eq!(kept.as_deref(), Some(facts.as_str()));
    }
}
