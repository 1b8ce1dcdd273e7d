"""A plain Python workflow (`temporalio`, no pydantic-ai) calls every Overspill activity by name.

Inputs are what Python sends by default: dicts and dataclasses as `json/plain` with snake_case
fields, and protobuf messages as `json/protobuf` with `messageType` (the message classes are built
here from a descriptor equivalent to `proto/overspill/v1/activities.proto`'s read messages). The
workflow also starts the Rust `ReduceToolOutput` workflow as a child, by name. The activities run in an `overspill worker` process (`OVERSPILL_BIN`) on its own task
queue; the workflow runs in this process. Needs `TEMPORAL_ADDRESS` (from `.deploy/temporal.env`).
`tests/integration/pydantic_ai.rs` runs every file in this directory under `cargo test`.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, symbol_database
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker


def _read_messages() -> tuple[type, type]:
    """`overspill.v1.ReadToolResultRequest` / `ReadToolResultResponse`, registered in the default
    pool so that Temporal's converter finds the reply's `messageType`."""
    pool = descriptor_pool.Default()
    try:
        request = pool.FindMessageTypeByName('overspill.v1.ReadToolResultRequest')
    except KeyError:
        F = descriptor_pb2.FieldDescriptorProto
        file = descriptor_pb2.FileDescriptorProto(
            name='overspill/v1/read_subset.proto', package='overspill.v1', syntax='proto3'
        )
        req = file.message_type.add(name='ReadToolResultRequest')
        for number, (name, kind, json_name) in enumerate(
            [
                ('handle', F.TYPE_STRING, 'handle'),
                ('offset', F.TYPE_INT64, 'offset'),
                ('limit', F.TYPE_INT64, 'limit'),
                ('from_end', F.TYPE_BOOL, 'fromEnd'),
                ('pattern', F.TYPE_STRING, 'pattern'),
            ],
            start=1,
        ):
            req.field.add(name=name, number=number, type=kind, label=F.LABEL_OPTIONAL, json_name=json_name)
        resp = file.message_type.add(name='ReadToolResultResponse')
        resp.field.add(name='text', number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name='text')
        pool.Add(file)
        request = pool.FindMessageTypeByName('overspill.v1.ReadToolResultRequest')
    response = pool.FindMessageTypeByName('overspill.v1.ReadToolResultResponse')
    classes = message_factory.GetMessageClass(request), message_factory.GetMessageClass(response)
    for cls in classes:
        symbol_database.Default().RegisterMessage(cls)
    return classes


ReadRequestPb, ReadResponsePb = _read_messages()


@dataclass
class ReadArgs:
    """`read_tool_result`'s arguments, as a dataclass."""

    handle: str
    offset: int = 0
    limit: int = 200
    from_end: bool = False
    pattern: str | None = None


def _failure(err: ActivityError) -> dict[str, Any]:
    cause = err.cause
    assert isinstance(cause, ApplicationError), repr(cause)
    return {'type': cause.type, 'non_retryable': cause.non_retryable, 'message': cause.message}


