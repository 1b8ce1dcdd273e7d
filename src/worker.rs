//! The Temporal side of the worker: connection, task queue, concurrency, metrics and graceful
//! shutdown. `overspill worker` and `overspill dev` are thin CLIs over this module.
//!
//! ```no_run
//! # async fn run() -> Result<(), overspill::worker::WorkerError> {
//! use std::sync::Arc;
//! use overspill::activities::OverspillActivities;
//! use overspill::worker::{Connect, WorkerSettings};
//!
//! let runtime = overspill::worker::runtime(None)?;
//! let client = Connect::new("127.0.0.1:7233").client().await?;
//! let store = Arc::new(overspill::store::Store::open(Some("memory://")).map_err(overspill::worker::WorkerError::setup)?);
//! let acts = OverspillActivities::new(store).with_metrics(runtime.metrics.clone());
//! let mut worker = WorkerSettings::default().build(&runtime, client, acts, |_| Ok(()))?;
//! worker.run().await.map_err(overspill::worker::WorkerError::setup)?;
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use temporalio_client::{
    Client, ClientOptions, ClientTlsOptions, Connection, ConnectionOptions, GrpcCompression,
    TlsOptions,
};
use temporalio_common::telemetry::metrics::CoreMeter;
use temporalio_common::telemetry::{
    PrometheusExporterOptions, TelemetryOptions, start_prometheus_metric_exporter,
};
use temporalio_sdk::runtime::worker_tuner::{FixedSizeSlotSupplier, TunerHolder};
use temporalio_sdk::runtime::{AutoscalingOptions, PollerBehavior, RuntimeOptions};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use crate::activities::{DEFAULT_TASK_QUEUE, LogFailures, Metrics, OverspillActivities};
use crate::external_storage::ExternalStorageCodec;

/// Why the worker could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The Temporal server could not be reached or refused the connection:
    /// `Temporal at https://… answered HTTP 401 Unauthorized: check --api-key (TEMPORAL_API_KEY)`.
    #[error("Temporal at {address} {problem}")]
    Connect {
        /// The address tried.
        address: String,
        /// What went wrong, in the server's or TLS's words, and the setting that fixes it.
        problem: String,
        /// The error as the SDK reported it.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A setting, file or the SDK refused the configuration.
    #[error("{0}")]
    Setup(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl WorkerError {
    /// Wrap any setup error.
    pub fn setup(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Setup(e.into())
    }
}

/// How to reach the Temporal server: the flags of every command that talks to it. `Debug` and
/// `Display` never show the API key or a password in the address.
#[derive(Clone, Default, derive_more::Debug)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Connect {
    /// Temporal frontend, `host:port` or URL.
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "TEMPORAL_ADDRESS", default_value = "127.0.0.1:7233")
    )]
    #[debug("{:?}", self.to_string())]
    pub address: String,
    /// Temporal namespace.
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "TEMPORAL_NAMESPACE", default_value = "default")
    )]
    pub namespace: Option<String>,
    /// API key (Temporal Cloud); implies TLS.
    #[cfg_attr(
        feature = "clap",
        arg(
            id = "temporal_api_key",
            long = "api-key",
            env = "TEMPORAL_API_KEY",
            hide_env_values = true
        )
    )]
    #[debug("{:?}", api_key.as_ref().map(|_| crate::redact::PLACEHOLDER))]
    pub api_key: Option<String>,
    /// mTLS client certificate (PEM).
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "TEMPORAL_TLS_CLIENT_CERT_PATH", value_name = "FILE")
    )]
    pub tls_cert: Option<PathBuf>,
    /// mTLS client key (PEM).
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "TEMPORAL_TLS_CLIENT_KEY_PATH", value_name = "FILE")
    )]
    pub tls_key: Option<PathBuf>,
    /// Server CA certificate (PEM); default: the system roots.
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "TEMPORAL_TLS_SERVER_CA_CERT_PATH", value_name = "FILE")
    )]
    pub tls_ca: Option<PathBuf>,
    /// A custom identity (default `{pid}@{hostname}`).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub identity: Option<String>,
    /// gRPC compression to Temporal: `auto` is gzip except to a loopback address.
    #[cfg_attr(
        feature = "clap",
        arg(
            long = "grpc-compression",
            value_name = "GRPC_COMPRESSION",
            env = "OVERSPILL_GRPC_COMPRESSION",
            value_enum,
            default_value_t = Compression::Auto
        )
    )]
    pub compression: Compression,
}

