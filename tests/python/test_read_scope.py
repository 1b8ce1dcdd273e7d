"""Reads scoped to the workflow that wrote the spill, through the Python package on Temporal.

Real pieces: the Temporal dev server (`TEMPORAL_ADDRESS`), SeaweedFS (`OVERSPILL_TEST_S3_URL`, the
`AWS_*` variables) and a local directory as stores, and the `overspill worker` binary
(`OVERSPILL_BIN`), which stores the spills that workflow code writes through
`tool_output_limits.spill` and records their workflow. The reads under test are the package's
own, inside an activity of a workflow (where the harness runs `read_tool_result`): the harness's
`read_tool_result` page over `OverspillStore.read`, `OverspillToolset`'s `grep_tool_result` and
`query_tool_result` outside workflow code, and `list_tool_results`' listing. A workflow reads its
own spills, a continue-as-new run its earlier run's; another workflow's reads of them are what a
missing handle gives; a spill `OverspillStore.write` puts into the store from an activity records
its workflow too; the recorded histories replay.
"""

from __future__ import annotations

from pathlib import Path

import asyncio
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from support import Process, stack_env
from temporalio import activity, workflow

REQUIRED = ('TEMPORAL_ADDRESS', 'OVERSPILL_TEST_S3_URL', 'AWS_ENDPOINT_URL', 'OVERSPILL_BIN')
TIMEOUT = timedelta(seconds=120)


@dataclass
class Scoped:
    """The Overspill worker of one store, and the queues the tests use with it."""

    store_url: str
    overspill_queue: str
    queue: str


@pytest.fixture(scope='module', params=['s3', 'file'])
def scoped(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scoped]:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    assert not missing, f'the read scope tests need {missing} (tests/integration/pydantic_ai.rs sets them)'
    tag = f'{os.getpid()}-{uuid.uuid4().hex[:8]}'
    if request.param == 's3':
        store_url = f'{os.environ["OVERSPILL_TEST_S3_URL"].rstrip("/")}/scope-{tag}'
    else:
        store_url = (tmp_path_factory.mktemp('scope') / 'spills').as_uri()
    env = stack_env(store_url, f'scope-{tag}', 'http://127.0.0.1:9/v1')
    log_dir = tmp_path_factory.mktemp('scope-logs')
    overspill = Process(
        f'overspill-worker-{request.param}',
        [os.environ['OVERSPILL_BIN'], 'worker', '--store', store_url, '--task-queue', env['OVERSPILL_TASK_QUEUE']],
        env,
        log_dir,
    )
    os.environ['AWS_ALLOW_HTTP'] = 'true'  # for `overspill query`, which the toolset runs
    try:
        overspill.wait_for('overspill worker started')
        yield Scoped(store_url, env['OVERSPILL_TASK_QUEUE'], f'scope-py-{tag}')
    finally:
        overspill.stop()
        print(f'\n--- overspill worker log (tail) ---\n{overspill.output()[-3000:]}')


# --- what the workflows run ---------------------------------------------------------------------


@activity.defn(name='scope_test.reads')
async def reads(url: str, handle: str, json_handle: str, run_id: str, read_scope: str) -> dict[str, Any]:
    """Every read-back of the package, from inside this activity (as the harness runs them)."""
    from types import SimpleNamespace

    from overspill.pydantic_ai import OverspillStore, OverspillToolset
    from pydantic_ai import ModelRetry
    from support import harness_read

    store = OverspillStore(url, read_scope=read_scope)
    toolset = OverspillToolset(store)
    out: dict[str, Any] = {}
    try:
        out['read'] = (await store.read(handle)).decode()
    except FileNotFoundError as error:
        out['read'] = f'FileNotFoundError: {error}'
    out['page'] = await harness_read(store, handle, limit=2)
    out['page_pattern'] = await harness_read(store, handle, limit=5, pattern='line 0001')
    out['grep'] = await toolset.grep_tool_result(None, handle, 'line 000[12]', regex=True)  # type: ignore[arg-type]
    try:
        query = toolset.query_tool_result(None, json_handle, '.n | select(. < 2)')  # type: ignore[arg-type]
        out['query'] = await query
    except ModelRetry as error:
        out['query'] = f'ModelRetry: {error}'
    out['list'] = await toolset.list_tool_results(SimpleNamespace(run_id=run_id, messages=[]), 10)  # type: ignore[arg-type]
    return out


@activity.defn(name='scope_test.write')
async def write_directly(url: str, key: str, text: str) -> str:
    """`OverspillStore.write` outside workflow code: straight into the store."""
    from overspill.pydantic_ai import OverspillStore

    return await OverspillStore(url).write(key, text.encode())


@dataclass
class Plan:
    url: str
    overspill_queue: str
    writes: list[tuple[str, str]]
    """(key, text) pairs workflow code spills through the Overspill worker."""
    direct_writes: list[tuple[str, str]]
    """(key, text) pairs an activity writes into the store directly."""
    handle: str
    json_handle: str
    run_id: str
    continue_as_new: bool = False
    read_scope: str = 'workflow'


@workflow.defn(sandboxed=False, name='ScopeTestWorkflow')
class ScopeWorkflow:
    """Writes `plan.writes` and `plan.direct_writes`, then reads; with `continue_as_new`, the
    reads happen in the next run."""

    @workflow.run
    async def run(self, plan: Plan) -> dict[str, Any]:
        from overspill.pydantic_ai import OverspillStore

        store = OverspillStore(plan.url, task_queue=plan.overspill_queue)
        for key, text in plan.writes:
            await store.write(key, text.encode())
        for key, text in plan.direct_writes:
            await workflow.execute_activity(write_directly, args=[plan.url, key, text], start_to_close_timeout=TIMEOUT)
        if plan.continue_as_new:
            plan.writes, plan.direct_writes, plan.continue_as_new = [], [], False
            workflow.continue_as_new(plan)
        return await workflow.execute_activity(
            reads,
            args=[plan.url, plan.handle, plan.json_handle, plan.run_id, plan.read_scope],
            start_to_close_timeout=TIMEOUT,
        )


