//! `overspill worker` as a real process: SIGKILL in the middle of a large spill, and two worker
//! processes sharing one S3 store.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use overspill::store::Store;
use overspill_cli::example::{AgentLoop, AgentLoopInput, build_log};
use serde_json::json;
use temporalio_client::{Client, WorkflowGetResultOptions, WorkflowHandle, WorkflowStartOptions};
use temporalio_common::HasWorkflowDefinition;
use temporalio_common::protos::temporal::api::enums::v1::EventType;
use temporalio_common::protos::temporal::api::history::v1::HistoryEvent;

use crate::support::temporal::{TestWorker, probe, temporal_address, unique};

/// A client of the test server.
pub(crate) async fn connect() -> Client {
    overspill::worker::Connect::new(temporal_address())
        .client()
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"))
}

/// Start `workflow` with `input` on `task_queue` under `id`, to run within `timeout`.
pub(crate) async fn start<W>(
    client: &Client,
    workflow: W,
    input: W::Input,
    task_queue: &str,
    id: &str,
    timeout: Duration,
) -> WorkflowHandle<Client, W>
where
    W: HasWorkflowDefinition,
    W::Input: Send,
{
    let options = WorkflowStartOptions::new(task_queue.to_owned(), id.to_owned())
        .execution_timeout(timeout)
        .build();
    client
        .start_workflow(workflow, input, options)
        .await
        .unwrap_or_else(|e| panic!("start: {e}"))
}

/// An `overspill worker` child process, killed (SIGKILL) when dropped.
pub(crate) struct WorkerProcess(pub(crate) Child);

impl WorkerProcess {
    fn start(task_queue: &str, store: &str) -> Self {
        Self::start_with(task_queue, store, &[])
    }

    fn start_with(task_queue: &str, store: &str, extra: &[&str]) -> Self {
        Self::spawn(task_queue, store, &[&["--example-tools"], extra].concat())
    }

    /// A worker without the example workflow and tools.
    fn start_plain(task_queue: &str, store: &str) -> Self {
        Self::spawn(task_queue, store, &[])
    }

    /// A worker on `task_queue` over `store` with `extra` flags (a graceful period of 1 s unless
    /// they give one).
    pub(crate) fn spawn(task_queue: &str, store: &str, extra: &[&str]) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_overspill"))
            .arg("worker")
            .env("OVERSPILL_GRACEFUL_SHUTDOWN_SECS", "1")
            .args(extra)
            .args(["--task-queue", task_queue, "--store", store])
            .env("TEMPORAL_ADDRESS", temporal_address())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn overspill worker: {e}"));
        Self(child)
    }

    /// Panic if the process has exited (a bad flag, a crash).
    pub(crate) fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.0.try_wait() {
            panic!("overspill worker exited: {status}");
        }
    }

    /// The identity the worker gives Temporal: `{pid}@{hostname}` starts with this.
    pub(crate) fn identity_prefix(&self) -> String {
        format!("{}@", self.0.id())
    }

    /// Send SIGTERM.
    pub(crate) fn terminate(&self) {
        use nix::sys::signal::{Signal, kill};
        let pid = i32::try_from(self.0.id()).unwrap_or_else(|e| panic!("pid: {e}"));
        kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM)
            .unwrap_or_else(|e| panic!("kill(SIGTERM): {e}"));
    }

    /// Wait until the process exits after a [`Self::terminate`], at most `limit`.
    pub(crate) async fn exited(&mut self, limit: Duration) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.0.try_wait() {
                return status;
            }
            assert!(
                started.elapsed() < limit,
                "the worker did not stop after SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The events of `handle`'s workflow so far (none if the history cannot be read yet).
pub(crate) async fn history<W: HasWorkflowDefinition>(
    handle: &WorkflowHandle<Client, W>,
) -> Vec<HistoryEvent> {
    handle
        .fetch_history(Default::default())
        .into_events()
        .await
        .unwrap_or_default()
}

/// Whether `events` hold one of type `kind`.
pub(crate) fn recorded(events: &[HistoryEvent], kind: EventType) -> bool {
    events.iter().any(|e| e.event_type() == kind)
}

fn files_under(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            if path.is_dir() { files_under(&path) } else { 1 }
        })
        .sum()
}

