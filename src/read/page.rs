//! A page of lines as pydantic-ai-harness 0.75 fills one, for a read by lines and for a search:
//! lines are taken in order up to the one that would take the page past 50,000 chars, and the
//! page's header says what it left out and where that continues, as `read_tool_result` calls.
//!
//! - A page stops before the line that would cross the cap (the lines are joined by `\n`, a
//!   search's group separator `--` counted with the line after it).
//! - Until the page's first match is in, lines that do not fit are dropped (a search's leading
//!   context), so that every page makes progress; the dropped lines are reported as omitted.
//! - A match longer than the cap on its own is cut: the header gives the byte offset its rest
//!   starts at, to read with `unit='bytes'`. The cut counts chars as the harness does, each byte
//!   that is not UTF-8 one char; what is shown renders such bytes as U+FFFD.
//! - A search that stops inside a group of context reports the group's remaining context lines
//!   as omitted.

use std::ops::Range;

use crate::limits::DEFAULT_READ_TOOL_NAME;
use crate::limits::pyfmt::{repr, thousands};
use crate::read::lines::split_lines;
use crate::read::request::{MAX_READ_CHARS, ReadRequest};
use crate::read::scan::{self, Keeper, Kept, Query};
use crate::read::source::{PageError, SpillReader, line_offset};

/// The lines one page shows, and what it left out.
#[derive(Debug, Default, Clone)]
pub(crate) struct Fill {
    lines: Vec<String>,
    /// Chars of the joined lines (each line's and one separator's).
    size: usize,
    /// Matches shown.
    shown: u64,
    /// A match cut at the cap: its line index and how many of its bytes were shown.
    cut: Option<(u64, u64)>,
    /// Ranges of line indices left out, first to last.
    omitted: Vec<(u64, u64)>,
    /// The index of the first line offered, and of the first line kept.
    first: Option<u64>,
    kept: Option<u64>,
    state: State,
}

#[derive(Debug, Default, Clone)]
enum State {
    #[default]
    Filling,
    /// Full, leaving out the context lines from `start` (or the next one offered) to the next
    /// match or group.
    Omitting {
        start: Option<u64>,
        end: Option<u64>,
    },
    Done,
}

impl Fill {
    /// Offer the next line: line `index` of the spill, shown as `prefix` and its `bytes`; a
    /// `is_match` line is one of the page's matches, any other is context; `separate` puts a
    /// `--` line before it (a new group of a search).
    pub(crate) fn offer(
        &mut self,
        index: u64,
        is_match: bool,
        bytes: &[u8],
        prefix: &str,
        separate: bool,
    ) {
        match &mut self.state {
            State::Filling => self.place(index, is_match, bytes, prefix, separate),
            State::Omitting { .. } if is_match || separate => self.close(),
            State::Omitting { start, end } => {
                start.get_or_insert(index);
                *end = Some(index);
            }
            State::Done => {}
        }
    }

    /// The harness's `_place`: add the line if it fits, else stop (or, before the first match,
    /// start the page again from here, cutting a match too long on its own).
    fn place(&mut self, index: u64, is_match: bool, bytes: &[u8], prefix: &str, separate: bool) {
        self.first.get_or_insert(index);
        self.kept.get_or_insert(index);
        let shown = String::from_utf8_lossy(bytes);
        let separator = if separate { "--\n" } else { "" };
        let len = separator.len() + prefix.chars().count() + shown.chars().count();
        if self.size + len <= MAX_READ_CHARS {
            self.add(format!("{separator}{prefix}{shown}"), len, is_match);
            return;
        }
        if self.shown > 0 {
            // A line opening the next group belongs to a match the next page shows.
            let start = (!(is_match || separate)).then_some(index);
            self.state = match start {
                Some(_) => State::Omitting { start, end: start },
                None => State::Done,
            };
            return;
        }
        self.lines.clear();
        self.size = 0;
        self.kept = Some(if is_match { index } else { index + 1 });
        if !is_match {
            return;
        }
        if len <= MAX_READ_CHARS {
            self.add(format!("{separator}{prefix}{shown}"), len, is_match);
            return;
        }
        let kept = char_prefix(bytes, MAX_READ_CHARS - prefix.chars().count());
        let text = format!("{prefix}{}", String::from_utf8_lossy(kept));
        let len = text.chars().count();
        self.add(text, len, is_match);
        self.cut = Some((index, kept.len() as u64));
        self.state = State::Omitting {
            start: None,
            end: None,
        };
    }

