//! The production connection paths against real components: `overspill worker` reaching Temporal
//! through nginx (`deploy/nginx.sh`: TLS with a private CA, mTLS, an API key), spill stores and
//! External Storage on S3 over HTTPS with a private CA (`deploy/seaweedfs-https.sh`), and each
//! connection mistake a user can make stopping the worker with one line that names the fix.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use overspill::external_storage::{ExternalStorage, ExternalStorageSettings, KeyScope, resolve};
use overspill::limits::SpillStore as _;
use overspill::read::{ReadRequest, read_tool_result};
use overspill::store::StoreError;
use overspill::store::{Store, StoreOptions};
use overspill_workflows::ReduceToolOutput;
use serde_json::json;
use temporalio_client::{WorkflowGetResultOptions, WorkflowStartOptions};
use temporalio_common::protos::temporal::api::common::v1::Payload;

use crate::support::temporal::{temporal_address, unique};

/// A variable the deploy scripts export, or a panic saying which script to run.
fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is unset: run `deploy/nginx.sh start && deploy/seaweedfs-https.sh start` and \
             source .deploy/nginx.env and .deploy/seaweedfs-https.env (deploy/test.sh does)"
        )
    })
}

/// A file of `deploy/certs.sh`'s.
fn cert(name: &str) -> String {
    format!("{}/{name}", var("OVERSPILL_TEST_TLS_DIR"))
}

/// The HTTPS SeaweedFS's bucket under a fresh prefix, its endpoint in the URL.
fn https_store_url(what: &str) -> String {
    format!(
        "{}/{}?endpoint={}",
        var("OVERSPILL_TEST_S3_HTTPS_URL"),
        unique(what),
        var("OVERSPILL_TEST_S3_HTTPS_ENDPOINT")
    )
}

/// `overspill worker` with `args` (and `envs`), its stderr in `log`; killed when dropped.
struct Worker {
    child: Child,
    log: tempfile::NamedTempFile,
}

impl Worker {
    fn spawn(args: &[&str], envs: &[(&str, &str)]) -> Self {
        let log = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("log file: {e}"));
        let stderr = log.reopen().unwrap_or_else(|e| panic!("log file: {e}"));
        let child = Command::new(env!("CARGO_BIN_EXE_overspill"))
            .args(["worker", "--graceful-shutdown-secs", "1"])
            .args(args)
            .env_remove("TEMPORAL_API_KEY")
            .env_remove("AWS_CA_BUNDLE")
            .env("TEMPORAL_ADDRESS", temporal_address())
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn overspill worker: {e}"));
        Self { child, log }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// The worker's exit status and stderr, once it stops (a hang guard of a minute fails).
    fn stopped(mut self) -> (std::process::ExitStatus, String) {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return (status, self.stderr());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the worker did not stop; its log:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A worker started with `args` on a fresh task queue spills a 20 KB output to `store_url`
/// through `ReduceToolOutput` (started by a plain client of the dev server); the spill reads back
/// byte for byte from `store`.
async fn spills_through(args: &[&str], envs: &[(&str, &str)], store_url: &str, store: &Store) {
    let queue = unique("tls");
    let worker_args = [args, &["--task-queue", &queue, "--store", store_url]].concat();
    let mut worker = Worker::spawn(&worker_args, envs);
    let client = overspill::worker::Connect::new(temporal_address())
        .client()
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let output = "a line of the tool's output\n".repeat(800);
    let request = json!({"tool_name": "cat", "tool_call_id": "call-1", "run_id": unique("run"),
        "output": {"text": output}, "config": {"bands": [{"over": 100, "action": {"type": "spill"}}]}});
    let request: overspill::api::ReduceRequest =
        serde_json::from_value(request).unwrap_or_else(|e| panic!("request: {e}"));
    let options = WorkflowStartOptions::new(queue.clone(), unique("tls-wf"))
        .execution_timeout(Duration::from_secs(60))
        .build();
    let handle = client
        .start_workflow(ReduceToolOutput::run, request, options)
        .await
        .unwrap_or_else(|e| panic!("start: {e}"));
    let response = handle
        .get_result(WorkflowGetResultOptions::default())
        .await
        .unwrap_or_else(|e| panic!("ReduceToolOutput: {e:?}; worker log:\n{}", worker.stderr()));
    if let Ok(Some(status)) = worker.child.try_wait() {
        panic!("the worker exited ({status}): {}", worker.stderr());
    }
    let metadata = response.envelope.metadata.unwrap_or_default();
    let spilled = metadata["overflow_handle"]
        .as_str()
        .unwrap_or_else(|| panic!("no handle in {metadata:?}"));
    let stored = store
        .read(spilled)
        .await
        .unwrap_or_else(|e| panic!("read {spilled}: {e}"));
    assert_eq!(stored, output.as_bytes());
}

/// A worker on mTLS (private CA, client certificate) spills end to end, to S3 over HTTPS whose
/// CA it takes from `AWS_CA_BUNDLE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mtls_worker_spills_to_https_s3_through_aws_ca_bundle() {
    let url = https_store_url("mtls");
    let store = https_store(&url, &cert("ca.pem"));
    let (ca, client_cert, key) = (cert("ca.pem"), cert("client.pem"), cert("client.key"));
    let address = var("OVERSPILL_TEST_TEMPORAL_MTLS");
    let args = [
        "--address",
        &address,
        "--tls-ca",
        &ca,
        "--tls-cert",
        &client_cert,
        "--tls-key",
        &key,
    ];
    spills_through(&args, &[("AWS_CA_BUNDLE", &ca)], &url, &store).await;
}

/// A worker on an API key (TLS, `authorization: Bearer …`) spills end to end, to S3 over HTTPS
/// whose CA it takes from `--store-ca-bundle`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_worker_spills_to_https_s3_through_store_ca_bundle() {
    let url = https_store_url("apikey");
    let store = https_store(&url, &cert("ca.pem"));
    let ca = cert("ca.pem");
    let address = var("OVERSPILL_TEST_TEMPORAL_API_KEY_URL");
    let key = var("OVERSPILL_TEST_TEMPORAL_API_KEY");
    let args = [
        "--address",
        &address,
        "--tls-ca",
        &ca,
        "--api-key",
        &key,
        "--store-ca-bundle",
        &ca,
    ];
    spills_through(&args, &[], &url, &store).await;
}

