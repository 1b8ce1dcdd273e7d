//! The harness for tests against a real Temporal dev server: its address, unique names, an
//! in-process worker per test ([`TestWorker`]), and the probe workflow that calls activities by
//! name and reports how they ended.
//!
//! The server comes from `deploy/temporal.sh` (`TEMPORAL_ADDRESS` from `.deploy/temporal.env`);
//! when `TEMPORAL_ADDRESS` is unset the harness runs that script itself. Every test runs its own
//! in-process worker on its own task queue, so the tests run concurrently against one server.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use overspill::activities::OverspillActivities;
use overspill::store::Store;
use overspill::worker::{Connect, WorkerSettings};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use temporalio_client::{Client, WorkflowGetResultOptions, WorkflowStartOptions};
use temporalio_common::UntypedActivity;
use temporalio_common::data_converters::RawValue;
use temporalio_common::error::ApplicationFailure;
use temporalio_common::protos::temporal::api::common::v1::Payload;
use temporalio_common::protos::temporal::api::failure::v1::failure::FailureInfo;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::activities::ActivityError;
use temporalio_sdk::interceptors::{
    ActivityInboundInterceptor, ExecuteActivityInput, ExecuteActivityOutput, Next,
};
use temporalio_sdk::{WorkflowContext, WorkflowResult};

/// `TEMPORAL_ADDRESS`, starting the dev server with `deploy/temporal.sh` if it is unset.
pub(crate) fn temporal_address() -> String {
    if let Ok(address) = std::env::var("TEMPORAL_ADDRESS") {
        return address;
    }
    static STARTED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    STARTED
        .get_or_init(|| {
            let root = crate::root().display();
            let status = std::process::Command::new(format!("{root}/deploy/temporal.sh"))
                .status()
                .expect("run deploy/temporal.sh");
            assert!(status.success(), "deploy/temporal.sh failed");
            let env = std::fs::read_to_string(format!("{root}/.deploy/temporal.env"))
                .expect("read .deploy/temporal.env");
            env.lines()
                .find_map(|l| l.strip_prefix("export TEMPORAL_ADDRESS="))
                .expect("TEMPORAL_ADDRESS in temporal.env")
                .trim()
                .to_owned()
        })
        .clone()
}

/// A unique name for this process and purpose.
pub(crate) fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{what}-{}-{nanos:08x}", std::process::id())
}

/// Probe results: what an activity call returned or how it failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Outcome {
    pub(crate) ok: Option<Value>,
    pub(crate) ok_raw: Option<Raw>,
    pub(crate) error_type: Option<String>,
    pub(crate) non_retryable: bool,
    pub(crate) message: String,
    pub(crate) retry_state: i32,
}

/// One activity call by name with a `json/plain` input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Probe {
    pub(crate) activity: String,
    pub(crate) input: Value,
    /// Another task queue to send the activity to (default: the workflow's).
    #[serde(default)]
    pub(crate) task_queue: Option<String>,
    /// Send these bytes instead of `input` as JSON.
    #[serde(default)]
    pub(crate) raw: Option<Raw>,
}

/// A payload as bytes with its encoding metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Raw {
    pub(crate) encoding: String,
    pub(crate) message_type: Option<String>,
    pub(crate) data: Vec<u8>,
}

/// Calls activities by name (as another language would) and reports outcomes as data.
#[workflow]
#[derive(Default)]
pub(crate) struct ProbeWorkflow;

