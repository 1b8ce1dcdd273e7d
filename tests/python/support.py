"""Helpers the Python end-to-end tests share: a local OpenAI-compatible model endpoint, worker
subprocesses, the harness's own page of a spill, the crawl log the agents' tools return, and
the frameworks' quickstarts run as pasted."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / 'workflows' / 'python' / 'examples'


def stack_env(store_url: str, name: str, model_url: str, **extra: str) -> dict[str, str]:
    """The environment of a test's Overspill worker and example-agent workers: `store_url`, queues
    named after `name`, the local model endpoint at `model_url`, plus `extra`."""
    env = {
        **os.environ,
        # The examples only: the package is the installed wheel (deploy/lib.sh's wheel-venv).
        'PYTHONPATH': os.pathsep.join([str(EXAMPLES), os.environ.get('PYTHONPATH', '')]),
        'OVERSPILL_STORE': store_url,
        'OVERSPILL_TASK_QUEUE': f'tool-output-limits-{name}',
        'LOG_AGENT_TASK_QUEUE': f'log-agent-{name}',
        'OVERSPILL_MODEL_URL': model_url,
        'OVERSPILL_MODEL': 'fake-summarizer',
        'AWS_ALLOW_HTTP': 'true',
        **extra,
    }
    env.pop('LOG_AGENT_PAUSE_FILE', None)
    return env


def page_text(n: int, chars: int) -> str:
    """Page `n` of the crawl log: `chars` chars of numbered lines, the same on every call."""
    line = 0
    parts: list[str] = []
    size = 0
    while size < chars:
        text = f'page {n:04d} line {line:06d} status={"ok" if (line * 7 + n) % 13 else "ERROR"} ms={(line * 37 + n) % 997}\n'
        parts.append(text)
        size += len(text)
        line += 1
    return ''.join(parts)[:chars]


def readme_shows(example: Path) -> bool:
    """Whether the package's README shows `example` whole, as a Python block."""
    return f'```python\n{example.read_text()}```' in (EXAMPLES.parent / 'README.md').read_text()


# --- the local model endpoint -----------------------------------------------------------------


@dataclass
class ModelEndpoint:
    """An OpenAI chat-completions endpoint on loopback that answers with a fixed-form summary."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @staticmethod
    def summary_for(prompt: str) -> str:
        errors = prompt.count(' ERROR ')
        return f'  The build log has {errors} ERROR lines; the first is line 00013.  \n'

    def start(self) -> str:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get('Content-Length', 0))))
                if self.path != '/v1/chat/completions':
                    self.send_error(404)
                    return
                endpoint.requests.append({'body': body, 'authorization': self.headers.get('Authorization')})
                prompt = body['messages'][-1]['content']
                reply = {
                    'id': f'chatcmpl-{len(endpoint.requests)}',
                    'object': 'chat.completion',
                    'created': int(time.time()),
                    'model': body.get('model', 'unknown'),
                    'choices': [
                        {
                            'index': 0,
                            'message': {'role': 'assistant', 'content': endpoint.summary_for(prompt)},
                            'finish_reason': 'stop',
                        }
                    ],
                    'usage': {
                        'prompt_tokens': len(prompt) // 4,
                        'completion_tokens': 17,
                        'total_tokens': len(prompt) // 4 + 17,
                    },
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f'http://127.0.0.1:{self.server.server_address[1]}/v1'

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


# --- processes ----------------------------------------------------------------------------------


class Process:
    """A subprocess with its output in a file, ready once a line appears in it."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path, cwd: Path = ROOT) -> None:
        self.name = name
        self.log = log_dir / f'{name}.log'
        self._file = self.log.open('wb')
        self.proc = subprocess.Popen(
            args, env=env, cwd=cwd, stdout=self._file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f'{self.name} exited with {self.proc.returncode}:\n{self.output()[-4000:]}')
            time.sleep(0.1)
        raise AssertionError(f'{self.name} did not print {text!r} within {timeout}s:\n{self.output()[-4000:]}')

    def output(self) -> str:
        return self.log.read_text(errors='replace')

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown, as a crashed host would stop."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._file.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._file.close()



def spill_page(data: bytes, handle: str, **kwargs: Any) -> str:
    """What the harness's own `read_tool_result` returns for `data` (its `_read_slice`)."""

    class Stored:
        async def read(self, _: str) -> bytes:
            return data

    return asyncio.run(harness_read(Stored(), handle, **kwargs))


def harness_read(store: Any, handle: str, **kwargs: Any) -> Any:
    """The awaitable of the installed harness's own `read_tool_result` page of spill `handle`
    in `store` (an `OverflowStore`): its `_read_slice`, whose signature each release changes."""
    from pydantic_ai_harness.tool_output_limits import _capability

    args = {'offset': 0, 'limit': 200, 'from_end': False, 'pattern': None, **kwargs}
    if hasattr(_capability, '_grep'):  # 0.75: the store itself, a unit and the reader's name
        args = {'unit': 'lines', **args}
        return _capability._read_slice(store, handle, reader_name='read_tool_result', **args)
    return _capability._read_slice(store.read, handle, **args)


