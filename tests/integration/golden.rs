//! Overspill against outputs recorded from the reference, pydantic-ai-harness 0.62.0
//! (`tests/golden/generate.py`): model-visible text must match byte for byte.

use std::ops::Range;

use base64::Engine as _;
use bytes::Bytes;
use overspill::api::ReduceRequest;
use overspill::limits::{
    self, Limits, MemoryStore, NoStore, SummarizeError, Summarizer, Summary, SummaryRequest,
    ToolOutput, TruncationStrategy, Usage,
};
use overspill::read::line_index::IndexBuilder;
use overspill::read::{self, Fetched, Part, ReadRequest, SpillReader, Version};
use overspill::store::StoreError;
use serde_json::Value;

fn golden(name: &str) -> Value {
    let path = crate::root().join("tests/golden").join(name);
    let text = std::fs::read_to_string(&path).expect("golden file is committed");
    serde_json::from_str(&text).expect("golden file is JSON")
}

fn b64(s: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s.as_str().expect("base64 string"))
        .expect("valid base64")
}

/// The generator's custom summarizer: `summary of {tool}: {len} chars`.
struct CountingSummarizer;

impl Summarizer for CountingSummarizer {
    async fn summarize(&self, r: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        Ok(Summary {
            text: format!(
                "summary of {}: {} chars",
                r.tool_name,
                r.output.chars().count()
            ),
            usage: Usage::default(),
        })
    }
}

