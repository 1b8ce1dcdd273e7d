//! A query in a child process: the one way to bound the memory a jq filter takes.
//!
//! A Rust program cannot survive a failed allocation (it aborts), and jaq allocates whatever a
//! filter asks for (`"x" * 1e10`, `[range(1e9)]`), so a query that must not take the worker down
//! runs in a process of its own: the worker's own executable, started as
//! `overspill query-sandbox` ([`SANDBOX_COMMAND`]).
//!
//! - The parent writes one line of JSON, the [`Order`] (the job and the memory bound), then the
//!   spill's bytes as it reads them from the store, on the child's stdin; the child answers one
//!   JSON [`Answer`] on stdout and exits 0.
//! - The child first bounds its own address space (`RLIMIT_AS`) to what it maps at that point
//!   (its `VmSize` in `/proc/self/status`), the query thread's stack reservation
//!   ([`STACK_BYTES`], of which a filter may use the stack guard's 256 MiB) and the memory bound.
//!   Its allocator reserves no address space ahead (`MIMALLOC_ARENA_RESERVE=0`), so what the
//!   bound counts is what the filter and the parsed values take. An allocation past it aborts
//!   the child. A child that cannot bound itself (no `/proc`, a refused `setrlimit`) runs
//!   nothing: it answers why, and the query is refused with a final
//!   [`SandboxError::Unbounded`], never retried.
//! - A child that ends by a signal of running out of memory (an aborted allocation, the
//!   kernel's OOM killer) is [`Runaway::Memory`]; one still running at its deadline plus [`GRACE`] is killed and is
//!   [`Runaway::Time`]. The child is killed too when the query's future is dropped (an activity
//!   cancelled or timed out), and reaped by tokio.
//! - A child that cannot start, exits with an error, or answers something undecodable is a
//!   [`SandboxError`] naming what happened.
//!
//! The child gets an empty environment (no store credentials) beyond the allocator's setting.

use std::io::{BufRead as _, Read as _, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{ChildStdin, Command};
use tokio::sync::mpsc;

use super::engine::{self, Ended, Job, Runaway, STACK_BYTES};
use crate::read::{ReadError, ReadOutcomeError, SpillReader, Version};

/// The hidden subcommand the child runs: `overspill query-sandbox`.
pub const SANDBOX_COMMAND: &str = "query-sandbox";

/// The memory a query may take when nobody says (`--query-memory`): 2 GiB, so that `.` and
/// `length` run over a JSON document of [`MAX_DOCUMENT_BYTES`](super::MAX_DOCUMENT_BYTES)
/// parsed whole. Measured at 64 MiB: an array of 3.1 million small objects peaks at 1.6 GiB of
/// RSS, one of 22 million empty arrays at 1.5 GiB, of 33 million one-digit numbers at 0.6 GiB;
/// 1 GiB is too little for the first two. (22 million empty objects take 2.5 GiB, past it.)
pub const DEFAULT_QUERY_MEMORY: u64 = 2 << 30;

/// How long past its deadline a child may take to stop by itself before it is killed.
const GRACE: Duration = Duration::from_secs(2);

/// Address space beyond the stack reservation for the query thread's guard page and the
/// child's reading buffers, which exist before the filter runs.
const SLACK_BYTES: u64 = 32 << 20;

/// The longest order line the child reads (a filter is at most 4,096 bytes, escaped at most six
/// times as long).
const MAX_ORDER_BYTES: u64 = 64 << 10;

/// The most answer bytes the parent reads (a page is at most 50,000 chars plus one error).
const MAX_ANSWER_BYTES: u64 = 4 << 20;

/// The most bytes of the child's stderr kept for an error message.
const MAX_STDERR_BYTES: u64 = 4 << 10;

/// The bytes the child reads from stdin at a time and hands the engine.
const CHILD_CHUNK_BYTES: u64 = 1 << 20;

/// The signals a child that ran out of memory dies of: `SIGABRT` (a failed allocation aborts),
/// `SIGKILL` (the kernel's OOM killer), `SIGSEGV` and `SIGBUS` (a mapping that could not be
/// made). Any other signal was sent by someone, and is a [`SandboxError`].
const MEMORY_SIGNALS: [i32; 4] = [6, 9, 11, 7];

/// How queries run: where, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryRunner {
    /// Where each query runs.
    pub place: QueryPlace,
    /// How long one query may run before it is stopped with a message.
    pub deadline: Duration,
}

