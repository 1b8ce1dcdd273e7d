"""What a newcomer meets when Overspill cannot serve the agent, on Temporal: the run ends and says
why in one line, unless `on_unavailable='fallback'` asks for the band's `then`.

Real pieces: the Temporal dev server (`TEMPORAL_ADDRESS`), the `overspill worker` binary
(`OVERSPILL_BIN`) on a `file://` store, pydantic-ai's `TemporalDurability` with the harness's
`ToolOutputLimits` in a sandboxed workflow of this process, and a scripted `FunctionModel`.
- No worker polls the queue: the workflow fails within seconds with the one line naming the
  queue and how to start a worker, for a spill, a summary and a search tool alike. (A spill
  of pydantic-ai-harness 0.75, which journals its own spill in an activity on the agent's
  worker, where `OverspillStore` writes the store directly, needs no Overspill worker.)
- The worker's store is not the agent's: the workflow fails with the one line naming both
  (under 0.62, whose spills the worker writes).
- `on_unavailable='fallback'`: the run completes with the band's `then` (a truncation), and the
  log holds one line per fallback, no traceback.
Also, outside Temporal: the store root a first spill creates is `0700`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import pytest
    from overspill.pydantic_ai import OverspillStore, OverspillSummarizer, OverspillToolset
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai_harness.tool_output_limits import Band, Spill, Summarize, ToolOutputLimits, Truncate
    from support import Process

REQUIRED = ('TEMPORAL_ADDRESS', 'OVERSPILL_BIN')

HARNESS_JOURNALS_SPILLS = hasattr(ToolOutputLimits, '_write_spill')
"""pydantic-ai-harness 0.75 spills in a durable operation of its own (an activity on the agent's
worker, where `OverspillStore.write` writes the store directly); 0.62 in workflow code, where it
runs the Overspill worker's `tool_output_limits.spill`."""

# The sandbox imports this module again for each workflow: every name below comes from the
# environment the first import set, so each import builds the same agents.
if 'OVERSPILL_NEWCOMER_ROOT' not in os.environ:
    os.environ['OVERSPILL_NEWCOMER_ROOT'] = tempfile.mkdtemp(prefix='overspill-newcomer-')
ROOT = Path(os.environ['OVERSPILL_NEWCOMER_ROOT'])
TAG = ROOT.name.rpartition('-')[2]
STORE = (ROOT / 'worker-store').as_uri()
"""The Overspill worker's store."""
OTHER_STORE = (ROOT / 'agent-store').as_uri()
"""A store the worker does not write."""
QUEUE = f'newcomer-overspill-{TAG}'
"""The queue the Overspill worker polls."""
NOBODY = f'newcomer-nobody-{TAG}'
"""A queue no worker polls."""
AGENT_QUEUE = f'newcomer-agent-{TAG}'
SHORT = timedelta(seconds=2)


def big() -> str:
    """A 30,000-char output: over the spill band."""
    return ''.join(f'{i:05d} big output line\n' for i in range(1_300))[:30_000]


