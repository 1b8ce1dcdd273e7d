//! Text helpers every layer of the engine uses: lengths and ends counted in chars (code points,
//! as Python counts them).

/// The length of `text` in chars (Python's `len(str)`), counted with SIMD: the size a band
/// compares and a marker states, so a multi-megabyte output is counted at memory speed.
pub(crate) fn char_len(text: &str) -> u64 {
    bytecount::num_chars(text.as_bytes()) as u64
}

/// The first `n` chars of `text` (all of it when shorter).
pub(super) fn head_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// The last `n` chars of `text` (all of it when shorter; none for `n = 0`).
pub(super) fn tail_chars(text: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match text.char_indices().nth_back(n - 1) {
        Some((i, _)) => &text[i..],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn counts_code_points() {
        assert_eq!(char_len("naïve ☃"), 7);
    }

    proptest! {
        #[test]
        fn char_len_is_pythons_len(text in any::<String>(), repeat in 1usize..200) {
            // Repeated past the SIMD block sizes, so the vector and tail paths both count.
            let text = text.repeat(repeat);
            prop_assert_eq!(char_len(&text), text.chars().count() as u64);
        }

        #[test]
        fn head_and_tail_are_pythons_slices(text in any::<String>(), n in 0usize..20) {
            let chars: Vec<char> = text.chars().collect();
            let head: String = chars.iter().take(n).collect();
            let tail: String = chars[chars.len().saturating_sub(n)..].iter().collect();
            prop_assert_eq!(head_chars(&text, n), head);
            prop_assert_eq!(tail_chars(&text, n), tail);
        }
    }
}