/// `address` as the worker shows it.
fn shown(address: &str) -> String {
    overspill::worker::Connect::new(address).to_string()
}

/// A worker started with `args` exits non-zero with one line on stderr, which is returned.
fn refused_start(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let store = format!("file://{}", dir.path().display());
    let queue = unique("refused");
    let args = [args, &["--task-queue", &queue, "--store", &store]].concat();
    let (status, stderr) = Worker::spawn(&args, &[]).stopped();
    assert!(!status.success(), "{status}: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line, not: {stderr}");
    lines[0].to_owned()
}

#[test]
fn a_wrong_api_key_is_said_as_the_proxys_http_401() {
    let address = var("OVERSPILL_TEST_TEMPORAL_API_KEY_URL");
    let ca = cert("ca.pem");
    let line = refused_start(&["--address", &address, "--tls-ca", &ca, "--api-key", "wrong"]);
    assert_eq!(
        line,
        format!(
            "overspill: Temporal at {} answered HTTP 401 Unauthorized: check --api-key \
             (TEMPORAL_API_KEY)",
            shown(&address)
        )
    );
}

#[test]
fn a_missing_client_certificate_names_tls_cert() {
    let address = var("OVERSPILL_TEST_TEMPORAL_MTLS");
    let ca = cert("ca.pem");
    let line = refused_start(&["--address", &address, "--tls-ca", &ca]);
    assert_eq!(
        line,
        format!(
            "overspill: Temporal at {} answered HTTP 400 Bad Request (as a proxy that \
             requires a client certificate does): check --tls-cert and --tls-key",
            shown(&address)
        )
    );
}

#[test]
fn an_untrusted_server_certificate_names_tls_ca() {
    let address = var("OVERSPILL_TEST_TEMPORAL_MTLS");
    let (other, client_cert, key) = (cert("other-ca.pem"), cert("client.pem"), cert("client.key"));
    let line = refused_start(&[
        "--address",
        &address,
        "--tls-ca",
        &other,
        "--tls-cert",
        &client_cert,
        "--tls-key",
        &key,
    ]);
    assert_eq!(
        line,
        format!(
            "overspill: Temporal at {} presented a certificate no trusted CA signed \
             (invalid peer certificate: UnknownIssuer): check --tls-ca \
             (TEMPORAL_TLS_SERVER_CA_CERT_PATH)",
            shown(&address)
        )
    );
}

#[test]
fn a_wrong_server_name_names_the_address() {
    let address = var("OVERSPILL_TEST_TEMPORAL_WRONG_NAME");
    let ca = cert("ca.pem");
    let line = refused_start(&["--address", &address, "--tls-ca", &ca]);
    let expected = format!(
        "overspill: Temporal at {} presented a certificate for other names (",
        shown(&address)
    );
    assert!(line.starts_with(&expected), "{line}");
    assert!(line.contains("wrong.example"), "{line}");
    assert!(
        line.ends_with("): check the host in --address, or the server's certificate"),
        "{line}"
    );
}

