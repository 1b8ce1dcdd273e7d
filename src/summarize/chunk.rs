//! Outputs larger than the model's context: summarize line-bounded chunks, then the summaries.
//!
//! Progress is a plain serializable value ([`ChunkProgress`]) handed out after every finished
//! chunk, so an activity can heartbeat it and a retried attempt can resume from the last
//! finished chunk: no chunk is summarized twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::limits::prompt::Template;
use crate::limits::pyfmt::py_strip;
use crate::limits::text::char_len;
use crate::limits::{SummarizeError, Summarizer, Summary, SummaryRequest, Usage};

/// How many levels of summaries-of-summaries are made before the last one is sent as it is.
const MAX_LEVELS: u32 = 4;

/// Between the summaries of two chunks when they are summarized together.
const JOIN: &str = "\n\n";

/// The most output one model call may carry, in characters (Unicode scalar values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkBudget {
    /// Characters of tool output per call; larger outputs are chunked.
    pub max_chars: usize,
}

impl ChunkBudget {
    /// The context assumed when none is configured: 128k tokens (current OpenAI models).
    pub const DEFAULT_CONTEXT_TOKENS: u64 = 128_000;
    /// Tokens kept free for the prompt template, the system message and the summary itself.
    pub const RESERVED_TOKENS: u64 = 4_096;
    /// Characters per token assumed when converting (conservative: code and JSON run near 3).
    const ASSUMED_CHARS_PER_TOKEN: u64 = 3;

    /// A budget of `max_chars` characters (at least 1).
    pub fn chars(max_chars: usize) -> Self {
        Self {
            max_chars: max_chars.max(1),
        }
    }

    /// The budget for a model with a context of `tokens`: `(tokens - reserved) * 3` characters,
    /// at least 1,000, where `reserved` is [`Self::reserved_tokens`].
    pub fn from_context_tokens(tokens: u64) -> Self {
        let usable =
            tokens.saturating_sub(Self::reserved_tokens(tokens)) * Self::ASSUMED_CHARS_PER_TOKEN;
        Self::chars(usize::try_from(usable).unwrap_or(usize::MAX).max(1_000))
    }

    /// The tokens of a `context`-token window kept free for the prompt template, the system
    /// message and the summary: [`Self::RESERVED_TOKENS`], or a quarter of a smaller window (a
    /// 2,048-token model keeps 512).
    pub fn reserved_tokens(context: u64) -> u64 {
        Self::RESERVED_TOKENS.min(context / 4)
    }
}

impl Default for ChunkBudget {
    fn default() -> Self {
        Self::from_context_tokens(Self::DEFAULT_CONTEXT_TOKENS)
    }
}

/// How far a chunked summary got: heartbeat it after each chunk, pass it back to resume.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChunkProgress {
    /// 0 while summarizing chunks of the output; 1 while summarizing chunks of the joined
    /// level-0 summaries (when those are still over budget); and so on.
    pub level: u32,
    /// How many chunks this level has.
    pub chunks: usize,
    /// The stripped summaries of this level's finished chunks, in order.
    pub done: Vec<String>,
    /// The text chunked at this level when `level > 0` (the joined summaries of the level below).
    pub source: Option<String>,
    /// What every call so far cost, including calls of earlier attempts.
    pub usage: Usage,
    /// The chunk size, in characters, learned from the model's context refusal when it is
    /// smaller than the configured budget (`None`: the budget as configured).
    pub max_chars: Option<usize>,
}

impl ChunkProgress {
    /// The chunk size in force: the learned one when it is under `budget`, else `budget`'s.
    fn max_chars(&self, budget: ChunkBudget) -> usize {
        let learned = self.max_chars.unwrap_or(usize::MAX);
        learned.min(budget.max_chars).max(1)
    }

    /// Start this level over at `max_chars`, keeping what the calls so far cost.
    fn refitted(self, source: Option<String>, max_chars: usize) -> Self {
        Self {
            source,
            max_chars: Some(max_chars),
            ..self.next_level(self.level)
        }
    }

    /// Start `level` with nothing done, keeping what the calls so far cost and the size learned.
    fn next_level(&self, level: u32) -> Self {
        Self {
            level,
            usage: self.usage,
            max_chars: self.max_chars,
            ..Self::default()
        }
    }
}

