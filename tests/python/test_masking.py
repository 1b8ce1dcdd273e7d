"""`OverspillMasking`: old tool returns leave the model's context, losslessly.

On Temporal (the dev server, SeaweedFS, the `overspill worker` binary, pydantic-ai's
`TemporalDurability`): the example agent of `workflows/python/examples/masking_agent.py` makes 30
tool calls of 2 KB to 200 KB; once its messages exceed the budget, older returns become markers
whose handles read the exact bytes back, the current turn's returns never do, a masked answer is
read back, and the recorded history replays. Outside Temporal (a `file://` store): determinism,
idempotence, already-spilled returns, and a failed spill leaving its return as it was.

Needs `TEMPORAL_ADDRESS`, `OVERSPILL_TEST_S3_URL` and the `AWS_*` variables, and `OVERSPILL_BIN`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import importlib
import json
import os
import re
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from overspill.pydantic_ai import OverspillMasking, OverspillStore, mask_marker
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from support import EXAMPLES, Process

REQUIRED = ('TEMPORAL_ADDRESS', 'OVERSPILL_TEST_S3_URL', 'AWS_ENDPOINT_URL', 'AWS_ACCESS_KEY_ID', 'OVERSPILL_BIN')
RUN_TIMEOUT = 300  # seconds a workflow may take
PROMPT = 'fetch 30 batches, then: what is the release codename?'
_MARKER = re.compile(r"^\[Tool output of '([^']*)' cleared from context \(([^)]*)\); stored to handle '([^']*)'\. ")


@dataclass
class Stack:
    """The Overspill worker, its store and queue, and the example agent module configured for them."""

    store_url: str
    module: ModuleType
    overspill: Process


@pytest.fixture(scope='module')
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    assert not missing, f'{missing} not set: source .deploy/seaweedfs.env and .deploy/temporal.env, set OVERSPILL_BIN'
    tag = f'{os.getpid()}-{uuid.uuid4().hex[:8]}'
    store_url = f'{os.environ["OVERSPILL_TEST_S3_URL"].rstrip("/")}/masking-{tag}'
    env = {
        'OVERSPILL_STORE': store_url,
        'OVERSPILL_TASK_QUEUE': f'tool-output-limits-masking-{tag}',
        'MASKING_AGENT_TASK_QUEUE': f'masking-agent-{tag}',
    }
    saved = {k: os.environ.get(k) for k in env}
    # The workflow sandbox re-imports the example module: it must read the same configuration.
    os.environ.update(env)
    overspill = Process(
        'overspill-worker-masking',
        [os.environ['OVERSPILL_BIN'], 'worker', '--store', store_url, '--task-queue', env['OVERSPILL_TASK_QUEUE']],
        {**os.environ, 'AWS_ALLOW_HTTP': 'true'},
        tmp_path_factory.mktemp('logs'),
    )
    try:
        if str(EXAMPLES) not in sys.path:
            sys.path.insert(0, str(EXAMPLES))
        module = importlib.import_module('masking_agent')
        overspill.wait_for('overspill worker started')
        yield Stack(store_url, module, overspill)
    finally:
        overspill.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


async def _client() -> Any:
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.client import Client

    return await Client.connect(
        os.environ['TEMPORAL_ADDRESS'],
        namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
        plugins=[PydanticAIPlugin()],
    )


def _run(stack: Stack, workflow_run: Any, prompt: str) -> tuple[Any, Any]:
    """Run a workflow of the example module on a worker in this process; its report and history."""
    from temporalio.worker import Worker

    module = stack.module
    queue = os.environ['MASKING_AGENT_TASK_QUEUE']

    async def run() -> tuple[Any, Any]:
        client = await _client()
        async with Worker(
            client, task_queue=queue, workflows=[module.MaskingAgentWorkflow, module.FailingMaskingWorkflow]
        ):
            handle = await client.start_workflow(
                workflow_run,
                prompt,
                id=f'masking-{uuid.uuid4()}',
                task_queue=queue,
                execution_timeout=timedelta(seconds=RUN_TIMEOUT),
            )
            report = await asyncio.wait_for(handle.result(), RUN_TIMEOUT)
            return report, await handle.fetch_history()

    return asyncio.run(run())


def _replay(stack: Stack, history: Any) -> None:
    """Replay `history` in this process: it must raise no nondeterminism, and every activity the
    replayed workflow asks for (the masking spills, the model requests with their masked
    messages) must have exactly the input recorded: the replay rebuilt the same history. (The
    replayer itself compares only the activities' types, not their inputs.)"""
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio import workflow
    from temporalio.worker import (
        Interceptor,
        Replayer,
        StartActivityInput,
        WorkflowInboundInterceptor,
        WorkflowInterceptorClassInput,
        WorkflowOutboundInterceptor,
    )

    replayed: list[tuple[str, list[bytes]]] = []

    class Outbound(WorkflowOutboundInterceptor):
        def start_activity(self, input: StartActivityInput) -> Any:
            payloads = workflow.payload_converter().to_payloads(input.args)
            replayed.append((input.activity, [p.data for p in payloads]))
            return super().start_activity(input)

    class Inbound(WorkflowInboundInterceptor):
        def init(self, outbound: WorkflowOutboundInterceptor) -> None:
            super().init(Outbound(outbound))

    class Capture(Interceptor):
        def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
            return Inbound

    workflows = [stack.module.MaskingAgentWorkflow, stack.module.FailingMaskingWorkflow]
    replayer = Replayer(workflows=workflows, plugins=[PydanticAIPlugin()], interceptors=[Capture()])
    asyncio.run(replayer.replay_workflow(history))
    recorded = [(name, [p.data for p in payloads]) for name, payloads in _scheduled(history)]
    assert [name for name, _ in replayed] == [name for name, _ in recorded]
    for n, ((name, mine), (_, theirs)) in enumerate(zip(replayed, recorded)):
        if name == 'tool_output_limits.spill':
            assert mine == theirs, f'activity {n}: another spill on replay'
        elif name.endswith('__model_request'):
            # pydantic-ai's own timestamps differ on replay: compare what masking decides.
            assert _returns_sent(mine[0]) == _returns_sent(theirs[0]), f'activity {n}: other messages on replay'


def _returns_sent(params: bytes) -> list[tuple[str, str]]:
    """The tool returns in a model request activity's input: call id and the text the model gets."""
    messages = ModelMessagesTypeAdapter.validate_python(json.loads(params)['messages'])
    return [
        (p.tool_call_id, p.model_response_str())
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


def _scheduled(history: Any) -> list[tuple[str, Any]]:
    """Every activity the workflow scheduled, in order: its type and its input payloads."""
    return [
        (a.activity_type.name, a.input.payloads)
        for e in history.events
        if e.HasField('activity_task_scheduled_event_attributes')
        for a in [e.activity_task_scheduled_event_attributes]
    ]


def _sent(history: Any) -> list[list[ModelMessage]]:
    """The messages of each model request, as the model-request activities were given them."""
    requests = []
    for name, payloads in _scheduled(history):
        if name.endswith('__model_request'):
            params = json.loads(payloads[0].data)
            requests.append(ModelMessagesTypeAdapter.validate_python(params['messages']))
    assert requests, [name for name, _ in _scheduled(history)]
    return requests


def _fetch_returns(messages: list[ModelMessage]) -> list[tuple[int, ToolReturnPart]]:
    """(index of its message, part) of each `fetch_records` return."""
    return [
        (i, p)
        for i, m in enumerate(messages)
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.tool_name == 'fetch_records'
    ]


def _batch(part: ToolReturnPart) -> int:
    return int(part.tool_call_id.removeprefix('fetch-'))


def test_old_returns_are_masked_read_back_byte_for_byte_and_replay(stack: Stack) -> None:
    """30 calls of 2-200 KB: every request over budget sent older returns as markers, never the
    current turn's nor the 3 newest; each marker's handle holds the exact output; the model read
    the codename back from a masked return; each return was spilled once; the history replays."""
    module = stack.module
    report, history = _run(stack, module.MaskingAgentWorkflow.run, PROMPT)
    assert report.output == f'read back: {module.batch_output(module.SECRET_BATCH).splitlines()[100]}'

    requests = _sent(history)
    assert len(requests) == module.CALLS + 2, 'a request per call, one to read back, one to answer'
    masking = module.masking
    masked_at: dict[int, str] = {}  # batch -> its marker, from the first request that masked it
    for n, messages in enumerate(requests):
        returns = _fetch_returns(messages)
        current = [p for i, p in returns if i == len(messages) - 1]
        every = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        newest = every[-masking.keep_recent :]
        unmasked_size = sum(
            len(module.batch_output(_batch(p))) - len(p.model_response_str()) for _, p in returns
        ) + masking.measure(messages)
        for i, part in returns:
            text = part.model_response_str()
            original = module.batch_output(_batch(part))
            if text == original:
                assert _batch(part) not in masked_at, f'request {n}: batch {_batch(part)} was unmasked again'
                continue
            assert part not in current and part not in newest, f'request {n}: masked {part.tool_call_id}, a kept one'
            assert unmasked_size > masking.budget, f'request {n}: masked while under budget'
            marker = _MARKER.match(text)
            assert marker is not None, text[:300]
            assert marker[1] == 'fetch_records' and marker[2] == f'{len(original):,} chars'
            assert masked_at.setdefault(_batch(part), text) == text, 'a marker never changes'
        if unmasked_size > masking.budget:
            kept = {p.tool_call_id for p in [*current, *newest]}
            older = [p for _, p in returns if p.tool_call_id not in kept]
            assert all(p.model_response_str() != module.batch_output(_batch(p)) for p in older), (
                f'request {n} is over budget: every older return is masked'
            )
    assert module.SECRET_BATCH in masked_at and len(masked_at) >= module.CALLS - masking.keep_recent - 1

    # Lossless: each marker's handle holds exactly the output it replaced, under a key made of the
    # run id, the call id and the output's hash (so a replay or retry writes the same object).
    store = module.store
    for batch, text in masked_at.items():
        handle = _MARKER.match(text)[3]  # type: ignore[index]
        data = module.batch_output(batch).encode()
        assert handle == f'{report.run_id}/fetch-{batch:02d}.masked-{hashlib.sha256(data).hexdigest()[:12]}'
        assert asyncio.run(store.read(handle)) == data

    # One spill per masked return: a masked return is never spilled again.
    spills = [json.loads(p[0].data)['key'] for name, p in _scheduled(history) if name == 'tool_output_limits.spill']
    assert sorted(spills) == sorted(_MARKER.match(t)[3] for t in masked_at.values())  # type: ignore[index]

    # The final history holds the same markers; and a replay issues the same commands.
    final = ModelMessagesTypeAdapter.validate_json(report.messages)
    assert {_batch(p): p.model_response_str() for _, p in _fetch_returns(final) if _batch(p) in masked_at} == masked_at
    _replay(stack, history)
    sizes = [masking.measure(m) for m in requests]
    print(f'\nmasked run on Temporal: {len(requests)} requests, {sum(sizes):,} chars sent, largest {max(sizes):,}')


def test_a_return_whose_spill_fails_stays_as_it_was(stack: Stack) -> None:
    """The masking store's spills fail (no worker polls its queue): every return stays in context,
    the model answers from it, and the history of attempted spills replays."""
    module = stack.module
    report, history = _run(stack, module.FailingMaskingWorkflow.run, 'fetch 5 batches, then: the codename?')
    assert report.output == f'in context: {module.batch_output(module.SECRET_BATCH).splitlines()[100]}'
    for messages in _sent(history):
        for _, part in _fetch_returns(messages):
            assert part.model_response_str() == module.batch_output(_batch(part)), part.tool_call_id
    attempted = [name for name, _ in _scheduled(history) if name == 'tool_output_limits.spill']
    assert attempted, 'masking tried to spill (and failed)'
    _replay(stack, history)


# --- outside Temporal: the processor itself, on a file:// store ---------------------------------


def _history(sizes: list[int], *, spilled: dict[int, str] | None = None) -> list[ModelMessage]:
    """A run's messages: a prompt, then one call and its return per size; the last return is the
    current turn's. `spilled` maps a call's index to a handle: its return is the harness's marker."""
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart('go')])]
    for n, size in enumerate(sizes):
        messages.append(ModelResponse(parts=[ToolCallPart('fetch', {'n': n}, tool_call_id=f'call-{n}')]))
        content = _output(n, size)
        metadata = None
        if spilled and n in spilled:
            header = f'[Tool output too large ({size:,} chars); stored to handle {spilled[n]!r}. Read it ...]'
            content = f'{header}\n{content[:1_000]}'
            metadata = {'overflow_handle': spilled[n], 'overflow_bytes': size}
        part = ToolReturnPart('fetch', content, tool_call_id=f'call-{n}', metadata=metadata)
        messages.append(ModelRequest(parts=[part]))
    return messages


