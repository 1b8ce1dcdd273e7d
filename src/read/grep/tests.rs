//! Grep pages against a slow, obvious grep, streamed in tiny chunks, and the exact text.

use proptest::prelude::*;

use super::*;
use crate::read::lines::split_lines;
use crate::read::request::PAGE_BYTES_CAP;
use crate::read::scan::{Kept, Page};
use crate::read::tests::{MemoryReader, dense_payload, payload, runtime};

/// The page, found the obvious way: every line tested alone, then the window's matches and the
/// lines within `context` of them kept.
fn obvious_page(data: &[u8], request: &GrepRequest) -> Result<String, ReadError> {
    let checked = request.check()?;
    let lines: Vec<&[u8]> = split_lines(data).map(|r| &data[r]).collect();
    let matching: Vec<usize> = (0..lines.len())
        .filter(|&i| checked.matcher.matches(lines[i]))
        .collect();
    let total = matching.len() as u64;
    let shown = checked.window(total);
    let c = checked.context as usize;
    let mut page = Page::new(PAGE_BYTES_CAP);
    for (i, line) in lines.iter().enumerate() {
        let nth = matching.binary_search(&i).ok().map(|n| n as u64);
        let in_window = nth.filter(|n| shown.contains(n));
        let near = shown.clone().any(|n| {
            let m = matching[n as usize];
            i + c >= m && i <= m + c
        });
        let kind = match (in_window, nth) {
            (Some(n), _) => Kept::Match(n),
            (None, Some(_)) if near => Kept::OtherMatch,
            (None, None) if near => Kept::Context,
            _ => continue,
        };
        page.keep(i as u64, kind, line);
    }
    Ok(page.render(request, c > 0, total, shown))
}

fn streamed(data: &[u8], request: &GrepRequest, chunk_bytes: usize) -> String {
    let reader = MemoryReader::new(data.to_vec()).chunked(chunk_bytes);
    runtime()
        .block_on(grep_tool_result(&reader, request))
        .expect("a page")
}

fn grep(pattern: &str) -> GrepRequest {
    GrepRequest {
        handle: "h".into(),
        pattern: pattern.into(),
        ..GrepRequest::default()
    }
}

