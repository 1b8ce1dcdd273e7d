//! The `overspill reduce` / `overspill read` command line, as a person and a program use it.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

/// Runs `overspill ARGS` with `stdin`, away from the caller's store and model settings.
pub(crate) fn overspill(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_overspill"))
        .args(args)
        .env_remove("OVERSPILL_STORE")
        .env_remove("OVERSPILL_MODEL_URL")
        .env_remove("OVERSPILL_MODEL")
        .env_remove("OVERSPILL_MODEL_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the overspill binary starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin)
        .expect("stdin is written");
    child.wait_with_output().expect("overspill finishes")
}

fn text(out: &[u8]) -> String {
    String::from_utf8(out.to_vec()).expect("UTF-8 output")
}

#[test]
fn reduce_spills_and_read_pages_back_across_processes() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = format!("file://{}", dir.path().display());
    let log: String = (0..2_000).map(|i| format!("line {i}: ok\n")).collect();
    let reduced = overspill(
        &[
            "reduce",
            "--tool",
            "run_command",
            "--run-id",
            "run-1",
            "--call-id",
            "call-1",
            "--store",
            &store,
        ],
        log.as_bytes(),
    );
    assert!(reduced.status.success(), "{}", text(&reduced.stderr));
    let shown = text(&reduced.stdout);
    assert!(
        shown.starts_with(&format!(
            "[Tool output too large ({} chars); stored to handle 'run-1/call-1.0'. Read it with read_tool_result(handle='run-1/call-1.0', offset=0, limit=200, from_end=False, pattern=None).]\nline 0: ok\n",
            overspill::limits::pyfmt::thousands(log.len() as u64)
        )),
        "{shown}"
    );

    let page = overspill(
        &[
            "read",
            "run-1/call-1.0",
            "--offset",
            "10",
            "--limit",
            "2",
            "--store",
            &store,
        ],
        b"",
    );
    assert!(page.status.success(), "{}", text(&page.stderr));
    assert_eq!(
        text(&page.stdout),
        "[handle 'run-1/call-1.0': 2,000 matching line(s); showing 2]\nline 10: ok\nline 11: ok\n"
    );

    let found = overspill(
        &[
            "read",
            "run-1/call-1.0",
            "--pattern",
            "line 1999",
            "--store",
            &store,
        ],
        b"",
    );
    assert_eq!(
        text(&found.stdout),
        "[handle 'run-1/call-1.0': 1 matching line(s); showing 1]\nline 1999: ok\n"
    );
}

/// Nothing found: the reference's text on stdout, the store searched on stderr, exit code 1.
#[test]
fn read_refuses_unknown_and_escaping_handles_with_the_reference_text() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = format!("file://{}", dir.path().display());
    for handle in ["nope/none.0", "../../etc/passwd", "/etc/passwd"] {
        let out = overspill(&["read", handle, "--store", &store], b"");
        assert_eq!(out.status.code(), Some(1));
        let stdout = text(&out.stdout);
        assert_eq!(
            stdout,
            format!("{}\n", overspill::read::no_stored_result(handle))
        );
        assert!(text(&out.stderr).contains(&format!("nothing found in {store}/")));
    }
    // grep, query and a run's listing find nothing the same way.
    for args in [
        &["grep", "nope/none.0", "x"][..],
        &["query", "nope/none.0", "."],
        &["spills", "ls", "--run", "nope"],
    ] {
        let out = overspill(&[args, &["--store", &store]].concat(), b"");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let expected = match args[0] {
            "spills" => "[run 'nope': 0 spilled tool result(s); showing 0, newest first]".into(),
            _ => overspill::read::no_stored_result("nope/none.0"),
        };
        assert_eq!(text(&out.stdout), format!("{expected}\n"), "{args:?}");
        assert!(text(&out.stderr).contains(&format!("nothing found in {store}/")));
    }
}

