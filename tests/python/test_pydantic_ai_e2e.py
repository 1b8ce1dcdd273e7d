"""End to end: a pydantic-ai agent on Temporal delegates its spills and summaries to Overspill.

Real pieces only: the Temporal dev server (`TEMPORAL_ADDRESS`), SeaweedFS (`OVERSPILL_TEST_S3_URL`
and the `AWS_*` variables, from `deploy/seaweedfs.sh`), the `overspill worker` binary
(`OVERSPILL_BIN`), pydantic-ai-slim with `TemporalDurability`, pydantic-ai-harness's
`ToolOutputLimits` (0.62 or 0.75, whichever is installed), and a local OpenAI-compatible model
endpoint that counts its calls.

pydantic-ai-harness 0.62 spills in workflow code, through the Overspill worker's
`tool_output_limits.spill`; 0.75 journals its spill itself, in a durable operation
(`agent__<agent>__capability__tool_output_limits__spill`, an activity on the agent's worker,
where `OverspillStore` writes the store directly): the tests check each where they differ.
The example agent (`workflows/python/examples/log_agent.py`) runs in worker subprocesses, so a
test can SIGKILL one mid-run.

`tests/integration/pydantic_ai.rs` runs this file under `cargo test`; by hand:
`OVERSPILL_BIN=target/debug/overspill .deploy/venv/bin/python -m pytest tests/python -v`
after `source .deploy/seaweedfs.env; source .deploy/temporal.env`.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support import EXAMPLES, ModelEndpoint, Process, bucket_of, object_key, s3_client, spill_page, stack_env
from temporalio import workflow

HARNESS_JOURNALS_SPILLS = hasattr(importlib.import_module('pydantic_ai_harness.tool_output_limits').ToolOutputLimits, '_write_spill')
"""pydantic-ai-harness 0.75 spills in a durable operation of its own, 0.62 through the Overspill worker."""
HARNESS_HAS_GREP = hasattr(importlib.import_module('pydantic_ai_harness.tool_output_limits'), 'GREP_TOOL_RESULT_KIND')
"""pydantic-ai-harness 0.75 registers its own `grep_tool_result`."""

REQUIRED = (
    'TEMPORAL_ADDRESS',
    'OVERSPILL_TEST_S3_URL',
    'AWS_ENDPOINT_URL',
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
    'OVERSPILL_BIN',
)
SPILL_LINES = 1_000  # ≈ 60,000 chars: over the 20,000-char spill band
SUMMARY_LINES = 150  # ≈ 9,000 chars: in the 5,000-char summarize band
RUN_TIMEOUT = 180  # seconds a workflow may take, a worker restart included


@dataclass
class Stack:
    """Everything the tests share: queues, the store URL, the model endpoint, the Overspill worker."""

    env: dict[str, str]
    store_url: str
    model: ModelEndpoint
    overspill: Process
    log_dir: Path
    agent_module: ModuleType
    workers: list[Process] = field(default_factory=list)

    def start_agent_worker(self, name: str, **extra_env: str) -> Process:
        env = {**self.env, **extra_env}
        worker = Process(name, [sys.executable, str(EXAMPLES / 'run_worker.py')], env, self.log_dir, cwd=EXAMPLES)
        self.workers.append(worker)
        worker.wait_for('log agent worker polling')
        return worker

    def stop_workers(self) -> None:
        """Stop every agent worker (each test starts its own, on the shared queue)."""
        for worker in self.workers:
            worker.stop()
        self.workers.clear()

    def spill_keys(self, run_id: str) -> list[str]:
        """The spill objects under the run's folder (`{prefix}/tool_output_limits/{run}/`), leaving
        out the line indexes (`….idx`) Overspill keeps beside them."""
        url = self.agent_module.store.url
        prefix = object_key(url, run_id) + '/'
        listed = s3_client(url).list_objects_v2(Bucket=bucket_of(url), Prefix=prefix)
        return sorted(o['Key'] for o in listed.get('Contents', []) if not o['Key'].endswith('.idx'))

    def get_object(self, handle: str) -> bytes:
        url = self.agent_module.store.url
        return s3_client(url).get_object(Bucket=bucket_of(url), Key=object_key(url, handle))['Body'].read()


@pytest.fixture(scope='module')
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    assert not missing, (
        f'the pydantic-ai end-to-end test needs {missing}: source .deploy/seaweedfs.env and '
        '.deploy/temporal.env and set OVERSPILL_BIN (tests/integration/pydantic_ai.rs does)'
    )
    tag = f'{os.getpid()}-{uuid.uuid4().hex[:8]}'
    store_url = f'{os.environ["OVERSPILL_TEST_S3_URL"].rstrip("/")}/e2e-pydantic-ai-{tag}'
    log_dir = tmp_path_factory.mktemp('logs')
    model = ModelEndpoint()
    model_url = model.start()
    env = stack_env(
        store_url,
        f'e2e-{tag}',
        model_url,
        LOG_AGENT_HEARTBEAT_SECONDS='5',  # a killed worker's activity is retried after this
        OVERSPILL_MODEL_API_KEY='test-key',
    )
    overspill = Process(
        'overspill-worker',
        [os.environ['OVERSPILL_BIN'], 'worker', '--store', store_url, '--task-queue', env['OVERSPILL_TASK_QUEUE']],
        env,
        log_dir,
    )
    # This process imports the example agent too (to compare with LocalFileStore, to replay):
    # with the workers' configuration, so its workflow definition matches theirs.
    os.environ.update(
        {
            k: env[k]
            for k in ('OVERSPILL_STORE', 'OVERSPILL_TASK_QUEUE', 'LOG_AGENT_TASK_QUEUE', 'LOG_AGENT_HEARTBEAT_SECONDS')
        }
    )
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    agent_module = importlib.import_module('log_agent')
    stack = Stack(
        env=env, store_url=store_url, model=model, overspill=overspill, log_dir=log_dir, agent_module=agent_module
    )
    try:
        overspill.wait_for('overspill worker started')
        yield stack
    finally:
        stack.stop_workers()
        overspill.stop()
        model.stop()
        print(f'\n--- overspill worker log (tail) ---\n{overspill.output()[-3000:]}')


@pytest.fixture(autouse=True)
def _own_workers(stack: Stack) -> Iterator[None]:
    """Each test polls the agent queue with its own workers only."""
    yield
    stack.stop_workers()


# --- Temporal helpers ---------------------------------------------------------------------------


async def _client() -> Any:
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.client import Client

    return await Client.connect(
        os.environ['TEMPORAL_ADDRESS'],
        namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
        plugins=[PydanticAIPlugin()],
    )


def _activity_payloads(history: Any, name: str) -> tuple[int, list[Any]]:
    """How often activity `name` was scheduled in `history`, and the result payloads it completed with."""
    scheduled: dict[int, str] = {}
    payloads: list[Any] = []
    for event in history.events:
        if event.HasField('activity_task_scheduled_event_attributes'):
            scheduled[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.HasField('activity_task_completed_event_attributes'):
            attributes = event.activity_task_completed_event_attributes
            if scheduled.get(attributes.scheduled_event_id) == name:
                payloads.append(attributes.result.payloads[0])
    return sum(1 for n in scheduled.values() if n == name), payloads


def _activity_results(history: Any, name: str) -> tuple[int, list[Any]]:
    """How often activity `name` was scheduled in `history`, and its results (`json/plain`, decoded)."""
    count, payloads = _activity_payloads(history, name)
    assert all(p.metadata['encoding'] == b'json/plain' for p in payloads)
    return count, [json.loads(p.data) for p in payloads]


def _spills(history: Any) -> tuple[int, list[str]]:
    """How often the run spilled, and the handles its spills returned: the Overspill worker's
    `tool_output_limits.spill` (0.62), or the harness's own durable `spill` operation (0.75)."""
    if not HARNESS_JOURNALS_SPILLS:
        count, results = _activity_results(history, 'tool_output_limits.spill')
        return count, [r['handle'] for r in results]
    names = {
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField('activity_task_scheduled_event_attributes')
    }
    (name,) = [n for n in names if n.endswith('__capability__tool_output_limits__spill')] or ['none']
    count, results = _activity_results(history, name)
    return count, [r['value'] for r in results]  # a durable operation's result, with its usage


