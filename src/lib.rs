//! Overspill keeps AI agents' oversized tool outputs out of their context windows, durably.
//!
//! - [`limits`]: the pure reduction engine (truncate, spill, summarize by size bands).
//! - [`read`]: the bounded `read_tool_result` read-back.
//! - [`query`]: `query_tool_result`, jq filters over spilled JSON.
//! - [`api`]: the request and response forms shared by the CLI and the activities.
//! - [`external_storage`]: Temporal External Storage (payloads of any size through a bucket).
//! - [`names`]: the activities' names and the default task queue.

pub mod activities;
pub mod api;
mod diagnose;
pub mod external_storage;
pub mod limits;
pub mod names;
pub mod probes;
pub mod query;
pub mod read;
mod redact;
pub mod store;
pub mod summarize;
#[cfg(test)]
mod test_logs;
pub mod worker;
#[path = "../workflows/src/workflows.rs"]
pub mod workflows;
