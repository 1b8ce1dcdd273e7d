//! The spill store against a real S3-compatible server (SeaweedFS from `deploy/seaweedfs.sh`).
//!
//! Needs `OVERSPILL_TEST_S3_URL` (e.g. `s3://spills`) and the `AWS_*` variables that
//! `.deploy/seaweedfs.env` exports; every test fails loudly without them. Each test works under
//! its own prefix of the bucket, so tests run in parallel and reruns never collide.

use std::io::Write as _;
use std::net::TcpListener;
use std::ops::Range;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _};
use overspill::limits::{
    self, Limits, NoSummarizer, ReductionKind, SpillStore, ToolCall, ToolOutput, ToolResult,
};
use overspill::read::{
    Fetched, Part, ReadRequest, SpillReader, Version, no_stored_result, read_tool_result,
};
use overspill::store::StoreError;
use overspill::store::{ListRequest, ReadScope, Reader, Scope, Store, StoreOptions};

/// The test bucket URL, or a loud failure naming the script that provides it.
pub(crate) fn base_url() -> String {
    let missing: Vec<&str> = [
        "OVERSPILL_TEST_S3_URL",
        "AWS_ENDPOINT_URL",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
    ]
    .into_iter()
    .filter(|v| std::env::var(v).map_or(true, |s| s.is_empty()))
    .collect();
    assert!(
        missing.is_empty(),
        "store integration tests need a running S3 server: {missing:?} not set. Run \
         `deploy/seaweedfs.sh start && source .deploy/seaweedfs.env` first (deploy/test.sh does)."
    );
    std::env::var("OVERSPILL_TEST_S3_URL")
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_owned()
}

/// A fresh store URL under the test bucket, unique to this test and run.
pub(crate) fn unique_url(name: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("{}/it-{}-{nanos}-{name}", base_url(), std::process::id())
}

/// The bucket itself, through object_store directly (to plant objects the store must refuse).
pub(crate) fn raw_bucket() -> Arc<dyn ObjectStore> {
    Arc::new(
        AmazonS3Builder::from_env()
            .with_url(base_url())
            .with_allow_http(true)
            .build()
            .expect("a raw S3 client for the test bucket"),
    )
}

fn text(lines: usize, tag: &str) -> Bytes {
    Bytes::from(
        (0..lines)
            .map(|i| format!("{tag} line {i:07} of the spill\n"))
            .collect::<String>(),
    )
}

fn page(handle: &str, offset: i64, limit: i64) -> ReadRequest {
    ReadRequest {
        handle: handle.into(),
        offset,
        limit,
        ..Default::default()
    }
}

pub(crate) fn overspill() -> Command {
    Command::new(env!("CARGO_BIN_EXE_overspill"))
}

/// A store that counts the payload bytes pages read from it.
struct Counting {
    store: Store,
    payload: AtomicU64,
}

impl Counting {
    fn new(store: Store) -> Self {
        Self {
            store,
            payload: AtomicU64::new(0),
        }
    }

    fn payload_bytes(&self) -> u64 {
        self.payload.load(Ordering::Relaxed)
    }
}

impl SpillReader for Counting {
    async fn head(&self, handle: &str) -> Result<Version, StoreError> {
        self.store.head(handle).await
    }
    async fn fetch(&self, h: &str, part: Part, range: Range<u64>) -> Result<Fetched, StoreError> {
        let fetched = self.store.fetch(h, part, range).await?;
        if part == Part::Payload {
            self.payload
                .fetch_add(fetched.bytes.len() as u64, Ordering::Relaxed);
        }
        Ok(fetched)
    }
    async fn put_index(&self, handle: &str, index: Bytes) -> Result<(), StoreError> {
        self.store.put_index(handle, index).await
    }
}

/// Overwrite the payload of `handle` in the store at `url` alone (a plain PUT into the bucket),
/// leaving its line index behind as a failed index upload would.
async fn write_payload_alone(url: &str, handle: &str, data: Bytes) {
    let prefix = url
        .strip_prefix(&base_url())
        .unwrap_or_default()
        .trim_matches('/');
    let key = format!(
        "{prefix}/tool_output_limits/{}",
        overspill::store::sanitize_key(handle)
    );
    let key = object_store::path::Path::from(key.as_str());
    raw_bucket().put(&key, data.into()).await.unwrap();
}

