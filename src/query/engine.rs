//! The jq engine: a filter compiled by the `jaq` crates, run over a stream of JSON values on a
//! thread of its own, under a deadline and a stack guard checked at every step of the
//! interpreter, keeping only the page's results.
//!
//! jaq has no hook to stop a running filter, but it looks its program up
//! ([`HasLut::lut`]) before evaluating every term: [`Guarded`] checks the budget there, and
//! `range`, the one native filter that yields unboundedly without evaluating terms, is replaced
//! by one that checks it per value. An exhausted budget unwinds the thread with
//! [`std::panic::resume_unwind`] (which runs no panic hook), caught where the thread starts.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::time::{Duration, Instant};

use bytes::Bytes;
use jaq_core::data::{DataT, HasLut};
use jaq_core::load::{Arena, File, Loader, span};
use jaq_core::native::{Fun, run as native};
use jaq_core::{Ctx, Exn, Lut, Vars, box_iter::box_once};
use jaq_json::Val;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::render::Page;
use crate::read::ReadError;

/// The thread a query runs on gets this much stack (address space: only what is used is
/// memory); a filter recursing past [`STACK_GUARD`] of it stops, and the rest is left for
/// dropping and printing deeply nested values, which recurse too.
pub(crate) const STACK_BYTES: usize = 1 << 30;
/// Stack a filter may use before it is stopped.
const STACK_GUARD: usize = 256 << 20;
/// The deepest nesting of arrays and objects an input value may have (jq's own limit).
pub(crate) const MAX_DEPTH: usize = 10_000;
/// Steps between two looks at the clock.
const CLOCK_EVERY: u64 = 1 << 10;

/// Why a filter was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Runaway {
    /// It ran past its deadline.
    Time,
    /// It recursed deeper than the stack guard.
    Depth,
    /// It needed more memory than its bound (only a query in a child process can tell: the
    /// child's failed allocation aborts it).
    Memory,
}

/// The running query's budget, per thread (a query owns its thread).
struct Budget {
    deadline: Cell<Option<Instant>>,
    steps: Cell<u64>,
    stack_base: Cell<usize>,
}

thread_local! {
    static BUDGET: Budget = const {
        Budget { deadline: Cell::new(None), steps: Cell::new(0), stack_base: Cell::new(0) }
    };
}

/// The address of a local: how deep the stack is here.
#[inline(always)]
fn stack_here() -> usize {
    let marker = 0u8;
    std::ptr::addr_of!(marker) as usize
}

/// One step of the interpreter: unwinds with [`Runaway`] once the budget is spent.
fn step() {
    BUDGET.with(|b| {
        let steps = b.steps.get().wrapping_add(1);
        b.steps.set(steps);
        if b.stack_base.get().abs_diff(stack_here()) > STACK_GUARD {
            resume_unwind(Box::new(Runaway::Depth));
        }
        if steps % CLOCK_EVERY == 0 && b.deadline.get().is_some_and(|d| Instant::now() > d) {
            resume_unwind(Box::new(Runaway::Time));
        }
    });
}

/// The data jaq's interpreter carries: JSON values, and a program lookup that counts steps.
struct Query;

impl DataT for Query {
    type V<'a> = Val;
    type Data<'a> = Guarded<'a>;
}

/// The compiled program, looked up through [`step`].
#[derive(Clone)]
struct Guarded<'a>(&'a Lut<Query>);

impl<'a> HasLut<'a, Query> for Guarded<'a> {
    fn lut(&self) -> &'a Lut<Query> {
        step();
        self.0
    }
}

/// Natives a query must not run (they read the worker's environment, write its logs or end
/// the process); each is replaced by one that fails.
const REFUSED: &[&str] = &["env", "halt", "debug_empty", "stderr_empty"];

/// jaq's natives, with [`REFUSED`] ones failing and `range/3` checking the budget per value.
fn natives() -> impl Iterator<Item = Fun<Query>> {
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    funs.map(|(name, arity, f)| match name {
        "range" if arity.len() == 3 => native((name, arity, |mut cv| {
            let by = cv.0.pop_var();
            let to = cv.0.pop_var();
            let from = cv.0.pop_var();
            Box::new(range(from, to, by))
        })),
        _ if REFUSED.contains(&name) => native((name, arity, |_| {
            box_once(Err(Exn::from(jaq_core::Error::str(
                "this filter is not available in query_tool_result",
            ))))
        })),
        _ => (name, arity, f),
    })
}

/// jq's `range($from; $to; $by)`, one [`step`] per value.
fn range<'a>(from: Val, to: Val, by: Val) -> impl Iterator<Item = jaq_core::ValX<'a, Val>> + 'a {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let up = by.partial_cmp(&Val::from(0usize)).unwrap_or(Equal);
    let mut next = Some(Ok(from));
    std::iter::from_fn(move || {
        step();
        match next.take()? {
            Ok(x) => {
                let more = match up {
                    Greater => x < to,
                    Less => x > to,
                    Equal => x != to,
                };
                if more {
                    next = Some((x.clone() + by.clone()).map_err(Exn::from));
                }
                more.then_some(Ok(x))
            }
            Err(e) => Some(Err(e)),
        }
    })
}

