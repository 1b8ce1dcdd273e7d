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
from dataclasses import dataclass
from typing import Any

import pytest
from openai_agents_support import (
    MODEL_ACTIVITY,
    AgentRequest,
    CrawlAgent,
    RunFigures,
    ScriptedProvider,
    fetch_page,
    fetch_records,
    page_text,
    plugin,
    pydantic_agent,
    run_agent,
)
from overspill.openai_agents import SPILL_ACTIVITY, OverspillInterceptor, mask_marker
from support import Process
from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    Replayer,
    UnsandboxedWorkflowRunner,
    Worker,
)

REQUIRED = ('TEMPORAL_ADDRESS', 'OVERSPILL_TEST_S3_URL', 'AWS_ENDPOINT_URL', 'AWS_ACCESS_KEY_ID', 'OVERSPILL_BIN')
MASK_TOOLS = ('read_tool_result', 'grep_tool_result', 'query_tool_result')

PAYLOAD_LIMIT = 2 * 1024 * 1024
"""Temporal's default limit on one payload (the server's `limit.blobSize.error`)."""


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


@dataclass
class Stack:
    """An Overspill worker on its own queue and store prefix."""

    store_url: str
    queue: str
    bucket: str
    prefix: str
    worker: Process


@pytest.fixture(scope='module')
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    assert not missing, f'{missing} not set: source .deploy/seaweedfs.env and .deploy/temporal.env, set OVERSPILL_BIN'
    tag = f'{os.getpid()}-{uuid.uuid4().hex[:8]}'
    bucket = os.environ['OVERSPILL_TEST_S3_URL'].removeprefix('s3://').split('/')[0]
    store_url = f'{os.environ["OVERSPILL_TEST_S3_URL"].rstrip("/")}/openai-agents-{tag}'
    queue = f'tool-output-limits-oa-{tag}'
    worker = Process(
        'overspill-worker-openai-agents',
        [os.environ['OVERSPILL_BIN'], 'worker', '--store', store_url, '--task-queue', queue],
        {**os.environ, 'AWS_ALLOW_HTTP': 'true'},
        tmp_path_factory.mktemp('logs'),
    )
    try:
        worker.wait_for('overspill worker started')
        yield Stack(store_url, queue, bucket, f'openai-agents-{tag}/tool_output_limits', worker)
    finally:
        worker.stop()


def _stored(stack: Stack, handle: str) -> bytes:
    """The bytes the store keeps for `handle`."""
    import boto3

    client = boto3.client('s3', endpoint_url=os.environ['AWS_ENDPOINT_URL'])
    body: bytes = client.get_object(Bucket=stack.bucket, Key=f'{stack.prefix}/{handle}')['Body'].read()
    return body


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

    async def main() -> None:
        replayer = Replayer(
            workflows=[CrawlAgent], plugins=[plugin(ScriptedProvider())], workflow_runner=UnsandboxedWorkflowRunner()
        )
        await replayer.replay_workflow(history)

    asyncio.run(main())


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


def test_masking_clears_old_outputs_and_the_model_reads_one_back(stack: Stack) -> None:
    """8 outputs of 20 KB under a 50,000-char budget: older outputs reach the model as markers
    whose handles read the exact bytes back; the 3 newest never are masked; each is spilled once;
    the model reads page 0's first ERROR line back by its marker's handle; the history replays."""
    figures, history = _run(
        AgentRequest('fetch 8 pages of 20000 chars, then read ERROR', overspill_queue=stack.queue, masking_budget=50_000)
    )
    assert figures.status == 'completed', figures
    run_id = history.events[0].workflow_execution_started_event_attributes.original_execution_run_id
    inputs = _model_inputs(history)
    last = inputs[-2]  # the call that read back: 8 outputs, the last 3 kept
    outputs = [i['output'] for i in last if i.get('type') == 'function_call_output']
    assert len(outputs) == 8
    page = page_text(0, 20_000)
    handle = f'{run_id}/call-0.masked-{hashlib.sha256(page.encode()).hexdigest()[:12]}'
    assert outputs[0] == mask_marker('fetch_page', handle, '20,000 chars', MASK_TOOLS)
    assert all(o.startswith("[Tool output of 'fetch_page' cleared from context") for o in outputs[:5]), outputs
    assert outputs[5:] == [page_text(n, 20_000) for n in (5, 6, 7)]
    assert _stored(stack, handle) == page.encode()
    # Pages 0-4 by the read-back call, page 5 by the last call (the read's output is newer).
    keys = [json.loads(data)['key'] for name, data in _scheduled(history) if name == SPILL_ACTIVITY]
    assert [key.split('/')[1].split('.')[0] for key in keys] == [f'call-{k}' for k in range(6)], 'each spilled once'
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


