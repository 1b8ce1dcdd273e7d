//! One suite, every backend: Overspill's [`Store`] contract checked the same way on memory, a
//! local directory, S3 (SeaweedFS), Azure Blob (Azurite) and GCS (fake-gcs-server), as
//! object_store runs its own `integration` checks over each of its backends.
//!
//! The servers come from `deploy/seaweedfs.sh`, `deploy/azurite.sh` and `deploy/fakegcs.sh`
//! (`deploy/test.sh` starts them all and exports their `.env` files); a backend whose variables
//! are missing fails loudly, naming the script.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use overspill::limits::SpillStore as _;
use overspill::read::{
    Part, ReadRequest, SpillReader as _, no_stored_result, read_page, read_tool_result,
};
use overspill::store::Store;
use overspill::store::StoreError;

/// `{base}/suite-{pid}-{nanos}`: a prefix of the bucket no other run or test uses.
fn fresh(base: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!(
        "{}/suite-{}-{nanos}",
        base.trim_end_matches('/'),
        std::process::id()
    )
}

/// The URL a deploy script exported in `variable`, or a loud failure naming the script.
fn served(variable: &str, script: &str) -> String {
    match std::env::var(variable) {
        Ok(url) if !url.is_empty() => fresh(&url),
        _ => panic!(
            "{variable} is not set: run `deploy/{script}.sh start && source .deploy/{script}.env` \
             first (deploy/test.sh does)"
        ),
    }
}

fn lines(count: usize, tag: &str) -> Bytes {
    Bytes::from(
        (0..count)
            .map(|i| format!("{tag} {i:05} {}\n", if i % 7 == 0 { "ERROR" } else { "ok" }))
            .collect::<String>(),
    )
}

async fn page(store: &Store, data: &[u8], request: ReadRequest) {
    let expected = read_page(data, &request).expect("valid arguments");
    let got = read_tool_result(store, &request).await.expect("a page");
    assert_eq!(got, expected, "{request:?}");
}

/// What every backend keeps for spills written by Overspill: handles are keys, bytes come back
/// exactly (text and binary), writes are overwrites and pages follow the new bytes.
async fn write_contract(store: &Store) {
    let first = lines(2_000, "v1");
    let handle = store.write("run-w/call 1.0", first.clone()).await.unwrap();
    assert_eq!(handle, "run-w/call 1.0");
    assert_eq!(store.read(&handle).await.unwrap(), first);
    // The same key again is an overwrite: a same-size payload with other line breaks replaces
    // the first one, and pages follow the new bytes.
    let second = Bytes::from(
        first
            .iter()
            .map(|&b| if b == b' ' { b'\n' } else { b })
            .collect::<Vec<u8>>(),
    );
    assert_eq!(second.len(), first.len());
    store.write(&handle, second.clone()).await.unwrap();
    assert_eq!(store.read(&handle).await.unwrap(), second);
    page(store, &second, request(&handle, 4_000, 5, false, None)).await;
    let binary = Bytes::from_static(&[0, 159, 146, 150, 255, b'\n', 1]);
    store.write("run-w/call-2.0", binary.clone()).await.unwrap();
    assert_eq!(store.read("run-w/call-2.0").await.unwrap(), binary);
    collect_garbage(store, "run-w", &["run-w/call-2.0", "run-w/call_1.0"]).await;
}

/// What every backend keeps for spills another writer put there (a Python `OverspillStore`
/// writes the object alone, no line index): ranges and pages match the in-memory reference,
/// foreign handles get the reference's text, and listing and gc see exactly the spills.
async fn read_contract(store: &Store, put: impl AsyncFn(&str, Bytes)) {
    let data = lines(2_000, "r");
    put("run-r/call-1.0", data.clone()).await;
    put("run-r/call-2.0", Bytes::from_static(b"one line, no break")).await;
    let handle = "run-r/call-1.0";
    assert_eq!(store.head(handle).await.unwrap().size, data.len() as u64);
    assert_eq!(
        store
            .fetch(handle, Part::Payload, 10..25)
            .await
            .unwrap()
            .bytes,
        data.slice(10..25)
    );
    for request in [
        request(handle, 1_500, 20, false, None),
        request(handle, 0, 3, true, None),
        request(handle, 0, 200, false, Some("ERROR")),
        request("run-r/call-2.0", 0, 200, false, None),
    ] {
        page(store, &data_of(store, &request.handle).await, request).await;
    }
    for foreign in ["run-r/missing.0", "../etc/passwd", "/abs/path.0"] {
        let refused = read_tool_result(store, &request(foreign, 0, 200, false, None))
            .await
            .unwrap_err();
        assert_eq!(refused.to_string(), no_stored_result(foreign));
    }
    collect_garbage(store, "run-r", &["run-r/call-1.0", "run-r/call-2.0"]).await;
}

async fn data_of(store: &Store, handle: &str) -> Bytes {
    store.read(handle).await.unwrap()
}

