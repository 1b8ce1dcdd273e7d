//! Summarize through an OpenAI-compatible chat-completions endpoint: [`OpenAiSummarizer`] makes
//! one call, [`Chunked`] splits outputs over the model's context (resumably, with
//! [`ChunkProgress`]). The prompt is rendered and the summary stripped by the engine or the
//! summarize activity; this module only talks to the model.

mod chunk;
mod client;
mod wire;

pub use chunk::{ChunkBudget, ChunkProgress, Chunked, chunk_lines, summarize_chunked};
pub use client::{MAX_REPLY_BYTES, OpenAiSummarizer};
pub use wire::{MAX_SUMMARY_BYTES, SYSTEM_PROMPT};
