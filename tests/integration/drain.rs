//! Drain: SIGTERM to an `overspill worker` process with 20 summaries in flight.
//!
//! Polling stops at once; the short summaries finish on that worker within its graceful period;
//! the long ones (chunked, heartbeating their progress) are cancelled at its end and fail
//! retryably, and a second worker resumes them from their last heartbeat. Nothing is lost.

use std::time::{Duration, Instant};

use overspill::limits::ReductionKind;
use overspill_workflows::ReduceToolOutput;
use serde_json::json;
use temporalio_client::WorkflowGetResultOptions;
use temporalio_common::protos::temporal::api::history::v1::HistoryEvent;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

use crate::openai_server::FakeOpenAi;
use crate::processes::{WorkerProcess, connect, history, start};
use crate::support::temporal::unique;

const SHORT: usize = 14;
const LONG: usize = 6;
/// The worker's graceful period: the short summaries' one call fits in it, the long ones' seven
/// do not.
const GRACE_SECS: u64 = 8;

/// Identities and attempts of the activity tasks in `events` (recorded when each finished).
fn activity_attempts(events: &[HistoryEvent]) -> Vec<(String, i32, String)> {
    events
        .iter()
        .filter_map(|e| match &e.attributes {
            Some(Attributes::ActivityTaskStartedEventAttributes(a)) => Some((
                a.identity.clone(),
                a.attempt,
                a.last_failure
                    .as_ref()
                    .map(|f| f.message.clone())
                    .unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

fn workflow_task_identities(events: &[HistoryEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.attributes {
            Some(Attributes::WorkflowTaskStartedEventAttributes(a)) => Some(a.identity.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_twenty_activities_and_another_worker_takes_the_rest() {
    // Every reply takes 2 s: a long summary's seven calls outlast the graceful period.
    let model = FakeOpenAi::with_default(None, |r| {
        FakeOpenAi::describe(r).delayed(Duration::from_secs(2))
    })
    .await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let store = format!("file://{}", dir.path().display());
    let task_queue = unique("drain");
    let model_url = format!("{}/v1", model.base());
    let grace = GRACE_SECS.to_string();
    let flags = [
        "--model-url",
        &model_url,
        "--model",
        "m",
        // A 1,000-character chunk budget (a quarter of a small window is kept for the prompt
        // and the summary: (444 - 111) tokens * 3 chars): a 5,000-character output takes six
        // chunks and a summary of their summaries.
        "--model-context-tokens",
        "444",
        "--graceful-shutdown-secs",
        &grace,
    ];
    let client = connect().await;
    let mut a = WorkerProcess::spawn(&task_queue, &store, &flags);
    model.close();
    let mut handles = Vec::new();
    for i in 0..SHORT + LONG {
        let lines = if i < SHORT { 10 } else { 100 };
        let text: String = std::iter::once(format!("item {i:02}\n"))
            .chain((0..lines).map(|j| format!("line {j:03} of a tool output, {:>20}\n", j * i)))
            .collect();
        let request = serde_json::from_value(json!({
            "tool_name": "cat", "tool_call_id": format!("c{i}"), "output": {"text": text},
            "config": {"bands": [{"over": 100, "action": {"type": "summarize",
                "then": {"type": "truncate", "max_chars": 50}}}]},
        }))
        .unwrap_or_else(|e| panic!("request: {e}"));
        let id = unique(&format!("drain-{i:02}"));
        handles.push(
            start(
                &client,
                ReduceToolOutput::run,
                request,
                &task_queue,
                &id,
                Duration::from_secs(300),
            )
            .await,
        );
    }
    // All 20 summaries are in flight on worker A (each waiting for its first model reply).
    let started = Instant::now();
    while model.held() < SHORT + LONG {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "only {} of 20 summaries started",
            model.held()
        );
        a.assert_running();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    a.terminate();
    model.open();
    // Started after the SIGTERM: a draining worker must not take it.
    let late_id = unique("drain-late");
    let late_request = serde_json::from_value(json!({
        "tool_name": "cat", "output": {"text": "y".repeat(2_000)},
        "config": {"bands": [{"over": 100, "action": {"type": "spill"}}]},
    }))
    .unwrap_or_else(|e| panic!("request: {e}"));
    let late = start(
        &client,
        ReduceToolOutput::run,
        late_request,
        &task_queue,
        &late_id,
        Duration::from_secs(300),
    )
    .await;
    let status = a.exited(Duration::from_secs(GRACE_SECS + 60)).await;
    assert!(status.success(), "worker A after SIGTERM: {status}");
    let b = WorkerProcess::spawn(&task_queue, &store, &flags);

    let late_out = late
        .get_result(WorkflowGetResultOptions::default())
        .await
        .unwrap_or_else(|e| panic!("the late workflow: {e:?}"));
    assert_eq!(late_out.kind, ReductionKind::Spilled);
    let late_tasks = workflow_task_identities(&history(&late).await);
    assert!(
        !late_tasks.is_empty()
            && late_tasks
                .iter()
                .all(|t| t.starts_with(&b.identity_prefix())),
        "the late workflow's tasks ran on {late_tasks:?}, not only on B"
    );

    for (i, handle) in handles.iter().enumerate() {
        let out = handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .unwrap_or_else(|e| panic!("workflow {i}: {e:?}"));
        assert_eq!(out.kind, ReductionKind::Summarized, "workflow {i}: {out:?}");
        let attempts = activity_attempts(&history(handle).await);
        let [(identity, attempt, last_failure)] = attempts.as_slice() else {
            panic!("workflow {i}: one activity expected, got {attempts:?}");
        };
        if i < SHORT {
            // Finished within the graceful period, on the worker that was told to stop.
            assert!(
                identity.starts_with(&a.identity_prefix()) && *attempt == 1,
                "short summary {i} ran as attempt {attempt} on {identity}"
            );
        } else {
            // Cancelled at the end of the graceful period, failed retryably, and retried on B.
            assert!(
                identity.starts_with(&b.identity_prefix()) && *attempt >= 2,
                "long summary {i} ran as attempt {attempt} on {identity}"
            );
            assert!(
                last_failure.contains("Worker is shutting down"),
                "long summary {i}'s earlier attempt: {last_failure:?}"
            );
        }
    }
    // B resumed the long summaries from A's last heartbeat: no first chunk was summarized twice.
    let prompts: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.prompt().to_owned())
        .collect();
    for i in SHORT..SHORT + LONG {
        let marker = format!("item {i:02}\n");
        let first_chunks = prompts.iter().filter(|p| p.contains(&marker)).count();
        assert_eq!(
            first_chunks, 1,
            "summary {i}'s first chunk was asked for again"
        );
    }
}
