//! The pipeline, as the reference runs it: exempt tool kinds and the tool filter pass a result
//! through untouched; otherwise the return value and a ToolReturn's text content are each
//! measured, given the band their size falls in, and reduced by the band's action, whose `then`
//! runs when it fails; the parts are then assembled back into one result.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::config::{Action, Limits};
use super::output::{Envelope, ToolCall, ToolOutput, ToolResult};
use super::spill_store::{SpillError as _, SpillStore};
use super::summarizer::{Summarizer, SummaryRequest, Usage};
use super::truncate::{truncate_counted, truncate_to_tokens};
use super::unit::Unit;
use super::{bands, preview, prompt, pyfmt};

/// The handle suffix of a ToolReturn's `content`.
pub(crate) const CONTENT_SUFFIX: &str = ".content";

/// The metadata keys naming a reduction's spills (the reference's): the return value's handle and
/// stored bytes, and the envelope content's handle.
const OVERFLOW_HANDLE: &str = "overflow_handle";
const OVERFLOW_BYTES: &str = "overflow_bytes";
const OVERFLOW_CONTENT_HANDLE: &str = "overflow_content_handle";

/// What happened to one part of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReductionKind {
    /// Left as it was.
    #[default]
    Passthrough,
    /// Clamped by Truncate.
    Truncated,
    /// Stored; the model got a handle and a preview.
    Spilled,
    /// Replaced by a summary.
    Summarized,
}

/// A reduced result, as the model will see it (the reduce activity's reply, `api::ReduceResponse`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reduced {
    /// What happened to the return value.
    pub kind: ReductionKind,
    /// What happened to the envelope's text content.
    #[serde(default)]
    pub content_kind: ReductionKind,
    /// The (possibly replaced) return value.
    pub return_value: ToolOutput,
    /// The envelope: the (possibly replaced) content, and the metadata with `overflow_handle` /
    /// `overflow_bytes` / `overflow_content_handle` added when something spilled. A bare value
    /// that spilled becomes an envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Model usage of any summaries.
    #[serde(default)]
    pub usage: Usage,
    /// Whether a part was left unreduced because its action chain ran out: the last action
    /// failed (a spill or summary) or could not apply (a Truncate of binary) and had no `then`.
    /// An explicit `Passthrough` in the chain is not running out. Never serialized.
    #[serde(skip)]
    pub exhausted: bool,
    /// The store something spilled to (its URL, as the worker shows it): set by the reduce
    /// activity, never by the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
}

impl Reduced {
    /// Whether anything was reduced.
    pub fn changed(&self) -> bool {
        self.kind != ReductionKind::Passthrough || self.content_kind != ReductionKind::Passthrough
    }

    /// The spill handle of the return value, if it spilled.
    pub fn overflow_handle(&self) -> Option<&str> {
        self.overflow(OVERFLOW_HANDLE)?.as_str()
    }

    /// The spill handle of the envelope's content, if it spilled.
    pub fn overflow_content_handle(&self) -> Option<&str> {
        self.overflow(OVERFLOW_CONTENT_HANDLE)?.as_str()
    }