/// Summarize `request`, chunking when its output is over `budget`.
///
/// An output within budget is one call with `request` as given. A larger one is cut into
/// [`chunk_lines`] chunks, each summarized with the prompt around it, and the stripped summaries,
/// joined by a blank line, are summarized once more (chunked again while over budget, up to 4
/// levels). A context refusal re-chunks at the size the server's window allows. `on_chunk`'s
/// future is awaited after every finished chunk (an activity heartbeats there); it borrows none of
/// the progress, which keeps the whole future `Send`. Pass the last progress back as `resume` and
/// only unfinished chunks are summarized (a `resume` of another request is ignored). The usage is
/// that of every call, earlier attempts' included.
///
/// A chunk's prompt is `request.prompt` with the chunk in place of the output, when the output
/// occurs in it exactly once; otherwise the default template.
pub async fn summarize_chunked<M: Summarizer, F>(
    model: &M,
    request: SummaryRequest<'_>,
    budget: ChunkBudget,
    resume: Option<ChunkProgress>,
    mut on_chunk: impl FnMut(&ChunkProgress) -> F,
) -> Result<Summary, SummarizeError>
where
    F: Future<Output = ()>,
{
    let mut progress = resume
        .filter(|p| fits(p, request.output, budget))
        .unwrap_or_default();
    let around = around_output(&request);
    let prompt_for = |text: &str| match around {
        Some((before, after)) => [before, text, after].concat(),
        None => Template::reference().render(request.tool_name, text),
    };
    'levels: loop {
        let max = progress.max_chars(budget);
        let source = progress.source.take();
        let text = source.as_deref().unwrap_or(request.output);
        if !over(text, max) || progress.level >= MAX_LEVELS {
            let prompt;
            let call = if source.is_none() {
                // Nothing was chunked: the request exactly as given.
                request
            } else {
                prompt = prompt_for(text);
                SummaryRequest {
                    output: text,
                    prompt: &prompt,
                    ..request
                }
            };
            match model.summarize(call).await {
                Ok(mut summary) => {
                    let mut usage = progress.usage;
                    usage += summary.usage;
                    summary.usage = usage;
                    return Ok(summary);
                }
                Err(error) => match refit(&error, call, progress.level) {
                    Some(smaller) => {
                        progress = progress.refitted(source, smaller);
                        continue;
                    }
                    None => return Err(error),
                },
            }
        }
        let chunks = chunk_lines(text, max);
        progress.chunks = chunks.len();
        progress.source = source.clone();
        for chunk in chunks.iter().skip(progress.done.len()) {
            let prompt = prompt_for(chunk);
            let call = SummaryRequest {
                output: chunk,
                prompt: &prompt,
                ..request
            };
            match model.summarize(call).await {
                Ok(summary) => {
                    progress.done.push(py_strip(&summary.text).to_owned());
                    progress.usage += summary.usage;
                    on_chunk(&progress).await;
                }
                Err(error) => match refit(&error, call, progress.level) {
                    Some(smaller) => {
                        progress = progress.refitted(source, smaller);
                        continue 'levels;
                    }
                    None => return Err(error),
                },
            }
        }
        let joined = progress.done.join(JOIN);
        // Summaries no shorter than their source are summarized once more, as they are.
        let level = if joined.len() < text.len() {
            progress.level + 1
        } else {
            MAX_LEVELS
        };
        progress = ChunkProgress {
            source: Some(joined),
            ..progress.next_level(level)
        };
    }
}

/// The smallest chunk a context refusal may call for; below it the refusal stands (and the
/// action's `then` runs), rather than hundreds of calls of a few words each.
const MIN_REFIT_CHARS: u64 = 256;

