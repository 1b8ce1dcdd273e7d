"""Deep Agents on Temporal (`temporalio.deepagents`) with Overspill (`overspill.deepagents`).

A scripted chat model (`langchain_support.ScriptedChatModel`, the worker's model for every name)
drives a deep agent whose tools run in activities: `tool_as_activity` tools in
`deepagents.invoke_tool` (a `ToolMessage` in `dumpd` form), an `activity_as_tool` tool in its own
activity. Reduction at the source is `OverspillPlugin` on the worker; masking is
`OverspillMasking`, the agent's middleware.

Needs `TEMPORAL_ADDRESS`, `OVERSPILL_TEST_S3_URL` with the `AWS_*` variables, and `OVERSPILL_BIN`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from agents_support import (
    FailFirstAttempt,
    RunFigures,
    Stack,
    activity_calls,
    connect,
    objects,
    overspill_stack,
    reduce_on_worker,
    replay,
    run_id_of,
    stored,
)
from langchain_support import DeepCrawl, DeepRequest, deep_agents_plugin, fetch_spec, records, run_agent
from overspill import DEFAULT_LIMITS, mask_marker, masked_key
from overspill.deepagents import OverspillPlugin, overspill_tools
from support import page_text
from temporalio.worker import Interceptor, UnsandboxedWorkflowRunner, Worker

MODEL = 'deepagents.invoke_model'
INVOKE_TOOL = 'deepagents.invoke_tool'
MASK_TOOLS = ('read_tool_result', 'grep_tool_result', 'query_tool_result')


@pytest.fixture(scope='module')
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with overspill_stack(tmp_path_factory.mktemp('logs'), 'deepagents') as started:
        yield started


def _run(request: DeepRequest, *, store: str | None = None, interceptors: Sequence[Interceptor] = ()) -> tuple[RunFigures, Any]:
    """Run the deep agent on a worker in this process, with `OverspillPlugin` on `store` (if any)."""

    async def main() -> tuple[RunFigures, Any]:
        client = await connect(deep_agents_plugin())
        queue = f'da-agent-{uuid.uuid4()}'
        async with Worker(
            client, task_queue=queue, workflows=[DeepCrawl], activities=[fetch_spec],
            plugins=[OverspillPlugin([fetch_spec], store=store)] if store else [], interceptors=interceptors,
            workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            return await run_agent(client, DeepCrawl.run, request, task_queue=queue, timeout=240, model=MODEL)

    return asyncio.run(main())


def _replay(history: Any) -> None:
    """Replay `history` with the Deep Agents plugin alone: no nondeterminism."""
    replay(history, [DeepCrawl], [deep_agents_plugin()])


def _tool_outputs(history: Any) -> list[list[str]]:
    """The `ToolMessage` contents of each model call's input (messages in `dumpd` form)."""
    inputs = [data['messages'] for _, _, data in activity_calls(history, MODEL)]
    return [[str(m['kwargs']['content']) for m in messages if m['id'][-1] == 'ToolMessage'] for messages in inputs]


def _invoke_tool_handle(history: Any) -> str:
    """The handle of the one `deepagents.invoke_tool` call's spill: `{run id}/{its tool_call_id}.0`."""
    [(_, _, request)] = activity_calls(history, INVOKE_TOOL)
    return f"{run_id_of(history)}/{request['tool_call_id']}.0"


def test_a_40_mb_output_completes_without_external_storage_and_is_read_back_by_its_handle(stack: Stack) -> None:
    """A `tool_as_activity` tool returns 40 MB: `OverspillPlugin` spills it in
    `deepagents.invoke_tool`, under the workflow's own call id, so the history stays under 100 KB
    without External Storage; the model reads the 4th ERROR line back by the marker's handle, and
    the history replays."""
    chars = 40_000_000
    figures, history = _run(
        DeepRequest(f'fetch 1 page of {chars} chars, then read ERROR at offset 3', overspill_queue=stack.queue), store=stack.store_url
    )
    assert figures.status == 'completed', figures
    handle = _invoke_tool_handle(history)
    errors = [line for line in page_text(0, chars).split('\n') if 'ERROR' in line]
    assert figures.result['answer'] == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[3]}"
    assert _tool_outputs(history)[1][0].startswith(f"[Tool output too large ({chars:,} chars); stored to handle {handle!r}.")
    assert stored(stack, handle) == page_text(0, chars).encode()
    assert figures.history_bytes < 100_000, figures.history_bytes
    _replay(history)


