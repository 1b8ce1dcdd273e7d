//! Replay of histories recorded from real runs (committed under `tests/histories/`) with the
//! SDK's replayer: the current workflow code must replay them, a deliberately changed workflow
//! must not. No server needed; the ignored `record_histories` re-records them against one.

use std::path::PathBuf;

use overspill::api::{ReduceRequest, ReduceResponse};
use overspill_cli::example::{AgentLoop, AgentLoopInput};
use overspill_workflows::ReduceToolOutput;
use serde_json::json;
use temporalio_client::WorkflowHistory;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::workflow_replayer::{
    WorkflowReplayError, WorkflowReplayFailure, WorkflowReplayer, WorkflowReplayerOptions,
};
use temporalio_sdk::{WorkflowContext, WorkflowResult};

use crate::support::temporal::{TestWorker, unique};

fn histories_dir() -> PathBuf {
    crate::root().join("tests/histories")
}

fn spill_request() -> ReduceRequest {
    let text: String = (0..400).map(|i| format!("row {i:04}: ok\n")).collect();
    serde_json::from_value(json!({
        "tool_name": "cat", "run_id": "run-replay", "tool_call_id": "call-1",
        "output": {"text": text},
        "config": {"bands": [{"over": 1000, "action": {"type": "spill", "preview_chars": 200,
                                                        "then": {"type": "truncate"}}}]}
    }))
    .unwrap_or_else(|e| panic!("request: {e}"))
}

fn truncate_request() -> ReduceRequest {
    let text: String = (0..400).map(|i| format!("row {i:04}: ok\n")).collect();
    serde_json::from_value(json!({
        "tool_name": "cat", "run_id": "run-replay", "tool_call_id": "call-2",
        "output": {"text": text},
        "config": {"bands": [{"over": 1000, "action": {"type": "truncate", "max_chars": 300}}]}
    }))
    .unwrap_or_else(|e| panic!("request: {e}"))
}

/// Re-record the committed histories: `cargo test --test integration record_histories --
/// --ignored` (needs a server). Not a check, so it never runs by default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "re-records tests/histories; run by hand"]
async fn record_histories() {
    let w = TestWorker::start("record").await;
    let dir = histories_dir();
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir: {e}"));
    let runs: Vec<(&str, String)> = vec![
        ("reduce_tool_output_spill", unique("replay-spill")),
        ("reduce_tool_output_truncate", unique("replay-truncate")),
        ("agent_loop", unique("replay-agent")),
    ];
    w.run(ReduceToolOutput::run, spill_request(), &runs[0].1)
        .await
        .unwrap_or_else(|e| panic!("spill run: {e}"));
    w.run(ReduceToolOutput::run, truncate_request(), &runs[1].1)
        .await
        .unwrap_or_else(|e| panic!("truncate run: {e}"));
    w.run(
        AgentLoop::run,
        AgentLoopInput {
            log_lines: 20_000,
            file_lines: 400,
            config: None,
        },
        &runs[2].1,
    )
    .await
    .unwrap_or_else(|e| panic!("agent run: {e}"));
    for (name, id) in runs {
        let json = w
            .client
            .get_workflow_handle::<ReduceToolOutput>(id)
            .fetch_history(Default::default())
            .to_json()
            .await
            .unwrap_or_else(|e| panic!("history: {e}"));
        std::fs::write(dir.join(format!("{name}.json")), json)
            .unwrap_or_else(|e| panic!("write: {e}"));
    }
}

fn committed(name: &str) -> WorkflowHistory {
    let path = histories_dir().join(format!("{name}.json"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    WorkflowHistory::from_json(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The current workflows replay every committed history.
#[tokio::test]
async fn committed_histories_replay() {
    let replayer = WorkflowReplayer::new(
        WorkflowReplayerOptions::new()
            .register_workflow::<ReduceToolOutput>()
            .and_then(|o| o.register_workflow::<AgentLoop>())
            .unwrap_or_else(|e| panic!("register: {e}"))
            .build(),
    )
    .unwrap_or_else(|e| panic!("replayer: {e}"));
    for name in [
        "reduce_tool_output_spill",
        "reduce_tool_output_truncate",
        "agent_loop",
    ] {
        replayer
            .replay_workflow(committed(name))
            .await
            .unwrap_or_else(|e| panic!("{name} does not replay: {e}"));
    }
}

/// `ReduceToolOutput` as someone might "simplify" it: truncate in workflow code instead of
/// spilling through the activity. Same workflow type, different commands.
#[workflow]
#[derive(Default)]
pub(crate) struct ChangedReduceToolOutput;

#[workflow_methods]
impl ChangedReduceToolOutput {
    #[run(name = "ReduceToolOutput")]
    pub(crate) async fn run(
        _ctx: &mut WorkflowContext<Self>,
        request: ReduceRequest,
    ) -> WorkflowResult<ReduceResponse> {
        let limits = overspill::limits::Limits::default();
        let call = request.call(None);
        let reduced = overspill::limits::reduce(
            &limits,
            &call,
            request.into_result(),
            &overspill::limits::NoStore,
            &overspill::limits::NoSummarizer,
        )
        .await;
        Ok(reduced)
    }
}

/// A changed workflow fails replay of a recorded history with a nondeterminism error.
#[tokio::test]
async fn changed_workflow_fails_replay() {
    let replayer = WorkflowReplayer::new(
        WorkflowReplayerOptions::new()
            .register_workflow::<ChangedReduceToolOutput>()
            .unwrap_or_else(|e| panic!("register: {e}"))
            .build(),
    )
    .unwrap_or_else(|e| panic!("replayer: {e}"));
    match replayer
        .replay_workflow(committed("reduce_tool_output_spill"))
        .await
    {
        Err(WorkflowReplayError::Replay(WorkflowReplayFailure::Nondeterminism { message })) => {
            assert!(message.contains("TMPRL1100"), "{message}");
        }
        other => panic!("expected a nondeterminism error, got {other:?}"),
    }
}