def _summary_text(text: str, summary: str) -> str:
    """The model-visible text of a summary of `text`: 0.75's says what it summarized."""
    if not HARNESS_JOURNALS_SPILLS:
        return summary
    return f'[summary of {len(text):,} chars of output; rerun the original tool for the full output]\n{summary}'


async def _start(stack: Stack, lines: int, run: Any = None, task_queue: str | None = None) -> Any:
    client = await _client()
    return await client.start_workflow(
        run or stack.agent_module.LogAgentWorkflow.run,
        f'fetch the build log, {lines} lines',
        id=f'log-agent-e2e-{uuid.uuid4()}',
        task_queue=task_queue or stack.env['LOG_AGENT_TASK_QUEUE'],
    )


def _overspill_read(store_url: str, handle: str, *args: str, command: str = 'read') -> str:
    """What `overspill read` (Overspill's own read_tool_result) prints for `handle`."""
    out = subprocess.run(  # noqa: PLW1510 - the exit code is asserted below
        [os.environ['OVERSPILL_BIN'], command, handle, *args, '--store', store_url],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, 'AWS_ALLOW_HTTP': 'true'},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.endswith('\n')
    return out.stdout.removesuffix('\n')


def _completes(stack: Stack, worker: Process) -> list[str]:
    """What the model saw in a run of the log agent that completes."""

    async def run() -> Any:
        handle = await _start(stack, SPILL_LINES)
        return await asyncio.wait_for(handle.result(), RUN_TIMEOUT)

    seen: list[str] = json.loads(asyncio.run(run()).output)
    return seen