    /// Bytes the return value's spill stored (0 when it did not spill).
    pub fn overflow_bytes(&self) -> u64 {
        self.overflow(OVERFLOW_BYTES)
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// What a spill added to the metadata under `key`.
    fn overflow(&self, key: &str) -> Option<&Value> {
        self.envelope.metadata.as_ref()?.get(key)
    }
}

/// The outcome of applying a band's action chain to one unit.
#[derive(Debug, Default)]
struct Applied {
    replacement: Option<String>,
    /// The spill's handle and `overflow_bytes` (UTF-8 bytes of the text, or the binary length).
    spill: Option<(String, u64)>,
    kind: ReductionKind,
    usage: Usage,
    /// The chain ran out without reducing the unit (see [`Reduced::exhausted`]).
    exhausted: bool,
}

/// Reduce one tool result under `limits`, spilling to `store` and summarizing with `summarizer`.
///
/// Each part is measured and given its band once. A summarizer that [defers](Summarizer::defers)
/// leaves the whole result as it is when any part's band summarizes. Never fails: a store or model
/// error runs the action's `then` (logged at WARN), and with no `then` the output passes through
/// unreduced.
pub async fn reduce<S: SpillStore, M: Summarizer>(
    limits: &Limits,
    call: &ToolCall,
    result: ToolResult,
    store: &S,
    summarizer: &M,
) -> Reduced {
    let exempt_kinds = limits.harness.exempt_kinds();
    let exempt = (call.tool_kind.as_deref()).is_some_and(|kind| exempt_kinds.contains(&kind));
    if exempt || !limits.tool_filter.matches(&call.tool_name) {
        return assemble(result, Applied::default(), Applied::default(), limits);
    }
    let bands = limits.bands_for(&call.tool_name);
    let value_unit = Unit::new(&result.return_value, limits);
    let value_action = bands::select(bands, &value_unit, limits);
    let content_unit = match &result.envelope.content {
        Some(Value::String(text)) => {
            Some(Unit::from_text(text.as_str().into(), String::new(), limits))
        }
        _ => None,
    };
    let content_action =
        (content_unit.as_ref()).and_then(|unit| bands::select(bands, unit, limits));
    let summarizes = |action: Option<&Action>| matches!(action, Some(Action::Summarize(_)));
    if summarizer.defers() && (summarizes(value_action) || summarizes(content_action)) {
        return assemble(result, Applied::default(), Applied::default(), limits);
    }
    let reducer = Reducer {
        limits,
        call,
        store,
        summarizer,
    };
    let value = reducer.apply(&value_unit, value_action, "").await;
    drop(value_unit);
    let content = match (&result.envelope.content, content_unit) {
        (_, Some(unit)) => reducer.apply(&unit, content_action, CONTENT_SUFFIX).await,
        (Some(Value::Array(parts)), None) => {
            // Multimodal content is never reduced; the reference warns when it would have been.
            let text: String = parts.iter().filter_map(Value::as_str).collect();
            let unit = Unit::from_text(text.into(), String::new(), limits);
            if bands::select(bands, &unit, limits).is_some_and(|a| *a != Action::Passthrough) {
                tracing::warn!(
                    "ToolOutputLimits: tool {} returned large non-text content ({} parts); leaving it unreduced.",
                    pyfmt::repr(&call.tool_name),
                    parts.len()
                );
            }
            Applied::default()
        }
        _ => Applied::default(),
    };
    assemble(result, value, content, limits)
}

fn assemble(result: ToolResult, value: Applied, content: Applied, limits: &Limits) -> Reduced {
    let mut usage = value.usage;
    usage += content.usage;
    let Envelope {
        content: old_content,
        metadata,
        wrapped,
    } = result.envelope;
    let spilled = value.spill.is_some() || content.spill.is_some();
    let envelope = Envelope {
        content: content.replacement.map(Value::String).or(old_content),
        metadata: if spilled {
            Some(with_handles(metadata, &value.spill, &content.spill, limits))
        } else {
            metadata
        },
        wrapped: wrapped || value.spill.is_some(),
    };
    Reduced {
        kind: value.kind,
        content_kind: content.kind,
        return_value: (value.replacement)
            .map_or(result.return_value, |text| ToolOutput::Text(text.into())),
        envelope,
        usage,
        exhausted: value.exhausted || content.exhausted,
        store: None,
    }
}

/// Metadata after a spill, as the reference builds it: an existing mapping copied (keys
/// stringified) with the overflow keys added; a list (0.75) with them appended as one item;
/// any other value kept under `original_metadata`, beside them.
fn with_handles(
    existing: Option<Value>,
    value: &Option<(String, u64)>,
    content: &Option<(String, u64)>,
    limits: &Limits,
) -> Value {
    let mut handles = Map::new();
    if let Some((handle, bytes)) = value {
        handles.insert(OVERFLOW_HANDLE.into(), handle.as_str().into());
        handles.insert(OVERFLOW_BYTES.into(), (*bytes).into());
    }
    if let Some((handle, _)) = content {
        handles.insert(OVERFLOW_CONTENT_HANDLE.into(), handle.as_str().into());
    }
    let mut meta = match existing {
        Some(Value::Object(map)) => map,
        Some(Value::Array(mut items)) if limits.harness.keeps_metadata_lists() => {
            items.push(Value::Object(handles));
            return Value::Array(items);
        }
        Some(Value::Null) | None => Map::new(),
        Some(other) => Map::from_iter([("original_metadata".to_owned(), other)]),
    };
    meta.extend(handles);
    Value::Object(meta)
}

/// What one result is reduced with: the limits, the call, the store and the model.
struct Reducer<'a, S, M> {
    limits: &'a Limits,
    call: &'a ToolCall,
    store: &'a S,
    summarizer: &'a M,
}

