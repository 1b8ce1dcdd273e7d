"""Helpers the Python end-to-end tests share: a local OpenAI-compatible model endpoint, worker
subprocesses, the harness's own page of a spill, the crawl log the agents' tools return, a
store's objects in its bucket, and the frameworks' quickstarts run as pasted. (Agent runs on
Temporal, and an Overspill worker of a suite's own: `agents_support`.)"""

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
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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
