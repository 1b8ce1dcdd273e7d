"""Google ADK on Temporal (`temporalio.google_adk`) with Overspill (`overspill.google_adk`).

A scripted model (`google_adk_support.ScriptedLlm`, ADK's own `BaseLlm`) drives an agent whose
tools are activities: `activity_as_tool` tools and the MCP server `mcp_pages.py` over stdio
(`TemporalMcpToolSet`). Every model call is an activity whose input carries the whole
conversation so far. The tests every adapter passes are `framework_tests`'; ADK's own follow.

Needs `TEMPORAL_ADDRESS`, `OVERSPILL_TEST_S3_URL` with the `AWS_*` variables, and `OVERSPILL_BIN`.
"""

from __future__ import annotations

import asyncio

import pytest
from agents_support import Framework, Stack, completed, run_id_of, stored, tool_calls
from framework_tests import *  # noqa: F403 - the tests every adapter passes, run here with `framework`
from google_adk_support import FRAMEWORK, model_responses
from overspill import DEFAULT_LIMITS, READ_BACK_TOOLS, mask_marker
from support import page_text

MASK_TOOLS = ('read_tool_result', 'grep_tool_result', 'query_tool_result')


@pytest.fixture(scope='module')
def framework() -> Framework:
    return FRAMEWORK


def test_the_model_sees_the_rust_workers_text_for_tool_and_mcp_outputs(stack: Stack) -> None:
    """A 200 KB `activity_as_tool` output and a 200 KB MCP output (`pages-call-tool`) reach the
    model as what the Overspill worker's own `tool_output_limits.reduce` makes of the same output,
    call and limits, byte for byte. The MCP result keeps its envelope and `tool_context`, is keyed
    by ADK's function call id, names the MCP tool, and has no `structuredContent` (FastMCP's second
    copy of the text); `list_tool_results` lists both; the history replays."""
    prompt = 'fetch 1 page of 200000 chars, then mcp 1 page of 200000 chars, then list'
    figures, history = FRAMEWORK.run(FRAMEWORK.request(prompt, mcp=True, overspill_queue=stack.queue), stack)
    assert figures.status == 'completed', figures
    run_id = run_id_of(history)
    [(activity_id, _)] = tool_calls(history)
    [mcp_result] = completed(history, 'pages-call-tool')
    call_id = mcp_result['tool_context']['function_call_id']
    assert call_id.startswith('adk-') and set(mcp_result['result']) == {'content', 'isError'}, mcp_result
    fetched, mcp = model_responses(history)[-1][:2]
    assert mcp['response'] == mcp_result['result'] and mcp['name'] == 'mcp_page'
    cases = [('fetch_page', activity_id, fetched['response']['result']), ('mcp_page', call_id, mcp['response']['content'][0]['text'])]
    for tool, call, seen in cases:
        output = {'text': page_text(0, 200_000)}
        request = {'tool_name': tool, 'run_id': run_id, 'tool_call_id': call, 'output': output, 'config': dict(DEFAULT_LIMITS)}
        reduced = FRAMEWORK.reduce_on_worker(stack, request)
        assert reduced['return_value'] == {'text': seen} and seen.startswith('[Tool output too large ('), (tool, seen[:300])
        assert stored(stack, f'{run_id}/{call}.0') == page_text(0, 200_000).encode()
        assert f"'{run_id}/{call}.0': {tool}, 200,000 chars" in figures.result, figures.result
    FRAMEWORK.replay(history)


# --- without Temporal -----------------------------------------------------------------------------------


def test_the_tools_are_the_engines_table_as_adk_declarations() -> None:
    """Each read-back tool is declared to the model with the table's name, description and
    schema (no copy of a tool's words here)."""
    from overspill.google_adk import overspill_tools

    for tool, table in zip(overspill_tools(), READ_BACK_TOOLS, strict=True):
        declaration = tool._get_declaration()
        assert declaration is not None
        assert (declaration.name, declaration.description) == (table.name, table.description)
        assert declaration.parameters_json_schema == table.parameters and '.' not in table.name


def test_the_private_apis_relied_on_are_there_and_a_missing_one_names_the_version() -> None:
    from overspill._compat import UnsupportedVersion, fields, installed
    from overspill._compat import google_adk as compat
    from temporalio.google_adk._mcp import _CallToolResult

    compat.check()  # fails on an unsupported google-adk or temporalio-google-adk, naming its version
    with pytest.raises(UnsupportedVersion) as error:
        fields(_CallToolResult, ('response',), package='temporalio-google-adk', supported=compat.SUPPORTED_INTEGRATION)
    assert str(error.value) == (
        f'temporalio-google-adk {installed("temporalio-google-adk")} has no field _CallToolResult.response, which '
        f'Overspill relies on: Overspill supports temporalio-google-adk{compat.SUPPORTED_INTEGRATION}'
    )


def test_masking_examines_only_what_is_new_and_leaves_the_session_alone() -> None:
    """`OverspillMasking` over 500 model calls whose outputs were spilled at the source: each
    content is examined once (ADK rebuilds the request at every call), the masked responses keep
    their at-source handles (no spill), the current turn's output is never masked, and the
    session's own contents (which a request's parts share nested fields with) are untouched."""
    from google.adk.models.llm_request import LlmRequest
    from google.genai import types
    from overspill.google_adk import OverspillMasking

    masking = OverspillMasking(budget=30_000)
    session: list[types.Content] = [types.Content(role='user', parts=[types.Part(text='fetch')])]

    async def run() -> list[types.Content]:
        sent: list[types.Content] = []
        for k in range(500):
            marker = f"[Tool output too large (200,000 chars); stored to handle 'run/{k}.0'. …]\n" + 'x' * 1_000
            call = types.Part.from_function_call(name='fetch_page', args={'n': k})
            response = types.Part.from_function_response(name='fetch_page', response={'result': marker})
            session.extend([types.Content(role='model', parts=[call]), types.Content(role='user', parts=[response])])
            # ADK's request: a copy of each content and part, nested fields shared with the session
            request = LlmRequest(contents=[c.model_copy(update={'parts': [p.model_copy() for p in c.parts or ()]}) for c in session])
            await masking(None, request)  # type: ignore[arg-type]
            sent = request.contents
        return sent

    sent = asyncio.run(run())
    assert masking._conversations._outside is not None and masking._conversations._outside.examined == len(session) == 1_001
    outputs = [(p.function_response.response or {})['result'] for c in sent for p in c.parts or () if p.function_response]
    assert outputs[0] == mask_marker('fetch_page', 'run/0.0', '200,000 chars', MASK_TOOLS)
    assert all(o.startswith('[Tool output of') for o in outputs[:-4]) and outputs[-1].startswith('[Tool output too large')
    session_outputs = [(p.function_response.response or {})['result'] for c in session for p in c.parts or () if p.function_response]
    assert all(o.startswith('[Tool output too large') for o in session_outputs)