/// Where a query runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum QueryPlace {
    /// On a thread of this process, bounded in time and stack but not in memory: a filter that
    /// asks for more memory than the system gives aborts the whole process. For tests and for
    /// programs that embed the engine without the `overspill` executable.
    #[default]
    InProcess,
    /// In a child process, `exe query-sandbox`, that may take `memory` bytes beyond what it maps
    /// when it starts, and is killed at the deadline.
    Sandboxed {
        /// The `overspill` executable.
        exe: PathBuf,
        /// The memory bound, in bytes.
        memory: u64,
    },
}

/// In this process, for [`QUERY_DEADLINE`](super::QUERY_DEADLINE).
impl Default for QueryRunner {
    fn default() -> Self {
        Self {
            place: QueryPlace::InProcess,
            deadline: super::QUERY_DEADLINE,
        }
    }
}

impl QueryRunner {
    /// `exe` (the `overspill` executable) run as `exe query-sandbox` for each query, bounded by
    /// `memory` and [`QUERY_DEADLINE`](super::QUERY_DEADLINE): how the worker, the Python module
    /// and the Node addon run a model's jq filter.
    pub fn sandboxed(exe: PathBuf, memory: u64) -> Self {
        Self {
            place: QueryPlace::Sandboxed { exe, memory },
            ..Self::default()
        }
    }

    /// This executable ([`std::env::current_exe`]) re-run as the sandbox, bounded by `memory`.
    pub fn sandboxed_self(memory: u64) -> std::io::Result<Self> {
        Ok(Self::sandboxed(std::env::current_exe()?, memory))
    }

    /// The memory one query holds while it runs, as the in-flight budget charges it: the bound
    /// of a sandbox, and [`DEFAULT_QUERY_MEMORY`] for a query in this process (not bounded,
    /// charged as if it were).
    pub fn memory(&self) -> u64 {
        match self.place {
            QueryPlace::InProcess => DEFAULT_QUERY_MEMORY,
            QueryPlace::Sandboxed { memory, .. } => memory,
        }
    }
}

/// Why the sandbox gave no answer (a failure of the worker, not of the filter).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The child process could not be started.
    #[error("cannot start the query sandbox {exe:?}: {source}")]
    Start {
        /// The executable.
        exe: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The child's pipes or exit status could not be read.
    #[error("lost the query sandbox: {0}")]
    Io(#[from] std::io::Error),
    /// The child exited with an error of its own.
    #[error("the query sandbox failed ({status}): {stderr}")]
    Failed {
        /// How it exited.
        status: String,
        /// The end of its stderr.
        stderr: String,
    },
    /// The child exited 0 but its answer does not decode.
    #[error("the query sandbox's answer ({bytes} bytes) does not decode: {error}")]
    Undecodable {
        /// The answer's length.
        bytes: usize,
        /// The decoder's message.
        error: String,
    },
    /// The order on the child's stdin is missing or does not decode.
    #[error("the query sandbox's order does not decode: {0}")]
    BadOrder(String),
    /// The child could not bound its own memory, and ran nothing: final, since every attempt
    /// on this system would meet the same.
    #[error("the query sandbox cannot bound its memory: {0}")]
    Unbounded(String),
}

/// What the parent sends before the payload: the run and the memory bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Order {
    pub(crate) job: Job,
    pub(crate) memory: u64,
}

