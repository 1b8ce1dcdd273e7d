//! The summary prompt renderer must never panic, and a template it accepts must never render
//! more than the template, the output once and at most 16 tool names: no template amplifies.
//!
//! Run it on stable Rust (libFuzzer stops at the first failure and saves its input under
//! `tests/fuzz/artifacts/prompt/`): `cargo fuzz run --fuzz-dir tests/fuzz --sanitizer none prompt
//! -- -dict=tests/fuzz/prompt.dict -max_len=4096`.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use overspill::limits::prompt::{MAX_TOOL_NAME_FIELDS, Template};

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    template: &'a str,
    tool_name: &'a str,
    output: &'a str,
}

fuzz_target!(|input: Input<'_>| {
    let Ok(template) = Template::parse(input.template) else {
        return;
    };
    let rendered = template.render(input.tool_name, input.output);
    let bound =
        input.template.len() + input.output.len() + MAX_TOOL_NAME_FIELDS * input.tool_name.len();
    assert!(rendered.len() <= bound, "{} > {bound}", rendered.len());
    assert!(rendered.contains(input.output));
    assert!(rendered.contains(input.tool_name));
});
