"""An OpenAI agent on Temporal making 1,000 tool calls of 200 KB: what each setup of Overspill lets it do.

    source .deploy/seaweedfs.env; source .deploy/temporal.env
    cargo build -p overspill-cli
    OVERSPILL_BIN=target/debug/overspill .deploy/wheel-venv/bin/python benches/openai_agents.py [--calls 1000]

The agent and its scripted model are the tests' (`tests/python/openai_agents_support.py`): the
model calls `fetch_page` `--calls` times, each returning `--chars` chars, then answers; the
agent's tool is an activity (`activity_as_tool`) and every model call is the integration's
activity, whose input is the whole conversation so far. Each setup runs on this process's worker
(workflow, tool and model activities) against the Temporal server at `TEMPORAL_ADDRESS`, with
an `overspill worker` (`OVERSPILL_BIN`) on a store under `OVERSPILL_TEST_S3_URL` for the
read-back tools and masking spills:

- `without Overspill`: the integration's docs' setup.
- `at the source`: `OverspillInterceptor([fetch_page])` on the worker (outputs over 10,000 chars
  spilled in the tool's activity, a 1,000-char preview in the marker), `overspill_tools()`.
- `+ masking`: and `OverspillMasking(budget=100_000)` as the run's `call_model_input_filter`.
- `+ External Storage`: and Temporal External Storage on the client, in the bucket of
  `OVERSPILL_TEST_S3_URL`, for payloads of `--threshold` bytes or more: the model calls'
  inputs go to the bucket and the history keeps references.

Prints a table: how each run ended (a run is stopped, and terminated, once a workflow task fails
over and over, as it does for a payload over 2 MiB; the server terminates one whose history
passes 50 MB), the tool and model calls made, the history's size as the server counts it, the
largest model request and the chars sent to the model over the run (as the model received them:
instructions and items' text), and the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests' / 'python'))

from openai_agents_support import (  # noqa: E402
    AgentRequest,
    CrawlAgent,
    RunFigures,
    ScriptedModel,
    ScriptedProvider,
    fetch_page,
    fetch_records,
    plugin,
    run_agent,
)
from overspill.openai_agents import OverspillInterceptor  # noqa: E402
from overspill.pydantic_ai import external_storage  # noqa: E402
from support import Process  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.converter import DataConverter  # noqa: E402
from temporalio.worker import Interceptor, UnsandboxedWorkflowRunner, Worker  # noqa: E402

SETUPS = ('without Overspill', 'at the source', '+ masking', '+ External Storage')


async def run(setup: str, args: argparse.Namespace, store_url: str, queue: str) -> tuple[RunFigures, ScriptedModel]:
    """One run of `setup`: its figures, and the model with what it was sent."""
    model = ScriptedModel()
    level = SETUPS.index(setup)
    converter = DataConverter.default
    if level >= 3:
        bucket = os.environ['OVERSPILL_TEST_S3_URL'].split('/')[2]
        converter = DataConverter(external_storage=external_storage(f's3://{bucket}', payload_size_threshold=args.threshold))
    client = await Client.connect(
        os.environ['TEMPORAL_ADDRESS'],
        namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
        data_converter=converter,
        plugins=[plugin(ScriptedProvider(model))],
    )
    request = AgentRequest(f'fetch {args.calls} pages of {args.chars} chars', max_turns=args.calls + 10)
    interceptors: Sequence[Interceptor] = []
    if level >= 1:
        request.overspill_queue = queue
        interceptors = [OverspillInterceptor([fetch_page], store=store_url)]
    if level >= 2:
        request.masking_budget = args.budget
    agent_queue = f'oa-bench-{uuid.uuid4()}'
    async with Worker(
        client, task_queue=agent_queue, workflows=[CrawlAgent], activities=[fetch_page, fetch_records],
        interceptors=interceptors, workflow_runner=UnsandboxedWorkflowRunner(), max_cached_workflows=10,
    ):
        figures, _ = await run_agent(client, CrawlAgent.run, request, task_queue=agent_queue, timeout=args.timeout)
    return figures, model


def row(setup: str, figures: RunFigures, model: ScriptedModel) -> str:
    end = figures.status
    if 'history size exceeds' in end.lower() or 'history size limit' in end.lower():
        end = 'terminated at the 50 MB history limit'
    elif end == 'stuck':
        end = f'stuck at call {figures.tool_calls + 1} ({figures.failure.split("]")[0]}])'
    return (
        f'| {setup} | {end} | {figures.tool_calls:,} | {figures.model_calls:,} | {figures.history_bytes / 1e6:,.1f} MB '
        f'| {max(model.requests, default=0):,} | {sum(model.requests):,} | {figures.seconds:,.0f} s |'
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--calls', type=int, default=1_000, help='tool calls the model makes')
    parser.add_argument('--chars', type=int, default=200_000, help='chars each call returns')
    parser.add_argument('--budget', type=int, default=100_000, help="OverspillMasking's budget, chars")
    parser.add_argument('--threshold', type=int, default=32 * 1024, help='External Storage threshold, bytes')
    parser.add_argument('--timeout', type=float, default=3_600, help='seconds a run may take')
    parser.add_argument('--only', action='append', choices=SETUPS, help='run only this setup (repeatable)')
    args = parser.parse_args()
    tag = uuid.uuid4().hex[:8]
    store_url = f'{os.environ["OVERSPILL_TEST_S3_URL"].rstrip("/")}/openai-agents-bench-{tag}'
    queue = f'tool-output-limits-oa-bench-{tag}'
    with tempfile.TemporaryDirectory() as logs:
        worker = Process(
            'overspill-worker',
            [os.environ['OVERSPILL_BIN'], 'worker', '--store', store_url, '--task-queue', queue],
            {**os.environ, 'AWS_ALLOW_HTTP': 'true'},
            Path(logs),
        )
        try:
            worker.wait_for('overspill worker started')
            print(f'{args.calls:,} calls of {args.chars:,} chars; masking budget {args.budget:,} chars; '
                  f'External Storage from {args.threshold:,} B')
            print('\n| setup | end | tool calls | model calls | history | largest model request, chars '
                  '| chars sent to the model | wall |')
            print('|---|---|---:|---:|---:|---:|---:|---:|', flush=True)
            for setup in args.only or SETUPS:
                figures, model = await run(setup, args, store_url, queue)
                print(row(setup, figures, model), flush=True)
        finally:
            worker.stop()


if __name__ == '__main__':
    os.environ.setdefault('OPENAI_AGENTS_DISABLE_TRACING', '1')
    asyncio.run(main())
    os._exit(0)
