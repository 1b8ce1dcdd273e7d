"""A Google ADK or Strands agent on Temporal making many tool calls: what Overspill lets it do.

    source .deploy/seaweedfs.env; source .deploy/temporal.env
    cargo build -p overspill-cli
    OVERSPILL_BIN=target/debug/overspill .deploy/wheel-venv/bin/python benches/frameworks.py \\
        --framework google_adk [--calls 100 --chars 200000] [--setup without --setup with]
    ... --framework strands --calls 1000 --chars 20000 --setup long

The agents and their scripted models are the tests' (`tests/python/google_adk_support.py`,
`strands_support.py`): the model calls the `activity_as_tool` tool `fetch_page` `--calls`
times, each returning `--chars` chars, then answers; every model call is the integration's
activity, whose input is the whole conversation so far (Strands': twice). Each setup runs on
this process's worker (workflow, tool and model activities) against the Temporal server at
`TEMPORAL_ADDRESS`, with an `overspill worker` (`OVERSPILL_BIN`) on a bucket of this run's own
in the S3 of `OVERSPILL_TEST_S3_URL` (deleted at the end):

- `without`: the integration's docs' setup.
- `with`: Overspill at the source (`OverspillPlugin([fetch_page])` on the client: outputs over
  10,000 chars spilled in the tool's activity, a 1,000-char preview in the marker), its
  read-back tools and `OverspillMasking(budget=--budget)`.
- `long`: the documented long-run setup: `with`, and Temporal External Storage on the client
  (`overspill.external_storage`, the worker with `--external-storage`) for payloads of
  `--threshold` bytes or more, so the model calls' inputs go to the bucket.

Strands runs each tool cycle one recursion level deeper than the last, so one invocation of a
Strands agent ends in a RecursionError near 320 tool calls, whatever Overspill does: for longer
runs, `--turn-calls N` ends the agent's turn every N tool batches and invokes it again.

Prints a table: how each run ended (a run is stopped, and terminated, once a workflow task fails
over and over, as it does for a payload over 2 MiB; the server terminates one whose history
passes 50 MB), the tool and model calls made, the history's size as the server counts it, the
largest model request (bytes recorded in the history, a reference's where External Storage holds
it, and chars the model got), the chars sent to the model over the run (as the model received them: instructions,
messages, call arguments and outputs), the External Storage objects the run left in the bucket
(what `overspill external-storage gc` deletes once Temporal lets the run go) and the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests' / 'python'))

from agents_support import Framework, RunFigures, Stack, left_in_bucket, overspill_stack, run_agent, scratch_bucket  # noqa: E402
from overspill.external_storage import external_storage  # noqa: E402
from temporalio.converter import DataConverter  # noqa: E402
from temporalio.worker import UnsandboxedWorkflowRunner, Worker  # noqa: E402

SETUPS = ('without', 'with', 'long')

FRAMEWORKS = {'google_adk': 'google_adk_support', 'strands': 'strands_support'}
"""Each framework's test support module, whose `FRAMEWORK` the bench drives."""


async def run(setup: str, args: argparse.Namespace, framework: Framework, stack: Stack) -> tuple[RunFigures, list[int], int, int]:
    """One run of `setup`: its figures, the chars of each request the model got, and the
    External Storage objects (and bytes) it left in the bucket."""
    framework.model.requests.clear()
    converter = None
    if setup == 'long':
        converter = DataConverter(external_storage=external_storage(f's3://{stack.bucket}', payload_size_threshold=args.threshold))
    request = framework.request(f'fetch {args.calls} pages of {args.chars} chars')
    if args.turn_calls:
        request.turn_calls = args.turn_calls
    overspill = []
    if setup != 'without':
        overspill.append(framework.overspill(framework.activities, store=stack.store_url))
        request.overspill_queue, request.masking_budget = stack.queue, args.budget
    client = await framework.client(*overspill, data_converter=converter)
    agent_queue = f'{framework.name}-bench-{uuid.uuid4()}'
    async with Worker(
        client, task_queue=agent_queue, workflows=[framework.agent], activities=framework.activities,
        workflow_runner=UnsandboxedWorkflowRunner(), max_cached_workflows=10,
    ):
        figures, _ = await run_agent(
            client, framework.agent.run, request, task_queue=agent_queue, timeout=args.timeout, measure=framework.measure
        )
    objects, size = left_in_bucket(stack.bucket)
    return figures, list(framework.model.requests), objects, size


def row(setup: str, figures: RunFigures, requests: list[int], objects: int, size: int) -> str:
    end = figures.status
    if end == 'completed' and figures.result != f'fetched {figures.tool_calls} pages':
        end = f'completed, answering {str(figures.result)[:60]!r}'
    if 'history size exceeds' in end.lower() or 'history size limit' in end.lower():
        end = 'terminated at the 50 MB history limit'
    elif end == 'stuck':
        end = f'stuck at call {figures.tool_calls + 1} ({figures.failure.split("]")[0]}])'
    largest = f'{figures.largest_model_input:,} B, {max(requests, default=0):,} chars'
    return (
        f'| {setup} | {end} | {figures.tool_calls:,} | {figures.model_calls:,} | {figures.history_bytes:,} B '
        f'| {largest} | {sum(requests):,} | {objects:,} objects, {size / 1e6:,.1f} MB | {figures.seconds:,.0f} s |'
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--framework', choices=FRAMEWORKS, required=True)
    parser.add_argument('--calls', type=int, default=100, help='tool calls the model makes')
    parser.add_argument('--chars', type=int, default=200_000, help='chars each call returns')
    parser.add_argument('--budget', type=int, default=100_000, help="OverspillMasking's budget, chars")
    parser.add_argument('--threshold', type=int, default=32 * 1024, help='External Storage threshold, bytes')
    parser.add_argument('--timeout', type=float, default=3_600, help='seconds a run may take')
    parser.add_argument('--setup', action='append', choices=SETUPS, help='run only this setup (repeatable)')
    parser.add_argument('--turn-calls', type=int, default=0, help="Strands: end the agent's turn every N tool batches")
    args = parser.parse_args()
    framework: Framework = importlib.import_module(FRAMEWORKS[args.framework]).FRAMEWORK
    with scratch_bucket('frameworks-bench') as bucket, tempfile.TemporaryDirectory() as logs, overspill_stack(
        Path(logs), f'{framework.name}-bench', base_url=f's3://{bucket}', args=['--external-storage', f's3://{bucket}']
    ) as stack:
        print(f'{args.framework}: {args.calls:,} calls of {args.chars:,} chars; masking budget {args.budget:,} chars; '
              f'External Storage (long) from {args.threshold:,} B')
        print('\n| setup | end | tool calls | model calls | history | largest model request | chars sent to the model '
              '| External Storage left | wall |')
        print('|---|---|---:|---:|---:|---:|---:|---:|---:|', flush=True)
        for setup in args.setup or SETUPS:
            print(row(setup, *await run(setup, args, framework, stack)), flush=True)


if __name__ == '__main__':
    asyncio.run(main())
    os._exit(0)
