"""External Storage throughput: a 10 MB tool output through External Storage against a 1.5 MB
output inline (the largest that fits under Temporal's 2 MB payload limit), in one run.

    export TEMPORAL_PORT=… SEAWEEDFS_S3_PORT=…   # your stack's ports, if not the defaults
    deploy/seaweedfs.sh start && deploy/temporal.sh start
    source .deploy/seaweedfs.env && source .deploy/temporal*.env
    cargo build --release --bin overspill
    .deploy/venv/bin/python benches/external_storage.py [--calls 10]

A Python workflow calls `tool_output_limits.reduce` (the default bands: spill) `--calls` times in
a row, once through a client with temporalio's ExternalStorage (10 MB, offloaded) and once through
a plain client (1.5 MB, inline), each against a fresh `overspill worker` (`OVERSPILL_BIN`, default
the release build) with `--external-storage` on a bucket of its own. Prints, per case, the median
activity time (scheduled → completed, the server's clock), the end-to-end time per call (the
workflow's wall time over the calls, the Python side's offloading included), the payload rate,
and the worker's CPU time per call and peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'workflows' / 'python' / 'src'))

from overspill.pydantic_ai import external_storage  # noqa: E402
from temporalio import workflow  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.converter import DataConverter  # noqa: E402
from temporalio.worker import UnsandboxedWorkflowRunner, Worker  # noqa: E402

MB = 1_000_000
LINE = 'x' * 99 + '\n'


@workflow.defn(name='OverspillExternalStorageBench', sandboxed=False)
class Bench:
    """`calls` sequential reduce calls of a `size`-byte output, each with its own call id."""

    @workflow.run
    async def run(self, queue: str, size: int, calls: int) -> int:
        for i in range(calls):
            text = f'{i:08}\n' + LINE * (size // len(LINE))
            await workflow.execute_activity(
                'tool_output_limits.reduce',
                {'tool_name': 'cat', 'tool_call_id': f'bench-{i}', 'output': {'text': text}},
                task_queue=queue,
                start_to_close_timeout=timedelta(minutes=5),
            )
        return calls


def worker_usage(pid: int) -> tuple[float, int]:
    """CPU seconds (user + system) and peak RSS in bytes of process `pid`."""
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    status = Path(f'/proc/{pid}/status').read_text()
    hwm = next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith('VmHWM:'))
    return cpu, hwm


async def activity_millis(client: Client, workflow_id: str) -> list[float]:
    """Scheduled → completed of each activity in the workflow's history, in ms."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    scheduled: dict[int, float] = {}
    out = []
    for event in history.events:
        at = event.event_time.ToNanoseconds() / 1e6
        if event.HasField('activity_task_scheduled_event_attributes'):
            scheduled[event.event_id] = at
        elif event.HasField('activity_task_completed_event_attributes'):
            out.append(at - scheduled[event.activity_task_completed_event_attributes.scheduled_event_id])
    return out


async def run_case(bucket: str, binary: str, size: int, calls: int, external: bool) -> dict[str, Any]:
    queue = f'es-bench-{uuid.uuid4().hex[:8]}'
    log = tempfile.NamedTemporaryFile(prefix='es-bench-', suffix='.log', delete=False)
    worker = subprocess.Popen(
        [binary, 'worker', '--store', f's3://{bucket}/spills', '--external-storage', f's3://{bucket}',
         '--task-queue', queue],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, 'AWS_ALLOW_HTTP': 'true', 'RUST_LOG': 'warn'},
    )
    try:
        converter = DataConverter(external_storage=external_storage(f's3://{bucket}')) if external else None
        client = await Client.connect(
            os.environ['TEMPORAL_ADDRESS'], **({'data_converter': converter} if converter else {})
        )
        own_queue = f'{queue}-wf'
        async with Worker(client, task_queue=own_queue, workflows=[Bench], workflow_runner=UnsandboxedWorkflowRunner()):
            # One warm-up call, then the measured run.
            await client.execute_workflow(Bench.run, args=[queue, size, 1], id=f'{own_queue}-warm', task_queue=own_queue)
            cpu_before, _ = worker_usage(worker.pid)
            started = time.perf_counter()
            workflow_id = f'{own_queue}-run'
            await client.execute_workflow(Bench.run, args=[queue, size, calls], id=workflow_id, task_queue=own_queue)
            wall = time.perf_counter() - started
            cpu_after, peak = worker_usage(worker.pid)
            millis = await activity_millis(client, workflow_id)
    finally:
        worker.terminate()
        worker.wait(30)
        log.close()
        os.unlink(log.name)
    per_call = wall / calls * 1e3
    return {
        'case': f'{size / MB:g} MB {"through External Storage" if external else "inline"}',
        'activity_ms': statistics.median(millis),
        'call_ms': per_call,
        'mb_per_s': size / MB / (per_call / 1e3),
        'cpu_ms': (cpu_after - cpu_before) / calls * 1e3,
        'peak_mib': peak / 2**20,
    }


def drop_bucket(s3: Any, bucket: str) -> None:
    for page in s3.get_paginator('list_objects_v2').paginate(Bucket=bucket):
        for item in page.get('Contents', []):
            s3.delete_object(Bucket=bucket, Key=item['Key'])
    s3.delete_bucket(Bucket=bucket)


async def main(calls: int, binary: str) -> None:
    import boto3

    s3 = boto3.client('s3', endpoint_url=os.environ['AWS_ENDPOINT_URL'], region_name='us-east-1')
    bucket = f'es-bench-{uuid.uuid4().hex[:8]}'
    s3.create_bucket(Bucket=bucket)
    try:
        rows = [
            await run_case(bucket, binary, 10 * MB, calls, external=True),
            await run_case(bucket, binary, 1_500_000, calls, external=False),
        ]
    finally:
        drop_bucket(s3, bucket)
    print(f'\n{calls} sequential reduce calls (spill) per case, {binary}\n')
    print('| case | activity ms (median) | end-to-end ms per call | MB/s | worker CPU ms per call | worker peak RSS MiB |')
    print('|---|---:|---:|---:|---:|---:|')
    for r in rows:
        print(
            f"| {r['case']} | {r['activity_ms']:.0f} | {r['call_ms']:.0f} | {r['mb_per_s']:.1f} | "
            f"{r['cpu_ms']:.0f} | {r['peak_mib']:.0f} |"
        )
    es, inline = rows
    print(
        f"\n10 MB through External Storage: {es['call_ms'] / inline['call_ms']:.2f}× the time per call of 1.5 MB "
        f"inline for {10 / 1.5:.1f}× the bytes ({es['mb_per_s'] / inline['mb_per_s']:.2f}× the rate)"
    )


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--calls', type=int, default=10)
    parser.add_argument('--bin', default=os.environ.get('OVERSPILL_BIN', str(ROOT / 'target' / 'release' / 'overspill')))
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.bin))
