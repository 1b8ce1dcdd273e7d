//! Store tests over object_store's in-memory and local backends.

use std::time::{Duration, SystemTime};

use bytes::Bytes;

use super::*;
use crate::limits::SpillStore;
use crate::read::line_index::Header;
use crate::read::{Part, ReadOutcomeError, ReadRequest, SpillReader, read_page, read_tool_result};
use object_store::PutOptions;

fn text(lines: usize) -> Bytes {
    Bytes::from(
        (0..lines)
            .map(|i| format!("line {i}\n"))
            .collect::<String>(),
    )
}

fn assert_send<T: Send>(_: &T) {}

/// A gc cutoff past every write so far (stores may keep whole seconds, rounded down).
fn after_every_write() -> SystemTime {
    SystemTime::now() + Duration::from_secs(1)
}

/// Lines enough for a spill to get a line index, and more than a page's first read takes
/// (about 430 KB), so that a rebuilt index is built by streaming the payload.
const INDEXED: usize = 40_000;

fn page(handle: &str, offset: i64, limit: i64) -> ReadRequest {
    ReadRequest {
        handle: handle.into(),
        offset,
        limit,
        ..Default::default()
    }
}

/// The index object stored beside `handle`'s payload, decoded.
async fn stored_index(store: &Store, handle: &str) -> Option<Header> {
    let index = store.fetch(handle, Part::Index, 0..1 << 20).await.ok()?;
    Header::decode(&index.bytes, index.version.size).ok()
}

#[tokio::test]
async fn futures_are_send_and_store_is_shareable() {
    fn shareable<T: Clone + Send + Sync + std::fmt::Debug + 'static>() {}
    shareable::<Store>();
    let store = Store::open(Some("memory://")).unwrap();
    let write = store.write("r/c.0", Bytes::new());
    assert_send(&write);
    write.await.unwrap();
    assert_send(&store.read("r/c.0"));
    assert_send(&store.head("r/c.0"));
    assert_send(&store.fetch("r/c.0", Part::Payload, 0..1));
    assert_send(&read_tool_result(&store, &page("r/c.0", 0, 1)));
    assert_send(&store.list(None));
    assert_send(&store.gc(SystemTime::UNIX_EPOCH, true));
}

#[tokio::test]
async fn round_trip_overwrite_and_ranges_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let file = ::url::Url::from_directory_path(dir.path()).unwrap();
    for (url, path) in [
        ("memory://p", "p/tool_output_limits/run-1/call_1.0"),
        (file.as_str(), "tool_output_limits/run-1/call_1.0"),
    ] {
        let store = Store::open(Some(url)).unwrap();
        assert_eq!(store.locate("run-1/call 1.0").unwrap().as_ref(), path);
        let handle = store.write("run-1/call 1.0", text(3)).await.unwrap();
        assert_eq!(handle, "run-1/call 1.0");
        assert_eq!(store.read(&handle).await.unwrap(), text(3));
        // An overwrite (a retry or a replay writes the same key again) replaces the object.
        store.write(&handle, text(5)).await.unwrap();
        assert_eq!(store.read(&handle).await.unwrap(), text(5));
        let head = store.head(&handle).await.unwrap();
        assert_eq!(head.size, text(5).len() as u64);
        let range = store.fetch(&handle, Part::Payload, 7..13).await.unwrap();
        assert_eq!(range.bytes, "line 1", "{url}");
        assert_eq!(range.version, head, "{url}");
        let clamped = store.fetch(&handle, Part::Payload, 28..100).await.unwrap();
        assert_eq!(clamped.bytes, "line 4\n", "{url}");
        // Past the end, empty or reversed: refused, as object_store refuses them.
        let reversed = std::ops::Range { start: 13, end: 7 };
        for range in [35..40, 7..7, reversed] {
            let refused = store.fetch(&handle, Part::Payload, range.clone()).await;
            assert!(
                matches!(refused, Err(StoreError::Backend(_))),
                "{url} {range:?}"
            );
        }
        let missing = store.fetch("run-1/other", Part::Payload, 0..10).await;
        assert!(matches!(missing, Err(StoreError::NotFound { .. })), "{url}");
        let too_long = "r/".to_owned() + &"x".repeat(1100);
        let too_long = store.fetch(&too_long, Part::Payload, 0..10).await;
        assert!(
            matches!(too_long, Err(StoreError::NotFound { .. })),
            "{url}"
        );
        // A small spill gets no index: a page reads it whole.
        assert!(stored_index(&store, &handle).await.is_none());
        // The sanitized form of a handle reads the same spill.
        assert_eq!(store.read("run-1/call_1.0").await.unwrap(), text(5));
    }
}

#[tokio::test]
async fn an_empty_spill_is_paged_on_every_backend() {
    // A page's first read asks for a range the empty object does not have.
    let dir = tempfile::tempdir().unwrap();
    let file = ::url::Url::from_directory_path(dir.path()).unwrap();
    for url in ["memory://", file.as_str()] {
        let store = Store::open(Some(url)).unwrap();
        store.write("r/empty.0", Bytes::new()).await.unwrap();
        let out = read_tool_result(&store, &page("r/empty.0", 0, 5)).await;
        assert_eq!(
            out.unwrap(),
            "[handle 'r/empty.0': 0 matching line(s); showing 0]",
            "{url}"
        );
    }
}