    fn add(&mut self, text: String, len: usize, is_match: bool) {
        self.lines.push(text);
        self.size += len + 1;
        self.shown += u64::from(is_match);
    }

    /// End an omission, recording the lines it covered.
    fn close(&mut self) {
        if let State::Omitting {
            start: Some(start),
            end: Some(end),
        } = self.state
        {
            self.omitted.push((start, end));
        }
        self.state = State::Done;
    }

    /// The page, once every line that could be on it was offered.
    pub(crate) fn finish(mut self) -> Filled {
        self.close();
        if let (Some(first), Some(kept)) = (self.first, self.kept)
            && kept > first
        {
            self.omitted.insert(0, (first, kept - 1));
        }
        Filled {
            lines: self.lines,
            shown: self.shown,
            cut: self.cut,
            omitted: self.omitted,
        }
    }
}

/// A filled page.
#[derive(Debug)]
pub(crate) struct Filled {
    /// The lines to show.
    pub(crate) lines: Vec<String>,
    /// The matches among them.
    pub(crate) shown: u64,
    /// A match cut at the cap: its line index and how many of its bytes were shown.
    pub(crate) cut: Option<(u64, u64)>,
    /// Ranges of line indices left out.
    pub(crate) omitted: Vec<(u64, u64)>,
}

/// The first `chars` chars of `bytes`, counted as the harness decodes a spill: each UTF-8 char
/// one char, and each byte that is not part of one, one char of its own.
fn char_prefix(bytes: &[u8], chars: usize) -> &[u8] {
    let mut left = chars;
    let mut end = 0;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if left == 0 {
                return &bytes[..end];
            }
            left -= 1;
            end += c.len_utf8();
        }
        let invalid = chunk.invalid().len().min(left);
        left -= invalid;
        end += invalid;
        if left == 0 {
            return &bytes[..end];
        }
    }
    &bytes[..end]
}

/// The `read_tool_result` calls a page's header points to, named as the model calls the tool.
pub(crate) struct Reader<'a> {
    handle: &'a str,
    name: &'a str,
}

impl ReadRequest {
    /// The read tool as the page's header names it.
    pub(crate) fn reader(&self) -> Reader<'_> {
        Reader::new(&self.handle, self.read_tool_name.as_deref())
    }
}

impl<'a> Reader<'a> {
    /// The read tool for spill `handle`, under `name` (`None`: `read_tool_result`).
    pub(crate) fn new(handle: &'a str, name: Option<&'a str>) -> Self {
        let name = name.unwrap_or(DEFAULT_READ_TOOL_NAME);
        Self { handle, name }
    }

    fn call(&self, args: &str) -> String {
        format!("{}(handle={}, {args})", self.name, repr(self.handle))
    }

    /// What a read shows next: `the next lines are at read_tool_result(…, offset=N[, pattern=…])`.
    pub(crate) fn next_lines(&self, offset: u64, pattern: Option<&str>) -> String {
        let filtered = pattern.map_or(String::new(), |p| format!(", pattern={}", repr(p)));
        format!(
            "the next lines are at {}",
            self.call(&format!("offset={offset}{filtered}"))
        )
    }

    /// The header's note on a page stopped at the cap: the context left out, where the cut line
    /// continues (`cut_at`: the byte offset its rest starts at), and `more`; empty when nothing
    /// was left out.
    pub(crate) fn capped(
        &self,
        page: &Filled,
        cut_at: Option<u64>,
        more: Option<String>,
    ) -> String {
        let omitted = page.omitted.iter().map(|&(start, end)| {
            let read = self.call(&format!("offset={start}, limit={}", end - start + 1));
            format!("context lines {}-{} omitted ({read})", start + 1, end + 1)
        });
        let cut = cut_at.map(|offset| {
            let read = self.call(&format!(
                "unit='bytes', offset={offset}, limit={MAX_READ_CHARS}"
            ));
            format!("the cut line continues at {read}")
        });
        let notes: Vec<String> = omitted.chain(cut).chain(more).collect();
        match notes.is_empty() {
            true => String::new(),
            false => format!(
                ", output capped at {} chars; {}",
                thousands(MAX_READ_CHARS as u64),
                notes.join("; ")
            ),
        }
    }
}