/// What the child answers: how the run ended, the model's message for a refused filter, or why
/// it could not bound itself (and ran nothing).
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Answer {
    Ended(Ended),
    Refused(String),
    Unbounded(String),
}

impl From<Result<Ended, ReadError>> for Answer {
    fn from(result: Result<Ended, ReadError>) -> Self {
        match result {
            Ok(ended) => Self::Ended(ended),
            Err(refused) => Self::Refused(refused.to_string()),
        }
    }
}

/// Run `job` in a child `exe` bounded by `memory`, feeding it the payload of `handle`.
pub(crate) async fn run<R: SpillReader>(
    reader: &R,
    handle: &str,
    version: &Version,
    job: Job,
    exe: &std::path::Path,
    memory: u64,
) -> Result<Ended, ReadOutcomeError> {
    let sandbox = |e: SandboxError| ReadOutcomeError::Sandbox(Box::new(e));
    let mut child = Command::new(exe)
        .arg(SANDBOX_COMMAND)
        .env_clear()
        .env("MIMALLOC_ARENA_RESERVE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own process group: a Ctrl-C meant for the worker does not end the query as if it
        // had run out of memory; the worker ends it (or its deadline does).
        .process_group(0)
        .spawn()
        .map_err(|source| {
            sandbox(SandboxError::Start {
                exe: exe.to_owned(),
                source,
            })
        })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let lost = std::io::Error::other("a pipe was not opened");
        return Err(sandbox(SandboxError::Io(lost)));
    };
    let deadline = job.deadline + GRACE;
    let mut order = serde_json::to_vec(&Order { job, memory })
        .map_err(|e| sandbox(SandboxError::BadOrder(e.to_string())))?;
    order.push(b'\n');
    let work = async {
        let fed = feed(reader, handle, version, order, stdin);
        let answered = read_capped(stdout, MAX_ANSWER_BYTES);
        let complained = read_capped(stderr, MAX_STDERR_BYTES);
        let (fed, answer, stderr) = tokio::join!(fed, answered, complained);
        fed?;
        let status = child.wait().await.map_err(|e| sandbox(e.into()))?;
        let answer = answer.map_err(|e| sandbox(e.into()))?;
        Ok::<_, ReadOutcomeError>((status, answer, stderr.unwrap_or_default()))
    };
    let (status, answer, stderr) = match tokio::time::timeout(deadline, work).await {
        Ok(done) => done?,
        Err(_) => {
            // Killed and reaped; a child that already exited is no error.
            let _ = child.kill().await;
            return Ok(Ended::Runaway(Runaway::Time));
        }
    };
    judge(status, &answer, &stderr)
}

/// Write `order`, then the payload as [`super::feed`] reads it; a child that stops reading (it
/// has its answer) ends the feed.
async fn feed<R: SpillReader>(
    reader: &R,
    handle: &str,
    version: &Version,
    order: Vec<u8>,
    mut stdin: ChildStdin,
) -> Result<(), ReadOutcomeError> {
    if stdin.write_all(&order).await.is_err() {
        return Ok(());
    }
    let write = async move |bytes: Bytes| stdin.write_all(&bytes).await.is_ok();
    super::feed(reader, handle, version, write).await
}

/// The first `cap` bytes `from` gives; the rest is read and dropped, so the child never blocks
/// on a full pipe.
async fn read_capped(from: impl AsyncRead + Unpin, cap: u64) -> std::io::Result<Vec<u8>> {
    let mut from = from.take(cap);
    let mut kept = Vec::new();
    from.read_to_end(&mut kept).await?;
    tokio::io::copy(&mut from.into_inner(), &mut tokio::io::sink()).await?;
    Ok(kept)
}