/// `data` with every `from` byte made a `to`: the same size, other lines.
fn reshaped(data: &Bytes, from: u8, to: u8) -> Bytes {
    data.iter()
        .map(|&b| if b == from { to } else { b })
        .collect()
}

/// A gc cutoff past every write so far (S3 keeps whole seconds, rounded down).
pub(crate) fn after_every_write() -> SystemTime {
    SystemTime::now() + Duration::from_secs(1)
}

/// Delete a test's (large) spills once it passed, so repeated runs do not fill the server.
async fn clean_up(store: &Store) {
    store.gc(after_every_write(), false).await.unwrap();
    assert_eq!(store.list(None).await.unwrap(), []);
}

#[tokio::test]
async fn write_read_overwrite_and_page() {
    let store = Store::open(Some(&unique_url("rw"))).unwrap();
    let small = text(10, "small");
    let handle = store.write("run-1/call 1.0", small.clone()).await.unwrap();
    assert_eq!(handle, "run-1/call 1.0");
    assert_eq!(store.read(&handle).await.unwrap(), small);
    // A retried activity writes the same key again: same bytes, no error.
    store.write(&handle, small.clone()).await.unwrap();
    assert_eq!(store.read(&handle).await.unwrap(), small);
    // Multipart (above the 16 MiB threshold), overwriting the small object.
    let big = text(700_000, "big");
    assert!(big.len() > 16 << 20);
    store.write(&handle, big.clone()).await.unwrap();
    assert_eq!(store.head(&handle).await.unwrap().size, big.len() as u64);
    assert_eq!(store.read(&handle).await.unwrap(), big);
    let request = page(&handle, 123_456, 3);
    let expected = overspill::read::read_page(&big, &request).unwrap();
    assert_eq!(read_tool_result(&store, &request).await.unwrap(), expected);
    // A second store (no cache) pages from the index stored with the multipart upload: it
    // trusts it (the upload's tag is the object's), so it reads no more than around a page.
    let cold = Counting::new(Store::open(Some(store.url())).unwrap());
    assert_eq!(read_tool_result(&cold, &request).await.unwrap(), expected);
    assert!(
        cold.payload_bytes() < 512 << 10,
        "{} bytes",
        cold.payload_bytes()
    );
    // A first page from line 256 Ki on reads the index and then around the page, never the
    // payload's first 256 KiB; one past the end reads them (for the line count the payload
    // confirms).
    for (offset, most) in [(654_321, 256 << 10), (800_000, 512 << 10)] {
        let far = page(&handle, offset, 3);
        let fresh = Counting::new(Store::open(Some(store.url())).unwrap());
        let expected = overspill::read::read_page(&big, &far).unwrap();
        assert_eq!(read_tool_result(&fresh, &far).await.unwrap(), expected);
        let read = fresh.payload_bytes();
        assert!(read < most, "{read} bytes for line {offset}");
    }
    let tail = ReadRequest {
        from_end: true,
        ..page(&handle, 0, 2)
    };
    assert_eq!(
        read_tool_result(&cold, &tail).await.unwrap(),
        overspill::read::read_page(&big, &tail).unwrap()
    );
    // Unknown handles get the reference's text.
    assert_eq!(
        read_tool_result(&store, &page("run-1/nope.0", 0, 5))
            .await
            .unwrap_err()
            .to_string(),
        no_stored_result("run-1/nope.0")
    );
    clean_up(&store).await;
}

