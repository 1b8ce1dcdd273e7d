//! The hostile-model suite: a real `overspill worker` process under an address-space limit
//! (`prlimit --as`, util-linux) called through Temporal with the arguments a hostile model would
//! write: memory bombs, runaway and recursive filters, huge regex repetitions, traversing and
//! oversized handles, a spill of one long line, huge offsets, limits and contexts. Every call must
//! get a model-visible answer (a page, or a ModelRetry that says what to change), and the worker
//! must be the same process afterwards, still serving.
//!
//! Run with `--nocapture` to see each row's answer and the worker's peak RSS while it ran (its
//! `VmHWM`, reset before each row through `/proc/<pid>/clear_refs`; a query's own memory is in its
//! child process, bounded by `--query-memory`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use overspill::limits::SpillStore as _;
use overspill::store::{ReadScope, Reader, Scope, Store};
use serde_json::{Value, json};
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{WorkflowContext, WorkflowResult};

use crate::processes::WorkerProcess;
use crate::support::temporal::{
    Outcome, Probe, ProbeWorkflow, TestWorker, cancel_after, probe, temporal_address, unique,
};

/// The worker's address-space limit: its own mapping at rest (about 1.3 GiB of it reserved, not
/// used, by its allocator) and room for a query child (its 1 GiB stack reservation and the
/// memory bound), as a container would give it.
const WORKER_AS: &str = "6GiB";
/// The suite's query memory bound and deadline, small so that the bombs end quickly.
const QUERY_MEMORY: &str = "256MiB";
const QUERY_DEADLINE_SECS: &str = "2";
/// The one-line spill: 72 MiB of one line. The 1 GB would take a debug build minutes to
/// scan on a shared 2-core CI machine (256 MiB took 15-24 s a row), and every read path caps a
/// line well below 72 MiB: 16 MiB gathered for a regex, 64 MiB for a JSON value (so a query's is
/// too long), 200 KB shown; past its caps a line is only scanned, in chunks of 4 MiB.
const LONG_LINE_BYTES: usize = 72 << 20;

const READ: &str = "tool_output_limits.read_tool_result";
const GREP: &str = "tool_output_limits.grep_tool_result";
const QUERY: &str = "tool_output_limits.query_tool_result";

/// An `overspill worker` process on its own task queue over a `file://` store, under
/// `prlimit --as`, reading spills as `read_scope` admits.
fn hostile_worker(
    task_queue: &str,
    store: &str,
    deadline_secs: &str,
    read_scope: &str,
) -> WorkerProcess {
    let child = Command::new("prlimit")
        .arg(format!("--as={}", bytes(WORKER_AS)))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_overspill"))
        .arg("worker")
        .args(["--task-queue", task_queue, "--store", store])
        .args(["--read-scope", read_scope])
        .args([
            "--query-memory",
            QUERY_MEMORY,
            "--max-inflight-bytes",
            "2GiB",
        ])
        .env("OVERSPILL_QUERY_DEADLINE_SECS", deadline_secs)
        .env("OVERSPILL_GRACEFUL_SHUTDOWN_SECS", "1")
        .env("TEMPORAL_ADDRESS", temporal_address())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn prlimit overspill worker (util-linux): {e}"));
    WorkerProcess(child)
}

/// `6GiB` as bytes, for prlimit.
fn bytes(size: &str) -> u64 {
    size.parse::<bytesize::ByteSize>()
        .unwrap_or_else(|e| panic!("{size}: {e}"))
        .as_u64()
}

/// A line of `/proc/<pid>/status`, in KiB.
fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix(key))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}

/// Reset the process's peak RSS (`VmHWM`) to its current RSS.
fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

/// The live `overspill query-sandbox` children of `pid` (zombies, already dead, excluded).
fn sandboxes(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            // `pid (comm) state ppid ...`: the fields after the last `)`.
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
            let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
            fields.get(1) == Some(&pid.to_string().as_str())
                && fields.first() != Some(&"Z")
                && String::from_utf8_lossy(&cmdline).contains("query-sandbox")
        })
        .collect()
}

/// One hostile call and the answers it may get: the model-visible text contains one of
/// `expect`.
struct Row {
    name: &'static str,
    activity: &'static str,
    input: Value,
    expect: &'static [&'static str],
}

fn row(
    name: &'static str,
    activity: &'static str,
    input: Value,
    expect: &'static [&'static str],
) -> Row {
    Row {
        name,
        activity,
        input,
        expect,
    }
}

