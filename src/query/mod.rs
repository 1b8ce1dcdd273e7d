//! `query_tool_result(handle, filter, offset, limit)`: a jq filter over a spill of JSON, with
//! the jq language of the `jaq` crates, its results one compact JSON value per line, paged by
//! result like `grep_tool_result`'s matches.
//!
//! - The spill is read as JSON Lines first: each line one JSON value, filtered as it streams
//!   in, in memory that does not grow with the spill. If a line is not one JSON value and the
//!   spill is at most [`MAX_DOCUMENT_BYTES`], it is parsed whole instead, as the sequence of
//!   JSON values it holds (one document, pretty-printed or not). A larger spill that is not
//!   JSON Lines, and a spill that is not JSON, get a message naming the bad line.
//! - `offset` / `limit` page through the results (`limit` 50 by default, clamped to 1,000); the
//!   header counts every result; a result longer than [`MAX_VALUE_CHARS`] is cut with a marker;
//!   the body stops before the result that would take it past 50,000 chars.
//! - A filter jaq refuses is a ModelRetry-style [`ReadError`] saying what and at which char;
//!   a filter that runs past [`QUERY_DEADLINE`] (or recurses too deep) is stopped with a
//!   message. An error raised on an input value ends that value's results, as in jq, and a note
//!   gives the first (at most [`MAX_VALUE_CHARS`] of its message).
//! - Where it runs is the caller's [`QueryRunner`]: the worker and `overspill query` run each
//!   query in a child process bounded in memory ([`DEFAULT_QUERY_MEMORY`] unless configured;
//!   see [`sandbox`](SANDBOX_COMMAND)), and a filter that needs more is stopped with a message
//!   naming the bound.
//!
//! ```text
//! [handle 'r/c.0': 3 result(s) of filter '.id' over 3 JSON value(s); showing results 1-2]
//! 1
//! 2
//! [1 more result(s): call query_tool_result again with offset=2]
//! ```

mod engine;
mod render;
mod sandbox;
#[cfg(test)]
mod tests;

use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::limits::pyfmt::thousands;
use crate::read::{
    MAX_READ_LINES, Part, ReadError, ReadOutcomeError, SpillReader, Version, fetch_checked,
};
use crate::store::StoreError;
use engine::{Ended, Job, Mode, Runaway};
pub use render::MAX_VALUE_CHARS;
pub use sandbox::{
    DEFAULT_QUERY_MEMORY, QueryPlace, QueryRunner, SANDBOX_COMMAND, SandboxError, serve_sandbox,
};

/// Results per page when the caller does not say.
pub const DEFAULT_QUERY_LIMIT: i64 = 50;
/// The largest spill parsed whole as one JSON document (and the longest JSON Lines line).
pub const MAX_DOCUMENT_BYTES: u64 = 64 << 20;
/// How long one query may run unless its [`QueryRunner`] says otherwise.
pub const QUERY_DEADLINE: Duration = Duration::from_secs(30);
/// The longest filter accepted, in bytes.
const MAX_FILTER_BYTES: usize = 4_096;

/// One `query_tool_result` call (also `overspill query`'s arguments).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct QueryRequest {
    /// The handle from a spill marker.
    pub handle: String,
    /// The jq filter run on each JSON value of the spill.
    pub filter: String,
    /// Results to skip.
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value_t = 0, allow_negative_numbers = true)
    )]
    pub offset: i64,
    /// Results to show (clamped to 1,000).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = DEFAULT_QUERY_LIMIT, allow_negative_numbers = true))]
    pub limit: i64,
}

impl Default for QueryRequest {
    fn default() -> Self {
        Self {
            handle: String::new(),
            filter: String::new(),
            offset: 0,
            limit: DEFAULT_QUERY_LIMIT,
        }
    }
}

/// The caps a query runs under (tests shorten them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    pub(crate) deadline: Duration,
    pub(crate) document_bytes: u64,
}

const CAPS: Caps = Caps {
    deadline: QUERY_DEADLINE,
    document_bytes: MAX_DOCUMENT_BYTES,
};

impl QueryRequest {
    /// Check the arguments before any read (the filter is compiled on the query's thread, whose
    /// stack a deeply nested filter cannot overflow).
    fn check(&self, caps: Caps) -> Result<Job, ReadError> {
        let retry = |message: &str| Err(ReadError::BadArgument(message.to_owned()));
        if self.offset < 0 {
            return retry("`offset` must be >= 0.");
        }
        if self.limit < 1 {
            return retry("`limit` must be >= 1.");
        }
        if self.filter.trim().is_empty() {
            return retry("`filter` must not be empty: use `.` for every value as it is.");
        }
        if self.filter.len() > MAX_FILTER_BYTES {
            return Err(ReadError::BadArgument(format!(
                "`filter` is {} bytes long; at most {MAX_FILTER_BYTES} are accepted.",
                self.filter.len()
            )));
        }
        Ok(Job {
            code: self.filter.clone(),
            offset: self.offset as u64,
            limit: self.limit.min(MAX_READ_LINES) as u64,
            deadline: caps.deadline,
            max_bytes: caps.document_bytes,
            mode: Mode::Lines,
        })
    }
}

/// Serve one `query_tool_result` call from `reader`, in this process for [`QUERY_DEADLINE`]
/// ([`QueryPlace::InProcess`]: bounded in time, not in memory).
///
/// An unknown or refused handle is [`ReadOutcomeError::NoStoredResult`]; other store failures
/// are [`ReadOutcomeError::Store`], for an activity to retry.
pub async fn query_tool_result<R: SpillReader>(
    reader: &R,
    request: &QueryRequest,
) -> Result<String, ReadOutcomeError> {
    query_tool_result_with(reader, request, &QueryRunner::default()).await
}