/// A filter, compiled; or what is wrong with it, where.
pub(crate) struct Program {
    filter: jaq_core::Filter<Query>,
}

impl Program {
    /// Compile `code`; a lex, parse or compile error is a [`ReadError`] naming the char it is at.
    pub(crate) fn compile(code: &str) -> Result<Self, ReadError> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let arena = Arena::default();
        let modules = Loader::new(defs)
            .load(&arena, File { code, path: () })
            .map_err(|errors| {
                let found = errors.into_iter().flat_map(|(_, e)| match e {
                    jaq_core::load::Error::Io(io) => io
                        .into_iter()
                        .map(|(s, m)| (s, format!("cannot load module: {m}")))
                        .collect(),
                    jaq_core::load::Error::Lex(lex) => lex
                        .into_iter()
                        .map(|(expect, s)| (s, format!("expected {}", expect.as_str())))
                        .collect::<Vec<_>>(),
                    jaq_core::load::Error::Parse(parse) => parse
                        .into_iter()
                        .map(|(expect, s)| (s, format!("expected {}", expect.as_str())))
                        .collect(),
                });
                bad_filter(code, found)
            })?;
        let filter = jaq_core::Compiler::default()
            .with_funs(natives())
            .compile(modules)
            .map_err(|errors| {
                let found = errors
                    .into_iter()
                    .flat_map(|(_, e)| e)
                    .map(|(s, undefined)| (s, format!("undefined {} `{s}`", undefined.as_str())));
                bad_filter(code, found)
            })?;
        Ok(Self { filter })
    }
}

/// The model's retry message for a filter jaq refuses: its first error, and where.
fn bad_filter<'s>(code: &str, mut found: impl Iterator<Item = (&'s str, String)>) -> ReadError {
    let (at, what) = match found.next() {
        Some((part, what)) => (span(code, part).start.min(code.len()), what),
        None => (0, "not a filter".to_owned()),
    };
    let at = code.floor_char_boundary(at);
    let column = code[..at].chars().count() + 1;
    let line = code.lines().next().unwrap_or_default();
    let caret = " ".repeat(code[..at].chars().count().min(line.chars().count()));
    ReadError::BadArgument(format!(
        "`filter` is not a valid jq filter: {what} at char {column}:\n  {line}\n  {caret}^\n\
         Use jq syntax, e.g. `.items[] | select(.status == \"failed\") | .id`."
    ))
}

/// How a run ended.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Ended {
    /// Every value was filtered: the page, the results in all, and the inputs filtered.
    Done(Page),
    /// Line `line` (from 1) of a JSON Lines run is not one JSON value: jaq's message, the line.
    NotLines {
        line: u64,
        error: String,
        text: String,
    },
    /// A line, or the whole document, is longer than the cap.
    TooLong { line: u64 },
    /// The filter ran away.
    Runaway(Runaway),
}

/// How the payload arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Mode {
    /// One JSON value per line, filtered line by line.
    Lines,
    /// The whole payload, parsed as a sequence of JSON values.
    Document,
}

/// What a run needs: the filter's text, the page wanted, the caps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Job {
    pub(crate) code: String,
    pub(crate) offset: u64,
    pub(crate) limit: u64,
    pub(crate) deadline: Duration,
    pub(crate) max_bytes: u64,
    pub(crate) mode: Mode,
}

/// Run `job` over the chunks `input` delivers, on a thread of its own; the answer arrives on
/// the returned channel (closed without one only if the thread could not start).
pub(crate) fn spawn(
    job: Job,
    input: mpsc::Receiver<Bytes>,
) -> std::io::Result<tokio::sync::oneshot::Receiver<Result<Ended, ReadError>>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("overspill-query".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let started = Instant::now();
            BUDGET.with(|b| {
                b.deadline.set(Some(started + job.deadline));
                b.stack_base.set(stack_here());
            });
            let ended = catch_unwind(AssertUnwindSafe(|| run(&job, input)));
            let ended = match ended {
                Ok(ended) => ended,
                Err(payload) => match payload.downcast::<Runaway>() {
                    Ok(runaway) => Ok(Ended::Runaway(*runaway)),
                    Err(panic) => {
                        let what = (panic.downcast_ref::<&str>().map(|s| s.to_string()))
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        tracing::error!(
                            target: "overspill::bug",
                            "the jq engine panicked on filter {:?}: {what}",
                            job.code
                        );
                        Err(ReadError::BadArgument(
                            "The filter failed inside the jq engine; try a simpler filter.".into(),
                        ))
                    }
                },
            };
            let _ = tx.send(ended);
        })?;
    Ok(rx)
}