/// The model-visible text of an outcome: the page, or a ModelRetry's message; anything else
/// (a store failure, a timeout) is a failure of the row.
fn visible(outcome: &Outcome) -> Result<String, String> {
    match (&outcome.ok, outcome.error_type.as_deref()) {
        (Some(Value::String(page)), _) => Ok(page.clone()),
        (None, Some("ModelRetry")) => Ok(outcome.message.clone()),
        _ => Err(format!(
            "not a model-visible answer: {:?} {}",
            outcome.error_type, outcome.message
        )),
    }
}

const MEMORY: &str = "The filter needed more than 256 MiB of memory and was stopped. Narrow it:";
const TIME: &str = "The filter ran longer than 2 s and was stopped.";
const DEPTH: &str = "The filter recursed too deep and was stopped.";
const MISSING: &str = "[No stored tool result for handle";

fn rows(json: &str, text: &str, long: &str, foreign: &str) -> Vec<Row> {
    let q = |filter: &str| json!({"handle": json, "filter": filter});
    let huge_offset = i64::MAX;
    let mut rows = vec![
        row(
            "query: \"x\" * 1e10",
            QUERY,
            q("\"x\" * 10000000000"),
            &[MEMORY],
        ),
        row(
            "query: [range(1e9)] | length",
            QUERY,
            q("[range(1e9)] | length"),
            &[MEMORY, TIME],
        ),
        row(
            "query: [limit(1e8; repeat(.))]",
            QUERY,
            q("[limit(1e8; repeat(.))] | length"),
            &[MEMORY, TIME],
        ),
        row(
            "query: def f: [f]; f",
            QUERY,
            q("def f: [f]; f"),
            &[DEPTH, MEMORY],
        ),
        row(
            "query: def f: 1 + f; f",
            QUERY,
            q("def f: 1 + f; f"),
            &[DEPTH, MEMORY],
        ),
        row(
            "query: [recurse(. + 1)]-style",
            QUERY,
            q(".id | [recurse(. + 1; true)] | length"),
            &[MEMORY, TIME],
        ),
        row(
            "query: last(range(1e12))",
            QUERY,
            q("last(range(1e12))"),
            &[TIME],
        ),
        row(
            "query: reduce building an array",
            QUERY,
            q("reduce range(1e9) as $i ([]; . + [$i]) | length"),
            &[MEMORY, TIME],
        ),
        row(
            "query: tostring * 1e9 of a value",
            QUERY,
            q("[tostring * 100000000] | length"),
            &[MEMORY, TIME],
        ),
        row(
            "query: error with a 1 MB message",
            QUERY,
            q("error(\"x\" * 1000000)"),
            &["[message cut at 10,000 of 1,000,002 chars]"],
        ),
        row(
            "query: huge offset and limit",
            QUERY,
            json!({"handle": json, "filter": ".", "offset": huge_offset, "limit": huge_offset}),
            &["showing none"],
        ),
        row(
            "query: 10 KB filter",
            QUERY,
            q(&format!(".{}", "a".repeat(9_999))),
            &["`filter` is 10000 bytes long; at most 4096"],
        ),
        row(
            "query: one long line",
            QUERY,
            json!({"handle": long, "filter": "."}),
            &["Line 1 of the spill is longer than the 64 MiB", MEMORY],
        ),
        row(
            "grep: a{100000}{100000}",
            GREP,
            json!({"handle": text, "pattern": "a{100000}{100000}", "regex": true}),
            &["`pattern`"],
        ),
        row(
            "grep: (?:\\w{1000}){1000}",
            GREP,
            json!({"handle": text, "pattern": "(?:\\w{1000}){1000}", "regex": true}),
            &["`pattern`"],
        ),
        row(
            "grep: huge context, offset, limit",
            GREP,
            json!({"handle": text, "pattern": "line", "context": huge_offset, "offset": huge_offset, "limit": huge_offset}),
            &["matching line(s)"],
        ),
        row(
            "grep: huge offset from the end",
            GREP,
            json!({"handle": text, "pattern": "line", "offset": huge_offset, "from_end": true, "context": 20}),
            &["matching line(s)"],
        ),
        // A literal is searched whatever its length, as the harness searches it (linear time).
        row(
            "grep: 10 KB pattern",
            GREP,
            json!({"handle": text, "pattern": "a".repeat(10_000)}),
            &["0 matching line(s)"],
        ),
        row(
            "grep: 10 KB regex",
            GREP,
            json!({"handle": text, "pattern": "a".repeat(10_000), "regex": true}),
            &["`pattern` is 10000 bytes long"],
        ),
        row(
            "grep: regex over one long line",
            GREP,
            json!({"handle": long, "pattern": "x$", "regex": true, "context": 20}),
            &["1 matching line(s)"],
        ),
        row(
            "grep: literal over one long line",
            GREP,
            json!({"handle": long, "pattern": "xy"}),
            &["0 matching line(s)"],
        ),
        row(
            "read: huge offset and limit",
            READ,
            json!({"handle": text, "offset": huge_offset, "limit": huge_offset}),
            &["[handle"],
        ),
        row(
            "read: huge offset from the end",
            READ,
            json!({"handle": text, "offset": huge_offset, "from_end": true}),
            &["[handle"],
        ),
        row(
            "read: one long line",
            READ,
            json!({"handle": long}),
            &["[handle"],
        ),
        row(
            "read: one long line from the end",
            READ,
            json!({"handle": long, "from_end": true}),
            &["[handle"],
        ),
    ];
    let hostile_handles = [
        ("`..`", "../../../../etc/passwd".to_owned()),
        ("`..` inside", "hostile/../../secret.0".to_owned()),
        ("NUL", "hostile/a\0b.0".to_owned()),
        ("absolute", "/etc/passwd".to_owned()),
        ("10 KB", format!("hostile/{}.0", "h".repeat(10_000))),
        ("another workflow's spill", foreign.to_owned()),
    ];
    for (what, handle) in hostile_handles {
        let name = |activity: &str| -> &'static str {
            Box::leak(format!("{activity}: handle with {what}").into_boxed_str())
        };
        rows.push(row(
            name("read"),
            READ,
            json!({"handle": handle}),
            &[MISSING],
        ));
        rows.push(row(
            name("grep"),
            GREP,
            json!({"handle": handle, "pattern": "a"}),
            &[MISSING],
        ));
        rows.push(row(
            name("query"),
            QUERY,
            json!({"handle": handle, "filter": "."}),
            &[MISSING],
        ));
    }
    rows
}