#[tokio::test]
async fn clones_share_a_memory_store_and_opens_do_not() {
    let store = Store::open(Some("memory://")).unwrap();
    store.clone().write("r/c.0", text(1)).await.unwrap();
    assert_eq!(store.read("r/c.0").await.unwrap(), text(1));
    let other = Store::open(Some("memory://")).unwrap();
    assert!(matches!(
        other.read("r/c.0").await,
        Err(StoreError::NotFound { .. })
    ));
}

#[tokio::test]
async fn refuses_escaping_handles() {
    let store = Store::open(Some("memory://")).unwrap();
    store.write("r/c.0", text(2)).await.unwrap();
    for handle in [
        "../r/c.0",
        "r/../r/c.0",
        "/r/c.0",
        "%2e%2e/r/c.0",
        "r%2Fc.0",
        "s3://spills/tool_output_limits/r/c.0",
        "r/c.0.idx",
    ] {
        let err = store.read(handle).await.unwrap_err();
        assert!(
            matches!(err, StoreError::OutsideStore { .. }),
            "{handle}: {err:?}"
        );
        assert!(err.is_unknown_handle());
        let page = read_tool_result(
            &store,
            &ReadRequest {
                handle: handle.into(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&page, ReadOutcomeError::NoStoredResult(h) if h == handle),
            "{page}"
        );
    }
    // A key the store would refuse to read is not written either (the engine falls back).
    assert!(matches!(
        store.write("../x.0", text(1)).await,
        Err(StoreError::OutsideStore { .. })
    ));
}

#[tokio::test]
async fn a_spill_is_indexed_as_it_is_written_and_paged_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let url = ::url::Url::from_directory_path(dir.path().join("spills")).unwrap();
    let store = Store::open(Some(url.as_str())).unwrap();
    let data = text(INDEXED);
    store.write("r/c.0", data.clone()).await.unwrap();
    let header = stored_index(&store, "r/c.0")
        .await
        .expect("an index beside the spill");
    assert_eq!(header.lines(), INDEXED as u64);
    assert!(header.describes(&store.head("r/c.0").await.unwrap()));
    for request in [
        page("r/c.0", 10, 2),
        page("r/c.0", INDEXED as i64 - 10, 200),
    ] {
        let expected = read_page(&data, &request).unwrap();
        assert_eq!(read_tool_result(&store, &request).await.unwrap(), expected);
        // Another store (another process) pages from the stored index.
        let cold = Store::open(Some(url.as_str())).unwrap();
        assert_eq!(read_tool_result(&cold, &request).await.unwrap(), expected);
    }
    assert_eq!(
        read_tool_result(&store, &page("r/c.0", 10, 2))
            .await
            .unwrap(),
        "[handle 'r/c.0': 40,000 matching line(s); showing 2]\nline 10\nline 11"
    );
}

#[tokio::test]
async fn an_overwrite_behind_the_stores_back_is_paged_from_its_own_lines() {
    let store = Store::open(Some("memory://")).unwrap();
    let v1 = text(INDEXED);
    store.write("r/c.0", v1.clone()).await.unwrap();
    let request = page("r/c.0", 20_000, 3);
    assert_eq!(
        read_tool_result(&store, &request).await.unwrap(),
        read_page(&v1, &request).unwrap()
    );
    let fs = &store.inner.store;
    let path = store.locate("r/c.0").unwrap();
    // The same size, other line breaks, and no new index: the cached and stored index describe v1.
    let v2 = Bytes::from(
        v1.iter()
            .map(|&b| if b == b'5' { b'\n' } else { b })
            .collect::<Vec<u8>>(),
    );
    assert_eq!(v1.len(), v2.len());
    fs.put_opts(&path, v2.clone().into(), PutOptions::default())
        .await
        .unwrap();
    assert_eq!(
        read_tool_result(&store, &request).await.unwrap(),
        read_page(&v2, &request).unwrap()
    );
    // The rebuilt index was stored for v2.
    let header = stored_index(&store, "r/c.0").await.unwrap();
    assert!(header.describes(&store.head("r/c.0").await.unwrap()));
}

#[tokio::test]
async fn multipart_uploads_reassemble() {
    let store = Store::open_with(
        Some("memory://"),
        StoreOptions::builder()
            .multipart_threshold(10)
            .part_size(7)
            .part_concurrency(3)
            .build(),
    )
    .unwrap();
    let data = text(50);
    store.write("r/big.0", data.clone()).await.unwrap();
    assert_eq!(store.read("r/big.0").await.unwrap(), data);
}

