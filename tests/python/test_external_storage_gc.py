"""`overspill external-storage gc` on payloads temporalio's own `S3StorageDriver` stored.

Real pieces only: the Temporal dev server, SeaweedFS (a bucket of this module's own), a Python
worker and client with External Storage on, and the `overspill` binary. Three workflows store
payloads over the threshold: one is deleted through `DeleteWorkflowExecution`, one completes and
is retained, one keeps running. The gc must delete exactly the deleted run's objects, keep the
others' (the retained workflow still replays), count the same on a dry run, delete nothing when
Temporal is unreachable, and do the same on a schedule inside `overspill worker`, counted in its
Prometheus metrics.

Needs `TEMPORAL_ADDRESS`, the `AWS_*` variables and `OVERSPILL_BIN` (see `test_external_storage.py`).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support import Process
from temporalio import activity, workflow
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker

from overspill.pydantic_ai import external_storage

THRESHOLD = 1024
SUMMARY = re.compile(
    r'checked (\d+) run\(s\); (?:would delete|deleted) (\d+) object\(s\), (\d+) bytes; '
    r'kept (\d+) object\(s\), (\d+) bytes; (\d+) error\(s\)'
)


@activity.defn(name='gc_probe.make')
async def make(seed: str) -> str:
    """A result over the threshold: stored under the calling workflow's run."""
    return f'{seed}\n' * 200


@workflow.defn(name='GcProbe', sandboxed=False)
class GcProbe:
    """Takes an input over the threshold, stores an activity result and its own result; with
    `wait`, runs until signalled."""

    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self, text: str, wait: bool) -> str:
        made = await workflow.execute_activity(make, text[:40], start_to_close_timeout=timedelta(seconds=60))
        if wait:
            await workflow.wait_condition(lambda: self.done)
        return made + text

    @workflow.signal
    def finish(self) -> None:
        self.done = True


def _keys(s3: Any, bucket: str) -> dict[str, int]:
    """Every key in the bucket and its size."""
    out = {}
    for page in s3.get_paginator('list_objects_v2').paginate(Bucket=bucket):
        for item in page.get('Contents', []):
            out[item['Key']] = item['Size']
    return out


def _workflow_of(key: str) -> str | None:
    """The (decoded) workflow id a workflow-scoped key names."""
    parts = key.split('/')
    return urllib.parse.unquote(parts[parts.index('wi') + 1]) if 'wi' in parts else None


def _gc(bucket: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [os.environ['OVERSPILL_BIN'], 'external-storage', 'gc', '--external-storage', f's3://{bucket}']
    env = {**os.environ, 'AWS_ALLOW_HTTP': 'true', 'TEMPORAL_ADDRESS': os.environ['TEMPORAL_ADDRESS']}
    return subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=300)


def _summary(run: subprocess.CompletedProcess[str]) -> tuple[int, ...]:
    """(runs checked, deleted objects, bytes, kept objects, bytes, errors) from the summary line."""
    found = SUMMARY.search(run.stdout)
    assert found, f'no summary (exit {run.returncode}):\n{run.stdout}\n{run.stderr[-3000:]}'
    return tuple(int(n) for n in found.groups())


async def _delete(client: Client, handle: WorkflowHandle[Any, Any], run_id: str) -> None:
    """Delete the run through Temporal and wait (bounded) until it answers NotFound, for the run
    and for the workflow id."""
    execution = WorkflowExecution(workflow_id=handle.id, run_id=run_id)
    await client.workflow_service.delete_workflow_execution(
        DeleteWorkflowExecutionRequest(namespace=client.namespace, workflow_execution=execution)
    )
    deadline = time.monotonic() + 60
    for run in (run_id, None):
        while True:
            try:
                await client.get_workflow_handle(handle.id, run_id=run).describe()
            except RPCError as e:
                assert e.status == RPCStatusCode.NOT_FOUND, e
                break
            assert time.monotonic() < deadline, f'{handle.id} still described 60 s after its deletion'
            await asyncio.sleep(0.2)


