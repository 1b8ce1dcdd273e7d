//! Another language's test suite run as a child process (pytest, node's test runner): its output
//! kept in a file, its run bounded in time.

use std::io::Read as _;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Run `command` with its output (stdout and stderr) captured; its exit status, or `None` when it
/// ran past `timeout` and was killed, and its output.
pub(crate) fn run_suite(mut command: Command, timeout: Duration) -> (Option<ExitStatus>, String) {
    let log = tempfile::NamedTempFile::new().expect("a temp file for the suite's output");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(log.reopen().expect("reopen the suite's log"))
        .stderr(log.reopen().expect("reopen the suite's log"))
        .spawn()
        .expect("start the suite");
    // Every wait inside a suite is bounded; this backstop keeps a hang from stalling CI.
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the suite") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut report = String::new();
    log.reopen()
        .and_then(|mut file| file.read_to_string(&mut report))
        .expect("read the suite's log");
    (status, report)
}