#[tokio::test]
async fn lists_and_collects_garbage() {
    let store = Store::open(Some("memory://")).unwrap();
    store.write("run-1/a.0", text(INDEXED)).await.unwrap();
    store.write("run-1/b.0", text(2)).await.unwrap();
    store.write("run-10/c.0", text(3)).await.unwrap();
    let all = store.list(None).await.unwrap();
    let handles: Vec<_> = all.iter().map(|s| s.handle.as_str()).collect();
    assert_eq!(handles, ["run-1/a.0", "run-1/b.0", "run-10/c.0"]);
    assert_eq!(all[1].size, text(2).len() as u64);
    assert!(stored_index(&store, "run-1/a.0").await.is_some());
    assert_eq!(store.list(Some("run-1")).await.unwrap().len(), 2);
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let report = store.gc(an_hour_ago, false).await.unwrap();
    assert_eq!((report.removed.len(), report.kept), (0, 3));
    let report = store.gc(after_every_write(), true).await.unwrap();
    assert_eq!((report.removed.len(), report.deleted_objects), (3, 0));
    assert_eq!(store.list(None).await.unwrap().len(), 3);
    let report = store.gc(after_every_write(), false).await.unwrap();
    assert_eq!(
        (report.removed.len(), report.deleted_objects),
        (3, 4),
        "three spills and the one index"
    );
    assert!(store.list(None).await.unwrap().is_empty());
}

#[cfg(unix)]
mod local {
    use std::os::unix::fs::{PermissionsExt as _, symlink};

    use super::*;

    fn open(dir: &std::path::Path) -> Store {
        let url = ::url::Url::from_directory_path(dir).unwrap();
        Store::open(Some(url.as_str())).unwrap()
    }

