"""The OpenAI Agents SDK on Temporal (`temporalio.openai_agents`), with and without Overspill.

A scripted model (`openai_agents_support.ScriptedModel`, the SDK's own `Model` interface) drives
an agent whose tool is an activity (`activity_as_tool`). Every model call is an activity whose
input carries the whole conversation so far, so each big tool output is recorded again in every
later model call's input.

Needs `TEMPORAL_ADDRESS`, and for the Overspill runs `OVERSPILL_TEST_S3_URL` with the `AWS_*`
variables and `OVERSPILL_BIN`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from agents_support import (
    PAYLOAD_LIMIT,
    FailFirstAttempt,
    RECORD_LINES,
    RECORDS,
    Stack,
    objects,
    overspill_stack,
    reduce_on_worker,
    replay,
    run_id_of,
    stored,
    tool_calls,
)
from openai_agents_support import (
    MODEL_ACTIVITY,
    AgentRequest,
    CrawlAgent,
    RunFigures,
    ScriptedProvider,
    fetch_page,
    fetch_records,
    plugin,
    pydantic_agent,
    run_agent,
)
from overspill import Store
from overspill.openai_agents import SPILL_ACTIVITY, OverspillInterceptor, mask_marker
from support import page_text
from temporalio.client import Client
from temporalio.worker import Interceptor, UnsandboxedWorkflowRunner, Worker

MASK_TOOLS = ('read_tool_result', 'grep_tool_result', 'query_tool_result')


async def _client(provider: ScriptedProvider) -> Client:
    return await Client.connect(
        os.environ['TEMPORAL_ADDRESS'],
        namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
        plugins=[plugin(provider)],
    )


def test_without_overspill_200_kb_outputs_stop_the_agent_at_the_12th_call() -> None:
    """100 calls of 200 KB: the 12th model call's input (11 outputs, 2.2 MB) is over the payload
    limit, so the workflow task that schedules it fails on every retry while the run shows
    Running; nothing ends it. The test sees the failed task in the history and terminates it."""

    figures, _ = _run(AgentRequest('fetch 100 pages of 200000 chars'))
    print(f'\nwithout Overspill: {figures}')
    assert figures.status == 'stuck', figures
    assert figures.tool_calls == 11 and figures.model_calls == 11, figures
    assert figures.largest_model_input < PAYLOAD_LIMIT, figures
    assert 'exceeded the error limit' in figures.failure, figures


# --- Overspill's read-back tools and masking --------------------------------------------------


@pytest.fixture(scope='module')
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with overspill_stack(tmp_path_factory.mktemp('logs'), 'openai-agents') as stack:
        yield stack


def _run(request: AgentRequest, *, interceptors: Sequence[Interceptor] = (), timeout: float = 240) -> tuple[RunFigures, Any]:
    """Run the agent workflow on a worker in this process (workflow and tools) with the scripted model."""

    async def main() -> tuple[RunFigures, Any]:
        client = await _client(ScriptedProvider())
        queue = f'oa-agent-{uuid.uuid4()}'
        async with Worker(
            client, task_queue=queue, workflows=[CrawlAgent], activities=[fetch_page, fetch_records],
            interceptors=interceptors, workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            return await run_agent(client, CrawlAgent.run, request, task_queue=queue, timeout=timeout)

    return asyncio.run(main())


def _replay(history: Any) -> None:
    """Replay `history` with the integration's plugin: no nondeterminism."""
    replay(history, [CrawlAgent], [plugin(ScriptedProvider())])


def _model_inputs(history: Any) -> list[list[Any]]:
    """The input items of each model call, as recorded."""
    return [json.loads(data)['input'] for name, data in _scheduled(history) if name == MODEL_ACTIVITY]


def _scheduled(history: Any) -> list[tuple[str, bytes]]:
    """Every activity the workflow scheduled: its type and its first input payload."""
    return [
        (a.activity_type.name, a.input.payloads[0].data)
        for e in history.events
        if e.HasField('activity_task_scheduled_event_attributes')
        for a in [e.activity_task_scheduled_event_attributes]
    ]