@workflow.defn(name='OverspillPythonProbe')
class PythonProbe:
    """Calls `tool_output_limits.*` by name on the queue it is given."""

    @workflow.run
    async def run(self, queue: str) -> dict[str, Any]:
        opts: dict[str, Any] = {
            'task_queue': queue,
            'start_to_close_timeout': timedelta(seconds=30),
            'schedule_to_close_timeout': timedelta(seconds=60),
            'retry_policy': RetryPolicy(maximum_attempts=3),
        }
        text = ''.join(f'line {i:05}\n' for i in range(2_000))
        out: dict[str, Any] = {}
        out['reduce'] = await workflow.execute_activity(
            'tool_output_limits.reduce',
            {'tool_name': 'cat', 'tool_call_id': 'call-1', 'output': {'text': text}},
            **opts,
        )
        handle = out['reduce']['metadata']['overflow_handle']
        out['read'] = await workflow.execute_activity(
            'tool_output_limits.read_tool_result', ReadArgs(handle=handle, offset=1, limit=2), **opts
        )
        page = await workflow.execute_activity(
            'tool_output_limits.read_tool_result',
            ReadRequestPb(handle=handle, offset=3, limit=1),
            result_type=ReadResponsePb,
            **opts,
        )
        out['read_protobuf'] = page.text
        out['child'] = await workflow.execute_child_workflow(
            'ReduceToolOutput',
            {'tool_name': 'cat', 'tool_call_id': 'child-call', 'output': {'text': text}},
            task_queue=queue,
            id=f'{workflow.info().workflow_id}-child',
            execution_timeout=timedelta(seconds=60),
        )
        out['spill'] = await workflow.execute_activity(
            'tool_output_limits.spill',
            {'run_id': 'py-run', 'tool_call_id': 'call-2', 'output': {'json': {'rows': [1, 2, 3]}}},
            **opts,
        )
        for name, activity, arg in [
            ('summarize', 'tool_output_limits.summarize', {'tool_name': 'cat', 'output': 'hello'}),
            (
                'bad_config',
                'tool_output_limits.reduce',
                {
                    'tool_name': 'cat',
                    'output': {'text': 'x'},
                    'config': {'bands': [{'over': -5, 'action': {'type': 'truncate'}}]},
                },
            ),
            ('bad_offset', 'tool_output_limits.read_tool_result', ReadArgs(handle=handle, offset=-1)),
        ]:
            try:
                await workflow.execute_activity(activity, arg, **opts)
                out[name] = 'succeeded'
            except ActivityError as err:
                out[name] = _failure(err)
        out['run_id'] = workflow.info().run_id
        return out


@pytest.fixture
def overspill_queue(tmp_path: Path):
    queue = f'py-acts-{uuid.uuid4().hex[:8]}'
    proc = subprocess.Popen(
        [os.environ['OVERSPILL_BIN'], 'worker', '--task-queue', queue, '--store', f'file://{tmp_path}'],
        env={**os.environ, 'RUST_LOG': 'warn'},
    )
    try:
        yield queue
    finally:
        proc.kill()
        proc.wait()


def test_python_workflow_calls_every_activity_by_name(overspill_queue: str) -> None:
    async def main() -> dict[str, Any]:
        client = await Client.connect(os.environ['TEMPORAL_ADDRESS'])
        own_queue = f'py-probe-{uuid.uuid4().hex[:8]}'
        async with Worker(
            client, task_queue=own_queue, workflows=[PythonProbe], workflow_runner=UnsandboxedWorkflowRunner()
        ):
            return await client.execute_workflow(
                PythonProbe.run,
                overspill_queue,
                id=f'py-probe-{uuid.uuid4()}',
                task_queue=own_queue,
                execution_timeout=timedelta(seconds=120),
            )

    out = asyncio.run(main())
    run_id = out['run_id']
    assert out['reduce']['kind'] == 'spilled'
    assert out['reduce']['metadata'] == {'overflow_handle': f'{run_id}/call-1.0', 'overflow_bytes': 22_000}
    assert out['reduce']['return_value']['text'].startswith(
        f"[Tool output too large (22,000 chars); stored to handle '{run_id}/call-1.0'."
    )
    assert out['read'] == f"[handle '{run_id}/call-1.0': 2,000 matching line(s); showing 2]\nline 00001\nline 00002"
    assert out['read_protobuf'] == f"[handle '{run_id}/call-1.0': 2,000 matching line(s); showing 1]\nline 00003"
    assert out['child']['kind'] == 'spilled'
    # No run_id: the child keys the spill by its parent's run id, like an activity call would.
    assert out['child']['metadata']['overflow_handle'] == f'{run_id}/child-call.0'
    assert out['spill']['handle'] == 'py-run/call-2.0'
    assert out['spill']['shape'] == "{'rows': list}"
    assert out['summarize']['type'] == 'ModelRejected' and out['summarize']['non_retryable']
    assert out['bad_config']['type'] == 'InvalidConfig' and out['bad_config']['non_retryable']
    assert 'config.bands[0].over' in out['bad_config']['message']
    assert out['bad_offset'] == {'type': 'ModelRetry', 'non_retryable': True, 'message': '`offset` must be >= 0.'}
