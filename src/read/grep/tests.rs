//! Grep pages against a slow, obvious grep, streamed in tiny chunks, and the exact text.

use proptest::prelude::*;

use super::*;
use crate::read::lines::split_lines;
use crate::read::page::Fill;
use crate::read::tests::{MemoryReader, dense_payload, payload, runtime};

/// The page, found the obvious way: every line tested alone, the window's matches taken, every
/// line within `context` of one of them offered in order (a gap starting a new group), and the
/// page filled from them.
fn obvious_page(data: &[u8], request: &GrepRequest) -> Result<String, ReadError> {
    let checked = request.check()?;
    let ranges: Vec<_> = split_lines(data).collect();
    let lines: Vec<&[u8]> = ranges.iter().map(|r| &data[r.clone()]).collect();
    let matching: Vec<usize> = (0..lines.len())
        .filter(|&i| checked.matcher.matches(lines[i]))
        .collect();
    let total = matching.len() as u64;
    let window = checked.window(total);
    let page_matches: Vec<usize> = window.clone().map(|n| matching[n as usize]).collect();
    let c = checked.context as usize;
    let mut fill = Fill::default();
    let mut last: Option<usize> = None;
    for (i, line) in lines.iter().enumerate() {
        if !page_matches.iter().any(|&m| i + c >= m && i <= m + c) {
            continue;
        }
        let is_match = page_matches.contains(&i);
        let separate = last.is_some_and(|l| i > l + 1);
        let prefix = format!("{}{}", i + 1, if is_match { ':' } else { '-' });
        fill.offer(i as u64, is_match, line, &prefix, separate);
        last = Some(i);
    }
    let page = fill.finish();
    let cut_at = page
        .cut
        .map(|(line, shown)| ranges[line as usize].start as u64 + shown);
    let scanned = crate::read::page::Scanned {
        total,
        page,
        cut_at,
    };
    Ok(render(request, &checked, scanned))
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
            |((regex, pattern), ignore_case, context, offset, max_matches, from_end)| GrepRequest {
                handle: "h".into(),
                pattern,
                regex,
                ignore_case,
                context,
                offset,
                max_matches,
                from_end,
                read_tool_name: None,
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
    let data = b"one\nerror: disk\ntwo\nthree\nfour\nfive\nERROR: net\nsix\nerror: late\n";
    let page = grep_page(
        data,
        &GrepRequest {
            context: 1,
            ignore_case: true,
            max_matches: 2,
            ..grep("error")
        },
    )
    .expect("valid");
    // Groups that touch merge; a match past the page shows as context.
    assert_eq!(
        page,
        "[handle 'h': 3 matching line(s); showing 2, 1 more; continue with offset=2]\n\
         1-one\n2:error: disk\n3-two\n--\n6-five\n7:ERROR: net\n8-six"
    );
    let regex = GrepRequest {
        regex: true,
        max_matches: 1,
        context: 0,
        ..grep(r"^\w+: (disk|net)$")
    };
    assert_eq!(
        grep_page(data, &regex).expect("valid"),
        "[handle 'h': 2 matching line(s); showing 1, 1 more; continue with offset=1]\n2:error: disk"
    );
    // By default: two lines of context, up to 20 matches, literal.
    assert_eq!(
        grep_page(b"a\nb\nx.y\nc\nd\ne\n", &grep("x.y")).expect("valid"),
        "[handle 'h': 1 matching line(s); showing 1]\n1-a\n2-b\n3:x.y\n4-c\n5-d"
    );
}

#[test]
fn earlier_requests_are_served() {
    let data: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    let old: GrepRequest = serde_json::from_value(serde_json::json!({
        "handle": "h", "pattern": "line", "limit": 3, "offset": 2, "from_end": true,
        "context": 0, "ignore_case": false, "regex": false,
    }))
    .expect("an earlier request");
    assert_eq!(old.max_matches, 3);
    assert_eq!(
        grep_page(data.as_bytes(), &old).expect("valid"),
        "[handle 'h': 10 matching line(s); showing 3, 2 more; continue with offset=8]\n\
         6:line 6\n7:line 7\n8:line 8"
    );
    let none = grep_page(data.as_bytes(), &grep("absent")).expect("valid");
    assert_eq!(none, "[handle 'h': 0 matching line(s); showing 0]");
}

#[test]
fn a_capped_page_says_where_to_resume() {
    let line = "x".repeat(20_000);
    let data = format!("{line}\n{line}\n{line}\n{line}\n");
    let request = GrepRequest {
        context: 0,
        ..grep("x")
    };
    let page = grep_page(data.as_bytes(), &request).expect("valid");
    let (header, body) = page.split_once('\n').expect("a body");
    assert_eq!(
        header,
        "[handle 'h': 4 matching line(s); showing 2, 2 more; continue with offset=2]"
    );
    assert_eq!(body.lines().count(), 2);
    // A match longer than the cap is cut, and the header says where its rest is.
    let long = format!("{}\n", "y".repeat(60_000));
    let page = grep_page(long.as_bytes(), &grep("y")).expect("valid");
    let (header, body) = page.split_once('\n').expect("a body");
    assert_eq!(
        header,
        "[handle 'h': 1 matching line(s); showing 1, output capped at 50,000 chars; the cut line \
         continues at read_tool_result(handle='h', unit='bytes', offset=49998, limit=50000)]"
    );
    assert_eq!(body.chars().count(), 50_000);
}

#[test]
fn bad_arguments_and_patterns_are_model_retries() {
    let retry = |request: GrepRequest| match grep_page(b"a\n", &request) {
        Err(ReadError::BadArgument(message)) => message,
        Err(ReadError::ModelRetry(message)) => message.to_owned(),
        other => panic!("not a retry: {other:?}"),
    };
    for (request, message) in [
        (
            GrepRequest {
                offset: -1,
                ..grep("a")
            },
            "`offset` must be >= 0.",
        ),
        (
            GrepRequest {
                max_matches: 0,
                ..grep("a")
            },
            "`max_matches` must be >= 1.",
        ),
        (
            GrepRequest {
                context: -2,
                ..grep("a")
            },
            "`context` must be >= 0.",
        ),
        (grep(""), "`pattern` must not be empty."),
    ] {
        assert_eq!(retry(request), message);
    }
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
    let long = retry(GrepRequest {
        regex: true,
        ..grep(&"a".repeat(MAX_REGEX_BYTES + 1))
    });
    assert!(long.contains("at most 4096"), "{long}");
    // A literal pattern is never a regex, and any length of it is searched.
    assert!(
        grep_page(b"(a\n", &grep("(a"))
            .expect("valid")
            .ends_with("\n1:(a")
    );
    let literal = "a".repeat(MAX_REGEX_BYTES + 1);
    assert!(grep_page(literal.as_bytes(), &grep(&literal)).is_ok());
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
        "[handle 'h': 0 matching line(s); showing 0]"
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
    let expected =
        format!("[handle 'h': 1 matching line(s); showing 1]\n1-before\n2:{long}\n3-after");
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
                max_matches: 3,
                context: 1,
                ..grep("x")
            };
            let expected = obvious_page(&data, &request).unwrap();
            assert_eq!(grep_page(&data, &request).unwrap(), expected);
            assert_eq!(streamed(&data, &request, 100_003), expected);
        }
    }
}
