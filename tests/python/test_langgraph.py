"""LangGraph on Temporal (`temporalio.langgraph`) with Overspill (`overspill.langgraph`).

A scripted chat model (`langchain_support.ScriptedChatModel`) drives the crawl graph: a model node
run as an activity (its input the whole state), and either one workflow-side `ToolNode` whose
tools each run their own activity (`activity_tool`, the layout to use) or a `ToolNode` run as an
activity node beside a workflow-side node for the read-back tools. Reduction at the source is
`OverspillPlugin` on the worker.

Needs `TEMPORAL_ADDRESS`, `OVERSPILL_TEST_S3_URL` with the `AWS_*` variables, and `OVERSPILL_BIN`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
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
from langchain_support import (
    GraphCrawl,
    GraphSetup,
    crawl_graph,
    fetch_page,
    fetch_records,
    records,
    run_agent,
)
from overspill import DEFAULT_LIMITS, READ_BACK_TOOLS, Store, mask_marker, masked_key
from overspill.langgraph import OverspillPlugin, overspill_tools
from support import page_text
from temporalio.langgraph import LangGraphPlugin
from temporalio.worker import Interceptor, UnsandboxedWorkflowRunner, Worker

MASK_TOOLS = ('read_tool_result', 'grep_tool_result', 'query_tool_result')


@pytest.fixture(scope='module')
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with overspill_stack(tmp_path_factory.mktemp('logs'), 'langgraph') as started:
        yield started


def _run(prompt: str, setup: GraphSetup, *, store: str | None = None, interceptors: Sequence[Interceptor] = ()) -> tuple[RunFigures, Any]:
    """Run the crawl graph on a worker in this process, with `OverspillPlugin` on `store` (if any)."""

    async def main() -> tuple[RunFigures, Any]:
        client = await connect()
        plugins: list[Any] = [LangGraphPlugin(graphs={'crawl': crawl_graph(setup)})]
        if store is not None:
            plugins.append(OverspillPlugin([fetch_page, fetch_records], tool_nodes=['crawl.tools'], store=store))
        queue = f'lg-agent-{uuid.uuid4()}'
        async with Worker(
            client, task_queue=queue, workflows=[GraphCrawl], activities=[fetch_page, fetch_records], plugins=plugins,
            interceptors=interceptors, workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            return await run_agent(client, GraphCrawl.run, prompt, task_queue=queue, timeout=240, model='crawl.agent')

    return asyncio.run(main())


def _replay(history: Any, setup: GraphSetup) -> None:
    """Replay `history` with the graph's plugin alone: no nondeterminism."""
    replay(history, [GraphCrawl], [LangGraphPlugin(graphs={'crawl': crawl_graph(setup)})])


def _tool_outputs(history: Any) -> list[list[str]]:
    """The `ToolMessage` contents of each model node's input (the whole state, as plain dicts)."""
    inputs = [data['args'][0]['messages'] for _, _, data in activity_calls(history, 'crawl.agent')]
    return [[str(m['content']) for m in messages if m.get('type') == 'tool'] for messages in inputs]


def test_a_40_mb_output_completes_without_external_storage_and_is_read_back_by_its_handle(stack: Stack) -> None:
    """The tool returns 40 MB: `OverspillPlugin` spills it in the tool's activity, so the history
    stays under 100 KB without External Storage; the model gets the marker, reads the 4th ERROR
    line back through the Overspill worker by the marker's handle (`{run id}/{activity id}.0`),
    and the history replays."""
    chars = 40_000_000
    setup = GraphSetup(overspill_queue=stack.queue)
    figures, history = _run(f'fetch 1 page of {chars} chars, then read ERROR at offset 3', setup, store=stack.store_url)
    assert figures.status == 'completed', figures
    [(activity_id, _, _)] = activity_calls(history, 'fetch_page')
    handle = f'{run_id_of(history)}/{activity_id}.0'
    errors = [line for line in page_text(0, chars).split('\n') if 'ERROR' in line]
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[3]}"
    assert _tool_outputs(history)[1][0].startswith(f"[Tool output too large ({chars:,} chars); stored to handle {handle!r}.")
    assert stored(stack, handle) == page_text(0, chars).encode()
    assert figures.history_bytes < 100_000, figures.history_bytes
    _replay(history, setup)