impl<S: SpillStore, M: Summarizer> Reducer<'_, S, M> {
    /// Apply `action`, the action of `unit`'s band, descending the `then` chain when an action
    /// fails (a store or model error, an unusable prompt) or cannot apply (Truncate and Summarize
    /// of binary). `suffix` ends the spill key.
    async fn apply(&self, unit: &Unit, action: Option<&Action>, suffix: &str) -> Applied {
        let (limits, call) = (self.limits, self.call);
        let mut usage = Usage::default();
        let mut current = action;
        if current.is_none() {
            return Applied::default();
        }
        while let Some(action) = current {
            let then = action.then();
            let replaced = |text: String, kind, usage| Applied {
                replacement: Some(text),
                kind,
                usage,
                ..Applied::default()
            };
            match (action, unit.text()) {
                (Action::Passthrough, _) => break,
                (Action::Truncate(t), Some(text)) => {
                    let (keep, chars) = (t.keep_tail_lines.max(0) as usize, unit.chars() as usize);
                    let (strategy, harness) = (t.strategy, limits.harness);
                    let clamped = match t.max_tokens {
                        Some(max) => {
                            let tokenizer = limits.counter();
                            truncate_to_tokens(text, chars, max, strategy, keep, tokenizer, harness)
                        }
                        None => truncate_counted(text, chars, t.max_chars, strategy, keep, harness),
                    };
                    return replaced(clamped, ReductionKind::Truncated, usage);
                }
                (Action::Spill(s), _) => {
                    let data = unit.data();
                    let bytes = data.len() as u64;
                    match self.write(data, suffix).await {
                        Ok(handle) => {
                            let text =
                                preview::spill_message(unit, &handle, s.preview_chars, limits);
                            return Applied {
                                spill: Some((handle, bytes)),
                                ..replaced(text, ReductionKind::Spilled, usage)
                            };
                        }
                        // The store's words say what to fix (credentials, bucket, endpoint, TLS).
                        Err(error) => {
                            let why = format!(": {error}");
                            warn_fallback("Spilling", call, error.type_name(), then, &why);
                        }
                    }
                }
                (Action::Summarize(s), Some(text)) => {
                    // `Limits::validate` refuses such a template; one built in code falls back.
                    match prompt::Template::parse(&limits.summary_prompt) {
                        Err(error) => {
                            warn_fallback("Summarizing", call, "InvalidPrompt", then, "");
                            tracing::debug!(%error, "unusable summary prompt");
                        }
                        Ok(template) => {
                            let prompt = template.render(&call.tool_name, text);
                            let request = SummaryRequest {
                                tool_name: &call.tool_name,
                                output: text,
                                prompt: &prompt,
                                model: s.model.as_deref(),
                            };
                            match self.summarizer.summarize(request).await {
                                Ok(summary) => {
                                    usage += summary.usage;
                                    let summary = pyfmt::py_strip(&summary.text);
                                    let text = limits.harness.summary(unit.chars(), summary);
                                    return replaced(text, ReductionKind::Summarized, usage);
                                }
                                Err(error) => {
                                    warn_fallback("Summarizing", call, error.type_name(), then, "");
                                    tracing::debug!(%error, "summary failed");
                                }
                            }
                        }
                    }
                }
                // Truncate and Summarize of binary.
                (Action::Truncate(_) | Action::Summarize(_), None) => {}
            }
            current = then;
        }
        // A `Passthrough` breaks out with `current` still set; running out leaves it `None`.
        Applied {
            usage,
            exhausted: current.is_none(),
            ..Applied::default()
        }
    }
}

impl<S: SpillStore, M: Summarizer> Reducer<'_, S, M> {
    /// Spill `data` under the call's key (`suffix` ending it): the plain key, or, when the
    /// harness keys by step and an earlier step of the run already spilled there (the store
    /// says which step wrote it; an unknown one counts as earlier), the step key.
    async fn write(&self, data: Bytes, suffix: &str) -> Result<String, S::Error> {
        let (call, plain) = (self.call, self.call.spill_key(suffix));
        let Some(step) = call.run_step.filter(|_| self.limits.harness.keys_by_step()) else {
            return self.store.write(&plain, data).await;
        };
        let key = match self.store.step_of(&plain).await? {
            Some(written) if written != Some(step) => call.step_key(step, suffix),
            _ => plain,
        };
        self.store.write_at_step(&key, data, step).await
    }
}

