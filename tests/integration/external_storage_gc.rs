//! `ExternalStorage::gc` in process against the Temporal dev server and SeaweedFS, on objects
//! Overspill's own storage wrote under a bucket prefix, with an explicit "now" instead of waiting.
//! (Payloads temporalio's `S3StorageDriver` wrote, a run deleted through Temporal, replay after
//! gc, the CLI and the worker's schedule: `tests/python/test_external_storage_gc.py`.)

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use futures::TryStreamExt as _;
use object_store::path::Path;
use overspill::api::ReduceRequest;
use overspill::external_storage::{
    ExternalStorage, ExternalStorageSettings, GcOptions, KeyScope, PayloadGcReport, Tally,
};
use overspill::store::{Bucket, StoreOptions};
use overspill_workflows::ReduceToolOutput;
use temporalio_client::WorkflowStartOptions;
use temporalio_common::protos::temporal::api::common::v1::Payload;

use crate::support::temporal::{temporal_address, unique};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_deletes_only_objects_of_workflows_temporal_does_not_have() {
    let base = std::env::var("OVERSPILL_TEST_S3_URL")
        .unwrap_or_else(|_| panic!("OVERSPILL_TEST_S3_URL is unset: source .deploy/seaweedfs.env"));
    let url = format!("{}/{}", base.trim_end_matches('/'), unique("esgc"));
    let settings = ExternalStorageSettings {
        threshold: 1,
        ..ExternalStorageSettings::default()
    };
    let storage = ExternalStorage::open(&url, settings).expect("storage");
    let client = overspill::worker::Connect::new(temporal_address())
        .client()
        .await
        .expect("connect");

    // A running workflow: started on a task queue nobody polls, so it stays running.
    let running = unique("esgc-running");
    let request: ReduceRequest =
        serde_json::from_value(serde_json::json!({"tool_name": "t", "output": {"text": "x"}}))
            .expect("request");
    let options = WorkflowStartOptions::new(unique("esgc-nobody"), running.clone())
        .execution_timeout(Duration::from_secs(600))
        .build();
    client
        .start_workflow(ReduceToolOutput::run, request, options)
        .await
        .expect("start");
    let gone = unique("esgc never ran/ü");
    let unknown_run = "0195ba2f-2e3b-7f3b-9f37-1a2b3c4d5e6f";
    // The running workflow's objects: its start (run `null`) and a run Temporal does not have
    // (a continued-as-new predecessor's, as far as gc can tell): both stay while it runs.
    put(&storage, &running, None, 1).await;
    put(&storage, &running, Some(unknown_run), 2).await;
    // A workflow that never ran: both its objects go.
    put(&storage, &gone, None, 3).await;
    put(&storage, &gone, Some(unknown_run), 4).await;
    let namespace_scoped = storage
        .offload(
            Payload {
                data: b"\"payload 5\"".to_vec(),
                ..Payload::default()
            },
            KeyScope::Namespace("default"),
        )
        .await
        .expect("offload");
    assert_ne!(namespace_scoped, Payload::default());

    let bucket = Bucket::open(&url, StoreOptions::default()).expect("bucket");
    let keys = || async {
        let root = Path::parse(format!("{}/v0", bucket.prefix)).expect("a path");
        let metas: Vec<_> = bucket
            .store
            .list(Some(&root))
            .try_collect()
            .await
            .expect("listing");
        metas
            .into_iter()
            .map(|m| (m.location.to_string(), m.size))
            .collect::<BTreeSet<_>>()
    };
    let before = keys().await;
    assert_eq!(before.len(), 5, "{before:?}");
    let encoded_gone = overspill::external_storage::Driver::S3
        .encode_segment(&gone)
        .expect("a segment");
    let doomed: BTreeSet<_> = before
        .iter()
        .filter(|(k, _)| k.contains(&format!("/wi/{encoded_gone}/")))
        .cloned()
        .collect();
    assert_eq!(doomed.len(), 2, "{before:?}");
    let tally = |set: &BTreeSet<(String, u64)>| Tally {
        objects: set.len() as u64,
        bytes: set.iter().map(|(_, size)| size).sum(),
    };
    let options = |now: SystemTime, dry_run: bool| GcOptions {
        now,
        dry_run,
        ..GcOptions::default()
    };

    // Now: every object is younger than a day; nothing is asked, nothing goes.
    let young = storage
        .gc(&client, options(SystemTime::now(), false))
        .await
        .expect("gc");
    assert_eq!(
        young,
        PayloadGcReport {
            kept: tally(&before),
            ..PayloadGcReport::default()
        }
    );

    // Two days on: a dry run and a real one count the same, and only the real one deletes.
    let later = SystemTime::now() + Duration::from_secs(2 * 24 * 3600);
    let kept: BTreeSet<_> = before.difference(&doomed).cloned().collect();
    let expected = PayloadGcReport {
        runs_checked: 3,
        deleted: tally(&doomed),
        kept: tally(&kept),
        errors: 0,
        dry_run: true,
    };
    let dry = storage
        .gc(&client, options(later, true))
        .await
        .expect("dry run");
    assert_eq!(dry, expected);
    assert_eq!(keys().await, before);
    let real = storage
        .gc(&client, options(later, false))
        .await
        .expect("gc");
    assert_eq!(
        real,
        PayloadGcReport {
            dry_run: false,
            ..expected
        }
    );
    assert_eq!(keys().await, kept);

    // The namespace-scoped object goes only with --unscoped-older-than.
    let unscoped = GcOptions {
        unscoped_older_than: Some(Duration::from_secs(3600)),
        ..options(later, false)
    };
    let report = storage.gc(&client, unscoped).await.expect("gc");
    assert_eq!(report.deleted.objects, 1, "{report}");
    assert_eq!(keys().await.len(), 2);
}

/// Store a payload (numbered `n`) for workflow `id`'s run `run` (`None`: a `null` run id).
async fn put(storage: &ExternalStorage, id: &str, run: Option<&str>, n: u32) {
    let scope = KeyScope::Workflow {
        namespace: "default",
        workflow_type: Some("ReduceToolOutput"),
        workflow_id: Some(id),
        run_id: run,
    };
    let payload = Payload {
        data: format!("\"payload {n}\"").into_bytes(),
        ..Payload::default()
    };
    storage.offload(payload, scope).await.expect("offload");
}