/// SIGKILL the worker while the tool activity spills a large output; a restarted worker
/// completes the workflow with the same handle and one complete object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_spill_then_restart_completes_with_the_same_handle() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let store_url = format!("file://{}", dir.path().display());
    let task_queue = unique("sigkill");
    let client = connect().await;
    let lines = 600_000; // 33 MB
    let id = unique("sigkill-wf");
    let handle = start(
        &client,
        AgentLoop::run,
        AgentLoopInput {
            log_lines: lines,
            file_lines: 10,
            config: None,
        },
        &task_queue,
        &id,
        Duration::from_secs(180),
    )
    .await;

    let mut worker = WorkerProcess::start(&task_queue, &store_url);
    // Kill as soon as the spill starts landing in the store (its staging file appears).
    let started = Instant::now();
    let mut polls = 0u64;
    while files_under(dir.path()) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the spill never started"
        );
        polls += 1;
        if polls.is_multiple_of(500) {
            worker.assert_running();
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    worker.kill();
    let events = history(&handle).await;
    let completed_before_kill = recorded(&events, EventType::ActivityTaskCompleted);
    assert!(
        !completed_before_kill,
        "the kill came too late: the spill had completed"
    );

    // The heartbeat timeout (10 s) hands the activity to the restarted worker.
    let _worker = WorkerProcess::start(&task_queue, &store_url);
    let out = handle
        .get_result(WorkflowGetResultOptions::default())
        .await
        .unwrap_or_else(|e| panic!("workflow after restart: {e:?}"));
    let expected_handle = format!("{id}/call-1.0");
    assert_eq!(
        out.turns[0].handle.as_deref(),
        Some(expected_handle.as_str())
    );
    let store = Store::open(Some(&store_url)).unwrap_or_else(|e| panic!("store: {e}"));
    let listed = store
        .list(Some(&id))
        .await
        .unwrap_or_else(|e| panic!("list: {e}"));
    let logs: Vec<_> = listed
        .iter()
        .filter(|s| s.handle.ends_with("call-1.0"))
        .collect();
    assert_eq!(logs.len(), 1, "{listed:?}");
    assert_eq!(
        logs[0].size,
        build_log(lines).len() as u64,
        "a complete object"
    );
}

/// The example agent loop is no part of the production worker: without `--example-tools` its
/// workflow task fails (an unknown workflow type) and nothing is spilled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plain_worker_serves_no_example_workflow() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let task_queue = unique("plain");
    let client = connect().await;
    let handle = start(
        &client,
        AgentLoop::run,
        AgentLoopInput {
            log_lines: 10,
            file_lines: 10,
            config: None,
        },
        &task_queue,
        &unique("plain-wf"),
        Duration::from_secs(60),
    )
    .await;
    let mut worker =
        WorkerProcess::start_plain(&task_queue, &format!("file://{}", dir.path().display()));
    let started = Instant::now();
    loop {
        let events = history(&handle).await;
        let failed = recorded(&events, EventType::WorkflowTaskFailed);
        let scheduled = recorded(&events, EventType::ActivityTaskScheduled);
        assert!(!scheduled, "the plain worker ran the example workflow");
        if failed {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no workflow task failed"
        );
        worker.assert_running();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = handle.terminate(Default::default()).await;
}