#[workflow_methods]
impl ProbeWorkflow {
    #[run(name = "OverspillProbe")]
    pub(crate) async fn run(
        ctx: &mut WorkflowContext<Self>,
        probes: Vec<Probe>,
    ) -> WorkflowResult<Vec<Outcome>> {
        let mut outcomes = Vec::new();
        for probe in probes {
            let payload = match &probe.raw {
                Some(raw) => {
                    let mut metadata =
                        HashMap::from([("encoding".to_owned(), raw.encoding.as_bytes().to_vec())]);
                    if let Some(t) = &raw.message_type {
                        metadata.insert("messageType".to_owned(), t.as_bytes().to_vec());
                    }
                    Payload {
                        metadata,
                        data: raw.data.clone(),
                        external_payloads: vec![],
                    }
                }
                None => Payload {
                    metadata: HashMap::from([("encoding".to_owned(), b"json/plain".to_vec())]),
                    data: serde_json::to_vec(&probe.input).unwrap_or_default(),
                    external_payloads: vec![],
                },
            };
            let mut options = overspill_workflows::activity_options();
            options.task_queue = probe.task_queue;
            let result = ctx
                .execute_activity(
                    UntypedActivity::new(probe.activity),
                    RawValue::new(vec![payload]),
                    options,
                )
                .await;
            outcomes.push(match result {
                Ok(raw) => {
                    let first = raw.payloads.first();
                    let text = |key: &str| {
                        first
                            .and_then(|p| p.metadata.get(key))
                            .map(|v| String::from_utf8_lossy(v).into_owned())
                    };
                    Outcome {
                        ok: first.and_then(|p| serde_json::from_slice(&p.data).ok()),
                        ok_raw: Some(Raw {
                            encoding: text("encoding").unwrap_or_default(),
                            message_type: text("messageType"),
                            data: first.map(|p| p.data.clone()).unwrap_or_default(),
                        }),
                        ..Outcome::default()
                    }
                }
                Err(e) => {
                    let mut outcome = Outcome {
                        message: e.to_string(),
                        ..Outcome::default()
                    };
                    if let Some(failure) = e.failure() {
                        if let Some(FailureInfo::ActivityFailureInfo(info)) = &failure.failure_info
                        {
                            outcome.retry_state = info.retry_state;
                        }
                        if let Some(cause) = &failure.cause {
                            outcome.message = cause.message.clone();
                            if let Some(FailureInfo::ApplicationFailureInfo(info)) =
                                &cause.failure_info
                            {
                                outcome.error_type = Some(info.r#type.clone());
                                outcome.non_retryable = info.non_retryable;
                            }
                        }
                    }
                    outcome
                }
            });
        }
        Ok(outcomes)
    }
}

/// Fails the first attempt of a spill for tool `flaky` *after* the write succeeded, as a worker
/// crash right after the write would.
struct FailAfterWrite;

impl ActivityInboundInterceptor for FailAfterWrite {
    fn execute_activity<'a>(
        &'a self,
        input: ExecuteActivityInput,
        next: Next<'a, ExecuteActivityInput, ExecuteActivityOutput<'a>>,
    ) -> ExecuteActivityOutput<'a> {
        let info = input.activity_info();
        let inject = info.activity_type == overspill::activities::SPILL
            && info.attempt == 1
            && info
                .workflow_id
                .as_deref()
                .is_some_and(|id| id.starts_with("flaky-"));
        Box::pin(async move {
            let out = next.run(input).await;
            if inject && out.is_ok() {
                return Err(ActivityError::application(ApplicationFailure::new(
                    "injected failure after the write",
                )));
            }
            out
        })
    }
}

