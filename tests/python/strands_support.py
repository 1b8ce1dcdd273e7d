"""What the Strands tests (and `benches/frameworks.py`) share: a scripted model that implements
Strands' own `Model` (no network) and follows `agents_support`'s script, the agent workflow
(`activity_as_tool` tools, the MCP server `mcp_pages.py` over stdio, and with Overspill the
read-back tools and masking), the integration's plugin, and how a run is measured.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from agents_support import Framework, Measure, fetch_page, fetch_records, next_step, scheduled
from mcp import StdioServerParameters, stdio_client
from overspill.strands import OverspillMasking, OverspillPlugin, OverspillWorker, overspill_tools
from strands.agent.conversation_manager import NullConversationManager
from strands.hooks import AfterToolsEvent
from strands.middleware import InvokeModelStage
from strands.models import Model
from strands.tools.mcp import MCPClient
from temporalio import workflow
from temporalio.strands_agents import StrandsPlugin, TemporalAgent, TemporalMCPClient
from temporalio.strands_agents.workflow import activity_as_tool

MODEL_ACTIVITY = 'invoke_model'
"""The integration's model-call activity: its input carries the conversation so far, twice."""

MCP_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mcp_pages.py')


def result_text(result: Any) -> str:
    """A tool result's text blocks, one per line (else its content as JSON)."""
    content = result.get('content') or []
    if all(isinstance(block, dict) and 'text' in block for block in content):
        return '\n'.join(str(block['text']) for block in content)
    return json.dumps(content)


class ScriptedModel(Model):
    """A model that follows the prompt's script (`agents_support.next_step`)."""

    requests: ClassVar[list[int]] = []
    """Chars of model-visible text of each request this process's model got, in order."""

    def update_config(self, **model_config: Any) -> None:
        return None

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError('the scripted model has no structured output')

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any) -> AsyncIterable[Any]:
        ScriptedModel.requests.append(model_input_chars({'messages': messages, 'system_prompt': system_prompt}))
        blocks = [(message['role'], block) for message in messages for block in message['content']]
        prompt = next(block['text'] for role, block in blocks if role == 'user' and 'text' in block)
        calls = sum(1 for role, block in blocks if role == 'assistant' and 'toolUse' in block)
        outputs = [result_text(block['toolResult']) for _, block in blocks if 'toolResult' in block]
        step = next_step(prompt, calls, outputs)
        yield {'messageStart': {'role': 'assistant'}}
        if isinstance(step, str):
            yield {'contentBlockDelta': {'delta': {'text': step}}}
            yield {'contentBlockStop': {}}
            yield {'messageStop': {'stopReason': 'end_turn'}}
            return
        name, arguments = step
        yield {'contentBlockStart': {'start': {'toolUse': {'name': name, 'toolUseId': f'tu-{calls}'}}}}
        yield {'contentBlockDelta': {'delta': {'toolUse': {'input': json.dumps(arguments)}}}}
        yield {'contentBlockStop': {}}
        yield {'messageStop': {'stopReason': 'tool_use'}}


def mcp_client() -> MCPClient:
    """The MCP server `mcp_pages.py`, over stdio."""
    return MCPClient(lambda: stdio_client(StdioServerParameters(command=sys.executable, args=[MCP_SERVER])))


def plugin() -> StrandsPlugin:
    """The integration's plugin, with the scripted model and the MCP server `pages` (give it to
    the client only: on a worker too, it would register its activities twice)."""
    return StrandsPlugin(models={'scripted': ScriptedModel}, mcp_clients={'pages': mcp_client})


@dataclass
class AgentRequest:
    """What the agent workflow runs: a prompt for the scripted model, and how Overspill serves it
    (nothing by default: the integration's docs' setup)."""

    prompt: str
    mcp: bool = False
    """The agent has the MCP server's tools."""
    overspill_queue: str = ''
    """The Overspill worker's task queue: the agent gets `overspill_tools()` on it ('': none)."""
    masking_budget: int | None = None
    """`OverspillMasking`'s budget in chars (None: no masking)."""
    overspill_start_timeout: float = 10.0
    """How long an Overspill activity waits for a worker to start it, in seconds."""
    turn_calls: int = 0
    """End the agent's turn after this many tool batches, then invoke it again (0: one turn):
    Strands runs each tool cycle one recursion level deeper than the last, so one invocation ends
    in a RecursionError near 320 tool calls."""