/// `--worker-threads 1` runs the worker on the main thread alone (a current-thread runtime, the
/// SDK's loop in `block_on`): the example agent still completes, its spill and reduce included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_thread_worker_runs_the_example_agent() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let task_queue = unique("one-thread");
    let store = format!("file://{}", dir.path().display());
    let _worker = WorkerProcess::start_with(&task_queue, &store, &["--worker-threads", "1"]);
    let client = connect().await;
    let id = unique("one-thread-wf");
    let out = start(
        &client,
        AgentLoop::run,
        AgentLoopInput {
            log_lines: 2_000,
            file_lines: 10,
            config: None,
        },
        &task_queue,
        &id,
        Duration::from_secs(60),
    )
    .await
    .get_result(WorkflowGetResultOptions::default())
    .await
    .unwrap_or_else(|e| panic!("workflow: {e:?}"));
    let expected = format!("{id}/call-1.0");
    assert_eq!(out.turns[0].handle.as_deref(), Some(expected.as_str()));
}

/// `--activities-only` serves activities and no workflow: an activity sent to its task queue
/// completes, while a `ReduceToolOutput` started there before the worker gets no workflow task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activities_only_worker_takes_no_workflow_task() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let task_queue = unique("activities-only");
    let client = connect().await;
    let request: overspill::api::ReduceRequest = serde_json::from_value(json!({
        "tool_name": "cat", "tool_call_id": "c", "output": {"text": "hi"}
    }))
    .unwrap_or_else(|e| panic!("request: {e}"));
    let handle = start(
        &client,
        overspill_workflows::ReduceToolOutput::run,
        request,
        &task_queue,
        &unique("activities-only-wf"),
        Duration::from_secs(60),
    )
    .await;
    let store = format!("file://{}", dir.path().display());
    let mut worker = WorkerProcess::spawn(&task_queue, &store, &["--activities-only"]);
    let host = TestWorker::start("activities-only-host").await;
    let mut reduce = probe(
        "tool_output_limits.reduce",
        json!({"tool_name": "cat", "tool_call_id": "c", "output": {"text": "hi"}}),
    );
    reduce.task_queue = Some(task_queue.clone());
    let out = host.probe(vec![reduce]).await;
    assert!(out[0].ok.is_some(), "{:?}", out[0]);
    worker.assert_running();
    // The worker has been polling its queue since before the activity ran, and the workflow
    // task was waiting there all along: a worker serving workflows would have taken it.
    let events = history(&handle).await;
    assert!(
        !recorded(&events, EventType::WorkflowTaskStarted),
        "the activities-only worker took a workflow task"
    );
    let _ = handle.terminate(Default::default()).await;
}