#[tokio::test]
async fn a_page_after_an_overwrite_shows_the_new_payload_whoever_wrote_it() {
    let url = unique_url("stale");
    let (a, b) = (
        Store::open(Some(&url)).unwrap(),
        Store::open(Some(&url)).unwrap(),
    );
    let handle = "run/call.0";
    let v1 = text(10_000, "v1");
    a.write(handle, v1.clone()).await.unwrap();
    let request = page(handle, 7_777, 3);
    let expected = |data: &Bytes| overspill::read::read_page(data, &request).unwrap();
    assert_eq!(read_tool_result(&a, &request).await.unwrap(), expected(&v1));
    // Same size, other lines, through another store: `a` still holds v1's index.
    let v2 = reshaped(&v1, b'3', b'\n');
    b.write(handle, v2.clone()).await.unwrap();
    assert_eq!(read_tool_result(&a, &request).await.unwrap(), expected(&v2));
    // The payload alone: v2's index stays behind, as it would after a failed index upload.
    let v3 = reshaped(&v2, b'5', b'\r');
    write_payload_alone(&url, handle, v3.clone()).await;
    assert_eq!(b.read(handle).await.unwrap(), v3);
    assert_eq!(read_tool_result(&a, &request).await.unwrap(), expected(&v3));
    assert_eq!(read_tool_result(&b, &request).await.unwrap(), expected(&v3));
    clean_up(&a).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_of_one_key_leave_one_whole_object() {
    let url = unique_url("race");
    for (lines, label) in [(2_000, "single put"), (260_000, "multipart")] {
        let payloads: Vec<Bytes> = (0..4).map(|w| text(lines, &format!("w{w}"))).collect();
        let writers = payloads.iter().cloned().map(|data| {
            let store = Store::open_with(
                Some(&url),
                StoreOptions::builder()
                    .multipart_threshold(6 << 20)
                    .part_size(5 << 20)
                    .part_concurrency(2)
                    .build(),
            )
            .unwrap();
            tokio::spawn(async move { store.write("run/race.0", data).await })
        });
        for writer in futures::future::join_all(writers).await {
            assert_eq!(writer.unwrap().unwrap(), "run/race.0");
        }
        let store = Store::open(Some(&url)).unwrap();
        let stored = store.read("run/race.0").await.unwrap();
        assert!(
            payloads.contains(&stored),
            "{label}: the object is not exactly one writer's payload ({} bytes)",
            stored.len()
        );
        // Whichever index won, pages show the winning payload's lines.
        let request = page("run/race.0", lines as i64 / 2, 3);
        assert_eq!(
            read_tool_result(&store, &request).await.unwrap(),
            overspill::read::read_page(&stored, &request).unwrap()
        );
    }
    clean_up(&Store::open(Some(&url)).unwrap()).await;
}

#[tokio::test]
async fn handles_cross_process_boundaries() {
    let url = unique_url("xproc");
    let data = text(5_000, "xproc");
    // Written here, read by another process.
    let store = Store::open(Some(&url)).unwrap();
    let handle = store.write("run-x/call-in.0", data.clone()).await.unwrap();
    let out = overspill()
        .args([
            "read", &handle, "--offset", "4000", "--limit", "3", "--store", &url,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        overspill::read::read_page(&data, &page(&handle, 4000, 3)).unwrap() + "\n"
    );
    // Written by another process, read here.
    let mut child = overspill()
        .args([
            "reduce",
            "--tool",
            "cat",
            "--run-id",
            "run-x",
            "--call-id",
            "call-out",
            "--store",
        ])
        .arg(&url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let marker = String::from_utf8(out.stdout).unwrap();
    assert!(
        marker.contains("stored to handle 'run-x/call-out.0'"),
        "{marker}"
    );
    assert_eq!(store.read("run-x/call-out.0").await.unwrap(), data);
    assert_eq!(
        read_tool_result(&store, &page("run-x/call-out.0", 10, 2))
            .await
            .unwrap(),
        overspill::read::read_page(&data, &page("run-x/call-out.0", 10, 2)).unwrap()
    );
}

#[tokio::test]
async fn refuses_traversal_and_foreign_prefixes() {
    let url = unique_url("safe");
    let prefix = url
        .trim_start_matches(&format!("{}/", base_url()))
        .to_owned();
    let raw = raw_bucket();
    // A secret outside the store's prefix, and another store's spill.
    raw.put(&Path::from(format!("{prefix}-secret/key")), "secret".into())
        .await
        .unwrap();
    let other = Store::open(Some(&format!("{url}-other"))).unwrap();
    other.write("run/call.0", text(3, "other")).await.unwrap();
    let store = Store::open(Some(&url)).unwrap();
    store.write("run/call.0", text(3, "mine")).await.unwrap();
    let secret = format!("{prefix}-secret/key");
    let refused = [
        format!("../../../{secret}"),
        format!("run/../../../../{secret}"),
        format!("/{secret}"),
        format!("%2e%2e/%2e%2e/%2e%2e/{secret}"),
        format!("..%2F..%2F..%2F{secret}"),
        format!("{}/{secret}", base_url()),
        format!("s3://spills/{prefix}-other/tool_output_limits/run/call.0"),
        "run/call.0.idx".to_owned(),
        "run\\..\\..\\x".to_owned(),
    ];
    for handle in &refused {
        let err = store.read(handle).await.unwrap_err();
        assert!(err.is_unknown_handle(), "{handle}: {err:?}");
        let text = read_tool_result(&store, &page(handle, 0, 10))
            .await
            .unwrap_err();
        assert_eq!(text.to_string(), no_stored_result(handle), "{handle}");
    }
    // A handle is resolved inside this store's prefix only: the other store's spill is unknown here.
    assert_eq!(
        store.read("run/call.0").await.unwrap(),
        text(3, "mine"),
        "same handle, own prefix"
    );
    // The secret's key written as a plain handle lands inside the prefix, where nothing is.
    assert!(matches!(
        store.read(&secret).await,
        Err(StoreError::NotFound { .. })
    ));
}

/// Captures WARN lines the engine logs while `f` runs (on this thread).
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn reduce_with(store: &Store) -> (limits::Reduced, Duration, String) {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || Captured(writer.clone()))
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let call = ToolCall {
        tool_name: "cat".into(),
        run_id: Some("run-f".into()),
        tool_call_id: Some("call-f".into()),
        ..Default::default()
    };
    let output = "x".repeat(30_000);
    let started = Instant::now();
    let reduced = limits::reduce(
        &Limits::default(),
        &call,
        ToolResult::bare(ToolOutput::Text(output.into())),
        store,
        &NoSummarizer,
    )
    .await;
    let elapsed = started.elapsed();
    let log = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
    (reduced, elapsed, log)
}

fn assert_fell_back(reduced: &limits::Reduced, elapsed: Duration, log: &str, types: &[&str]) {
    assert_eq!(reduced.kind, ReductionKind::Truncated);
    let text = reduced.return_value.as_text().unwrap();
    assert_eq!(text.chars().count(), 4_000, "the default Truncate budget");
    assert!(text.contains("chars omitted from the middle"), "{text}");
    assert!(
        elapsed < Duration::from_secs(20),
        "fallback took {elapsed:?}"
    );
    assert!(
        types.iter().any(|t| log.contains(&format!(
            "Spilling output of tool 'cat' failed ({t}); falling back to Truncate"
        ))),
        "no WARN with the error type in: {log}"
    );
    assert!(log.contains("WARN"), "{log}");
}

#[tokio::test]
async fn falls_back_when_the_endpoint_is_down() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let store = Store::open_with(
        Some(&unique_url("down")),
        StoreOptions::builder()
            .endpoint(format!("http://127.0.0.1:{port}"))
            .build(),
    )
    .unwrap();
    let (reduced, elapsed, log) = reduce_with(&store).await;
    assert_fell_back(&reduced, elapsed, &log, &["Backend", "Timeout"]);
    assert!(
        elapsed < Duration::from_secs(5),
        "a refused connection took {elapsed:?}"
    );
    // The WARN names the endpoint and the setting that moves it.
    assert!(
        log.contains(&format!("at 127.0.0.1:{port} (")),
        "no endpoint in: {log}"
    );
    assert!(log.contains("check AWS_ENDPOINT_URL"), "{log}");
}

#[tokio::test]
async fn falls_back_when_the_endpoint_is_frozen() {
    // Accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let store = Store::open_with(
        Some(&unique_url("frozen")),
        StoreOptions::builder()
            .endpoint(format!("http://127.0.0.1:{port}"))
            .timeout(Duration::from_secs(2))
            .build(),
    )
    .unwrap();
    let (reduced, elapsed, log) = reduce_with(&store).await;
    drop(listener);
    assert_fell_back(&reduced, elapsed, &log, &["Timeout", "Backend"]);
}