/// Without `--store` (and `OVERSPILL_STORE`), `reduce`, `read`, `grep` and `spills ls` take the
/// same default store as `overspill worker` and `overspill dev`: `file://$TMPDIR/overspill-<euid>`.
#[test]
fn the_commands_share_one_default_store_and_name_it() {
    let tmp = tempfile::tempdir().expect("a temp dir");
    let run = |args: &[&str], stdin: &[u8]| {
        let out = Command::new(env!("CARGO_BIN_EXE_overspill"))
            .args(args)
            .env_remove("OVERSPILL_STORE")
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                child.stdin.take().expect("piped").write_all(stdin)?;
                child.wait_with_output()
            })
            .expect("overspill runs");
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let log: String = (0..3_000).map(|i| format!("{i} step ok\n")).collect();
    let reduce = [
        "reduce",
        "--tool",
        "build",
        "--run-id",
        "run-1",
        "--call-id",
        "c",
    ];
    assert_eq!(run(&reduce, log.as_bytes()).0, Some(0));
    let root = tmp.path().join(format!("overspill-{}", euid()));
    assert!(
        root.join("tool_output_limits/run-1/c.0").is_file(),
        "spilled to the default store"
    );
    let (code, page, _) = run(&["read", "run-1/c.0", "--limit", "1", "--from-end"], b"");
    assert_eq!(
        (code, page.as_str()),
        (
            Some(0),
            "[handle 'run-1/c.0': 3,000 matching line(s); showing 1]\n2999 step ok\n"
        )
    );
    let (code, page, _) = run(&["grep", "run-1/c.0", "2999"], b"");
    assert_eq!(code, Some(0));
    assert!(
        page.starts_with("[handle 'run-1/c.0': 1 matching line(s); showing 1]\n2998-")
            && page.ends_with("ok\n"),
        "{page}"
    );
    let (code, listed, _) = run(&["spills", "ls", "--run", "run-1"], b"");
    assert_eq!(code, Some(0));
    assert!(
        listed.starts_with("[run 'run-1': 1 spilled tool result(s)") && listed.ends_with('\n'),
        "{listed}"
    );
    let facts = format!(
        "- 'run-1/c.0': build, {} chars, 3,000 lines, written",
        overspill::limits::pyfmt::thousands(log.len() as u64)
    );
    assert!(
        listed.contains(&facts),
        "the tool and size of a file:// spill: {listed}"
    );
    let (code, _, stderr) = run(&["read", "run-2/c.0"], b"");
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains(&format!("nothing found in file://{}/", root.display())),
        "{stderr}"
    );
}

/// The effective user id, as the default store's directory names it (from `/proc`).
fn euid() -> String {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .expect("a Uid line");
    uid.split_whitespace()
        .nth(1)
        .expect("the effective uid")
        .to_owned()
}

#[test]
fn read_bad_arguments_exit_2_with_the_model_retry_message() {
    let out = overspill(
        &[
            "read",
            "run/call.0",
            "--offset",
            "-1",
            "--store",
            "memory://",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), "`offset` must be >= 0.\n");
    let out = overspill(
        &["read", "run/call.0", "--limit", "0", "--store", "memory://"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), "`limit` must be >= 1.\n");
}