/// Two worker processes on different task queues share one S3 store: each resolves the other's
/// handles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worker_processes_share_one_s3_store() {
    let Ok(s3) = std::env::var("OVERSPILL_TEST_S3_URL") else {
        panic!(
            "OVERSPILL_TEST_S3_URL is unset: run `deploy/seaweedfs.sh start && source .deploy/seaweedfs.env` first (deploy/test.sh does)"
        );
    };
    let store_url = format!("{}/{}", s3.trim_end_matches('/'), unique("two-workers"));
    let queue_a = unique("s3-a");
    let queue_b = unique("s3-b");
    // A port the kernel just handed out (and we released), not one derived from the pid that
    // another server may hold.
    let metrics_addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.to_string())
        .unwrap_or_else(|e| panic!("a free port: {e}"));
    let mut a = WorkerProcess::start_with(&queue_a, &store_url, &["--metrics", &metrics_addr]);
    let mut b = WorkerProcess::start(&queue_b, &store_url);
    let host = TestWorker::start("s3-host").await;
    a.assert_running();
    b.assert_running();
    let text: String = (0..2_000).map(|i| format!("record {i:05}\n")).collect();
    let on = |mut p: crate::support::temporal::Probe, queue: &str| {
        p.task_queue = Some(queue.to_owned());
        p
    };
    let out = host
        .probe(vec![
            on(
                probe(
                    "tool_output_limits.reduce",
                    json!({"tool_name": "cat", "run_id": "run-a", "tool_call_id": "c", "output": {"text": text},
                           "config": {"bands": [{"over": 1000, "action": {"type": "spill"}}]}}),
                ),
                &queue_a,
            ),
            on(
                probe(
                    "tool_output_limits.spill",
                    json!({"tool_name": "cat", "run_id": "run-b", "tool_call_id": "c", "output": {"text": text}}),
                ),
                &queue_b,
            ),
            on(
                probe(
                    "tool_output_limits.read_tool_result",
                    json!({"handle": "run-a/c.0", "offset": 1999, "limit": 5}),
                ),
                &queue_b,
            ),
            on(
                probe(
                    "tool_output_limits.read_tool_result",
                    json!({"handle": "run-b/c.0", "pattern": "01234"}),
                ),
                &queue_a,
            ),
        ])
        .await;
    assert_eq!(
        out[0]
            .ok
            .as_ref()
            .map(|r| &r["metadata"]["overflow_handle"]),
        Some(&json!("run-a/c.0")),
        "{:?}: {}",
        out[0].error_type,
        out[0].message
    );
    assert_eq!(
        out[1].ok.as_ref().map(|r| &r["handle"]),
        Some(&json!("run-b/c.0"))
    );
    assert_eq!(
        out[2].ok,
        Some(json!(
            "[handle 'run-a/c.0': 2,000 matching line(s); showing 1]\nrecord 01999"
        ))
    );
    assert_eq!(
        out[3].ok,
        Some(json!(
            "[handle 'run-b/c.0': 1 matching line(s); showing 1]\nrecord 01234"
        ))
    );

    // Worker A's Prometheus endpoint serves the SDK's metrics and Overspill's own.
    let metrics = http_get(&metrics_addr, "/metrics");
    for needle in [
        "overspill_spills",
        "overspill_spilled_bytes",
        "overspill_reductions{kind=\"spilled\"",
        "temporal_activity_execution_latency",
    ] {
        assert!(
            metrics.contains(needle),
            "{needle} missing from:\n{metrics}"
        );
    }
}

fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream =
        std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap_or_else(|e| panic!("write: {e}"));
    let mut body = String::new();
    let _ = stream.read_to_string(&mut body);
    body
}

/// SIGTERM stops a serving worker gracefully: it exits 0 within the graceful period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_shuts_the_worker_down_gracefully() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let task_queue = unique("sigterm");
    let mut worker = WorkerProcess::start(&task_queue, &format!("file://{}", dir.path().display()));
    // It serves its queue: an activity sent there completes.
    let host = TestWorker::start("sigterm-host").await;
    let mut reduce = probe(
        "tool_output_limits.reduce",
        json!({"tool_name": "cat", "tool_call_id": "c", "output": {"text": "hi"}}),
    );
    reduce.task_queue = Some(task_queue);
    let out = host.probe(vec![reduce]).await;
    assert!(out[0].ok.is_some(), "{:?}", out[0]);
    worker.assert_running();
    worker.terminate();
    let status = worker.exited(Duration::from_secs(15)).await;
    assert!(status.success(), "{status}");
}