def test_masking_clears_seen_outputs_and_the_model_reads_one_back(stack: Stack) -> None:
    """8 outputs of 20 KB under a 50,000-char budget: once over it, the outputs the model has seen
    (but the 3 newest of those) reach it as markers whose handles read the exact bytes back; the
    current turn's output is never masked, nor counted among the 3; later inputs shrink; each output
    is spilled once; the model reads page 0's first ERROR line back by its marker's handle; the
    history replays."""
    figures, history = _run(
        AgentRequest('fetch 8 pages of 20000 chars, then read ERROR', overspill_queue=stack.queue, masking_budget=50_000)
    )
    assert figures.status == 'completed', figures
    run_id = run_id_of(history)
    inputs = _model_inputs(history)
    last = inputs[-2]  # the call that read back: 7 outputs seen, the 8th its current turn's
    outputs = [i['output'] for i in last if i.get('type') == 'function_call_output']
    assert len(outputs) == 8
    page = page_text(0, 20_000)
    handle = f'{run_id}/call-0.masked-{hashlib.sha256(page.encode()).hexdigest()[:12]}'
    assert outputs[0] == mask_marker('fetch_page', handle, '20,000 chars', MASK_TOOLS)
    assert all(o.startswith("[Tool output of 'fetch_page' cleared from context") for o in outputs[:4]), outputs
    assert outputs[4:] == [page_text(n, 20_000) for n in (4, 5, 6, 7)]
    assert stored(stack, handle) == page.encode()
    sizes = [len(json.dumps(i)) for i in inputs]
    assert max(sizes[5:]) < max(sizes[:5]) + 10_000, f'later inputs stay near the budget: {sizes}'
    # Pages 0-3 by the read-back call and those before it (one a call), page 4 by the last call.
    keys = [json.loads(data)['key'] for name, data in _scheduled(history) if name == SPILL_ACTIVITY]
    assert [key.split('/')[1].split('.')[0] for key in keys] == [f'call-{k}' for k in range(5)], 'each spilled once'
    errors = [line for line in page.split('\n') if 'ERROR' in line]
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[0]}"
    _replay(history)


def test_a_bad_argument_goes_back_to_the_model_as_the_tools_error(stack: Stack) -> None:
    """The worker's `ModelRetry` (`offset` < 0) reaches the model as the SDK's tool-error text."""
    figures, _ = _run(
        AgentRequest('fetch 5 pages of 20000 chars, then read ERROR at offset -1', overspill_queue=stack.queue,
                     masking_budget=50_000)
    )
    assert figures.status == 'completed', figures
    assert figures.result == 'An error occurred while running the tool. Please try again. Error: `offset` must be >= 0.'


# --- at the source ----------------------------------------------------------------------------


def test_a_40_mb_output_completes_without_external_storage_and_is_read_back_by_its_handle(stack: Stack) -> None:
    """The tool returns 40 MB: the interceptor spills it in the tool's activity, so it never reaches
    a payload (Temporal's limit is 2 MiB) and the history stays under 100 KB, without External
    Storage; the model gets the marker, reads the 4th ERROR line back through the Overspill worker
    by the marker's handle (`{run id}/{activity id}.0`), and the recorded history replays."""
    chars = 40_000_000
    figures, history = _run(
        AgentRequest(f'fetch 1 page of {chars} chars, then read ERROR at offset 3', overspill_queue=stack.queue),
        interceptors=[OverspillInterceptor([fetch_page], store=stack.store_url)],
    )
    assert figures.status == 'completed', figures
    run_id = run_id_of(history)
    [(activity_id, _)] = tool_calls(history)
    handle = f'{run_id}/{activity_id}.0'
    page = page_text(0, chars)
    errors = [line for line in page.split('\n') if 'ERROR' in line]
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[3]}"
    marker = [i['output'] for i in _model_inputs(history)[1] if i.get('type') == 'function_call_output']
    assert marker[0].startswith(f"[Tool output too large ({chars:,} chars); stored to handle {handle!r}."), marker
    assert stored(stack, handle) == page.encode()
    assert figures.history_bytes < 100_000, figures.history_bytes
    _replay(history)