/// A spill to `store` falls back with a WARN naming `Misconfigured` and saying each of `what`
/// (the server's words, the setting to fix); the write's error says them too, and the activity
/// failure is a final `StoreMisconfigured`.
async fn assert_misconfigured(store: &Store, what: &[&str]) {
    let (reduced, elapsed, log) = reduce_with(store).await;
    assert_fell_back(&reduced, elapsed, &log, &["Misconfigured"]);
    let error = store
        .write("run-f/call-f.0", text(1, "x"))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Misconfigured(_)), "{error}");
    for words in what {
        assert!(error.to_string().contains(words), "{words} not in {error}");
        assert!(log.contains(words), "{words} not in the WARN: {log}");
    }
    let failure = overspill::service::Failure::store(overspill::service::Surface::Activity, &error);
    assert_eq!(failure.type_name, "StoreMisconfigured");
    assert!(!failure.retryable);
}

#[tokio::test]
async fn falls_back_when_the_credentials_are_wrong() {
    let url = unique_url("creds");
    let store = Store::open_with(
        Some(&url),
        StoreOptions::builder()
            .credentials("overspill", "not-the-secret")
            .build(),
    )
    .unwrap();
    // Refused credentials are final, and the error says what to fix.
    assert_misconfigured(
        &store,
        &[
            "refused the credentials (403 Forbidden, SignatureDoesNotMatch: ",
            "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        ],
    )
    .await;
    // Nothing was stored under the handle.
    let good = Store::open(Some(&url)).unwrap();
    assert!(matches!(
        good.read("run-f/call-f.0").await,
        Err(StoreError::NotFound { .. })
    ));
}

/// A bucket that does not exist is a configuration error that says so, not a missing spill:
/// the write falls back for good (non-retryable), and listings report it too.
#[tokio::test]
async fn a_missing_bucket_is_misconfigured_not_a_missing_spill() {
    base_url();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let store = Store::open(Some(&format!("s3://no-such-bucket-{nanos}/p"))).unwrap();
    assert_misconfigured(
        &store,
        &[
            "does not exist (404 Not Found, NoSuchBucket: ",
            "create it, or fix the bucket in the store URL",
        ],
    )
    .await;
    let listed = store.list(None).await.unwrap_err();
    assert!(matches!(listed, StoreError::Misconfigured(_)), "{listed}");
}

/// `spills gc --older-than` removes exactly the spills (with their indexes) written before now
/// minus that age, and `spills ls` lists spills, never indexes. The old spills' files are dated
/// two hours back, so nothing waits for a clock.
#[tokio::test]
async fn gc_deletes_only_what_is_older_than_the_cutoff() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let store = Store::open(Some(&url)).unwrap();
    for handle in ["run-old/a.0", "run-old/b.0", "run-new/c.0"] {
        store.write(handle, text(3_000, handle)).await.unwrap();
    }
    let objects = dir.path().join("tool_output_limits");
    let two_hours_ago = SystemTime::now() - Duration::from_secs(2 * 3600);
    for file in ["a.0", "a.0.idx", "b.0", "b.0.idx"] {
        let file = std::fs::File::options()
            .write(true)
            .open(objects.join("run-old").join(file))
            .unwrap();
        file.set_modified(two_hours_ago).unwrap();
    }
    let cli = |args: &[&str]| {
        let out = overspill().args(args).args(["--store", &url]).output();
        String::from_utf8(out.unwrap().stdout).unwrap()
    };

    let listed = cli(&["spills", "ls"]);
    for handle in ["run-old/a.0", "run-old/b.0", "run-new/c.0"] {
        assert!(listed.contains(handle), "{listed}");
    }
    assert!(!listed.contains(".idx"), "{listed}");
    let dry = cli(&["spills", "gc", "--older-than", "1h", "--dry-run"]);
    assert!(dry.contains("would remove 2 spill(s)"), "{dry}");
    assert_eq!(store.list(None).await.unwrap().len(), 3);

    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let report = store.gc(an_hour_ago, false).await.unwrap();
    let removed: Vec<_> = report.removed.iter().map(|s| s.handle.as_str()).collect();
    assert_eq!(removed, ["run-old/a.0", "run-old/b.0"]);
    assert_eq!(report.kept, 1);
    assert_eq!(report.deleted_objects, 4, "payloads and their indexes");
    assert_eq!(store.list(Some("run-old")).await.unwrap(), []);
    assert_eq!(
        store.read("run-new/c.0").await.unwrap(),
        text(3_000, "run-new/c.0")
    );
    // Nothing of the deleted spills is left on disk, indexes and directory included.
    assert!(!objects.join("run-old").exists());
    assert!(objects.join("run-new/c.0.idx").exists());
}

