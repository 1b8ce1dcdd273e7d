//! The lines a grep keeps, and the text the model sees: a header counting every matching line,
//! `N:match` and `N-context` lines (groups separated by `--`), cut at 50,000 chars, and a note
//! saying how to get the next page.

use std::ops::Range;

use super::GrepRequest;
use crate::limits::pyfmt::{repr, thousands};
use crate::read::request::{Body, MAX_READ_CHARS};
use crate::read::scan::{Kept, Page};

impl Page {
    /// The page for `request`: `total` matching lines, the window `shown` of them kept here.
    pub(crate) fn render(
        &self,
        request: &GrepRequest,
        separators: bool,
        total: u64,
        shown: Range<u64>,
    ) -> String {
        let mut body = Body::default();
        let mut previous: Option<u64> = None;
        let mut last_match = None;
        for &(number, kind, ref line) in &self.lines {
            if separators && previous.is_some_and(|p| number > p + 1) && !body.line("--") {
                break;
            }
            previous = Some(number);
            if let Kept::Match(nth) = kind {
                last_match = Some(nth);
            }
            let mark = if kind == Kept::Context { '-' } else { ':' };
            let text = format!("{}{mark}{}", number + 1, String::from_utf8_lossy(line));
            if !body.line(&text) {
                break;
            }
        }
        let header = header(request, total, &shown, body.capped);
        let note = next_page_note(request, total, &shown, body.capped, last_match);
        match (body.below(header), note) {
            (page, Some(note)) => page + "\n" + &note,
            (page, None) => page,
        }
    }
}

fn header(request: &GrepRequest, total: u64, shown: &Range<u64>, capped: bool) -> String {
    let mut out = format!(
        "[handle {}: {} matching line(s) for {}{}",
        repr(&request.handle),
        thousands(total),
        if request.regex { "regex " } else { "" },
        repr(&request.pattern),
    );
    if request.ignore_case {
        out.push_str(", ignoring case");
    }
    let showing = match shown.is_empty() {
        true => "none".to_owned(),
        false => format!("matches {}-{}", shown.start + 1, shown.end),
    };
    let capped = if capped { ", output capped" } else { "" };
    out + &format!("; showing {showing}{capped}]")
}

/// What the model can call next, if the page did not show every match.
fn next_page_note(
    request: &GrepRequest,
    total: u64,
    shown: &Range<u64>,
    capped: bool,
    last_match: Option<u64>,
) -> Option<String> {
    if capped {
        let next = last_match
            .map_or(shown.start, |m| m + 1)
            .max(shown.start + 1);
        let from_end = if request.from_end {
            "from_end=false, "
        } else {
            ""
        };
        return Some(format!(
            "[output capped at {} chars after match {next}: call grep_tool_result again with \
             {from_end}offset={next} for the next matches, or read_tool_result(offset=N-1, \
             limit=1) to see line N whole]",
            thousands(MAX_READ_CHARS as u64),
        ));
    }
    match request.from_end {
        false if shown.end < total => Some(format!(
            "[{} more matching line(s): call grep_tool_result again with offset={}]",
            thousands(total - shown.end),
            shown.end
        )),
        true if shown.start > 0 => Some(format!(
            "[{} earlier matching line(s): call grep_tool_result again with from_end=true, \
             offset={}]",
            thousands(shown.start),
            total - shown.start
        )),
        _ => None,
    }
}
