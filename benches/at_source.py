"""At the source: a pydantic-ai agent's big tool output through Temporal External Storage (today)
against reduction in the tool's own activity (`OverspillInterceptor`), for 1, 10 and 40 MB.

    source .deploy/seaweedfs.env && source .deploy/temporal.env
    CARGO_PROFILE_RELEASE_LTO=false cargo build --release -p overspill-cli
    python benches/at_source.py [--sizes 1,10,40] [--calls 3] [--setups es,source]

The agent (pydantic-ai-slim's `TemporalDurability`, pydantic-ai-harness's `ToolOutputLimits`
spilling to `OverspillStore` at 20,000 chars, a scripted `FunctionModel`) calls a tool returning
`size` bytes of text `--calls` times, then answers. Three processes per case, each fresh: the
WORKFLOW worker (the agent's workflow only; its activities are routed to the tools' queue), the
TOOLS worker (the agent's tool and model activities), and the Overspill worker (`OVERSPILL_BIN`,
default the release build, else the debug one). Setups:

- `es`, External Storage today: every client has temporalio's `ExternalStorage` on the bucket
  (`overspill.pydantic_ai.external_storage`), the Overspill worker `--external-storage`; the
  output goes tool → bucket → workflow → bucket → Overspill → spill.
- `source`, at the source: no External Storage; the tools worker has `OverspillInterceptor`, which
  spills the output inside the tool's activity, so the workflow sees the harness's marker only.
- `plain`, neither (the README's setup before either): outputs travel through history.

`--many` runs 100 calls of 200 KB instead, `plain` and `source`, and prints how many calls
completed, the history, and how the run ended (the history's size limit terminates `plain`).

Each process reaches SeaweedFS through a loopback TCP relay of its own that counts the bytes each
way (requests up, responses down; HTTP headers included, a few hundred bytes a request). Printed
per case: the history's bytes (every event serialized) and its largest event, the bucket bytes up
and down per call (all processes; each process's share on stderr), the workflow worker's peak RSS
(`VmHWM`) and its peak when idle before the run, and the wall time per tool call (start to result
over the calls). A markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from overspill.pydantic_ai import OverspillStore, external_storage
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits
from pydantic_ai_harness.tool_output_limits import Band, Spill, ToolOutputLimits, Truncate
from temporalio import workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.converter import DataConverter

MB = 1_000_000
AGENT_NAME = 'at_source_bench'
WORKFLOW_QUEUE = os.environ.get('AT_SOURCE_WORKFLOW_QUEUE', 'at-source-workflow')
TOOLS_QUEUE = os.environ.get('AT_SOURCE_TOOLS_QUEUE', 'at-source-tools')
EXTERNAL_STORAGE_URL = os.environ.get('AT_SOURCE_EXTERNAL_STORAGE') or None
"""The bucket of External Storage (`s3://bucket`), in the `es` setup only."""
SPILL_OVER = 20_000
"""ToolOutputLimits' one band: outputs of this many chars or more spill (then truncate)."""
LINE = '{:08d} INFO step={} target=//pkg/module:test elapsed={}ms\n'


# --- the agent ------------------------------------------------------------------------------------


_outputs: dict[int, str] = {}


def tool_output(size: int) -> str:
    """`size` bytes of log-like text, deterministic (built once per process)."""
    if size not in _outputs:
        lines = []
        total = 0
        i = 0
        while total < size:
            line = LINE.format(i, i % 7, i * 37 % 1000)
            lines.append(line)
            total += len(line)
            i += 1
        _outputs[size] = ''.join(lines)[:size]
    return _outputs[size]


async def fetch_output(size: int, call: int) -> str:
    """Return `size` bytes of the build's log (call number `call`). Each call's output differs (its
    first line), as real outputs do: External Storage stores equal payloads of a workflow once."""
    head = f'call {call:08d}\n'
    return head + tool_output(size)[len(head) :]


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