NEXT_TURN = 'next turn'
"""What an agent's turn ends with when `turn_calls` ends it."""


@workflow.defn
class StrandsAgent:
    """A Strands agent on Temporal whose tools are activities (`activity_as_tool`, MCP)."""

    @workflow.run
    async def run(self, request: AgentRequest) -> str:
        timeout = timedelta(seconds=60)
        tools: list[Any] = [activity_as_tool(tool, start_to_close_timeout=timeout) for tool in (fetch_page, fetch_records)]
        if request.mcp:
            tools.append(TemporalMCPClient('pages', cache_tools=True, start_to_close_timeout=timeout))
        masking = None
        if request.overspill_queue:
            worker = OverspillWorker(request.overspill_queue, start_timeout=timedelta(seconds=request.overspill_start_timeout))
            tools += overspill_tools(worker)
            if request.masking_budget is not None:
                masking = OverspillMasking(budget=request.masking_budget, worker=worker)
        agent = TemporalAgent(
            model='scripted',
            start_to_close_timeout=timeout,
            system_prompt='Fetch the pages you are asked for, then answer.',
            tools=tools,
            callback_handler=None,
            # The whole conversation, turn after turn: Strands' default keeps the last 40 messages
            # once a turn ends, dropping the rest (lossy where masking is not).
            conversation_manager=NullConversationManager(),
        )
        if masking is not None:
            agent.add_middleware(InvokeModelStage.Input, masking)
        if request.turn_calls:
            batches = [0]

            def end_turn(event: AfterToolsEvent) -> None:
                batches[0] += 1
                if batches[0] % request.turn_calls == 0:
                    event.end_turn = NEXT_TURN

            agent.hooks.add_callback(AfterToolsEvent, end_turn)
        answer = str(await agent.invoke_async(request.prompt)).strip()
        while answer == NEXT_TURN:
            answer = str(await agent.invoke_async('go on')).strip()
        return answer


def model_input_chars(model_input: dict[str, Any]) -> int:
    """Chars of model-visible text in one model-call input (as JSON): the system prompt, texts,
    tool uses' names and inputs, and results' outputs (the messages once: the copy in
    `invocation_state` is the model activity's, not the model's)."""
    chars = len(model_input.get('system_prompt') or '')
    for message in model_input.get('messages') or ():
        for block in message.get('content') or ():
            if 'text' in block:
                chars += len(block['text'])
            if 'toolUse' in block:
                chars += len(block['toolUse'].get('name', '')) + len(json.dumps(block['toolUse'].get('input')))
            if 'toolResult' in block:
                chars += len(result_text(block['toolResult']))
    return chars


def model_results(history: Any) -> list[list[dict[str, Any]]]:
    """The tool results each model call's recorded input carries in its messages."""
    return [
        [block['toolResult'] for message in json.loads(data).get('messages') or ()
         for block in message.get('content') or () if 'toolResult' in block]
        for data in scheduled(history, MODEL_ACTIVITY)
    ]


FRAMEWORK = Framework(
    name='strands',
    agent=StrandsAgent,
    request=AgentRequest,
    model=ScriptedModel,
    plugin=plugin,
    overspill=OverspillPlugin,
    activities=(fetch_page, fetch_records),
    measure=Measure(
        is_model=lambda name: name == MODEL_ACTIVITY,
        model_chars=lambda _, data: model_input_chars(json.loads(data)),
        is_tool=lambda name: name in ('fetch_page', 'fetch_records') or name.endswith('-call-tool'),
    ),
    outputs=lambda history: [[result_text(r) for r in call] for call in model_results(history)],
    records=('records 2000', 'select(.status == "ERROR") | .id'),
    masked_call=lambda n: f'tu-{n}',
    quickstart='strands_quickstart.py',
)
"""Strands, as the shared tests and the bench drive it."""