/// Every listing shows a spill under the handle its marker shows: `spills ls` without `--run`
/// too, although the stored key has `_` where a TemporalDurability run id has `:`. On a local
/// store and on S3, with the line counts of a listing that reads the metadata alike.
#[tokio::test]
async fn spills_ls_shows_the_markers_handle() {
    let dir = tempfile::tempdir().unwrap();
    let local = format!("file://{}", dir.path().display());
    for url in [local, unique_url("ls-handle")] {
        let store = Store::open(Some(&url)).unwrap();
        let handle = "wf-1:run-1/call:1.0";
        store.write(handle, text(3_000, "ls")).await.unwrap();
        let listed = store.list_spills().await.unwrap();
        let handles: Vec<&str> = listed.iter().map(|s| s.handle.as_str()).collect();
        assert_eq!(handles, [handle], "{url}");
        let out = overspill()
            .args(["spills", "ls", "--store", &url])
            .output()
            .unwrap();
        let shown = String::from_utf8(out.stdout).unwrap();
        assert!(shown.contains(&format!("\n{handle}  ")), "{url}: {shown}");
        assert!(!shown.contains("wf-1_run-1"), "{url}: {shown}");
        let run = overspill()
            .args(["spills", "ls", "--run", "wf-1_run-1", "--store", &url])
            .output()
            .unwrap();
        let run = String::from_utf8(run.stdout).unwrap();
        assert!(run.contains(&format!("- '{handle}': ")), "{url}: {run}");
        clean_up(&store).await;
    }
}