def _output(n: int, size: int) -> str:
    return (f'output {n} line\n' * size)[:size]


def _ctx(run_id: str = 'run-1') -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(run_id=run_id)


def _texts(messages: list[ModelMessage]) -> list[str]:
    return [p.model_response_str() for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob('*') if p.is_file()}


def test_masking_is_deterministic_idempotent_and_spares_the_current_turn(tmp_path: Path) -> None:
    store = OverspillStore(f'file://{tmp_path}')
    masking = OverspillMasking(store, budget=20_000, keep_recent=0)
    history = _history([5_000, 8_000, 3_000, 30_000])
    masked = asyncio.run(masking(_ctx(), history))
    texts = _texts(masked)
    assert texts[-1] == _output(3, 30_000), 'the current turn (the last request) is never masked'
    for n, size in enumerate([5_000, 8_000, 3_000]):
        data = _output(n, size).encode()
        handle = f'run-1/call-{n}.masked-{hashlib.sha256(data).hexdigest()[:12]}'
        assert texts[n] == mask_marker('fetch', handle, f'{size:,} chars', masking.read_tools)
        assert asyncio.run(store.read(handle)) == data
    assert history[1:] != masked[1:] and _texts(history)[0] == _output(0, 5_000), 'the input is not mutated'

    files = _files(tmp_path)
    assert asyncio.run(masking(_ctx(), masked)) == masked, 'masking a masked history changes nothing'
    assert _files(tmp_path) == files, 'and writes nothing'
    assert asyncio.run(masking(_ctx(), history)) == masked, 'the same history gives the same output'
    assert _files(tmp_path).keys() == files.keys(), 'the same keys: overwrites, no new object'
    # Under budget: untouched (the very same list).
    assert asyncio.run(OverspillMasking(store, budget=50_000)(_ctx(), history)) is history


