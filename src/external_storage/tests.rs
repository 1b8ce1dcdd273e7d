//! External Storage against references the real Python SDK wrote
//! (`tests/golden/external_storage.json`, from `tests/golden/generate_external_storage.py`), over
//! object_store's in-memory store.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _};
use serde::Deserialize;
use temporalio_common::data_converters::{
    ActivitySerializationContext, PayloadCodec, SerializationContextData,
    WorkflowSerializationContext,
};
use temporalio_common::protos::temporal::api::common::v1::Payload;
use temporalio_common::protos::temporal::api::common::v1::payload::ExternalPayloadDetails;

use super::reference::MARKER_KEY;
use super::*;

#[derive(Deserialize)]
struct Golden {
    bucket: String,
    cases: Vec<Case>,
    segments: Vec<Segment>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    driver: String,
    scope: Scope,
    reference: JsonPayload,
    stored: Stored,
    payload: JsonPayload,
}

#[derive(Deserialize)]
struct Scope {
    kind: String,
    namespace: Option<String>,
    #[serde(rename = "type")]
    kind_type: Option<String>,
    id: Option<String>,
    run_id: Option<String>,
}

impl Scope {
    fn key_scope(&self) -> KeyScope<'_> {
        let namespace = self.namespace.as_deref().unwrap_or("");
        match self.kind.as_str() {
            "workflow" => KeyScope::Workflow {
                namespace,
                workflow_type: self.kind_type.as_deref(),
                workflow_id: self.id.as_deref(),
                run_id: self.run_id.as_deref(),
            },
            "activity" => KeyScope::Activity {
                namespace,
                activity_type: self.kind_type.as_deref(),
                activity_id: self.id.as_deref(),
                run_id: self.run_id.as_deref(),
            },
            _ => KeyScope::Unscoped,
        }
    }
}

#[derive(Deserialize)]
struct JsonPayload {
    metadata: HashMap<String, String>,
    data: String,
    external_sizes: Vec<i64>,
}

#[derive(Deserialize)]
struct Stored {
    bucket: String,
    key: String,
    data: String,
}

#[derive(Deserialize)]
struct Segment {
    value: String,
    s3: String,
    gcs: String,
}

fn unb64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64 in the golden file")
}

impl JsonPayload {
    fn payload(&self) -> Payload {
        Payload {
            metadata: self
                .metadata
                .iter()
                .map(|(k, v)| (k.clone(), unb64(v)))
                .collect(),
            data: unb64(&self.data),
            external_payloads: self
                .external_sizes
                .iter()
                .map(|&size_bytes| ExternalPayloadDetails { size_bytes })
                .collect(),
        }
    }
}

fn golden() -> Golden {
    serde_json::from_str(include_str!("../../tests/golden/external_storage.json"))
        .expect("tests/golden/external_storage.json")
}

fn driver_named(name: &str) -> Driver {
    [Driver::S3, Driver::Gcs]
        .into_iter()
        .find(|d| d.name() == name)
        .expect("a known driver")
}

/// A storage over a fresh in-memory bucket that offloads every payload of at least `threshold`.
fn storage(
    driver: Driver,
    bucket: &str,
    prefix: &str,
    threshold: u64,
) -> (ExternalStorage, Arc<InMemory>) {
    let memory = Arc::new(InMemory::new());
    let bucket = Bucket::new(memory.clone(), bucket, prefix, StoreOptions::default());
    let settings = ExternalStorageSettings {
        threshold,
        ..ExternalStorageSettings::default()
    };
    (ExternalStorage::new(driver, bucket, settings), memory)
}

async fn put(memory: &InMemory, key: &str, data: Vec<u8>) {
    memory
        .put(&Path::parse(key).expect("key"), data.into())
        .await
        .expect("put");
}

async fn get(memory: &InMemory, key: &str) -> Vec<u8> {
    let path = Path::parse(key).expect("key");
    let result = memory
        .get_opts(&path, Default::default())
        .await
        .expect("get");
    result.bytes().await.expect("body").to_vec()
}