/// The body of a run: compile, then feed every input value through the filter.
fn run(job: &Job, mut input: mpsc::Receiver<Bytes>) -> Result<Ended, ReadError> {
    let program = Program::compile(&job.code)?;
    let mut scan = Scan {
        program: &program,
        page: Page::new(job.offset, job.limit),
    };
    match job.mode {
        Mode::Document => {
            let mut whole = Vec::new();
            while let Some(chunk) = input.blocking_recv() {
                if (whole.len() + chunk.len()) as u64 > job.max_bytes {
                    return Ok(Ended::TooLong { line: 1 });
                }
                whole.extend_from_slice(&chunk);
            }
            if let Some(ended) = too_deep(&whole) {
                return Ok(ended);
            }
            for value in jaq_json::read::parse_many(&whole) {
                match value {
                    Ok(value) => scan.value(value),
                    Err(e) => return Ok(not_json(&whole, &e.to_string())),
                }
            }
        }
        Mode::Lines => {
            let mut carry: Vec<u8> = Vec::new();
            let mut line = 0u64;
            let mut feed = |bytes: &[u8], scan: &mut Scan| -> Option<Ended> {
                line += 1;
                let text = bytes.strip_suffix(b"\r").unwrap_or(bytes);
                if text.iter().all(u8::is_ascii_whitespace) {
                    return None;
                }
                if text.len() > MAX_DEPTH && too_deep(text).is_some() {
                    return Some(Ended::NotLines {
                        line,
                        error: format!("nested deeper than {MAX_DEPTH} levels"),
                        text: shorten(text),
                    });
                }
                match jaq_json::read::parse_single(text) {
                    Ok(value) => {
                        scan.value(value);
                        None
                    }
                    Err(e) => Some(Ended::NotLines {
                        line,
                        error: e.to_string(),
                        text: shorten(text),
                    }),
                }
            };
            while let Some(chunk) = input.blocking_recv() {
                let mut rest = &chunk[..];
                while let Some(end) = memchr::memchr(b'\n', rest) {
                    let ended = match carry.is_empty() {
                        true => feed(&rest[..end], &mut scan),
                        false => {
                            carry.extend_from_slice(&rest[..end]);
                            let ended = feed(&carry, &mut scan);
                            carry.clear();
                            ended
                        }
                    };
                    if let Some(ended) = ended {
                        return Ok(ended);
                    }
                    rest = &rest[end + 1..];
                }
                if (carry.len() + rest.len()) as u64 > job.max_bytes {
                    return Ok(Ended::TooLong { line: line + 1 });
                }
                carry.extend_from_slice(rest);
            }
            if let Some(ended) = feed(&carry, &mut scan) {
                return Ok(ended);
            }
        }
    }
    Ok(Ended::Done(scan.page))
}

/// The "not JSON" answer for a document jaq could not parse: the line its error is on.
fn not_json(whole: &[u8], error: &str) -> Ended {
    let at = error
        .strip_prefix("byte offset ")
        .and_then(|rest| rest.split_once(':'))
        .and_then(|(n, _)| n.parse::<usize>().ok())
        .unwrap_or(0)
        .min(whole.len());
    let start = whole[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &whole[at..]).map_or(whole.len(), |i| at + i);
    Ended::NotLines {
        line: whole[..start].iter().filter(|&&b| b == b'\n').count() as u64 + 1,
        error: error.to_owned(),
        text: shorten(&whole[start..end]),
    }
}

/// The "not JSON" answer for JSON nested deeper than [`MAX_DEPTH`] (which jaq's parser would
/// recurse into without a limit): the line where it gets too deep.
fn too_deep(bytes: &[u8]) -> Option<Ended> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (at, &b) in bytes.iter().enumerate() {
        match (in_string, b) {
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') | (false, b'"') => in_string = !in_string,
            (false, b'[' | b'{') => {
                depth += 1;
                if depth > MAX_DEPTH {
                    let error = format!("byte offset {at}: nested deeper than {MAX_DEPTH} levels");
                    return Some(not_json(bytes, &error));
                }
            }
            (false, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A bad line as the model sees it: at most 200 chars of it.
fn shorten(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut short: String = text.chars().take(200).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// Values through the filter, their results onto the page.
struct Scan<'p> {
    program: &'p Program,
    page: Page,
}

impl Scan<'_> {
    /// Run the filter on one input value.
    fn value(&mut self, input: Val) {
        self.page.inputs += 1;
        let filter = &self.program.filter;
        let ctx = Ctx::<Query>::new(Guarded(&filter.lut), Vars::new([]));
        for result in filter.id.run((ctx, input)).map(jaq_core::unwrap_valr) {
            match result {
                Ok(value) => self.page.result(|out| {
                    let _ = write!(out, "{value}");
                }),
                Err(e) => {
                    self.page.error(self.page.inputs, || e.to_string());
                    break;
                }
            }
        }
    }
}