def _wait_for_file(path: Path, stack: Stack, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            logs = '\n'.join(f'--- {w.name} ---\n{w.output()[-3000:]}' for w in stack.workers)
            raise AssertionError(f'the run never reached the pause point {path}\n{logs}')
        time.sleep(0.1)


def _replay(stack: Stack, history: Any) -> None:
    """Replay a recorded history in this process; raises on any nondeterminism."""
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.worker import Replayer

    module = stack.agent_module
    workflows = [module.LogAgentWorkflow, module.LogAgentReadInWorkflow, module.LogAgentSearch]
    asyncio.run(Replayer(workflows=workflows, plugins=[PydanticAIPlugin()]).replay_workflow(history))


# --- the tests ----------------------------------------------------------------------------------


def test_spill_goes_to_overspill_and_matches_local_file_store(stack: Stack, tmp_path: Path) -> None:
    """The model sees the harness's marker, the object is in the bucket, read_tool_result pages it
    back, and everything the model saw is identical to a run with the harness's LocalFileStore."""
    import pydantic_ai_harness.tool_output_limits as harness

    local_store = getattr(harness, 'LocalFileOverflowStore', None) or harness.LocalFileStore
    stack.start_agent_worker('agent-worker-spill')

    async def run() -> tuple[Any, Any]:
        handle = await _start(stack, SPILL_LINES)
        report = await asyncio.wait_for(handle.result(), RUN_TIMEOUT)
        return report, await handle.fetch_history()

    report, history = asyncio.run(run())
    seen = json.loads(report.output)
    log = stack.agent_module.build_log(SPILL_LINES)
    key = f'{report.run_id}/call-log.0'

    # The harness's spill marker, naming the handle the spill activity returned.
    spills, handles = _spills(history)
    assert spills == 1 and len(handles) == 1
    handle = handles[0]
    assert handle == key, 'the handle is the harness key, as LocalFileStore returns it'
    assert seen[0].startswith(f'[Tool output too large ({len(log):,} chars); stored to handle {handle!r}.')
    assert f'read_tool_result(handle={handle!r}, offset=0, limit=200' in seen[0]

    # The object, byte for byte, under tool_output_limits/ in the bucket.
    assert stack.get_object(handle) == log.encode()
    assert object_key(stack.agent_module.store.url, handle).split('/')[-3] == 'tool_output_limits'

    # read_tool_result ran in its activity, read the bucket, and returned the right page.
    assert seen[1] == spill_page(log.encode(), handle, limit=5, pattern='ERROR')
    assert seen[1].startswith(f'[handle {handle!r}: 11 matching line(s); showing 5]\n00013 ERROR')
    assert _overspill_read(stack.store_url, handle, '--limit', '5', '--pattern', 'ERROR') == seen[1]

    # A replay of the recorded history takes the handle from it: no new spill, the same commands.
    _replay(stack, history)

    # The same agent with the harness's own LocalFileStore, same run id: the same text, everywhere.
    local_agent = stack.agent_module.build_agent('log_agent_local', store=local_store(base_dir=tmp_path / 'spills'))
    local = local_agent.run_sync(f'fetch the build log, {SPILL_LINES} lines', run_id=report.run_id)
    assert local.output == report.output
    assert (tmp_path / 'spills').joinpath(
        *object_key(stack.agent_module.store.url, handle).split('/')[-2:]
    ).read_bytes() == log.encode()


def test_killed_agent_worker_resumes_with_the_same_handle(stack: Stack, tmp_path: Path) -> None:
    """SIGKILL the agent's worker after the spill; a new worker finishes the run by replaying it:
    the same handle, one spill activity, one object."""
    pause = tmp_path / 'paused'
    first = stack.start_agent_worker('agent-worker-doomed', LOG_AGENT_PAUSE_FILE=str(pause))

    async def start() -> Any:
        return await _start(stack, SPILL_LINES)

    handle = asyncio.run(start())
    _wait_for_file(pause, stack)

    async def history() -> Any:
        client = await _client()
        return await client.get_workflow_handle(handle.id).fetch_history()

    spills, handles = _spills(asyncio.run(history()))
    assert spills == 1 and len(handles) == 1, 'the spill ran before the kill'
    before = handles[0]
    run_id = before.split('/')[0]
    assert stack.spill_keys(run_id) == [object_key(stack.agent_module.store.url, before)]

    first.kill()
    stack.start_agent_worker('agent-worker-recovered', LOG_AGENT_PAUSE_FILE=str(pause))

    async def finish() -> tuple[Any, Any]:
        client = await _client()
        wf = client.get_workflow_handle_for(stack.agent_module.LogAgentWorkflow.run, handle.id)
        return await asyncio.wait_for(wf.result(), RUN_TIMEOUT), await wf.fetch_history()

    report, final_history = asyncio.run(finish())
    seen = json.loads(report.output)
    assert report.run_id == run_id, 'the agent run id survived the replay'
    assert f'stored to handle {before!r}.' in seen[0]
    assert seen[1].startswith(f'[handle {before!r}: 11 matching line(s)')
    spills, handles = _spills(final_history)
    assert spills == 1 and handles == [before], 'no second spill on replay'
    assert stack.spill_keys(run_id) == [object_key(stack.agent_module.store.url, before)], 'no second object'


def test_summarize_band_calls_the_model_once_across_replays(stack: Stack, tmp_path: Path) -> None:
    """A summarize band returns the summary from the model endpoint, and neither a replay on a new
    worker (after a SIGKILL) nor a replay of the recorded history calls the model again."""
    pause = tmp_path / 'paused'
    calls_before = len(stack.model.requests)
    first = stack.start_agent_worker('agent-worker-summarize', LOG_AGENT_PAUSE_FILE=str(pause))

    async def start() -> Any:
        return await _start(stack, SUMMARY_LINES)

    handle = asyncio.run(start())
    _wait_for_file(pause, stack)
    assert len(stack.model.requests) == calls_before + 1, 'one summary before the kill'
    first.kill()
    stack.start_agent_worker('agent-worker-summarize-recovered', LOG_AGENT_PAUSE_FILE=str(pause))

    async def finish() -> tuple[Any, Any]:
        client = await _client()
        wf = client.get_workflow_handle_for(stack.agent_module.LogAgentWorkflow.run, handle.id)
        return await asyncio.wait_for(wf.result(), RUN_TIMEOUT), await wf.fetch_history()

    report, history = asyncio.run(finish())
    log = stack.agent_module.build_log(SUMMARY_LINES)
    request = stack.model.requests[calls_before]
    prompt = request['body']['messages'][-1]['content']
    expected = ModelEndpoint.summary_for(prompt).strip()
    assert json.loads(report.output) == [_summary_text(log, expected)], 'the model saw the summary, stripped'
    assert f'<output>\n{log}\n</output>' in prompt and 'the `fetch_build_log` tool' in prompt
    assert request['body']['model'] == 'fake-summarizer'
    assert request['authorization'] == 'Bearer test-key'
    summaries, results = _activity_results(history, 'tool_output_limits.summarize')
    assert summaries == 1 and results[0]['summary'] == expected

    _replay(stack, history)
    assert len(stack.model.requests) == calls_before + 1, 'replays never call the model again'


def test_read_tool_result_in_workflow_code_reads_through_the_read_activity(stack: Stack) -> None:
    """With `read_tool_result` in workflow code, `read` runs the worker's `overspill.read_spill`
    activity (the raw bytes, `binary/plain`) and the model gets the same page."""
    stack.start_agent_worker('agent-worker-wf-read')

    async def run() -> tuple[Any, Any]:
        handle = await _start(stack, SPILL_LINES, stack.agent_module.LogAgentReadInWorkflow.run)
        return await asyncio.wait_for(handle.result(), RUN_TIMEOUT), await handle.fetch_history()

    report, history = asyncio.run(run())
    seen = json.loads(report.output)
    log = stack.agent_module.build_log(SPILL_LINES)
    count, spills = _spills(history)
    assert count == 1 and len(spills) == 1, f'one spill, not {count} ({spills}): {seen[0][:300]}'
    handle = spills[0]
    reads = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField('activity_task_scheduled_event_attributes')
    ]
    assert 'overspill.read_spill' in reads
    _, raw = _activity_payloads(history, 'overspill.read_spill')
    assert [(p.metadata['encoding'], p.data) for p in raw] == [(b'binary/plain', log.encode())], 'raw bytes'
    assert not any('tool_output_limits__call_tool' in name for name in reads), 'the tool ran in the workflow'
    assert seen[1] == spill_page(log.encode(), handle, limit=5, pattern='ERROR')


