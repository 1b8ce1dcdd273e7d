//! Token counting: the reference's estimates (0.62's `chars // 4`, 0.75's text estimate), or
//! OpenAI's exact BPE encodings.
//!
//! Production counts with the `tiktoken` crate: the vocabularies are compiled in (nothing is read
//! or downloaded, so workflow code can count too), it counts without a token list, and its
//! pre-tokenizer is linear-time `regex` where `tiktoken-rs`, the tests' independent oracle,
//! backtracks with `fancy-regex`. Counts are `encode_ordinary`'s: text that looks like a special
//! token (`<|endoftext|>`) counts as plain text.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use tiktoken::CoreBpe;

/// Chars per token in the reference's estimate (`len(text) // 4`).
pub(super) const ESTIMATED_CHARS_PER_TOKEN: u64 = 4;

/// The longest token of `o200k_base` and `cl100k_base`, in bytes.
const LONGEST_TOKEN_BYTES: u64 = 128;

/// How many bytes [`Tokenizer::count_up_to`] counts before it checks the cap.
const CHUNK_BYTES: usize = 16 * 1024;

static O200K_BASE: LazyLock<CoreBpe> = LazyLock::new(tiktoken::encoding::o200k_base);
static CL100K_BASE: LazyLock<CoreBpe> = LazyLock::new(tiktoken::encoding::cl100k_base);

/// How `over_tokens` thresholds and `max_tokens` budgets count tokens (the `tokenizer` field;
/// without one, the harness release's own estimate, [`super::Harness::estimate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tokenizer {
    /// pydantic-ai-harness 0.62's estimate, `len(text) // 4` in chars.
    #[serde(rename = "chars_div_4")]
    CharsDiv4,
    /// pydantic-ai-harness 0.75's text estimate: 4 chars a token, priced up for accented Latin
    /// and Cyrillic, other non-ASCII scripts, emoji, base64-like runs, and JSON punctuation or
    /// digits beyond their share of prose ([`text_estimate`]).
    #[serde(rename = "text_estimate")]
    TextEstimate,
    /// OpenAI's `o200k_base` (GPT-4o, GPT-4.1, GPT-5, the o-series), exact.
    #[serde(rename = "o200k_base")]
    O200kBase,
    /// OpenAI's `cl100k_base` (GPT-4, GPT-3.5), exact.
    #[serde(rename = "cl100k_base")]
    Cl100kBase,
}

impl Tokenizer {
    fn bpe(self) -> Option<&'static CoreBpe> {
        match self {
            Self::CharsDiv4 | Self::TextEstimate => None,
            Self::O200kBase => Some(&O200K_BASE),
            Self::Cl100kBase => Some(&CL100K_BASE),
        }
    }

    /// The number of tokens in `text`.
    pub fn count(self, text: &str) -> u64 {
        match (self, self.bpe()) {
            (_, Some(bpe)) => bpe.count(text) as u64,
            (Self::TextEstimate, None) => text_estimate(text),
            (_, None) => super::text::char_len(text) / ESTIMATED_CHARS_PER_TOKEN,
        }
    }

    /// `min(count(text), cap)`. A BPE encoding counts no further than needed to reach `cap`, so
    /// the cost is bounded by `cap` tokens, not by the text.
    pub fn count_up_to(self, text: &str, cap: u64) -> u64 {
        let Some(bpe) = self.bpe() else {
            return self.count(text).min(cap);
        };
        let mut counted = 0;
        for piece in independent_pieces(text, CHUNK_BYTES) {
            counted += bpe.count(piece) as u64;
            if counted >= cap {
                return cap;
            }
        }
        counted
    }

    /// The most chars a text of at most `tokens` tokens can have.
    pub fn max_chars_within(self, tokens: u64) -> u64 {
        match self {
            // The text estimate is never below `chars // 4`.
            Self::CharsDiv4 | Self::TextEstimate => tokens
                .saturating_mul(ESTIMATED_CHARS_PER_TOKEN)
                .saturating_add(ESTIMATED_CHARS_PER_TOKEN - 1),
            Self::O200kBase | Self::Cl100kBase => tokens.saturating_mul(LONGEST_TOKEN_BYTES),
        }
    }
}