def test_keep_recent_and_min_chars_and_tokens(tmp_path: Path) -> None:
    store = OverspillStore(f'file://{tmp_path}')
    history = _history([500, 5_000, 5_000, 5_000, 5_000])
    texts = _texts(asyncio.run(OverspillMasking(store, budget=0, keep_recent=2)(_ctx(), history)))
    assert texts[0] == _output(0, 500), 'under min_chars: kept'
    assert [t.startswith('[Tool output of ') for t in texts] == [False, True, True, False, False]
    # 20,500 chars ≈ 5,125 tokens: over a 5,000-token budget, not over a 6,000-token one.
    assert _texts(asyncio.run(OverspillMasking(store, budget=6_000, unit='tokens')(_ctx(), history))) == _texts(history)
    by_tokens = _texts(asyncio.run(OverspillMasking(store, budget=5_000, unit='tokens')(_ctx(), history)))
    assert by_tokens[1].startswith('[Tool output of ')
    # A tokenizer counts each text of each message.
    nothing = OverspillMasking(store, budget=0, unit='tokens', tokenizer=lambda s: 0)
    assert _texts(asyncio.run(nothing(_ctx(), history))) == _texts(history)
    per_char = OverspillMasking(store, budget=20_000, unit='tokens', tokenizer=len)
    assert _texts(asyncio.run(per_char(_ctx(), history)))[1].startswith('[Tool output of ')