#[test]
fn reduce_request_json_round_trip() {
    let request = serde_json::json!({
        "tool_name": "cat",
        "run_id": "r",
        "tool_call_id": "c",
        "output": {"text": "x".repeat(50)},
        "metadata": {"source": "cat"},
        "config": {"bands": [{"over": 10, "action": {"type": "truncate", "strategy": "head", "max_chars": 20}}]}
    });
    let out = overspill(
        &["reduce", "--request", "-", "--store", "memory://"],
        request.to_string().as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON response");
    assert_eq!(response["kind"], "truncated");
    assert_eq!(response["return_value"]["text"], "x".repeat(20));
    assert_eq!(response["metadata"], serde_json::json!({"source": "cat"}));
    assert_eq!(response["envelope"], true);

    let bad = serde_json::json!({"tool_name": "cat", "output": {"text": "x"}, "config": {"bands": [{"over": -1, "action": {"type": "passthrough"}}]}});
    let out = overspill(
        &["reduce", "--request", "-", "--store", "memory://"],
        bad.to_string().as_bytes(),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("bands[0].over"),
        "{}",
        text(&out.stderr)
    );
}

/// `overspill reduce` takes the worker's model flags and summarizes exactly as the worker's
/// reduce does (the same request to the model, the same result); without a model, the band's
/// `then` runs and a WARN on stderr says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reduce_summarizes_through_the_model_as_the_worker_does() {
    use overspill::activities::{Caller, OverspillActivities};
    use overspill::store::Store;
    use overspill::summarize::{ChunkBudget, Chunked, OpenAiSummarizer};

    use crate::openai_server::FakeOpenAi;

    const KEY: &str = "sk-cli-0123456789";
    let server = FakeOpenAi::start(Some(KEY)).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = serde_json::json!({"bands": [{"over": 100, "action": {"type": "summarize",
        "then": {"type": "truncate", "max_chars": 40}}}]});
    let config_path = dir.path().join("limits.json");
    std::fs::write(&config_path, config.to_string()).expect("config written");
    let config_path = config_path.to_string_lossy().into_owned();
    let output: String = (0..40).map(|i| format!("row {i:03}: ok\n")).collect();
    let base = server.base();
    let reduce = [
        "reduce",
        "--tool",
        "cat",
        "--store",
        "memory://",
        "--config",
        &config_path,
    ];
    let model = [
        "--model-url",
        &base,
        "--model-api-key",
        KEY,
        "--model",
        "test-model",
    ];
    let cli = overspill(&[&reduce[..], &model[..]].concat(), output.as_bytes());
    assert!(cli.status.success(), "{}", text(&cli.stderr));

    let worker = OverspillActivities::new(std::sync::Arc::new(
        Store::open(Some("memory://")).expect("a store"),
    ))
    .with_summarizer(Chunked::new(
        OpenAiSummarizer::builder(base)
            .api_key(KEY)
            .model("test-model")
            .build()
            .expect("a model client"),
        ChunkBudget::default(),
    ));
    let request = serde_json::from_value(serde_json::json!({
        "tool_name": "cat", "output": {"text": output}, "config": config,
    }))
    .expect("a reduce request");
    let reduced = worker
        .reduce_request(request, &Caller::Operator)
        .await
        .expect("the worker reduces");
    assert_eq!(
        reduced.return_value.as_text(),
        Some(text(&cli.stdout).as_str())
    );
    assert!(
        text(&cli.stdout).starts_with(
            "[summary of 480 chars of output; rerun the original tool for the full output]\nSummary of "
        ),
        "{}",
        text(&cli.stdout)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
    assert_eq!(requests[0].authorization, requests[1].authorization);

    let no_model = overspill(&reduce, output.as_bytes());
    assert!(no_model.status.success(), "{}", text(&no_model.stderr));
    assert_eq!(text(&no_model.stdout).chars().count(), 40);
    let stderr = text(&no_model.stderr);
    assert!(
        stderr.contains("WARN")
            && stderr.contains(
                "Summarizing output of tool 'cat' failed (NotConfigured); falling back to Truncate"
            ),
        "{stderr}"
    );
}

/// With a custom S3 endpoint and no credentials, the store says what to set instead of failing
/// on the EC2 instance metadata service (`169.254.169.254`), which it never calls.
#[test]
fn missing_s3_credentials_are_named_and_instance_metadata_never_asked() {
    let out = Command::new(env!("CARGO_BIN_EXE_overspill"))
        .args(["spills", "ls", "--store", "s3://spills/x"])
        .env_clear()
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .env("AWS_ALLOW_HTTP", "true")
        .output()
        .expect("overspill runs");
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        "{stderr}"
    );
    assert!(!stderr.contains("169.254"), "{stderr}");
}

#[test]
fn reduce_takes_non_utf8_stdin_as_a_binary_output() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = format!("file://{}", dir.path().display());
    let small = [0xff, 0xfe, b'a', 0x80];
    let out = overspill(&["reduce", "--tool", "cat", "--store", &store], &small);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        out.stdout, small,
        "a small binary output passes through byte for byte"
    );

    let big: Vec<u8> = (0..20_000u32).map(|i| (i % 256) as u8).collect();
    let args = [
        "reduce",
        "--tool",
        "cat",
        "--run-id",
        "run-1",
        "--call-id",
        "call-1",
        "--store",
        &store,
    ];
    let out = overspill(&args, &big);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "[Tool output too large (20,000 bytes (binary)); stored to handle 'run-1/call-1.0'. Read it with read_tool_result(handle='run-1/call-1.0', offset=0, limit=200, from_end=False, pattern=None).]\n<20,000 bytes of binary data>"
    );
    let stored = std::fs::read(dir.path().join("tool_output_limits/run-1/call-1.0"))
        .expect("the spill is stored");
    assert_eq!(stored, big, "spilled verbatim");
}

/// `overspill` with the file at `path` on stdin (read with one `fstat`-sized read).
fn overspill_from_file(args: &[&str], path: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_overspill"))
        .args(args)
        .env_remove("OVERSPILL_STORE")
        .env_remove("OVERSPILL_MODEL_URL")
        .env_remove("OVERSPILL_MODEL")
        .stdin(std::fs::File::open(path).expect("the input opens"))
        .output()
        .expect("overspill finishes")
}