def medium() -> str:
    """An 8,000-char output: in the summarize band."""
    return ''.join(f'{i:05d} medium line\n' for i in range(600))[:8_000]


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls the tool the prompt names (`big`, `medium` or `list_tool_results`), then answers with
    what it returned."""
    returns = [p for m in messages for p in m.parts if p.part_kind == 'tool-return']
    if not returns:
        prompt = next(p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart))
        return ModelResponse(parts=[ToolCallPart(str(prompt), {}, tool_call_id='call')])
    return ModelResponse(parts=[TextPart(returns[-1].model_response_str())])


def build(name: str, store: OverspillStore, summarizer: OverspillSummarizer) -> Agent[None, str]:
    limits = ToolOutputLimits(
        bands=[
            Band(over=20_000, action=Spill(then=Truncate())),
            Band(over=5_000, action=Summarize(summarize=summarizer, then=Truncate())),
        ],
        store=store,
    )
    return Agent(
        FunctionModel(script, model_name='scripted'),
        name=name,
        tools=[big, medium],
        toolsets=[OverspillToolset(store)],
        capabilities=[limits, TemporalDurability()],
    )


AGENTS = {
    # As pasted from the docs, but with no worker on the queue.
    'no_worker': build(
        'newcomer_no_worker',
        OverspillStore(STORE, task_queue=NOBODY),
        OverspillSummarizer(task_queue=NOBODY, start_timeout=SHORT),
    ),
    'other_store': build(
        'newcomer_other_store', OverspillStore(OTHER_STORE, task_queue=QUEUE), OverspillSummarizer(task_queue=QUEUE)
    ),
    'fallback': build(
        'newcomer_fallback',
        OverspillStore(STORE, task_queue=NOBODY, start_timeout=SHORT, on_unavailable='fallback'),
        OverspillSummarizer(task_queue=NOBODY, start_timeout=SHORT, on_unavailable='fallback'),
    ),
}


@workflow.defn
class NewcomerWorkflow(PydanticAIWorkflow):
    __pydantic_ai_agents__ = tuple(AGENTS.values())

    @workflow.run
    async def run(self, agent: str, prompt: str) -> str:
        return (await AGENTS[agent].run(prompt)).output


# --- the tests ----------------------------------------------------------------------------------


@pytest.fixture(scope='module')
def overspill(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    assert not missing, f'these tests need {missing} (tests/integration/pydantic_ai.rs sets them)'
    worker = Process(
        'overspill-worker',
        [os.environ['OVERSPILL_BIN'], 'worker', '--store', STORE, '--task-queue', QUEUE],
        dict(os.environ),
        tmp_path_factory.mktemp('newcomer-logs'),
    )
    try:
        worker.wait_for('overspill worker started')
        yield worker
    finally:
        worker.stop()
        shutil.rmtree(ROOT, ignore_errors=True)


def _run(agent: str, prompt: str) -> tuple[str | BaseException, float]:
    """Run `agent` on `prompt` in a workflow on a worker of this process: its output, or the
    cause of its failure; and how long it took."""
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.client import Client, WorkflowFailureError
    from temporalio.worker import Worker

    async def run() -> tuple[str | BaseException, float]:
        client = await Client.connect(
            os.environ['TEMPORAL_ADDRESS'],
            namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
            plugins=[PydanticAIPlugin()],
        )
        async with Worker(client, task_queue=AGENT_QUEUE, workflows=[NewcomerWorkflow]):
            started = time.monotonic()
            try:
                output: str | BaseException = await client.execute_workflow(
                    NewcomerWorkflow.run,
                    args=[agent, prompt],
                    id=f'newcomer-{agent}-{prompt}-{uuid.uuid4().hex[:8]}',
                    task_queue=AGENT_QUEUE,
                    execution_timeout=timedelta(seconds=90),
                )
            except WorkflowFailureError as failed:
                assert failed.cause is not None
                output = failed.cause
            return output, time.monotonic() - started

    return asyncio.run(run())


def _no_worker_line(activity: str, waited: str) -> str:
    return (
        f'no Overspill worker polls task queue {NOBODY!r}: {activity} waited {waited} for one to start it. '
        'Start `overspill dev`, or `overspill worker --task-queue` with that queue.'
    )


@pytest.mark.parametrize(
    ('prompt', 'activity', 'waited'),
    [
        ('big', 'tool_output_limits.spill', '0:00:10'),
        ('medium', 'tool_output_limits.summarize', '0:00:02'),
        ('list_tool_results', 'tool_output_limits.list_tool_results', '0:00:10'),
    ],
)
def test_no_worker_ends_the_run_with_one_line(
    overspill: Process, caplog: pytest.LogCaptureFixture, prompt: str, activity: str, waited: str
) -> None:
    """No worker polls the queue: the spill (summary, search) waits `start_timeout`, then the
    workflow fails with the one line, and the log holds that line, no traceback. A spill the
    harness journals itself needs no worker."""
    failure, took = _run('no_worker', prompt)
    if activity == 'tool_output_limits.spill' and HARNESS_JOURNALS_SPILLS:
        assert isinstance(failure, str) and 'stored to handle' in failure, failure
        return
    line = _no_worker_line(activity, waited)
    assert isinstance(failure, BaseException) and str(failure) == line, failure
    assert took < 30, f'the run ended after {took:.0f} s'
    assert any(r.getMessage().startswith(line) for r in caplog.records if r.levelno == logging.ERROR)
    assert 'Traceback' not in caplog.text


def test_another_store_ends_the_run_with_one_line(overspill: Process, caplog: pytest.LogCaptureFixture) -> None:
    """The worker stores spills in its store, not the agent's: the workflow fails with the one
    line naming both, rather than the model being told later that its spill is not there."""
    failure, _ = _run('other_store', 'big')
    if HARNESS_JOURNALS_SPILLS:
        # The agent's worker wrote the spill to the agent's store, where its reads find it.
        assert isinstance(failure, str) and 'stored to handle' in failure, failure
        assert list((ROOT / 'agent-store').rglob('call.0')), 'spilled to the agent store'
        return
    assert isinstance(failure, BaseException), failure
    line = str(failure)
    assert line.startswith(f'The Overspill worker on task queue {QUEUE!r} stores spills in file://'), line
    assert str(ROOT / 'worker-store') in line and line.endswith(
        f', but this OverspillStore reads {OTHER_STORE}: read_tool_result would not find them. '
        'Give both the same store (OVERSPILL_STORE).'
    ), line
    assert '\n' not in line
    assert 'Traceback' not in caplog.text


@pytest.mark.parametrize(
    ('prompt', 'operation', 'activity'),
    [('big', 'Spilling', 'tool_output_limits.spill'), ('medium', 'Summarizing', 'tool_output_limits.summarize')],
)
def test_the_fallback_switch_truncates_and_logs_one_line(
    overspill: Process, caplog: pytest.LogCaptureFixture, prompt: str, operation: str, activity: str
) -> None:
    """`on_unavailable='fallback'`: the run completes with the band's `then`, a truncation, and
    the harness's WARNING is one line carrying the reason, without a traceback."""
    output, _ = _run('fallback', prompt)
    if activity == 'tool_output_limits.spill' and HARNESS_JOURNALS_SPILLS:
        assert isinstance(output, str) and 'stored to handle' in output, output
        return
    assert isinstance(output, str) and 'truncated' in output.lower() and 'stored to handle' not in output, output
    fallbacks = [r for r in caplog.records if r.name.startswith('pydantic_ai_harness') and r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in fallbacks] == [
        f"{operation} output of tool {prompt!r} failed (NoWorkerError); falling back to Truncate: "
        + _no_worker_line(activity, '0:00:02')
    ]
    assert fallbacks[0].exc_info is None
    assert 'Traceback' not in caplog.text


