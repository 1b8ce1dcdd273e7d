//! The worker image (`deploy/Containerfile`, built by `deploy/container.sh` from the test run's
//! binary) run by podman on the host network against the dev server and SeaweedFS: a spill and
//! a read back through the container's activities, and the object in the store.

use std::process::Command;

use serde_json::json;

use crate::support::temporal::{Probe, TestWorker, probe, temporal_address, unique};

fn script() -> std::path::PathBuf {
    crate::root().join("deploy/container.sh")
}

/// `deploy/container.sh ARGS`; its stdout, or a panic with its stderr.
fn container_sh(args: &[&str]) -> String {
    let out = Command::new(script())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", script().display()));
    assert!(
        out.status.success(),
        "deploy/container.sh {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A container (name) of an image (tag) only this test uses: both removed when dropped.
struct Running(String, String);

impl Drop for Running {
    fn drop(&mut self) {
        for args in [["rm", "--force", &self.0], ["image", "rm", &self.1]] {
            let _ = Command::new(script()).arg("podman").args(args).output();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_spills_and_reads_back_against_the_dev_server_and_seaweedfs() {
    let Ok(s3) = std::env::var("OVERSPILL_TEST_S3_URL") else {
        panic!(
            "OVERSPILL_TEST_S3_URL is unset: run `deploy/seaweedfs.sh start && source .deploy/seaweedfs.env` first (deploy/test.sh does)"
        );
    };
    let tag = format!("localhost/overspill:{}", unique("test"));
    container_sh(&["build", env!("CARGO_BIN_EXE_overspill"), &tag]);
    let store = format!("{}/{}", s3.trim_end_matches('/'), unique("container"));
    let task_queue = unique("container");
    let name = unique("overspill-worker");
    let temporal = format!("TEMPORAL_ADDRESS={}", temporal_address());
    let started = container_sh(&[
        "podman",
        "run",
        "--detach",
        "--rm",
        "--network",
        "host",
        "--name",
        &name,
        "--env",
        &temporal,
        "--env",
        "AWS_ENDPOINT_URL",
        "--env",
        "AWS_ACCESS_KEY_ID",
        "--env",
        "AWS_SECRET_ACCESS_KEY",
        "--env",
        "AWS_REGION",
        "--env",
        "AWS_ALLOW_HTTP",
        &tag,
        "worker",
        "--task-queue",
        &task_queue,
        "--store",
        &store,
    ]);
    let _running = Running(name.clone(), tag.clone());
    assert!(!started.is_empty(), "podman printed no container id");

    let host = TestWorker::start("container-host").await;
    let text: String = (0..3_000).map(|i| format!("row {i:05}\n")).collect();
    let on_container = |mut p: Probe| {
        p.task_queue = Some(task_queue.clone());
        p
    };
    let out = host
        .probe(vec![
            on_container(probe(
                "tool_output_limits.spill",
                json!({"tool_name": "cat", "run_id": "in-a-container", "tool_call_id": "c",
                       "output": {"text": text}}),
            )),
            on_container(probe(
                "tool_output_limits.read_tool_result",
                json!({"handle": "in-a-container/c.0", "pattern": "row 02999"}),
            )),
        ])
        .await;
    let logs = || container_sh(&["podman", "logs", &name]);
    assert_eq!(
        out[0].ok.as_ref().map(|r| &r["handle"]),
        Some(&json!("in-a-container/c.0")),
        "{}\n{}",
        out[0].message,
        logs()
    );
    assert_eq!(
        out[1].ok,
        Some(json!(
            "[handle 'in-a-container/c.0': 1 matching line(s); showing 1]\nrow 02999"
        )),
        "{}",
        out[1].message
    );
    let spilled = overspill::store::Store::open(Some(&store))
        .unwrap_or_else(|e| panic!("store: {e}"))
        .read("in-a-container/c.0")
        .await
        .unwrap_or_else(|e| panic!("read the spill: {e}"));
    assert_eq!(spilled, text.as_bytes());
}
