//! Truncation to a char or token budget, the omission marker counted in it, with
//! `keep_tail_lines`.
//!
//! Chars are code points. Slicing walks from the nearer end, so clamping a 100 MB text costs one
//! char count and two short walks, never a copy of the text.
//!
//! The markers are the harness release's ([`Harness::rerun_note`] ends them in 0.75). Where
//! 0.75's longer marker no longer fits a small budget that 0.62's marker fits, the reference keeps
//! a bare slice, and the model cannot tell that anything was cut (a `head_tail` cut joins head and
//! tail with nothing between): a quirk fixed here, such a cut keeps 0.62's marker instead.

use super::config::TruncationStrategy;
use super::harness::Harness;
use super::pyfmt::thousands;
use super::text::{char_len, head_chars, tail_chars};
use super::tokens::Tokenizer;

/// Clamp `text` to `max_chars` chars (marker included) with `strategy`, reserving the final
/// `keep_tail_lines` lines when they fit, in `harness`'s words.
pub fn truncate_text(
    text: &str,
    max_chars: i64,
    strategy: TruncationStrategy,
    keep_tail_lines: usize,
    harness: Harness,
) -> String {
    let total = char_len(text) as usize;
    truncate_counted(text, total, max_chars, strategy, keep_tail_lines, harness)
}

/// [`truncate_text`] for a text whose length in chars (`total`) is already known.
pub(super) fn truncate_counted(
    text: &str,
    total: usize,
    max_chars: i64,
    strategy: TruncationStrategy,
    keep_tail_lines: usize,
    harness: Harness,
) -> String {
    let clamp = |note| clamp(text, total, max_chars, strategy, keep_tail_lines, note);
    match clamp(harness.rerun_note()) {
        Clamped::Bare(_) if !harness.rerun_note().is_empty() => clamp("").into_text(),
        clamped => clamped.into_text(),
    }
}

/// A clamped text: with its marker, or a bare slice (or the text itself, untouched).
enum Clamped {
    Marked(String),
    Bare(String),
}

impl Clamped {
    fn into_text(self) -> String {
        match self {
            Self::Marked(text) | Self::Bare(text) => text,
        }
    }

    fn ends_with(&self, suffix: &str) -> bool {
        match self {
            Self::Marked(text) | Self::Bare(text) => text.ends_with(suffix),
        }
    }
}

/// The reference's clamp, its markers ending with `note` inside their brackets.
fn clamp(
    text: &str,
    total: usize,
    max_chars: i64,
    strategy: TruncationStrategy,
    keep_tail_lines: usize,
    note: &str,
) -> Clamped {
    if max_chars <= 0 {
        return Clamped::Bare(String::new());
    }
    let max = usize::try_from(max_chars).unwrap_or(usize::MAX);
    if total <= max {
        return Clamped::Bare(text.to_owned());
    }
    let reserved = match keep_tail_lines {
        0 => 0,
        k => char_len(&text[tail_line_start(text, k)..]) as usize,
    };
    if reserved > max {
        return truncate_tail(text, max, note);
    }
    if reserved == max {
        return Clamped::Bare(tail_chars(text, max).to_owned());
    }
    match strategy {
        TruncationStrategy::Tail => {
            let out = truncate_tail(text, max, note);
            if reserved > 0 && !out.ends_with(tail_chars(text, reserved)) {
                Clamped::Bare(tail_chars(text, max).to_owned())
            } else {
                out
            }
        }
        TruncationStrategy::Head => head_and_tail(text, total, max, 5, reserved, note),
        TruncationStrategy::HeadTail => head_and_tail(text, total, max, 2, reserved, note),
    }
}

