"""The tests every framework adapter passes the same way, on the Temporal dev server, SeaweedFS and
the `overspill worker` binary: a framework's suite (`test_<framework>.py`) imports them with
`from framework_tests import *` beside its `framework` fixture (an `agents_support.Framework`),
and pytest runs them there, once per suite.

Needs `TEMPORAL_ADDRESS`, `OVERSPILL_TEST_S3_URL` with the `AWS_*` variables, and `OVERSPILL_BIN`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents_support import (
    FailFirstAttempt,
    Framework,
    Stack,
    completed,
    objects,
    overspill_stack,
    run_id_of,
    scheduled,
    stored,
    tool_calls,
)
from overspill import SPILL_ACTIVITY, Store, mask_marker
from support import EXAMPLES, page_text, quickstart_read_back, readme_shows, run_quickstart

__all__ = [
    'stack',
    'test_a_40_mb_output_completes_without_external_storage_and_is_read_back_by_its_handle',
    'test_a_bad_argument_goes_back_to_the_model_and_the_run_goes_on',
    'test_a_retried_tool_activity_writes_one_object',
    'test_masking_shrinks_later_inputs_and_the_model_reads_a_masked_output_back',
    'test_no_worker_on_the_queue_ends_the_run_with_one_line',
    'test_the_model_reads_back_with_read_grep_and_query',
    'test_the_package_readme_shows_the_quickstart_whole',
    'test_the_quickstart_spills_at_the_source_and_reads_back_against_overspill_dev',
]

MASK_TOOLS = ('read_tool_result', 'grep_tool_result', 'query_tool_result')


@pytest.fixture(scope='module')
def stack(framework: Framework, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """An Overspill worker on a queue and a store prefix of the suite's own."""
    with overspill_stack(tmp_path_factory.mktemp('logs'), framework.name) as stack:
        yield stack


def _errors(page: str) -> list[str]:
    return [line for line in page.split('\n') if 'ERROR' in line]


# --- at the source --------------------------------------------------------------------------------


def test_a_40_mb_output_completes_without_external_storage_and_is_read_back_by_its_handle(
    framework: Framework, stack: Stack
) -> None:
    """The `activity_as_tool` tool returns 40 MB: it is spilled in the tool's activity (the
    workflow decodes the marker where the output was), so the history stays under 100 KB without
    External Storage; the model reads the 4th ERROR line back by the marker's handle
    (`{run id}/{activity id}.0`); the history replays."""
    chars = 40_000_000
    request = framework.request(f'fetch 1 page of {chars} chars, then read ERROR at offset 3', overspill_queue=stack.queue)
    figures, history = framework.run(request, stack)
    assert figures.status == 'completed', figures
    [(activity_id, _)] = tool_calls(history)
    handle = f'{run_id_of(history)}/{activity_id}.0'
    page = page_text(0, chars)
    errors = _errors(page)
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[3]}"
    [seen] = framework.outputs(history)[1]
    assert seen.startswith(f"[Tool output too large ({chars:,} chars); stored to handle {handle!r}."), seen[:300]
    assert stored(stack, handle) == page.encode()
    assert figures.history_bytes < 100_000, figures.history_bytes
    framework.replay(history)


def test_the_model_reads_back_with_read_grep_and_query(framework: Framework, stack: Stack) -> None:
    """`grep_tool_result` and `read_tool_result` on a spilled page, and `query_tool_result` on
    spilled records: the model gets the worker's pages, the engine's for the same requests."""
    request = framework.request('fetch 1 page of 20000 chars, then grep ERROR, then read ERROR', overspill_queue=stack.queue)
    figures, history = framework.run(request, stack)
    assert figures.status == 'completed', figures
    [(activity_id, _)] = tool_calls(history)
    handle = f'{run_id_of(history)}/{activity_id}.0'
    [grep] = completed(history, 'tool_output_limits.grep_tool_result')

    async def engine_grep() -> str:
        page: str = await Store(stack.store_url).grep_tool_result({'handle': handle, 'pattern': 'ERROR'})
        return page

    assert grep == asyncio.run(engine_grep()) and grep.startswith(f'[handle {handle!r}: '), grep
    errors = _errors(page_text(0, 20_000))
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[0]}"
    step, ids = framework.records
    query, history = framework.run(framework.request(f'{step}, then query {ids}', overspill_queue=stack.queue), stack)
    [(activity_id, _)] = tool_calls(history, f'fetch_{step.split()[0]}')
    header, *first, more = query.result.splitlines()
    assert header.startswith(f"[handle '{run_id_of(history)}/{activity_id}.0': 154 result(s) of filter"), query.result
    assert first == ['0', '13', '26'] and more == '[151 more result(s): call query_tool_result again with offset=3]'