def test_the_model_sees_the_rust_workers_text_and_greps_and_queries_it_back(stack: Stack) -> None:
    """An `activity_as_tool` tool's 200 KB and a `tool_as_activity` tool's 2,000 records (the JSON
    text LangChain makes of them) reach the model as the Overspill worker's own
    `tool_output_limits.reduce` makes them, byte for byte; the model greps the one and queries the
    other back by handle."""
    cases = [
        ('fetch 1 page of 200000 chars using fetch_spec, then grep status=ERROR', 'fetch_spec', {'text': page_text(0, 200_000)}),
        ('fetch 2000 records, then query .[] | select(.status == "ERROR") | .id', 'fetch_records', {'text': json.dumps(records(2000))}),
    ]
    for prompt, tool, output in cases:
        figures, history = _run(DeepRequest(prompt, overspill_queue=stack.queue), store=stack.store_url)
        assert figures.status == 'completed', figures
        [seen] = _tool_outputs(history)[1]
        if tool == 'fetch_spec':
            [(call_id, _, _)] = activity_calls(history, tool)
        else:
            call_id = _invoke_tool_handle(history).split('/')[1].removesuffix('.0')
        request = {'tool_name': tool, 'run_id': run_id_of(history), 'tool_call_id': call_id, 'output': output, 'config': dict(DEFAULT_LIMITS)}
        reduced = asyncio.run(reduce_on_worker(stack, request, plugins=[deep_agents_plugin()]))
        assert reduced['return_value'] == {'text': seen} and seen.startswith('[Tool output too large ('), (tool, seen[:300])
        handle = f'{run_id_of(history)}/{call_id}.0'
        answer = figures.result['answer']
        if tool == 'fetch_spec':
            assert answer.startswith(f'[handle {handle!r}: ') and '\n1:page 0000 line 000000 status=ERROR' in answer, answer
        else:
            header, *ids, _ = answer.splitlines()
            assert header.startswith(f'[handle {handle!r}: 154 result(s) of filter') and ids == ['0', '13', '26'], answer


def test_a_retried_tool_activity_writes_one_object(stack: Stack) -> None:
    """`deepagents.invoke_tool`'s first attempt fails after its spill; the retry spills under the
    same key (the workflow's call id): one object, whose handle the model reads back."""
    figures, history = _run(
        DeepRequest('fetch 1 page of 50000 chars, then read ERROR', overspill_queue=stack.queue), store=stack.store_url,
        interceptors=[FailFirstAttempt(INVOKE_TOOL)],
    )
    assert figures.status == 'completed', figures
    [(_, attempt, _)] = activity_calls(history, INVOKE_TOOL)
    handle = _invoke_tool_handle(history)
    assert attempt == 2 and objects(stack, run_id_of(history)) == [handle]
    assert figures.result['answer'].startswith(f'[handle {handle!r}: '), figures.result


def test_deep_agents_eviction_has_nothing_left_to_evict(stack: Stack) -> None:
    """Two 200 KB outputs, one of each kind of tool: without Overspill, Deep Agents' eviction
    (over 80,000 chars) moves each into the agent's files, after the history recorded it; with
    reduction at the source the outputs are markers, nothing is evicted, and no model input
    carries an eviction stub or the output."""
    without, history = _run(DeepRequest('fetch 2 pages of 200000 chars at once'))
    assert without.status == 'completed' and without.result['files'] == ['/large_tool_results/call-0', '/large_tool_results/call-1']
    assert without.history_bytes > 400_000, without
    for fetcher in ('fetch_page', 'fetch_spec'):
        figures, history = _run(DeepRequest(f'fetch 2 pages of 200000 chars at once using {fetcher}', overspill_queue=stack.queue), store=stack.store_url)
        assert figures.status == 'completed' and figures.result['files'] == [], figures
        outputs = _tool_outputs(history)[-1]
        assert len(outputs) == 2 and all(o.startswith('[Tool output too large (200,000 chars)') for o in outputs), outputs
        assert figures.history_bytes < 100_000, figures