/// Clamp `text` (of `total` chars) to `max_tokens` tokens of `tokenizer`, marker included: the
/// clamp of [`truncate_counted`] with the largest char budget that fits, found by bisection.
/// The markers still count chars, as they describe what was kept.
pub(super) fn truncate_to_tokens(
    text: &str,
    total: usize,
    max_tokens: i64,
    strategy: TruncationStrategy,
    keep_tail_lines: usize,
    tokenizer: Tokenizer,
    harness: Harness,
) -> String {
    let Ok(max @ 1..) = u64::try_from(max_tokens) else {
        return String::new();
    };
    let fits = |clamped: &str| tokenizer.count_up_to(clamped, max.saturating_add(1)) <= max;
    if fits(text) {
        return text.to_owned();
    }
    let clamp = |budget: u64| {
        let budget = i64::try_from(budget).unwrap_or(i64::MAX);
        truncate_counted(text, total, budget, strategy, keep_tail_lines, harness)
    };
    // The text itself does not fit (a budget of `total` chars keeps it whole), and a clamp keeps
    // close to its budget while no text longer than `max_chars_within(max)` fits: search below.
    let mut too_big = (total as u64).min(tokenizer.max_chars_within(max).saturating_add(1));
    let (mut fitting, mut best) = (0, String::new());
    while too_big - fitting > 1 {
        let budget = fitting + (too_big - fitting) / 2;
        let clamped = clamp(budget);
        if fits(&clamped) {
            (fitting, best) = (budget, clamped);
        } else {
            too_big = budget;
        }
    }
    best
}

/// The byte offset where the final `k` lines start (LF-separated; a terminating LF does not start
/// a line; 0 when the text has `k` lines or fewer).
fn tail_line_start(text: &str, k: usize) -> usize {
    let bytes = text.as_bytes();
    let mut end = bytes.len() - usize::from(text.ends_with('\n'));
    for _ in 0..k {
        match memchr::memrchr(b'\n', &bytes[..end]) {
            Some(i) => end = i,
            None => return 0,
        }
    }
    end + 1
}

fn tail_marker(n: usize, note: &str) -> String {
    format!("[... output truncated, showing last {n} chars{note}]\n")
}

/// The shared tail clamp: a marker naming how many chars follow, then that many final chars.
fn truncate_tail(text: &str, max: usize, note: &str) -> Clamped {
    let mut keep = max.saturating_sub(tail_marker(max, note).len());
    if keep + 1 + tail_marker(keep + 1, note).len() <= max {
        keep += 1;
    }
    if keep == 0 {
        return Clamped::Bare(tail_chars(text, max).to_owned());
    }
    Clamped::Marked(tail_marker(keep, note) + tail_chars(text, keep))
}

