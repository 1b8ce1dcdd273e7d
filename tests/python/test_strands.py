"""Strands on Temporal (`temporalio.strands_agents`) with Overspill (`overspill.strands`).

A scripted model (`strands_support.ScriptedModel`, Strands' own `Model`) drives an agent whose
tools are activities: `activity_as_tool` tools and the MCP server `mcp_pages.py` over stdio
(`TemporalMCPClient`). Every model call is an activity whose input carries the whole conversation
so far, twice: as its messages and in its `invocation_state`. The tests every adapter passes are
`framework_tests`'; Strands' own follow.

Needs `TEMPORAL_ADDRESS`, `OVERSPILL_TEST_S3_URL` with the `AWS_*` variables, and `OVERSPILL_BIN`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agents_support import RECORD_LINES, RECORDS, Framework, Stack, completed, run_id_of, stored, tool_calls
from framework_tests import *  # noqa: F403 - the tests every adapter passes, run here with `framework`
from overspill import DEFAULT_LIMITS, READ_BACK_TOOLS, mask_marker
from strands_support import FRAMEWORK
from support import page_text

MASK_TOOLS = ('read_tool_result', 'grep_tool_result', 'query_tool_result')


@pytest.fixture(scope='module')
def framework() -> Framework:
    return FRAMEWORK


def test_the_model_sees_the_rust_workers_text_for_tool_mcp_and_records_outputs(stack: Stack) -> None:
    """A 200 KB `activity_as_tool` output, a 200 KB MCP output (`pages-call-tool`) and 2,000
    records reach the model as what the Overspill worker's own `tool_output_limits.reduce` makes
    of the same output, call and limits, byte for byte. The MCP result keeps its `toolUseId` and
    status, names the MCP tool, and has no `structuredContent` (FastMCP's second copy of the
    text); `list_tool_results` lists them; the history replays."""
    prompt = 'fetch 1 page of 200000 chars, then mcp 1 page of 200000 chars, then records 2000, then list'
    figures, history = FRAMEWORK.run(FRAMEWORK.request(prompt, mcp=True, overspill_queue=stack.queue), stack)
    assert figures.status == 'completed', figures
    run_id = run_id_of(history)
    calls = [tool_calls(history, tool)[0][0] for tool in ('fetch_page', 'pages-call-tool', 'fetch_records')]
    [mcp_result] = completed(history, 'pages-call-tool')
    assert mcp_result['toolUseId'] == 'tu-1' and set(mcp_result) == {'status', 'toolUseId', 'content', 'isError'}, mcp_result
    page = page_text(0, 200_000)
    cases = [('fetch_page', {'text': page}, page), ('mcp_page', {'text': page}, page), ('fetch_records', {'json': RECORDS}, RECORD_LINES)]
    for (tool, output, spilled), call, seen in zip(cases, calls, FRAMEWORK.outputs(history)[-1][:3], strict=True):
        request = {'tool_name': tool, 'run_id': run_id, 'tool_call_id': call, 'output': output, 'config': dict(DEFAULT_LIMITS)}
        reduced = FRAMEWORK.reduce_on_worker(stack, request)
        assert reduced['return_value'] == {'text': seen} and seen.startswith('[Tool output too large ('), (tool, seen[:300])
        assert stored(stack, f'{run_id}/{call}.0') == spilled.encode()
        assert f"'{run_id}/{call}.0': {tool}, " in figures.result, figures.result
    FRAMEWORK.replay(history)


# --- without Temporal -----------------------------------------------------------------------------------


def test_the_tools_are_the_engines_table_as_strands_tools() -> None:
    """Each read-back tool's spec is the table's name, description and schema (no copy of a tool's
    words here; every argument described, so Strands adds none of its own), and survives Strands'
    registration unchanged."""
    from overspill.strands import overspill_tools
    from strands.tools.registry import ToolRegistry

    registry = ToolRegistry()
    for tool, table in zip(overspill_tools(), READ_BACK_TOOLS, strict=True):
        registry.register_tool(tool)
        spec = tool.tool_spec
        registry.validate_tool_spec(spec)
        assert spec == {'name': table.name, 'description': table.description, 'inputSchema': {'json': table.parameters}}
        assert '.' not in tool.tool_name
    assert [s['name'] for s in registry.get_all_tool_specs()] == [t.name for t in READ_BACK_TOOLS]


def test_the_private_apis_relied_on_are_there_and_a_missing_one_names_the_version() -> None:
    from overspill._compat import UnsupportedVersion, fields, installed
    from overspill._compat import strands as compat
    from temporalio.strands_agents._temporal_mcp_client import _CallToolArgs

    compat.check()  # fails on an unsupported temporalio-strands-agents, naming its version
    with pytest.raises(UnsupportedVersion) as error:
        fields(_CallToolArgs, ('name',), package='temporalio-strands-agents', supported=compat.SUPPORTED)
    assert str(error.value) == (
        f'temporalio-strands-agents {installed("temporalio-strands-agents")} has no field _CallToolArgs.name, which '
        f'Overspill relies on: Overspill supports temporalio-strands-agents{compat.SUPPORTED}'
    )


def test_masking_examines_only_what_is_new_and_masks_both_copies() -> None:
    """`OverspillMasking` over 500 model calls whose outputs were spilled at the source (MCP
    results with their `structuredContent`): each message is examined once (Strands copies the
    conversation at every call), the masked results keep their at-source handles (no spill) and
    lose their `structuredContent`, the current turn's is never masked, `invocation_state`'s
    `messages` are the masked ones in a copy of the state, and the agent's own are untouched."""
    from overspill.strands import OverspillMasking
    from strands.middleware import InvokeModelContext

    masking = OverspillMasking(budget=30_000)
    messages: list[Any] = [{'role': 'user', 'content': [{'text': 'fetch'}]}]
    state: dict[str, Any] = {'messages': messages}

    async def run() -> InvokeModelContext:
        sent: Any = None
        for k in range(500):
            marker = f"[Tool output too large (200,000 chars); stored to handle 'run/{k}.0'. …]\n" + 'x' * 1_000
            use = {'toolUseId': f'tu-{k}', 'name': 'mcp_page', 'input': {}}
            result = {'toolUseId': f'tu-{k}', 'status': 'success', 'content': [{'text': marker}], 'structuredContent': {'result': marker}}
            messages.extend([{'role': 'assistant', 'content': [{'toolUse': use}]}, {'role': 'user', 'content': [{'toolResult': result}]}])
            context = InvokeModelContext(
                agent=None, messages=json.loads(json.dumps(messages)), system_prompt='go', tool_specs=[],  # type: ignore[arg-type]
                tool_choice=None, invocation_state=state, model=None,  # type: ignore[arg-type]
            )
            sent = await masking(context)
        return sent

    sent = asyncio.run(run())
    assert masking._conversations._outside is not None and masking._conversations._outside.examined == len(messages) == 1_001
    results = [b['toolResult'] for m in sent.messages for b in m['content'] if 'toolResult' in b]
    masked = mask_marker('mcp_page', 'run/0.0', '200,000 chars', MASK_TOOLS)
    assert results[0] == {'toolUseId': 'tu-0', 'status': 'success', 'content': [{'text': masked}]}
    assert all(r['content'][0]['text'].startswith('[Tool output of') for r in results[:-4])
    assert results[-1]['content'][0]['text'].startswith('[Tool output too large') and 'structuredContent' in results[-1]
    assert sent.invocation_state == {'messages': sent.messages} and state['messages'] is messages
    assert all('structuredContent' in b['toolResult'] for m in messages for b in m['content'] if 'toolResult' in b)
