"""What the agent framework suites share (the OpenAI Agents SDK, Google ADK, Strands; LangGraph
and Deep Agents for running agents and reading their runs) and `benches/` with them: the tools
their agents run as activities, the script their scripted models follow, an Overspill worker on a
queue and a store prefix of a suite's own, an agent run until it ends or is stuck, and what a run
recorded.

The script (`next_step`): a prompt is steps separated by `, then `, done in order, one tool call
each (or N); once all are done the model answers with the last output if the last step read one
back, else `fetched N pages`:

- `fetch N pages of C chars`: `fetch_page` N times (an `activity_as_tool` tool);
- `mcp N pages of C chars`: the MCP tool `mcp_page` N times (`mcp_pages.py`, over stdio);
- `records N`: `fetch_records(N)`, a list of records; `report N`: `fetch_report(N)`, the same
  records as a dict (for frameworks whose tools must return `str`, `dict` or `Any`);
- `read P [at offset K]`, `grep P`, `query F`, `list`: the read-back tools on the handle of the
  first output that names one (a spill or a mask marker): the first line containing `P` (after
  `K` of them), the lines containing `P`, the jq filter `F` (3 results), the run's spills.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from support import Process, bucket_of, page_text, s3_client
from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    Replayer,
    UnsandboxedWorkflowRunner,
    Worker,
)

RECORDS = [{'id': i, 'status': 'ERROR' if i % 13 == 0 else 'ok', 'page': i // 50} for i in range(2000)]
"""What `fetch_records(2000)` returns."""

RECORD_LINES = '\n'.join(json.dumps(r, separators=(',', ':')) for r in RECORDS)
"""How the spill of `RECORDS` reads: one compact record per line (JSON Lines)."""

PAYLOAD_LIMIT = 2 * 1024 * 1024
"""Temporal's default limit on one payload (the server's `limit.blobSize.error`)."""

HANDLE = re.compile(r"stored to handle '([^']+)'")
"""A handle in a spill or mask marker."""


# --- the tools --------------------------------------------------------------------------------


@activity.defn
async def fetch_page(n: int, chars: int) -> str:
    """Fetch page `n` of the crawl log.

    Args:
        n: The page number.
        chars: How many chars of the page to fetch.
    """
    return page_text(n, chars)


@activity.defn
async def fetch_records(count: int) -> list[dict[str, Any]]:
    """Fetch the first `count` records of the crawl.

    Args:
        count: How many records to fetch.
    """
    return RECORDS[:count]


@activity.defn
async def fetch_report(count: int) -> dict[str, Any]:
    """Fetch the crawl's report with its first `count` records.

    Args:
        count: How many records to report.
    """
    return {'records': RECORDS[:count]}


class FailFirstAttempt(Interceptor):
    """Fails the first attempt of each activity of type `tool` (a tool, or an activity running
    tools: `deepagents.invoke_tool`) after everything inside it ran (the spill included), as a
    worker that crashed right after the write would. Put it before Overspill's interceptor (a
    plugin's comes after a worker's own)."""

    def __init__(self, tool: str = 'fetch_page') -> None:
        self.tool = tool

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        tool = self.tool

        class FailFirst(ActivityInboundInterceptor):
            async def execute_activity(self, input: ExecuteActivityInput) -> Any:
                result = await super().execute_activity(input)
                info = activity.info()
                if info.activity_type == tool and info.attempt == 1:
                    raise ApplicationError('the first attempt fails after its spill')
                return result

        return FailFirst(next)


# --- the script --------------------------------------------------------------------------------

_STEPS = {
    'fetch': re.compile(r'fetch (\d+) pages? of (\d+) chars'),
    'mcp': re.compile(r'mcp (\d+) pages? of (\d+) chars'),
    'records': re.compile(r'records (\d+)'),
    'report': re.compile(r'report (\d+)'),
    'read': re.compile(r'read (\S+)(?: at offset (-?\d+))?'),
    'grep': re.compile(r'grep (\S+)'),
    'query': re.compile(r'query (.+)'),
    'list': re.compile(r'list'),
}


_READS = ('read', 'grep', 'query', 'list')


def next_step(prompt: str, calls: int, outputs: Sequence[str]) -> tuple[str, dict[str, Any]] | str:
    """The scripted model's next move, given the prompt, how many tool calls it made and the
    outputs it got (their texts): a tool call (name, arguments), or its answer."""
    plan: list[tuple[str, re.Match[str]]] = []
    for step in prompt.split(', then '):
        kind = step.split(' ', 1)[0]
        found = _STEPS[kind].fullmatch(step) if kind in _STEPS else None
        if found is None:
            return f'no script in {step!r}'
        plan += [(kind, found)] * (int(found[1]) if kind in ('fetch', 'mcp') else 1)
    if calls >= len(plan):
        pages = sum(1 for kind, _ in plan if kind in ('fetch', 'mcp'))
        return outputs[-1] if plan and plan[-1][0] in _READS and outputs else f'fetched {pages} pages'
    kind, found = plan[calls]
    done = sum(1 for k, _ in plan[:calls] if k == kind)
    if kind in ('fetch', 'mcp'):
        return ('fetch_page' if kind == 'fetch' else 'mcp_page'), {'n': done, 'chars': int(found[2])}
    if kind in ('records', 'report'):
        return f'fetch_{kind}', {'count': int(found[1])}
    if kind == 'list':
        return 'list_tool_results', {}
    handles = [h[1] for o in outputs if (h := HANDLE.search(o))]
    if not handles:
        return f'no handle in any output; the last: {outputs[-1][:200] if outputs else None!r}'
    if kind == 'read':
        return 'read_tool_result', {'handle': handles[0], 'pattern': found[1], 'offset': int(found[2] or 0), 'limit': 1}
    if kind == 'grep':
        return 'grep_tool_result', {'handle': handles[0], 'pattern': found[1]}
    return 'query_tool_result', {'handle': handles[0], 'filter': found[1], 'limit': 3}


# --- an Overspill worker of the suite's own -----------------------------------------------------

REQUIRED = ('TEMPORAL_ADDRESS', 'OVERSPILL_TEST_S3_URL', 'AWS_ENDPOINT_URL', 'AWS_ACCESS_KEY_ID', 'OVERSPILL_BIN')


@dataclass
class Stack:
    """An Overspill worker on its own queue and store prefix."""

    store_url: str
    queue: str
    bucket: str
    prefix: str
    """Where the store keeps its spills in the bucket."""
    worker: Process


@contextmanager
def overspill_stack(log_dir: Path, name: str, *, base_url: str | None = None, args: Sequence[str] = ()) -> Iterator[Stack]:
    """An `overspill worker` (`OVERSPILL_BIN`, with `args`) on a queue and a store prefix named
    after `name` and unique to this call, under `base_url` (default `OVERSPILL_TEST_S3_URL`)."""
    missing = [variable for variable in REQUIRED if not os.environ.get(variable)]
    assert not missing, f'{missing} not set: source .deploy/seaweedfs.env and .deploy/temporal.env, set OVERSPILL_BIN'
    tag = f'{os.getpid()}-{uuid.uuid4().hex[:8]}'
    base_url = (base_url or os.environ['OVERSPILL_TEST_S3_URL']).rstrip('/')
    bucket = bucket_of(base_url)
    store_url = f'{base_url}/{name}-{tag}'
    queue = f'tool-output-limits-{name}-{tag}'
    worker = Process(
        f'overspill-worker-{name}',
        [os.environ['OVERSPILL_BIN'], 'worker', '--store', store_url, '--task-queue', queue, *args],
        {**os.environ, 'AWS_ALLOW_HTTP': 'true'},
        log_dir,
    )
    try:
        worker.wait_for('overspill worker started')
        yield Stack(store_url, queue, bucket, f'{name}-{tag}/tool_output_limits', worker)
    finally:
        worker.stop()


@contextmanager
def scratch_bucket(name: str) -> Iterator[str]:
    """A bucket of its own in the tests' S3 (`AWS_*`), named after `name`: a bench's External
    Storage and spills, emptied and deleted at the end."""
    bucket = f'{name}-{uuid.uuid4().hex[:8]}'
    s3 = s3_client(f's3://{bucket}')
    s3.create_bucket(Bucket=bucket)
    try:
        yield bucket
    finally:
        for page in s3.get_paginator('list_objects_v2').paginate(Bucket=bucket):
            for item in page.get('Contents', []):
                s3.delete_object(Bucket=bucket, Key=item['Key'])
        s3.delete_bucket(Bucket=bucket)


def left_in_bucket(bucket: str) -> tuple[int, int]:
    """The External Storage objects (`v0/…`) in `bucket`, and their bytes; deleted after
    counting, so that each run counts its own."""
    s3 = s3_client(f's3://{bucket}')
    count = size = 0
    for page in s3.get_paginator('list_objects_v2').paginate(Bucket=bucket, Prefix='v0/'):
        for item in page.get('Contents', []):
            count, size = count + 1, size + item['Size']
            s3.delete_object(Bucket=bucket, Key=item['Key'])
    return count, size


def stored(stack: Stack, handle: str) -> bytes:
    """The bytes the store keeps for `handle`."""
    body: bytes = s3_client(stack.store_url).get_object(Bucket=stack.bucket, Key=f'{stack.prefix}/{handle}')['Body'].read()
    return body


def objects(stack: Stack, run_id: str) -> list[str]:
    """The spills (not their line indexes) the store keeps for run `run_id`."""
    listing = s3_client(stack.store_url).list_objects_v2(Bucket=stack.bucket, Prefix=f'{stack.prefix}/{run_id}/')
    return [o['Key'].removeprefix(f'{stack.prefix}/') for o in listing.get('Contents', []) if not o['Key'].endswith('.idx')]


async def connect(*plugins: Any, data_converter: Any = None) -> Client:
    """A client of the Temporal server at `TEMPORAL_ADDRESS` (namespace `TEMPORAL_NAMESPACE`) with `plugins`."""
    return await Client.connect(
        os.environ['TEMPORAL_ADDRESS'], namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
        plugins=list(plugins), **({'data_converter': data_converter} if data_converter else {}),
    )


@workflow.defn
class ReduceOnTheWorker:
    """Runs the Overspill worker's own `tool_output_limits.reduce` on a request."""

    @workflow.run
    async def run(self, queue: str, request: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = await workflow.execute_activity(
            'tool_output_limits.reduce', request, task_queue=queue, start_to_close_timeout=timedelta(seconds=60)
        )
        return reply


async def reduce_on_worker(stack: Stack, request: dict[str, Any], *, plugins: Sequence[Any] = ()) -> dict[str, Any]:
    """What the Overspill worker's own `tool_output_limits.reduce` makes of `request` (through a
    client with `plugins`, whose converter must keep a dict's key order: a framework plugin's does)."""
    client = await connect(*plugins)
    queue = f'reduce-probe-{uuid.uuid4()}'
    async with Worker(client, task_queue=queue, workflows=[ReduceOnTheWorker], workflow_runner=UnsandboxedWorkflowRunner()):
        reply: dict[str, Any] = await client.execute_workflow(
            ReduceOnTheWorker.run, args=[stack.queue, request], id=queue, task_queue=queue
        )
        return reply


# --- what a run recorded ---------------------------------------------------------------------------


@dataclass
class RunFigures:
    """How a run ended and what it recorded."""

    status: str
    """`completed`, `stuck` (a workflow task failing over and over; terminated) or another end."""
    tool_calls: int
    """Tool activities completed (the framework's tool activities: `fetch_page`, pydantic-ai's `…__call_tool`, …)."""
    model_calls: int
    """Model-call activities scheduled."""
    history_bytes: int
    """The history's size as the server counts it (what its 50 MB limit applies to)."""
    events: int
    """The history's events (the server's limit is 51,200)."""
    largest_model_input: int
    """Bytes of the largest model-call activity input recorded."""
    total_model_chars: int
    """Chars of model-visible text sent to the model over the run (instructions and items)."""
    failure: str = ''
    """The workflow task's failure, when stuck."""
    seconds: float = 0.0
    """Wall time of the run."""
    result: Any = None
    """The workflow's result, when completed."""


@dataclass(frozen=True)
class Measure:
    """How a framework's runs are measured from their histories."""

    is_model: Callable[[str], bool]
    """Whether an activity type is a model call."""
    model_chars: Callable[[str, bytes], int]
    """Chars of model-visible text in a model call's recorded input (its type, its JSON)."""
    is_tool: Callable[[str], bool]
    """Whether an activity type is one of the agent's tool calls."""


@dataclass(frozen=True)
class Ended:
    """How a workflow run ended."""

    status: str
    """`completed`, `stuck` (a workflow task failing over and over; terminated), `failed: <why>`
    or `timed out` (terminated)."""
    failure: str
    """The workflow task's failure, when stuck."""
    result: Any
    """The workflow's result, when completed."""
    seconds: float
    """Wall time of the run."""
    history_bytes: int
    """The history's size as the server counts it (what its 50 MB limit applies to)."""


async def run_workflow(client: Client, run: Any, arg: Any, *, task_queue: str, timeout: float) -> tuple[Ended, Any]:
    """Start workflow `run` and wait, at most `timeout` s, until it ends or a workflow task fails
    (a payload over the limit fails every retry of the task while the run shows Running: it is
    then terminated). How it ended, and its history."""
    started = time.monotonic()
    handle: WorkflowHandle[Any, Any] = await client.start_workflow(
        run, arg, id=f'agent-{uuid.uuid4()}', task_queue=task_queue, execution_timeout=timedelta(seconds=timeout)
    )
    status, failure, result = 'timed out', '', None
    waiter = asyncio.ensure_future(handle.result())
    try:
        while time.monotonic() - started < timeout:
            await asyncio.wait({waiter}, timeout=2)
            if waiter.done():
                error = waiter.exception()
                if error is None:
                    status, result = 'completed', waiter.result()
                else:
                    status = f'failed: {error.__cause__ or error}'
                break
            failure = await task_failure(handle)
            if failure:
                status = 'stuck'
                await handle.terminate('a workflow task fails over and over')
                break
    finally:
        waiter.cancel()
    seconds = time.monotonic() - started
    if status == 'timed out':
        await handle.terminate('no end within the test bound')
    history = await handle.fetch_history()
    history_bytes = (await handle.describe()).raw_description.workflow_execution_info.history_size_bytes
    return Ended(status, failure, result, seconds, history_bytes), history


async def run_agent(
    client: Client, run: Any, arg: Any, *, task_queue: str, timeout: float, measure: Measure
) -> tuple[RunFigures, Any]:
    """`run_workflow`, and the run's figures as `measure` reads them off its history."""
    ended, history = await run_workflow(client, run, arg, task_queue=task_queue, timeout=timeout)
    return figures(history, measure, ended), history


async def task_failure(handle: WorkflowHandle[Any, Any]) -> str:
    """The message of the run's failed workflow task, when its pending task is being retried, or `''`."""
    description = await handle.describe()
    if description.raw_description.pending_workflow_task.attempt < 2:
        return ''
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            return str(event.workflow_task_failed_event_attributes.failure.message)
    return ''


def figures(history: Any, measure: Measure, ended: Ended) -> RunFigures:
    """How a run ended, and its figures read off its history: tool and model calls, model inputs'
    bytes and chars."""
    tool_calls = 0
    model_inputs: list[tuple[bytes, int]] = []
    scheduled: dict[int, str] = {}
    for event in history.events:
        if event.HasField('activity_task_scheduled_event_attributes'):
            attributes = event.activity_task_scheduled_event_attributes
            name = attributes.activity_type.name
            scheduled[event.event_id] = name
            payload = attributes.input.payloads[0] if attributes.input.payloads else None
            # An input External Storage offloaded is a reference here: its size, but no chars.
            inline = payload is not None and payload.metadata.get('encoding') == b'json/plain'
            data = payload.data if payload is not None else b''
            if measure.is_model(name):
                model_inputs.append((data, measure.model_chars(name, data) if inline else 0))
        elif event.HasField('activity_task_completed_event_attributes'):
            if measure.is_tool(scheduled.get(event.activity_task_completed_event_attributes.scheduled_event_id, '')):
                tool_calls += 1
    return RunFigures(
        status=ended.status,
        tool_calls=tool_calls,
        model_calls=len(model_inputs),
        history_bytes=ended.history_bytes,
        events=len(history.events),
        largest_model_input=max((len(d) for d, _ in model_inputs), default=0),
        total_model_chars=sum(c for _, c in model_inputs),
        failure=ended.failure,
        seconds=ended.seconds,
        result=ended.result,
    )


def run_id_of(history: Any) -> str:
    """The run id of a recorded history's first run (the run segment of its at-source handles)."""
    return str(history.events[0].workflow_execution_started_event_attributes.original_execution_run_id)


def activity_calls(history: Any, activity_type: str) -> list[tuple[str, int, Any]]:
    """Each activity of `activity_type` the run scheduled: its id, its last attempt and its input
    (its first payload as decoded JSON; None without one)."""
    found: dict[int, tuple[str, int, Any]] = {}
    for event in history.events:
        if event.HasField('activity_task_scheduled_event_attributes'):
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name == activity_type:
                payloads = attributes.input.payloads
                found[event.event_id] = (attributes.activity_id, 1, json.loads(payloads[0].data) if payloads else None)
        elif event.HasField('activity_task_started_event_attributes'):
            started = event.activity_task_started_event_attributes
            if started.scheduled_event_id in found:
                activity_id, _, data = found[started.scheduled_event_id]
                found[started.scheduled_event_id] = (activity_id, started.attempt, data)
    return list(found.values())


def tool_calls(history: Any, tool: str = 'fetch_page') -> list[tuple[str, int]]:
    """The activity id and last attempt of each call of `tool` (`activity_calls` without inputs)."""
    return [(activity_id, attempt) for activity_id, attempt, _ in activity_calls(history, tool)]


def scheduled(history: Any, activity_type: str) -> list[bytes]:
    """The first input payload of every activity of `activity_type` the workflow scheduled."""
    return [
        a.input.payloads[0].data
        for e in history.events
        if e.HasField('activity_task_scheduled_event_attributes')
        for a in [e.activity_task_scheduled_event_attributes]
        if a.activity_type.name == activity_type
    ]


def replay(history: Any, workflows: Sequence[type], plugins: Sequence[Any]) -> None:
    """Replay `history` with the framework's plugins: no nondeterminism."""

    async def main() -> None:
        replayer = Replayer(workflows=workflows, plugins=plugins, workflow_runner=UnsandboxedWorkflowRunner())
        await replayer.replay_workflow(history)

    asyncio.run(main())


# --- a framework, as the shared tests and the bench drive it -----------------------------------------------


@dataclass(frozen=True)
class Framework:
    """An agent framework on Temporal as the shared tests (`framework_tests`) and
    `benches/frameworks.py` drive it: its scripted agent, plugin and Overspill adapter."""

    name: str
    """As queue names and store prefixes have it: `google-adk`, `strands`."""
    agent: Any
    """The agent workflow (its `run` takes an `AgentRequest`)."""
    request: Callable[..., Any]
    """The framework's `AgentRequest`: a prompt, and how Overspill serves it."""
    model: Any
    """The scripted model's class (its `requests`: the chars of each request it got)."""
    plugin: Callable[[], Any]
    """The integration's plugin, with the scripted model and the MCP server."""
    overspill: Callable[..., Any]
    """The adapter's `OverspillPlugin`."""
    activities: Sequence[Callable[..., Any]]
    """The agent's `activity_as_tool` tools."""
    measure: Measure
    outputs: Callable[[Any], list[list[str]]]
    """The texts of the tool outputs each model call's recorded input carries."""
    records: tuple[str, str]
    """The step that fetches 2,000 records in a form the framework's tools reduce, and a jq
    filter of the ids of those whose status is ERROR over its spill."""
    masked_call: Callable[[int], str]
    """The call id masking keys the spill of the n-th output by."""
    quickstart: str
    """The README quickstart's file, in `workflows/python/examples/`."""

    async def client(self, *plugins: Any, data_converter: Any = None) -> Client:
        """A client with the integration's plugin, and `plugins` after it."""
        return await connect(self.plugin(), *plugins, data_converter=data_converter)

    def run(
        self, request: Any, stack: Stack | None = None, *, interceptors: Sequence[Interceptor] = (), timeout: float = 240
    ) -> tuple[RunFigures, Any]:
        """Run the agent on a worker in this process (workflow, tools, model) with the integration's
        plugin, and with `stack`, Overspill's in one line (at the source, into `stack`'s store)."""

        async def main() -> tuple[RunFigures, Any]:
            overspill = [self.overspill(self.activities, store=stack.store_url)] if stack else []
            client = await self.client(*overspill)
            queue = f'{self.name}-agent-{uuid.uuid4()}'
            async with Worker(
                client, task_queue=queue, workflows=[self.agent], activities=self.activities,
                interceptors=interceptors, workflow_runner=UnsandboxedWorkflowRunner(),
            ):
                return await run_agent(client, self.agent.run, request, task_queue=queue, timeout=timeout, measure=self.measure)

        return asyncio.run(main())

    def replay(self, history: Any) -> None:
        """Replay `history` with the integration's plugin: no nondeterminism."""
        replay(history, [self.agent], [self.plugin()])

    def reduce_on_worker(self, stack: Stack, request: dict[str, Any]) -> dict[str, Any]:
        """What the Overspill worker's own `tool_output_limits.reduce` makes of `request`."""
        return asyncio.run(reduce_on_worker(stack, request, plugins=[self.plugin()]))


def completed(history: Any, activity_type: str) -> list[Any]:
    """The results of the completed activities of `activity_type`, decoded."""
    kinds = {e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
             for e in history.events if e.HasField('activity_task_scheduled_event_attributes')}
    return [
        json.loads(e.activity_task_completed_event_attributes.result.payloads[0].data)
        for e in history.events
        if e.HasField('activity_task_completed_event_attributes')
        and kinds[e.activity_task_completed_event_attributes.scheduled_event_id] == activity_type
    ]