def test_against_overspill_dev_with_its_file_store(stack: Stack, tmp_path: Path) -> None:
    """The README's path: `overspill dev` (a file:// store) and the example agent beside it."""
    from overspill.pydantic_ai import sanitize_key

    spills = tmp_path / 'dev-spills'
    store_url = f'file://{spills}'
    queue = f'{stack.env["OVERSPILL_TASK_QUEUE"]}-dev'
    agent_queue = f'{stack.env["LOG_AGENT_TASK_QUEUE"]}-dev'
    dev = Process(
        'overspill-dev',
        [os.environ['OVERSPILL_BIN'], 'dev', '--no-demo', '--store', store_url, '--task-queue', queue],
        stack.env,
        stack.log_dir,
    )
    try:
        dev.wait_for('overspill dev: Temporal at')
        stack.start_agent_worker(
            'agent-worker-dev', OVERSPILL_STORE=store_url, OVERSPILL_TASK_QUEUE=queue, LOG_AGENT_TASK_QUEUE=agent_queue
        )

        async def run() -> Any:
            handle = await _start(stack, SPILL_LINES, task_queue=agent_queue)
            return await asyncio.wait_for(handle.result(), RUN_TIMEOUT)

        report = asyncio.run(run())
    finally:
        dev.stop()
    seen = json.loads(report.output)
    log = stack.agent_module.build_log(SPILL_LINES)
    handle = f'{report.run_id}/call-log.0'
    assert f'stored to handle {handle!r}.' in seen[0]
    assert (spills / 'tool_output_limits').joinpath(*sanitize_key(handle).split('/')).read_bytes() == log.encode()
    assert seen[1] == spill_page(log.encode(), handle, limit=5, pattern='ERROR')