def test_the_model_sees_the_rust_workers_text_and_greps_and_queries_it_back(stack: Stack) -> None:
    """A 200 KB text and 2,000 records reduced at the source reach the model as the Overspill
    worker's own `tool_output_limits.reduce` makes them (same call, the interceptor's default
    limits), byte for byte; the records spill as JSON Lines, which `query_tool_result` filters; and
    `grep_tool_result` answers with the engine's page."""
    setup = GraphSetup(overspill_queue=stack.queue)
    cases = [
        ('fetch 1 page of 200000 chars, then grep status=ERROR', 'fetch_page', {'text': page_text(0, 200_000)}),
        ('fetch 2000 records, then query select(.status == "ERROR") | .id', 'fetch_records', {'json': records(2000)}),
    ]
    for prompt, tool, output in cases:
        figures, history = _run(prompt, setup, store=stack.store_url)
        assert figures.status == 'completed', figures
        [(activity_id, _, _)] = activity_calls(history, tool)
        [seen] = _tool_outputs(history)[1]
        request = {'tool_name': tool, 'run_id': run_id_of(history), 'tool_call_id': activity_id, 'output': output, 'config': dict(DEFAULT_LIMITS)}
        reduced = asyncio.run(reduce_on_worker(stack, request))
        assert reduced['return_value'] == {'text': seen} and seen.startswith('[Tool output too large ('), (tool, seen[:300])
        handle = f'{run_id_of(history)}/{activity_id}.0'
        if tool == 'fetch_page':
            engine = asyncio.run(_grep(stack, {'handle': handle, 'pattern': 'status=ERROR', 'offset': 0}))
            assert figures.result == engine and 'page 0000 line 000000 status=ERROR' in engine, figures.result
        else:
            header, *ids, _ = figures.result.splitlines()
            assert header.startswith(f'[handle {handle!r}: 154 result(s) of filter') and ids == ['0', '13', '26'], figures.result


async def _grep(stack: Stack, request: dict[str, Any]) -> str:
    page: str = await Store(stack.store_url).grep_tool_result(request)
    return page


def test_a_retried_tool_activity_writes_one_object(stack: Stack) -> None:
    """The tool's first attempt fails after its spill; the retry spills under the same key: one
    object, whose handle the model reads back."""
    figures, history = _run(
        'fetch 1 page of 50000 chars, then read ERROR', GraphSetup(overspill_queue=stack.queue), store=stack.store_url,
        interceptors=[FailFirstAttempt('fetch_page')],
    )
    assert figures.status == 'completed', figures
    [(activity_id, attempt, _)] = activity_calls(history, 'fetch_page')
    handle = f'{run_id_of(history)}/{activity_id}.0'
    assert attempt == 2 and objects(stack, run_id_of(history)) == [handle]
    assert figures.result.startswith(f'[handle {handle!r}: '), figures.result


def test_masking_clears_seen_outputs_in_the_state_and_the_model_reads_one_back(stack: Stack) -> None:
    """8 outputs of 20 KB under a 50,000-char budget, without reduction at the source: once over
    it, the `ToolMessage`s the model has seen (but the 3 newest of those) are replaced in the state
    by markers whose handles read the exact bytes back; the current turn's output is never masked;
    later inputs stop growing; each output is spilled once; the history replays."""
    setup = GraphSetup(overspill_queue=stack.queue, masking_budget=50_000)
    figures, history = _run('fetch 8 pages of 20000 chars, then read ERROR', setup)
    assert figures.status == 'completed', figures
    outputs = _tool_outputs(history)
    page = page_text(0, 20_000)
    handle = masked_key(run_id_of(history), 'call-0', page)
    assert outputs[-2][0] == mask_marker('fetch_page', handle, '20,000 chars', MASK_TOOLS)
    assert all(o.startswith("[Tool output of 'fetch_page' cleared from context") for o in outputs[-2][:4]), outputs[-2]
    assert outputs[-2][4:] == [page_text(n, 20_000) for n in (4, 5, 6, 7)], 'the 3 newest seen and the current turn stay'
    assert outputs[4] == [page_text(n, 20_000) for n in range(4)], 'under the budget nothing is masked'
    assert stored(stack, handle) == page.encode()
    spills = [data['key'] for _, _, data in activity_calls(history, 'tool_output_limits.spill')]
    assert [key.split('/')[1].split('.')[0] for key in spills] == [f'call-{k}' for k in range(5)], 'each spilled once'
    sizes = [len(json.dumps(data)) for _, _, data in activity_calls(history, 'crawl.agent')]
    assert max(sizes) < 100_000 < sizes[4] + 4 * 20_000, f'inputs stop growing at the budget and 3 outputs: {sizes}'
    errors = [line for line in page.split('\n') if 'ERROR' in line]
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[0]}"
    _replay(history, setup)