#[tokio::test]
async fn reduce_matches_reference() {
    let cases = golden("reduce.json");
    let mut failures = Vec::new();
    for case in cases.as_array().expect("a list of cases") {
        let name = case["name"].as_str().unwrap_or_default();
        let request: ReduceRequest =
            serde_json::from_value(case["request"].clone()).expect("request parses");
        let limits = request.limits(&Limits::default()).expect("config is valid");
        let call = request.call(None);
        let original = request.clone().into_result();
        let memory = MemoryStore::new();
        let reduced = if case["store"] == "failing" {
            limits::reduce(
                &limits,
                &call,
                original.clone(),
                &NoStore,
                &CountingSummarizer,
            )
            .await
        } else {
            limits::reduce(
                &limits,
                &call,
                original.clone(),
                &memory,
                &CountingSummarizer,
            )
            .await
        };
        let expected = &case["expected"];
        if expected["changed"] == false {
            if reduced.changed() || reduced.return_value != original.return_value {
                failures.push(format!("{name}: expected passthrough, got {reduced:?}"));
            }
            continue;
        }
        let got_value = serde_json::to_value(&reduced.return_value).expect("serializes");
        if got_value != expected["return_value"] {
            failures.push(format!(
                "{name}: return_value\n  got:      {got_value}\n  expected: {}",
                expected["return_value"]
            ));
        }
        if expected["envelope"] != reduced.envelope.wrapped {
            failures.push(format!("{name}: envelope {}", reduced.envelope.wrapped));
        }
        if expected["envelope"] == true {
            let content = reduced.envelope.content.clone().unwrap_or(Value::Null);
            let metadata = reduced.envelope.metadata.clone().unwrap_or(Value::Null);
            if content != expected["content"] {
                failures.push(format!("{name}: content differs"));
            }
            if metadata != expected["metadata"] {
                failures.push(format!(
                    "{name}: metadata {metadata} != {}",
                    expected["metadata"]
                ));
            }
        }
        if let Some(stored) = expected["stored"].as_object() {
            for (key, data) in stored {
                let ours = memory.get(key).map(|b| b.to_vec());
                if ours.as_deref() != Some(&b64(data)[..]) {
                    failures.push(format!("{name}: stored object {key} differs"));
                }
            }
            if memory.handles().len() != stored.len() {
                failures.push(format!("{name}: stored {:?}", memory.handles()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn truncate_matches_reference() {
    let golden = golden("truncate.json");
    let mut failures = 0;
    let cases = golden["cases"].as_array().expect("cases");
    for case in cases {
        let text = golden["texts"][case["text"].as_str().unwrap_or_default()]
            .as_str()
            .unwrap_or_default();
        let strategy: TruncationStrategy =
            serde_json::from_value(case["strategy"].clone()).expect("strategy");
        let keep = case["keep_tail_lines"].as_u64().unwrap_or(0) as usize;
        let max = case["max_chars"].as_i64().unwrap_or(0);
        let out = limits::truncate::truncate_text(text, max, strategy, keep);
        if out != case["out"].as_str().unwrap_or_default() {
            failures += 1;
            if failures < 5 {
                eprintln!(
                    "truncate {} max={max} {strategy:?} keep={keep}:\n  got:      {out:?}\n  expected: {:?}",
                    case["text"], case["out"]
                );
            }
        }
    }
    assert_eq!(
        failures,
        0,
        "{failures} of {} truncate cases differ",
        cases.len()
    );
}

/// A spill served as the real stores serve it: through a line index (a checkpoint every 8 bytes,
/// so that every case crosses several), and streamed in 5-byte chunks.
struct IndexedSpill {
    payload: Bytes,
    index: Bytes,
}

impl IndexedSpill {
    const TAG: &str = "v1";

    fn new(payload: Bytes) -> Self {
        let mut builder = IndexBuilder::with_spacing(8);
        builder.feed(&payload);
        let index = builder.finish().encode(Self::TAG).expect("a short tag");
        Self {
            payload,
            index: index.into(),
        }
    }
}

impl SpillReader for IndexedSpill {
    async fn head(&self, _handle: &str) -> Result<Version, StoreError> {
        Ok(Version {
            size: self.payload.len() as u64,
            tag: Some(Self::TAG.into()),
        })
    }
    async fn fetch(&self, _h: &str, part: Part, range: Range<u64>) -> Result<Fetched, StoreError> {
        let object = match part {
            Part::Payload => &self.payload,
            Part::Index => &self.index,
        };
        let end = (range.end as usize).min(object.len());
        Ok(Fetched {
            bytes: object.slice(range.start as usize..end),
            version: Version {
                size: object.len() as u64,
                tag: Some(Self::TAG.into()),
            },
        })
    }
    async fn put_index(&self, _handle: &str, _index: Bytes) -> Result<(), StoreError> {
        panic!("the index is never rebuilt: it describes the payload")
    }
    fn chunk_bytes(&self) -> usize {
        5
    }
}

#[tokio::test]
async fn read_matches_reference() {
    let golden = golden("read.json");
    let mut failures = Vec::new();
    for case in golden["cases"].as_array().expect("cases") {
        let data = Bytes::from(b64(
            &golden["payloads"][case["payload"].as_str().unwrap_or_default()]
        ));
        let mut request: ReadRequest =
            serde_json::from_value(case["request"].clone()).expect("request");
        request.handle = "run-1/call-1.0".into();
        let expected = match (&case["out"], &case["retry"]) {
            (Value::String(out), _) => Ok(out.clone()),
            (_, Value::String(retry)) => Err(retry.clone()),
            _ => panic!("case without out or retry"),
        };
        let in_memory = read::read_page(&data, &request).map_err(|e| e.to_string());
        let indexed = read::read_tool_result(&IndexedSpill::new(data.clone()), &request)
            .await
            .map_err(|e| e.to_string());
        for (path, got) in [("read_page", in_memory), ("indexed", indexed)] {
            if got != expected {
                failures.push(format!(
                    "{path} {} {:?}:\n  got:      {:.300?}\n  expected: {:.300?}",
                    case["payload"], case["request"], got, expected
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bytes_output_json_form_round_trips() {
    let out: ToolOutput = serde_json::from_str(r#"{"bytes_b64":"AAE="}"#).expect("parses");
    assert_eq!(out, ToolOutput::Bytes(Bytes::from_static(&[0, 1])));
}