/// On S3 (whole-second timestamps), a cutoff before every write keeps all, and one after removes
/// every spill with its index: nothing is left in the bucket.
#[tokio::test]
async fn gc_on_s3_removes_spills_with_their_indexes() {
    use futures::TryStreamExt as _;
    let url = unique_url("gc");
    let store = Store::open(Some(&url)).unwrap();
    for handle in ["run-old/a.0", "run-old/b.0"] {
        store.write(handle, text(3_000, "old")).await.unwrap();
    }
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let report = store.gc(an_hour_ago, false).await.unwrap();
    assert_eq!((report.removed.len(), report.kept), (0, 2));
    let report = store.gc(after_every_write(), false).await.unwrap();
    assert_eq!((report.removed.len(), report.kept), (2, 0));
    assert_eq!(report.deleted_objects, 4, "payloads and their indexes");
    let prefix = url
        .trim_start_matches(&format!("{}/", base_url()))
        .to_owned();
    let left: Vec<_> = raw_bucket()
        .list(Some(&Path::from(prefix.as_str())))
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(left, Vec::<String>::new());
}

/// The bytes S3 counts against its 2 KB of user metadata on the object at `path`: every
/// `x-amz-meta-*` key and value.
async fn metadata_bytes(path: &str) -> usize {
    let head = object_store::GetOptions::new().with_head(true);
    let got = raw_bucket()
        .get_opts(&Path::from(path), head)
        .await
        .expect("the spill's metadata");
    (got.attributes.iter())
        .filter_map(|(key, value)| match key {
            object_store::Attribute::Metadata(name) => Some(name.len() + value.as_ref().len()),
            _ => None,
        })
        .sum()
}