fn grep_request() -> impl Strategy<Value = GrepRequest> {
    let pattern = prop_oneof![
        Just((false, "a".to_owned())),
        Just((false, "ab".to_owned())),
        Just((false, "\u{fffd}".to_owned())),
        Just((false, "a\nb".to_owned())),
        Just((true, "^a".to_owned())),
        Just((true, "b$".to_owned())),
        Just((true, "^$".to_owned())),
        Just((true, "a.?b|c".to_owned())),
        Just((true, r"\s".to_owned())),
        Just((true, "[^x]{3}".to_owned())),
        Just((true, "A".to_owned())),
        Just((true, r"\bz".to_owned())),
    ];
    (
        pattern,
        any::<bool>(),
        0i64..4,
        0i64..6,
        1i64..5,
        any::<bool>(),
    )
        .prop_map(
            |((regex, pattern), ignore_case, context, offset, limit, from_end)| GrepRequest {
                handle: "h".into(),
                pattern,
                regex,
                ignore_case,
                context,
                offset,
                limit,
                from_end,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn pages_equal_the_obvious_grep(data in payload(), request in grep_request()) {
        let expected = obvious_page(&data, &request).expect("valid");
        prop_assert_eq!(grep_page(&data, &request).expect("valid"), expected);
    }

    #[test]
    fn streamed_pages_in_tiny_chunks_equal_the_obvious_grep(
        data in payload(),
        request in grep_request(),
        chunk_bytes in 1usize..12,
    ) {
        let expected = obvious_page(&data, &request).expect("valid");
        prop_assert_eq!(streamed(&data, &request, chunk_bytes), expected);
    }
}

#[test]
fn matches_show_numbers_context_and_group_separators() {
    let data = b"one\nerror: disk\ntwo\nthree\nfour\nfive\nERROR: net\nsix\n";
    let page = grep_page(
        data,
        &GrepRequest {
            context: 1,
            ignore_case: true,
            ..grep("error")
        },
    )
    .expect("valid");
    assert_eq!(
        page,
        "[handle 'h': 2 matching line(s) for 'error', ignoring case; showing matches 1-2]\n\
         1-one\n2:error: disk\n3-two\n--\n6-five\n7:ERROR: net\n8-six"
    );
    let regex = GrepRequest {
        regex: true,
        limit: 1,
        ..grep(r"^\w+: (disk|net)$")
    };
    assert_eq!(
        grep_page(data, &regex).expect("valid"),
        "[handle 'h': 2 matching line(s) for regex '^\\\\w+: (disk|net)$'; showing matches 1-1]\n\
         2:error: disk\n[1 more matching line(s): call grep_tool_result again with offset=1]"
    );
}

#[test]
fn notes_say_how_to_get_the_next_page() {
    let data: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    let first = grep_page(
        data.as_bytes(),
        &GrepRequest {
            limit: 3,
            ..grep("line")
        },
    );
    assert_eq!(
        first.expect("valid"),
        "[handle 'h': 10 matching line(s) for 'line'; showing matches 1-3]\n\
         1:line 1\n2:line 2\n3:line 3\n\
         [7 more matching line(s): call grep_tool_result again with offset=3]"
    );
    let last = GrepRequest {
        limit: 3,
        offset: 2,
        from_end: true,
        ..grep("line")
    };
    assert_eq!(
        grep_page(data.as_bytes(), &last).expect("valid"),
        "[handle 'h': 10 matching line(s) for 'line'; showing matches 6-8]\n\
         6:line 6\n7:line 7\n8:line 8\n\
         [5 earlier matching line(s): call grep_tool_result again with from_end=true, offset=5]"
    );
    let none = grep_page(data.as_bytes(), &grep("absent")).expect("valid");
    assert_eq!(
        none,
        "[handle 'h': 0 matching line(s) for 'absent'; showing none]"
    );
}

#[test]
fn a_capped_page_says_where_to_resume() {
    let line = "x".repeat(20_000);
    let data = format!("{line}\n{line}\n{line}\n{line}\n");
    let page = grep_page(data.as_bytes(), &grep("x")).expect("valid");
    let (body, note) = page.rsplit_once('\n').expect("a note");
    assert!(
        body.starts_with(
            "[handle 'h': 4 matching line(s) for 'x'; showing matches 1-4, output capped]\n1:x"
        ),
        "{}",
        &body[..100]
    );
    let header_len = body.find('\n').expect("a header") + 1;
    assert_eq!(body[header_len..].chars().count(), 50_000);
    assert_eq!(
        note,
        "[output capped at 50,000 chars after match 3: call grep_tool_result again with \
         offset=3 for the next matches, or read_tool_result(offset=N-1, limit=1) to see line N whole]"
    );
}

#[test]
fn bad_arguments_and_patterns_are_model_retries() {
    let retry = |request: GrepRequest| match grep_page(b"a\n", &request) {
        Err(ReadError::BadArgument(message)) => message,
        other => panic!("not a retry: {other:?}"),
    };
    assert_eq!(
        retry(GrepRequest {
            offset: -1,
            ..grep("a")
        }),
        "`offset` must be >= 0."
    );
    assert_eq!(
        retry(GrepRequest {
            limit: 0,
            ..grep("a")
        }),
        "`limit` must be >= 1."
    );
    assert_eq!(
        retry(GrepRequest {
            context: -2,
            ..grep("a")
        }),
        "`context` must be >= 0."
    );
    assert!(retry(grep("")).contains("use read_tool_result"));
    let unclosed = retry(GrepRequest {
        regex: true,
        ..grep("(a")
    });
    assert!(
        unclosed.starts_with("`pattern` is not a valid regex"),
        "{unclosed}"
    );
    assert!(unclosed.contains("unclosed group"), "{unclosed}");
    let huge = retry(GrepRequest {
        regex: true,
        ..grep(r"\w{1000}\w{1000}")
    });
    assert!(
        huge.starts_with("`pattern` compiles to more than"),
        "{huge}"
    );
    let long = retry(grep(&"a".repeat(MAX_PATTERN_BYTES + 1)));
    assert!(long.contains("at most 4096"), "{long}");
    // A literal pattern is never a regex.
    assert!(
        grep_page(b"(a\n", &grep("(a"))
            .expect("valid")
            .ends_with("\n1:(a")
    );
}

#[test]
fn catastrophic_backtracking_patterns_take_linear_time() {
    let data = format!("{}!\n{}\n", "a".repeat(30), "x".repeat(40));
    for pattern in [
        r"(a+)+$",
        r"(x+x+)+y",
        r"(a|aa)+$",
        r"(\w+\s?)+$",
        r"(.*a){20}",
    ] {
        let request = GrepRequest {
            regex: true,
            ..grep(pattern)
        };
        let page = grep_page(data.repeat(1_000).as_bytes(), &request).expect("valid");
        assert!(page.starts_with("[handle 'h': "), "{pattern}: {page}");
    }
    let page = grep_page(
        data.as_bytes(),
        &GrepRequest {
            regex: true,
            ..grep(r"(a+)+$")
        },
    );
    assert_eq!(
        page.expect("valid"),
        "[handle 'h': 0 matching line(s) for regex '(a+)+$'; showing none]"
    );
}

#[test]
fn lines_longer_than_a_chunk_are_tested_whole() {
    let long = format!("{}needle{}", "y".repeat(50), "z".repeat(50));
    let data = format!("before\n{long}\nafter\n");
    let request = GrepRequest {
        context: 1,
        ..grep("needle")
    };
    let expected = format!(
        "[handle 'h': 1 matching line(s) for 'needle'; showing matches 1-1]\n1-before\n2:{long}\n3-after"
    );
    assert_eq!(streamed(data.as_bytes(), &request, 8), expected);
}

/// A match every few bytes: the line numbers after them are still right, from the start, from
/// the end, in one chunk and in many.
#[test]
fn dense_matches_keep_their_line_numbers() {
    let data = dense_payload();
    for offset in (0..60_000).step_by(7_001) {
        for from_end in [false, true] {
            let request = GrepRequest {
                offset,
                from_end,
                limit: 3,
                context: 1,
                ..grep("x")
            };
            let expected = obvious_page(&data, &request).unwrap();
            assert_eq!(grep_page(&data, &request).unwrap(), expected);
            assert_eq!(streamed(&data, &request, 100_003), expected);
        }
    }
}