def test_a_tool_node_run_as_an_activity_has_each_tool_message_reduced(stack: Stack) -> None:
    """The prebuilt `ToolNode` as an activity node (`run_tool_node`), two calls at once in it:
    each `ToolMessage` of its update is spilled in the activity under `{run id}/{activity
    id}-{k}`, also when the tools return `Command`s (folded into one, which the plugin passes on);
    the read-back tools run in a workflow-side node; the history replays."""
    setup = GraphSetup(overspill_queue=stack.queue, tool_node_activity=True)
    for fetcher in ('fetch_page', 'fetch_page_command'):
        figures, history = _run(f'fetch 2 pages of 50000 chars at once using {fetcher}, then read ERROR', setup, store=stack.store_url)
        assert figures.status == 'completed', (fetcher, figures)
        [(activity_id, _, _)] = activity_calls(history, 'crawl.tools')
        handles = [f'{run_id_of(history)}/{activity_id}-{k}.0' for k in (0, 1)]
        assert sorted(objects(stack, run_id_of(history))) == handles and stored(stack, handles[1]) == page_text(1, 50_000).encode()
        assert [o[:80] for o in _tool_outputs(history)[1]] == [f"[Tool output too large (50,000 chars); stored to handle {h!r}."[:80] for h in handles]
        assert figures.result.startswith(f'[handle {handles[0]!r}: '), figures.result
        _replay(history, setup)


def test_a_bad_argument_goes_back_to_the_model_and_no_worker_ends_the_run(stack: Stack) -> None:
    """The worker's `ModelRetry` (`offset` < 0) reaches the model as the tool's error message; no
    Overspill worker on the read-back tools' queue ends the run with one line naming it."""
    figures, _ = _run('fetch 1 page of 50000 chars, then read ERROR at offset -1', GraphSetup(overspill_queue=stack.queue), store=stack.store_url)
    assert figures.status == 'completed' and figures.result == '`offset` must be >= 0.', figures
    nobody = f'nobody-{uuid.uuid4()}'
    figures, _ = _run('fetch 1 page of 50000 chars, then read ERROR', GraphSetup(overspill_queue=nobody, start_timeout=1), store=stack.store_url)
    assert figures.status.startswith('failed: '), figures
    assert f'no Overspill worker polls task queue {nobody!r}: tool_output_limits.read_tool_result waited 0:00:01' in figures.status


# --- without Temporal ---------------------------------------------------------------------------


def test_the_tools_are_the_engines_table() -> None:
    """`overspill_tools()` is the engine's read-back table as LangChain tools: what a chat model is
    sent (`convert_to_openai_tool`) is each tool's name, description and parameters, unchanged."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    tools = overspill_tools()
    for ours, table in zip(tools, READ_BACK_TOOLS, strict=True):
        sent = convert_to_openai_tool(ours)['function']
        assert (sent['name'], sent['description'], sent['parameters']) == (table.name, table.description, dict(table.parameters))


def test_a_langgraph_the_adapter_does_not_support_is_named() -> None:
    """The adapter's private LangGraph API is there; gone, the error names the installed version."""
    from langgraph.prebuilt import ToolNode
    from overspill._compat import UnsupportedVersion, installed
    from overspill._compat import langgraph as compat

    compat.check()

    moved = ToolNode([])
    moved.afunc = None  # as a release that dropped the async body would leave it

    with pytest.raises(UnsupportedVersion) as error:
        compat.tool_node_body(moved)
    assert f'langgraph-prebuilt {installed("langgraph-prebuilt")} has no async ToolNode.afunc' in str(error.value)
    assert f'Overspill supports langgraph-prebuilt{compat.SUPPORTED}' in str(error.value)
