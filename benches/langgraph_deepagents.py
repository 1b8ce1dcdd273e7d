"""LangGraph and Deep Agents agents on Temporal making many tool calls: what Overspill lets them do.

    source .deploy/seaweedfs.env; source .deploy/temporal.env
    cargo build -p overspill-cli
    OVERSPILL_BIN=target/debug/overspill /usr/bin/time -f '%e s, %M KB' \\
        .deploy/wheel-venv/bin/python benches/langgraph_deepagents.py [--framework langgraph] [--table side-by-side]

The agents and their scripted model are the tests' (`tests/python/langchain_support.py`): the
model calls `fetch_page` `--calls` times, one call a turn, each returning `--chars` chars, then
answers. LangGraph: the crawl graph (a model node run as an activity, whose input is the whole
state; a workflow-side `ToolNode` whose `activity_tool`s each run their activity). Deep Agents:
`create_deep_agent` with `fetch_page` as a `tool_as_activity` tool (activity
`deepagents.invoke_tool`); every model call is `deepagents.invoke_model`, whose input is the
whole conversation. Each run uses this process's worker against the Temporal server at
`TEMPORAL_ADDRESS`, with an `overspill worker` (`OVERSPILL_BIN`) on a store under
`OVERSPILL_TEST_S3_URL` for the read-back tools and masking spills. Two tables:

- `side-by-side`: 100 calls of 200,000 chars, without Overspill (the integration's docs' setup)
  and with it: `OverspillPlugin` (outputs over 10,000 chars spilled in the tool's activity, a
  1,000-char preview in the marker), `overspill_tools()` and `OverspillMasking(budget=100_000)`.
- `long-run`: 1,000 calls of 20,000 chars with the documented long-run setup: the same, and
  Temporal External Storage on the client for payloads of 32 KiB or more (the model calls'
  inputs), in the bucket of `OVERSPILL_TEST_S3_URL`; the bucket bytes the run left (its
  workflow's prefix: what `overspill external-storage gc` deletes once Temporal lets the run go).

Each row: how the run ended (a run is stopped, and terminated, once a workflow task fails over
and over, as it does for a payload over 2 MiB; the server terminates one whose history passes
50 MB), the tool and model calls completed, the history's size as the server counts it, the
largest model-call input recorded (bytes; a reference under External Storage), the chars of
model-visible text the model was sent over the run, the bucket bytes, and the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests' / 'python'))

from agents_support import RunFigures, Stack, overspill_stack  # noqa: E402
from langchain_support import (  # noqa: E402
    DeepCrawl,
    DeepRequest,
    GraphCrawl,
    GraphSetup,
    crawl_graph,
    deep_agents_plugin,
    fetch_page,
    fetch_records,
    fetch_spec,
    run_agent,
)
from overspill import deepagents as overspill_deepagents  # noqa: E402
from overspill import langgraph as overspill_langgraph  # noqa: E402
from overspill.external_storage import default_s3_client, external_storage  # noqa: E402
from support import bucket_of  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.converter import DataConverter  # noqa: E402
from temporalio.langgraph import LangGraphPlugin  # noqa: E402
from temporalio.worker import UnsandboxedWorkflowRunner, Worker  # noqa: E402

FRAMEWORKS = ('langgraph', 'deepagents')


@dataclass(frozen=True)
class Setup:
    """One row: how many calls of how many chars, and how much of Overspill."""

    name: str
    calls: int
    chars: int
    overspill: bool
    external_storage: bool = False


TABLES = {
    'side-by-side': (Setup('without Overspill', 100, 200_000, False), Setup('with Overspill', 100, 200_000, True)),
    'long-run': (Setup('at the source + masking + External Storage', 1_000, 20_000, True, True),),
}


async def run(framework: str, setup: Setup, stack: Stack, args: argparse.Namespace) -> tuple[RunFigures, int]:
    """One run: its figures, and the bucket bytes External Storage left for it."""
    converter = DataConverter.default
    bucket = bucket_of(os.environ['OVERSPILL_TEST_S3_URL'])
    if setup.external_storage:
        converter = DataConverter(external_storage=external_storage(f's3://{bucket}', payload_size_threshold=args.threshold))
    prompt = f'fetch {setup.calls} pages of {setup.chars} chars'
    queue = stack.queue if setup.overspill else ''
    budget = args.budget if setup.overspill else None
    agent_queue = f'{framework}-bench-{uuid.uuid4()}'
    if framework == 'langgraph':
        client = await Client.connect(os.environ['TEMPORAL_ADDRESS'], data_converter=converter)
        plugins: list[Any] = [LangGraphPlugin(graphs={'crawl': crawl_graph(GraphSetup(overspill_queue=queue, masking_budget=budget))})]
        if setup.overspill:
            plugins.append(overspill_langgraph.OverspillPlugin([fetch_page, fetch_records], store=stack.store_url))
        workflow, arg, model, activities = GraphCrawl, prompt, 'crawl.agent', [fetch_page, fetch_records]
    else:
        client = await Client.connect(os.environ['TEMPORAL_ADDRESS'], data_converter=converter, plugins=[deep_agents_plugin()])
        plugins = [overspill_deepagents.OverspillPlugin([fetch_spec], store=stack.store_url)] if setup.overspill else []
        workflow, arg, model, activities = DeepCrawl, DeepRequest(prompt, queue, budget), 'deepagents.invoke_model', [fetch_spec]
    async with Worker(
        client, task_queue=agent_queue, workflows=[workflow], activities=activities, plugins=plugins,
        workflow_runner=UnsandboxedWorkflowRunner(), max_cached_workflows=10,
    ):
        figures, history = await run_agent(client, workflow.run, arg, task_queue=agent_queue, timeout=args.timeout, model=model)
    started = history.events[0].workflow_execution_started_event_attributes
    prefix = f'v0/ns/default/wt/{started.workflow_type.name}/wi/{history.workflow_id}/'
    s3 = default_s3_client(os.environ['OVERSPILL_TEST_S3_URL'])
    stored = sum(o['Size'] for page in s3.get_paginator('list_objects_v2').paginate(Bucket=bucket, Prefix=prefix) for o in page.get('Contents', []))
    return figures, stored


def row(framework: str, setup: Setup, figures: RunFigures, stored: int) -> str:
    end = figures.status
    if 'history size' in end.lower():
        end = 'terminated at the 50 MB history limit'
    elif end == 'stuck':
        end = f'stuck at call {figures.tool_calls + 1} ({figures.failure.split("]")[0][:80]}…)'
    return (
        f'| {framework} | {setup.name} | {end} | {figures.tool_calls:,} | {figures.model_calls:,} | {figures.history_bytes:,} B '
        f'| {figures.largest_model_input:,} B | {figures.total_model_chars:,} | {stored:,} B | {figures.seconds:,.0f} s |'
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--framework', action='append', choices=FRAMEWORKS, help='run only this framework (repeatable)')
    parser.add_argument('--table', action='append', choices=tuple(TABLES), help='run only this table (repeatable)')
    parser.add_argument('--budget', type=int, default=100_000, help="OverspillMasking's budget, chars")
    parser.add_argument('--threshold', type=int, default=32 * 1024, help='External Storage threshold, bytes')
    parser.add_argument('--timeout', type=float, default=3_600, help='seconds a run may take')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as logs, overspill_stack(Path(logs), 'langchain-bench') as stack:
        for table in args.table or TABLES:
            print(f'\n{table}: masking budget {args.budget:,} chars; External Storage from {args.threshold:,} B\n')
            print('| framework | setup | end | tool calls | model calls | history | largest model request '
                  '| chars sent to the model | bucket | wall |')
            print('|---|---|---|---:|---:|---:|---:|---:|---:|---:|', flush=True)
            for framework in args.framework or FRAMEWORKS:
                for setup in TABLES[table]:
                    figures, stored = await run(framework, setup, stack, args)
                    print(row(framework, setup, figures, stored), flush=True)


if __name__ == '__main__':
    asyncio.run(main())
    os._exit(0)