/// Write the suite's spills as `writer`'s: a small JSON Lines one, a text one, one long line.
async fn spills(store: &Store, writer: &Reader) -> (String, String, String) {
    let store = store.for_tool("hostile", writer);
    let json = store
        .write(
            "hostile/json.0",
            Bytes::from_static(b"{\"id\":1,\"tags\":[\"a\"]}\n{\"id\":2,\"tags\":[]}\n"),
        )
        .await
        .expect("spill");
    let lines: String = (0..5_000).map(|i| format!("line {i}: ok\n")).collect();
    let text = store
        .write("hostile/text.0", Bytes::from(lines))
        .await
        .expect("spill");
    let long = store
        .write("hostile/long.0", Bytes::from(vec![b'x'; LONG_LINE_BYTES]))
        .await
        .expect("spill");
    (json, text, long)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_model_gets_answers_and_the_worker_survives() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("file://{}", dir.path().display());
    let store = Store::open(Some(&url)).expect("store");
    // Every call comes from runs of one workflow id, whose spills these are (a read is scoped
    // to the workflow that wrote the spill); one more spill is another workflow's.
    let workflow_id = unique("hostile-model");
    let writer = |id: &str| Reader::new(ReadScope::Workflow, Scope::new("default", id));
    let (json, text, long) = spills(&store, &writer(&workflow_id)).await;
    let foreign = (store.for_tool("hostile", &writer("another-workflow")))
        .write("hostile/foreign.0", Bytes::from_static(b"{\"secret\":1}\n"))
        .await
        .expect("spill");
    let host = TestWorker::start("hostile-host").await;
    let ask = |probes: Vec<Probe>| {
        let (host, workflow_id) = (&host, &workflow_id);
        async move { (host.run(ProbeWorkflow::run, probes, workflow_id).await).expect("probe workflow") }
    };
    let queue = unique("hostile");
    let mut worker = hostile_worker(&queue, &url, QUERY_DEADLINE_SECS, "workflow");
    let pid = worker.0.id();
    let on_worker = |activity: &str, input: Value| Probe {
        task_queue: Some(queue.clone()),
        ..probe(activity, input)
    };

    let mut failures = Vec::new();
    println!("{:<44} {:>9}  answer", "row", "peak RSS");
    for row in rows(&json, &text, &long, &foreign) {
        reset_peak(pid);
        let started = Instant::now();
        let outcome = ask(vec![on_worker(row.activity, row.input)]).await;
        let took = started.elapsed();
        worker.assert_running();
        let peak = status_kib(pid, "VmHWM:").map_or("?".into(), |k| format!("{} MiB", k >> 10));
        let answer = outcome
            .first()
            .map(visible)
            .unwrap_or(Err("no outcome".into()));
        let first_line = |text: &str| {
            text.lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(110)
                .collect::<String>()
        };
        match &answer {
            Ok(text) => println!(
                "{:<44} {peak:>9}  {:.1}s  {}",
                row.name,
                took.as_secs_f64(),
                first_line(text)
            ),
            Err(e) => println!(
                "{:<44} {peak:>9}  {:.1}s  FAILED {e}",
                row.name,
                took.as_secs_f64()
            ),
        }
        match answer {
            Ok(text) if row.expect.iter().any(|e| text.contains(e)) => {}
            Ok(text) => failures.push(format!("{}: unexpected answer {text:?}", row.name)),
            Err(e) => failures.push(format!("{}: {e}", row.name)),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(
        sandboxes(pid).is_empty(),
        "no query child outlives its call"
    );

    // The same process still serves an ordinary query.
    worker.assert_running();
    assert_eq!(worker.0.id(), pid);
    let outcome = ask(vec![on_worker(
        QUERY,
        json!({"handle": json, "filter": ".id"}),
    )])
    .await;
    assert_eq!(
        outcome[0].ok,
        Some(json!(
            "[handle 'hostile/json.0': 2 result(s) of filter '.id' over 2 JSON value(s); showing results 1-2]\n1\n2"
        )),
        "{outcome:?}"
    );
}

/// Starts a query that would run for minutes, cancels it after four seconds, and reports how it
/// ended.
#[workflow]
#[derive(Default)]
pub(crate) struct CancelQuery;

#[workflow_methods]
impl CancelQuery {
    #[run(name = "OverspillCancelQuery")]
    pub(crate) async fn run(
        ctx: &mut WorkflowContext<Self>,
        queue_and_handle: Vec<String>,
    ) -> WorkflowResult<String> {
        let [task_queue, handle] = <[String; 2]>::try_from(queue_and_handle)
            .unwrap_or_else(|_| [String::new(), String::new()]);
        use temporalio_common::UntypedActivity;
        use temporalio_common::data_converters::RawValue;
        use temporalio_common::protos::temporal::api::common::v1::Payload;
        use temporalio_sdk::ActivityCancellationType;

        let mut options = overspill_workflows::activity_options();
        options.task_queue = Some(task_queue);
        options.heartbeat_timeout = Some(Duration::from_secs(4));
        options.cancellation_type = ActivityCancellationType::WaitCancellationCompleted;
        let input = json!({"handle": handle, "filter": "[limit(1e9; repeat(.))] | length"});
        let payload = Payload {
            metadata: std::collections::HashMap::from([(
                "encoding".to_owned(),
                b"json/plain".to_vec(),
            )]),
            data: serde_json::to_vec(&input).unwrap_or_default(),
            external_payloads: vec![],
        };
        let activity = ctx.execute_activity(
            UntypedActivity::new(QUERY.to_owned()),
            RawValue::new(vec![payload]),
            options,
        );
        Ok(cancel_after(ctx, activity, Duration::from_secs(4)).await)
    }
}

/// A cancelled query's child process is killed and reaped with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_query_leaves_no_process() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("file://{}", dir.path().display());
    let store = Store::open(Some(&url)).expect("store");
    let handle = store
        .write("cancel/json.0", Bytes::from_static(b"{\"id\":1}\n"))
        .await
        .expect("spill");
    let host = TestWorker::start_with("cancel-query-host", |o| {
        let _ = o.register_workflow::<CancelQuery>();
    })
    .await;
    let queue = unique("cancel-query");
    // A deadline of minutes: only the cancellation can end the query.
    let mut worker = hostile_worker(&queue, &url, "600", "any");
    let pid = worker.0.id();
    // An ordinary query first: the worker is polling before the timer below starts.
    let ready = Probe {
        task_queue: Some(queue.clone()),
        ..probe(QUERY, json!({"handle": handle, "filter": ".id"}))
    };
    let ready = host.probe(vec![ready]).await;
    assert!(ready[0].ok.is_some(), "{ready:?}");
    let watch = tokio::spawn(async move {
        // The child appears while the query runs; its pid, once seen.
        for _ in 0..600 {
            if let Some(&child) = sandboxes(pid).first() {
                return Some(child);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    });
    let out = host
        .run(
            CancelQuery::run,
            vec![queue.clone(), handle],
            &unique("cancel-query"),
        )
        .await
        .expect("cancel workflow");
    assert_eq!(out, "cancelled");
    let child = watch
        .await
        .expect("watch")
        .expect("the query ran in a child process");
    // The activity reports its cancellation once its future is dropped, and dropping it kills
    // the child; tokio reaps it on the SIGCHLD that follows.
    let cancelled = Instant::now();
    while std::path::Path::new(&format!("/proc/{child}")).exists()
        && cancelled.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "the cancelled query's child {child} was gone {} ms after the cancellation completed",
        cancelled.elapsed().as_millis()
    );
    assert!(
        !std::path::Path::new(&format!("/proc/{child}")).exists(),
        "the child {child} outlived its cancelled query"
    );
    worker.assert_running();
}