#[test]
fn an_unknown_namespace_names_namespace() {
    let namespace = unique("no-such-namespace");
    let line = refused_start(&["--namespace", &namespace]);
    let address = shown(&temporal_address());
    assert_eq!(
        line,
        format!(
            "overspill: Temporal at {address} has no namespace {namespace:?} (Namespace \
             {namespace} is not found.): check --namespace (TEMPORAL_NAMESPACE)"
        )
    );
}

/// A store on the HTTPS SeaweedFS at `url`, trusting the CA bundle `ca`.
fn https_store(url: &str, ca: &str) -> Store {
    let options = StoreOptions::builder()
        .ca_bundle(ca)
        .timeout(Duration::from_secs(2))
        .build();
    Store::open_with(Some(url), options).unwrap_or_else(|e| panic!("open {url}: {e}"))
}

/// A spill and a page over HTTPS with a private CA; External Storage offloads and fetches there.
#[tokio::test]
async fn s3_over_https_with_a_private_ca_spills_pages_and_offloads() {
    let url = https_store_url("https");
    let store = https_store(&url, &cert("ca.pem"));
    let text: String = (0..5_000).map(|i| format!("line {i}\n")).collect();
    let handle = store
        .write("run-1/call-1.0", text.clone().into())
        .await
        .unwrap_or_else(|e| panic!("spill: {e}"));
    let request = ReadRequest {
        handle: handle.clone(),
        offset: 4_000,
        limit: 2,
        ..Default::default()
    };
    let expected =
        overspill::read::read_page(text.as_bytes(), &request).unwrap_or_else(|e| panic!("{e}"));
    let page = read_tool_result(&store, &request)
        .await
        .unwrap_or_else(|e| panic!("page: {e}"));
    assert_eq!(page, expected);
    assert!(page.contains("line 4000\nline 4001"), "{page}");

    let options = StoreOptions::builder().ca_bundle(cert("ca.pem")).build();
    let settings = ExternalStorageSettings {
        threshold: 10,
        ..ExternalStorageSettings::default()
    };
    let storage = ExternalStorage::open_with(&url, settings, options)
        .unwrap_or_else(|e| panic!("open External Storage: {e}"));
    let payload = Payload {
        data: b"\"a payload over the threshold\"".to_vec(),
        ..Payload::default()
    };
    let reference = storage
        .offload(payload.clone(), KeyScope::Namespace("default"))
        .await
        .unwrap_or_else(|e| panic!("offload: {e}"));
    assert_ne!(reference, payload);
    let fetched = resolve(Some(&storage), reference)
        .await
        .unwrap_or_else(|e| panic!("retrieve: {e}"));
    assert_eq!(fetched, payload);
}

/// A CA bundle that did not sign the server's certificate fails a spill at once (a final
/// `Misconfigured`, not the store's `Timeout`), saying TLS and naming the host and the fix.
#[tokio::test]
async fn a_wrong_ca_fails_saying_tls_and_the_host() {
    let url = https_store_url("wrong-ca");
    let store = https_store(&url, &cert("other-ca.pem"));
    let error = store
        .write("run-1/call-1.0", "x\n".into())
        .await
        .expect_err("an untrusted server");
    assert!(matches!(error, StoreError::Misconfigured(_)), "{error:?}");
    let host = var("OVERSPILL_TEST_S3_HTTPS_ENDPOINT")
        .trim_start_matches("https://")
        .to_owned();
    let shown = url.split('?').next().unwrap_or_default();
    assert_eq!(
        error.to_string(),
        format!(
            "TLS to {host} failed for store {shown} (invalid peer certificate: UnknownIssuer): \
             set --store-ca-bundle or AWS_CA_BUNDLE to a PEM file of the CA that signed the \
             server's certificate; check AWS_ENDPOINT_URL or the URL's ?endpoint="
        )
    );
    // A bundle that is no PEM file is refused when the store opens.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate").unwrap_or_else(|e| panic!("write: {e}"));
    let refused = Store::open_with(
        Some(&url),
        StoreOptions::builder().ca_bundle(Path::new(&junk)).build(),
    )
    .expect_err("no certificate");
    assert!(
        refused
            .to_string()
            .contains("(--store-ca-bundle or AWS_CA_BUNDLE) holds no PEM certificate"),
        "{refused}"
    );
}