/// An invalid `--limits` file stops `overspill worker` before it connects, naming the field.
#[test]
fn invalid_limits_file_fails_fast() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let limits = dir.path().join("limits.json");
    std::fs::write(
        &limits,
        r#"{"bands":[{"over":-1,"action":{"type":"truncate"}}]}"#,
    )
    .unwrap_or_else(|e| panic!("write: {e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_overspill"))
        .args(["worker", "--address", "127.0.0.1:1", "--limits"])
        .arg(&limits)
        .output()
        .unwrap_or_else(|e| panic!("run: {e}"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bands[0].over"), "{stderr}");
    assert!(
        stderr.contains("Band.over must be non-negative."),
        "{stderr}"
    );
}

/// A worker refuses to start on a store or External Storage bucket it cannot use, naming it and
/// the flag to fix, before it connects to Temporal; `--skip-store-check` starts it anyway (here
/// it then fails to connect to a port nothing listens on).
#[test]
fn a_worker_refuses_to_start_on_a_store_it_cannot_use() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let local = format!("file://{}", dir.path().display());
    let missing = format!("s3://nosuchbucket-{}", std::process::id());
    let spills = crate::store::base_url();
    let worker = |args: &[&str], secret: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_overspill"));
        command
            .args(["worker", "--address", "127.0.0.1:1"])
            .args(args);
        if let Some(secret) = secret {
            command.env("AWS_SECRET_ACCESS_KEY", secret);
        }
        let out = command.output().unwrap_or_else(|e| panic!("run: {e}"));
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let fix =
        "Fix --store (OVERSPILL_STORE) or its credentials (AWS_*), or pass --skip-store-check";
    let no_bucket = worker(&["--store", &missing], None);
    assert!(
        no_bucket.contains(&format!("the store {missing} cannot be used: ")),
        "{no_bucket}"
    );
    assert!(no_bucket.contains(fix), "{no_bucket}");
    let bad_secret = worker(&["--store", &spills], Some("not-the-secret"));
    assert!(
        bad_secret.contains(&format!("the store {spills} cannot be used: ")),
        "{bad_secret}"
    );
    assert!(bad_secret.contains(fix), "{bad_secret}");
    let no_es = worker(&["--store", &local, "--external-storage", &missing], None);
    assert!(
        no_es.contains(
            "Fix --external-storage (OVERSPILL_EXTERNAL_STORAGE), or pass --skip-store-check"
        ),
        "{no_es}"
    );
    let skipped = worker(&["--store", &missing, "--skip-store-check"], None);
    assert!(
        skipped.contains("Temporal at http://127.0.0.1:1/ refused the connection"),
        "{skipped}"
    );
}