@workflow.defn(sandboxed=False)
class StoreProbe:
    """Workflow code that writes through `OverspillStore` and reads back through its read activity."""

    @workflow.run
    async def run(self, url: str, task_queue: str, key: str, data_hex: str) -> list[str]:
        from overspill.pydantic_ai import OverspillStore

        store = OverspillStore(url, task_queue=task_queue)
        handle = await store.write(key, bytes.fromhex(data_hex))
        return [handle, (await store.read(handle)).hex()]


@pytest.mark.parametrize(
    'data',
    [
        bytes(range(256)) * 64,  # not UTF-8: travels as bytes_b64
        ('naïve \u2028 ☃ "quoted" \\ \x00 \U0001f600\r\n' * 500).encode(),  # UTF-8: travels as text
        b'',
    ],
    ids=['binary', 'utf8', 'empty'],
)
def test_store_write_in_workflow_code_stores_exactly_the_bytes(stack: Stack, data: bytes) -> None:
    """`OverspillStore.write` from workflow code stores exactly `data` (binary or text) under the
    key and returns the key as the handle; `read` in workflow code returns it unchanged."""
    from temporalio.worker import Worker

    queue = f'store-probe-{uuid.uuid4()}'
    key = f'probe-{uuid.uuid4().hex[:8]}:run/call {len(data)}.0'

    async def run() -> list[str]:
        client = await _client()
        async with Worker(
            client, task_queue=queue, workflows=[StoreProbe], activities=[stack.agent_module.store.read_activity()]
        ):
            return await client.execute_workflow(
                StoreProbe.run,
                args=[stack.store_url, stack.env['OVERSPILL_TASK_QUEUE'], key, data.hex()],
                id=queue,
                task_queue=queue,
                execution_timeout=timedelta(seconds=RUN_TIMEOUT),
            )

    handle, read_back = asyncio.run(run())
    assert handle == key
    assert bytes.fromhex(read_back) == data
    assert stack.get_object(handle) == data