async def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: `calls` tool calls of `size` bytes each (the prompt says
    `{calls} calls of {size} bytes`), one after the other, then the lengths of what it saw."""
    first = messages[0]
    assert isinstance(first, ModelRequest)
    prompt = str(first.parts[-1].content)
    match = re.search(r'(\d+) calls of (\d+) bytes', prompt)
    assert match is not None, prompt
    calls, size = int(match.group(1)), int(match.group(2))
    returns = _returns(messages)
    if len(returns) < calls:
        i = len(returns)
        return ModelResponse(parts=[ToolCallPart('fetch_output', {'size': size, 'call': i}, tool_call_id=f'call-{i}')])
    return ModelResponse(parts=[TextPart(json.dumps([len(p.model_response_str()) for p in returns]))])


store = OverspillStore()
"""The agent's spill store (`OVERSPILL_STORE`, the Overspill worker's `--store`)."""

limits = ToolOutputLimits(bands=[Band(over=SPILL_OVER, action=Spill(then=Truncate()))], store=store)
"""The agent's ToolOutputLimits, and the interceptor's in the `source` setup."""

agent = Agent(
    FunctionModel(script, model_name='scripted'),
    name=AGENT_NAME,
    tools=[fetch_output],
    capabilities=[
        limits,
        TemporalDurability(
            activity_config={
                'task_queue': TOOLS_QUEUE,
                'start_to_close_timeout': timedelta(minutes=10),
            },
        ),
    ],
)


@workflow.defn
class AtSourceBench(PydanticAIWorkflow):
    """Runs the bench agent on one prompt; returns the lengths of the tool returns it saw."""

    __pydantic_ai_agents__ = (agent,)

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await agent.run(prompt, usage_limits=UsageLimits(request_limit=None))
        return result.output


# --- the worker processes -------------------------------------------------------------------------


async def connect() -> Client:
    """A client with pydantic-ai's plugin, and External Storage when the setup has it."""
    converter = DataConverter(external_storage=external_storage(EXTERNAL_STORAGE_URL)) if EXTERNAL_STORAGE_URL else None
    return await Client.connect(
        os.environ['TEMPORAL_ADDRESS'],
        namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
        plugins=[PydanticAIPlugin()],
        **({'data_converter': converter} if converter else {}),
    )


def interceptors() -> list[Any]:
    """The tools worker's interceptors: `OverspillInterceptor` under the agent's limits (and so its
    store), when `AT_SOURCE_INTERCEPTOR` is set."""
    if not os.environ.get('AT_SOURCE_INTERCEPTOR'):
        return []
    from overspill.pydantic_ai import OverspillInterceptor

    return [OverspillInterceptor(limits)]


async def serve(role: str) -> None:
    """Run the `workflow` or the `tools` worker until killed."""
    from pydantic_ai.durable_exec.temporal import AgentPlugin
    from temporalio.worker import Worker

    client = await connect()
    if role == 'workflow':
        worker = Worker(client, task_queue=WORKFLOW_QUEUE, workflows=[AtSourceBench])
    else:
        worker = Worker(client, task_queue=TOOLS_QUEUE, plugins=[AgentPlugin(agent)], interceptors=interceptors())
    print(f'{role} worker polling', flush=True)
    await worker.run()


# --- counting the bucket's bytes ------------------------------------------------------------------


@dataclass
class Relay:
    """A loopback TCP relay to the S3 endpoint that counts the bytes each way."""

    name: str
    target: tuple[str, int]
    up: int = 0
    down: int = 0
    port: int = 0

    async def start(self) -> None:
        server = await asyncio.start_server(self._connection, '127.0.0.1', 0)
        self.port = server.sockets[0].getsockname()[1]

    @property
    def endpoint(self) -> str:
        return f'http://127.0.0.1:{self.port}'

    async def _connection(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection(*self.target)
        await asyncio.gather(
            self._pipe(client_reader, server_writer, up=True), self._pipe(server_reader, client_writer, up=False)
        )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up: bool) -> None:
        try:
            while data := await reader.read(1 << 16):
                if up:
                    self.up += len(data)
                else:
                    self.down += len(data)
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()


class Relays:
    """One relay per process, served by an event loop on a thread of its own."""

    def __init__(self, target: str, names: list[str]) -> None:
        url = urlparse(target)
        assert url.hostname and url.port, target
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.by_name = {name: Relay(name, (url.hostname, url.port)) for name in names}
        for relay in self.by_name.values():
            asyncio.run_coroutine_threadsafe(relay.start(), self.loop).result(10)

    def reset(self) -> None:
        for relay in self.by_name.values():
            relay.up = relay.down = 0

    def totals(self) -> tuple[int, int]:
        return sum(r.up for r in self.by_name.values()), sum(r.down for r in self.by_name.values())


# --- one case -------------------------------------------------------------------------------------