#[tokio::test]
async fn resolves_every_reference_python_wrote() {
    let golden = golden();
    assert_eq!(golden.cases.len(), 8);
    for case in &golden.cases {
        let (storage, memory) = storage(driver_named(&case.driver), &golden.bucket, "", 0);
        put(&memory, &case.stored.key, unb64(&case.stored.data)).await;
        let resolved = resolve(Some(&storage), case.reference.payload())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(resolved, case.payload.payload(), "{}", case.name);
    }
}

#[tokio::test]
async fn writes_the_keys_objects_and_references_python_writes() {
    let golden = golden();
    let current = golden
        .cases
        .iter()
        .filter(|c| !matches!(c.name.as_str(), "legacy" | "marked"));
    for case in current {
        let (storage, memory) = storage(driver_named(&case.driver), &golden.bucket, "", 0);
        let reference = storage
            .offload(case.payload.payload(), case.scope.key_scope())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let python = case.reference.payload();
        assert_eq!(
            Reference::from_payload(&reference).unwrap(),
            Reference::from_payload(&python).unwrap(),
            "{}",
            case.name
        );
        // Byte for byte where the claim is ASCII (S3 keys are percent-encoded); Python writes
        // other characters of a GCS object name as `\u` escapes, the same JSON.
        if case.driver == Driver::S3.name() {
            assert_eq!(reference, python, "{}", case.name);
        }
        assert_eq!(
            get(&memory, &case.stored.key).await,
            unb64(&case.stored.data),
            "{}: the stored object, byte for byte",
            case.name
        );
        assert_eq!(case.stored.bucket, golden.bucket);
    }
}

#[test]
fn escapes_key_segments_as_each_python_driver_does() {
    for segment in golden().segments {
        assert_eq!(
            Driver::S3.encode_segment(&segment.value).as_deref(),
            Some(segment.s3.as_str()),
            "S3: {:?}",
            segment.value
        );
        assert_eq!(
            Driver::Gcs.encode_segment(&segment.value).as_deref(),
            Some(segment.gcs.as_str()),
            "GCS: {:?}",
            segment.value
        );
    }
}

/// A Python-written reference and its object, in a fresh bucket of `bucket`.
async fn python_case(bucket: &str) -> (ExternalStorage, Arc<InMemory>, Payload, String) {
    let golden = golden();
    let case = golden
        .cases
        .into_iter()
        .find(|c| c.name == "workflow_scope")
        .expect("the workflow_scope case");
    let (storage, memory) = storage(Driver::S3, bucket, "", 0);
    put(&memory, &case.stored.key, unb64(&case.stored.data)).await;
    (storage, memory, case.reference.payload(), case.stored.key)
}

#[tokio::test]
async fn a_tampered_object_fails_its_hash_check() {
    let (storage, memory, reference, key) = python_case("temporal-payloads").await;
    let mut data = get(&memory, &key).await;
    data[0] ^= 1;
    put(&memory, &key, data).await;
    let error = resolve(Some(&storage), reference).await.unwrap_err();
    assert!(
        matches!(error, ExternalStorageError::HashMismatch { .. }),
        "{error}"
    );
    assert_eq!(error.type_name(), "ExternalStorageIntegrity");
    assert!(!error.retryable());
}

#[tokio::test]
async fn a_claim_on_another_bucket_is_refused_naming_both() {
    let (storage, _memory, reference, _) = python_case("my-bucket").await;
    let error = resolve(Some(&storage), reference).await.unwrap_err();
    assert_eq!(error.type_name(), "ExternalStorageForeignBucket");
    assert!(!error.retryable());
    let message = error.to_string();
    assert!(
        message.contains("\"temporal-payloads\"") && message.contains("\"my-bucket\""),
        "{message}"
    );
}

#[tokio::test]
async fn a_missing_object_is_retryable() {
    let (storage, memory, reference, key) = python_case("temporal-payloads").await;
    memory
        .delete(&Path::parse(&key).expect("key"))
        .await
        .expect("delete");
    let error = resolve(Some(&storage), reference).await.unwrap_err();
    assert_eq!(error.type_name(), "ExternalStorageMissing");
    assert!(error.retryable());
}

