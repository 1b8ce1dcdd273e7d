//! Counting the lines that contain a pattern, 64 bytes at a time, without looking at the lines
//! one by one.
//!
//! Each block of 64 bytes gives two bit masks: `breaks`, the bytes that start a line break, and
//! `starts`, the bytes where the pattern starts. A line holds the pattern when a start lies
//! between its break and the one before. One addition finds those lines for the whole block:
//! over `!breaks`, the bits of a line form a run of ones that ends just below its break, so
//! adding `starts` carries out of every run that holds a start, into that run's break bit.
//! `(!breaks + starts) & breaks` is then the breaks that end a matching line, and the carry out
//! of the block goes on into the next one (a line that matched before its break comes).
//!
//! This holds when no occurrence of the pattern can touch a line break, which is the case for
//! a non-empty pattern without one: a UTF-8 pattern can neither start inside a multi-byte
//! break nor end halfway through one, so marking the break's first byte is enough (`\r\n`
//! counts as two breaks with an empty line between them, which holds no start).

use super::lines::{BLOCK, block_at, break_candidates, break_len, eq_mask, only, within};

/// Counts the lines of whole-line spans of a payload that contain one pattern.
#[derive(Debug, Clone)]
pub(crate) struct LineCounter {
    pattern: Box<[u8]>,
}

impl LineCounter {
    /// A counter for `pattern`, or `None` when the pattern is empty, holds a line break (the
    /// line-by-line scan handles those) or is not UTF-8 (a byte string such as `85 61` could start
    /// inside the break `c2 85`).
    pub(crate) fn new(pattern: &[u8]) -> Option<Self> {
        let has_break = (0..pattern.len()).any(|i| break_len(pattern, i) > 0);
        let plain = !pattern.is_empty() && !has_break && std::str::from_utf8(pattern).is_ok();
        plain.then(|| Self {
            pattern: pattern.into(),
        })
    }

    /// The lines of `data` that contain the pattern, as `str.splitlines()` cuts them. `data`
    /// starts at a line start and ends at a line end or at the payload's end (a last line
    /// without a break counts too).
    pub(crate) fn count(&self, data: &[u8]) -> u64 {
        let pattern = &self.pattern;
        let (first, last, reach) = (pattern[0], pattern[pattern.len() - 1], pattern.len() - 1);
        let (mut count, mut carry) = (0, false);
        for at in (0..data.len()).step_by(BLOCK) {
            let (block, within) = (block_at(data, at), within(data, at));
            let newlines = eq_mask(&block, b'\n');
            // The other candidates are rare in text: each is looked at alone.
            let others = break_candidates(&block) & !newlines & within;
            let breaks = newlines & within | only(others, |i| break_len(data, at + i) > 0);
            let candidates = eq_mask(&block, first) & eq_mask(&block_at(data, at + reach), last);
            let starts = only(candidates & within & !breaks, |i| {
                data[at + i..].starts_with(pattern)
            });
            let (sum, over) = (!breaks).overflowing_add(starts);
            let (sum, over_too) = sum.overflowing_add(u64::from(carry));
            count += u64::from((sum & breaks).count_ones());
            carry = over | over_too;
        }
        count + u64::from(carry)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::read::lines::split_lines;
    use crate::read::lines::tests::{BREAKS, text_of};

    /// Line by line, as the page scan counts.
    fn expected(data: &[u8], pattern: &[u8]) -> u64 {
        let finder = memchr::memmem::Finder::new(pattern);
        split_lines(data)
            .filter(|line| finder.find(&data[line.clone()]).is_some())
            .count() as u64
    }

    #[test]
    fn patterns_with_a_break_or_none_are_left_to_the_line_scan() {
        assert!(LineCounter::new(b"").is_none());
        assert!(LineCounter::new(b"a\nb").is_none());
        assert!(LineCounter::new("a\u{2028}".as_bytes()).is_none());
        assert!(LineCounter::new(b"a\r").is_none());
        assert!(LineCounter::new("é—x".as_bytes()).is_some());
    }

    #[test]
    fn counts_across_blocks_and_at_the_end() {
        let counter = LineCounter::new(b"x").expect("a plain pattern");
        let lines = b"x\n".repeat(100);
        assert_eq!(counter.count(&lines), 100);
        assert_eq!(
            counter.count(&lines[..199]),
            100,
            "a last line without a break"
        );
        let long = [&[b'a'; 200][..], b"x", &[b'a'; 100], b"\nx"].concat();
        assert_eq!(counter.count(&long), 2);
        let counter = LineCounter::new(b"level=info").expect("a plain pattern");
        let log = b"0001 level=info msg=\"the quick brown fox\"\n".repeat(50);
        assert_eq!(counter.count(&log), 50);
    }

    /// Text made of breaks, parts of breaks and pieces of patterns, so that lines, matches and
    /// near-matches fall on and across block edges.
    fn text() -> impl Strategy<Value = Vec<u8>> {
        let words: [&[u8]; 8] = [
            b"ab",
            b"abc",
            b"b",
            b"x",
            b"\xe2\x80\x94",
            b"\xff",
            b"fox",
            b" jumps",
        ];
        text_of([&BREAKS[..], &words].concat(), 200)
    }

    proptest! {
        #[test]
        fn counts_what_a_line_by_line_scan_counts(
            data in text(),
            pattern in proptest::sample::select(vec!["a", "ab", "abc", "x", "b", "—", "fox jumps", "ba"]),
        ) {
            let counter = LineCounter::new(pattern.as_bytes()).expect("a plain pattern");
            prop_assert_eq!(counter.count(&data), expected(&data, pattern.as_bytes()));
        }
    }
}