/// The stdout of `overspill dev --exit-after-demo` with `args` and `env`, a fresh `file://`
/// store, and an exit status checked to be 0.
fn run_dev(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> String {
    let store = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_overspill"))
        .args(["dev", "--exit-after-demo"])
        .args(args)
        .args(["--store", &format!("file://{}", store.path().display())])
        .envs(env.iter().copied())
        .env("RUST_LOG", "warn")
        .output()
        .unwrap_or_else(|e| panic!("run: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `overspill dev` against the running server: the demo prints the model-visible text of a
/// multi-megabyte tool output and a read-back page.
#[test]
fn overspill_dev_runs_the_demo() {
    let address = temporal_address();
    let stdout = run_dev(
        &["--task-queue", &unique("dev")],
        &[("TEMPORAL_ADDRESS", address.as_ref())],
    );
    assert!(
        stdout.contains("[Tool output too large (2,750,000 chars); stored to handle '"),
        "{stdout}"
    );
    assert!(
        stdout.contains(": 50 matching line(s); showing 5]\nERROR step      996:"),
        "{stdout}"
    );
    // Not on PATH: the command to page through the spill is this binary's path.
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_overspill")).expect("the binary");
    let page_through = format!("Page through it yourself: {} read '", exe.display());
    assert!(stdout.contains(&page_through), "{stdout}");
}

/// `overspill dev` where no server answers starts one through `deploy/temporal.sh`, runs the
/// demo against it, and stops it again: nothing answers on its port afterwards.
#[test]
fn overspill_dev_starts_and_stops_its_own_server() {
    let free_port = || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0");
        let addr = listener.and_then(|l| l.local_addr());
        addr.unwrap_or_else(|e| panic!("a free port: {e}")).port()
    };
    let (port, ui_port) = (free_port(), free_port());
    // Its own deploy dir (the server's state and env file), with the project's venv in it.
    let deploy = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let venv = crate::root().join(".deploy/venv");
    std::os::unix::fs::symlink(&venv, deploy.path().join("venv"))
        .unwrap_or_else(|e| panic!("{}: {e} (run deploy/test.sh first)", venv.display()));
    let ui_port = ui_port.to_string();
    // The binary on PATH, as an installed one is: the command it prints is `overspill`.
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_overspill"));
    let now = std::env::var_os("PATH").unwrap_or_default();
    let dirs = (exe.parent().map(std::path::Path::to_path_buf).into_iter())
        .chain(std::env::split_paths(&now));
    let path = std::env::join_paths(dirs).unwrap_or_else(|e| panic!("PATH: {e}"));
    let stdout = run_dev(
        &[
            "--demo-lines",
            "2000",
            "--address",
            &format!("127.0.0.1:{port}"),
        ],
        &[
            ("OVERSPILL_DEPLOY_DIR", deploy.path().as_os_str()),
            ("TEMPORAL_UI_PORT", ui_port.as_ref()),
            ("PATH", path.as_os_str()),
        ],
    );
    assert!(stdout.contains("no Temporal server at"), "{stdout}");
    assert!(stdout.contains("stored to handle '"), "{stdout}");
    assert!(
        stdout.contains("Page through it yourself: overspill read '"),
        "{stdout}"
    );
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    assert!(
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_err(),
        "the dev server still answers on {port}"
    );
}

/// No secret reaches the worker's output: passwords in the store and model URLs, the model API
/// key and the S3 secret, planted in its flags and environment, appear nowhere in its logs (all
/// of them at debug level), while a summary fails against a refused model endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_logs_never_show_planted_secrets() {
    use overspill_workflows::ReduceToolOutput;

    const SECRETS: [&str; 4] = [
        "store-url-secret",
        "model-url-secret",
        "sk-model-key-secret",
        "aws-secret-key-secret",
    ];
    let log = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("log file: {e}"));
    let output = || {
        log.reopen()
            .unwrap_or_else(|e| panic!("reopen the log: {e}"))
    };
    let task_queue = unique("secrets");
    let mut worker = WorkerProcess(
        Command::new(env!("CARGO_BIN_EXE_overspill"))
            .args(["worker", "--graceful-shutdown-secs", "1"])
            .args(["--task-queue", &task_queue])
            .args(["--store", "s3://ops:store-url-secret@spills/secrets"])
            .args(["--model-url", "http://ops:model-url-secret@127.0.0.1:9/v1"])
            .args(["--model-api-key", "sk-model-key-secret", "--model", "m"])
            .args(["--model-max-retries", "0"])
            // Its store answers nowhere: the start-up check would refuse it.
            .arg("--skip-store-check")
            .env("TEMPORAL_ADDRESS", temporal_address())
            .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_ACCESS_KEY_ID", "key-id")
            .env("AWS_SECRET_ACCESS_KEY", "aws-secret-key-secret")
            .env("RUST_LOG", "debug")
            .stdout(output())
            .stderr(output())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn overspill worker: {e}")),
    );
    let client = connect().await;
    let request: overspill::api::ReduceRequest = serde_json::from_value(json!({
        "tool_name": "cat", "output": {"text": "x".repeat(500)},
        "config": {"bands": [{"over": 100, "action": {"type": "summarize",
            "then": {"type": "truncate", "max_chars": 50}}}]},
    }))
    .unwrap_or_else(|e| panic!("request: {e}"));
    let reduced = start(
        &client,
        ReduceToolOutput::run,
        request,
        &task_queue,
        &unique("secrets-wf"),
        Duration::from_secs(90),
    )
    .await
    .get_result(WorkflowGetResultOptions::default())
    .await
    .unwrap_or_else(|e| panic!("ReduceToolOutput: {e:?}"));
    assert_eq!(reduced.kind, overspill::limits::ReductionKind::Truncated);
    worker.assert_running();
    worker.kill();

    let logs = std::fs::read_to_string(log.path()).unwrap_or_else(|e| panic!("read: {e}"));
    assert!(logs.contains("overspill worker started"), "{logs}");
    for secret in SECRETS {
        let leaks: Vec<&str> = logs.lines().filter(|l| l.contains(secret)).collect();
        assert!(leaks.is_empty(), "{secret} in the logs: {leaks:#?}");
    }
}
