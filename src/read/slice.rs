//! `read_tool_result(…, unit='bytes')`: a slice of a spill's raw bytes, as pydantic-ai-harness 0.75
//! reads one, in one ranged read.
//!
//! `offset` and `limit` count bytes (`limit` clamped to 50,000); `from_end` counts from the end,
//! and a range past the end is clamped. The header gives the interval and the total,
//! `[handle 'h': bytes 50000-100000 of 240311 (end exclusive)]`; the slice follows, decoded with
//! U+FFFD for a UTF-8 sequence cut at either edge and for any byte that is not UTF-8.

use std::ops::Range;

use super::request::ReadRequest;
use super::source::{PageError, Part, SpillReader, fetch_checked};
use crate::limits::pyfmt::repr;

/// Bytes `[start, end)` of a payload of `total` bytes that a read selects.
fn range(request: &ReadRequest, limit: u64, total: u64) -> Range<u64> {
    let offset = u64::try_from(request.offset).unwrap_or(0);
    if request.from_end {
        let end = total.saturating_sub(offset);
        end.saturating_sub(limit)..end
    } else {
        let start = offset.min(total);
        start..start.saturating_add(limit).min(total)
    }
}

/// The page of `reader`'s payload for a read by bytes, `limit` already clamped.
pub(crate) async fn byte_page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
) -> Result<String, PageError> {
    let version = reader.head(&request.handle).await?;
    let range = range(request, limit, version.size);
    let data = match range.is_empty() {
        true => Default::default(),
        false => {
            fetch_checked(
                reader,
                &request.handle,
                Part::Payload,
                &version,
                range.clone(),
            )
            .await?
        }
    };
    Ok(render(request, range, version.size, &data))
}

/// [`byte_page`] over a payload in memory.
pub(crate) fn byte_page_in_memory(data: &[u8], request: &ReadRequest, limit: u64) -> String {
    let range = range(request, limit, data.len() as u64);
    let slice = &data[range.start as usize..range.end as usize];
    render(request, range, data.len() as u64, slice)
}

fn render(request: &ReadRequest, range: Range<u64>, total: u64, data: &[u8]) -> String {
    let header = format!(
        "[handle {}: bytes {}-{} of {total} (end exclusive)]",
        repr(&request.handle),
        range.start,
        range.end
    );
    match data.is_empty() {
        true => header,
        false => header + "\n" + &String::from_utf8_lossy(data),
    }
}