/// `run`'s spills are exactly `handles` (no line indexes listed), and gc removes them all.
async fn collect_garbage(store: &Store, run: &str, handles: &[&str]) {
    let listed = store.list(Some(run)).await.unwrap();
    let mut got: Vec<_> = listed.iter().map(|s| s.handle.as_str()).collect();
    got.sort_unstable();
    assert_eq!(got, handles, "{listed:?}");
    // A cutoff past every write (object timestamps may be whole seconds, rounded down).
    let cutoff = SystemTime::now() + Duration::from_secs(1);
    let report = store.gc(cutoff, false).await.unwrap();
    assert_eq!(report.removed.len(), handles.len(), "{report:?}");
    assert_eq!(store.list(Some(run)).await.unwrap(), []);
}

/// Both contracts, the spills written through `store` itself.
async fn store_suite(url: &str) {
    let store = Store::open(Some(url)).expect("the store opens");
    write_contract(&store).await;
    read_contract(&store, async |handle, data| {
        store.write(handle, data).await.unwrap();
    })
    .await;
}

fn request(
    handle: &str,
    offset: i64,
    limit: i64,
    from_end: bool,
    pattern: Option<&str>,
) -> ReadRequest {
    ReadRequest {
        handle: handle.into(),
        offset,
        limit,
        from_end,
        pattern: pattern.map(str::to_owned),
        ..ReadRequest::default()
    }
}

#[tokio::test]
async fn memory() {
    store_suite("memory://").await;
}

#[tokio::test]
async fn local_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("spills");
    store_suite(&format!("file://{}", root.display())).await;
}

#[tokio::test]
async fn s3_on_seaweedfs() {
    store_suite(&served("OVERSPILL_TEST_S3_URL", "seaweedfs")).await;
}

#[tokio::test]
async fn azure_on_azurite() {
    store_suite(&served("OVERSPILL_TEST_AZURE_URL", "azurite")).await;
}

/// fake-gcs-server answers object_store's reads, listings and deletes, but not its uploads
/// (object_store writes through the XML API, which fake-gcs-server serves only for signed
/// URLs), so the spills are put through the server's JSON upload API and only the read
/// contract runs.
#[tokio::test]
async fn gcs_on_fake_gcs_server() {
    let url = served("OVERSPILL_TEST_GCS_URL", "fakegcs");
    let store = Store::open(Some(&url)).expect("the store opens");
    let (bucket, prefix) = url
        .trim_start_matches("gs://")
        .split_once('/')
        .expect("a prefix under the bucket");
    let endpoint = std::env::var("OVERSPILL_TEST_GCS_ENDPOINT").expect("deploy/fakegcs.sh sets it");
    let http = reqwest::Client::new();
    read_contract(&store, async |handle, data| {
        let name = format!("{prefix}/tool_output_limits/{handle}");
        let upload = url::Url::parse_with_params(
            &format!("{endpoint}/upload/storage/v1/b/{bucket}/o"),
            [("uploadType", "media"), ("name", name.as_str())],
        )
        .unwrap();
        let response = http
            .post(upload)
            .body(data)
            .send()
            .await
            .expect("fake-gcs-server answers");
        assert!(response.status().is_success(), "{response:?}");
    })
    .await;
}

/// `url` with its bucket (or container) renamed to one that does not exist.
fn no_such_bucket(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let prefix = rest.split_once('/').map_or("", |(_, prefix)| prefix);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("{scheme}://no-such-bucket-{nanos}/{prefix}")
}

/// A bucket (an Azure container) that does not exist is a configuration error, for a read as
/// for a write, said in the server's words with what to fix. (fake-gcs-server answers a missing
/// bucket with a 500 naming its own data directory, not as GCS does, so GCS is left out.)
#[tokio::test]
async fn a_missing_bucket_says_so_on_every_backend() {
    for (variable, script, said) in [
        (
            "OVERSPILL_TEST_S3_URL",
            "seaweedfs",
            "(404 Not Found, NoSuchBucket: The specified bucket does not exist",
        ),
        (
            "OVERSPILL_TEST_AZURE_URL",
            "azurite",
            "(404 Not Found, ContainerNotFound: The specified container does not exist.",
        ),
    ] {
        let url = no_such_bucket(&served(variable, script));
        let store = Store::open(Some(&url)).expect("the store opens");
        let written = store.write("run/call.0", lines(3, "x")).await;
        let read = store.read("run/call.0").await;
        for error in [written.unwrap_err(), read.unwrap_err()] {
            assert!(matches!(error, StoreError::Misconfigured(_)), "{error}");
            let text = error.to_string();
            let expected = format!("the bucket of store {url} does not exist {said}");
            assert!(text.contains(&expected), "{expected}\nnot in {text}");
            assert!(
                text.ends_with("create it, or fix the bucket in the store URL"),
                "{text}"
            );
        }
    }
}