    #[tokio::test]
    async fn writes_under_a_private_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("spills");
        let store = open(&root);
        // Nothing exists before the first write: a read is simply unknown.
        assert!(store.read("r/c.0").await.unwrap_err().is_unknown_handle());
        assert!(store.list(None).await.unwrap().is_empty());
        store.write("run 1/c.0", text(3)).await.unwrap();
        let mode = std::fs::metadata(&root).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let file = root.join("tool_output_limits/run_1/c.0");
        assert_eq!(std::fs::read(&file).unwrap(), text(3));
        // A small spill gets no index; a larger one gets it as it is written.
        let index = root.join("tool_output_limits/run_1/c.0.idx");
        assert!(!index.exists());
        store.write("run 1/c.0", text(INDEXED)).await.unwrap();
        let first = std::fs::read(&index).expect("an index beside the spill");
        assert_eq!(
            stored_index(&store, "run 1/c.0").await.unwrap().lines(),
            INDEXED as u64
        );
        // An overwrite replaces it.
        store.write("run 1/c.0", text(INDEXED + 1)).await.unwrap();
        assert_ne!(std::fs::read(&index).unwrap(), first);
        let request = page("run 1/c.0", INDEXED as i64 - 1, 5);
        assert_eq!(
            read_tool_result(&store, &request).await.unwrap(),
            read_page(&text(INDEXED + 1), &request).unwrap()
        );
    }

    #[tokio::test]
    async fn overwrites_by_another_store_are_never_paged_through_a_stale_index() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("spills");
        let (a, b) = (open(&root), open(&root));
        let v1 = text(INDEXED);
        a.write("r/c.0", v1.clone()).await.unwrap();
        let request = page("r/c.0", 12_345, 2);
        assert_eq!(
            read_tool_result(&a, &request).await.unwrap(),
            read_page(&v1, &request).unwrap()
        );
        // The same size, other lines, through another store: `a` still caches v1's index.
        let v2 = Bytes::from(
            v1.to_ascii_uppercase()
                .iter()
                .map(|&b| if b == b'7' { b'\n' } else { b })
                .collect::<Vec<u8>>(),
        );
        b.write("r/c.0", v2.clone()).await.unwrap();
        assert_eq!(
            read_tool_result(&a, &request).await.unwrap(),
            read_page(&v2, &request).unwrap()
        );
        // And by a writer that keeps no index at all (as the Python store writes): in place.
        let v3 = Bytes::from(
            v2.iter()
                .map(|&b| if b == b'3' { b'\r' } else { b })
                .collect::<Vec<u8>>(),
        );
        std::fs::write(root.join("tool_output_limits/r/c.0"), &v3).unwrap();
        assert_eq!(
            read_tool_result(&a, &request).await.unwrap(),
            read_page(&v3, &request).unwrap()
        );
    }

    #[tokio::test]
    async fn a_foreign_index_is_refused_without_reading_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("spills");
        let store = open(&root);
        let big = text(INDEXED);
        store
            .write("r/small.0", Bytes::from_static(b"ten bytes\n"))
            .await
            .unwrap();
        store.write("r/big.0", big.clone()).await.unwrap();
        // A 1 GiB `.idx` (sparse: no disk) beside each.
        for name in ["small", "big"] {
            let index =
                std::fs::File::create(root.join(format!("tool_output_limits/r/{name}.0.idx")));
            index.unwrap().set_len(1 << 30).unwrap();
        }
        let cold = open(&root);
        assert_eq!(
            read_tool_result(&cold, &page("r/small.0", 0, 5))
                .await
                .unwrap(),
            "[handle 'r/small.0': 1 matching line(s); showing 1]\nten bytes"
        );
        let request = page("r/big.0", 777, 3);
        assert_eq!(
            read_tool_result(&cold, &request).await.unwrap(),
            read_page(&big, &request).unwrap()
        );
        // The foreign index beside the indexed spill was replaced by a rebuilt one.
        let rebuilt = std::fs::metadata(root.join("tool_output_limits/r/big.0.idx")).unwrap();
        assert!(rebuilt.len() < 4_096, "{} bytes", rebuilt.len());
    }

    #[tokio::test]
    async fn refuses_symlinks_out_of_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("spills");
        let store = open(&root);
        store.write("r/c.0", text(1)).await.unwrap();
        std::fs::write(dir.path().join("secret"), "top secret\n").unwrap();
        symlink(
            dir.path().join("secret"),
            root.join("tool_output_limits/r/evil.0"),
        )
        .unwrap();
        let err = store.read("r/evil.0").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "handle \"r/evil.0\" resolves outside the store"
        );
        let page = read_tool_result(
            &store,
            &ReadRequest {
                handle: "r/evil.0".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
        assert_eq!(page.to_string(), crate::read::no_stored_result("r/evil.0"));
        // GC never deletes through the link.
        store.gc(after_every_write(), false).await.unwrap();
        assert!(dir.path().join("secret").exists());
        assert!(!root.join("tool_output_limits/r/c.0").exists());
    }

    #[tokio::test]
    async fn a_directory_symlink_cannot_redirect_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("spills");
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        // A stale index outside, which the write's index delete would reach through the link.
        std::fs::write(outside.join("c.0.idx"), "keep").unwrap();
        let store = open(&root);
        store.write("other/x.0", text(1)).await.unwrap();
        symlink(&outside, root.join("tool_output_limits/run")).unwrap();
        let err = store.write("run/c.0", text(2)).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "handle \"run/c.0\" resolves outside the store"
        );
        assert!(!outside.join("c.0").exists(), "written outside the root");
        assert!(outside.join("c.0.idx").exists(), "deleted outside the root");
        // Nor a deeper, not yet existing directory below the link, nor a dangling link.
        let err = store.write("run/sub/c.0", text(2)).await.unwrap_err();
        assert!(err.is_unknown_handle(), "{err}");
        assert!(!outside.join("sub").exists());
        symlink(
            dir.path().join("nowhere"),
            root.join("tool_output_limits/gone"),
        )
        .unwrap();
        assert!(store.write("gone/c.0", text(2)).await.is_err());
        assert!(!dir.path().join("nowhere").exists());
        // A link that stays inside the root is fine.
        symlink(
            root.join("tool_output_limits/other"),
            root.join("tool_output_limits/alias"),
        )
        .unwrap();
        store.write("alias/y.0", text(3)).await.unwrap();
        assert_eq!(store.read("other/y.0").await.unwrap(), text(3));
    }

    /// A file name over 255 bytes cannot exist on disk: a write is refused for good (not a
    /// retryable backend error), a read finds nothing.
    #[tokio::test]
    async fn a_key_too_long_for_a_file_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("spills"));
        let key = format!("run/{}.0", "c".repeat(300));
        let err = store.write(&key, text(1)).await.unwrap_err();
        assert!(
            matches!(err, StoreError::KeyTooLong { max: 255, .. }),
            "{err}"
        );
        assert!(!err.is_retryable());
        assert!(store.read(&key).await.unwrap_err().is_unknown_handle());
    }

    #[tokio::test]
    async fn refuses_a_symlinked_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        let store = open(&dir.path().join("link"));
        let err = store.write("r/c.0", text(1)).await.unwrap_err();
        assert!(matches!(err, StoreError::PermissionDenied(_)));
        assert!(
            err.to_string()
                .ends_with("is a symbolic link; refusing to use it.")
        );
        // A store that refuses to be read is the store's failure, not a missing spill: the model
        // is never told a spill is gone when the store could not be asked.
        let err = store.read("r/c.0").await.unwrap_err();
        assert!(matches!(err, StoreError::PermissionDenied(_)), "{err}");
        assert!(!err.is_unknown_handle() && !err.is_retryable());
        let read = read_tool_result(&store, &page("r/c.0", 0, 10)).await;
        assert!(
            matches!(
                read,
                Err(crate::read::ReadOutcomeError::Store(
                    StoreError::PermissionDenied(_)
                ))
            ),
            "{read:?}"
        );
    }

    /// A file the worker may not read is the store refusing (final, not an unknown handle): the
    /// error object_store's local filesystem gives for it.
    #[test]
    fn an_unreadable_file_is_the_store_refusing() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("spills"));
        let unreadable = object_store::Error::Generic {
            store: "LocalFileSystem",
            source: Box::new(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "Unable to open file /spills/r/c.0: Permission denied (os error 13)",
            )),
        };
        let err = store.map_error(unreadable, "r/c.0", Call::Read);
        assert!(matches!(err, StoreError::PermissionDenied(_)), "{err:?}");
        assert!(!err.is_unknown_handle() && !err.is_retryable());
        assert!(err.to_string().contains("Permission denied"), "{err}");
    }

    /// A run's listing shows the newest spill first, whatever its handle: `a.0` is dated after
    /// `b.0` here, so the handle order (which breaks ties) would put it last.
    #[tokio::test]
    async fn a_run_is_listed_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        store.write("r/a.0", text(2)).await.unwrap();
        store.write("r/b.0", text(2)).await.unwrap();
        let payload = dir.path().join("tool_output_limits/r/b.0");
        let file = std::fs::File::options().write(true).open(payload).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(60))
            .unwrap();
        let request = crate::store::ListRequest {
            run_id: "r".into(),
            ..Default::default()
        };
        let listing = store.list_run(&request, &Reader::operator()).await.unwrap();
        let handles: Vec<_> = (listing.spills.iter())
            .map(|s| s.info.handle.as_str())
            .collect();
        assert_eq!(handles, ["r/a.0", "r/b.0"]);
    }

    #[tokio::test]
    async fn gc_prunes_emptied_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("spills");
        let store = open(&root);
        store.write("r/x/c.0", text(INDEXED)).await.unwrap();
        let report = store.gc(after_every_write(), false).await.unwrap();
        assert_eq!(report.deleted_objects, 2, "the spill and its index");
        assert!(!root.join("tool_output_limits/r").exists());
        assert!(root.join("tool_output_limits").exists());
    }

    #[test]
    fn default_root_is_per_user() {
        let store = Store::open(None).unwrap();
        assert!(
            store
                .url()
                .ends_with(&format!("/overspill-{}/", super::super::local::euid()))
        );
    }
}