/// gRPC compression of the worker's calls to Temporal (`--grpc-compression`): gzip costs CPU
/// that saves nothing on loopback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Compression {
    /// Gzip, unless the server is on this machine (a loopback address or `localhost`).
    #[default]
    Auto,
    /// Gzip requests and accept gzip replies (the SDK's default; saves bandwidth to a remote
    /// server, Temporal Cloud included).
    Gzip,
    /// Neither.
    None,
}

impl Compression {
    /// The compression to use for a server at `url`.
    pub fn resolve(self, url: &url::Url) -> GrpcCompression {
        let local = match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        };
        match self {
            Self::Auto if local => GrpcCompression::None,
            Self::Auto | Self::Gzip => GrpcCompression::Gzip,
            Self::None => GrpcCompression::None,
        }
    }
}

/// The server's URL, any password in it redacted.
impl std::fmt::Display for Connect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.url() {
            Ok(url) => f.write_str(&crate::redact::url(url.as_str())),
            Err(_) => f.write_str("[unparsable address]"),
        }
    }
}

impl Connect {
    /// Connect to `address` with no TLS.
    pub fn new(address: impl Into<String>) -> Self {
        Self {
            address: address.into(),
            ..Self::default()
        }
    }

    fn tls(&self) -> bool {
        self.api_key.is_some()
            || self.tls_cert.is_some()
            || self.tls_ca.is_some()
            || self.address.starts_with("https://")
    }

    /// The server URL.
    pub fn url(&self) -> Result<url::Url, WorkerError> {
        let address = if self.address.contains("://") {
            self.address.clone()
        } else if self.tls() {
            format!("https://{}", self.address)
        } else {
            format!("http://{}", self.address)
        };
        url::Url::parse(&address).map_err(|e| WorkerError::Connect {
            address: "[unparsable address]".to_owned(),
            problem: format!("is not a URL ({e}): check --address (TEMPORAL_ADDRESS)"),
            source: Box::new(e),
        })
    }

    /// Open a client and check that the namespace exists, within [`CONNECT_TIMEOUT`] each.
    pub async fn client(&self) -> Result<Client, WorkerError> {
        let url = self.url()?;
        let options = ConnectionOptions::new(url.clone())
            .grpc_compression(self.compression.resolve(&url))
            .maybe_tls_options(self.tls().then(|| self.tls_options()).transpose()?)
            .maybe_api_key(self.api_key.clone())
            .maybe_identity(self.identity.clone())
            .connect_timeout(CONNECT_TIMEOUT)
            .build();
        let connection = self.bounded(Connection::connect(options)).await?;
        let namespace = self.namespace.clone().unwrap_or_else(|| "default".into());
        let client = Client::new(connection, ClientOptions::new(namespace).build())
            .map_err(WorkerError::setup)?;
        self.check_namespace(&client).await?;
        Ok(client)
    }

