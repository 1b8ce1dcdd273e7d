//! Rust workflows that reduce tool outputs through Overspill's activities.
//!
//! - [`ReduceToolOutput`] (workflow type `ReduceToolOutput`): band selection and truncation run in
//!   workflow code; spills and summaries are `tool_output_limits.spill` / `.summarize` activities.
//!   Input and output are the reduce activity's JSON, so any language can start it as a child.
//! - [`AgentLoop`] (workflow type `OverspillAgentLoop`): a scripted model issuing tool calls whose
//!   outputs pass through Overspill; its `generate_logs` tool activity reduces its own output
//!   before returning, so nothing oversized enters history.
//!
//! The sources live in `workflows/src/` and are compiled into the `overspill` library (a crate
//! that depends on `overspill` cannot also be a dependency of the `overspill` binary, which
//! registers these workflows); the `overspill-workflows` crate re-exports them.

mod agent_loop;
mod calls;
mod reduce_tool_output;
mod tools;

pub use agent_loop::{AgentLoop, AgentLoopInput, AgentLoopOutput, Turn};
pub use calls::{Overspill, activity_options};
pub use reduce_tool_output::ReduceToolOutput;
pub use tools::{ExampleTools, ToolRequest, build_log};

use temporalio_sdk::WorkerOptions;

use crate::activities::OverspillActivities;
use crate::worker::WorkerError;

/// Register the production workflow, [`ReduceToolOutput`], on a worker.
pub fn register(options: &mut WorkerOptions) -> Result<(), WorkerError> {
    options
        .register_workflow::<ReduceToolOutput>()
        .map_err(WorkerError::setup)?;
    Ok(())
}

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