#[test]
fn debug_never_shows_the_secret_key() {
    let options = StoreOptions::builder()
        .credentials("AKIDEXAMPLE", "wJalrXUtnFEMI-secret")
        .build();
    let shown = format!("{options:?}");
    assert!(shown.contains("AKIDEXAMPLE"));
    assert!(!shown.contains("wJalrXUtnFEMI-secret"), "{shown}");
}

#[test]
fn url_and_debug_never_show_a_password() {
    let options = StoreOptions::builder()
        .endpoint("http://127.0.0.1:9")
        .credentials("key", "secret")
        .build();
    let store = Store::open_with(Some("s3://ops:url-secret@spills/team"), options).unwrap();
    assert_eq!(store.url(), "s3://ops:[redacted]@spills/team");
    assert!(!format!("{store:?}").contains("url-secret"));
}

/// A key over S3's 1,024 bytes is refused before any request, as final, naming what to shorten.
#[tokio::test]
async fn a_key_too_long_for_a_blob_store_is_refused() {
    let store = Store::open(Some("memory://")).unwrap();
    let key = format!("run/{}.0", "c".repeat(1_100));
    let err = store.write(&key, text(1)).await.unwrap_err();
    assert!(
        matches!(err, StoreError::KeyTooLong { max: 1024, .. }),
        "{err}"
    );
    assert!(!err.is_retryable());
    assert!(
        err.to_string()
            .contains("shorten the run id or tool call id")
    );
    let fits = format!("run/{}.0", "c".repeat(900));
    store.write(&fits, text(1)).await.unwrap();
}

/// Multipart parts that never finish; counts the uploads aborted.
#[derive(Debug, Default)]
struct StalledParts {
    inner: object_store::memory::InMemory,
    aborted: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::fmt::Display for StalledParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StalledParts")
    }
}

#[async_trait::async_trait]
impl ObjectStore for StalledParts {
    async fn put_opts(
        &self,
        location: &Path,
        payload: object_store::PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        _location: &Path,
        _opts: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
        Ok(Box::new(StalledUpload(self.aborted.clone())))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: futures::stream::BoxStream<'static, object_store::Result<Path>>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&Path>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&Path>,
    ) -> object_store::Result<object_store::ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[derive(Debug)]
struct StalledUpload(Arc<std::sync::atomic::AtomicUsize>);

#[async_trait::async_trait]
impl object_store::MultipartUpload for StalledUpload {
    fn put_part(&mut self, _data: object_store::PutPayload) -> object_store::UploadPart {
        Box::pin(futures::future::pending())
    }