/// The smaller chunk size, in characters, that a context refusal of `call` calls for, if
/// re-chunking can help: the window the server reported, less room for the summary
/// ([`ChunkBudget::reserved_tokens`]), at the characters per token the server counted in this
/// prompt (3 when it gave no count), with a tenth to spare, less the prompt around the output.
fn refit(error: &SummarizeError, call: SummaryRequest<'_>, level: u32) -> Option<usize> {
    let SummarizeError::ContextExceeded {
        context_tokens,
        prompt_tokens,
        ..
    } = error
    else {
        return None;
    };
    if level >= MAX_LEVELS {
        return None;
    }
    let (prompt_chars, output_chars) = (char_len(call.prompt), char_len(call.output));
    let usable = context_tokens.saturating_sub(ChunkBudget::reserved_tokens(*context_tokens));
    let fits = match prompt_tokens {
        Some(tokens) => usable.saturating_mul(prompt_chars) / tokens,
        None => usable.saturating_mul(ChunkBudget::ASSUMED_CHARS_PER_TOKEN),
    } / 10
        * 9;
    let max = fits.saturating_sub(prompt_chars.saturating_sub(output_chars));
    let helps = (MIN_REFIT_CHARS..output_chars).contains(&max);
    tracing::warn!(
        target: "overspill::summarize",
        context_tokens,
        prompt_tokens,
        prompt_chars,
        chunk_chars = max,
        "the model's context is smaller than the chunk budget: {}",
        if helps { "re-chunking to fit it" } else { "re-chunking cannot fit it" }
    );
    helps.then(|| usize::try_from(max).unwrap_or(usize::MAX))
}

/// Whether `resume` belongs to this output and budget.
fn fits(resume: &ChunkProgress, output: &str, budget: ChunkBudget) -> bool {
    let max = resume.max_chars(budget);
    let text = match (resume.level, resume.source.as_deref()) {
        (0, None) => output,
        (level, Some(source)) if level > 0 => source,
        _ => return false,
    };
    let chunks = chunk_lines(text, max).len();
    let fits = resume.chunks == chunks && resume.done.len() <= chunks && over(text, max);
    if !fits {
        tracing::warn!(
            target: "overspill::summarize",
            level = resume.level,
            chunks = resume.chunks,
            done = resume.done.len(),
            "chunk progress does not match this output; starting over"
        );
    }
    fits
}

fn over(text: &str, max: usize) -> bool {
    // Cheap first: a text of at most `max` bytes has at most `max` characters.
    text.len() > max && char_len(text) > max as u64
}

/// Split `text` into chunks of at most `max` characters, at line ends; a line longer than `max`
/// is cut into `max`-character pieces. Concatenated, the chunks are `text`.
pub fn chunk_lines(text: &str, max: usize) -> Vec<&str> {
    let max = max.max(1);
    let mut chunks = Vec::new();
    let (mut start, mut count, mut pos) = (0usize, 0usize, 0usize);
    for line in text.split_inclusive('\n') {
        let n = line.chars().count();
        if count > 0 && count + n > max {
            chunks.push(&text[start..pos]);
            start = pos;
            count = 0;
        }
        if n > max {
            for (i, _) in line.char_indices() {
                if count == max {
                    chunks.push(&text[start..pos + i]);
                    start = pos + i;
                    count = 0;
                }
                count += 1;
            }
        } else {
            count += n;
        }
        pos += line.len();
    }
    if pos > start {
        chunks.push(&text[start..pos]);
    }
    chunks
}

/// The prompt before and after the output, when the output occurs in it exactly once.
fn around_output<'a>(request: &SummaryRequest<'a>) -> Option<(&'a str, &'a str)> {
    let (prompt, output) = (request.prompt, request.output);
    // Every occurrence lies between the first and the last: one when they are the same.
    let at = (prompt.find(output))
        .filter(|&at| !output.is_empty() && prompt.rfind(output) == Some(at))?;
    Some((&prompt[..at], &prompt[at + output.len()..]))
}

/// A model that chunks outputs over its budget: what the worker and `overspill reduce`
/// summarize with. As a [`Summarizer`] it starts over each time; [`Chunked::summarize_resumable`]
/// resumes and reports progress, for the summarize activity's heartbeats.
///
/// A context refusal that re-chunked one summary (see [`summarize_chunked`]) is remembered: later
/// summaries, by this value and its clones, chunk at the learned size from the start.
#[derive(Debug, Clone)]
pub struct Chunked<M> {
    model: M,
    budget: ChunkBudget,
    /// The chunk size learned from a context refusal (`usize::MAX` until one).
    learned: Arc<AtomicUsize>,
}

impl<M> Chunked<M> {
    /// Chunk `model`'s calls at `budget`.
    pub fn new(model: M, budget: ChunkBudget) -> Self {
        Self {
            model,
            budget,
            learned: Arc::new(AtomicUsize::new(usize::MAX)),
        }
    }

    /// The wrapped model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The most output one call carries, as configured.
    pub fn budget(&self) -> ChunkBudget {
        self.budget
    }

