//! Paging, whole process, side by side with the reference in one run: `overspill reduce` (wall
//! time and peak RSS under `/usr/bin/time -f %M`) and `overspill read` (wall time of the process
//! alone; peak RSS from one more run under `/usr/bin/time`) against pydantic-ai-harness 0.62.0
//! timed in-process (`benches/paging.py`), on spills of long lines and of `x\n` lines, through
//! `file://` and, when `OVERSPILL_TEST_S3_URL` is set, SeaweedFS.
//!
//! ```text
//! benches/paging.sh                          # 1 MB, 100 MB and 1 GB; prints a markdown table
//! benches/paging.sh --sizes 1,100 --runs 5   # sizes in MB, runs per page step
//! benches/paging.sh --sizes 1,100 --in-process-only   # only the in-process page latencies
//! ```
//! The in-process table puts beside each page's latency the floor: one ranged read of 1 KiB of
//! the payload through the same store (a page is at least one such read).
//! The reference is skipped where it would need more than `--reference-max-lines` lines (default
//! 60 million: it holds every line as a Python string, about 18 bytes a line on top of the text).
//! Under `cargo test` (no `--bench` argument) it runs one 1 MB round without the reference.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use overspill::read::{Part, ReadRequest, SpillReader as _, read_tool_result};
use overspill::store::Store;

const MB: u64 = 1_000_000;

/// A kind of spill: how its lines look, and two patterns, one matching every line and one
/// matching one line in 1,000.
struct Shape {
    name: &'static str,
    key: &'static str,
    line: fn(u64, &mut Vec<u8>),
    every: &'static str,
    rare: &'static str,
}

const SHAPES: [Shape; 2] = [
    Shape {
        name: "long lines",
        key: "long",
        line: long_line,
        every: "level=info",
        rare: "NEEDLE",
    },
    Shape {
        name: "x\\n lines",
        key: "x",
        line: x_line,
        every: "x",
        rare: "y",
    },
];

/// About 1,000 bytes: a log line with a long message; every 1,000th says `NEEDLE`.
fn long_line(i: u64, out: &mut Vec<u8>) {
    let start = out.len();
    write!(out, "{i:010} level=info component=indexer msg=\"").unwrap_or_default();
    let fill = b"the quick brown fox jumps over the lazy dog ";
    while out.len() - start < 990 {
        out.push(fill[(out.len() - start) % fill.len()]);
    }
    out.extend_from_slice(if i % 1_000 == 999 {
        b"\" NEEDLE\n"
    } else {
        b"\"\n"
    });
}

/// `x`, and every 1,000th line `xy`.
fn x_line(i: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(if i % 1_000 == 999 { b"xy\n" } else { b"x\n" });
}

/// Write `size` bytes of `shape`'s lines to `path`; returns the number of lines.
fn generate(shape: &Shape, size: u64, path: &Path) -> u64 {
    let mut file = BufWriter::new(File::create(path).expect("a payload file"));
    let (mut written, mut lines, mut buffer) = (0, 0, Vec::with_capacity(1 << 20));
    while written < size {
        buffer.clear();
        while buffer.len() < 1 << 20 && written + (buffer.len() as u64) < size {
            (shape.line)(lines, &mut buffer);
            lines += 1;
        }
        let take = buffer.len().min((size - written) as usize);
        file.write_all(&buffer[..take]).expect("write the payload");
        written += take as u64;
    }
    file.flush().expect("flush the payload");
    lines
}

/// One measured process: wall time, and peak RSS from `/usr/bin/time`.
#[derive(Clone, Copy)]
struct Run {
    ms: f64,
    rss_mib: f64,
}

