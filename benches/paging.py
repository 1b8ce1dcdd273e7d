"""One step of the reference, pydantic-ai-harness 0.62.0, timed in-process for `benches/paging.rs`.

    paging.py reduce STORE_DIR PAYLOAD CALL_ID      # spill PAYLOAD (text) into a LocalFileStore
    paging.py page STORE_DIR HANDLE OFFSET LIMIT FROM_END [PATTERN]

Prints the step's time in milliseconds: the harness call alone, after the interpreter started,
the packages were imported and the input was read (peak RSS is measured around the whole process).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from pydantic_ai.messages import ToolCallPart, ToolReturn
from pydantic_ai.tools import ToolDefinition
from pydantic_ai_harness.tool_output_limits import LocalFileStore, ToolOutputLimits
from pydantic_ai_harness.tool_output_limits._capability import _read_slice


def reduce(store: LocalFileStore, payload: str, call_id: str) -> float:
    text = Path(payload).read_text()
    ctx = SimpleNamespace(run_id='bench', retry=0, tool_name_for_kind=lambda kind: None)
    call = ToolCallPart(tool_name='cat', args={}, tool_call_id=call_id)
    limits = ToolOutputLimits(store=store)
    start = time.perf_counter()
    result = asyncio.run(
        limits.after_tool_execute(ctx, call=call, tool_def=ToolDefinition(name='cat'), args={}, result=text)
    )
    elapsed = time.perf_counter() - start
    assert isinstance(result, ToolReturn), 'the reference did not spill'
    return elapsed


def page(store: LocalFileStore, handle: str, offset: str, limit: str, from_end: str, pattern: str | None) -> float:
    start = time.perf_counter()
    out = asyncio.run(
        _read_slice(store.read, handle, offset=int(offset), limit=int(limit), from_end=from_end == '1', pattern=pattern)
    )
    elapsed = time.perf_counter() - start
    assert out.startswith(f'[handle {handle!r}: '), out[:200]
    return elapsed


def main() -> None:
    step, store_dir, *args = sys.argv[1:]
    store = LocalFileStore(base_dir=Path(store_dir))
    if step == 'reduce':
        elapsed = reduce(store, *args)
    else:
        handle, offset, limit, from_end, *pattern = args
        elapsed = page(store, handle, offset, limit, from_end, pattern[0] if pattern else None)
    print(f'{elapsed * 1000:.3f}')


if __name__ == '__main__':
    main()
