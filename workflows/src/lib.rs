//! Rust workflows that reduce tool outputs through Overspill's activities.
//!
//! - [`ReduceToolOutput`] (workflow type `ReduceToolOutput`): band selection and truncation run in
//!   workflow code; spills and summaries are `tool_output_limits.spill` / `.summarize` activities.
//!   Input and output are the reduce activity's JSON, so any language can start it as a child.
//! - [`Overspill`] and [`activity_options`]: how workflow code calls the activities.

mod calls;
mod reduce_tool_output;

pub use calls::{Overspill, activity_options};
pub use reduce_tool_output::ReduceToolOutput;

use overspill::worker::WorkerError;
use temporalio_sdk::WorkerOptions;

/// Register the production workflow, [`ReduceToolOutput`], on a worker.
pub fn register(options: &mut WorkerOptions) -> Result<(), WorkerError> {
    options
        .register_workflow::<ReduceToolOutput>()
        .map_err(WorkerError::setup)?;
    Ok(())
}