    /// The TLS settings: the server's CA and the client certificate, read from their files.
    fn tls_options(&self) -> Result<TlsOptions, WorkerError> {
        let read = |p: &PathBuf| {
            std::fs::read(p)
                .map_err(|e| WorkerError::setup(format!("cannot read {}: {e}", p.display())))
        };
        let client_tls_options = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(
                ClientTlsOptions::builder()
                    .client_cert(read(cert)?)
                    .client_private_key(read(key)?)
                    .build(),
            ),
            (None, None) => None,
            _ => {
                let both = "--tls-cert and --tls-key must be given together";
                return Err(WorkerError::setup(both));
            }
        };
        Ok(TlsOptions::builder()
            .maybe_server_root_ca_cert(self.tls_ca.as_ref().map(read).transpose()?)
            .maybe_client_tls_options(client_tls_options)
            .build())
    }

    /// Whether `client`'s namespace exists and answers, within [`CONNECT_TIMEOUT`]: an unknown
    /// one names `--namespace`.
    pub async fn check_namespace(&self, client: &Client) -> Result<(), WorkerError> {
        use temporalio_client::grpc::WorkflowService as _;
        use temporalio_client::tonic::{Code, IntoRequest as _};
        use temporalio_common::protos::temporal::api::workflowservice::v1::DescribeNamespaceRequest;
        let namespace = client.options().namespace.clone();
        let request = DescribeNamespaceRequest {
            namespace: namespace.clone(),
            ..DescribeNamespaceRequest::default()
        };
        let mut service = client.clone();
        let call = service.describe_namespace(request.into_request());
        let mut result = self.bounded(call).await.map(drop);
        if let Err(WorkerError::Connect {
            problem, source, ..
        }) = &mut result
            && let Some(status) = source.downcast_ref::<temporalio_client::tonic::Status>()
            && status.code() == Code::NotFound
        {
            *problem = format!(
                "has no namespace {namespace:?} ({}): check --namespace (TEMPORAL_NAMESPACE)",
                status.message()
            );
        }
        result
    }

    /// `call` to this server within [`CONNECT_TIMEOUT`], its failure explained.
    async fn bounded<T, E>(
        &self,
        call: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, WorkerError>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let (problem, source): (_, Box<dyn std::error::Error + Send + Sync>) =
            match tokio::time::timeout(CONNECT_TIMEOUT, call).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) => (
                    crate::diagnose::temporal(&e, self.tls_cert.is_some()),
                    Box::new(e),
                ),
                Err(elapsed) => (
                    format!(
                        "did not answer within {CONNECT_TIMEOUT:?}: check --address \
                         (TEMPORAL_ADDRESS), and that the server and any proxy before it run"
                    ),
                    Box::new(elapsed),
                ),
            };
        Err(WorkerError::Connect {
            address: self.to_string(),
            problem,
            source,
        })
    }
}

/// How long connecting to Temporal, and each check of it, may take.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The SDK runtime with Overspill's metrics (exported with the SDK's on one Prometheus endpoint).
pub struct WorkerRuntime {
    /// The SDK runtime.
    pub runtime: Runtime,
    /// Overspill's counters (no-op without a metrics address).
    pub metrics: Metrics,
    /// Where the Prometheus endpoint (with `/healthz` and `/readyz`) listens, if any.
    pub metrics_addr: Option<SocketAddr>,
    /// The Prometheus meter, if any, for more counters.
    pub meter: Option<Arc<dyn CoreMeter>>,
    /// What `/readyz` answers: not ready until a check is installed.
    pub readiness: crate::probes::Readiness,
}

impl std::ops::Deref for WorkerRuntime {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        &self.runtime
    }
}

/// A runtime on the current tokio runtime; with `metrics_addr`, an HTTP endpoint there serving
/// the SDK's metrics and Overspill's (`/metrics`) and the probes (`/healthz`, `/readyz`; see
/// [`crate::probes`]).
pub fn runtime(metrics_addr: Option<SocketAddr>) -> Result<WorkerRuntime, WorkerError> {
    let readiness = crate::probes::Readiness::default();
    let serve = |addr| -> Result<_, Box<dyn std::error::Error + Send + Sync>> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let bound = listener.local_addr()?;
        // The SDK's exporter serves `/metrics` alone: it listens on loopback, behind ours.
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let options = PrometheusExporterOptions::builder().socket_addr(loopback);
        let server = start_prometheus_metric_exporter(options.build())?;
        crate::probes::serve(listener, server.bound_addr, readiness.clone())?;
        let meter: Arc<dyn CoreMeter> = server.meter;
        Ok((bound, meter))
    };
    let (metrics_addr, meter) = match metrics_addr {
        Some(addr) => serve(addr)
            .map(|(bound, meter)| (Some(bound), Some(meter)))
            .map_err(|e| WorkerError::setup(format!("cannot serve metrics on {addr}: {e}")))?,
        None => (None, None),
    };
    let telemetry = TelemetryOptions::builder().maybe_metrics(meter.clone());
    let options = RuntimeOptions::builder()
        .telemetry_options(telemetry.build())
        .build()
        .map_err(WorkerError::setup)?;
    Ok(WorkerRuntime {
        runtime: Runtime::from_current_tokio(options).map_err(WorkerError::setup)?,
        metrics: meter.as_ref().map_or_else(Metrics::default, Metrics::new),
        metrics_addr,
        meter,
        readiness,
    })
}