#[tokio::test]
async fn a_reference_without_storage_says_what_to_configure() {
    let (_, _, reference, _) = python_case("temporal-payloads").await;
    let error = resolve(None, reference).await.unwrap_err();
    assert_eq!(error.type_name(), "ExternalStorageNotConfigured");
    assert!(!error.retryable());
    assert!(
        error.to_string().contains("--external-storage s3://"),
        "{error}"
    );
}

#[tokio::test]
async fn other_drivers_keys_outside_v0_and_oversized_objects_are_refused() {
    let (storage, _memory, reference, _) = python_case("temporal-payloads").await;
    let mut parsed = Reference::from_payload(&reference).unwrap().unwrap();
    parsed.driver_name = "gcp.gcsdriver".into();
    let error = resolve(Some(&storage), parsed.to_payload())
        .await
        .unwrap_err();
    assert_eq!(error.type_name(), "ExternalStorageUnknownDriver");

    let mut outside = Reference::from_payload(&reference).unwrap().unwrap();
    outside
        .claim
        .insert("key".into(), "tool_output_limits/run/call.0".into());
    let error = resolve(Some(&storage), outside.to_payload())
        .await
        .unwrap_err();
    assert_eq!(
        error.type_name(),
        "ExternalStorageInvalidReference",
        "{error}"
    );

    let small = ExternalStorage::new(
        Driver::S3,
        storage.bucket.clone(),
        ExternalStorageSettings {
            threshold: 0,
            max_payload_bytes: 100,
        },
    );
    let error = resolve(Some(&small), reference).await.unwrap_err();
    assert_eq!(error.type_name(), "ExternalStorageTooLarge", "{error}");
}

#[test]
fn a_marked_payload_that_is_no_reference_is_still_codec_encoded() {
    let payload = Payload {
        metadata: HashMap::from([
            (MARKER_KEY.to_owned(), b"true".to_vec()),
            ("encoding".to_owned(), b"binary/encrypted".to_vec()),
        ]),
        ..Payload::default()
    };
    let error = Reference::from_payload(&payload).unwrap_err();
    assert_eq!(error.type_name(), "ExternalStorageInvalidReference");
    assert!(error.to_string().contains("binary/encrypted"), "{error}");
}

fn json_payload(text: &str) -> Payload {
    Payload {
        metadata: HashMap::from([("encoding".to_owned(), b"json/plain".to_vec())]),
        data: serde_json::to_vec(text).expect("json"),
        external_payloads: vec![],
    }
}

#[tokio::test]
async fn offload_keeps_small_payloads_and_never_rewrites_a_stored_object() {
    let (storage, memory) = storage(Driver::S3, "b", "team/a", 100);
    let small = json_payload("short");
    assert_eq!(
        storage
            .offload(small.clone(), KeyScope::Namespace("ns"))
            .await
            .unwrap(),
        small
    );

    let large = json_payload(&"x".repeat(200));
    let first = storage
        .offload(large.clone(), KeyScope::Namespace("ns"))
        .await
        .unwrap();
    let claim = Reference::from_payload(&first)
        .unwrap()
        .expect("a reference")
        .claim;
    let key = &claim["key"];
    assert!(key.starts_with("team/a/v0/ns/ns/d/sha256/"), "{key}");
    assert_eq!(
        storage
            .offload(first.clone(), KeyScope::Namespace("ns"))
            .await
            .unwrap(),
        first
    );

    // Content-addressed: an object already under the key is left as it is.
    put(&memory, key, b"left alone".to_vec()).await;
    let again = storage
        .offload(large, KeyScope::Namespace("ns"))
        .await
        .unwrap();
    assert_eq!(again, first);
    assert_eq!(get(&memory, key).await, b"left alone");
}