/// pydantic-ai-harness 0.75's text estimate (its `estimate_text_tokens`), in its own float
/// arithmetic, so that the count is the reference's to the token: `int(chars / 4 + surcharge)`.
///
/// The surcharge prices what tokenizes denser than English prose: accented Latin and Cyrillic at
/// 1.5 chars a token, code points outside the BMP at 3 tokens each, other non-ASCII chars at one
/// token each, and base64-like runs (24 or more of `[A-Za-z0-9+/_-]`, up to two `=` after, mixing
/// digits and both cases) at 1.25 chars a token. From 32 chars on, JSON punctuation (`{}[],:"`)
/// beyond 12% and digits beyond 8% of the chars outside those runs cost 1.25 and 0.5 tokens each.
pub fn text_estimate(text: &str) -> u64 {
    const BASELINE: f64 = 1.0 / ESTIMATED_CHARS_PER_TOKEN as f64;
    let (mut chars, mut ascii, mut latin_or_cyrillic, mut astral) = (0u64, 0u64, 0u64, 0u64);
    let (mut punctuation, mut digits) = (0u64, 0u64);
    for c in text.chars() {
        chars += 1;
        ascii += u64::from(c.is_ascii());
        latin_or_cyrillic += u64::from(matches!(c, '\u{c0}'..='\u{24f}' | '\u{400}'..='\u{4ff}'));
        astral += u64::from(c >= '\u{10000}');
        punctuation += u64::from(matches!(c, '{' | '}' | '[' | ']' | ',' | ':' | '"'));
        digits += u64::from(c.is_ascii_digit());
    }
    let non_ascii = chars - ascii;
    let (mut encoded, mut encoded_digits) = (0u64, 0u64);
    for run in encoded_runs(text.as_bytes()) {
        encoded += run.len() as u64;
        encoded_digits += run.iter().filter(|b| b.is_ascii_digit()).count() as u64;
    }
    let mut surcharge = latin_or_cyrillic as f64 * (1.0 / 1.5 - BASELINE)
        + astral as f64 * (3.0 - BASELINE)
        + (non_ascii - latin_or_cyrillic - astral) as f64 * (1.0 - BASELINE)
        + encoded as f64 * (1.0 / 1.25 - BASELINE);
    if chars >= 32 {
        let plain = (chars - encoded) as f64;
        let digits = (digits - encoded_digits) as f64;
        surcharge = surcharge
            + (punctuation as f64 - 0.12 * plain).max(0.0) * (1.25 - BASELINE)
            + (digits - 0.08 * plain).max(0.0) * (0.5 - BASELINE);
    }
    // Python's `int()` of a non-negative float: the integer part.
    (chars as f64 / ESTIMATED_CHARS_PER_TOKEN as f64 + surcharge) as u64
}

/// The base64-like runs of `text`: each maximal run of 24 or more of `[A-Za-z0-9+/_-]` with up
/// to two `=` after it (Python's `findall` of `[A-Za-z0-9+/_-]{24,}={0,2}`) that has a digit, an
/// upper-case and a lower-case letter.
fn encoded_runs(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let in_run = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'-');
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < text.len() {
            let start = at + text[at..].iter().position(in_run)?;
            let len = text[start..].iter().take_while(|b| in_run(b)).count();
            let padding = text[start + len..]
                .iter()
                .take(2)
                .take_while(|&&b| b == b'=')
                .count();
            at = start + len + padding;
            let run = &text[start..at];
            let core = &run[..len];
            let mixed = core.iter().any(u8::is_ascii_digit)
                && core.iter().any(u8::is_ascii_uppercase)
                && core.iter().any(u8::is_ascii_lowercase);
            if len >= 24 && mixed {
                return Some(run);
            }
        }
        None
    })
}