def test_the_request_instructions_count_toward_the_budget(tmp_path: Path) -> None:
    """The model is sent the last request's instructions with the messages: they are measured too."""
    store = OverspillStore(f'file://{tmp_path}')
    history = _history([5_000, 5_000, 5_000])
    size = OverspillMasking(store).measure(history)
    instructed = [*history[:-1], dataclasses.replace(history[-1], instructions='x' * 1_000)]
    assert OverspillMasking(store).measure(instructed) == size + 1_000
    earlier = [dataclasses.replace(history[0], instructions='x' * 1_000), *history[1:]]
    assert OverspillMasking(store).measure(earlier) == size, 'an earlier request\'s are not sent'
    masking = OverspillMasking(store, budget=size, keep_recent=0)
    assert asyncio.run(masking(_ctx(), history)) is history, 'at the budget: nothing masked'
    assert _texts(asyncio.run(masking(_ctx(), instructed)))[0].startswith("[Tool output of 'fetch' cleared")


def test_an_already_spilled_return_keeps_its_handle_without_a_new_write(tmp_path: Path) -> None:
    store = OverspillStore(f'file://{tmp_path}')
    history = _history([40_000, 2_000, 2_000], spilled={0: 'run-1/call-0.0'})
    masked = asyncio.run(OverspillMasking(store, budget=0, keep_recent=1)(_ctx(), history))
    texts = _texts(masked)
    assert texts[0] == mask_marker('fetch', 'run-1/call-0.0', '40,000 chars', OverspillMasking.read_tools)
    assert not (tmp_path / 'tool_output_limits' / 'run-1' / 'call-0.0').exists(), 'no write for a spilled return'
    # Without the harness's metadata, the handle comes from the marker itself.
    bare = [
        dataclasses.replace(m, parts=[dataclasses.replace(p, metadata=None) for p in m.parts])
        if isinstance(m, ModelRequest) and isinstance(m.parts[0], ToolReturnPart)
        else m
        for m in history
    ]
    assert _texts(asyncio.run(OverspillMasking(store, budget=0, keep_recent=1)(_ctx(), bare)))[0] == texts[0]
    assert texts[1].startswith(
        "[Tool output of 'fetch' cleared from context (2,000 chars); stored to handle 'run-1/call-1.masked-"
    )


def test_a_return_whose_spill_fails_outside_temporal_stays(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The store refuses the write (its root is a symlink): the return stays, with a WARNING."""
    (tmp_path / 'real').mkdir()
    (tmp_path / 'store').mkdir()
    (tmp_path / 'store' / 'tool_output_limits').symlink_to(tmp_path / 'real')
    store = OverspillStore(f'file://{tmp_path / "store"}')
    history = _history([5_000, 5_000, 5_000], spilled={1: 'run-1/call-1.0'})
    masked = asyncio.run(OverspillMasking(store, budget=0, keep_recent=0)(_ctx(), history))
    texts = _texts(masked)
    assert texts[0] == _output(0, 5_000), 'its spill failed: it stays as it was'
    assert texts[1].startswith("[Tool output of 'fetch' cleared"), 'already spilled: masked without a write'
    assert "Masking output of tool 'fetch' failed (SpillError: " in caplog.text
    assert 'resolves outside the store' in caplog.text
