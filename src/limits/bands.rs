//! Band selection: the largest threshold met wins; among equal thresholds, the first listed.

use super::config::{Action, Band};

/// The action for a return of `size`, or `None` (passthrough) when no threshold is met.
///
/// ```
/// use overspill::limits::{bands::select, Action, Band};
/// let bands = [
///     Band { over: 10, action: Action::Passthrough },
///     Band { over: 100, action: Action::Passthrough },
/// ];
/// assert!(select(&bands, 9).is_none());
/// assert!(std::ptr::eq(select(&bands, 100).unwrap(), &bands[1].action));
/// ```
pub fn select(bands: &[Band], size: u64) -> Option<&Action> {
    let mut best: Option<&Band> = None;
    for band in bands {
        let meets = u64::try_from(band.over).is_ok_and(|over| size >= over);
        if meets && best.is_none_or(|b| band.over > b.over) {
            best = Some(band);
        }
    }
    best.map(|b| &b.action)
}
