//! The worker benchmark (ignored by default; needs the dev server):
//! `cargo test --test integration bench -- --ignored --nocapture`.
//!
//! 1. Latency: `tool_output_limits.reduce` of 1 KB / 100 KB / 1 MB outputs against a no-op
//!    activity given the same input, on the same server and worker, in one run. Latency is the
//!    server's own clock: ActivityTaskScheduled → ActivityTaskCompleted in the history, median.
//! 2. Throughput: 100 concurrent workflows of 5 `reduce` calls each; activities per second.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use temporalio_common::UntypedActivity;
use temporalio_common::data_converters::RawValue;
use temporalio_common::protos::temporal::api::common::v1::Payload;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{ActivityOptions, WorkflowContext, WorkflowResult};

use crate::support::temporal::{TestWorker, unique};

/// The no-op baseline.
pub(crate) struct Noop;

#[activities]
impl Noop {
    #[activity(name = "overspill.bench.noop")]
    pub(crate) async fn noop(
        _ctx: ActivityContext,
        _input: RawValue,
    ) -> Result<String, ActivityError> {
        Ok("ok".into())
    }
}

/// `calls` sequential calls of one activity with one JSON input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Calls {
    activity: String,
    input: Value,
    calls: u32,
}

#[workflow]
#[derive(Default)]
pub(crate) struct BenchWorkflow;

#[workflow_methods]
impl BenchWorkflow {
    #[run(name = "OverspillBench")]
    pub(crate) async fn run(ctx: &mut WorkflowContext<Self>, calls: Calls) -> WorkflowResult<u32> {
        let data = serde_json::to_vec(&calls.input).unwrap_or_default();
        for _ in 0..calls.calls {
            let payload = Payload {
                metadata: [("encoding".to_owned(), b"json/plain".to_vec())].into(),
                data: data.clone(),
                external_payloads: vec![],
            };
            ctx.execute_activity(
                UntypedActivity::new(calls.activity.clone()),
                RawValue::new(vec![payload]),
                ActivityOptions::start_to_close_timeout(Duration::from_secs(30)),
            )
            .await?;
        }
        Ok(calls.calls)
    }
}

fn millis(e: &temporalio_common::protos::temporal::api::history::v1::HistoryEvent) -> f64 {
    e.event_time
        .as_ref()
        .map(|t| t.seconds as f64 * 1e3 + f64::from(t.nanos) / 1e6)
        .unwrap_or(0.0)
}

/// Median scheduled → completed latency (ms) of the activities in `id`'s history.
async fn median_latency(w: &TestWorker, id: &str) -> f64 {
    let events = w
        .client
        .get_workflow_handle::<BenchWorkflow>(id.to_owned())
        .fetch_history(Default::default())
        .into_events()
        .await
        .unwrap_or_else(|e| panic!("history: {e}"));
    let scheduled: std::collections::HashMap<i64, f64> = events
        .iter()
        .filter(|e| {
            matches!(
                e.attributes,
                Some(Attributes::ActivityTaskScheduledEventAttributes(_))
            )
        })
        .map(|e| (e.event_id, millis(e)))
        .collect();
    let mut latencies: Vec<f64> = events
        .iter()
        .filter_map(|e| match &e.attributes {
            Some(Attributes::ActivityTaskCompletedEventAttributes(a)) => {
                Some(millis(e) - scheduled.get(&a.scheduled_event_id)?)
            }
            _ => None,
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    latencies
        .get(latencies.len() / 2)
        .copied()
        .unwrap_or(f64::NAN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn bench_worker_latency_and_throughput() {
    let w = TestWorker::start_with("bench", |o| {
        o.register_activities(Noop);
        let _ = o.register_workflow::<BenchWorkflow>();
    })
    .await;
    println!("\n| output | no-op median (ms) | reduce median (ms) | ratio |");
    println!("|---|---|---|---|");
    for (label, bytes, calls) in [
        ("1 KB", 1_000, 40),
        ("100 KB", 100_000, 40),
        ("1 MB", 1_000_000, 8),
    ] {
        let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
        let text = line.repeat(bytes / line.len());
        let input =
            json!({"tool_name": "cat", "tool_call_id": unique("call"), "output": {"text": text}});
        let mut medians = Vec::new();
        for activity in [Noop::noop.name(), "tool_output_limits.reduce"] {
            let id = unique("bench");
            let calls = Calls {
                activity: activity.into(),
                input: input.clone(),
                calls,
            };
            w.run(BenchWorkflow::run, calls, &id)
                .await
                .unwrap_or_else(|e| panic!("bench run: {e}"));
            medians.push(median_latency(&w, &id).await);
        }
        println!(
            "| {label} | {:.1} | {:.1} | {:.2}× |",
            medians[0],
            medians[1],
            medians[1] / medians[0]
        );
    }

    let workflows = 100;
    let per = 5;
    let started = Instant::now();
    let runs = (0..workflows).map(|i| {
        let calls = Calls {
            activity: "tool_output_limits.reduce".into(),
            input: json!({"tool_name": "cat", "tool_call_id": format!("c{i}"), "output": {"text": "x".repeat(1_000)}}),
            calls: per,
        };
        let id = unique(&format!("tput-{i}"));
        let w = &w;
        async move { w.run(BenchWorkflow::run, calls, &id).await }
    });
    let results = futures::future::join_all(runs).await;
    let elapsed = started.elapsed();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    println!(
        "\n{workflows} concurrent workflows × {per} reduce calls: {:.1} s, {:.0} activities/s",
        elapsed.as_secs_f64(),
        f64::from(workflows * per) / elapsed.as_secs_f64()
    );
}