/// What one worker serves.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// The task queue (default `tool-output-limits`).
    pub task_queue: String,
    /// Activity tasks run at once (default 100).
    pub max_concurrent_activities: usize,
    /// Workflow tasks run at once (default 100).
    pub max_concurrent_workflow_tasks: usize,
    /// How long a shutdown waits for running activities before cancelling them.
    pub graceful_shutdown: std::time::Duration,
    /// Concurrent activity task polls (default: the SDK's, see [`Pollers`]).
    pub activity_pollers: Option<Pollers>,
    /// Concurrent workflow task polls (default: the SDK's, see [`Pollers`]).
    pub workflow_pollers: Option<Pollers>,
}

/// How many task polls a worker keeps open at once (`--activity-pollers`, `--workflow-pollers`;
/// without a setting the SDK decides: up to 5, or autoscaling where the namespace offers it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pollers {
    /// At most this many polls (at least 1; 2 for workflow tasks).
    Fixed(usize),
    /// As many as the server's feedback asks for, from 1 to 100.
    Auto,
}

impl std::str::FromStr for Pollers {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.parse::<usize>() {
            _ if s.eq_ignore_ascii_case("auto") => Ok(Self::Auto),
            Ok(n) if n > 0 => Ok(Self::Fixed(n)),
            _ => Err(format!(
                "{s:?}: expected `auto` or a number of polls from 1"
            )),
        }
    }
}

impl Pollers {
    /// The SDK's setting, with at least `minimum` polls.
    fn behavior(self, minimum: usize) -> PollerBehavior {
        match self {
            Self::Fixed(n) => PollerBehavior::SimpleMaximum(n.max(minimum)),
            Self::Auto => PollerBehavior::Autoscaling(
                AutoscalingOptions::builder()
                    .minimum(minimum)
                    .maximum(100)
                    .initial(5)
                    .build(),
            ),
        }
    }
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            task_queue: DEFAULT_TASK_QUEUE.into(),
            max_concurrent_activities: 100,
            max_concurrent_workflow_tasks: 100,
            graceful_shutdown: std::time::Duration::from_secs(30),
            activity_pollers: None,
            workflow_pollers: None,
        }
    }
}

impl WorkerSettings {
    /// A worker serving `activities`; `extend` may register workflows or interceptors.
    ///
    /// The worker's data converter is the SDK's default with the External Storage codec over
    /// `activities`' storage (without one, a reference in a workflow task fails it with an error
    /// saying to configure `--external-storage`); every activity failure is logged at WARN.
    pub fn build(
        &self,
        runtime: &Runtime,
        mut client: Client,
        activities: OverspillActivities,
        extend: impl FnOnce(&mut WorkerOptions) -> Result<(), WorkerError>,
    ) -> Result<Worker, WorkerError> {
        let codec = ExternalStorageCodec::new(
            activities.external_storage().cloned(),
            client.options().namespace.clone(),
        );
        client.options_mut().data_converter = codec.into_data_converter();
        let workflow_slots = self.max_concurrent_workflow_tasks.max(2);
        let activity_slots = self.max_concurrent_activities.max(1);
        let tuner = TunerHolder::builder()
            .workflow_task_slot_supplier(FixedSizeSlotSupplier::new(workflow_slots))
            .activity_task_slot_supplier(FixedSizeSlotSupplier::new(activity_slots))
            .local_activity_task_slot_supplier(FixedSizeSlotSupplier::new(activity_slots))
            .nexus_task_slot_supplier(FixedSizeSlotSupplier::new(1))
            .build();
        let mut options = WorkerOptions::new(self.task_queue.clone())
            .tuner(tuner)
            .graceful_shutdown_period(self.graceful_shutdown)
            .maybe_activity_task_poller_behavior(self.activity_pollers.map(|p| p.behavior(1)))
            .maybe_workflow_task_poller_behavior(self.workflow_pollers.map(|p| p.behavior(2)))
            .register_activities(activities)
            .activity_inbound_interceptor(LogFailures)
            .build();
        extend(&mut options)?;
        Worker::new(runtime, client, options).map_err(WorkerError::setup)
    }
}