def test_a_retried_tool_activity_writes_one_object(framework: Framework, stack: Stack) -> None:
    """The tool's first attempt fails after its spill; the retry spills under the same key: one
    object, whose handle the model reads back."""
    request = framework.request('fetch 1 page of 50000 chars, then read ERROR', overspill_queue=stack.queue)
    figures, history = framework.run(request, stack, interceptors=[FailFirstAttempt()])
    assert figures.status == 'completed', figures
    [(activity_id, attempt)] = tool_calls(history)
    handle = f'{run_id_of(history)}/{activity_id}.0'
    assert attempt == 2 and objects(stack, run_id_of(history)) == [handle]
    assert figures.result.startswith(f'[handle {handle!r}: '), figures.result
    assert stored(stack, handle) == page_text(0, 50_000).encode()


# --- the read-back tools and masking -------------------------------------------------------------------


def test_masking_shrinks_later_inputs_and_the_model_reads_a_masked_output_back(framework: Framework, stack: Stack) -> None:
    """8 outputs of 20 KB (no reduction at the source) under a 50,000-char budget: once over it,
    the outputs the model has seen but the 3 newest reach it as markers, in every copy of the
    conversation the model call's input carries; the current turn's never; later inputs shrink;
    each output is spilled once; the model reads page 0's first ERROR line back by its marker's
    handle; the history replays."""
    request = framework.request('fetch 8 pages of 20000 chars, then read ERROR', overspill_queue=stack.queue, masking_budget=50_000)
    figures, history = framework.run(request)
    assert figures.status == 'completed', figures
    outputs = framework.outputs(history)[-2]  # the read-back call's: 7 outputs seen, the 8th its current turn's
    page = page_text(0, 20_000)
    handle = f'{run_id_of(history)}/{framework.masked_call(0)}.masked-{hashlib.sha256(page.encode()).hexdigest()[:12]}'
    assert len(outputs) == 8 and outputs[0] == mask_marker('fetch_page', handle, '20,000 chars', MASK_TOOLS)
    assert all(o.startswith("[Tool output of 'fetch_page' cleared from context") for o in outputs[:4]), outputs
    assert outputs[4:] == [page_text(n, 20_000) for n in (4, 5, 6, 7)]
    inputs = scheduled(history, 'invoke_model')
    assert json.dumps(page)[1:1000].encode() not in inputs[-2], 'no copy of a masked output is sent'
    assert stored(stack, handle) == page.encode()
    sizes = [len(data) for data in inputs]
    per_output = sizes[2] - sizes[1]  # what an output adds to an input (Strands: twice its text)
    assert sizes[-2] < sizes[1] + 4.5 * per_output, f'the read-back call carries 4 of its 8 outputs whole: {sizes}'
    assert len(scheduled(history, SPILL_ACTIVITY)) == 5, 'each output spilled once'
    assert figures.result == f"[handle {handle!r}: {len(_errors(page)):,} matching line(s); showing 1]\n{_errors(page)[0]}"
    framework.replay(history)


def test_a_bad_argument_goes_back_to_the_model_and_the_run_goes_on(framework: Framework, stack: Stack) -> None:
    """The worker's `ModelRetry` (`offset` < 0) reaches the model as the tool's error."""
    request = framework.request('fetch 1 page of 50000 chars, then read ERROR at offset -1', overspill_queue=stack.queue)
    figures, _ = framework.run(request, stack)
    assert figures.status == 'completed' and '`offset` must be >= 0.' in figures.result, figures


def test_no_worker_on_the_queue_ends_the_run_with_one_line(framework: Framework, stack: Stack) -> None:
    """No Overspill worker polls the queue: the run ends within the start timeout, naming the
    queue, whether a read-back tool or masking needed it."""
    for prompt, at_source in (('fetch 1 page of 50000 chars, then read ERROR', stack), ('fetch 5 pages of 20000 chars', None)):
        nobody = f'nobody-{uuid.uuid4()}'
        request = framework.request(prompt, overspill_queue=nobody, masking_budget=30_000, overspill_start_timeout=1)
        figures, _ = framework.run(request, at_source)
        activity = 'tool_output_limits.read_tool_result' if at_source else SPILL_ACTIVITY
        assert figures.status.startswith('failed: ') and '\n' not in figures.status, figures
        assert f'no Overspill worker polls task queue {nobody!r}: {activity} waited 0:00:01' in figures.status, figures.status


# --- the quickstart -----------------------------------------------------------------------------


def test_the_quickstart_spills_at_the_source_and_reads_back_against_overspill_dev(framework: Framework, tmp_path: Path) -> None:
    """The README's quickstart as pasted, against `overspill dev`, in Temporal's sandbox."""
    stdout = run_quickstart(EXAMPLES / framework.quickstart, tmp_path)
    # The handle is `{run id}/{activity id}.0`, the tool being the workflow's second activity (after the model's).
    assert quickstart_read_back(stdout, tmp_path).endswith('/2.0')


def test_the_package_readme_shows_the_quickstart_whole(framework: Framework) -> None:
    assert readme_shows(EXAMPLES / framework.quickstart)
