//! The demo agent: [`AgentLoop`] (workflow type `OverspillAgentLoop`), a scripted model issuing
//! tool calls whose outputs pass through Overspill, and its tool activities ([`ExampleTools`]);
//! `generate_logs` reduces its own output before returning, so nothing oversized enters history.

mod agent_loop;
mod tools;

pub use agent_loop::{AgentLoop, AgentLoopInput, AgentLoopOutput, Turn};
pub use tools::{ExampleTools, ToolRequest, build_log};

use overspill::activities::OverspillActivities;
use overspill::worker::WorkerError;
use temporalio_sdk::WorkerOptions;

/// Register the example: the [`AgentLoop`] workflow and its tool activities ([`ExampleTools`]),
/// which reduce through `overspill`. `overspill dev` serves them, and `overspill worker` only
/// with `--example-tools`.
pub fn register_examples(
    options: &mut WorkerOptions,
    overspill: OverspillActivities,
) -> Result<(), WorkerError> {
    options
        .register_workflow::<AgentLoop>()
        .map_err(WorkerError::setup)?;
    options.register_activities(ExampleTools::new(overspill));
    Ok(())
}