/// A scan's lines into a [`Fill`]: a search's (`numbered`: `N:` before a match of the page, `N-`
/// before context, `--` between groups of lines that are not adjacent) or a read's (the lines
/// alone).
#[derive(Debug, Clone)]
pub(crate) struct FillKeeper {
    pub(crate) fill: Fill,
    numbered: bool,
    last: Option<u64>,
}

impl FillKeeper {
    /// A keeper for a search's page (`numbered`) or a read's.
    pub(crate) fn new(numbered: bool) -> Self {
        Self {
            fill: Fill::default(),
            numbered,
            last: None,
        }
    }
}

impl Keeper for FillKeeper {
    fn keep(&mut self, number: u64, kind: Kept, line: &[u8]) {
        if self.last.is_some_and(|last| number <= last) {
            return;
        }
        let separate = self.numbered && self.last.is_some_and(|last| number > last + 1);
        self.last = Some(number);
        let is_match = matches!(kind, Kept::Match(_));
        let prefix = match (self.numbered, is_match) {
            (false, _) => String::new(),
            (true, true) => format!("{}:", number + 1),
            (true, false) => format!("{}-", number + 1),
        };
        self.fill.offer(number, is_match, line, &prefix, separate);
    }
}

/// What a scan kept for a 0.75 page: the matches in all, the filled page, and the byte offset
/// its cut line's rest starts at, if a line was cut.
pub(crate) struct Scanned {
    pub(crate) total: u64,
    pub(crate) page: Filled,
    pub(crate) cut_at: Option<u64>,
}

/// Scan `reader`'s spill for `query` into a page (a search's, `numbered`, or a read's); a cut
/// line's offset is found by streaming the spill again up to it.
pub(crate) async fn scan_spill<R: SpillReader>(
    reader: &R,
    handle: &str,
    query: &Query,
    numbered: bool,
) -> Result<Scanned, PageError> {
    let scanned = scan::scan_spill(reader, handle, query, FillKeeper::new(numbered)).await?;
    let page = scanned.page.fill.finish();
    let cut_at = match page.cut {
        Some((line, shown)) => {
            Some(line_offset(reader, handle, &scanned.version, line).await? + shown)
        }
        None => None,
    };
    let total = scanned.total;
    Ok(Scanned {
        total,
        page,
        cut_at,
    })
}

/// [`scan_spill`] over a payload in memory.
pub(crate) fn scan_memory(data: &[u8], query: &Query, numbered: bool) -> Scanned {
    let (total, kept) = scan::scan_memory(data, query, FillKeeper::new(numbered));
    let page = kept.fill.finish();
    let line_start = |line| split_lines(data).nth(line as usize).map_or(0, |r| r.start);
    let cut_at = (page.cut).map(|(line, shown)| line_start(line) as u64 + shown);
    Scanned {
        total,
        page,
        cut_at,
    }
}

/// A read's page under 0.75: `page` of the lines `window` of `total` (matching) lines, the cut
/// line's rest (if any) at byte `cut_at`.
pub(crate) fn read_text(
    request: &ReadRequest,
    total: u64,
    window: Range<u64>,
    page: &Filled,
    cut_at: Option<u64>,
) -> String {
    let reader = request.reader();
    let next = window.start + page.shown;
    let more = (next < window.end).then(|| reader.next_lines(next, request.pattern.as_deref()));
    let header = format!(
        "[handle {}: {} matching line(s); showing {}{}]",
        repr(&request.handle),
        thousands(total),
        page.shown,
        reader.capped(page, cut_at, more)
    );
    below(header, &page.lines)
}

/// `header`, then the page's lines, each on a line of its own.
pub(crate) fn below(header: String, lines: &[String]) -> String {
    let mut out = header;
    for line in lines {
        out.push('\n');
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chars_count_each_undecodable_byte() {
        assert_eq!(char_prefix(b"ab\xff\xfecd", 3), b"ab\xff");
        assert_eq!(
            char_prefix("é\u{1F642}x".as_bytes(), 2),
            "é\u{1F642}".as_bytes()
        );
        assert_eq!(char_prefix(b"\xe2\x80x", 2), b"\xe2\x80");
        assert_eq!(char_prefix(b"ab", 5), b"ab");
    }

    #[test]
    fn a_page_stops_before_the_line_that_crosses_the_cap() {
        let mut fill = Fill::default();
        let line = vec![b'a'; 30_000];
        for index in 0..3 {
            fill.offer(index, true, &line, "", false);
        }
        let page = fill.finish();
        assert_eq!((page.shown, page.lines.len(), page.cut), (1, 1, None));
    }
}