def _tool_calls(history: Any) -> list[tuple[str, int]]:
    """The activity id and last attempt of each `fetch_page` call."""
    attempts: dict[int, tuple[str, int]] = {}
    for e in history.events:
        if e.HasField('activity_task_scheduled_event_attributes'):
            a = e.activity_task_scheduled_event_attributes
            if a.activity_type.name == 'fetch_page':
                attempts[e.event_id] = (a.activity_id, 1)
        elif e.HasField('activity_task_started_event_attributes'):
            started = e.activity_task_started_event_attributes
            if started.scheduled_event_id in attempts:
                attempts[started.scheduled_event_id] = (attempts[started.scheduled_event_id][0], started.attempt)
    return list(attempts.values())


def _objects(stack: Stack, run_id: str) -> list[str]:
    """The spills (not their line indexes) the store keeps for run `run_id`."""
    import boto3

    client = boto3.client('s3', endpoint_url=os.environ['AWS_ENDPOINT_URL'])
    listing = client.list_objects_v2(Bucket=stack.bucket, Prefix=f'{stack.prefix}/{run_id}/')
    return [o['Key'].removeprefix(f'{stack.prefix}/') for o in listing.get('Contents', []) if not o['Key'].endswith('.idx')]


def test_a_5_mb_output_is_spilled_at_the_source_and_read_back_by_its_handle(stack: Stack) -> None:
    """The tool returns 5 MB: the interceptor spills it in the tool's activity, so the history never
    holds it (it stays far under 5 MB); the model gets the marker, reads the 4th ERROR line back
    through the Overspill worker by the marker's handle (`{run id}/{activity id}.0`), and the
    recorded history replays."""
    chars = 5_000_000
    figures, history = _run(
        AgentRequest(f'fetch 1 page of {chars} chars, then read ERROR at offset 3', overspill_queue=stack.queue),
        interceptors=[OverspillInterceptor([fetch_page], store=stack.store_url)],
    )
    assert figures.status == 'completed', figures
    run_id = history.events[0].workflow_execution_started_event_attributes.original_execution_run_id
    [(activity_id, _)] = _tool_calls(history)
    handle = f'{run_id}/{activity_id}.0'
    page = page_text(0, chars)
    errors = [line for line in page.split('\n') if 'ERROR' in line]
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[3]}"
    marker = [i['output'] for i in _model_inputs(history)[1] if i.get('type') == 'function_call_output']
    assert marker[0].startswith(f"[Tool output too large ({chars:,} chars); stored to handle {handle!r}."), marker
    assert _stored(stack, handle) == page.encode()
    assert figures.history_bytes < 100_000, figures.history_bytes
    _replay(history)