def _lines(n: int) -> str:
    return ''.join(f'line {i:04}\n' for i in range(n))


def _json_lines(n: int) -> str:
    return ''.join(f'{{"n":{i}}}\n' for i in range(n))


async def _client() -> Any:
    from temporalio.client import Client

    namespace = os.environ.get('TEMPORAL_NAMESPACE', 'default')
    return await Client.connect(os.environ['TEMPORAL_ADDRESS'], namespace=namespace)


def _run(scoped: Scoped, plans: list[tuple[str, Plan]]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Run each (workflow id, plan) in turn on a worker of this process; their results and
    histories."""
    from temporalio.worker import Worker

    async def run() -> tuple[list[dict[str, Any]], list[Any]]:
        client = await _client()
        results, histories = [], []
        async with Worker(
            client, task_queue=scoped.queue, workflows=[ScopeWorkflow], activities=[reads, write_directly]
        ):
            for workflow_id, plan in plans:
                handle = await client.start_workflow(
                    ScopeWorkflow.run, plan, id=workflow_id, task_queue=scoped.queue, execution_timeout=TIMEOUT
                )
                results.append(await handle.result())
                histories.append(await handle.fetch_history())
        return results, histories

    return asyncio.run(run())


def _replay(histories: list[Any]) -> None:
    from temporalio.worker import Replayer

    async def replay() -> None:
        replayer = Replayer(workflows=[ScopeWorkflow])
        for history in histories:
            await replayer.replay_workflow(history)

    asyncio.run(replay())


def test_reads_are_scoped_to_the_writing_workflow(scoped: Scoped) -> None:
    run = f'run-{uuid.uuid4().hex[:8]}'
    handle, json_handle, direct = f'{run}/text.0', f'{run}/json.0', f'{run}/direct.0'
    none = f'{run}-none'

    def plan(**kwargs: Any) -> Plan:
        base = Plan(scoped.store_url, scoped.overspill_queue, [], [], handle, json_handle, run)
        for name, value in kwargs.items():
            setattr(base, name, value)
        return base

    writer, reader = f'scope-writer-{run}', f'scope-reader-{run}'
    results, histories = _run(
        scoped,
        [
            (
                writer,
                plan(
                    writes=[(handle, _lines(300)), (json_handle, _json_lines(10))],
                    direct_writes=[(direct, _lines(3))],
                ),
            ),
            # Another workflow reads the writer's spills, then handles and a run never written.
            (reader, plan()),
            (f'{reader}-missing', plan(handle=f'{none}/text.0', json_handle=f'{none}/json.0', run_id=none)),
            (f'{reader}-direct', plan(handle=direct)),
            # The writer's workflow id again, reading the direct write; and a continue-as-new relay.
            (writer, plan(handle=direct)),
            (
                f'scope-relay-{run}',
                plan(writes=[(f'{run}/relay.0', _lines(5))], handle=f'{run}/relay.0', continue_as_new=True),
            ),
            # Another workflow whose store reads with `any`.
            (f'{reader}-any', plan(read_scope='any')),
        ],
    )
    own, foreign, missing, foreign_direct, own_direct, relay, any_scope = results
    assert own['read'] == _lines(300)
    assert own['page'] == f"[handle '{handle}': 300 matching line(s); showing 2]\nline 0000\nline 0001"
    assert '2:line 0001\n3:line 0002' in own['grep'], own['grep']
    assert own['query'].endswith('\n0\n1'), own['query']
    assert own['list'].startswith(f"[run '{run}': 3 spilled tool result(s); showing 3, newest first]"), own['list']

    def as_foreign(text: str) -> str:
        return text.replace(none, run)

    assert {k: as_foreign(v) for k, v in missing.items()} == foreign, 'a foreign handle reads as a missing one'
    assert foreign['page'].startswith(f"[No stored tool result for handle '{handle}'.")
    assert foreign['list'] == f"[run '{run}': 0 spilled tool result(s); showing 0, newest first]"
    # A spill an activity wrote straight into the store records its workflow as well.
    assert own_direct['read'] == _lines(3)
    assert foreign_direct['page'] == foreign['page'].replace(handle, direct)
    # The next run of a continue-as-new reads its predecessor's spill.
    assert relay['read'] == _lines(5)
    assert any_scope['read'] == _lines(300)
    assert any_scope['page'] == own['page']
    _replay(histories)


def test_unknown_read_scopes_are_refused() -> None:
    from overspill.pydantic_ai import OverspillStore

    assert OverspillStore('s3://spills', read_scope='namespace').read_scope == 'namespace'
    with pytest.raises(ValueError, match='read_scope'):
        OverspillStore('s3://spills', read_scope='run')


def test_outside_an_activity_every_spill_is_read(tmp_path: Path) -> None:
    """A plain program (no Temporal) reads as `overspill read` does: every spill, whoever wrote it."""
    import asyncio

    from overspill.pydantic_ai import OverspillStore

    store = OverspillStore(tmp_path.as_uri(), read_scope='workflow')

    async def write_and_read(key: str, caller: tuple[str, str] | None) -> bytes:
        await store.engine.write(key, b'spilled\n', caller=caller)
        return await store.read(key)

    for caller, key in ((('default', 'someone'), 'r/theirs.0'), (None, 'r/nobodys.0')):
        assert asyncio.run(write_and_read(key, caller)) == b'spilled\n'