def test_a_retried_tool_activity_writes_one_object(stack: Stack) -> None:
    """The tool's first attempt fails after the spill; the retry spills under the same key: one
    object, whose handle the model reads back."""
    figures, history = _run(
        AgentRequest('fetch 1 page of 50000 chars, then read ERROR', overspill_queue=stack.queue),
        interceptors=[FailFirstAttempt(), OverspillInterceptor([fetch_page], store=stack.store_url)],
    )
    assert figures.status == 'completed', figures
    run_id = run_id_of(history)
    [(activity_id, attempt)] = tool_calls(history)
    assert attempt == 2
    handle = f'{run_id}/{activity_id}.0'
    assert objects(stack, run_id) == [handle]
    assert figures.result.startswith(f'[handle {handle!r}: '), figures.result
    assert stored(stack, handle) == page_text(0, 50_000).encode()


# --- the 100-call run, side by side with pydantic-ai -------------------------------------------

HUNDRED_CALLS = 'fetch 100 pages of 200000 chars'


def _run_pydantic(stack: Stack | None, *, timeout: float = 300) -> tuple[RunFigures, Any]:
    """The crawler on pydantic-ai's `TemporalDurability`: without Overspill, or with
    `ToolOutputLimits(store=OverspillStore(…))` and `OverspillInterceptor(limits)` on its worker."""
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin

    tag = uuid.uuid4().hex[:8]
    workflow_class, _, interceptor = pydantic_agent(
        f'crawler_{tag}', stack.store_url if stack else None, stack.queue if stack else ''
    )

    async def main() -> tuple[RunFigures, Any]:
        client = await Client.connect(
            os.environ['TEMPORAL_ADDRESS'],
            namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
            plugins=[PydanticAIPlugin()],
        )
        queue = f'pa-agent-{tag}'
        async with Worker(
            client, task_queue=queue, workflows=[workflow_class], interceptors=[interceptor] if interceptor else [],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            return await run_agent(client, workflow_class.run, AgentRequest(HUNDRED_CALLS), task_queue=queue, timeout=timeout)

    return asyncio.run(main())


def test_100_calls_of_200_kb_side_by_side_with_pydantic_ai(stack: Stack) -> None:
    """100 calls of 200 KB, under the OpenAI Agents integration and under pydantic-ai: without
    Overspill both stop at the 12th call; with Overspill (reduction at the source, and for the
    OpenAI agent masking too) both complete, each history a fraction of the stopped runs'."""
    runs = {
        'OpenAI Agents SDK, without Overspill': _run(AgentRequest(HUNDRED_CALLS)),
        'OpenAI Agents SDK, with Overspill': _run(
            AgentRequest(HUNDRED_CALLS, overspill_queue=stack.queue, masking_budget=100_000),
            interceptors=[OverspillInterceptor([fetch_page], store=stack.store_url)],
            timeout=300,
        ),
        'pydantic-ai, without Overspill': _run_pydantic(None),
        'pydantic-ai, with Overspill': _run_pydantic(stack),
    }
    print('\n| run | end | tool calls | model calls | history | largest model request | chars sent to the model |')
    print('|---|---|---:|---:|---:|---:|---:|')
    for name, (f, _) in runs.items():
        print(
            f'| {name} | {f.status} | {f.tool_calls} | {f.model_calls} | {f.history_bytes:,} B '
            f'| {f.largest_model_input:,} B | {f.total_model_chars:,} |'
        )
    for name, (f, _) in runs.items():
        if 'without' in name:
            assert f.status == 'stuck' and f.tool_calls == 11, (name, f)
        else:
            assert f.status == 'completed' and f.tool_calls == 100, (name, f)
            assert f.result == 'fetched 100 pages', (name, f.result)
            assert f.largest_model_input < PAYLOAD_LIMIT // 4, (name, f)


def test_records_spill_as_json_lines_that_read_and_query_back(stack: Stack) -> None:
    """A tool returning 2,000 records (a list of dicts) is spilled at the source as JSON Lines, one
    record per line: `read_tool_result` (what the marker recommends) returns whole records, and
    `query_tool_result` runs a jq filter on each."""
    interceptors = [OverspillInterceptor([fetch_page, fetch_records], store=stack.store_url)]
    figures, history = _run(
        AgentRequest('records 2000, then query select(.status == "ERROR") | .id', overspill_queue=stack.queue),
        interceptors=interceptors,
    )
    assert figures.status == 'completed', figures
    run_id = run_id_of(history)
    marker = [i['output'] for i in _model_inputs(history)[1] if i.get('type') == 'function_call_output'][0]
    handle = marker.split("'")[1]
    assert handle.startswith(f'{run_id}/') and marker.startswith(f'[Tool output too large ({len(RECORD_LINES):,} chars);')
    assert stored(stack, handle) == RECORD_LINES.encode()
    header, *ids, more = figures.result.splitlines()
    assert header.startswith(f"[handle {handle!r}: 154 result(s) of filter") and ids == ['0', '13', '26'], figures.result
    assert more == '[151 more result(s): call query_tool_result again with offset=3]'
    read, history = _run(
        AgentRequest('records 2000, then read "ERROR"', overspill_queue=stack.queue), interceptors=interceptors
    )
    header, first = read.result.splitlines()
    assert header.startswith(f"[handle '{run_id_of(history)}/") and first == json.dumps(RECORDS[0], separators=(',', ':'))


def test_grep_and_list_return_the_workers_pages(stack: Stack) -> None:
    """`grep_tool_result` and `list_tool_results` on the spills of the run: the model gets the
    worker's page, the one the engine gives for the same request, byte for byte."""
    interceptors = [OverspillInterceptor([fetch_page], store=stack.store_url)]
    grep, history = _run(
        AgentRequest('fetch 1 page of 20000 chars, then grep ERROR', overspill_queue=stack.queue),
        interceptors=interceptors,
    )
    run_id = run_id_of(history)
    [(activity_id, _)] = tool_calls(history)
    handle = f'{run_id}/{activity_id}.0'

    async def engine_page() -> str:
        page: str = await Store(stack.store_url).grep_tool_result({'handle': handle, 'pattern': 'ERROR', 'offset': 0})
        return page

    lines = page_text(0, 20_000).split('\n')
    first = next(n for n, line in enumerate(lines, 1) if 'ERROR' in line)
    assert grep.status == 'completed' and grep.result == asyncio.run(engine_page()), grep.result
    assert f'{first}:{lines[first - 1]}' in grep.result.splitlines(), grep.result
    listing, history = _run(
        AgentRequest('fetch 2 pages of 20000 chars, then list', overspill_queue=stack.queue), interceptors=interceptors
    )
    run_id = run_id_of(history)
    handles = [f'{run_id}/{activity_id}.0' for activity_id, _ in tool_calls(history)]
    assert listing.status == 'completed' and all(h in listing.result for h in handles), listing.result
    assert listing.result.count('fetch_page') == 2, listing.result


# --- what a newcomer met --------------------------------------------------------------------------


def test_a_worker_on_another_store_ends_the_run_with_one_line(stack: Stack) -> None:
    """The interceptor spills into one store, the Overspill worker reads another: the first read
    of a handle this run's interceptor gave ends the run, saying so in one line, instead of every
    read answering "No stored tool result" and the run completing."""
    elsewhere = f'{stack.store_url}-elsewhere'
    figures, _ = _run(
        AgentRequest('fetch 1 page of 50000 chars, then read ERROR', overspill_queue=stack.queue),
        interceptors=[OverspillInterceptor([fetch_page], store=elsewhere)],
    )
    assert figures.status.startswith('failed: '), figures
    assert "has no spill '" in figures.status and f'OverspillInterceptor stored in {elsewhere} for this run' in figures.status
    assert 'Give both the same store (OVERSPILL_STORE).' in figures.status and '\n' not in figures.status, figures.status


def test_no_worker_on_the_queue_ends_the_run_with_one_line(stack: Stack) -> None:
    """No Overspill worker polls the read-back tools' queue: the run ends within the start timeout,
    naming the queue."""
    nobody = f'nobody-{uuid.uuid4()}'
    figures, _ = _run(
        AgentRequest('fetch 1 page of 50000 chars, then read ERROR', overspill_queue=nobody, overspill_start_timeout=1),
        interceptors=[OverspillInterceptor([fetch_page], store=stack.store_url)],
    )
    assert figures.status.startswith('failed: '), figures
    assert f'no Overspill worker polls task queue {nobody!r}: tool_output_limits.read_tool_result waited 0:00:01' in figures.status


def _reduce_on_worker(stack: Stack, request: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(reduce_on_worker(stack, request, plugins=[plugin(ScriptedProvider())]))


def test_the_model_sees_the_rust_workers_text_byte_for_byte(stack: Stack) -> None:
    """What the model sees for a 200 KB text and for 2,000 records reduced at the source is what
    the Overspill worker's own `tool_output_limits.reduce` makes of the same output, call and
    limits (the interceptor's defaults, `DEFAULT_LIMITS`), byte for byte."""
    from overspill import DEFAULT_LIMITS

    interceptors = [OverspillInterceptor([fetch_page, fetch_records], store=stack.store_url)]
    cases = [
        ('fetch 1 page of 200000 chars', 'fetch_page', {'text': page_text(0, 200_000)}),
        ('records 2000, then query .id', 'fetch_records', {'json': RECORDS}),
    ]
    for prompt, tool, output in cases:
        figures, history = _run(AgentRequest(prompt, overspill_queue=stack.queue), interceptors=interceptors)
        assert figures.status == 'completed', figures
        run_id = run_id_of(history)
        [(activity_id, _)] = tool_calls(history, tool)
        [seen] = [i['output'] for i in _model_inputs(history)[1] if i.get('type') == 'function_call_output']
        request = {'tool_name': tool, 'run_id': run_id, 'tool_call_id': activity_id, 'output': output, 'config': dict(DEFAULT_LIMITS)}
        reduced = _reduce_on_worker(stack, request)
        assert reduced['return_value'] == {'text': seen} and seen.startswith('[Tool output too large ('), (tool, seen[:300])


# --- the model-visible text -------------------------------------------------------------------


def test_the_masking_filter_examines_only_new_items_and_keeps_at_source_handles() -> None:
    """`OverspillMasking` over 1,000 model calls whose outputs were spilled at the source (markers
    with a 1,000-char preview): each item is examined once (the filter ran long enough in a
    workflow to trip Temporal's deadlock detector when it went over the whole conversation at every
    call), the masked outputs keep their at-source handles (no spill), and the current turn's
    output is never masked."""
    from agents import Agent
    from agents.run_config import CallModelData, ModelInputData
    from overspill.openai_agents import OverspillMasking

    masking = OverspillMasking(budget=30_000)
    items: list[Any] = [{'role': 'user', 'content': 'fetch'}]
    agent = Agent[None](name='crawler')

    async def run() -> list[Any]:
        sent: list[Any] = []
        for k in range(1_000):
            marker = f"[Tool output too large (200,000 chars); stored to handle 'run/{k}.0'. …]\n" + 'x' * 1_000
            items.extend([
                {'type': 'function_call', 'call_id': f'c{k}', 'name': 'fetch_page', 'arguments': '{}'},
                {'type': 'function_call_output', 'call_id': f'c{k}', 'output': marker},
            ])
            data = CallModelData(model_data=ModelInputData(input=[dict(i) for i in items], instructions='go'), agent=agent, context=None)
            sent = (await masking(data)).input
        return sent

    sent = asyncio.run(run())
    assert masking._conversations._outside is not None and masking._conversations._outside.examined == len(items) == 2_001
    outputs = [i['output'] for i in sent if i.get('type') == 'function_call_output']
    assert outputs[0] == mask_marker('fetch_page', 'run/0.0', '200,000 chars', MASK_TOOLS)
    assert all(o.startswith('[Tool output of') for o in outputs[:-4]) and outputs[-1].startswith('[Tool output too large')


def test_the_tools_are_the_engines_table() -> None:
    """`overspill_tools()` is the engine's read-back table (`overspill.READ_BACK_TOOLS`): names,
    descriptions, and parameters (in their strict form: every one required, an optional one may be
    null), with no copy of a tool's words here."""
    from agents.strict_schema import ensure_strict_json_schema
    from overspill import READ_BACK_TOOLS
    from overspill.openai_agents import overspill_tools

    tools = overspill_tools()
    assert [(t.name, t.description) for t in tools] == [(t.name, t.description) for t in READ_BACK_TOOLS]
    for ours, table in zip(tools, READ_BACK_TOOLS):
        strict = ensure_strict_json_schema(table.strict_parameters())  # as the SDK sends it
        assert ours.strict_json_schema and ours.params_json_schema == strict, ours.name