/// How the run ended, from the child's exit status, its answer and its stderr.
pub(crate) fn judge(
    status: ExitStatus,
    answer: &[u8],
    stderr: &[u8],
) -> Result<Ended, ReadOutcomeError> {
    let sandbox = |e: SandboxError| ReadOutcomeError::Sandbox(Box::new(e));
    if status
        .signal()
        .is_some_and(|signal| MEMORY_SIGNALS.contains(&signal))
    {
        return Ok(Ended::Runaway(Runaway::Memory));
    }
    if !status.success() {
        let stderr = String::from_utf8_lossy(stderr).trim().to_owned();
        return Err(sandbox(SandboxError::Failed {
            status: status.to_string(),
            stderr,
        }));
    }
    if !stderr.is_empty() {
        // A panic inside the jq engine is answered to the model as a failed filter; its message
        // (the panic hook's, on the child's stderr) is a bug to report, not to drop.
        tracing::warn!(
            target: "overspill::query",
            "the query sandbox wrote to its stderr: {}",
            String::from_utf8_lossy(stderr).trim()
        );
    }
    match serde_json::from_slice::<Answer>(answer) {
        Ok(Answer::Ended(ended)) => Ok(ended),
        Ok(Answer::Refused(message)) => Err(ReadError::BadArgument(message).into()),
        Ok(Answer::Unbounded(why)) => Err(sandbox(SandboxError::Unbounded(why))),
        Err(error) => Err(sandbox(SandboxError::Undecodable {
            bytes: answer.len(),
            error: error.to_string(),
        })),
    }
}

/// The child's side (`overspill query-sandbox`): read the `Order` and the payload on stdin,
/// bound this process's memory, run the engine, and write the `Answer` on stdout. A child that
/// cannot bound itself answers why and runs nothing.
///
/// A filter that allocates past the bound aborts this process; the parent tells.
pub fn serve_sandbox() -> Result<(), SandboxError> {
    let mut input = std::io::stdin().lock();
    let mut line = Vec::new();
    (&mut input)
        .take(MAX_ORDER_BYTES)
        .read_until(b'\n', &mut line)?;
    let order: Order =
        serde_json::from_slice(&line).map_err(|e| SandboxError::BadOrder(e.to_string()))?;
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status to learn what it maps ({e})"));
    if let Err(why) = status.and_then(|status| bound_memory(&status, order.memory)) {
        return answer(&Answer::Unbounded(why));
    }
    let (tx, rx) = mpsc::channel(1);
    let answer = engine::spawn(order.job, rx)?;
    loop {
        let mut chunk = Vec::with_capacity(CHILD_CHUNK_BYTES as usize);
        if (&mut input)
            .take(CHILD_CHUNK_BYTES)
            .read_to_end(&mut chunk)?
            == 0
            || tx.blocking_send(Bytes::from(chunk)).is_err()
        {
            break;
        }
    }
    drop(tx);
    let ended = answer
        .blocking_recv()
        .map_err(|_| std::io::Error::other("the query thread ended without an answer"))?;
    self::answer(&Answer::from(ended))
}

/// Write `answer` on stdout.
fn answer(answer: &Answer) -> Result<(), SandboxError> {
    let answer = serde_json::to_vec(answer).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    out.write_all(&answer)?;
    out.flush()?;
    Ok(())
}

/// Bound this process's address space to what it maps now (the `VmSize` of its
/// `/proc/self/status` text, `status`), the query thread's stack, a little slack and `memory`
/// (never above the limit it inherited); or say why it cannot.
fn bound_memory(status: &str, memory: u64) -> Result<(), String> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let mapped = vm_size(status).ok_or("/proc/self/status has no VmSize")?;
    let wanted = mapped
        .saturating_add(STACK_BYTES as u64)
        .saturating_add(SLACK_BYTES)
        .saturating_add(memory);
    let inherited = getrlimit(Resource::As);
    let limit = inherited.maximum.map_or(wanted, |max| max.min(wanted));
    setrlimit(
        Resource::As,
        Rlimit {
            current: Some(limit),
            maximum: Some(limit),
        },
    )
    .map_err(|e| format!("setrlimit(RLIMIT_AS, {limit}) failed: {e}"))
}