def test_search_tools_list_and_grep_a_spill_through_overspill(stack: Stack) -> None:
    """`OverspillToolset` on Temporal: the scripted model lists the run's spills, then greps the
    spill's errors with context. Both tools run in workflow code and call Overspill's activities
    by name; only their pages enter the history, and a replay of it is deterministic."""
    from overspill import Store
    from overspill.pydantic_ai import GREP_ACTIVITY, LIST_ACTIVITY, sanitize_key

    stack.start_agent_worker('agent-worker-search')

    async def run() -> tuple[Any, Any]:
        handle = await _start(stack, SPILL_LINES, run=stack.agent_module.LogAgentSearch.run)
        return await asyncio.wait_for(handle.result(), RUN_TIMEOUT), await handle.fetch_history()

    report, history = asyncio.run(run())
    seen = json.loads(report.output)
    log = stack.agent_module.build_log(SPILL_LINES)
    # The listing shows the handle as the marker does (run ids hold `:`, stored as `_`).
    key = f'{report.run_id}/call-log.0'
    assert ':' in key and sanitize_key(key) != key
    assert len(seen) == 3 and f'stored to handle {key!r}' in seen[0], seen
    listing = re.sub(r'written [^;\n]* ago', 'written … ago', seen[1])
    assert listing == (
        f'[run {report.run_id!r}: 1 spilled tool result(s); showing 1, newest first]\n'
        f'- {key!r}: fetch_build_log, {len(log):,} chars, {SPILL_LINES:,} lines, written … ago; '
        f'first line: {log.splitlines()[0]!r}'
    )
    page = seen[2]
    lines = log.splitlines()
    assert page.startswith(
        f'[handle {key!r}: 11 matching line(s); showing 3, 8 more; continue with offset=3]\n'
        f'13-{lines[12]}\n14:{lines[13]}\n15-{lines[14]}\n--\n'
    ), page
    request = {'handle': key, 'pattern': 'ERROR', 'context': 1, 'max_matches': 3}

    async def native_page() -> str:
        return await Store(stack.store_url).grep_tool_result(request)

    # The harness's own grep (0.75), or OverspillToolset's (0.62): the engine's page either way.
    assert page == asyncio.run(native_page()), 'the native path, the same page'
    assert page == _overspill_read(stack.store_url, key, 'ERROR', '-C', '1', '--max-matches', '3', command='grep')

    workflow_pages = ((LIST_ACTIVITY, seen[1]),) if HARNESS_HAS_GREP else ((LIST_ACTIVITY, seen[1]), (GREP_ACTIVITY, page))
    for name, text in workflow_pages:
        count, results = _activity_results(history, name)
        assert (count, results) == (1, [text]), f'{name} ran once, in workflow code; its page is its result'
    _replay(stack, history)


