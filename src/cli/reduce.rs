//! `overspill reduce`: one tool output in, what the model sees out.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use bytes::Bytes;
use overspill::api::ReduceRequest;
use overspill::limits::{self, Limits, ToolCall, ToolOutput, ToolResult};
use overspill::store::{Reader, Store};

use crate::CliResult;
use crate::logging::{LogFormat, init_logging};
use crate::model::ModelArgs;

/// Reduce a JSON request (`--request`), or a raw text output from stdin (`--tool`).
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["request", "tool"])))]
pub(crate) struct Args {
    /// A reduce request as JSON (`-` for stdin); prints the JSON response.
    #[arg(long, value_name = "FILE|-")]
    request: Option<PathBuf>,
    /// The tool's name; the output is read from stdin (as text, or as a binary output when it is
    /// not UTF-8) and the model-visible text printed.
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// Limits configuration (JSON) for `--tool`, and the default for requests without `config`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The agent run id (spill key's first segment).
    #[arg(long)]
    run_id: Option<String>,
    /// The tool call id.
    #[arg(long)]
    call_id: Option<String>,
    /// The tool call's retry.
    #[arg(long, default_value_t = 0)]
    retry: u32,
    /// Where spills go: `file:///path`, `s3://bucket/prefix`, `memory://`. Default, for every
    /// command, `overspill dev` and Python's `OverspillStore()`: `file://$TMPDIR/overspill-<euid>`
    /// (`/tmp` without `TMPDIR`).
    #[arg(long, env = "OVERSPILL_STORE", value_name = "URL")]
    store: Option<String>,
    /// The model for Summarize bands, as `overspill worker` takes it; without `--model-url`,
    /// Summarize falls back to its `then` (with a WARN on stderr).
    #[command(flatten)]
    model: ModelArgs,
}

pub(crate) async fn run(args: Args) -> CliResult {
    // Fallback warnings go to stderr; stdout carries only the result.
    init_logging(LogFormat::Text, "warn");
    let defaults = match &args.config {
        Some(path) => Limits::from_json(&std::fs::read_to_string(path)?)?,
        None => Limits::default(),
    };
    let store = Store::open(args.store.as_deref())?;
    let summarizer = args.model.summarizer()?;
    let mut stdout = std::io::stdout().lock();
    if let Some(path) = &args.request {
        let input = match path.as_os_str() == "-" {
            true => read_stdin()?,
            false => Bytes::from(std::fs::read(path)?),
        };
        let request: ReduceRequest = serde_json::from_slice(&input)?;
        let limits = request.limits(&defaults)?;
        let call = request.call(None);
        let operator = Reader::operator();
        let spills = store.for_tool(&call.tool_name, &operator);
        let reduced =
            limits::reduce(&limits, &call, request.into_result(), &spills, &summarizer).await;
        serde_json::to_writer(&mut stdout, &reduced)?;
        writeln!(stdout)?;
        return Ok(ExitCode::SUCCESS);
    }
    let call = ToolCall {
        tool_name: args.tool.unwrap_or_default(),
        run_id: args.run_id,
        tool_call_id: args.call_id,
        retry: args.retry,
        ..ToolCall::default()
    };
    let result = ToolResult::bare(ToolOutput::from_raw(read_stdin()?));
    let operator = Reader::operator();
    let spills = store.for_tool(&call.tool_name, &operator);
    let reduced = limits::reduce(&defaults, &call, result, &spills, &summarizer).await;
    match &reduced.return_value {
        ToolOutput::Text(text) => stdout.write_all(text.as_bytes())?,
        ToolOutput::Bytes(data) => stdout.write_all(data)?,
        ToolOutput::Json(_) => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// All of stdin, read into memory (never mapped: the engine holds text as `str`). Read through a
/// `File` on a copy of the descriptor, since `File::read_to_end` sizes its buffer from `fstat`
/// where `Stdin` grows it by doubling: a regular file costs its size once, not twice.
fn read_stdin() -> std::io::Result<Bytes> {
    use std::os::fd::AsFd as _;
    let mut stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let mut data = Vec::new();
    stdin.read_to_end(&mut data)?;
    Ok(data.into())
}