    async fn complete(&mut self) -> object_store::Result<object_store::PutResult> {
        Err(object_store::Error::NotImplemented {
            operation: "complete".into(),
            implementer: "StalledUpload".into(),
        })
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// A multipart upload whose call is dropped by its deadline (as by a cancelled activity) is
/// aborted, so its parts do not linger in the bucket.
#[tokio::test]
async fn a_dropped_multipart_upload_is_aborted() {
    let backend = Arc::new(StalledParts::default());
    let aborted = backend.aborted.clone();
    let options = StoreOptions::builder()
        .timeout(Duration::from_millis(100))
        .multipart_threshold(1024)
        .part_size(1024)
        .part_concurrency(2)
        .build();
    let store = over("stalled://", backend, options);
    let err = store.write("run/c.0", text(1_000)).await.unwrap_err();
    assert!(matches!(err, StoreError::Timeout(_)), "{err}");
    for _ in 0..100 {
        if aborted.load(std::sync::atomic::Ordering::SeqCst) == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the dropped upload was never aborted");
}

/// Serves an S3 listing that never ends: every page is truncated and names a next one.
async fn endless_listing() -> std::net::SocketAddr {
    use http_body_util::Full;
    use hyper::service::service_fn;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let pages = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let pages = pages.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_request| {
                    let n = pages.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let body = format!(
                        "<ListBucketResult><IsTruncated>true</IsTruncated>\
                         <NextContinuationToken>t{n}</NextContinuationToken><Contents>\
                         <Key>tool_output_limits/r/c{n}.0</Key>\
                         <LastModified>2024-01-01T00:00:00.000Z</LastModified>\
                         <ETag>\"e\"</ETag><Size>1</Size></Contents></ListBucketResult>"
                    );
                    async move {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                            Bytes::from(body),
                        )))
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    addr
}

/// `spills ls` and `spills gc` end at the scan deadline, whatever the server keeps sending.
#[tokio::test]
async fn a_listing_that_never_ends_stops_at_the_scan_deadline() {
    let addr = endless_listing().await;
    let options = StoreOptions::builder()
        .endpoint(format!("http://{addr}"))
        .allow_http(true)
        .credentials("key", "secret")
        .scan_timeout(Duration::from_millis(500))
        .build();
    let store = Store::open_with(Some("s3://spills"), options).unwrap();
    let listed = tokio::time::timeout(Duration::from_secs(30), store.list(None))
        .await
        .expect("the listing never ended");
    assert!(matches!(listed, Err(StoreError::Timeout(_))), "{listed:?}");
    let collected = tokio::time::timeout(
        Duration::from_secs(30),
        store.gc(SystemTime::UNIX_EPOCH, true),
    )
    .await
    .expect("the collection never ended");
    assert!(
        matches!(collected, Err(StoreError::Timeout(_))),
        "{collected:?}"
    );
}

/// A store at `url` over `backend`, with no index cache.
fn over(url: &str, backend: Arc<dyn ObjectStore>, options: StoreOptions) -> Store {
    Store {
        inner: Arc::new(Inner {
            url: url.into(),
            store: backend,
            local: None,
            base: Path::from(NAMESPACE),
            cache: IndexCache::new(0),
            options,
        }),
    }
}

/// A store over [`HeadFails`].
fn head_fails() -> Store {
    over(
        "s3://head-fails",
        Arc::new(HeadFails::default()),
        StoreOptions::default(),
    )
}

/// An in-memory bucket whose HEAD requests fail as a server error would.
#[derive(Debug, Default)]
struct HeadFails(object_store::memory::InMemory);

impl std::fmt::Display for HeadFails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeadFails")
    }
}

#[async_trait::async_trait]
impl ObjectStore for HeadFails {
    async fn put_opts(
        &self,
        location: &Path,
        payload: object_store::PutPayload,
        options: PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        self.0.put_opts(location, payload, options).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        options: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
        self.0.put_multipart_opts(location, options).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        if options.head {
            return Err(object_store::Error::Generic {
                store: "S3",
                source: "Server returned non-2xx status code: 500 Internal Server Error: down"
                    .into(),
            });
        }
        self.0.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: futures::stream::BoxStream<'static, object_store::Result<Path>>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<Path>> {
        self.0.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&Path>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
        self.0.list(prefix)
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&Path>,
    ) -> object_store::Result<object_store::ListResult> {
        self.0.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.0.copy_opts(from, to, options).await
    }
}

/// A spill whose metadata cannot be read is listed with its facts unknown, and the failure is a
/// WARN with its cause, not silence.
#[tokio::test]
async fn a_listing_reports_metadata_it_cannot_read() {
    let store = head_fails();
    store
        .for_tool("cat", &Reader::operator())
        .write("run-h/call-1.0", text(3))
        .await
        .unwrap();
    let logs = crate::test_logs::Logs::default();
    let _guard = logs.capture();
    let request = ListRequest {
        run_id: "run-h".into(),
        ..ListRequest::default()
    };
    let listing = store.list_run(&request, &Reader::operator()).await.unwrap();
    assert_eq!(listing.spills.len(), 1);
    assert_eq!(listing.spills[0].facts.tool, None);
    let text = logs.text();
    assert!(
        text.contains("WARN") && text.contains("could not read the metadata of spill"),
        "{text}"
    );
    assert!(text.contains("500 Internal Server Error"), "{text}");
}

/// A handle too long for the spill's metadata is left out of it: a listing of every spill shows
/// the stored key, which reads the same spill, and a run's listing rebuilds the handle from the
/// run id it was asked for.
#[tokio::test]
async fn a_handle_left_out_of_the_metadata_still_reads_its_spill() {
    let store = Store::open(Some("memory://")).unwrap();
    let run_id = format!("wf:{}", "運行".repeat(200));
    let handle = format!("{run_id}/call-1.0");
    store
        .for_tool("cat", &Reader::operator())
        .write(&handle, text(2))
        .await
        .unwrap();
    let all = store.list_spills().await.unwrap();
    let [spill] = all.as_slice() else {
        panic!("one spill: {all:?}")
    };
    assert_eq!(spill.handle, "wf_/call-1.0");
    assert_eq!(store.read(&spill.handle).await.unwrap(), text(2));
    let request = ListRequest {
        run_id,
        ..ListRequest::default()
    };
    let listing = store.list_run(&request, &Reader::operator()).await.unwrap();
    assert_eq!(listing.spills[0].info.handle, handle);
    assert_eq!(listing.spills[0].facts.tool.as_deref(), Some("cat"));
}

/// A scoped listing that cannot read a spill's writer fails with the store's error instead of
/// leaving the reader's own spill out unsaid; a listing of every spill shows it without facts.
#[tokio::test]
async fn a_scoped_listing_fails_when_a_writer_cannot_be_read() {
    let store = head_fails();
    let mine = Reader::new(
        ReadScope::Workflow,
        Some(Scope::new("default", "wf").unwrap()),
    );
    store
        .for_tool("cat", &mine)
        .write("run/c.0", text(2))
        .await
        .unwrap();
    let request = ListRequest {
        run_id: "run".into(),
        ..ListRequest::default()
    };
    let failed = store.list_run(&request, &mine).await.unwrap_err();
    let crate::read::ReadOutcomeError::Store(failed) = failed else {
        panic!("a store error: {failed:?}")
    };
    assert!(
        failed.is_retryable() && !failed.is_unknown_handle(),
        "{failed}"
    );
    let all = store.list_run(&request, &Reader::operator()).await.unwrap();
    assert_eq!(all.total, 1);
}

/// Reads scoped to the workflow that wrote the spill, on the memory and local backends.
mod scoped {
    use super::*;
    use crate::read::{GrepRequest, grep_tool_result, no_stored_result};