/// The `VmSize` of a `/proc/<pid>/status` text, in bytes.
fn vm_size(status: &str) -> Option<u64> {
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmSize:"))?;
    let kib = kib.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
    kib.checked_mul(1024)
}

/// The model's message for a filter stopped at `memory` bytes.
pub(crate) fn memory_message(memory: u64) -> String {
    format!(
        "The filter needed more than {} of memory and was stopped. Narrow it: select the fields \
         you need before collecting them (`[.items[] | .id]`, not `[.items[]]`), bound \
         generators with `limit(n; f)` or `first(f)`, and avoid building huge strings or arrays \
         with `*`, `repeat`, `range` or `[...]`.",
        size_text(memory)
    )
}

/// `512 MiB`, `1 GiB`, `1.5 GiB`: a bound as the model reads it.
fn size_text(bytes: u64) -> String {
    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;
    match bytes {
        b if b >= GIB && b % GIB == 0 => format!("{} GiB", b / GIB),
        b if b >= GIB && b.saturating_mul(10) % GIB == 0 => {
            format!("{:.1} GiB", b as f64 / GIB as f64)
        }
        b if b >= MIB => format!("{} MiB", b.div_ceil(MIB)),
        b => format!("{} KiB", b.div_ceil(1024).max(1)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::query::engine::Mode;
    use crate::query::render::Page;

    fn job() -> Job {
        Job {
            code: ".a | \"\\n\"".into(),
            offset: 3,
            limit: 7,
            deadline: Duration::from_millis(1_500),
            max_bytes: 64 << 20,
            mode: Mode::Document,
        }
    }

    /// The order is one line (a newline in the filter is escaped), and decodes to itself.
    #[test]
    fn an_order_is_one_line_that_round_trips() {
        let order = Order {
            job: Job {
                code: "[.[]\n| .id]".into(),
                ..job()
            },
            memory: 512 << 20,
        };
        let line = serde_json::to_vec(&order).expect("encodes");
        assert!(!line.contains(&b'\n'));
        let back: Order = serde_json::from_slice(&line).expect("decodes");
        assert_eq!(back, order);
    }

    /// Every answer the child can give arrives as it was.
    #[test]
    fn answers_round_trip_through_the_exit_status_judge() {
        let ok = ExitStatus::from_raw(0);
        let mut page = Page::new(0, 2);
        page.inputs = 4;
        page.result(|out| {
            let _ = out.write_str("{\"id\":1}");
        });
        page.error(2, || "cannot index".into());
        let answers = [
            Ended::Done(page),
            Ended::NotLines {
                line: 3,
                error: "bad".into(),
                text: "{".into(),
            },
            Ended::TooLong { line: 9 },
            Ended::Runaway(Runaway::Time),
            Ended::Runaway(Runaway::Depth),
        ];
        for ended in answers {
            let wire = serde_json::to_vec(&Answer::Ended(ended)).expect("encodes");
            let Answer::Ended(expected) = serde_json::from_slice(&wire).expect("decodes") else {
                panic!("an ended answer")
            };
            let judged = judge(ok, &wire, b"").expect("an answer");
            assert_eq!(judged, expected);
        }
        let refused = serde_json::to_vec(&Answer::Refused("`filter` is bad".into())).expect("");
        match judge(ok, &refused, b"") {
            Err(ReadOutcomeError::Retry(ReadError::BadArgument(m))) => {
                assert_eq!(m, "`filter` is bad")
            }
            other => panic!("a retry, got {other:?}"),
        }
    }

    /// A signal of running out of memory (an aborted allocation, the OOM killer) is the memory
    /// bound; another signal, an error exit and an undecodable answer are typed errors that name
    /// what happened.
    #[test]
    fn exits_map_to_outcomes() {
        for signal in [6, 9, 11] {
            let killed = ExitStatus::from_raw(signal);
            assert_eq!(
                judge(
                    killed,
                    b"",
                    b"memory allocation of 10000000000 bytes failed"
                )
                .ok(),
                Some(Ended::Runaway(Runaway::Memory)),
                "signal {signal}"
            );
        }
        let interrupted = judge(ExitStatus::from_raw(2), b"", b"");
        match interrupted {
            Err(ReadOutcomeError::Sandbox(e)) => {
                assert!(e.to_string().contains("signal: 2 (SIGINT)"), "{e}")
            }
            other => panic!("a SIGINT is no memory bound, got {other:?}"),
        }
        let failed = judge(ExitStatus::from_raw(3 << 8), b"", b"bad order\n");
        match failed {
            Err(ReadOutcomeError::Sandbox(e)) => {
                let text = e.to_string();
                assert!(text.contains("exit status: 3"), "{text}");
                assert!(text.ends_with("bad order"), "{text}");
            }
            other => panic!("a sandbox error, got {other:?}"),
        }
        let garbled = judge(ExitStatus::from_raw(0), b"{\"Ended\":", b"");
        match garbled {
            Err(ReadOutcomeError::Sandbox(e)) => {
                assert!(
                    matches!(
                        e.downcast_ref::<SandboxError>(),
                        Some(SandboxError::Undecodable { bytes: 9, .. })
                    ),
                    "{e}"
                )
            }
            other => panic!("a sandbox error, got {other:?}"),
        }
    }

    /// A child that answered but wrote to its stderr (the panic hook's message of a panic the
    /// engine caught) has it logged at WARN, beside its answer.
    #[test]
    fn what_a_child_says_on_stderr_is_logged() {
        let logs = crate::test_logs::Logs::default();
        let _guard = logs.capture();
        let refused = Answer::Refused("The filter failed inside the jq engine".into());
        let wire = serde_json::to_vec(&refused).expect("encodes");
        let said = b"thread 'overspill-query' panicked at jaq: index out of bounds\n";
        let judged = judge(ExitStatus::from_raw(0), &wire, said);
        assert!(
            matches!(judged, Err(ReadOutcomeError::Retry(_))),
            "{judged:?}"
        );
        let text = logs.text();
        assert!(text.contains("WARN"), "{text}");
        assert!(
            text.contains("panicked at jaq: index out of bounds"),
            "{text}"
        );
    }

    #[test]
    fn the_memory_message_names_the_bound() {
        assert!(memory_message(512 << 20).starts_with(
            "The filter needed more than 512 MiB of memory and was stopped. Narrow it:"
        ));
        assert_eq!(size_text(1 << 30), "1 GiB");
        assert_eq!(size_text(3 << 29), "1.5 GiB");
        assert_eq!(size_text(100_000_000), "96 MiB");
        assert_eq!(size_text(1000), "1 KiB");
    }

    /// A child that cannot bound itself says why, and the parent refuses the query for good.
    #[test]
    fn a_child_that_cannot_bound_itself_is_unbounded() {
        let why = bound_memory("Name:\toverspill\n", 1 << 30).expect_err("no VmSize");
        assert_eq!(why, "/proc/self/status has no VmSize");
        let wire = serde_json::to_vec(&Answer::Unbounded(why)).expect("encodes");
        match judge(ExitStatus::from_raw(0), &wire, b"") {
            Err(ReadOutcomeError::Sandbox(e)) => assert!(
                matches!(
                    e.downcast_ref::<SandboxError>(),
                    Some(SandboxError::Unbounded(why)) if why == "/proc/self/status has no VmSize"
                ),
                "{e}"
            ),
            other => panic!("an unbounded sandbox, got {other:?}"),
        }
    }

    #[test]
    fn vm_size_reads_the_status_line() {
        let status = "Name:\toverspill\nVmPeak:\t  9000 kB\nVmSize:\t   8196 kB\nVmRSS:\t 10 kB\n";
        assert_eq!(vm_size(status), Some(8196 * 1024));
        assert_eq!(vm_size("Name:\tx\n"), None);
    }
}