def test_the_fallback_switch_tells_the_model_a_search_tool_is_unavailable(
    overspill: Process, caplog: pytest.LogCaptureFixture
) -> None:
    output, _ = _run('fallback', 'list_tool_results')
    assert output == '[list_tool_results is unavailable in this run: do not call it again.]'
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    # One line: the reason, then the workflow's context that Temporal's workflow logger appends.
    line = 'list_tool_results is unavailable in this run: ' + _no_worker_line(
        'tool_output_limits.list_tool_results', '0:00:02'
    )
    assert len(warned) == 1 and warned[0].startswith(line) and '\n' not in warned[0], warned
    assert 'Traceback' not in caplog.text


def test_unknown_on_unavailable_values_are_refused() -> None:
    with pytest.raises(ValueError, match='on_unavailable'):
        OverspillStore('file:///tmp/x', on_unavailable='ignore')  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='on_unavailable'):
        OverspillSummarizer(on_unavailable='ignore')  # type: ignore[arg-type]


def test_a_first_spill_outside_temporal_creates_the_store_root_0700(tmp_path: Path) -> None:
    """The root a first spill creates is `0700`, as the worker's and the CLI's (deploy/README.md)."""
    root = tmp_path / 'fresh' / 'store'
    store = OverspillStore(root.as_uri())
    assert asyncio.run(store.write('run-1/call-1.0', b'x' * 100)) == 'run-1/call-1.0'
    assert asyncio.run(store.read('run-1/call-1.0')) == b'x' * 100
    assert stat.S_IMODE(root.stat().st_mode) == 0o700, oct(root.stat().st_mode)