/// Run `program args` under `/usr/bin/time -f %M` with stdin from `input`; the wall time and peak
/// RSS, and what it printed.
fn measure(program: &Path, args: &[&str], input: Option<&Path>, scratch: &Path) -> (Run, String) {
    let rss_file = scratch.join("rss.txt");
    let mut command = Command::new("/usr/bin/time");
    command
        .args(["-f", "%M", "-o"])
        .arg(&rss_file)
        .arg(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.stdin(match input {
        Some(path) => Stdio::from(File::open(path).expect("the payload")),
        None => Stdio::null(),
    });
    let (ms, out) = run(&mut command, program, args);
    let kib: f64 = std::fs::read_to_string(&rss_file)
        .ok()
        .and_then(|s| s.lines().last().and_then(|l| l.trim().parse().ok()))
        .expect("/usr/bin/time reports the peak RSS");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (
        Run {
            ms,
            rss_mib: kib / 1024.0,
        },
        stdout,
    )
}

/// The wall time of `program args` alone, from spawn to exit: a page by offset takes a few
/// milliseconds, and `/usr/bin/time`'s own fork and exec (about 1 ms) would be a fifth of it.
fn wall_ms(program: &Path, args: &[&str]) -> f64 {
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null());
    run(&mut command, program, args).0
}

/// Run `command` (`program args`, perhaps wrapped) to completion: its wall time in ms and its
/// output; a failure stops the bench with what it printed.
fn run(command: &mut Command, program: &Path, args: &[&str]) -> (f64, std::process::Output) {
    let start = Instant::now();
    let out = command.output().expect("run the step");
    let ms = start.elapsed().as_secs_f64() * 1e3;
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    (ms, out)
}

/// A page step of `overspill read`: the median wall time of `runs` runs of the process alone,
/// and the peak RSS of one more run under `/usr/bin/time`.
fn page_run(runs: usize, program: &Path, args: &[&str], scratch: &Path) -> Run {
    let mut all: Vec<f64> = (0..runs.max(1)).map(|_| wall_ms(program, args)).collect();
    all.sort_by(f64::total_cmp);
    let (sized, _) = measure(program, args, None, scratch);
    Run {
        ms: all[all.len() / 2],
        rss_mib: sized.rss_mib,
    }
}

/// The median time and the largest RSS of `runs` runs of `step`.
fn repeat(runs: usize, mut step: impl FnMut() -> Run) -> Run {
    let mut all: Vec<Run> = (0..runs.max(1)).map(|_| step()).collect();
    all.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    Run {
        ms: all[all.len() / 2].ms,
        rss_mib: all.iter().map(|r| r.rss_mib).fold(0.0, f64::max),
    }
}

/// One step of the table: its name and the `overspill read` arguments (after the handle).
struct Step {
    name: &'static str,
    args: Vec<String>,
}

fn steps(shape: &Shape, lines: u64) -> Vec<Step> {
    let page = |offset: u64| vec!["--offset".into(), offset.to_string()];
    let pattern = |p: &str| vec!["--pattern".into(), p.to_owned()];
    vec![
        Step {
            name: "first page",
            args: page(0),
        },
        Step {
            name: "later page",
            args: page(lines / 2),
        },
        Step {
            name: "pattern page, every line",
            args: pattern(shape.every),
        },
        Step {
            name: "pattern page, 1 in 1000",
            args: pattern(shape.rare),
        },
    ]
}

/// The reference's arguments for the same step: offset, limit, from_end, pattern.
fn reference_args(step: &Step) -> Vec<String> {
    let offset = match step.args[0].as_str() {
        "--offset" => step.args[1].clone(),
        _ => "0".into(),
    };
    let mut args = vec![offset, "200".into(), "0".into()];
    if step.args[0] == "--pattern" {
        args.push(step.args[1].clone());
    }
    args
}

struct Options {
    sizes: Vec<u64>,
    runs: usize,
    reference: bool,
    reference_max_lines: u64,
    in_process_only: bool,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench");
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let sizes = value("--sizes").map_or(vec![1, 100, 1_000], |s| {
        s.split(',').filter_map(|n| n.trim().parse().ok()).collect()
    });
    Options {
        sizes: if full { sizes } else { vec![1] },
        runs: value("--runs").and_then(|n| n.parse().ok()).unwrap_or(5),
        reference: full
            && !args
                .iter()
                .any(|a| a == "--no-reference" || a == "--in-process-only"),
        in_process_only: args.iter().any(|a| a == "--in-process-only"),
        reference_max_lines: value("--reference-max-lines")
            .and_then(|n| n.parse().ok())
            .unwrap_or(60_000_000),
    }
}