    /// The most output one call carries now: the configured budget, or the smaller one learned
    /// from the model's context refusal.
    pub fn effective_budget(&self) -> ChunkBudget {
        let learned = self.learned.load(Ordering::Relaxed);
        ChunkBudget::chars(learned.min(self.budget.max_chars))
    }
}

impl<M: Summarizer> Chunked<M> {
    /// [`summarize_chunked`] with this model and its [`effective budget`](Self::effective_budget):
    /// resume from `resume`, report progress after every chunk to `on_chunk`.
    pub async fn summarize_resumable<F: Future<Output = ()>>(
        &self,
        request: SummaryRequest<'_>,
        resume: Option<ChunkProgress>,
        mut on_chunk: impl FnMut(&ChunkProgress) -> F,
    ) -> Result<Summary, SummarizeError> {
        let learned = &self.learned;
        let budget = self.effective_budget();
        summarize_chunked(&self.model, request, budget, resume, |progress| {
            if let Some(max) = progress.max_chars {
                learned.fetch_min(max, Ordering::Relaxed);
            }
            on_chunk(progress)
        })
        .await
    }
}

impl<M: Summarizer> Summarizer for Chunked<M> {
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        self.summarize_resumable(request, None, |_| async {}).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Echoes a summary naming the call and counts tokens as characters; fails on request.
    #[derive(Default)]
    struct Fake {
        prompts: Mutex<Vec<String>>,
        fail_at: Option<usize>,
        /// Refuse prompts over this many characters as llama.cpp refuses them.
        context: Option<u64>,
    }

    impl Fake {
        fn prompts(&self) -> Vec<String> {
            self.prompts.lock().map(|p| p.clone()).unwrap_or_default()
        }
    }