    fn workflow(id: &str) -> Reader {
        Reader::new(
            ReadScope::Workflow,
            Some(Scope::new("default", id).unwrap()),
        )
    }

    /// The stores to check: memory, and a local directory where its filesystem keeps extended
    /// attributes (tmpfs and ext4 do).
    fn stores(dir: &std::path::Path) -> Vec<Store> {
        let mut stores = vec![Store::open(Some("memory://")).unwrap()];
        let probe = dir.join("probe");
        std::fs::write(&probe, "").unwrap();
        let kept =
            rustix::fs::setxattr(&probe, "user.probe", b"1", rustix::fs::XattrFlags::empty());
        if kept.is_ok() {
            let url = ::url::Url::from_directory_path(dir.join("root")).unwrap();
            stores.push(Store::open(Some(url.as_str())).unwrap());
        }
        stores
    }

    async fn spill(store: &Store, handle: &str, data: Bytes, writer: &Reader) {
        let written = store.for_tool("cat", writer).write(handle, data).await;
        assert_eq!(written.unwrap(), handle);
    }

    /// What `reader` sees of `handle`: a page by offset, a page past the end, and a grep.
    async fn seen(store: &Store, reader: &Reader, handle: &str) -> [String; 3] {
        let store = store.read_as(reader);
        let grep = GrepRequest {
            handle: handle.into(),
            pattern: "line 1".into(),
            ..Default::default()
        };
        // The model reads a missing handle's text as it reads a page.
        let text = |page: Result<String, ReadOutcomeError>| page.unwrap_or_else(|e| e.to_string());
        [
            text(read_tool_result(&store, &page(handle, 0, 2)).await),
            text(read_tool_result(&store, &page(handle, 1 << 30, 2)).await),
            text(grep_tool_result(&store, &grep).await),
        ]
    }

    #[tokio::test]
    async fn a_foreign_spill_reads_as_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        for store in stores(dir.path()) {
            let (a, b) = (workflow("wf-a"), workflow("wf-b"));
            // A small spill (read whole) and one with a line index, which its writer caches.
            for (handle, lines) in [("run-a/small.0", 3), ("run-a/big.0", INDEXED)] {
                spill(&store, handle, text(lines), &a).await;
                let own = seen(&store, &a, handle).await;
                assert!(
                    own[0].contains("line 0\nline 1"),
                    "{}: {own:?}",
                    store.url()
                );
                let total = crate::limits::pyfmt::thousands(lines as u64);
                assert!(
                    own[1].contains(&format!("{total} matching line(s); showing 0]")),
                    "{own:?}"
                );
                let missing = seen(&store, &b, "run-a/never-written.0").await;
                let foreign = seen(&store, &b, handle).await;
                let missing = missing.map(|t| t.replace("run-a/never-written.0", handle));
                assert_eq!(foreign, missing, "{}: {handle}", store.url());
                assert_eq!(foreign[0], no_stored_result(handle));
                // Twice: the first foreign read cached nothing the second could answer from.
                assert_eq!(seen(&store, &b, handle).await, missing);
                // The namespace, an operator and `any` see it.
                let namespace = Reader::new(
                    ReadScope::Namespace,
                    Some(Scope::new("default", "wf-b").unwrap()),
                );
                let any = Reader::new(ReadScope::Any, Some(Scope::new("other", "wf-b").unwrap()));
                for reader in [namespace, any, Reader::operator()] {
                    assert_eq!(seen(&store, &reader, handle).await, own, "{reader:?}");
                }
                let other_namespace = Reader::new(
                    ReadScope::Namespace,
                    Some(Scope::new("other", "wf-a").unwrap()),
                );
                assert_eq!(seen(&store, &other_namespace, handle).await, missing);
            }
        }
    }

