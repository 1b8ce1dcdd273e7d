//! Chaos: three `overspill worker` processes on one task queue, over a SeaweedFS of this test's
//! own (never the shared one: it is restarted). Tool outputs from 10 B to 5 MB go through
//! `ReduceToolOutput`, those over 256 KiB by way of External Storage, while one worker is
//! SIGKILLed and restarted every few seconds (a crash loop: every task it takes is lost with it
//! and retried on another) and SeaweedFS is restarted once. Every workflow completes;
//! every output over the band is spilled to one object equal to it byte for byte; every handle
//! resolves; the store holds nothing else.
//!
//! `cargo test` runs 60 outputs over the same range of sizes (about 25 MB), to keep CI within a few
//! minutes on 2 cores; `OVERSPILL_CHAOS_OUTPUTS=300` runs the full set. The figures are printed
//! (`cargo test --test integration chaos -- --nocapture` shows them).

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt as _, TryStreamExt as _};
use overspill::api::ReduceResponse;
use overspill::external_storage::{ExternalStorage, ExternalStorageCodec, ExternalStorageSettings};
use overspill::limits::{ReductionKind, ToolOutput};
use overspill::store::Store;
use overspill_workflows::ReduceToolOutput;
use serde_json::json;
use temporalio_client::{WorkflowGetResultOptions, WorkflowStartOptions};
use temporalio_common::protos::temporal::api::enums::v1::EventType;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

use crate::processes::{WorkerProcess, connect};
use crate::support::temporal::unique;

/// The crash-looping worker is SIGKILLed (and restarted) this often.
const KILL_EVERY: Duration = Duration::from_secs(3);
/// SeaweedFS is restarted at this kill.
const RESTART_STORE_AT: u32 = 2;
/// Outputs over this many characters are spilled.
const BAND: usize = 1_000;
const BUCKET: &str = "chaos";

/// A `weed mini` of this test's own, on ports the kernel handed out, with its data in a temp dir
/// that outlives restarts. `weed mini` stops in ~4 s on SIGTERM, where the shared `weed server`
/// (`deploy/seaweedfs.sh` says why it is one) waits ~15 s for its filer's streams to close.
struct Seaweed {
    child: Child,
    args: Vec<String>,
    endpoint: String,
    _dir: tempfile::TempDir,
}