/// The reference's fallback warning, then `why`:
/// `Spilling output of tool 'x' failed (Timeout); falling back to Truncate: the store did not …`.
fn warn_fallback(verb: &str, call: &ToolCall, error_type: &str, then: Option<&Action>, why: &str) {
    let next = then.map_or("the unreduced output", Action::name);
    tracing::warn!(
        target: "overspill::limits",
        error_type,
        "{verb} output of tool {} failed ({error_type}); falling back to {next}{why}",
        pyfmt::repr(&call.tool_name)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{MemoryStore, NoSummarizer, Tokenizer};

    #[tokio::test]
    async fn a_large_output_spills_with_a_preview() {
        let store = MemoryStore::new();
        let call = ToolCall {
            tool_name: "cat".into(),
            run_id: Some("r".into()),
            tool_call_id: Some("c".into()),
            ..Default::default()
        };
        let big = ToolResult::bare(ToolOutput::Text("x".repeat(20_000).into()));
        let reduced = reduce(&Limits::default(), &call, big, &store, &NoSummarizer).await;
        assert_eq!(reduced.overflow_handle(), Some("r/c.0"));
        let text = reduced.return_value.as_text().expect("text");
        assert!(
            text.starts_with("[Tool output too large (20,000 chars); stored to handle 'r/c.0'.")
        );
        assert_eq!(store.handles(), ["r/c.0"]);
    }

    #[test]
    fn token_bands_and_budgets_run_through_reduce() {
        let limits = Limits::from_json(
            r#"{"over_tokens":true,"tokenizer":"cl100k_base","bands":[
                {"over":2000,"action":{"type":"truncate","strategy":"tail","max_tokens":300}}]}"#,
        )
        .expect("valid");
        let reduce_text = |text: &str| {
            let result = ToolResult::bare(ToolOutput::Text(text.into()));
            let call = ToolCall::default();
            futures::executor::block_on(reduce(
                &limits,
                &call,
                result,
                &MemoryStore::new(),
                &NoSummarizer,
            ))
        };
        let log = "2024-05-01 12:00:00 INFO worker=7 took=12ms ok\n".repeat(400);
        let reduced = reduce_text(&log);
        assert_eq!(reduced.kind, ReductionKind::Truncated);
        let text = reduced.return_value.as_text().expect("text");
        assert!(Tokenizer::Cl100kBase.count(text) <= 300);
        assert!(text.starts_with("[... output truncated, showing last "));
        // 9,000 chars: over 2,000 by the estimate, under it in real tokens.
        let small = "word ".repeat(1_800);
        assert!(Tokenizer::Cl100kBase.count(&small) < 2_000);
        assert_eq!(reduce_text(&small).kind, ReductionKind::Passthrough);
    }

    /// Activities run `reduce` on tokio's multi-threaded runtime: its future must stay `Send`.
    #[test]
    fn reduce_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let (limits, call, store) = (Limits::default(), ToolCall::default(), MemoryStore::new());
        let result = ToolResult::bare(ToolOutput::Text(Default::default()));
        let future = reduce(&limits, &call, result, &store, &NoSummarizer);
        assert_send(&future);
    }

    /// Counts the calls it gets; every summary is `ok`.
    #[derive(Default)]
    struct Counting(std::sync::atomic::AtomicUsize);

    impl Summarizer for Counting {
        async fn summarize(
            &self,
            _request: SummaryRequest<'_>,
        ) -> Result<super::super::Summary, super::super::SummarizeError> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(super::super::Summary {
                text: "ok".into(),
                usage: Usage::default(),
            })
        }
    }

    /// Limits built in code skip validation: an amplifying template still never renders.
    #[tokio::test]
    async fn an_unchecked_amplifying_prompt_falls_back_without_rendering() {
        let mut limits = Limits::from_json(
            r#"{"bands":[{"over":10,"action":{"type":"summarize","then":{"type":"truncate","max_chars":20}}}]}"#,
        )
        .expect("valid limits");
        limits.summary_prompt = format!("{{tool_name}}{}", "{output}".repeat(60_000));
        let summarizer = Counting::default();
        let result = ToolResult::bare(ToolOutput::Text("x".repeat(1_500).into()));
        let call = ToolCall::default();
        let reduced = reduce(&limits, &call, result, &MemoryStore::new(), &summarizer).await;
        assert_eq!(reduced.kind, ReductionKind::Truncated);
        assert_eq!(summarizer.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    }
}
