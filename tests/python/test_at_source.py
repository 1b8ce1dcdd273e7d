"""At the source: a pydantic-ai agent's tool outputs reduced in the tool's own activity
(`overspill.pydantic_ai.OverspillInterceptor`), before Temporal records them.

Real pieces only: the Temporal dev server, SeaweedFS (a bucket of this module's own), the
`overspill worker` binary (`OVERSPILL_BIN`), pydantic-ai-slim's `TemporalDurability` and
pydantic-ai-harness's `ToolOutputLimits`, with a scripted `FunctionModel`. No External Storage
anywhere. This file is also the agents' module: its workers run in subprocesses
(`python -c 'import test_at_source; …'`), one for the workflows and one per tool queue, so a test
can read the workflow worker's peak RSS and SIGKILL a tool worker mid-activity:

- `agent` runs its tools on a worker with the interceptor; `plain_agent`, the same agent under
  another name, on a worker without it (the harness in the workflow reduces, as before);
  `kill_agent` on a worker with the interceptor and a pause after it, for the SIGKILL test.
- The model, in the tool workers, calls `fetch_output` as the prompt says (`{calls} calls of
  {size} {kind}`), then answers with every tool return it saw; with `AT_SOURCE_MODEL_LOG` set it
  also appends each request it receives there (a JSON line).

Needs what `test_pydantic_ai_e2e.py` needs; `tests/integration/python.rs` runs it under
`cargo test`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from overspill import sanitize_key
from overspill.pydantic_ai import OverspillInterceptor, OverspillStore
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits
from pydantic_ai_harness.tool_output_limits import Band, Spill, ToolOutputLimits, Truncate
from support import Process, spill_page
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

HERE = Path(__file__).resolve().parent
# One name for this run's queues and bucket, shared with the worker subprocesses (they inherit it).
TAG = os.environ.setdefault('AT_SOURCE_TEST_TAG', f'{os.getpid()}-{uuid.uuid4().hex[:8]}')
BUCKET = f'at-source-{TAG}'
STORE_URL = f's3://{BUCKET}/spills'
OVERSPILL_QUEUE = f'at-source-overspill-{TAG}'
WORKFLOW_QUEUE = f'at-source-workflow-{TAG}'
QUEUES = {name: f'at-source-{name}-{TAG}' for name in ('source', 'plain', 'kill')}
PAUSE_FILE_ENV = 'AT_SOURCE_PAUSE_FILE'
MODEL_LOG_ENV = 'AT_SOURCE_MODEL_LOG'
KB = 1_000
MB = 1_000_000
RUN_TIMEOUT = 600  # seconds; a loaded two-core machine, a debug build
SPILL_OVER = 20_000
TRUNCATE_OVER = 5_000
_MARKER = re.compile(r"stored to handle '([^'\\]+)'")


# --- the agents -----------------------------------------------------------------------------------


HARNESS_JOURNALS_SPILLS = hasattr(ToolOutputLimits, '_write_spill')
"""pydantic-ai-harness 0.75 writes its spills itself (through `OverspillStore`, on the agent's
worker); 0.62 through the Overspill worker, in its store."""
PLAIN_STORE_URL = f's3://{BUCKET}/plain-spills' if HARNESS_JOURNALS_SPILLS else STORE_URL
"""The store of the agent without the interceptor: one of its own where the harness writes it,
since the identity test runs both agents under one run id and a spill of the same key in the
run's store is another step's to the interceptor (a spill's step is kept with it)."""


def build_limits(store_url: str = STORE_URL) -> ToolOutputLimits[Any]:
    """The agents' bands: 20,000 chars or more spill (else truncate), 5,000 or more truncate."""
    return ToolOutputLimits(
        bands=[
            Band(over=SPILL_OVER, action=Spill(then=Truncate())),
            Band(over=TRUNCATE_OVER, action=Truncate(max_chars=2_000)),
        ],
        store=OverspillStore(store_url, task_queue=OVERSPILL_QUEUE),
    )


def log_text(size: int, call: int) -> str:
    """`size` bytes of a build log, its first line naming the call (each call's output differs)."""
    line = 'INFO step={} target=//pkg/module:test elapsed={}ms\n'
    parts = [f'call {call:06d}\n']
    total = len(parts[0])
    i = 0
    while total < size:
        parts.append(f'{i:08d} ' + line.format(i % 7, i * 37 % 1000))
        total += len(parts[-1])
        i += 1
    return ''.join(parts)[:size]


def order_records(size: int, call: int) -> list[dict[str, Any]]:
    """Order records whose compact JSON is about `size` bytes."""
    records: list[dict[str, Any]] = []
    total = 0
    while total < size:
        n = len(records)
        record = {
            'order_id': f'ord-{call:03d}-{n:07d}',
            'customer': {'id': n % 977, 'name': f'Customer {n % 977}', 'tier': ['gold', 'silver', 'bronze'][n % 3]},
            'items': [{'sku': f'sku-{(n + k) % 101:04d}', 'qty': k + 1, 'price': round(9.99 + k * 1.5, 2)} for k in range(2)],
            'status': 'shipped' if n % 5 else 'pending',
            'note': 'déjà vu ✓' if n % 13 == 0 else None,
        }
        records.append(record)
        total += len(json.dumps(record, separators=(',', ':'))) + 1
    return records


async def fetch_output(size: int, call: int, kind: str) -> Any:
    """Return `size` bytes of `kind`: `text` (a build log) or `records` (a list of orders)."""
    return order_records(size, call) if kind == 'records' else log_text(size, call)


def _returns(messages: Sequence[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def _prompt(messages: Sequence[ModelMessage]) -> str:
    parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)]
    return str(parts[0].content)


async def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: `calls` calls of `fetch_output` one after the other, then every
    tool return it saw, verbatim, as a JSON list."""
    prompt = _prompt(messages)
    if log := os.environ.get(MODEL_LOG_ENV):
        request = {'worker': os.environ.get('AT_SOURCE_ROLE'), 'prompt': prompt, 'messages': _comparable(messages)}
        with open(log, 'a') as out:
            out.write(json.dumps(request) + '\n')
    match = re.search(r'(\d+) calls of (\d+) (text|records)', prompt)
    assert match is not None, prompt
    calls, size, kind = int(match.group(1)), int(match.group(2)), match.group(3)
    returns = _returns(messages)
    if len(returns) < calls:
        i = len(returns)
        args = {'size': size, 'call': i, 'kind': kind}
        # A provider that numbers calls per response reuses `call-0` in each.
        call_id = 'call-0' if 'reused ids' in prompt else f'call-{i}'
        return ModelResponse(parts=[ToolCallPart('fetch_output', args, tool_call_id=call_id)])
    return ModelResponse(parts=[TextPart(json.dumps([p.model_response_str() for p in returns]))])


def _comparable(messages: Sequence[ModelMessage]) -> Any:
    """The messages as JSON, without the clock's fields (the only ones two runs may differ in)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != 'timestamp'}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(ModelMessagesTypeAdapter.dump_json(list(messages))))


def build_agent(name: str, queue: str, heartbeat: timedelta | None = None, store_url: str = STORE_URL) -> Agent[None, str]:
    """The test agent, its activities on `queue`, its spills in `store_url`."""
    config: dict[str, Any] = {'task_queue': queue, 'start_to_close_timeout': timedelta(seconds=RUN_TIMEOUT)}
    if heartbeat is not None:
        config['heartbeat_timeout'] = heartbeat
    return Agent(
        FunctionModel(script, model_name='scripted'),
        name=name,
        tools=[fetch_output],
        capabilities=[build_limits(store_url), TemporalDurability(activity_config=config)],  # type: ignore[arg-type]
    )


agent = build_agent('at_source', QUEUES['source'])
plain_agent = build_agent('at_source_plain', QUEUES['plain'], store_url=PLAIN_STORE_URL)
# A killed worker's activity is retried once its heartbeats stop.
kill_agent = build_agent('at_source_kill', QUEUES['kill'], heartbeat=timedelta(seconds=5))
AGENTS = {'source': agent, 'plain': plain_agent, 'kill': kill_agent}


@workflow.defn(sandboxed=False)
class AtSourceAgent(PydanticAIWorkflow):
    """Runs one of the agents on a prompt; then, with `read_back`, pages each spill it saw
    through the Overspill worker's `tool_output_limits.read_tool_result`."""

    __pydantic_ai_agents__ = (agent, plain_agent, kill_agent)

    @workflow.run
    async def run(self, request: dict[str, Any]) -> dict[str, Any]:
        result = await AGENTS[request['agent']].run(
            request['prompt'], run_id=request.get('run_id'), usage_limits=UsageLimits(request_limit=None)
        )
        seen = json.loads(result.output)
        pages = []
        if request.get('read_back'):
            for text in seen:
                if marker := _MARKER.search(text):
                    pages.append(
                        await workflow.execute_activity(
                            'tool_output_limits.read_tool_result',
                            {'handle': marker.group(1), 'offset': 0, 'limit': 5},
                            task_queue=OVERSPILL_QUEUE,
                            start_to_close_timeout=timedelta(seconds=60),
                        )
                    )
        return {'seen': seen, 'run_id': result.run_id, 'pages': pages}


# --- the worker processes -------------------------------------------------------------------------


class PauseAfterTool(Interceptor):
    """Outside `OverspillInterceptor`: once a tool activity's reduced output is ready (its spill
    written), creates `AT_SOURCE_PAUSE_FILE` and hangs, heartbeating, until killed; a retry (the
    file exists) goes through."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        class Pause(ActivityInboundInterceptor):
            async def execute_activity(self, input: ExecuteActivityInput) -> Any:
                result = await super().execute_activity(input)
                pause = Path(os.environ[PAUSE_FILE_ENV])
                if activity.info().activity_type.endswith('__call_tool') and not pause.exists():
                    pause.write_text('paused\n')
                    while True:
                        activity.heartbeat()
                        await asyncio.sleep(1)
                return result

        return Pause(next)


async def serve(role: str) -> None:
    """Run the `workflow` worker, or a tool worker (`source`, `plain`, `kill`), until killed."""
    from pydantic_ai.durable_exec.temporal import AgentPlugin
    from temporalio.worker import Worker

    client = await connect()
    if role == 'workflow':
        queue = os.environ.get('AT_SOURCE_WORKFLOW_QUEUE', WORKFLOW_QUEUE)
        worker = Worker(client, task_queue=queue, workflows=[AtSourceAgent])
    else:
        interceptors: list[Interceptor] = []
        if role == 'kill':
            interceptors.append(PauseAfterTool())
        if role != 'plain':
            interceptors.append(OverspillInterceptor(build_limits()))
        worker = Worker(client, task_queue=QUEUES[role], plugins=[AgentPlugin(AGENTS[role])], interceptors=interceptors)
    print(f'{role} worker polling', flush=True)
    await worker.run()


async def connect() -> Client:
    return await Client.connect(
        os.environ['TEMPORAL_ADDRESS'],
        namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
        plugins=[PydanticAIPlugin()],
    )


# --- the fixture ----------------------------------------------------------------------------------


@dataclass
class Stack:
    """The bucket, the Overspill worker, the workflow worker and the tool workers."""

    s3: Any
    log_dir: Path
    model_log: Path
    workers: dict[str, Process] = field(default_factory=dict)
    extra: list[Process] = field(default_factory=list)

    def start(self, role: str, name: str | None = None, **env: str) -> Process:
        """A worker subprocess for `role` (see `serve`)."""
        proc = Process(
            name or role,
            [sys.executable, '-c', 'import asyncio, sys, test_at_source as m; asyncio.run(m.serve(sys.argv[1]))', role],
            {**os.environ, 'AT_SOURCE_ROLE': role, MODEL_LOG_ENV: str(self.model_log), 'AWS_ALLOW_HTTP': 'true', **env},
            self.log_dir,
            cwd=HERE,
        )
        self.extra.append(proc)
        proc.wait_for(f'{role} worker polling')
        return proc

    def spill_keys(self, run_id: str) -> list[str]:
        """The spill objects of `run_id` in the bucket (the line indexes beside them left out)."""
        prefix = f'spills/tool_output_limits/{sanitize_key(run_id)}/'
        listed = self.s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
        return sorted(o['Key'] for o in listed.get('Contents', []) if not o['Key'].endswith('.idx'))

    def spill_object(self, handle: str) -> bytes:
        async def read() -> bytes:
            data: bytes = await OverspillStore(STORE_URL).engine.read(handle)
            return data

        return asyncio.run(read())


@pytest.fixture(scope='module')
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    import boto3

    s3 = boto3.client('s3', endpoint_url=os.environ['AWS_ENDPOINT_URL'], region_name='us-east-1')
    s3.create_bucket(Bucket=BUCKET)
    log_dir = tmp_path_factory.mktemp('at-source-logs')
    stack = Stack(s3=s3, log_dir=log_dir, model_log=log_dir / 'model-requests.jsonl')
    overspill = Process(
        'overspill',
        [os.environ['OVERSPILL_BIN'], 'worker', '--store', STORE_URL, '--task-queue', OVERSPILL_QUEUE],
        {**os.environ, 'AWS_ALLOW_HTTP': 'true'},
        log_dir,
    )
    stack.extra.append(overspill)
    try:
        overspill.wait_for('overspill worker started')
        for role in ('workflow', 'source', 'plain'):
            stack.workers[role] = stack.start(role)
        yield stack
    finally:
        for proc in stack.extra:
            proc.stop()
        for page in s3.get_paginator('list_objects_v2').paginate(Bucket=BUCKET):
            for item in page.get('Contents', []):
                s3.delete_object(Bucket=BUCKET, Key=item['Key'])
        s3.delete_bucket(Bucket=BUCKET)


# --- helpers --------------------------------------------------------------------------------------


@dataclass
class Run:
    """A finished run: what the model saw, the agent's run id, the read-back pages, the history."""

    seen: list[str]
    run_id: str
    pages: list[str]
    history: Any

    @property
    def history_bytes(self) -> int:
        return sum(event.ByteSize() for event in self.history.events)

    def tool_results(self) -> list[int]:
        """The sizes of the tool activities' recorded results."""
        scheduled = {
            e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
            for e in self.history.events
            if e.HasField('activity_task_scheduled_event_attributes')
        }
        return [
            e.activity_task_completed_event_attributes.result.ByteSize()
            for e in self.history.events
            if e.HasField('activity_task_completed_event_attributes')
            and scheduled[e.activity_task_completed_event_attributes.scheduled_event_id].endswith('__call_tool')
        ]


def _prompt_for(calls: int, size: int, kind: str = 'text', reused: bool = False) -> str:
    return f'{calls} calls of {size} {kind}{" with reused ids" if reused else ""} #{uuid.uuid4().hex[:8]}'


async def _start(name: str, prompt: str, queue: str = WORKFLOW_QUEUE, **request: Any) -> Any:
    client = await connect()
    return await client.start_workflow(
        AtSourceAgent.run,
        {'agent': name, 'prompt': prompt, **request},
        id=f'at-source-{name}-{uuid.uuid4()}',
        task_queue=queue,
        execution_timeout=timedelta(seconds=RUN_TIMEOUT),
    )


async def _finish(handle: Any) -> Run:
    out = await asyncio.wait_for(handle.result(), RUN_TIMEOUT)
    return Run(seen=out['seen'], run_id=out['run_id'], pages=out['pages'], history=await handle.fetch_history())


def run_agent(name: str, prompt: str, queue: str = WORKFLOW_QUEUE, **request: Any) -> Run:
    async def main() -> Run:
        return await _finish(await _start(name, prompt, queue, **request))

    return asyncio.run(main())


def _vm_hwm(pid: int) -> int:
    """The process's peak resident set, in bytes (`VmHWM`)."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) * 1024
    raise AssertionError('no VmHWM')


def _marker_handle(text: str) -> str:
    marker = _MARKER.search(text)
    assert marker is not None, text[:500]
    return marker.group(1)


# --- the tests ------------------------------------------------------------------------------------


def test_100_calls_of_200_kb_complete_with_a_fraction_of_the_history(stack: Stack) -> None:
    """100 tool calls of 200 KB each complete at the source, every output spilled in its
    activity (no tool result in history over 4 KB); for 10 calls, the history is a fraction of
    the same agent's without the interceptor (printed, with the 100 calls' history)."""
    many = run_agent('source', _prompt_for(100, 200 * KB))
    assert len(many.seen) == 100
    assert all(f"stored to handle '{many.run_id}/call-{i}.0'" in text for i, text in enumerate(many.seen))
    assert max(many.tool_results()) < 4 * KB
    assert len(stack.spill_keys(many.run_id)) == 100

    plain = run_agent('plain', _prompt_for(10, 200 * KB))
    source = run_agent('source', _prompt_for(10, 200 * KB))
    print(
        f'\n200 KB a call: 10 calls {plain.history_bytes:,} B of history without the interceptor, '
        f'{source.history_bytes:,} B with it; 100 calls with it: {many.history_bytes:,} B'
    )
    assert min(plain.tool_results()) > 200 * KB, 'without the interceptor each output is recorded'
    assert source.history_bytes * 5 < plain.history_bytes
    assert many.history_bytes < 25 * MB


def test_40_mb_completes_without_external_storage_and_never_reaches_the_workflow(stack: Stack) -> None:
    """A tool returning 40 MB: the run completes with no External Storage configured, its history
    under 100 KB; the spill is one object, the output byte for byte, paged back by the Rust
    worker's `read_tool_result` as the harness pages it; the workflow worker (a fresh process)
    never holds the output: its peak RSS grows by less than 16 MiB."""
    queue = f'{WORKFLOW_QUEUE}-rss'
    worker = stack.start('workflow', 'workflow-rss', AT_SOURCE_WORKFLOW_QUEUE=queue)
    idle = _vm_hwm(worker.proc.pid)
    run = run_agent('source', _prompt_for(1, 40 * MB), queue, read_back=True)
    peak = _vm_hwm(worker.proc.pid)
    print(f'\n40 MB at the source: history {run.history_bytes:,} B; workflow worker peak RSS {idle:,} -> {peak:,} B')
    assert run.history_bytes < 100 * KB
    assert max(run.tool_results()) < 4 * KB
    handle = _marker_handle(run.seen[0])
    assert handle == f'{run.run_id}/call-0.0'
    output = log_text(40 * MB, 0).encode()
    assert run.seen[0].startswith(f'[Tool output too large ({len(output):,} chars); stored to handle {handle!r}.')
    assert len(stack.spill_keys(run.run_id)) == 1, 'one object'
    assert stack.spill_object(handle) == output
    assert run.pages == [spill_page(output, handle, limit=5)]
    assert peak - idle < 16 * 2**20, 'holding the 40 MB output alone would take more'



def test_sigkill_after_the_spill_write_then_a_retry_gives_the_same_handle_and_one_object(
    stack: Stack, tmp_path: Path
) -> None:
    """The tool worker is SIGKILLed after the interceptor wrote the spill, before the activity
    completes; a new worker runs the activity again: the same key is written again, so the model
    sees the same handle and the store holds one object; the recorded history replays."""
    pause = tmp_path / 'paused'
    doomed = stack.start('kill', 'kill-doomed', **{PAUSE_FILE_ENV: str(pause)})
    size = 300 * KB

    run_id = f'kill-{uuid.uuid4().hex[:12]}'

    async def start() -> Any:
        return await _start('kill', _prompt_for(1, size), run_id=run_id)

    handle = asyncio.run(start())
    deadline = time.monotonic() + RUN_TIMEOUT
    while not pause.exists():
        assert time.monotonic() < deadline, f'the tool never paused:\n{doomed.output()[-3000:]}'
        time.sleep(0.1)
    assert len(stack.spill_keys(run_id)) == 1, 'the spill was written before the pause'
    doomed.kill()
    recovered = stack.start('kill', 'kill-recovered', **{PAUSE_FILE_ENV: str(pause)})
    try:
        run = asyncio.run(_finish(handle))
    finally:
        recovered.stop()
    key = f'{run.run_id}/call-0.0'
    assert _marker_handle(run.seen[0]) == key
    assert len(stack.spill_keys(run.run_id)) == 1, 'one object'
    assert stack.spill_object(key) == log_text(size, 0).encode()
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in run.history.events
        if e.HasField('activity_task_started_event_attributes')
    ]
    assert 2 in attempts, f'the tool activity ran again: {attempts}'
    _replay(run.history)


def test_a_reduction_longer_than_the_heartbeat_timeout_completes(stack: Stack, tmp_path: Path) -> None:
    """A 40 MB output under a 5 s heartbeat timeout (a debug build on a loaded machine takes longer
    to spill it): the activity heartbeats while its output is reduced (after the tool returned,
    outside pydantic-ai's own heartbeats), and the run completes."""
    no_pause = tmp_path / 'no-pause'
    no_pause.write_text('')
    worker = stack.start('kill', 'kill-heartbeat', **{PAUSE_FILE_ENV: str(no_pause)})

    async def main() -> Run:
        handle = await _start('kill', _prompt_for(1, 40 * MB))
        try:
            out = await asyncio.wait_for(handle.result(), 90)
        finally:
            with contextlib.suppress(Exception):
                await handle.terminate('the test is over')
        return Run(seen=out['seen'], run_id=out['run_id'], pages=out['pages'], history=await handle.fetch_history())

    try:
        run = asyncio.run(main())
    finally:
        worker.stop()
    assert _marker_handle(run.seen[0]) == f'{run.run_id}/call-0.0'


def test_a_recorded_history_replays(stack: Stack) -> None:
    """The Replayer runs a recorded at-source history again without nondeterminism."""
    run = run_agent('source', _prompt_for(3, 50 * KB))
    assert all('stored to handle' in text for text in run.seen)
    _replay(run.history)


def _replay(history: Any) -> None:
    from temporalio.worker import Replayer

    asyncio.run(Replayer(workflows=[AtSourceAgent], plugins=[PydanticAIPlugin()]).replay_workflow(history))


def test_10_mb_of_order_records_complete_at_the_source(stack: Stack) -> None:
    """A 10 MB list of order records (structured JSON, which through External Storage deadlocked
    the workflow's payload converter) is spilled in its activity: the run completes, the history
    stays small, the spill is the records' JSON."""
    run = run_agent('source', _prompt_for(1, 10 * MB, 'records'))
    handle = _marker_handle(run.seen[0])
    assert run.history_bytes < 100 * KB
    assert max(run.tool_results()) < 4 * KB
    spilled = json.loads(stack.spill_object(handle))
    assert spilled == order_records(10 * MB, 0)


@pytest.mark.parametrize(
    ('size', 'kind', 'reused'),
    [
        (8 * KB, 'text', False),
        (60 * KB, 'text', False),
        (8 * KB, 'records', False),
        (60 * KB, 'records', False),
        (60 * KB, 'text', True),
    ],
    ids=['truncate-text', 'spill-text', 'truncate-records', 'spill-records', 'spill-reused-call-ids'],
)
def test_the_model_sees_byte_identical_requests_with_and_without_the_interceptor(
    stack: Stack, size: int, kind: str, reused: bool
) -> None:
    """The same scripted agent, the same run id, once reduced in the workflow (the harness) and
    once at the source: every request its model receives is the same, byte for byte, in the
    installed harness's text. With a call id every step reuses, 0.75 keeps each step's spill
    apart (`run_id/<step>/call-0.0` after the first), at the source as in the workflow."""
    prompt = _prompt_for(2, size, kind, reused)
    run_id = f'identical-{uuid.uuid4().hex[:12]}'
    plain = run_agent('plain', prompt, run_id=run_id)
    source = run_agent('source', prompt, run_id=run_id)
    assert plain.seen == source.seen
    requests: dict[str, list[Any]] = {'plain': [], 'source': []}
    for line in stack.model_log.read_text().splitlines():
        request = json.loads(line)
        if request['prompt'] == prompt:
            requests[request['worker']].append(request['messages'])
    assert len(requests['source']) == 3
    assert requests['source'] == requests['plain']
    # Reduced in the tool's activity with the interceptor, in the workflow without.
    assert max(source.tool_results()) < 4 * KB < min(plain.tool_results())
    if size > SPILL_OVER:
        assert f"stored to handle '{run_id}/call-0.0'" in source.seen[0]
    else:
        assert len(source.seen[0]) <= 2_000
    if reused:
        second = f'{run_id}/{_run_step(source.seen[1], run_id)}/call-0.0' if HARNESS_JOURNALS_SPILLS else f'{run_id}/call-0.0'
        assert f'stored to handle {second!r}' in source.seen[1], source.seen[1][:300]
        assert stack.spill_object(second).startswith(b'call 000001\n'), 'each step keeps its own spill'


def _run_step(marker: str, run_id: str) -> str:
    """The run step segment of a step-keyed handle `run_id/<step>/…` in `marker`."""
    match = re.search(re.escape(run_id) + r'/(\d+)/', marker)
    assert match is not None, marker[:300]
    return match.group(1)