impl Seaweed {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let key = std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_else(|_| "overspill".into());
        let secret = std::env::var("AWS_SECRET_ACCESS_KEY").unwrap_or_else(|_| "x".into());
        let config = dir.path().join("s3.json");
        let identities = json!({"identities": [{"name": "chaos",
            "credentials": [{"accessKey": key, "secretKey": secret}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]});
        std::fs::write(&config, identities.to_string()).unwrap_or_else(|e| panic!("s3.json: {e}"));
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap_or_else(|e| panic!("data dir: {e}"));
        // Every port weed mini opens, named, so that none collides with the shared instance.
        let listeners: Vec<_> = (0..10)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("free ports: {e}"));
        let ports: Vec<u16> = listeners
            .iter()
            .map(|l| l.local_addr().map(|a| a.port()))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("free ports: {e}"));
        drop(listeners);
        let mut args = vec![
            "mini".to_owned(),
            format!("-dir={}", data.display()),
            "-ip=127.0.0.1".into(),
            "-ip.bind=127.0.0.1".into(),
            format!("-s3.config={}", config.display()),
            format!("-bucket={BUCKET}"),
            "-webdav=false".into(),
            "-admin.ui=false".into(),
            "-master.telemetry=false".into(),
            "-s3.port.iceberg=0".into(),
            "-s3.port.lance=0".into(),
            "-s3.autoCreateBucket=false".into(),
        ];
        let names = ["s3", "master", "volume", "filer", "admin"];
        for (i, name) in names.iter().enumerate() {
            args.push(format!("-{name}.port={}", ports[2 * i]));
            args.push(format!("-{name}.port.grpc={}", ports[2 * i + 1]));
        }
        let endpoint = format!("http://127.0.0.1:{}", ports[0]);
        let child = Self::spawn(&args);
        let seaweed = Self {
            child,
            args,
            endpoint,
            _dir: dir,
        };
        seaweed.ready().await;
        seaweed
    }

    fn spawn(args: &[String]) -> Child {
        // deploy/seaweedfs.sh installs weed into the project venv, which deploy/test.sh puts on
        // PATH.
        let venv = crate::root().join(".deploy/venv/bin/weed");
        let weed = if venv.exists() { venv } else { "weed".into() };
        Command::new(weed)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn weed (deploy/seaweedfs.sh installs it): {e}"))
    }

    /// `s3://chaos/{prefix}` on this server.
    fn url(&self, prefix: &str) -> String {
        format!(
            "s3://{BUCKET}/{prefix}?endpoint={}&allow_http=true",
            self.endpoint
        )
    }

    /// Wait until the bucket answers a listing.
    async fn ready(&self) {
        let store = Store::open(Some(&self.url("ready"))).unwrap_or_else(|e| panic!("{e}"));
        let started = Instant::now();
        while store.list(None).await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "SeaweedFS on {} never answered",
                self.endpoint
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stop it (SIGTERM) and start it again on the same ports and data.
    async fn restart(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        }
        let _ = self.child.wait();
        self.child = Self::spawn(&self.args);
        self.ready().await;
    }
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Output `i` of `n`: sizes spread evenly on a log scale from 10 B to 5 MB, distinct lines.
fn output(i: usize, n: usize) -> String {
    let exponent = i as f64 / (n.max(2) - 1) as f64;
    let size = (10.0 * 500_000f64.powf(exponent)).round() as usize;
    let mut text = String::with_capacity(size + 40);
    let mut line = 0;
    while text.len() < size {
        text.push_str(&format!("output {i:03} line {line:07}\n"));
        line += 1;
    }
    text.truncate(size);
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_lose_nothing_through_kills_and_a_store_restart() {
    let outputs: usize = std::env::var("OVERSPILL_CHAOS_OUTPUTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(60);
    let began = Instant::now();
    let mut seaweed = Seaweed::start().await;
    let spills_url = seaweed.url("spills");
    let es_url = seaweed.url("es");
    let task_queue = unique("chaos");
    let flags = ["--external-storage", es_url.as_str()];
    let spawn = || WorkerProcess::spawn(&task_queue, &spills_url, &flags);
    let mut workers = [spawn(), spawn(), spawn()];

    let storage = Arc::new(
        ExternalStorage::open(&es_url, ExternalStorageSettings::default())
            .unwrap_or_else(|e| panic!("external storage: {e}")),
    );
    let mut client = connect().await;
    client.options_mut().data_converter =
        ExternalStorageCodec::new(Some(storage), "default").into_data_converter();
    let texts: Vec<String> = (0..outputs).map(|i| output(i, outputs)).collect();
    let run = unique("chaos-run");
    let submit = futures::stream::iter(texts.iter().enumerate())
        .map(|(i, text)| {
            let client = client.clone();
            let request = json!({"tool_name": "cat", "run_id": run, "tool_call_id": format!("c{i}"),
                "output": {"text": text},
                "config": {"bands": [{"over": BAND, "action": {"type": "spill"}}]}});
            let options =
                WorkflowStartOptions::new(task_queue.clone(), unique(&format!("chaos-{i}")))
                    .execution_timeout(Duration::from_secs(900))
                    .build();
            async move {
                // The client's own upload to External Storage may meet a slow store: it retries.
                let mut attempt = 0;
                loop {
                    let request =
                        serde_json::from_value(request.clone()).map_err(|e| e.to_string())?;
                    match client
                        .start_workflow(ReduceToolOutput::run, request, options.clone())
                        .await
                    {
                        Ok(handle) => return Ok(handle),
                        Err(e) if attempt == 60 => return Err(format!("start {i}: {e}")),
                        Err(_) => attempt += 1,
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        })
        .buffered(4)
        .try_collect::<Vec<_>>();
    // Submit and wait, while one worker is SIGKILLed and restarted every few seconds and SeaweedFS
    // is restarted once among the kills.
    let work = async {
        let handles = submit.await.unwrap_or_else(|e| panic!("{e}"));
        let results = futures::future::join_all(
            handles
                .iter()
                .map(|h| h.get_result(WorkflowGetResultOptions::default())),
        )
        .await;
        (handles, results)
    };
    let mut work = std::pin::pin!(work);
    let mut ticks = tokio::time::interval(KILL_EVERY);
    ticks.tick().await;
    let (mut kills, mut store_restarts) = (0u32, 0u32);
    let (handles, results): (_, Vec<Result<ReduceResponse, _>>) = loop {
        tokio::select! {
            done = &mut work => break done,
            _ = ticks.tick() => {
                assert!(kills < 400, "the workflows did not finish");
                // Always the same one: the other two always get to finish what they take.
                workers[0].kill();
                workers[0] = spawn();
                kills += 1;
                if kills == RESTART_STORE_AT {
                    seaweed.restart().await;
                    store_restarts += 1;
                }
            }
        }
    };
    let wall = began.elapsed();

    // Every workflow completed; every output over the band spilled to its own handle, the rest
    // passed through.
    let store = Store::open(Some(&spills_url)).unwrap_or_else(|e| panic!("store: {e}"));
    let mut lost = Vec::new();
    let mut expected = BTreeMap::new();
    for (i, (result, text)) in results.into_iter().zip(&texts).enumerate() {
        let out = match result {
            Ok(out) => out,
            Err(e) => {
                lost.push(format!("workflow {i}: {e:?}"));
                continue;
            }
        };
        if text.len() <= BAND {
            assert_eq!(out.kind, ReductionKind::Passthrough, "output {i}");
            assert_eq!(out.return_value, ToolOutput::Text(text.as_str().into()));
            continue;
        }
        let handle = format!("{run}/c{i}.0");
        if out.kind != ReductionKind::Spilled || out.overflow_handle() != Some(handle.as_str()) {
            lost.push(format!(
                "output {i} ({} B): {:?}, handle {:?}",
                text.len(),
                out.kind,
                out.overflow_handle()
            ));
            continue;
        }
        match store.read(&handle).await {
            Ok(data) if data == text.as_bytes() => {}
            Ok(data) => lost.push(format!(
                "{handle}: {} B stored, {} B given",
                data.len(),
                text.len()
            )),
            Err(e) => lost.push(format!("{handle} points nowhere: {e}")),
        }
        expected.insert(handle, text.len() as u64);
    }
    // Each spill exists once, and the store holds nothing else.
    let listed = store
        .list(None)
        .await
        .unwrap_or_else(|e| panic!("list: {e}"));
    let listed_handles: BTreeSet<_> = listed.iter().map(|s| s.handle.clone()).collect();
    let duplicates = listed.len() - listed_handles.len();
    let strays: Vec<_> = listed
        .iter()
        .filter(|s| expected.get(&s.handle) != Some(&s.size))
        .collect();

    // Retries, from the histories: activity attempts after the first, and workflow tasks that
    // failed or timed out (a killed worker's, or one that met the store down).
    let (mut activity_retries, mut workflow_task_retries) = (0i64, 0usize);
    for handle in &handles {
        let events = handle
            .fetch_history(Default::default())
            .into_events()
            .await
            .unwrap_or_default();
        for event in &events {
            match &event.attributes {
                Some(Attributes::ActivityTaskStartedEventAttributes(a)) => {
                    activity_retries += i64::from(a.attempt.max(1) - 1);
                }
                _ if matches!(
                    event.event_type(),
                    EventType::WorkflowTaskFailed | EventType::WorkflowTaskTimedOut
                ) =>
                {
                    workflow_task_retries += 1;
                }
                _ => {}
            }
        }
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    eprintln!(
        "chaos: {outputs} outputs ({:.1} MB, {} spilled), {kills} worker kills and restarts, \
         {store_restarts} SeaweedFS restart, {activity_retries} activity retries, \
         {workflow_task_retries} workflow task retries, lost = {}, duplicates = {}, \
         strays = {}, wall time {:.1} s",
        bytes as f64 / 1e6,
        expected.len(),
        lost.len(),
        duplicates,
        strays.len(),
        wall.as_secs_f64()
    );
    assert!(lost.is_empty(), "lost: {lost:#?}");
    assert_eq!(duplicates, 0);
    assert!(
        strays.is_empty(),
        "objects that no workflow returned: {strays:?}"
    );
    assert_eq!(
        listed_handles.len(),
        expected.len(),
        "spills missing from the listing"
    );
    assert!(
        kills >= 1 && store_restarts == 1,
        "the chaos never happened"
    );
}