/// Where the table's rows come from: a store URL, or the reference.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Reference,
    File,
    S3,
}

struct Row {
    shape: &'static str,
    size: u64,
    step: String,
    runs: Vec<(Side, Option<Run>)>,
}

fn main() {
    let options = options();
    // This bench belongs to the `overspill-cli` package (src/cli), which builds the binary.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let overspill = PathBuf::from(env!("CARGO_BIN_EXE_overspill"));
    let python = root.join(".deploy/bench-venv/bin/python");
    let reference = options.reference && python.exists();
    if options.reference && !reference {
        eprintln!("{} is missing: run benches/paging.sh", python.display());
    }
    let scratch = tempfile::tempdir_in(root.join("target")).expect("a scratch dir");
    let file_url = format!("file://{}/spills", scratch.path().display());
    let s3_url = std::env::var("OVERSPILL_TEST_S3_URL").ok().map(|base| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        format!("{}/paging-{nanos}", base.trim_end_matches('/'))
    });
    if s3_url.is_none() {
        eprintln!("OVERSPILL_TEST_S3_URL is not set: measuring file:// only");
    }
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let mut rows = Vec::new();
    let mut in_process = Vec::new();
    for &size in &options.sizes {
        for shape in &SHAPES {
            let payload = scratch.path().join("payload.txt");
            let lines = generate(shape, size * MB, &payload);
            let call = format!("{}-{size}", shape.key);
            let handle = format!("bench/{call}.0");
            let run_reference = reference && lines <= options.reference_max_lines;
            let ref_store = scratch.path().join("reference");
            let mut sides = vec![(Side::File, file_url.clone())];
            sides.extend(s3_url.clone().map(|url| (Side::S3, url)));

            let mut reduce = Row {
                shape: shape.name,
                size,
                step: "reduce (spill)".into(),
                runs: Vec::new(),
            };
            let ref_step = |args: &[&str]| {
                let script = root.join("benches/paging.py");
                let mut all = vec![script.to_str().unwrap_or_default()];
                all.extend(args);
                let (run, out) = measure(&python, &all, None, scratch.path());
                let ms = out.trim().parse().expect("the reference prints its time");
                Run { ms, ..run }
            };
            let ref_dir = ref_store.to_str().unwrap_or_default().to_owned();
            let payload_path = payload.to_str().unwrap_or_default().to_owned();
            reduce.runs.push((
                Side::Reference,
                run_reference.then(|| ref_step(&["reduce", &ref_dir, &payload_path, &call])),
            ));
            for (side, url) in &sides {
                let args = [
                    "reduce",
                    "--tool",
                    "cat",
                    "--run-id",
                    "bench",
                    "--call-id",
                    &call,
                    "--store",
                    url,
                ];
                let (run, out) = measure(&overspill, &args, Some(&payload), scratch.path());
                assert!(out.contains(&handle), "no spill marker for {handle}");
                reduce.runs.push((*side, Some(run)));
            }
            rows.push(reduce);
            std::fs::remove_file(&payload).expect("remove the payload");

            let steps = match options.in_process_only {
                true => Vec::new(),
                false => steps(shape, lines),
            };
            for step in steps {
                let pattern = step.args[0] == "--pattern";
                let runs = if pattern && size >= 100 {
                    3
                } else {
                    options.runs
                };
                let mut row = Row {
                    shape: shape.name,
                    size,
                    step: step.name.into(),
                    runs: Vec::new(),
                };
                let ref_runs = if pattern { 1 } else { runs.min(3) };
                let ref_args = reference_args(&step);
                let mut args = vec!["page", ref_dir.as_str(), handle.as_str()];
                args.extend(ref_args.iter().map(String::as_str));
                row.runs.push((
                    Side::Reference,
                    run_reference.then(|| repeat(ref_runs, || ref_step(&args))),
                ));
                for (side, url) in &sides {
                    let mut args = vec!["read", handle.as_str(), "--store", url.as_str()];
                    args.extend(step.args.iter().map(String::as_str));
                    let run = page_run(runs, &overspill, &args, scratch.path());
                    row.runs.push((*side, Some(run)));
                }
                rows.push(row);
            }

            for (side, url) in &sides {
                in_process.push((
                    shape.name,
                    size,
                    *side,
                    page_latency(&runtime, url, &handle, lines),
                ));
            }
            let _ = std::fs::remove_dir_all(&ref_store);
            for (_, url) in &sides {
                let store = Store::open(Some(url)).expect("the store opens");
                // A cutoff past every write (S3 keeps whole seconds, rounded down).
                let cutoff = std::time::SystemTime::now() + Duration::from_secs(1);
                runtime.block_on(store.gc(cutoff, false)).expect("clean up");
            }
        }
    }
    print_table(&rows, s3_url.is_some());
    println!("\nIn-process `read_tool_result`, page by offset (200 lines), median of 20:\n");
    println!(
        "| shape | size | store | fresh store (first page) | open store, first page of the spill | later pages | one 1 KiB read |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|");
    for (shape, size, side, [cold, first, warm, floor]) in in_process {
        let store = if side == Side::S3 { "S3" } else { "file://" };
        println!(
            "| {shape} | {size} MB | {store} | {cold:.2} ms | {first:.2} ms | {warm:.2} ms | {floor:.2} ms |"
        );
    }
}