/// Run `worker` until it fails or `stop` resolves; then shut down gracefully (polls stop at once,
/// running activities get the graceful period).
pub async fn run_until(
    worker: &mut Worker,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), WorkerError> {
    use futures::future::{Either, select};
    let shutdown = worker.shutdown_handle();
    let run = std::pin::pin!(worker.run());
    let stop = std::pin::pin!(stop);
    let result = match select(run, stop).await {
        Either::Left((result, _)) => result,
        Either::Right(((), run)) => {
            tracing::info!("shutting down: finishing running activities");
            shutdown();
            run.await
        }
    };
    result.map_err(WorkerError::setup)
}

/// Resolves on SIGTERM or Ctrl-C (SIGINT).
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send {
    // The handlers are installed now, not on first poll: a SIGTERM that arrives while the
    // worker is still connecting must shut it down gracefully, not kill it.
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        signal(SignalKind::terminate())
            .ok()
            .zip(signal(SignalKind::interrupt()).ok())
    };
    async move {
        #[cfg(unix)]
        if let Some((mut term, mut int)) = signals {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The worker's check: `connect`'s namespace answers `client`, and `store` answers a read of a
/// missing object as missing (its credentials, bucket and endpoint work).
pub fn readiness_check(
    connect: Connect,
    client: temporalio_client::Client,
    store: Arc<crate::store::Store>,
) -> crate::probes::Check {
    Box::new(move || {
        let (connect, client, store) = (connect.clone(), client.clone(), store.clone());
        Box::pin(async move {
            let temporal = crate::probes::bounded("Temporal", connect.check_namespace(&client));
            let store = crate::probes::bounded("store", async {
                match store.read("overspill-readyz").await {
                    Ok(_) | Err(crate::store::StoreError::NotFound { .. }) => Ok(()),
                    Err(e) => Err(e),
                }
            });
            match tokio::join!(temporal, store) {
                (Ok(()), Ok(())) => Ok(()),
                (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
                (Err(t), Err(s)) => Err(format!("{t}; {s}")),
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_never_shows_its_secrets() {
        let connect = Connect {
            address: "https://user:addr-secret@temporal.example:7233".into(),
            api_key: Some("tk-secret".into()),
            ..Connect::default()
        };
        let shown = format!("{connect:?} {connect}");
        assert!(
            !shown.contains("addr-secret") && !shown.contains("tk-secret"),
            "{shown}"
        );
        assert!(
            shown.contains("user:[redacted]@temporal.example:7233"),
            "{shown}"
        );
    }

    #[test]
    fn pollers_parse_and_keep_the_sdks_minimums() {
        assert_eq!("auto".parse(), Ok(Pollers::Auto));
        assert_eq!("AUTO".parse(), Ok(Pollers::Auto));
        assert_eq!("3".parse(), Ok(Pollers::Fixed(3)));
        assert!("0".parse::<Pollers>().is_err());
        assert!("many".parse::<Pollers>().is_err());
        assert_eq!(
            Pollers::Fixed(1).behavior(2),
            PollerBehavior::SimpleMaximum(2)
        );
        assert_eq!(
            Pollers::Fixed(4).behavior(1),
            PollerBehavior::SimpleMaximum(4)
        );
        let PollerBehavior::Autoscaling(auto) = Pollers::Auto.behavior(2) else {
            panic!("autoscaling");
        };
        assert_eq!((auto.minimum, auto.initial, auto.maximum), (2, 5, 100));
    }

    #[test]
    fn auto_compression_is_off_to_loopback_only() {
        use Compression::{Auto, Gzip, None as Off};
        let cases = [
            (Auto, "127.0.0.1:7233", GrpcCompression::None),
            (Auto, "localhost:7233", GrpcCompression::None),
            (Auto, "[::1]:7233", GrpcCompression::None),
            (Auto, "http://127.0.0.2:80", GrpcCompression::None),
            (Auto, "temporal.example.com:7233", GrpcCompression::Gzip),
            (Auto, "10.0.0.5:7233", GrpcCompression::Gzip),
            (Auto, "https://ns.tmprl.cloud:7233", GrpcCompression::Gzip),
            (Gzip, "127.0.0.1:7233", GrpcCompression::Gzip),
            (Off, "temporal.example.com:7233", GrpcCompression::None),
        ];
        for (setting, address, expected) in cases {
            let url = Connect::new(address).url().expect("a URL");
            assert_eq!(setting.resolve(&url), expected, "{setting:?} to {address}");
        }
    }
}
