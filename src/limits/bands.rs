//! Band selection: a unit is measured (bytes for binary, chars for text, or tokens with
//! `over_tokens`) and gets the band with the largest threshold met; among equal thresholds, the
//! first listed. No threshold met is a passthrough.

use super::config::{Action, Band, Limits};
use super::unit::Unit;

/// The action for `unit`, or `None` (passthrough) when no threshold is met.
///
/// Binary is measured in bytes (even with `over_tokens`), text in chars, or with `over_tokens`
/// in tokens of [`Limits::counter`], counted no further than the largest threshold.
pub fn select<'b>(bands: &'b [Band], unit: &Unit, limits: &Limits) -> Option<&'b Action> {
    let size = match unit.text() {
        None => unit.binary_len(),
        Some(_) if !limits.over_tokens => unit.chars(),
        Some(text) => {
            let thresholds = bands.iter().filter_map(|b| u64::try_from(b.over).ok());
            limits
                .counter()
                .count_up_to(text, thresholds.max().unwrap_or(0))
        }
    };
    pick(bands, size)
}

/// The action of the band a unit of `size` falls in: the largest threshold met, the first
/// listed among equals (`min_by_key` keeps the first minimum).
fn pick(bands: &[Band], size: u64) -> Option<&Action> {
    (bands.iter())
        .filter(|band| u64::try_from(band.over).is_ok_and(|over| size >= over))
        .min_by_key(|band| std::cmp::Reverse(band.over))
        .map(|band| &band.action)
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
            tokenizer: Some(tokenizer),
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