/// Median ms of a page by offset through a fresh store each time (a CLI `read`), through one
/// store with the spill not cached (a worker's first page of a new spill), through one store
/// (later pages), and of one ranged read of 1 KiB of the payload through that store.
fn page_latency(
    runtime: &tokio::runtime::Runtime,
    url: &str,
    handle: &str,
    lines: u64,
) -> [f64; 4] {
    let request = |i: u64| ReadRequest {
        handle: handle.into(),
        offset: ((i * 7_919 * 131) % lines.max(1)) as i64,
        ..ReadRequest::default()
    };
    let time = |store: &Store, i: u64| {
        let start = Instant::now();
        let page = runtime
            .block_on(read_tool_result(store, &request(i)))
            .expect("a page");
        assert!(page.starts_with("[handle "), "{page:.200}");
        start.elapsed().as_secs_f64() * 1e3
    };
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let open = || Store::open(Some(url)).expect("the store opens");
    let cold = median((0..20).map(|i| time(&open(), i)).collect());
    let store = open();
    time(&store, 0);
    let uncached = |i: u64| {
        if let Some(cache) = store.index_cache() {
            cache.remove(handle);
        }
        time(&store, i)
    };
    let first = median((1..21).map(uncached).collect());
    let warm = median((1..21).map(|i| time(&store, i)).collect());
    let read = |i: u64| {
        let start = Instant::now();
        let range = i * 1_024..(i + 1) * 1_024;
        let fetched = runtime.block_on(store.fetch(handle, Part::Payload, range));
        assert_eq!(fetched.expect("a read").bytes.len(), 1_024);
        start.elapsed().as_secs_f64() * 1e3
    };
    let floor = median((0..20).map(read).collect());
    [cold, first, warm, floor]
}

fn print_table(rows: &[Row], s3: bool) {
    let cell = |run: Option<Run>| match run {
        Some(r) => format!("{:.1} ms, {:.0} MiB", r.ms, r.rss_mib),
        None => "not run".into(),
    };
    print!(
        "\n| spill | step | reference (in-process) | overspill file:// (whole process) | speed-up |"
    );
    println!(
        "{}",
        if s3 {
            " overspill S3 (whole process) |"
        } else {
            ""
        }
    );
    println!("|---|---|---:|---:|---:|{}", if s3 { "---:|" } else { "" });
    for row in rows {
        let get = |side| {
            row.runs
                .iter()
                .find(|(s, _)| *s == side)
                .and_then(|(_, r)| *r)
        };
        let (reference, file) = (get(Side::Reference), get(Side::File));
        let speedup = match (reference, file) {
            (Some(r), Some(f)) => format!("{:.1}×", r.ms / f.ms),
            _ => "—".into(),
        };
        print!(
            "| {} MB {} | {} | {} | {} | {speedup} |",
            row.size,
            row.shape,
            row.step,
            cell(reference),
            cell(file)
        );
        println!(
            "{}",
            if s3 {
                format!(" {} |", cell(get(Side::S3)))
            } else {
                String::new()
            }
        );
    }
}