/// Keep a head (`share`/5 of the content budget) and a tail (the rest, ending with the
/// `reserved` chars), with the largest budget whose marker still fits.
fn head_and_tail(
    text: &str,
    total: usize,
    max: usize,
    share: usize,
    reserved: usize,
    note: &str,
) -> Clamped {
    let head_only = share == 5 && reserved == 0;
    let marker_for = |retained: usize, head: usize| {
        if head_only {
            format!(
                "\n\n[truncated: showing first {} of {} chars{note}]",
                thousands(retained as u64),
                thousands(total as u64)
            )
        } else {
            format!(
                "\n\n[truncated: {} chars omitted from the middle; showing first {} + last {} of {} chars{note}]\n\n",
                thousands((total - retained) as u64),
                thousands(head as u64),
                thousands((retained - head) as u64),
                thousands(total as u64)
            )
        }
    };
    let fitting = (reserved.max(1)..=max).rev().find_map(|retained| {
        let head = (retained - reserved) * share / 5;
        let marker = marker_for(retained, head);
        (retained + marker.len() <= max).then_some((retained, head, marker))
    });
    let (retained, head, marker) = match fitting {
        Some(found) => found,
        None if reserved > 0 => return Clamped::Bare(tail_chars(text, max).to_owned()),
        None => (max, max * share / 5, String::new()),
    };
    let mut out = String::with_capacity(max.saturating_mul(4).min(text.len()));
    out.push_str(head_chars(text, head));
    out.push_str(&marker);
    out.push_str(tail_chars(text, retained - head));
    match marker.is_empty() {
        true => Clamped::Bare(out),
        false => Clamped::Marked(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TruncationStrategy::{Head, HeadTail, Tail};
    use proptest::prelude::*;

    #[test]
    fn budgets_at_the_edges() {
        let text = "x".repeat(100);
        assert_eq!(truncate_text(&text, 0, Head, 0, Harness::V0_62), "");
        assert_eq!(truncate_text("short", 10, Tail, 0, Harness::V0_62), "short");
        let out = truncate_text(&text, 60, Tail, 0, Harness::V0_62);
        assert_eq!(
            out,
            format!(
                "[... output truncated, showing last 14 chars]\n{}",
                "x".repeat(14)
            )
        );
        let lorem = "lorem ipsum dolor sit amet\n".repeat(1_000);
        let total = lorem.chars().count();
        let out = truncate_to_tokens(
            &lorem,
            total,
            100,
            Tail,
            0,
            Tokenizer::O200kBase,
            Harness::V0_62,
        );
        assert!(out.starts_with("[... output truncated, showing last "));
        assert!(Tokenizer::O200kBase.count(&out) <= 100);
        let short = truncate_to_tokens(
            "short",
            5,
            100,
            Head,
            0,
            Tokenizer::O200kBase,
            Harness::V0_62,
        );
        assert_eq!(short, "short");
    }

    #[test]
    fn tail_marker_counts_exactly_what_follows() {
        let text = "a".repeat(10_000);
        let out = truncate_text(&text, 4_000, Tail, 0, Harness::V0_62);
        assert!(out.starts_with("[... output truncated, showing last 3952 chars]\n"));
        assert_eq!(out.chars().count(), 4_000);
    }

    #[test]
    fn head_tail_splits_content_two_to_three() {
        let text: String = std::iter::repeat_n('漢', 1_000).collect();
        let out = truncate_text(&text, 200, HeadTail, 0, Harness::V0_62);
        assert!(out.contains(
            "[truncated: 893 chars omitted from the middle; showing first 42 + last 65 of 1,000 chars]"
        ));
        // No room for a marker: a bare 2:3 split.
        let digits: String = (0..100)
            .map(|i| char::from(b'0' + (i % 10) as u8))
            .collect();
        assert_eq!(
            truncate_text(&digits, 10, HeadTail, 0, Harness::V0_62),
            "0123456789"[..4].to_owned() + "456789"
        );
    }

    #[test]
    fn markers_of_0_75_tell_the_model_to_rerun_the_tool() {
        let text = "a".repeat(10_000);
        let out = truncate_text(&text, 4_000, Tail, 0, Harness::V0_75);
        assert!(out.starts_with(
            "[... output truncated, showing last 3907 chars; rerun the original tool for the full output]\n"
        ));
        assert_eq!(out.chars().count(), 4_000);
        let out = truncate_text(&"h".repeat(5_000), 200, Head, 0, Harness::V0_75);
        assert_eq!(
            out,
            format!(
                "{}\n\n[truncated: showing first 108 of 5,000 chars; rerun the original tool for the full output]",
                "h".repeat(108)
            )
        );
    }

    /// A budget 0.75's marker no longer fits but 0.62's does keeps 0.62's marker (the reference
    /// gives a bare slice); one neither fits is a bare slice in both.
    #[test]
    fn a_marker_too_long_for_the_budget_falls_back_to_the_shorter_one() {
        let digits: String = (0..1_000)
            .map(|i| char::from(b'0' + (i % 10) as u8))
            .collect();
        for (strategy, budget) in [(HeadTail, 120), (Head, 80), (Tail, 60)] {
            let out = truncate_text(&digits, budget, strategy, 0, Harness::V0_75);
            assert_eq!(
                out,
                truncate_text(&digits, budget, strategy, 0, Harness::V0_62)
            );
            assert!(out.contains("truncated"), "{strategy:?}: {out}");
            assert!(out.chars().count() <= budget as usize);
        }
        let bare = truncate_text(&digits, 10, HeadTail, 0, Harness::V0_75);
        assert_eq!(bare, "0123456789"[..4].to_owned() + "456789");
        // A tail keeping its reserved lines over the longer marker keeps the shorter one.
        let log = format!("{}\nexit=1\n", "x".repeat(500));
        let out = truncate_text(&log, 70, Tail, 1, Harness::V0_75);
        assert!(
            out.starts_with("[... output truncated, showing last ") && out.ends_with("exit=1\n")
        );
    }

    #[test]
    fn head_marker_names_first_chars() {
        let out = truncate_text(&"h".repeat(5_000), 100, Head, 0, Harness::V0_62);
        assert_eq!(
            out,
            format!(
                "{}\n\n[truncated: showing first 54 of 5,000 chars]",
                "h".repeat(54)
            )
        );
    }

    #[test]
    fn keep_tail_lines_counts_blank_final_line_and_keeps_crlf() {
        let text = format!("{}\nstatus=ok\r\n\n", "x".repeat(300));
        assert_eq!(&text[tail_line_start(&text, 2)..], "status=ok\r\n\n");
        let out = truncate_text(&text, 150, Head, 2, Harness::V0_62);
        assert!(out.ends_with("status=ok\r\n\n"), "{out:?}");
        assert!(out.chars().count() <= 150);
    }

    #[test]
    fn huge_budgets_and_line_counts_are_harmless() {
        let text = "a\nb\n".repeat(1_000);
        assert_eq!(
            truncate_text(&text, i64::MAX, HeadTail, usize::MAX, Harness::V0_62),
            text
        );
        let out = truncate_text(&text, 1_000, HeadTail, usize::MAX, Harness::V0_62);
        assert!(out.chars().count() <= 1_000);
    }

    #[test]
    fn token_budget_keeps_the_most_the_estimate_allows() {
        let text = "0123456789".repeat(100);
        for strategy in [Head, Tail, HeadTail] {
            let out = truncate_to_tokens(
                &text,
                1_000,
                25,
                strategy,
                0,
                Tokenizer::CharsDiv4,
                Harness::V0_62,
            );
            assert_eq!(
                out,
                truncate_text(&text, 103, strategy, 0, Harness::V0_62),
                "{strategy:?}"
            );
        }
        assert_eq!(
            truncate_to_tokens(
                &text,
                1_000,
                0,
                Head,
                0,
                Tokenizer::O200kBase,
                Harness::V0_62
            ),
            ""
        );
    }

    #[test]
    fn token_budget_fills_most_of_the_budget() {
        let text = "The quick brown fox jumps over the lazy dog.\n".repeat(400);
        let total = text.chars().count();
        for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            let out = truncate_to_tokens(&text, total, 500, HeadTail, 2, tokenizer, Harness::V0_62);
            let count = tokenizer.count(&out);
            assert!((490..=500).contains(&count), "{tokenizer:?}: {count}");
            assert!(out.ends_with("lazy dog.\nThe quick brown fox jumps over the lazy dog.\n"));
        }
    }

    #[test]
    fn keep_tail_lines_larger_than_budget_falls_back_to_tail() {
        let text = format!("{}\n{}", "a".repeat(50), "b".repeat(500));
        let out = truncate_text(&text, 100, Head, 1, Harness::V0_62);
        assert!(out.starts_with("[... output truncated, showing last "));
    }

    proptest! {
        #[test]
        fn never_exceeds_budget(
            text in "\\PC{0,400}|(\\PC{0,20}\n){0,40}",
            max in -5i64..500,
            keep in prop_oneof![0usize..5, Just(usize::MAX)],
            strategy in prop_oneof![Just(Head), Just(Tail), Just(HeadTail)],
        ) {
            let out = truncate_text(&text, max, strategy, keep, Harness::V0_62);
            prop_assert!(out.chars().count() as i64 <= max.max(0));
            if text.chars().count() as i64 <= max {
                prop_assert_eq!(out, text);
            }
        }

        #[test]
        fn token_budget_is_never_exceeded(
            text in "\\PC{0,300}|(\\PC{0,20}\n){0,30}|([a-z]{1,8}[ .,\n]){0,120}",
            max in 0i64..120,
            keep in prop_oneof![0usize..5, Just(usize::MAX)],
            strategy in prop_oneof![Just(Head), Just(Tail), Just(HeadTail)],
            tokenizer in prop_oneof![
                Just(Tokenizer::CharsDiv4),
                Just(Tokenizer::O200kBase),
                Just(Tokenizer::Cl100kBase),
            ],
        ) {
            let total = text.chars().count();
            let out = truncate_to_tokens(&text, total, max, strategy, keep, tokenizer, Harness::V0_62);
            prop_assert!(tokenizer.count(&out) <= max as u64, "{} tokens", tokenizer.count(&out));
            if tokenizer.count(&text) <= max as u64 {
                prop_assert_eq!(out, text);
            }
        }

        #[test]
        fn kept_parts_are_true_prefix_and_suffix(text in "\\PC{401,900}", max in 120i64..400) {
            let out = truncate_text(&text, max, HeadTail, 0, Harness::V0_62);
            let (head, rest) = out.split_once("\n\n[truncated: ").expect("marker fits");
            let tail = rest.split_once(" chars]\n\n").map(|(_, t)| t).expect("marker ends");
            prop_assert!(text.starts_with(head));
            prop_assert!(text.ends_with(tail));
        }
    }
}
