//! The pure reduction engine: configuration, measuring and token counting, band selection,
//! truncation, spill previews, serializers and ANSI stripping.
//!
//! No I/O and no Temporal: a Spill reaches storage only through [`SpillStore`] and a Summarize
//! reaches a model only through [`Summarizer`], so the engine is deterministic and runs in
//! workflow code as well as in activities. Model-visible text matches pydantic-ai-harness 0.62's
//! ToolOutputLimits byte for byte, except for the documented quirk fixes.

pub mod ansi;
pub mod bands;
mod config;
mod effects;
pub mod measure;
mod output;
pub mod preview;
pub mod prompt;
pub mod pyfmt;
mod reduce;
pub mod serialize;
pub mod tokens;
pub mod truncate;
pub mod unit;

pub use config::{
    Action, Band, ConfigError, DEFAULT_MAX_CHARS, DEFAULT_PREVIEW_CHARS, DEFAULT_READ_TOOL_NAME,
    DEFAULT_THRESHOLD, Limits, SerializerKind, Spill, Summarize, ToolFilter, Truncate,
    TruncationStrategy,
};
pub use effects::{
    MemoryStore, NoStore, NoSummarizer, SpillStore, StoreError, SummarizeError, Summarizer,
    Summary, SummaryRequest, Usage,
};
pub use output::{ByteString, Envelope, ToolCall, ToolOutput, ToolResult};
pub use prompt::DEFAULT_SUMMARY_PROMPT;
pub use reduce::{CONTENT_SUFFIX, EXEMPT_TOOL_KINDS, Reduced, ReductionKind, reduce};
pub use tokens::Tokenizer;
pub use unit::Unit;
