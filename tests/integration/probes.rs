//! `/healthz` and `/readyz` beside `/metrics` on a real `overspill worker`, with a SeaweedFS of
//! this test's own (`deploy/seaweedfs.sh` on free ports) frozen with SIGSTOP and thawed again.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::temporal::{temporal_address, unique};

/// A SeaweedFS started by `deploy/seaweedfs.sh` in a temporary directory; stopped when dropped.
struct OwnSeaweedFs {
    dir: tempfile::TempDir,
    port: u16,
}

impl OwnSeaweedFs {
    fn script(&self, command: &str) -> std::process::Output {
        Command::new(crate::root().join("deploy/seaweedfs.sh"))
            .arg(command)
            .env("SEAWEEDFS_S3_PORT", self.port.to_string())
            .env("SEAWEEDFS_DIR", self.dir.path().join("weed"))
            .env("SEAWEEDFS_ENV_FILE", self.dir.path().join("weed.env"))
            .env_remove("SEAWEEDFS_TLS_DIR")
            .output()
            .unwrap_or_else(|e| panic!("deploy/seaweedfs.sh {command}: {e}"))
    }

    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let port = free_weed_port();
        let weed = Self { dir, port };
        let out = weed.script("start");
        assert!(out.status.success(), "seaweedfs.sh start: {out:?}");
        weed
    }

    fn pid(&self) -> i32 {
        let file = self.dir.path().join("weed/weed.pid");
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        text.trim()
            .parse()
            .unwrap_or_else(|e| panic!("pid {text:?}: {e}"))
    }

    fn signal(&self, signal: Signal) {
        let sent = kill(Pid::from_raw(self.pid()), signal);
        sent.unwrap_or_else(|e| panic!("kill({signal}): {e}"));
    }
}

impl Drop for OwnSeaweedFs {
    fn drop(&mut self) {
        self.signal(Signal::SIGCONT);
        let _ = self.script("stop");
    }
}

/// Whether nothing listens on `port` of loopback.
fn free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// An S3 port whose derived SeaweedFS ports (master, volume, filer and their gRPC ports,
/// each +10000) are all free.
fn free_weed_port() -> u16 {
    let start = 30_000 + (std::process::id() % 500) as u16 * 17;
    (0..500u16)
        .map(|i| 30_000 + (start - 30_000 + i * 19) % 9_000)
        .find(|&port| {
            let off = port - 8_333;
            [port, 9_333 + off, 8_080 + off, 8_888 + off]
                .iter()
                .all(|&p| free(p) && free(p + 10_000))
        })
        .unwrap_or_else(|| panic!("no free ports for a SeaweedFS"))
}

/// `GET path` on `addr`: the status code and the body ("" when nothing answers).
fn get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return (0, String::new());
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Poll `GET path` until its status is `want` (a minute's hang guard); its last body.
fn until(worker: &mut Child, addr: &str, path: &str, want: u16) -> String {
    until_body(worker, addr, path, want, "")
}

/// Poll `GET path` until its status is `want` and its body holds `needle`; the body.
fn until_body(worker: &mut Child, addr: &str, path: &str, want: u16, needle: &str) -> String {
    let started = Instant::now();
    loop {
        let (status, body) = get(addr, path);
        if status == want && body.contains(needle) {
            return body;
        }
        if let Ok(Some(exit)) = worker.try_wait() {
            panic!("the worker exited ({exit}) while {path} answered {status}: {body}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{path} still answers {status} ({body}), not {want}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn readyz_turns_unready_while_the_store_is_frozen_and_ready_after() {
    let weed = OwnSeaweedFs::start();
    let metrics = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
        listener
            .local_addr()
            .unwrap_or_else(|e| panic!("addr: {e}"))
            .to_string()
    };
    let store = format!(
        "s3://spills/{}?endpoint=http://127.0.0.1:{}&allow_http=true",
        unique("probes"),
        weed.port
    );
    let mut worker = Killed(
        Command::new(env!("CARGO_BIN_EXE_overspill"))
            .args([
                "worker",
                "--graceful-shutdown-secs",
                "1",
                "--metrics",
                &metrics,
            ])
            .args(["--task-queue", &unique("probes"), "--store", &store])
            .env("TEMPORAL_ADDRESS", temporal_address())
            .env("AWS_ACCESS_KEY_ID", "overspill")
            .env("AWS_SECRET_ACCESS_KEY", "overspill-secret")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn overspill worker: {e}")),
    );
    let worker = &mut worker.0;
    assert_eq!(until(worker, &metrics, "/healthz", 200), "ok\n");
    assert_eq!(until(worker, &metrics, "/readyz", 200), "ready\n");
    // The SDK's metrics, forwarded from its exporter, once its pollers have counted.
    until_body(worker, &metrics, "/metrics", 200, "temporal_");
    assert_eq!(get(&metrics, "/nope").0, 404);

    weed.signal(Signal::SIGSTOP);
    let unready = until(worker, &metrics, "/readyz", 503);
    assert!(
        unready.starts_with("not ready: store: "),
        "the store is named: {unready}"
    );
    // Alive all the while: liveness does not depend on the store.
    assert_eq!(get(&metrics, "/healthz"), (200, "ok\n".to_owned()));

    weed.signal(Signal::SIGCONT);
    assert_eq!(until(worker, &metrics, "/readyz", 200), "ready\n");
}

/// A child process, killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