#[tokio::test]
async fn the_codec_resolves_for_workflows_and_leaves_references_to_activities() {
    let (storage, _memory) = storage(Driver::S3, "b", "", 100);
    let codec = ExternalStorageCodec::new(Some(Arc::new(storage)), "default");
    let workflow = SerializationContextData::Workflow(WorkflowSerializationContext::new());
    let activity = SerializationContextData::Activity(ActivitySerializationContext::new());
    let large = json_payload(&"y".repeat(500));
    let encoded = codec.encode(&workflow, vec![large.clone()]).await.unwrap();
    assert!(Reference::is_reference(&encoded[0]));
    let key = &Reference::from_payload(&encoded[0]).unwrap().unwrap().claim["key"];
    assert!(key.starts_with("v0/ns/default/d/sha256/"), "{key}");

    assert_eq!(
        codec.decode(&activity, encoded.clone()).await.unwrap(),
        encoded
    );
    assert_eq!(
        codec.decode(&workflow, encoded.clone()).await.unwrap(),
        vec![large]
    );

    let without = ExternalStorageCodec::new(None, "default");
    let error = without.decode(&workflow, encoded).await.unwrap_err();
    assert!(error.to_string().contains("--external-storage"), "{error}");
}

/// An S3 client, with no retries, of a server on a local port that has no object (a HEAD is a
/// 404) and answers every other request with `status` and `body`.
async fn answering(status: u16, body: &'static str) -> object_store::aws::AmazonS3 {
    use http_body_util::Full;
    use hyper::service::service_fn;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = service_fn(move |request: hyper::Request<_>| async move {
                let absent = request.method() == hyper::Method::HEAD;
                hyper::Response::builder()
                    .status(if absent { 404 } else { status })
                    .body(Full::new(bytes::Bytes::from_static(body.as_bytes())))
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(io, service));
        }
    });
    object_store::aws::AmazonS3Builder::new()
        .with_endpoint(format!("http://{addr}"))
        .with_allow_http(true)
        .with_bucket_name("temporal-payloads")
        .with_region("us-east-1")
        .with_access_key_id("key")
        .with_secret_access_key("secret")
        .with_retry(object_store::RetryConfig {
            max_retries: 0,
            ..Default::default()
        })
        .build()
        .unwrap()
}

/// Refused credentials and a missing bucket are final (a retry cannot fix them) and say what to
/// fix; another deterministic 4xx is final and names its status and code; a store that fails
/// otherwise (an expired session token included) may answer on a retry.
#[tokio::test]
async fn refused_credentials_and_a_missing_bucket_are_not_retried() {
    let (_, _, reference, _) = python_case("temporal-payloads").await;
    let payload = json_payload(&"x".repeat(100));
    for (status, body, type_name, retryable, says) in [
        (
            400,
            "<Error><Code>InvalidArgument</Code><Message>no</Message></Error>",
            "ExternalStorageRejected",
            false,
            "(400 Bad Request, InvalidArgument): no",
        ),
        (
            400,
            "<Error><Code>ExpiredToken</Code><Message>no</Message></Error>",
            "ExternalStorageUnavailable",
            true,
            "ExpiredToken",
        ),
        (
            403,
            "",
            "ExternalStorageMisconfigured",
            false,
            "AWS_ACCESS_KEY_ID",
        ),
        (
            404,
            "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist\
             </Message></Error>",
            "ExternalStorageMisconfigured",
            false,
            "does not exist",
        ),
        (503, "", "ExternalStorageUnavailable", true, "503"),
    ] {
        let bucket = Bucket::new(
            Arc::new(answering(status, body).await),
            "temporal-payloads",
            "",
            StoreOptions::default(),
        );
        let settings = ExternalStorageSettings {
            threshold: 0,
            ..ExternalStorageSettings::default()
        };
        let storage = ExternalStorage::new(Driver::S3, bucket, settings);
        let fetched = resolve(Some(&storage), reference.clone()).await;
        let offloaded = storage
            .offload(payload.clone(), KeyScope::Namespace("default"))
            .await;
        for error in [fetched.unwrap_err(), offloaded.unwrap_err()] {
            assert_eq!(error.type_name(), type_name, "{error}");
            assert_eq!(error.retryable(), retryable, "{error}");
            assert!(error.to_string().contains(says), "{error}");
        }
    }
}
