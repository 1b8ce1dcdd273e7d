//! Band selection: a unit is measured (bytes for binary, chars for text, or tokens with
//! `over_tokens`) and gets the band with the largest threshold met; among equal thresholds, the
//! first listed. No threshold met is a passthrough.

use std::ops::RangeInclusive;

use super::config::{Action, Band, Limits};
use super::unit::Unit;

/// The action for `unit`, or `None` (passthrough) when no threshold is met.
///
/// Binary is measured in bytes (even with `over_tokens`), text in chars, or with `over_tokens`
/// in tokens of `limits.tokenizer`. Tokens are counted only when the text's length leaves the
/// band open, and then only up to the largest threshold in question.
pub fn select<'b>(bands: &'b [Band], unit: &Unit<'_>, limits: &Limits) -> Option<&'b Action> {
    match unit.text() {
        None => pick(bands, unit.binary_len()),
        Some(_) if !limits.over_tokens => pick(bands, unit.chars()),
        Some(text) => {
            let tokenizer = limits.tokenizer;
            let bounds = tokenizer.bounds(unit.chars(), text.len() as u64);
            select_within(bands, bounds, |cap| tokenizer.count_up_to(text, cap))
        }
    }
}

/// Band selection for a size known only to lie in `bounds`: when no threshold falls inside them,
/// every size there picks the same band and nothing is counted; otherwise `count_up_to(cap)`
/// (the size, or `cap` if larger) decides, with `cap` the largest threshold inside.
fn select_within(
    bands: &[Band],
    bounds: RangeInclusive<u64>,
    count_up_to: impl FnOnce(u64) -> u64,
) -> Option<&Action> {
    let undecided = bands
        .iter()
        .filter_map(|band| u64::try_from(band.over).ok())
        .filter(|over| *bounds.start() < *over && bounds.contains(over))
        .max();
    match undecided {
        None => pick(bands, *bounds.start()),
        Some(cap) => pick(bands, count_up_to(cap)),
    }
}

/// The action of the band a unit of `size` falls in.
fn pick(bands: &[Band], size: u64) -> Option<&Action> {
    let mut best: Option<&Band> = None;
    for band in bands {
        let meets = u64::try_from(band.over).is_ok_and(|over| size >= over);
        if meets && best.is_none_or(|b| band.over > b.over) {
            best = Some(band);
        }
    }
    best.map(|b| &b.action)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::limits::{Tokenizer, ToolOutput, Truncate};

    /// Bands over the given thresholds, told apart by their `max_chars`.
    fn bands(thresholds: &[i64]) -> Vec<Band> {
        (thresholds.iter().enumerate())
            .map(|(i, &over)| Band {
                over,
                action: Action::Truncate(Truncate {
                    max_chars: i as i64,
                    ..Truncate::default()
                }),
            })
            .collect()
    }

    fn by_tokens(tokenizer: Tokenizer) -> Limits {
        Limits {
            over_tokens: true,
            tokenizer,
            ..Limits::default()
        }
    }

    #[test]
    fn the_largest_threshold_met_wins_the_first_listed_among_equals() {
        let bands = bands(&[10, 100, 100, 50]);
        assert_eq!(pick(&bands, 9), None);
        assert!(std::ptr::eq(
            pick(&bands, 60).expect("met"),
            &bands[3].action
        ));
        assert!(std::ptr::eq(
            pick(&bands, 100).expect("met"),
            &bands[1].action
        ));
    }

    #[test]
    fn a_band_the_length_decides_counts_nothing() {
        let bands = bands(&[100, 1_000]);
        let never = |_| -> u64 { panic!("counted a decided band") };
        assert_eq!(
            select_within(&bands, 200..=900, never),
            Some(&bands[0].action)
        );
        assert_eq!(
            select_within(&bands, 1_000..=1_000, never),
            Some(&bands[1].action)
        );
        assert_eq!(select_within(&bands, 0..=99, never), None);
        let mut asked = None;
        let picked = select_within(&bands, 50..=2_000, |cap| {
            asked = Some(cap);
            150
        });
        assert_eq!((asked, picked), (Some(1_000), Some(&bands[0].action)));
    }

    #[test]
    fn cjk_text_is_banded_by_its_real_tokens() {
        let text = "人工智能的研究正在迅速发展。".repeat(200);
        let output = ToolOutput::Text(text.clone().into());
        let estimate = text.chars().count() as u64 / 4;
        let bands = bands(&[estimate as i64 + 1]);
        let estimated = by_tokens(Tokenizer::CharsDiv4);
        assert_eq!(
            select(&bands, &Unit::new(&output, &estimated), &estimated),
            None
        );
        for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            assert!(tokenizer.count(&text) > estimate + 1, "{tokenizer:?}");
            let limits = by_tokens(tokenizer);
            let unit = Unit::new(&output, &limits);
            assert_eq!(select(&bands, &unit, &limits), Some(&bands[0].action));
        }
    }

    proptest! {
        #[test]
        fn token_bands_are_those_of_the_exact_count(
            text in "(\\PC{0,12}[ \n]){0,40}",
            thresholds in proptest::collection::vec(0i64..200, 0..4),
        ) {
            let bands = bands(&thresholds);
            let output = ToolOutput::Text(text.clone().into());
            for tokenizer in [Tokenizer::CharsDiv4, Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
                let limits = by_tokens(tokenizer);
                let unit = Unit::new(&output, &limits);
                let exact = pick(&bands, tokenizer.count(&text));
                prop_assert_eq!(select(&bands, &unit, &limits), exact);
            }
        }
    }
}