/// A spill whose tool name, run id and first line are long and non-ASCII, written for the widest
/// writer's scope there is (a digested namespace beside a raw 144-byte workflow id), carries user
/// metadata AWS accepts (within 2 KB, with a margin), and a listing reads its facts back: the
/// tool and first line cut on char boundaries, the sizes exact, the handle as the marker shows
/// it, the writer kept whole.
#[tokio::test]
async fn long_non_ascii_names_keep_the_metadata_within_s3s_limit() {
    let url = unique_url("meta");
    let store = Store::open(Some(&url)).unwrap();
    let tool = "ツール出力🦀".repeat(60);
    let run_id = format!("wf:{}", "運行-ü".repeat(150));
    let handle = format!("{run_id}/call-1.0");
    let first = "Ошибка сборки: 🦀 ".repeat(40);
    let body = format!("{first}\nsecond line\n");
    let data = Bytes::from(body.clone());
    let scope = Scope::new(&"ñ".repeat(300), &"w".repeat(144)).unwrap();
    let writer = Reader::new(ReadScope::Workflow, Some(scope.clone()));
    let returned = store
        .for_tool(&tool, &writer)
        .write(&handle, data.clone())
        .await;
    assert_eq!(returned.expect("stored"), handle);

    let prefix = url.trim_start_matches("s3://").split_once('/').unwrap().1;
    let key = format!(
        "{prefix}/tool_output_limits/{}",
        overspill::store::sanitize_key(&handle)
    );
    let bytes = metadata_bytes(&key).await;
    assert!(bytes <= 2_048 - 224, "{bytes} bytes of user metadata");

    let request = ListRequest {
        run_id: run_id.clone(),
        ..ListRequest::default()
    };
    let listing = store
        .list_run(&request, &Reader::operator())
        .await
        .expect("a listing");
    let [spill] = listing.spills.as_slice() else {
        panic!("one spill: {listing:?}")
    };
    assert_eq!(spill.info.handle, handle, "the handle the marker shows");
    let facts = &spill.facts;
    assert_eq!(facts.scope.as_ref(), Some(&scope));
    assert_eq!(facts.chars, Some(body.chars().count() as u64));
    assert_eq!(facts.lines, Some(2));
    let (kept_tool, kept_first) = (
        facts.tool.as_deref().unwrap(),
        facts.first_line.as_deref().unwrap(),
    );
    assert!(
        !kept_tool.is_empty() && tool.starts_with(kept_tool),
        "{kept_tool}"
    );
    assert!(
        !kept_first.is_empty() && first.starts_with(kept_first),
        "{kept_first}"
    );
    // The spill reads back whole under its handle.
    assert_eq!(store.read(&handle).await.unwrap(), data);
}

/// A key S3 would refuse (over 1,024 bytes) is refused before any request, for good; SeaweedFS
/// refuses the same key with a 400 `KeyTooLongError`.
#[tokio::test]
async fn a_key_over_s3s_limit_never_reaches_the_store() {
    let url = unique_url("longkey");
    let store = Store::open(Some(&url)).unwrap();
    let handle = format!("run-k/{}.0", "c".repeat(1_024));
    let error = store.write(&handle, text(1, "k")).await.unwrap_err();
    assert!(
        matches!(error, StoreError::KeyTooLong { max: 1024, .. }),
        "{error}"
    );
    let failure = overspill::service::Failure::store(overspill::service::Surface::Activity, &error);
    assert_eq!(
        (failure.type_name, failure.retryable),
        ("StoreRefused", false)
    );
    let refused = raw_bucket()
        .put(
            &Path::from(format!("it-longkey/{}", "c".repeat(1_100))),
            Bytes::new().into(),
        )
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("KeyTooLongError"), "{refused}");
}

/// A deterministic 4xx (SeaweedFS's 400 `InvalidBucketName` for a bucket name S3 does not
/// allow) is a final `StoreRejected` naming the status and the code: the spill falls back with
/// a WARN that says so, and an activity without `then` fails without a retry.
#[tokio::test]
async fn a_deterministic_4xx_falls_back_at_once() {
    base_url();
    let store = Store::open(Some("s3://ab/it-rejected")).unwrap();
    let (reduced, elapsed, log) = reduce_with(&store).await;
    assert_fell_back(&reduced, elapsed, &log, &["Rejected"]);
    assert!(log.contains("400 Bad Request, InvalidBucketName"), "{log}");
    let error = store
        .write("run-r/call-r.0", text(1, "r"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, StoreError::Rejected { status, code: Some(code), .. }
            if status == "400 Bad Request" && code == "InvalidBucketName"),
        "{error:?}"
    );
    assert!(!error.is_retryable());
    let failure = overspill::service::Failure::store(overspill::service::Surface::Activity, &error);
    assert_eq!(
        (failure.type_name, failure.retryable),
        ("StoreRejected", false)
    );
    assert!(
        failure
            .message
            .contains("(400 Bad Request, InvalidBucketName)"),
        "{}",
        failure.message
    );
}
