"""What the Google ADK tests (and `benches/frameworks.py`) share: a scripted model that implements
ADK's own `BaseLlm` (registered in this process, no network) and follows `agents_support`'s script,
the agent workflow (`activity_as_tool` tools, the MCP server `mcp_pages.py` over stdio, and with
Overspill the read-back tools and masking), the integration's plugin, and how a run is measured.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from agents_support import Framework, Measure, fetch_page, fetch_report, next_step, scheduled
from google.adk import Agent
from google.adk.agents.run_config import RunConfig
from google.adk.models import BaseLlm, LLMRegistry
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools.mcp_tool import McpToolset
from google.adk.tools.mcp_tool.mcp_session_manager import StdioConnectionParams
from google.genai import types
from mcp import StdioServerParameters
from overspill.google_adk import OverspillMasking, OverspillPlugin, OverspillWorker, overspill_tools
from temporalio import workflow
from temporalio.google_adk import GoogleAdkPlugin, TemporalMcpToolSet, TemporalMcpToolSetProvider, TemporalModel
from temporalio.google_adk.workflow import activity_as_tool

MODEL_ACTIVITY = 'invoke_model'
"""The integration's model-call activity: its input is the whole conversation so far."""

MCP_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mcp_pages.py')


def response_text(response: Any) -> str:
    """A function response as the script reads it: ADK's `{"result": text}`, an MCP result's text
    blocks, else its JSON."""
    if isinstance(response, dict) and response.keys() == {'result'} and isinstance(response['result'], str):
        return response['result']
    if isinstance(response, dict) and isinstance(response.get('content'), list):
        return '\n'.join(str(block.get('text', '')) for block in response['content'] if isinstance(block, dict))
    return json.dumps(response)


class ScriptedLlm(BaseLlm):
    """A model that follows the prompt's script (`agents_support.next_step`)."""

    requests: ClassVar[list[int]] = []
    """Chars of model-visible text of each request this process's model got, in order."""

    @classmethod
    def supported_models(cls) -> list[str]:
        return ['scripted']

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        ScriptedLlm.requests.append(model_input_chars(llm_request.model_dump(mode='json', exclude_none=True)))
        parts = [(content.role, part) for content in llm_request.contents for part in content.parts or ()]
        prompt = next(part.text for role, part in parts if role == 'user' and part.text)
        calls = sum(1 for role, part in parts if role == 'model' and part.function_call)
        outputs = [response_text(part.function_response.response) for _, part in parts if part.function_response]
        step = next_step(prompt, calls, outputs)
        if isinstance(step, str):
            answer = types.Part(text=step)
        else:
            answer = types.Part(function_call=types.FunctionCall(name=step[0], args=step[1]))
        yield LlmResponse(content=types.Content(role='model', parts=[answer]))


LLMRegistry.register(ScriptedLlm)


def mcp_toolset(_: Any = None) -> McpToolset:
    """The MCP server `mcp_pages.py`, over stdio."""
    server = StdioServerParameters(command=sys.executable, args=[MCP_SERVER])
    return McpToolset(connection_params=StdioConnectionParams(server_params=server, timeout=30))


def plugin() -> GoogleAdkPlugin:
    """The integration's plugin, with the MCP server as the toolset `pages`."""
    return GoogleAdkPlugin(toolset_providers=[TemporalMcpToolSetProvider('pages', mcp_toolset)])


@dataclass
class AgentRequest:
    """What the agent workflow runs: a prompt for the scripted model, and how Overspill serves it
    (nothing by default: the integration's docs' setup)."""

    prompt: str
    mcp: bool = False
    """The agent has the MCP server's tools (each model call then lists them, an activity)."""
    overspill_queue: str = ''
    """The Overspill worker's task queue: the agent gets `overspill_tools()` on it ('': none)."""
    masking_budget: int | None = None
    """`OverspillMasking`'s budget in chars (None: no masking)."""
    overspill_start_timeout: float = 10.0
    """How long an Overspill activity waits for a worker to start it, in seconds."""
    max_calls: int = 1_100
    """The model calls ADK allows the run (`RunConfig.max_llm_calls`)."""


@workflow.defn
class AdkAgent:
    """An ADK agent on Temporal whose tools are activities (`activity_as_tool`, MCP)."""

    @workflow.run
    async def run(self, request: AgentRequest) -> str:
        timeout = timedelta(seconds=60)
        tools: list[Any] = [activity_as_tool(tool, start_to_close_timeout=timeout) for tool in (fetch_page, fetch_report)]
        if request.mcp:
            tools.append(TemporalMcpToolSet('pages'))
        masking = None
        if request.overspill_queue:
            worker = OverspillWorker(request.overspill_queue, start_timeout=timedelta(seconds=request.overspill_start_timeout))
            tools += overspill_tools(worker)
            if request.masking_budget is not None:
                masking = OverspillMasking(budget=request.masking_budget, worker=worker)
        agent = Agent(
            name='crawler',
            model=TemporalModel('scripted', {'start_to_close_timeout': timeout}),
            instruction='Fetch the pages you are asked for, then answer.',
            tools=tools,
            before_model_callback=masking,
        )
        runner = InMemoryRunner(agent=agent, app_name='crawl')
        session = await runner.session_service.create_session(app_name='crawl', user_id='user')
        message = types.Content(role='user', parts=[types.Part(text=request.prompt)])
        answer = ''
        async for event in runner.run_async(
            user_id='user', session_id=session.id, new_message=message, run_config=RunConfig(max_llm_calls=request.max_calls)
        ):
            for part in (event.content.parts if event.content else None) or ():
                if part.text:
                    answer = part.text
        return answer


def model_input_chars(request: dict[str, Any]) -> int:
    """Chars of model-visible text in one model-call input (an `LlmRequest`, as JSON): the system
    instruction, texts, calls' names and arguments, and responses' outputs."""
    instruction = (request.get('config') or {}).get('system_instruction')
    chars = len(instruction) if isinstance(instruction, str) else 0
    for content in request.get('contents') or ():
        for part in content.get('parts') or ():
            if part.get('text'):
                chars += len(part['text'])
            if part.get('function_call'):
                chars += len(part['function_call'].get('name', '')) + len(json.dumps(part['function_call'].get('args') or {}))
            if part.get('function_response'):
                chars += len(response_text(part['function_response'].get('response')))
    return chars


def model_responses(history: Any) -> list[list[dict[str, Any]]]:
    """The function responses (`name`, `response`) each model call's recorded input carries."""
    return [
        [part['function_response'] for content in json.loads(data).get('contents') or ()
         for part in content.get('parts') or () if part.get('function_response')]
        for data in scheduled(history, MODEL_ACTIVITY)
    ]


FRAMEWORK = Framework(
    name='google-adk',
    agent=AdkAgent,
    request=AgentRequest,
    model=ScriptedLlm,
    plugin=plugin,
    overspill=OverspillPlugin,
    activities=(fetch_page, fetch_report),
    measure=Measure(
        is_model=lambda name: name == MODEL_ACTIVITY,
        model_chars=lambda _, data: model_input_chars(json.loads(data)),
        is_tool=lambda name: name in ('fetch_page', 'fetch_report') or name.endswith('-call-tool'),
    ),
    outputs=lambda history: [[response_text(r['response']) for r in call] for call in model_responses(history)],
    records=('report 2000', '.records[] | select(.status == "ERROR") | .id'),
    masked_call=lambda _: 'fetch_page',  # ADK leaves the call ids out of the model's request
    quickstart='google_adk_quickstart.py',
)
"""Google ADK, as the shared tests and the bench drive it."""