@pytest.fixture
def bucket() -> Any:
    import boto3

    name = f'esgc-{os.getpid()}-{uuid.uuid4().hex[:8]}'
    s3 = boto3.client('s3', endpoint_url=os.environ['AWS_ENDPOINT_URL'], region_name='us-east-1')
    s3.create_bucket(Bucket=name)
    try:
        yield name, s3
    finally:
        for key in _keys(s3, name):
            s3.delete_object(Bucket=name, Key=key)
        s3.delete_bucket(Bucket=name)


def test_gc_deletes_exactly_the_deleted_runs_objects(bucket: tuple[str, Any], tmp_path: Path) -> None:
    name, s3 = bucket
    tag = uuid.uuid4().hex[:8]
    storage = external_storage(f's3://{name}', payload_size_threshold=THRESHOLD)
    converter = DataConverter(external_storage=storage)
    # Unscoped, namespace-scoped and standalone-activity objects, and a key of no known shape.
    hexes = [f'{i:064x}' for i in range(3)]
    unscoped = [
        f'v0/d/sha256/{hexes[0]}',
        f'v0/ns/default/d/sha256/{hexes[1]}',
        f'v0/ns/default/at/A/ai/a-1/ri/r-1/d/sha256/{hexes[2]}',
    ]
    for key in [*unscoped, 'v0/other/key']:
        s3.put_object(Bucket=name, Key=key, Body=b'x' * 10)

    async def main() -> None:
        client = await Client.connect(os.environ['TEMPORAL_ADDRESS'], data_converter=converter)
        queue = f'gc-probe-{tag}'
        async with Worker(
            client, task_queue=queue, workflows=[GcProbe], activities=[make],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            async def start(kind: str, wait: bool) -> WorkflowHandle[Any, Any]:
                text = f'{kind} {tag} ' + 'p' * 4000
                # A workflow id that needs percent-encoding in its keys.
                return await client.start_workflow(
                    GcProbe.run, args=[text, wait], id=f'gc {kind}/ü {tag}', task_queue=queue,
                    execution_timeout=timedelta(minutes=10),
                )

            deleted, retained, running = [
                await start('deleted', False), await start('retained', False), await start('running', True)
            ]
            await deleted.result()
            await retained.result()
            deleted_history = await deleted.fetch_history()
            # The running workflow has stored its activity's result.
            deadline = time.monotonic() + 120
            while not any(_workflow_of(k) == running.id and '/ri/null/' not in k for k in _keys(s3, name)):
                assert time.monotonic() < deadline, 'the running workflow stored nothing'
                await asyncio.sleep(0.2)
            await _delete(client, deleted, deleted.result_run_id or '')

            before = _keys(s3, name)
            doomed = {k: v for k, v in before.items() if _workflow_of(k) == deleted.id}
            by_workflow = {h.id: [k for k in before if _workflow_of(k) == h.id] for h in (deleted, retained, running)}
            assert len(doomed) == 3, f'input, activity result and result of the deleted run: {by_workflow}'
            assert len(by_workflow[retained.id]) == 3 and len(by_workflow[running.id]) == 2, by_workflow
            kept_bytes = sum(before.values()) - sum(doomed.values())

            # Temporal unreachable: nothing deleted, and it says why.
            unreachable = await asyncio.to_thread(_gc, name, '--older-than', '0s', '--address', '127.0.0.1:1')
            assert unreachable.returncode != 0 and 'refused the connection' in unreachable.stderr, unreachable.stderr
            assert _keys(s3, name) == before

            # The default --older-than (1 day) keeps the deleted run's objects: they are too young.
            young = await asyncio.to_thread(_gc, name)
            assert young.returncode == 0, young.stderr
            assert _summary(young) == (0, 0, 0, len(before), sum(before.values()), 0)
            assert _keys(s3, name) == before

            # A dry run deletes nothing and counts what the real run then deletes: four
            # questions (three workflow ids, then the deleted one's run).
            dry = await asyncio.to_thread(_gc, name, '--older-than', '0s', '--dry-run')
            real_counts = (4, len(doomed), sum(doomed.values()), len(before) - len(doomed), kept_bytes, 0)
            assert dry.returncode == 0 and _summary(dry) == real_counts, dry.stdout
            assert 'would delete' in dry.stdout and '(dry run)' in dry.stdout
            assert _keys(s3, name) == before

            real = await asyncio.to_thread(_gc, name, '--older-than', '0s')
            assert real.returncode == 0 and _summary(real) == real_counts, real.stdout + real.stderr
            after = _keys(s3, name)
            assert after == {k: v for k, v in before.items() if k not in doomed}
            print(f'\n$ overspill external-storage gc --older-than 0s --dry-run\n{dry.stdout}'
                  f'$ overspill external-storage gc --older-than 0s\n{real.stdout}')

            # The retained workflow still replays (its references resolve); the deleted one's
            # history, saved before, no longer does: replay needed exactly those objects.
            replayer = Replayer(workflows=[GcProbe], data_converter=converter,
                                workflow_runner=UnsandboxedWorkflowRunner())
            await replayer.replay_workflow(await retained.fetch_history())
            await replayer.replay_workflow(await running.fetch_history())
            with pytest.raises(Exception):
                await replayer.replay_workflow(deleted_history)
            # The replayer stored what it re-encoded under its own namespace, which Temporal does
            # not know (gc keeps such objects and counts an error): not this test's subject.
            for key in _keys(s3, name):
                if key.startswith('v0/ns/ReplayNamespace/'):
                    s3.delete_object(Bucket=name, Key=key)
            # The running one finishes with its stored input and activity result.
            await running.signal(GcProbe.finish)
            assert (await running.result()).startswith(f'running {tag}')

            # Unscoped objects go only with --unscoped-older-than; unknown keys never.
            unscoped_run = await asyncio.to_thread(_gc, name, '--older-than', '0s', '--unscoped-older-than', '0s')
            assert unscoped_run.returncode == 0, unscoped_run.stdout + unscoped_run.stderr
            assert _summary(unscoped_run)[1] == len(unscoped), unscoped_run.stdout
            left = _keys(s3, name)
            assert set(after) - set(left) == set(unscoped) and 'v0/other/key' in left

            # On a schedule inside the worker: the retained workflow, deleted now, goes at the
            # first pass, counted in the worker's metrics.
            retained_keys = set(by_workflow[retained.id])
            await _delete(client, retained, retained.result_run_id or '')
            worker = Process(
                'overspill-gc',
                [os.environ['OVERSPILL_BIN'], 'worker', '--task-queue', f'gc-{tag}', '--activities-only',
                 '--external-storage', f's3://{name}', '--external-storage-gc-every', '1h',
                 '--external-storage-gc-older-than', '0s', '--metrics', '127.0.0.1:0'],
                {**os.environ, 'AWS_ALLOW_HTTP': 'true'},
                tmp_path,
            )
            try:
                await asyncio.to_thread(worker.wait_for, 'external-storage gc:', 120)
                addr = re.search(r'addr=(127\.0\.0\.1:\d+)', worker.output())
                assert addr, worker.output()
                metrics = urllib.request.urlopen(f'http://{addr.group(1)}/metrics', timeout=10).read().decode()
            finally:
                worker.stop()
            assert not retained_keys & set(_keys(s3, name))
            deleted_count = re.search(r'^overspill_external_storage_gc_objects_deleted\S*\s+(\d+)', metrics, re.M)
            assert deleted_count and int(deleted_count.group(1)) == len(retained_keys), metrics
            assert re.search(r'^overspill_external_storage_gc_errors\S*\s+0\b', metrics, re.M), metrics

    asyncio.run(main())