/// [`query_tool_result`], run as `runner` says: a sandboxed query that needs more memory than its
/// bound is a ModelRetry naming the bound; a sandbox that gives no answer is
/// [`ReadOutcomeError::Sandbox`].
pub async fn query_tool_result_with<R: SpillReader>(
    reader: &R,
    request: &QueryRequest,
    runner: &QueryRunner,
) -> Result<String, ReadOutcomeError> {
    let caps = Caps {
        deadline: runner.deadline,
        ..CAPS
    };
    query_with(reader, request, caps, runner).await
}

pub(crate) async fn query_with<R: SpillReader>(
    reader: &R,
    request: &QueryRequest,
    caps: Caps,
    runner: &QueryRunner,
) -> Result<String, ReadOutcomeError> {
    let mut job = request.check(caps)?;
    let handle = &request.handle;
    let version = match reader.head(handle).await {
        Err(e) if e.is_unknown_handle() => {
            return Err(ReadOutcomeError::NoStoredResult(handle.clone()));
        }
        version => version.map_err(ReadOutcomeError::Store)?,
    };
    let mut ended = run(reader, handle, &version, job.clone(), runner).await?;
    if let Ended::NotLines { .. } = ended
        && version.size <= caps.document_bytes
    {
        job.mode = Mode::Document;
        ended = run(reader, handle, &version, job, runner).await?;
    }
    let page = match ended {
        Ended::Done(page) => page,
        Ended::NotLines { line, error, text } if version.size <= caps.document_bytes => {
            return Err(retry(format!(
                "The spill is not JSON: line {line} is not valid JSON ({error}): {text}\n\
                 query_tool_result reads JSON documents and JSON Lines; use grep_tool_result or \
                 read_tool_result on this spill."
            )));
        }
        Ended::NotLines { line, error, text } => {
            return Err(retry(format!(
                "The spill ({} bytes) is not JSON Lines: line {line} is not one JSON value \
                 ({error}): {text}\nOnly a JSON document of at most {} MiB is parsed whole; a \
                 larger one must be spilled as JSON Lines (the `json_lines` serializer) to be \
                 queried. Use grep_tool_result or read_tool_result on this spill.",
                thousands(version.size),
                caps.document_bytes >> 20,
            )));
        }
        Ended::TooLong { line } => {
            return Err(retry(format!(
                "Line {line} of the spill is longer than the {} MiB one JSON value may be: use \
                 grep_tool_result or read_tool_result on this spill.",
                caps.document_bytes >> 20
            )));
        }
        Ended::Runaway(Runaway::Memory) => {
            return Err(retry(sandbox::memory_message(runner.memory())));
        }
        Ended::Runaway(why) => {
            let why = match why {
                Runaway::Time => format!("ran longer than {} s", caps.deadline.as_secs_f64()),
                Runaway::Depth | Runaway::Memory => "recursed too deep".to_owned(),
            };
            return Err(retry(format!(
                "The filter {why} and was stopped. Make it finite: bound generators with \
                 `limit(n; f)` or `first(f)`, and avoid `repeat`, `recurse` and `range` over \
                 huge counts."
            )));
        }
    };
    Ok(page.render(handle, &request.filter))
}

fn retry(message: String) -> ReadOutcomeError {
    ReadOutcomeError::Retry(ReadError::BadArgument(message))
}

/// One run of the engine over the payload, which is read in chunks as the engine takes them:
/// on a thread here, or in a child process.
async fn run<R: SpillReader>(
    reader: &R,
    handle: &str,
    version: &Version,
    job: Job,
    runner: &QueryRunner,
) -> Result<Ended, ReadOutcomeError> {
    let QueryPlace::Sandboxed { exe, memory } = &runner.place else {
        return run_here(reader, handle, version, job).await;
    };
    sandbox::run(reader, handle, version, job, exe, *memory).await
}

/// One run of the engine on a thread of this process.
async fn run_here<R: SpillReader>(
    reader: &R,
    handle: &str,
    version: &Version,
    job: Job,
) -> Result<Ended, ReadOutcomeError> {
    let (tx, rx) = mpsc::channel(1);
    let answer = engine::spawn(job, rx)
        .map_err(|e| ReadOutcomeError::Store(StoreError::Backend(Box::new(e))))?;
    // The closure owns `tx`: the channel closes when the feed ends, and the engine finishes.
    let fed = feed(reader, handle, version, async move |bytes| {
        tx.send(bytes).await.is_ok()
    })
    .await;
    let answer = answer
        .await
        .map_err(|e| ReadOutcomeError::Store(StoreError::Backend(Box::new(e))))?;
    fed?;
    Ok(answer?)
}

/// Hand the payload to `take` in chunks of [`SpillReader::chunk_bytes`], each read checked
/// against `version`; stops early when `take` answers `false` (the engine stopped taking them).
async fn feed<R: SpillReader>(
    reader: &R,
    handle: &str,
    version: &Version,
    mut take: impl AsyncFnMut(Bytes) -> bool,
) -> Result<(), ReadOutcomeError> {
    let step = reader.chunk_bytes().max(1) as u64;
    let mut at = 0;
    while at < version.size {
        let end = version.size.min(at + step);
        let bytes = fetch_checked(reader, handle, Part::Payload, version, at..end).await?;
        if !take(bytes).await {
            break;
        }
        at = end;
    }
    Ok(())
}
