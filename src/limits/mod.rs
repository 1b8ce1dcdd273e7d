//! The pure reduction engine: no I/O and no Temporal (a Spill reaches storage only through
//! [`SpillStore`], a Summarize a model only through [`Summarizer`]), so it is deterministic and
//! runs in workflow code as in activities. Model-visible text matches pydantic-ai-harness's
//! ToolOutputLimits byte for byte, in the release the limits name ([`Harness`]: 0.62 or 0.75),
//! except for the documented quirk fixes.
//!
//! The modules read bottom-up: the leaves [`text`], [`ansi`], [`serialize`], [`pyfmt`],
//! [`tokens`] and [`prompt`]; [`Limits`]; a [`Unit`] of output; [`bands`] picks its action,
//! [`truncate`] and [`preview`] render it, and [`reduce`] runs the pipeline.

pub mod ansi;
pub mod bands;
mod config;
pub mod harness;
mod output;
pub mod preview;
pub mod prompt;
pub mod pyfmt;
mod reduce;
pub mod serialize;
mod spill_store;
mod summarizer;
pub mod text;
pub mod tokens;
pub mod truncate;
pub mod unit;

pub use config::{
    Action, Band, ConfigError, DEFAULT_MAX_CHARS, DEFAULT_PREVIEW_CHARS, DEFAULT_READ_TOOL_NAME,
    DEFAULT_THRESHOLD, Limits, Spill, Summarize, ToolFilter, Truncate, TruncationStrategy,
};
pub use harness::{Harness, Pages, UnknownHarness};
pub use output::{ByteString, Envelope, ToolCall, ToolOutput, ToolResult};
pub use prompt::DEFAULT_SUMMARY_PROMPT;
pub(crate) use reduce::CONTENT_SUFFIX;
pub use reduce::{Reduced, ReductionKind, reduce};
pub use serialize::SerializerKind;
pub use spill_store::{MemoryStore, NoStore, NoStoreConfigured, SpillError, SpillStore};
pub use summarizer::{
    Deferred, NoSummarizer, SummarizeError, Summarizer, Summary, SummaryRequest, Usage,
};
pub use tokens::Tokenizer;
pub use unit::Unit;
