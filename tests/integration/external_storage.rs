//! External Storage through the in-process worker and a Rust client with the same codec, against
//! the Temporal dev server and SeaweedFS (`OVERSPILL_TEST_S3_URL`, `AWS_*`).
//!
//! A 10 MB `ReduceToolOutput` input reaches the workflow as a reference (resolved by the worker's
//! codec), goes to the spill activity as a reference (written by the codec, resolved by the
//! activity), and a passthrough result over the threshold comes back as a reference the client
//! resolves. Python's side of the same format is tested in `tests/python/test_external_storage.py`.

use std::sync::Arc;
use std::time::Duration;

use overspill::api::{ReduceRequest, ReduceResponse};
use overspill::external_storage::{
    ExternalStorage, ExternalStorageCodec, ExternalStorageSettings, MESSAGE_TYPE,
};
use overspill::limits::{ReductionKind, ToolOutput};
use overspill_workflows::ReduceToolOutput;
use serde_json::json;
use temporalio_client::{WorkflowGetResultOptions, WorkflowStartOptions};
use temporalio_common::protos::temporal::api::common::v1::Payload;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

use crate::support::temporal::{TestWorker, unique};

fn is_reference(payload: Option<&Payload>) -> bool {
    payload
        .and_then(|p| p.metadata.get("messageType"))
        .is_some_and(|t| t.as_slice() == MESSAGE_TYPE.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reduce_tool_output_takes_and_returns_payloads_through_external_storage() {
    let base = std::env::var("OVERSPILL_TEST_S3_URL").unwrap_or_else(|_| {
        panic!("OVERSPILL_TEST_S3_URL is unset: run `deploy/seaweedfs.sh start && source .deploy/seaweedfs.env`")
    });
    let url = format!("{}/{}", base.trim_end_matches('/'), unique("es"));
    let storage =
        Arc::new(ExternalStorage::open(&url, ExternalStorageSettings::default()).expect("storage"));
    let worker_storage = storage.clone();
    let w = TestWorker::start_configured(
        "es",
        move |acts| acts.with_external_storage(worker_storage),
        |_| {},
    )
    .await;
    let mut client = w.client.clone();
    client.options_mut().data_converter =
        ExternalStorageCodec::new(Some(storage), "default").into_data_converter();

    let run = |request: serde_json::Value, id: String| {
        let client = client.clone();
        let task_queue = w.task_queue.clone();
        async move {
            let request: ReduceRequest = serde_json::from_value(request).expect("request");
            let handle = client
                .start_workflow(
                    ReduceToolOutput::run,
                    request,
                    WorkflowStartOptions::new(task_queue, id.clone())
                        .execution_timeout(Duration::from_secs(120))
                        .build(),
                )
                .await
                .expect("start");
            let response: ReduceResponse = handle
                .get_result(WorkflowGetResultOptions::default())
                .await
                .expect("ReduceToolOutput completes");
            let events = client
                .get_workflow_handle::<ReduceToolOutput>(id)
                .fetch_history(Default::default())
                .into_events()
                .await
                .expect("history");
            (response, events)
        }
    };

    // 10 MB in: spilled, by way of two references.
    let text = "0123456789abcdef\n".repeat(600_000);
    let (spilled, events) = run(
        json!({"tool_name": "cat", "run_id": "es-run", "tool_call_id": "big", "output": {"text": text}}),
        unique("es-spill"),
    )
    .await;
    assert_eq!(spilled.kind, ReductionKind::Spilled);
    let data = w.store.read("es-run/big.0").await.expect("the spill");
    assert_eq!(data, text.as_bytes());
    for event in &events {
        match &event.attributes {
            Some(Attributes::WorkflowExecutionStartedEventAttributes(a)) => {
                assert!(is_reference(
                    a.input.as_ref().and_then(|p| p.payloads.first())
                ));
            }
            Some(Attributes::ActivityTaskScheduledEventAttributes(a)) => {
                assert!(is_reference(
                    a.input.as_ref().and_then(|p| p.payloads.first())
                ));
            }
            _ => {}
        }
    }

    // 1 MB passed through: the result is over the threshold, so it comes back as a reference.
    let text = "x".repeat(1_000_000);
    let (passed, events) = run(
        json!({"tool_name": "cat", "run_id": "es-run", "tool_call_id": "echo",
               "output": {"text": text}, "config": {"bands": []}}),
        unique("es-passthrough"),
    )
    .await;
    assert_eq!(passed.kind, ReductionKind::Passthrough);
    assert_eq!(passed.return_value, ToolOutput::Text(text.into()));
    let completed = events.iter().find_map(|e| match &e.attributes {
        Some(Attributes::WorkflowExecutionCompletedEventAttributes(a)) => Some(a),
        _ => None,
    });
    assert!(is_reference(
        completed.and_then(|a| a.result.as_ref()?.payloads.first())
    ));
}