/// `text` cut into pieces of a little over `chunk_bytes` whose counts add up to the count of
/// `text`.
///
/// Both encodings split text into pre-tokens before merging bytes, and no pre-token runs past a
/// line feed into a following char that is neither whitespace nor `/` (a pre-token holding a line
/// feed ends with line breaks, or with punctuation followed by line breaks and slashes). So a
/// cut right after such a line feed changes no token; a text without one stays whole.
fn independent_pieces(text: &str, chunk_bytes: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let bytes = rest.as_bytes();
        let safe = |end: usize| {
            (bytes.get(end)).is_some_and(|&next| next.is_ascii_graphic() && next != b'/')
        };
        let cut = (bytes.get(chunk_bytes..))
            .and_then(|tail| {
                (memchr::memchr_iter(b'\n', tail).map(|i| chunk_bytes + i + 1))
                    .find(|&end| safe(end))
            })
            .unwrap_or(bytes.len());
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;
    use tiktoken_rs::CoreBPE;

    /// Prose in several scripts, with the edge cases of the pre-tokenizer patterns: contractions
    /// in both cases, digit runs, whitespace runs before words and at the end, CRLF, slashes
    /// after line feeds, combining marks, emoji, non-breaking and ideographic spaces.
    const MULTILINGUAL: &str = "东京是日本的首都，人工智能的研究正在迅速发展。\n\
        東京は日本の首都です。機械学習モデルのトークン数を数えます。\r\n\
        서울은 대한민국의 수도입니다. 토큰화는 중요합니다.\n\
        Москва — столица России; «кавычки» и числа 1234567.\n\
        القاهرة هي عاصمة مصر ٣٤٥٦\tनमस्ते दुनिया, यह एक परीक्षण है।\n\
        I'm sure THEY'LL say it's fine, we'd've DON'T.   \n\n\n   spaces\u{a0}\u{3000}here\n\
        /usr/bin/env\n//comment\n\u{65}\u{301}\u{301}\u{928}\u{93f} 🦀🚀👩‍💻 ÀÉÎÕÜ ǅungla ʰmodifier\n\
        <|endoftext|> <|fim_prefix|> ========== ---------- ********** \t\t\t\n   \n";

    /// Mixed text, code, JSON and CJK: this repository's README and engine source, a slice of a
    /// golden JSON file, and the multilingual sample.
    fn corpus() -> Vec<&'static str> {
        let json = include_str!("../../tests/golden/0.62/truncate.json");
        let mut end = 200_000.min(json.len());
        while !json.is_char_boundary(end) {
            end -= 1;
        }
        vec![
            include_str!("../../README.md"),
            include_str!("reduce.rs"),
            include_str!("pyfmt.rs"),
            &json[..end],
            MULTILINGUAL,
        ]
    }

    fn reference(tokenizer: Tokenizer) -> &'static CoreBPE {
        match tokenizer {
            Tokenizer::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Tokenizer::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            Tokenizer::CharsDiv4 | Tokenizer::TextEstimate => unreachable!("no BPE"),
        }
    }

    /// The counts equal those of tiktoken-rs (a port of OpenAI's tiktoken with its own copy of
    /// the vocabularies and a backtracking regex engine), whole and line by line.
    #[test]
    fn counts_equal_an_independent_implementation() {
        for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            let reference = reference(tokenizer);
            for doc in corpus() {
                let expected = reference.encode_ordinary(doc).len() as u64;
                assert_eq!(tokenizer.count(doc), expected, "{tokenizer:?}");
                assert_eq!(tokenizer.count_up_to(doc, u64::MAX), expected);
                for line in doc.split_inclusive('\n') {
                    let expected = reference.encode_ordinary(line).len() as u64;
                    assert_eq!(tokenizer.count(line), expected, "{tokenizer:?} {line:?}");
                }
            }
        }
    }

    /// Characters chosen to hit every branch of both pre-tokenizer patterns.
    fn tricky_text() -> impl Strategy<Value = String> {
        let pick = prop_oneof![
            Just("\n"),
            Just("\r\n"),
            Just(" "),
            Just("  "),
            Just("\t"),
            Just("\u{a0}"),
            Just("\u{3000}"),
            Just("/"),
            Just("'"),
            Just("'s"),
            Just("'LL"),
            Just("a"),
            Just("Word"),
            Just("WORD"),
            Just("word"),
            Just("x1"),
            Just("12345"),
            Just("٣"),
            Just("é"),
            Just("e\u{301}"),
            Just("東京"),
            Just("의"),
            Just("🦀"),
            Just("{\"k\":"),
            Just("."),
            Just("=="),
            Just("<|endoftext|>"),
            Just("ǅ"),
            Just("ʰ"),
        ];
        proptest::collection::vec(pick, 0..60).prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn random_texts_count_as_the_reference_and_cut_anywhere_safe(
            text in tricky_text(),
            chunk in 0usize..40,
        ) {
            for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
                let bpe = tokenizer.bpe().expect("BPE");
                let expected = reference(tokenizer).encode_ordinary(&text).len();
                prop_assert_eq!(bpe.count(&text), expected);
                let pieces: usize = independent_pieces(&text, chunk).map(|p| bpe.count(p)).sum();
                prop_assert_eq!(pieces, expected);
            }
        }

        #[test]
        fn max_chars_within_holds(text in tricky_text()) {
            let chars = text.chars().count() as u64;
            for tokenizer in [Tokenizer::CharsDiv4, Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
                prop_assert!(chars <= tokenizer.max_chars_within(tokenizer.count(&text)));
            }
        }
    }

    #[test]
    fn small_counts() {
        assert_eq!(Tokenizer::CharsDiv4.count("hello world"), 2);
        assert_eq!(Tokenizer::O200kBase.count("hello world"), 2);
        assert_eq!(Tokenizer::CharsDiv4.max_chars_within(10), 43);
        assert_eq!(Tokenizer::Cl100kBase.max_chars_within(10), 1_280);
    }

    #[test]
    fn longest_token_is_128_bytes() {
        for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            let bpe = tokenizer.bpe().expect("BPE");
            let longest = (0..bpe.vocab_size() as u32)
                .map(|id| bpe.decode(&[id]).len() as u64)
                .max();
            assert_eq!(longest, Some(LONGEST_TOKEN_BYTES), "{tokenizer:?}");
        }
    }

    #[test]
    fn names_are_the_json_form() {
        for (tokenizer, name) in [
            (Tokenizer::CharsDiv4, "\"chars_div_4\""),
            (Tokenizer::O200kBase, "\"o200k_base\""),
            (Tokenizer::Cl100kBase, "\"cl100k_base\""),
        ] {
            assert_eq!(serde_json::to_string(&tokenizer).expect("ser"), name);
            assert_eq!(
                serde_json::from_str::<Tokenizer>(name).expect("de"),
                tokenizer
            );
        }
        assert!(serde_json::from_str::<Tokenizer>("\"p50k_base\"").is_err());
    }

    #[test]
    fn pieces_cut_only_after_a_line_feed_before_a_safe_char() {
        let line = "x".repeat(100) + "\n";
        let text = line.repeat(500) + " indented\n/slash\nend";
        let pieces: Vec<&str> = independent_pieces(&text, CHUNK_BYTES).collect();
        assert!(pieces.len() > 2, "{}", pieces.len());
        assert_eq!(pieces.concat(), text);
        for pair in pieces.windows(2) {
            assert!(pair[0].ends_with('\n') && pair[0].len() > CHUNK_BYTES);
            let next = pair[1].as_bytes()[0];
            assert!(next.is_ascii_graphic() && next != b'/', "{next}");
        }
        let one_line = "y".repeat(3 * CHUNK_BYTES);
        assert_eq!(independent_pieces(&one_line, CHUNK_BYTES).count(), 1);
    }

    #[test]
    fn count_up_to_stops_at_the_cap() {
        let text = "alpha beta\n".repeat(10_000);
        for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            let full = tokenizer.count(&text);
            assert_eq!(tokenizer.count_up_to(&text, u64::MAX), full);
            assert_eq!(tokenizer.count_up_to(&text, 7), 7);
            assert_eq!(tokenizer.count_up_to(&text, full), full);
        }
        assert_eq!(Tokenizer::CharsDiv4.count_up_to(&text, 7), 7);
    }
}
