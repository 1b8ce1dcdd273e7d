//! `OverspillAgentLoop`: a scripted model whose tool calls pass through Overspill.
// The workflow macros add an undocumented associated constant.
#![allow(missing_docs)]

use serde::{Deserialize, Serialize};
use serde_json::Value;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{WorkflowContext, WorkflowResult};

use overspill::api::{ReduceRequest, ReduceResponse};
use overspill::limits::{ToolCall, ToolOutput};
use overspill::read::ReadRequest;
use overspill_workflows::{Overspill, activity_options};

use super::tools::{ExampleTools, ToolRequest};

/// The agent's task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentLoopInput {
    /// Lines the `generate_logs` tool produces (55 bytes each; 50,000 ≈ 2.8 MB).
    pub log_lines: u64,
    /// Lines the `list_files` tool produces.
    pub file_lines: u64,
    /// Limits for both tools (default: the worker's).
    pub config: Option<Value>,
}

/// One tool call as the model saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// The tool the model called.
    pub tool_name: String,
    /// The model's tool call id.
    pub tool_call_id: String,
    /// What the model saw.
    pub model_visible: String,
    /// The spill handle, if the output spilled.
    pub handle: Option<String>,
}

/// The conversation's tool turns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentLoopOutput {
    /// The turns, in order.
    pub turns: Vec<Turn>,
}

/// The scripted agent: `generate_logs` (self-reducing tool activity), then a `read_tool_result`
/// page of its errors, then `list_files` reduced by the `tool_output_limits.reduce` activity.
#[workflow]
#[derive(Default)]
pub struct AgentLoop;

fn turn(tool_name: &str, tool_call_id: &str, response: &ReduceResponse) -> Turn {
    let model_visible = match &response.return_value {
        ToolOutput::Text(text) => text.to_string(),
        other => serde_json::to_string(other).unwrap_or_default(),
    };
    Turn {
        tool_name: tool_name.into(),
        tool_call_id: tool_call_id.into(),
        model_visible,
        handle: response.overflow_handle().map(str::to_owned),
    }
}

#[workflow_methods]
impl AgentLoop {
    /// Run the script.
    #[run(name = "OverspillAgentLoop")]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: AgentLoopInput,
    ) -> WorkflowResult<AgentLoopOutput> {
        let run_id = ctx.workflow_id().to_owned();
        let mut turns = Vec::new();

        let logs = ctx
            .execute_activity(
                ExampleTools::generate_logs,
                ToolRequest {
                    run_id: Some(run_id.clone()),
                    tool_call_id: Some("call-1".into()),
                    retry: 0,
                    lines: input.log_lines,
                    config: input.config.clone(),
                },
                activity_options(),
            )
            .await?;
        let logs_turn = turn("generate_logs", "call-1", &logs);
        let handle = logs_turn.handle.clone();
        turns.push(logs_turn);

        if let Some(handle) = handle {
            let page = ctx
                .execute_activity(
                    Overspill::read_tool_result,
                    ReadRequest {
                        handle,
                        limit: 5,
                        pattern: Some("ERROR".into()),
                        ..ReadRequest::default()
                    },
                    activity_options(),
                )
                .await?;
            turns.push(Turn {
                tool_name: "read_tool_result".into(),
                tool_call_id: "call-2".into(),
                model_visible: page,
                handle: None,
            });
        }

        let listing = ctx
            .execute_activity(
                ExampleTools::list_files,
                ToolRequest {
                    lines: input.file_lines,
                    ..ToolRequest::default()
                },
                activity_options(),
            )
            .await?;
        let reduced = ctx
            .execute_activity(
                Overspill::reduce,
                ReduceRequest {
                    config: input.config,
                    ..ReduceRequest::new(
                        ToolCall {
                            tool_name: "list_files".into(),
                            run_id: Some(run_id),
                            tool_call_id: Some("call-3".into()),
                            ..ToolCall::default()
                        },
                        ToolOutput::Text(listing.into()),
                    )
                },
                activity_options(),
            )
            .await?;
        turns.push(turn("list_files", "call-3", &reduced));
        Ok(AgentLoopOutput { turns })
    }
}