    /// A cached index never answers a page alone. A reader outside any workflow caches nothing
    /// (its own write left no entry another such reader could page past the end from), and a
    /// page past the end of a cached spill reads the payload's version again: a spill
    /// overwritten by another workflow reads as missing to its earlier reader, and one
    /// overwritten by its writer shows its new line count to a reader whose entry the overwrite
    /// did not drop.
    #[tokio::test]
    async fn a_cached_index_never_answers_without_a_read() {
        let dir = tempfile::tempdir().unwrap();
        for store in stores(dir.path()) {
            let past = |handle: &str| page(handle, 1 << 30, 2);
            let outside = Reader::new(ReadScope::Workflow, None);
            spill(&store, "run/out.0", text(INDEXED), &outside).await;
            for reader in [&outside, &Reader::new(ReadScope::Namespace, None)] {
                let shown = read_tool_result(&store.read_as(reader), &past("run/out.0")).await;
                assert_eq!(
                    shown.unwrap_err().to_string(),
                    no_stored_result("run/out.0"),
                    "{}",
                    store.url()
                );
            }

            let (a, b) = (workflow("wf-a"), workflow("wf-b"));
            let handle = "run/shared.0";
            spill(&store, handle, text(INDEXED), &a).await;
            let namespace = Reader::new(
                ReadScope::Namespace,
                Some(Scope::new("default", "x").unwrap()),
            );
            for reader in [&a, &namespace] {
                let shown = read_tool_result(&store.read_as(reader), &past(handle)).await;
                assert!(shown.unwrap().contains("40,000"), "{reader:?}");
            }
            // Rewritten by its writer: the namespace reader's entry was not dropped.
            spill(&store, handle, text(INDEXED + 1), &a).await;
            let shown = read_tool_result(&store.read_as(&namespace), &past(handle)).await;
            assert!(shown.unwrap().contains("40,001"), "{}", store.url());
            // Rewritten by another workflow: `wf-a`'s entry stays, and must not answer.
            spill(&store, handle, text(INDEXED + 2), &b).await;
            let shown = read_tool_result(&store.read_as(&a), &past(handle)).await;
            let shown = shown.unwrap_err().to_string();
            assert_eq!(shown, no_stored_result(handle), "{}", store.url());
        }
    }

    /// A spill of no workflow (the CLI's, a script's, or one written before scopes were kept) is
    /// read only by a reader of every spill; a reader outside any workflow sees nothing else.
    #[tokio::test]
    async fn an_unknown_writer_is_read_only_with_any() {
        let dir = tempfile::tempdir().unwrap();
        for store in stores(dir.path()) {
            store.write("run/cli.0", text(3)).await.unwrap();
            spill(&store, "run/wf.0", text(3), &workflow("wf-a")).await;
            let missing = no_stored_result("run/cli.0");
            let unknown = seen(&store, &workflow("wf-a"), "run/cli.0").await;
            assert_eq!(unknown[0], missing, "{}", store.url());
            let outside = Reader::new(ReadScope::Workflow, None);
            assert_eq!(seen(&store, &outside, "run/cli.0").await[0], missing);
            assert_eq!(
                seen(&store, &outside, "run/wf.0").await[0],
                no_stored_result("run/wf.0")
            );
            let any = Reader::new(ReadScope::Any, None);
            assert!(seen(&store, &any, "run/cli.0").await[0].contains("line 0"));
        }
    }

    /// A listing holds only the spills its reader sees, counted as if no others existed; a run
    /// of another workflow lists as an empty one.
    #[tokio::test]
    async fn a_listing_leaves_foreign_spills_out() {
        let dir = tempfile::tempdir().unwrap();
        for store in stores(dir.path()) {
            let (a, b) = (workflow("wf-a"), workflow("wf-b"));
            spill(&store, "shared/a1.0", text(3), &a).await;
            spill(&store, "shared/b1.0", text(4), &b).await;
            spill(&store, "shared/a2.0", text(INDEXED), &a).await;
            spill(&store, "only-b/b2.0", text(2), &b).await;
            let list = |run: &str, limit| ListRequest {
                run_id: run.into(),
                limit,
                ..Default::default()
            };
            let listing = store.list_run(&list("shared", 1), &a).await.unwrap();
            assert_eq!(listing.total, 2, "{}", store.url());
            let handles = |l: &RunListing| -> Vec<String> {
                l.spills.iter().map(|s| s.info.handle.clone()).collect()
            };
            let all = store.list_run(&list("shared", 50), &a).await.unwrap();
            let mut shown = handles(&all);
            shown.sort();
            assert_eq!(shown, ["shared/a1.0", "shared/a2.0"]);
            let big = all
                .spills
                .iter()
                .find(|s| s.info.handle == "shared/a2.0")
                .unwrap();
            assert_eq!(
                big.facts.lines,
                Some(INDEXED as u64),
                "from the index header"
            );
            let now = SystemTime::now();
            let foreign = store.list_run(&list("only-b", 50), &a).await.unwrap();
            let missing = store.list_run(&list("no-such-run", 50), &a).await.unwrap();
            assert_eq!(
                foreign.render(now),
                missing.render(now).replace("no-such-run", "only-b")
            );
            let operator = store
                .list_run(&list("shared", 50), &Reader::operator())
                .await;
            assert_eq!(operator.unwrap().total, 3);
        }
    }
}