/// A regular file on stdin and a pipe give the same output and the same spill, for text
/// truncated or spilled, binary spilled, and text passed through.
#[test]
fn reduce_reads_a_regular_file_on_stdin_like_a_pipe() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let log: String = (0..5_000).map(|i| format!("line {i}: ok\n")).collect();
    let binary: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    let truncate = dir.path().join("limits.json");
    std::fs::write(
        &truncate,
        r#"{"bands": [{"over": 100, "action": {"type": "truncate", "max_chars": 200}}]}"#,
    )
    .expect("the config is written");
    let truncate = truncate.display().to_string();
    let cases: [(&str, &[u8], &[&str]); 4] = [
        ("truncated", log.as_bytes(), &["--config", &truncate]),
        ("spilled", log.as_bytes(), &[]),
        ("spilled binary", &binary, &[]),
        ("passed through", b"a short output\n", &[]),
    ];
    for (case, input, config) in cases {
        let path = dir.path().join("input");
        std::fs::write(&path, input).expect("the input is written");
        let run = |from_file: bool| {
            let store = tempfile::tempdir().expect("a store dir");
            let url = format!("file://{}", store.path().display());
            let args = [
                &["reduce", "--tool", "cat", "--run-id", "r", "--call-id", "c"][..],
                &["--store", &url],
                config,
            ]
            .concat();
            let out = if from_file {
                overspill_from_file(&args, &path)
            } else {
                overspill(&args, input)
            };
            assert!(out.status.success(), "{case}: {}", text(&out.stderr));
            let spill = std::fs::read(store.path().join("tool_output_limits/r/c.0")).ok();
            (out.stdout, spill)
        };
        let (piped, piped_spill) = run(false);
        let (from_file, from_file_spill) = run(true);
        assert_eq!(text(&from_file), text(&piped), "{case}");
        assert_eq!(from_file_spill, piped_spill, "{case}");
        match case {
            "truncated" => assert!(text(&piped).contains("chars omitted from the middle")),
            "passed through" => assert_eq!(piped, input),
            _ => assert_eq!(piped_spill.as_deref(), Some(input), "{case}"),
        }
    }
}

/// `overspill reduce` reads a file on stdin once, into memory: emptied while the output is being
/// reduced, it changes nothing (no SIGBUS, no text changing under the engine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reduce_holds_its_own_copy_of_a_file_on_stdin() {
    use crate::openai_server::{FakeOpenAi, Reply};

    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("log.txt");
    let log: String = (0..20_000).map(|i| format!("line {i}: ok\n")).collect();
    std::fs::write(&path, &log).expect("the log is written");
    // The model is asked once the output is read and measured: it empties the file, then
    // refuses, so the band's `then` truncates the output as it was read.
    let shrink = path.clone();
    let server = FakeOpenAi::with_default(None, move |_| {
        (std::fs::File::options().write(true).open(&shrink))
            .and_then(|file| file.set_len(0))
            .expect("the log is truncated");
        Reply::error(400, "Refused.", "invalid_request_error")
    })
    .await;
    let config = dir.path().join("limits.json");
    std::fs::write(
        &config,
        r#"{"bands": [{"over": 100, "action": {"type": "summarize",
            "then": {"type": "truncate", "max_chars": 200}}}]}"#,
    )
    .expect("the config is written");
    let (config, base) = (config.display().to_string(), server.base());
    let out = tokio::task::spawn_blocking(move || {
        let mut args: Vec<&str> = "reduce --tool cat --store memory:// --model test-model"
            .split(' ')
            .collect();
        args.extend(["--config", &config, "--model-url", &base]);
        overspill_from_file(&args, &path)
    })
    .await
    .expect("overspill runs");
    assert_eq!(server.requests().len(), 1, "the model was asked once");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("line 0: ok\n"), "{stdout}");
    assert!(stdout.contains("line 19999: ok"), "{stdout}");
}

/// `overspill read … | head`: a reader that closes the pipe early ends the command quietly, as
/// for any Unix tool, whatever it was printing (a page, the spills' table, a reduced output).
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = format!("file://{}", dir.path().display());
    let log: String = (0..20_000).map(|i| format!("line {i}: ok\n")).collect();
    let reduce = ["reduce", "--tool", "t", "--run-id", "r", "--call-id", "c"];
    let spilled = overspill(
        &[&reduce[..], &["--store", &store]].concat(),
        log.as_bytes(),
    );
    assert!(spilled.status.success(), "{}", text(&spilled.stderr));
    let commands: [&[&str]; 3] = [
        &["read", "r/c.0", "--limit", "1000", "--store", &store],
        &["spills", "ls", "--store", &store],
        &["reduce", "--tool", "t", "--store", "memory://"],
    ];
    for args in commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_overspill"))
            .args(args)
            .env_remove("OVERSPILL_STORE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the overspill binary starts");
        // The reader is gone before the command prints anything.
        drop(child.stdout.take());
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let _ = stdin.write_all(&log.as_bytes()[..4_000]);
        drop(stdin);
        let out = child.wait_with_output().expect("overspill finishes");
        assert_eq!(text(&out.stderr), "", "{args:?}");
        assert!(out.status.success(), "{args:?}: {:?}", out.status);
    }
}