def test_an_agent_on_another_store_ends_its_run_with_one_line(stack: Stack) -> None:
    """The agent's store is not the worker's: the spill result names the worker's store, and the
    run ends there, its workflow failing with one line naming both (the agent's worker logs it),
    rather than the model being told later that its spill is not there."""
    from temporalio.client import WorkflowFailureError

    wrong = f's3://nosuchbucket-{uuid.uuid4().hex[:12]}'
    worker = stack.start_agent_worker('agent-worker-wrong-store', OVERSPILL_STORE=wrong)

    async def run() -> tuple[BaseException, Any]:
        handle = await _start(stack, SPILL_LINES)
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), RUN_TIMEOUT)
        assert failed.value.cause is not None
        return failed.value.cause, await handle.fetch_history()

    if HARNESS_JOURNALS_SPILLS:
        # The agent's worker writes its own store, whose bucket is missing: the spill falls back.
        output = _completes(stack, worker)
        assert 'Spilling output of tool' in worker.output() and 'truncated' in output[0], output[0][:300]
        return
    failure, history = asyncio.run(run())
    _, spills = _activity_results(history, 'tool_output_limits.spill')
    assert [s['store'] for s in spills] == [stack.store_url], 'the spill result names the worker store'
    line = (
        f"The Overspill worker on task queue {stack.env['OVERSPILL_TASK_QUEUE']!r} stores spills in "
        f'{stack.store_url}, but this OverspillStore reads {wrong}: read_tool_result would not find them. '
        'Give both the same store (OVERSPILL_STORE).'
    )
    assert str(failure) == line
    assert line in worker.output() and 'Traceback' not in worker.output()


def test_an_agent_that_cannot_read_its_store_fails_its_read_once(stack: Stack) -> None:
    """The agent names the worker's store but cannot read it (its credentials are refused): the
    read from the bucket fails once, non-retryable, and ends the run with the store's error
    instead of retrying forever, or telling the model the spill is gone."""
    from temporalio.client import WorkflowFailureError

    worker = stack.start_agent_worker('agent-worker-refused', AWS_SECRET_ACCESS_KEY='not-the-secret')
    if HARNESS_JOURNALS_SPILLS:
        # The agent's worker cannot write the store either: the spill falls back, saying why.
        output = _completes(stack, worker)
        assert 'Spilling output of tool' in worker.output() and 'truncated' in output[0], output[0][:300]
        return

    async def run() -> tuple[BaseException, Any]:
        handle = await _start(stack, SPILL_LINES)
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), RUN_TIMEOUT)
        return failed.value, await handle.fetch_history()

    failure, history = asyncio.run(run())
    causes = []
    while failure is not None:
        causes.append(failure)
        failure = failure.__cause__
    assert any(getattr(c, 'type', None) == 'SpillReadError' and 'Check the store URL' in str(c) for c in causes), causes
    started = [e.activity_task_started_event_attributes.attempt for e in history.events if e.HasField('activity_task_started_event_attributes')]
    assert started and max(started) == 1, f'no activity was retried: {started}'


def test_no_overspill_worker_on_the_queue_ends_the_run_with_one_line(stack: Stack) -> None:
    """No worker polls the Overspill queue: the spill stops waiting after its start timeout, and
    the run ends there, its workflow failing with one line naming the queue and how to start a
    worker (the agent's worker logs it, without a traceback), instead of going on without it."""
    from temporalio.client import WorkflowFailureError

    queue = f'nobody-polls-{uuid.uuid4()}'
    worker = stack.start_agent_worker('agent-worker-no-overspill', OVERSPILL_TASK_QUEUE=queue)
    if HARNESS_JOURNALS_SPILLS:
        # The agent's worker writes the spill itself, and the harness reads it back: no
        # Overspill worker is needed.
        output = _completes(stack, worker)
        assert 'stored to handle' in output[0] and output[1].startswith('[handle '), output
        return

    async def run() -> tuple[BaseException, float]:
        handle = await _start(stack, SPILL_LINES)
        started = time.monotonic()
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), RUN_TIMEOUT)
        assert failed.value.cause is not None
        return failed.value.cause, time.monotonic() - started

    failure, took = asyncio.run(run())
    line = (
        f'no Overspill worker polls task queue {queue!r}: tool_output_limits.spill waited 0:00:10 for one to '
        'start it. Start `overspill dev`, or `overspill worker --task-queue` with that queue.'
    )
    assert str(failure) == line
    assert took < 40, f'the run ended after {took:.0f} s'
    assert line in worker.output() and 'Traceback' not in worker.output()