class _FailFirstAttempt(Interceptor):
    """Fails the first attempt of each `fetch_page` call after everything inside it ran (the spill
    included), as a worker that crashed right after the write would."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        class FailFirst(ActivityInboundInterceptor):
            async def execute_activity(self, input: ExecuteActivityInput) -> Any:
                result = await super().execute_activity(input)
                info = activity.info()
                if info.activity_type == 'fetch_page' and info.attempt == 1:
                    raise ApplicationError('the first attempt fails after its spill')
                return result

        return FailFirst(next)


def test_a_retried_tool_activity_writes_one_object(stack: Stack) -> None:
    """The tool's first attempt fails after the spill; the retry spills under the same key: one
    object, whose handle the model reads back."""
    figures, history = _run(
        AgentRequest('fetch 1 page of 50000 chars, then read ERROR', overspill_queue=stack.queue),
        interceptors=[_FailFirstAttempt(), OverspillInterceptor([fetch_page], store=stack.store_url)],
    )
    assert figures.status == 'completed', figures
    run_id = history.events[0].workflow_execution_started_event_attributes.original_execution_run_id
    [(activity_id, attempt)] = _tool_calls(history)
    assert attempt == 2
    handle = f'{run_id}/{activity_id}.0'
    assert _objects(stack, run_id) == [handle]
    assert figures.result.startswith(f'[handle {handle!r}: '), figures.result
    assert _stored(stack, handle) == page_text(0, 50_000).encode()


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


def test_a_structured_output_is_spilled_as_json_and_queried_back(stack: Stack) -> None:
    """A tool returning 2,000 records (a list of dicts): spilled at the source as the JSON the
    workflow would decode, and the model runs a jq filter over it with `query_tool_result`."""
    figures, history = _run(
        AgentRequest('fetch 2000 records, then query .[] | select(.status == "ERROR") | .id', overspill_queue=stack.queue),
        interceptors=[OverspillInterceptor([fetch_page, fetch_records], store=stack.store_url)],
    )
    assert figures.status == 'completed', figures
    run_id = history.events[0].workflow_execution_started_event_attributes.original_execution_run_id
    records = json.dumps(
        [{'id': i, 'status': 'ERROR' if i % 13 == 0 else 'ok', 'page': i // 50} for i in range(2000)],
        ensure_ascii=False, separators=(',', ':'),
    )
    marker = [i['output'] for i in _model_inputs(history)[1] if i.get('type') == 'function_call_output'][0]
    handle = marker.split("'")[1]
    assert handle.startswith(f'{run_id}/') and marker.startswith(f'[Tool output too large ({len(records):,} chars);')
    assert _stored(stack, handle) == records.encode()
    header, *ids, more = figures.result.splitlines()
    assert header.startswith(f"[handle {handle!r}: 154 result(s) of filter") and ids == ['0', '13', '26'], figures.result
    assert more == '[151 more result(s): call query_tool_result again with offset=3]'


def test_grep_and_list_return_the_workers_pages(stack: Stack) -> None:
    """`grep_tool_result` and `list_tool_results` on the spills of the run, with the worker's text."""
    interceptors = [OverspillInterceptor([fetch_page], store=stack.store_url)]
    grep, history = _run(
        AgentRequest('fetch 1 page of 20000 chars, then grep ERROR', overspill_queue=stack.queue),
        interceptors=interceptors,
    )
    run_id = history.events[0].workflow_execution_started_event_attributes.original_execution_run_id
    [(activity_id, _)] = _tool_calls(history)
    lines = page_text(0, 20_000).split('\n')
    first = next(n for n, line in enumerate(lines, 1) if 'ERROR' in line)
    errors = sum(1 for line in lines if 'ERROR' in line)
    header, match = grep.result.splitlines()
    assert header == (
        f"[handle '{run_id}/{activity_id}.0': {errors:,} matching line(s); showing 1, {errors - 1:,} more; "
        'continue with offset=1]'
    ), grep.result
    assert match == f'{first}:{lines[first - 1]}', grep.result
    listing, history = _run(
        AgentRequest('fetch 2 pages of 20000 chars, then list', overspill_queue=stack.queue), interceptors=interceptors
    )
    run_id = history.events[0].workflow_execution_started_event_attributes.original_execution_run_id
    handles = [f'{run_id}/{activity_id}.0' for activity_id, _ in _tool_calls(history)]
    assert listing.status == 'completed' and all(h in listing.result for h in handles), listing.result
    assert listing.result.count('fetch_page') == 2, listing.result


# --- the model-visible text -------------------------------------------------------------------


def test_the_tools_and_markers_read_as_the_pydantic_ai_ones() -> None:
    """The read-back tools' descriptions and argument descriptions, and the mask marker, are the
    pydantic-ai integration's, byte for byte (the harness's `read_tool_result`, `OverspillToolset`'s
    others, `overspill.pydantic_ai.mask_marker`)."""
    from overspill.openai_agents import overspill_tools
    from overspill.pydantic_ai import OverspillStore, OverspillToolset
    from overspill.pydantic_ai import mask_marker as pydantic_marker
    from pydantic_ai_harness.tool_output_limits import ToolOutputLimits

    store = OverspillStore('file:///nonexistent')
    theirs = dict(OverspillToolset(store).tools)
    harness = ToolOutputLimits(store=store).get_toolset()
    theirs.update(harness.tools)  # type: ignore[union-attr]
    ours = {tool.name: tool for tool in overspill_tools()}
    assert sorted(ours) == sorted(theirs)
    # pydantic-ai-harness 0.75's own read (with `unit`) and grep are the engine's tool table's
    # (`overspill._native.read_back_tools()`), which these tools are yet to be built from: the
    # tools Overspill alone has are compared here.
    for name, tool in theirs.items():
        if name in ('read_tool_result', 'grep_tool_result'):
            continue
        schema = tool.function_schema
        assert ours[name].description == schema.description, name
        arguments = {k: v.get('description') for k, v in schema.json_schema['properties'].items()}
        assert {k: v.get('description') for k, v in ours[name].params_json_schema['properties'].items()} == arguments
    for args in [('fetch', 'run/3.0', '60,000 chars', MASK_TOOLS), ("it's", 'r/"x".0', '1 chars', ('read_tool_result',))]:
        assert mask_marker(*args) == pydantic_marker(*args)