def test_masking_clears_seen_outputs_in_the_state_and_the_model_reads_one_back(stack: Stack) -> None:
    """8 outputs of 20 KB under a 50,000-char budget, without reduction at the source: the
    middleware replaces the `ToolMessage`s the model has seen (but the 3 newest of those) by
    markers, in the state (the final state holds them), whose handles read the exact bytes back;
    the current turn's output is never masked; each output is spilled once; the history replays."""
    figures, history = _run(DeepRequest('fetch 8 pages of 20000 chars, then read ERROR', overspill_queue=stack.queue, masking_budget=50_000))
    assert figures.status == 'completed', figures
    page = page_text(0, 20_000)
    handle = masked_key(run_id_of(history), 'call-0', page)
    outputs = _tool_outputs(history)
    assert outputs[-2][0] == mask_marker('fetch_page', handle, '20,000 chars', MASK_TOOLS)
    assert all(o.startswith("[Tool output of 'fetch_page' cleared from context") for o in outputs[-2][:4]), outputs[-2]
    assert outputs[-2][4:] == [page_text(n, 20_000) for n in (4, 5, 6, 7)], 'the 3 newest seen and the current turn stay'
    assert figures.result['outputs'][:5] == outputs[-1][:5], 'the state keeps the markers'
    assert stored(stack, handle) == page.encode()
    spills = [data['key'] for _, _, data in activity_calls(history, 'tool_output_limits.spill')]
    assert [key.split('/')[1].split('.')[0] for key in spills] == [f'call-{k}' for k in range(5)], 'each spilled once'
    errors = [line for line in page.split('\n') if 'ERROR' in line]
    assert figures.result['answer'] == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[0]}"
    _replay(history)


# --- without Temporal ---------------------------------------------------------------------------


def test_the_read_back_tools_are_routed_so_deep_agents_does_not_warn() -> None:
    """`create_deep_agent` warns about tools that run in the workflow unwrapped; the read-back
    tools run there on purpose (they execute the Overspill worker's activities), and it is told so."""
    from temporalio.deepagents._tools import warn_unwrapped_tools

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter('always')
        warn_unwrapped_tools(overspill_tools())
    assert seen == []


def test_overspills_plugin_goes_anywhere_and_deep_agents_goes_before_other_converters() -> None:
    """`OverspillPlugin` sets no converter: before or after `DeepAgentsPlugin`, the client keeps its
    External Storage and gets Deep Agents' converter. `DeepAgentsPlugin` after a plugin with a
    converter of its own (pydantic-ai's) raises, as the module says; before it, it composes."""
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from overspill.external_storage import external_storage
    from temporalio.converter import DataConverter
    from temporalio.deepagents._serde import DeepAgentsPayloadConverter

    storage = external_storage('s3://spills', s3_client=object())  # the long-run switch (no S3 call here)

    def converter(*plugins: Any) -> DataConverter:
        config: Any = {'data_converter': DataConverter(external_storage=storage)}
        for plugin in plugins:
            config = plugin.configure_client(config)
        result: DataConverter = config['data_converter']
        return result

    for plugins in ([OverspillPlugin(), deep_agents_plugin()], [deep_agents_plugin(), OverspillPlugin()]):
        composed = converter(*plugins)
        assert composed.external_storage is storage and composed.payload_converter_class is DeepAgentsPayloadConverter
    with pytest.raises(ValueError, match='DeepAgentsPlugin cannot compose with a custom data_converter'):
        converter(PydanticAIPlugin(), deep_agents_plugin())
    assert converter(deep_agents_plugin(), PydanticAIPlugin()).external_storage is storage


def test_a_deep_agents_the_adapter_does_not_support_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """The adapter's private temporalio-deepagents APIs are there; gone, the error names the version."""
    from overspill._compat import UnsupportedVersion, installed
    from overspill._compat import deepagents as compat
    from temporalio.deepagents import _tools

    compat.check()
    monkeypatch.delattr(_tools, '_ROUTED_TOOL_NAMES')
    with pytest.raises(UnsupportedVersion) as error:
        overspill_tools()
    assert str(error.value) == (
        f'temporalio-deepagents {installed("temporalio-deepagents")} has no temporalio.deepagents._tools._ROUTED_TOOL_NAMES, '
        f'which Overspill relies on: Overspill supports temporalio-deepagents{compat.SUPPORTED}'
    )