def harness_grep(store: Any, handle: str, pattern: str, **kwargs: Any) -> Any:
    """The awaitable of 0.75's own `grep_tool_result` page of spill `handle` in `store`."""
    from pydantic_ai_harness.tool_output_limits import _capability

    args = {'context': 2, 'max_matches': 20, 'offset': 0, **kwargs}
    return _capability._grep(store, handle, pattern, reader_name='read_tool_result', **args)


# --- agent runs on Temporal ----------------------------------------------------------------------


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


async def run_workflow(client: Any, run: Any, arg: Any, *, task_queue: str, timeout: float) -> tuple[Ended, Any]:
    """Start workflow `run` and wait, at most `timeout` s, until it ends or a workflow task fails
    (a payload over the limit fails every retry of the task while the run shows Running: it is
    then terminated). How it ended, and its history."""
    started = time.monotonic()
    handle = await client.start_workflow(
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
    description = await handle.describe()
    size = description.raw_description.workflow_execution_info.history_size_bytes
    return Ended(status, failure, result, seconds, size), history


async def task_failure(handle: Any) -> str:
    """The message of the run's failed workflow task, when its pending task is being retried, or `''`."""
    description = await handle.describe()
    if description.raw_description.pending_workflow_task.attempt < 2:
        return ''
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            return str(event.workflow_task_failed_event_attributes.failure.message)
    return ''


class FailFirstAttempt(Interceptor):
    """A worker interceptor failing the first attempt of each activity of type `activity_type`
    after everything inside it ran (a spill included), as a worker that crashed right after the
    write would. (Give it before the Overspill interceptor, so that the spill runs inside it.)"""

    def __init__(self, activity_type: str) -> None:
        self.activity_type = activity_type

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        activity_type = self.activity_type

        class FailFirst(ActivityInboundInterceptor):
            async def execute_activity(self, input: ExecuteActivityInput) -> Any:
                result = await super().execute_activity(input)
                info = activity.info()
                if info.activity_type == activity_type and info.attempt == 1:
                    raise ApplicationError('the first attempt fails after its spill')
                return result

        return FailFirst(next)

# --- a run's history -------------------------------------------------------------------------------


def run_id_of(history: Any) -> str:
    """The run id a run's spills are keyed by (its first run's)."""
    return str(history.events[0].workflow_execution_started_event_attributes.original_execution_run_id)


def activity_calls(history: Any, activity_type: str) -> list[tuple[str, int, Any]]:
    """Each activity of `activity_type` the run scheduled: its id, its last attempt and its input (decoded JSON)."""
    found: dict[int, tuple[str, int, Any]] = {}
    for event in history.events:
        if event.HasField('activity_task_scheduled_event_attributes'):
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == activity_type:
                found[event.event_id] = (scheduled.activity_id, 1, json.loads(scheduled.input.payloads[0].data))
        elif event.HasField('activity_task_started_event_attributes'):
            started = event.activity_task_started_event_attributes
            if started.scheduled_event_id in found:
                activity_id, _, data = found[started.scheduled_event_id]
                found[started.scheduled_event_id] = (activity_id, started.attempt, data)
    return list(found.values())


# --- a store's objects, inspected straight in its bucket ------------------------------------------


def bucket_of(store_url: str) -> str:
    """The bucket of an `s3://bucket/prefix` store URL."""
    return store_url.split('://', 1)[1].split('/', 1)[0].split('?', 1)[0]


def object_key(store_url: str, handle: str) -> str:
    """Where the store at `store_url` keeps spill `handle` inside its bucket (or its root):
    `{prefix}/tool_output_limits/{sanitized handle}`."""
    from overspill import sanitize_key

    rest = store_url.split('://', 1)[1].split('?', 1)[0]
    prefix = rest.split('/', 1)[1].strip('/') if '/' in rest and not store_url.startswith('file:') else ''
    return '/'.join(p for p in (prefix, 'tool_output_limits', sanitize_key(handle)) if p)


def s3_client(store_url: str) -> Any:
    """A boto3 client for the bucket of `store_url`, as the package builds one."""
    from overspill.external_storage import default_s3_client

    return default_s3_client(store_url)


# --- an Overspill worker on its own queue and store prefix --------------------------------------

STACK_ENV = ('TEMPORAL_ADDRESS', 'OVERSPILL_TEST_S3_URL', 'AWS_ENDPOINT_URL', 'AWS_ACCESS_KEY_ID', 'OVERSPILL_BIN')
"""What a test's Overspill worker needs: source .deploy/seaweedfs.env and .deploy/temporal.env, set OVERSPILL_BIN."""


@dataclass
class Stack:
    """An Overspill worker (`OVERSPILL_BIN`) on its own queue and store prefix under `OVERSPILL_TEST_S3_URL`."""

    store_url: str
    queue: str
    bucket: str
    prefix: str
    """Where the store keeps its spills in the bucket."""
    worker: Process

    def stored(self, handle: str) -> bytes:
        """The bytes the store keeps for `handle`."""
        body: bytes = s3_client(self.store_url).get_object(Bucket=self.bucket, Key=f'{self.prefix}/{handle}')['Body'].read()
        return body

    def objects(self, run_id: str) -> list[str]:
        """The spills (not their line indexes) the store keeps for run `run_id`."""
        listing = s3_client(self.store_url).list_objects_v2(Bucket=self.bucket, Prefix=f'{self.prefix}/{run_id}/')
        keys = [o['Key'] for o in listing.get('Contents', []) if not o['Key'].endswith('.idx')]
        return [key.removeprefix(f'{self.prefix}/') for key in keys]


@contextmanager
def overspill_stack(name: str, log_dir: Path) -> Iterator[Stack]:
    """An Overspill worker of its own for a suite named `name`, stopped at the end."""
    missing = [variable for variable in STACK_ENV if not os.environ.get(variable)]
    assert not missing, f'{missing} not set: source .deploy/seaweedfs.env and .deploy/temporal.env, set OVERSPILL_BIN'
    tag = f'{os.getpid()}-{uuid.uuid4().hex[:8]}'
    bucket = bucket_of(os.environ['OVERSPILL_TEST_S3_URL'])
    store_url = f'{os.environ["OVERSPILL_TEST_S3_URL"].rstrip("/")}/{name}-{tag}'
    queue = f'tool-output-limits-{name}-{tag}'
    worker = Process(
        f'overspill-worker-{name}',
        [os.environ['OVERSPILL_BIN'], 'worker', '--store', store_url, '--task-queue', queue],
        {**os.environ, 'AWS_ALLOW_HTTP': 'true'},
        log_dir,
    )
    try:
        worker.wait_for('overspill worker started')
        yield Stack(store_url, queue, bucket, f'{name}-{tag}/tool_output_limits', worker)
    finally:
        worker.stop()


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
    """What the stack's Overspill worker makes of a `tool_output_limits.reduce` request (through a
    client with `plugins`, whose converter must keep a dict's key order)."""
    from temporalio.client import Client
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    client = await Client.connect(
        os.environ['TEMPORAL_ADDRESS'], namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'), plugins=list(plugins)
    )
    queue = f'reduce-probe-{uuid.uuid4()}'
    async with Worker(client, task_queue=queue, workflows=[ReduceOnTheWorker], workflow_runner=UnsandboxedWorkflowRunner()):
        reply: dict[str, Any] = await client.execute_workflow(ReduceOnTheWorker.run, args=[stack.queue, request], id=queue, task_queue=queue)
    return reply


# --- the README's quickstarts, as pasted, against `overspill dev` ---------------------------------


def run_quickstart(example: Path, tmp_path: Path, **env: str) -> str:
    """Run `example` as a user would, against `overspill dev` on the default store under a fresh
    `TMPDIR` (`tmp_path`) and a queue of its own (other workers on the server stay away), with
    `env`; its output, once it exited cleanly."""
    environment = {k: v for k, v in os.environ.items() if k not in ('OVERSPILL_STORE', 'PYTHONPATH')}
    environment.update(TMPDIR=str(tmp_path), OVERSPILL_TASK_QUEUE=f'quickstart-overspill-{uuid.uuid4()}', **env)
    dev = Process('overspill-dev', [os.environ['OVERSPILL_BIN'], 'dev', '--no-demo'], environment, tmp_path)
    try:
        dev.wait_for('overspill dev: Temporal at')
        run = subprocess.run(
            [sys.executable, str(example)], env=environment, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
    finally:
        dev.stop()
    assert run.returncode == 0, f'{run.stdout}\n{run.stderr}\n{dev.output()[-3000:]}'
    assert 'Fatal Python error' not in run.stderr, run.stderr
    return run.stdout


def quickstart_read_back(stdout: str, tmp_path: Path) -> str:
    """The handle a quickstart's model read the spill's last line back by (`read_tool_result`'s
    page is its answer), checked against the spill in the default store `overspill dev` shares."""
    header, line = stdout.strip().split('\n')
    assert header.startswith("[handle '") and header.endswith("': 9,001 matching line(s); showing 1]"), header
    assert line == 'BUILD FAILED: disk full'
    handle = header.split("'")[1]
    spilled = tmp_path / f'overspill-{os.geteuid()}' / 'tool_output_limits' / handle
    assert spilled.read_text().endswith('BUILD FAILED: disk full\n') and spilled.stat().st_size > 200_000
    return handle
