"""A pydantic-ai agent on Temporal making many tool calls: the long-run setup, measured.

    source .deploy/seaweedfs.env; source .deploy/temporal.env
    cargo build -p overspill-cli
    OVERSPILL_BIN=target/debug/overspill .deploy/wheel-venv/bin/python benches/pydantic_ai_long.py \\
        [--calls 1000 --chars 20000] [--setup masking --setup long]

The agent is the tests' (`tests/python/openai_agents_support.py`, `pydantic_agent`): pydantic-ai's
`TemporalDurability` with pydantic-ai-harness's `ToolOutputLimits(store=OverspillStore(...))`,
`OverspillInterceptor(limits)` on its worker (outputs over 10,000 chars spilled in the tool's
activity, a 1,000-char preview) and a scripted `FunctionModel` that calls `fetch_page` `--calls`
times, `--chars` chars each, then answers. Every model call is the integration's
`…__model_request` activity, whose input is every message so far. Setups, on this process's worker
and an `overspill worker` (`OVERSPILL_BIN`) on a bucket of this run's own (deleted at the end):

- `masking`: at the source, and `ProcessHistory(OverspillMasking(store, budget=--budget))`.
- `long`: the documented long-run setup: `masking`, and Temporal External Storage on the client
  (`overspill.external_storage`, the worker with `--external-storage`) for payloads of
  `--threshold` bytes or more, so the model calls' inputs go to the bucket.

Prints a table: how each run ended, the tool and model calls, the history's size as the server
counts it, the largest recorded model-call input, the chars of model-visible text sent over the
run, the External Storage objects it left in the bucket and the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests' / 'python'))

from agents_support import left_in_bucket, overspill_stack, scratch_bucket  # noqa: E402
from openai_agents_support import AgentRequest, pydantic_agent, run_agent  # noqa: E402
from overspill.external_storage import external_storage  # noqa: E402
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.converter import DataConverter  # noqa: E402
from temporalio.worker import UnsandboxedWorkflowRunner, Worker  # noqa: E402

SETUPS = ('masking', 'long')


async def run(setup: str, args: argparse.Namespace, store_url: str, queue: str, bucket: str) -> str:
    """One run of `setup`, as a table row."""
    tag = uuid.uuid4().hex[:8]
    workflow_class, _, interceptor = pydantic_agent(f'crawler_{tag}', store_url, queue, masking_budget=args.budget)
    converter = None
    if setup == 'long':
        converter = DataConverter(external_storage=external_storage(f's3://{bucket}', payload_size_threshold=args.threshold))
    client = await Client.connect(
        os.environ['TEMPORAL_ADDRESS'], plugins=[PydanticAIPlugin()], **({'data_converter': converter} if converter else {})
    )
    task_queue = f'pa-bench-{tag}'
    prompt = f'fetch {args.calls} pages of {args.chars} chars'
    async with Worker(
        client, task_queue=task_queue, workflows=[workflow_class], interceptors=[interceptor],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        f, _ = await run_agent(
            client, workflow_class.run, AgentRequest(prompt, max_turns=args.calls + 10), task_queue=task_queue,
            timeout=args.timeout,
        )
    objects, size = left_in_bucket(bucket)
    end = f'{f.status} ({f.failure[:100]})' if f.status == 'stuck' else f.status[:100]
    return (
        f'| {setup} | {end} | {f.tool_calls:,} | {f.model_calls:,} | {f.history_bytes:,} B | {f.largest_model_input:,} B '
        f'| {f.total_model_chars:,} | {objects:,} objects, {size / 1e6:.1f} MB | {f.seconds:.0f} s |'
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--calls', type=int, default=1_000, help='tool calls the model makes')
    parser.add_argument('--chars', type=int, default=20_000, help='chars each call returns')
    parser.add_argument('--budget', type=int, default=100_000, help="OverspillMasking's budget, chars")
    parser.add_argument('--threshold', type=int, default=32 * 1024, help='External Storage threshold, bytes')
    parser.add_argument('--timeout', type=float, default=3_600, help='seconds a run may take')
    parser.add_argument('--setup', action='append', choices=SETUPS, help='run only this setup (repeatable)')
    args = parser.parse_args()
    with scratch_bucket('pydantic-bench') as bucket, tempfile.TemporaryDirectory() as logs, overspill_stack(
        Path(logs), 'pydantic-bench', base_url=f's3://{bucket}', args=['--external-storage', f's3://{bucket}']
    ) as stack:
        print(f'pydantic-ai: {args.calls:,} calls of {args.chars:,} chars; masking budget {args.budget:,} chars; '
              f'External Storage (long) from {args.threshold:,} B')
        print('\n| setup | end | tool calls | model calls | history | largest model request | chars sent to the model '
              '| External Storage left | wall |')
        print('|---|---|---:|---:|---:|---:|---:|---:|---:|', flush=True)
        for setup in args.setup or SETUPS:
            print(await run(setup, args, stack.store_url, stack.queue, bucket), flush=True)


if __name__ == '__main__':
    asyncio.run(main())
    os._exit(0)