/// A worker on its own task queue over a `file://` store in a temp dir, serving the activities,
/// the Rust workflows, the example tools and the probe workflow.
pub(crate) struct TestWorker {
    pub(crate) client: Client,
    pub(crate) task_queue: String,
    pub(crate) store: Arc<Store>,
    _dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestWorker {
    pub(crate) async fn start(name: &str) -> Self {
        Self::start_with(name, |_| {}).await
    }

    /// Like [`Self::start`], with `extra` registrations.
    pub(crate) async fn start_with(
        name: &str,
        extra: impl FnOnce(&mut temporalio_sdk::WorkerOptions) + Send + 'static,
    ) -> Self {
        Self::start_configured(name, |a| a, extra).await
    }

    /// Like [`Self::start_with`], with the activities configured by `configure`.
    pub(crate) async fn start_configured(
        name: &str,
        configure: impl FnOnce(OverspillActivities) -> OverspillActivities + Send + 'static,
        extra: impl FnOnce(&mut temporalio_sdk::WorkerOptions) + Send + 'static,
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("file://{}", dir.path().display());
        let store = Arc::new(Store::open(Some(&url)).expect("open store"));
        let task_queue = unique(name);
        let address = temporal_address();
        let client = Connect::new(address.clone())
            .client()
            .await
            .expect("connect to Temporal");
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let thread_store = store.clone();
        let thread_queue = task_queue.clone();
        // The worker is not Send: it runs on its own thread and runtime.
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let runtime = overspill::worker::runtime(None).expect("sdk runtime");
                let client = Connect::new(address).client().await.expect("connect");
                let activities = configure(OverspillActivities::new(thread_store));
                let examples = activities.clone();
                let settings = WorkerSettings {
                    task_queue: thread_queue,
                    graceful_shutdown: Duration::from_secs(1),
                    ..WorkerSettings::default()
                };
                let mut worker = settings
                    .build(&runtime, client, activities, |o| {
                        overspill_workflows::register(o)?;
                        overspill_cli::example::register_examples(o, examples)?;
                        o.activity_inbound_interceptor(FailAfterWrite);
                        o.register_workflow::<ProbeWorkflow>()
                            .map_err(overspill::worker::WorkerError::setup)?;
                        extra(o);
                        Ok(())
                    })
                    .expect("build worker");
                let _ = ready_tx.send(());
                let stop = async {
                    let _ = stop_rx.await;
                };
                overspill::worker::run_until(&mut worker, stop)
                    .await
                    .expect("worker run");
            });
        });
        let _ = ready_rx.recv_timeout(Duration::from_secs(30));
        Self {
            client,
            task_queue,
            store,
            _dir: dir,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Start `W` with `input` under `workflow_id` and wait for its result.
    pub(crate) async fn run<W, I, O>(
        &self,
        run: W,
        input: I,
        workflow_id: &str,
    ) -> Result<O, String>
    where
        W: temporalio_common::HasWorkflowDefinition<Input = I, Output = O>,
        I: temporalio_common::data_converters::TemporalSerializable + Send + 'static,
        O: temporalio_common::data_converters::TemporalDeserializable + Send + 'static,
    {
        let handle = self
            .client
            .start_workflow(
                run,
                input,
                WorkflowStartOptions::new(self.task_queue.clone(), workflow_id.to_owned())
                    .execution_timeout(Duration::from_secs(120))
                    .build(),
            )
            .await
            .map_err(|e| format!("start: {e}"))?;
        handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .map_err(|e| format!("{e:?}"))
    }

    pub(crate) async fn probe(&self, probes: Vec<Probe>) -> Vec<Outcome> {
        let id = unique("probe");
        self.run(ProbeWorkflow::run, probes, &id)
            .await
            .expect("probe workflow")
    }
}

impl Drop for TestWorker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub(crate) fn probe(activity: &str, input: Value) -> Probe {
    Probe {
        activity: activity.into(),
        input,
        task_queue: None,
        raw: None,
    }
}

/// Let `activity` run for `after` of workflow time, then cancel it and wait for it: how it ended
/// (`cancelled`, `failed: …`, `completed`, or `finished first: …` if it ended before the timer).
pub(crate) async fn cancel_after<W, T>(
    ctx: &WorkflowContext<W>,
    activity: impl temporalio_sdk::CancellableFuture<
        Output = Result<T, temporalio_common::error::ActivityExecutionError>,
    >,
    after: Duration,
) -> String {
    use futures::future::{Either, select};
    use temporalio_common::error::ActivityExecutionError;

    let activity = Box::pin(activity);
    let timer = Box::pin(ctx.timer(after));
    let activity = match select(activity, timer).await {
        Either::Left((done, _)) => return format!("finished first: {:?}", done.err()),
        Either::Right((_, activity)) => activity,
    };
    activity.cancel();
    match activity.await {
        Err(ActivityExecutionError::Cancelled(_)) => "cancelled".into(),
        Err(e) => format!("failed: {e}"),
        Ok(_) => "completed".into(),
    }
}