def vm_hwm(pid: int) -> int:
    """Process `pid`'s peak resident set in bytes (`VmHWM`)."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) * 1024
    raise RuntimeError('no VmHWM')


class Proc:
    """A subprocess with its output in a log file, ready once a line appears there."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log = log_dir / f'{name}.log'
        with self.log.open('wb') as out:
            self.proc = subprocess.Popen(args, env=env, cwd=root(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text(errors='replace'):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f'{self.name} did not print {text!r}:\n{self.log.read_text(errors="replace")[-3000:]}')
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@dataclass
class Result:
    """One case's measurements."""

    setup: str
    size: int
    calls: int
    history: int
    largest_event: int
    up: int
    down: int
    by_process: dict[str, tuple[int, int]]
    idle_rss: int
    peak_rss: int
    seconds_per_call: float
    completed: int
    """Tool calls completed (all of them, unless the run ended early)."""
    end: str
    """How the run ended: `completed`, or the history's last event and its reason."""


def root() -> Path:
    """The checkout (not at import: the workflow sandbox re-imports this module)."""
    return Path(__file__).resolve().parents[1]


def overspill_bin() -> str:
    if os.environ.get('OVERSPILL_BIN'):
        return os.environ['OVERSPILL_BIN']
    release = root() / 'target' / 'release' / 'overspill'
    return str(release if release.exists() else root() / 'target' / 'debug' / 'overspill')


async def run_case(setup: str, size: int, calls: int, bucket: str, relays: Relays, log_dir: Path) -> Result:
    tag = f'{setup}-{size}b-{uuid.uuid4().hex[:6]}'
    es_url = f's3://{bucket}' if setup == 'es' else ''
    store_url = f's3://{bucket}/spills'
    base = {
        **os.environ,
        'OVERSPILL_STORE': store_url,
        'OVERSPILL_TASK_QUEUE': f'at-source-overspill-{tag}',
        'AT_SOURCE_WORKFLOW_QUEUE': f'at-source-workflow-{tag}',
        'AT_SOURCE_TOOLS_QUEUE': f'at-source-tools-{tag}',
        'AT_SOURCE_EXTERNAL_STORAGE': es_url,
        'AWS_ALLOW_HTTP': 'true',
        'PYTHONPATH': str(Path(__file__).parent),
    }
    env = {name: {**base, 'AWS_ENDPOINT_URL': relay.endpoint} for name, relay in relays.by_name.items()}
    rust_args = [overspill_bin(), 'worker', '--store', store_url, '--task-queue', base['OVERSPILL_TASK_QUEUE']]
    if setup == 'es':
        rust_args += ['--external-storage', f's3://{bucket}/overspill']
    serve_args = [sys.executable, '-c', 'import asyncio, sys, at_source; asyncio.run(at_source.serve(sys.argv[1]))']
    tools_env = {**env['tools'], **({'AT_SOURCE_INTERCEPTOR': '1'} if setup == 'source' else {})}
    procs = [
        Proc(f'overspill-{tag}', rust_args, env['overspill'], log_dir),
        Proc(f'tools-{tag}', [*serve_args, 'tools'], tools_env, log_dir),
        Proc(f'workflow-{tag}', [*serve_args, 'workflow'], env['workflow'], log_dir),
    ]
    rust, _, wf = procs
    try:
        rust.wait_for('overspill worker started')
        for proc in procs[1:]:
            proc.wait_for('worker polling')
        idle = vm_hwm(wf.proc.pid)
        # This process's client reaches the bucket through the `client` relay.
        os.environ['AWS_ENDPOINT_URL'] = relays.by_name['client'].endpoint
        global EXTERNAL_STORAGE_URL
        EXTERNAL_STORAGE_URL = es_url or None
        client = await connect()
        relays.reset()
        started = time.monotonic()
        handle = await client.start_workflow(
            AtSourceBench.run, f'{calls} calls of {size} bytes', id=f'at-source-{tag}', task_queue=base['AT_SOURCE_WORKFLOW_QUEUE']
        )
        try:
            await asyncio.wait_for(handle.result(), 3600)
            end = 'completed'
        except WorkflowFailureError as error:
            end = f'failed: {error.cause}'
        elapsed = time.monotonic() - started
        peak = vm_hwm(wf.proc.pid)
        history = await handle.fetch_history()
        sizes = [e.ByteSize() for e in history.events]
        last = history.events[-1]
        if last.HasField('workflow_execution_terminated_event_attributes'):
            end = f'terminated: {last.workflow_execution_terminated_event_attributes.reason}'
        completed = sum(
            1
            for e in history.events
            if e.HasField('activity_task_completed_event_attributes')
            and _activity_type(history, e.activity_task_completed_event_attributes.scheduled_event_id).endswith('__call_tool')
        )
        up, down = relays.totals()
        return Result(
            setup=setup, size=size, calls=calls, history=sum(sizes), largest_event=max(sizes), up=up, down=down,
            by_process={name: (r.up, r.down) for name, r in relays.by_name.items()},
            idle_rss=idle, peak_rss=peak, seconds_per_call=elapsed / max(completed, 1), completed=completed, end=end,
        )
    finally:
        for proc in reversed(procs):
            proc.stop()


def _activity_type(history: Any, event_id: int) -> str:
    event = history.events[event_id - 1]
    assert event.event_id == event_id
    return str(event.activity_task_scheduled_event_attributes.activity_type.name)


def human(n: float) -> str:
    for unit, scale in (('GB', 1e9), ('MB', 1e6), ('KB', 1e3)):
        if n >= scale:
            return f'{n / scale:.1f} {unit}'
    return f'{n:.0f} B'


SETUP_NAMES = {'es': 'External Storage', 'source': 'at the source', 'plain': 'neither'}


def table(results: list[Result]) -> str:
    rows = [
        '| output | setup | history of the run (largest event) | bucket up per call | bucket down per call '
        '| workflow worker peak RSS (idle) | wall time per call |',
        '|---|---|---:|---:|---:|---:|---:|',
    ]
    for r in results:
        calls = max(r.completed, 1)
        rows.append(
            f'| {human(r.size)} | {SETUP_NAMES[r.setup]} | {human(r.history)} ({human(r.largest_event)}) '
            f'| {human(r.up / calls)} | {human(r.down / calls)} '
            f'| {r.peak_rss / 2**20:.0f} MiB ({r.idle_rss / 2**20:.0f} MiB) | {r.seconds_per_call:.2f} s |'
        )
    return '\n'.join(rows)


def many_table(results: list[Result]) -> str:
    rows = ['| setup | tool calls completed | history (largest event) | end |', '|---|---|---|---|']
    for r in results:
        rows.append(
            f'| {SETUP_NAMES[r.setup]} | {r.completed} of {r.calls} | {human(r.history)} ({human(r.largest_event)}) | {r.end} |'
        )
    return '\n'.join(rows)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--sizes', default='1,10,40', help='output sizes in MB, comma-separated')
    parser.add_argument('--calls', type=int, default=3, help='tool calls per run')
    parser.add_argument(
        '--setups', default='es,source', help='es (External Storage), source (at the source), plain (neither)'
    )
    parser.add_argument(
        '--many', action='store_true', help='instead: 100 calls of 200 KB, without either (plain) and at the source'
    )
    args = parser.parse_args()
    import boto3
    import tempfile

    s3 = boto3.client('s3', endpoint_url=os.environ['AWS_ENDPOINT_URL'], region_name=os.environ.get('AWS_REGION', 'us-east-1'))
    relays = Relays(os.environ['AWS_ENDPOINT_URL'], ['client', 'workflow', 'tools', 'overspill'])
    bucket = f'at-source-bench-{uuid.uuid4().hex[:8]}'
    s3.create_bucket(Bucket=bucket)
    log_dir = Path(tempfile.mkdtemp(prefix='at-source-bench-'))
    print(f'overspill: {overspill_bin()}; logs in {log_dir}', file=sys.stderr)
    results = []
    try:
        if args.many:
            cases = [(setup, 200_000, 100) for setup in ('plain', 'source')]
        else:
            cases = [(setup, int(s) * MB, args.calls) for s in args.sizes.split(',') for setup in args.setups.split(',')]
        for setup, size, calls in cases:
            result = await run_case(setup, size, calls, bucket, relays, log_dir)
            print(f'{setup} {human(size)}: {result}', file=sys.stderr, flush=True)
            results.append(result)
    finally:
        for page in s3.get_paginator('list_objects_v2').paginate(Bucket=bucket):
            for item in page.get('Contents', []):
                s3.delete_object(Bucket=bucket, Key=item['Key'])
        s3.delete_bucket(Bucket=bucket)
    print(many_table(results) if args.many else table(results))


if __name__ == '__main__':
    # The workers import this file as `at_source` (their workflow's module); so does this run.
    sys.path.insert(0, str(Path(__file__).parent))
    import at_source

    asyncio.run(at_source.main())