    impl Summarizer for Fake {
        async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
            let n = {
                let mut prompts = self
                    .prompts
                    .lock()
                    .map_err(|_| SummarizeError::NotConfigured("poisoned".into()))?;
                prompts.push(request.prompt.to_owned());
                prompts.len()
            };
            let tokens = request.prompt.chars().count() as u64;
            if let Some(context) = self.context.filter(|&c| tokens > c) {
                return Err(SummarizeError::ContextExceeded {
                    status: 400,
                    context_tokens: context,
                    prompt_tokens: Some(tokens),
                    message: "exceeds the available context size".into(),
                });
            }
            if self.fail_at == Some(n) {
                return Err(SummarizeError::Unavailable {
                    status: None,
                    message: "killed".into(),
                    retry_after: None,
                });
            }
            let first = request.output.lines().next().unwrap_or("");
            Ok(Summary {
                text: format!(
                    "  s{n}:{}  \n",
                    first.get(..first.len().min(6)).unwrap_or("")
                ),
                usage: Usage {
                    requests: 1,
                    input_tokens: request.prompt.chars().count() as u64,
                    output_tokens: 1,
                },
            })
        }
    }

    fn lines(n: usize) -> String {
        (0..n).map(|i| format!("line {i:03}\n")).collect()
    }

    #[test]
    fn splits_on_line_ends() {
        let text = lines(10); // 9 chars a line
        let chunks = chunk_lines(&text, 20);
        assert_eq!(chunks.len(), 5);
        assert!(
            chunks
                .iter()
                .all(|c| c.chars().count() <= 20 && c.ends_with('\n'))
        );
        assert_eq!(chunks.concat(), text);
        assert_eq!(chunk_lines("abc", 10), vec!["abc"]);
        assert!(chunk_lines("", 10).is_empty());
    }

    #[test]
    fn cuts_long_lines_at_char_boundaries() {
        let text = format!("ab\n{}\ncd", "é".repeat(25));
        let chunks = chunk_lines(&text, 10);
        assert_eq!(chunks.concat(), text);
        assert!(chunks.iter().all(|c| c.chars().count() <= 10), "{chunks:?}");
        assert_eq!(chunks[0], "ab\n");
        assert_eq!(chunk_lines("abcdef", 1).len(), 6);
        assert_eq!(chunk_lines("abc", 0), vec!["a", "b", "c"]);
    }

    fn request<'a>(output: &'a str, prompt: &'a str) -> SummaryRequest<'a> {
        SummaryRequest {
            tool_name: "grep",
            output,
            prompt,
            model: Some("m"),
        }
    }

    #[tokio::test]
    async fn within_budget_is_one_unchanged_call() {
        let fake = Fake::default();
        let output = lines(3);
        let prompt = Template::reference().render("grep", &output);
        let summary = summarize_chunked(
            &fake,
            request(&output, &prompt),
            ChunkBudget::chars(1_000),
            None,
            |_| async {},
        )
        .await
        .expect("a summary");
        assert_eq!(fake.prompts(), vec![prompt]);
        assert_eq!(summary.text, "  s1:line 0  \n");
        assert_eq!(summary.usage.requests, 1);
    }

    #[tokio::test]
    async fn chunks_then_summarizes_the_summaries() {
        let fake = Fake::default();
        let output = lines(40); // 360 chars
        let prompt = Template::parse("T={tool_name} <{output}> end")
            .expect("a template")
            .render("grep", &output);
        let mut seen = Vec::new();
        let summary = summarize_chunked(
            &fake,
            request(&output, &prompt),
            ChunkBudget::chars(100),
            None,
            |p: &ChunkProgress| {
                seen.push(p.clone());
                async {}
            },
        )
        .await
        .expect("a summary");
        let prompts = fake.prompts();
        assert_eq!(prompts.len(), 5, "4 chunks and the final");
        assert_eq!(prompts[0], format!("T=grep <{}> end", lines(11)));
        assert_eq!(seen.len(), 4);
        assert_eq!(
            seen[3].done,
            ["s1:line 0", "s2:line 0", "s3:line 0", "s4:line 0"]
        );
        assert_eq!(
            prompts[4],
            "T=grep <s1:line 0\n\ns2:line 0\n\ns3:line 0\n\ns4:line 0> end"
        );
        assert_eq!(summary.text, "  s5:s1:lin  \n");
        assert_eq!(summary.usage.requests, 5);
        let input: u64 = prompts.iter().map(|p| p.chars().count() as u64).sum();
        assert_eq!(summary.usage.input_tokens, input);
    }

    #[tokio::test]
    async fn resumes_after_the_last_finished_chunk() {
        let output = lines(40);
        let prompt = Template::reference().render("grep", &output);
        let budget = ChunkBudget::chars(100);
        let killed = Fake {
            fail_at: Some(3),
            ..Fake::default()
        };
        let mut last = None;
        let err = summarize_chunked(
            &killed,
            request(&output, &prompt),
            budget,
            None,
            |p: &ChunkProgress| {
                last = Some(p.clone());
                async {}
            },
        )
        .await;
        assert!(err.is_err());
        let last = last.expect("progress after two chunks");
        assert_eq!(last.done.len(), 2);
        let json = serde_json::to_string(&last).unwrap_or_default();
        let back: ChunkProgress = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, last);

        let fresh = Fake::default();
        let summary = summarize_chunked(
            &fresh,
            request(&output, &prompt),
            budget,
            Some(back),
            |_| async {},
        )
        .await
        .expect("a summary");
        let prompts = fresh.prompts();
        assert_eq!(prompts.len(), 3, "chunks 3 and 4, then the final");
        let chunks = chunk_lines(&output, 100);
        assert!(prompts[0].contains(chunks[2]) && !prompts[0].contains(chunks[1]));
        assert!(prompts[2].contains("s1:line 0\n\ns2:line 0\n\ns1:line 0\n\ns2:line 0"));
        assert_eq!(summary.usage.requests, 2 + 3);
    }

    #[tokio::test]
    async fn a_foreign_resume_is_ignored() {
        let output = lines(40);
        let prompt = Template::reference().render("grep", &output);
        let foreign = ChunkProgress {
            chunks: 9,
            done: vec!["x".into()],
            ..ChunkProgress::default()
        };
        let fake = Fake::default();
        summarize_chunked(
            &fake,
            request(&output, &prompt),
            ChunkBudget::chars(100),
            Some(foreign),
            |_| async {},
        )
        .await
        .expect("a summary");
        assert_eq!(fake.prompts().len(), 5);
    }

    #[tokio::test]
    async fn summaries_over_budget_are_chunked_again() {
        let output = lines(200); // 1800 chars, 18 chunks of 100; 18 summaries of ~9 chars
        let prompt = Template::reference().render("grep", &output);
        let fake = Fake::default();
        let summary = summarize_chunked(
            &fake,
            request(&output, &prompt),
            ChunkBudget::chars(100),
            None,
            |_| async {},
        )
        .await
        .expect("a summary");
        // 18 chunks → 18 summaries joined (~200 chars) → 2 or more chunks → final.
        let n = fake.prompts().len();
        assert!(n > 18 + 1, "{n}");
        assert_eq!(summary.usage.requests, n as u64);
    }

    #[tokio::test]
    async fn falls_back_to_the_default_template_when_the_output_is_not_unique() {
        let output = "ab\n".repeat(50);
        let prompt = format!("{output}{output}");
        let fake = Fake::default();
        summarize_chunked(
            &fake,
            request(&output, &prompt),
            ChunkBudget::chars(60),
            None,
            |_| async {},
        )
        .await
        .expect("a summary");
        assert!(fake.prompts()[0].starts_with("The following output from the `grep` tool"));
    }

    #[tokio::test]
    async fn runs_in_a_spawned_task() {
        // The activity's future must be Send, heartbeat closure included.
        let handle = tokio::spawn(async {
            let fake = std::sync::Arc::new(Fake::default());
            let beats = std::sync::Arc::new(Mutex::new(0usize));
            let output = lines(40);
            let prompt = Template::reference().render("grep", &output);
            summarize_chunked(
                &*fake,
                request(&output, &prompt),
                ChunkBudget::chars(100),
                None,
                |p: &ChunkProgress| {
                    let done = p.done.len();
                    let beats = &beats;
                    async move {
                        tokio::task::yield_now().await;
                        if let Ok(mut n) = beats.lock() {
                            *n = done;
                        }
                    }
                },
            )
            .await
            .map(|s| s.usage.requests)
        });
        assert_eq!(handle.await.ok().and_then(Result::ok), Some(5));
    }

    #[tokio::test]
    async fn a_context_refusal_rechunks_to_the_reported_window() {
        let fake = Fake {
            context: Some(1_000),
            ..Fake::default()
        };
        let output = lines(400); // 3,600 chars, one call under the configured budget
        let prompt = Template::reference().render("grep", &output);
        let chunked = Chunked::new(fake, ChunkBudget::chars(100_000));
        let summary = chunked
            .summarize(request(&output, &prompt))
            .await
            .expect("a summary");
        let prompts = chunked.model().prompts();
        assert_eq!(prompts[0], prompt, "first the whole output, refused");
        // (1000 - 250) * 9/10 = 675 characters of prompt, less the template around the output.
        let around = prompt.chars().count() - output.chars().count();
        let learned = 675 - around;
        assert_eq!(chunked.effective_budget(), ChunkBudget::chars(learned));
        assert!(
            prompts[1..].iter().all(|p| p.chars().count() <= 675),
            "{prompts:?}"
        );
        let chunks = chunk_lines(&output, learned).len();
        assert_eq!(
            summary.usage.requests,
            chunks as u64 + 1,
            "the refusal is not a summary"
        );
        assert_eq!(prompts.len(), 1 + chunks + 1);

        // The next summary chunks at the learned size from the start.
        let again = chunked
            .summarize(request(&output, &prompt))
            .await
            .expect("a summary");
        assert_eq!(again.usage.requests, chunks as u64 + 1);
        assert_eq!(chunked.model().prompts().len(), prompts.len() + chunks + 1);
    }

    #[tokio::test]
    async fn a_refusal_that_rechunking_cannot_fit_stands() {
        // A window so small that the template alone fills it.
        let fake = Fake {
            context: Some(300),
            ..Fake::default()
        };
        let output = lines(400);
        let prompt = Template::reference().render("grep", &output);
        let error = summarize_chunked(
            &fake,
            request(&output, &prompt),
            ChunkBudget::chars(100_000),
            None,
            |_| async {},
        )
        .await
        .expect_err("refused");
        assert_eq!(error.type_name(), "ContextExceeded");
        assert_eq!(fake.prompts().len(), 1);
    }

    #[test]
    fn budgets() {
        assert_eq!(
            ChunkBudget::from_context_tokens(8_192).max_chars,
            (8_192 - 2_048) * 3
        );
        assert_eq!(
            ChunkBudget::from_context_tokens(2_048).max_chars,
            (2_048 - 512) * 3
        );
        assert_eq!(
            ChunkBudget::from_context_tokens(16_384).max_chars,
            (16_384 - 4_096) * 3
        );
        assert_eq!(ChunkBudget::from_context_tokens(10).max_chars, 1_000);
        assert_eq!(ChunkBudget::default().max_chars, (128_000 - 4_096) * 3);
    }
}
