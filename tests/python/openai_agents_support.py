"""What the OpenAI Agents SDK tests (and `benches/openai_agents.py`) share: a scripted model that
implements the SDK's own `Model` and `ModelProvider` (as `temporalio.openai_agents.testing` does;
no network), the agent workflow (and the same agent on pydantic-ai, for the side by side), and
how a run is measured. The tools, the script and the run's figures are every framework's
(`agents_support`).

The model answers from its input alone, so a retried or replayed model activity answers the
same: the prompt `fetch 100 pages of 200000 chars` makes it call `fetch_page` 100 times, then
answer; `, then read <pattern> [at offset <n>]` after it makes it read back, through
`read_tool_result`, the first line containing the pattern (after `n` of them) of the first
output that names a handle (a spill or a mask marker), and answer with what that returned (see
`agents_support.next_step` for every step).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

# No traces to export: the runs have no OpenAI key, and the SDK would say so on every run.
os.environ.setdefault('OPENAI_AGENTS_DISABLE_TRACING', '1')

import agents_support  # noqa: E402
from agents import (  # noqa: E402
    Agent,
    AgentOutputSchemaBase,
    Handoff,
    Model,
    ModelProvider,
    ModelResponse,
    ModelSettings,
    ModelTracing,
    RunConfig,
    Runner,
    Tool,
    TResponseInputItem,
    Usage,
)
from agents_support import Measure, RunFigures, fetch_page, fetch_records  # noqa: E402
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from overspill.openai_agents import OverspillMasking, OverspillWorker, overspill_tools
from pydantic_ai.usage import UsageLimits
from support import page_text
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.workflow import activity_as_tool

MODEL_ACTIVITY = 'invoke_model_activity'
"""The integration's model-call activity: its input is the whole conversation so far."""

_PROMPT = re.compile(r'fetch (\d+) pages? of (\d+) chars')


# --- the scripted model ----------------------------------------------------------------------


def item_text(item: Any) -> str:
    """The model-visible text of one input item: a message's text, a call's arguments, an output."""
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        return ''
    kind = item.get('type')
    if kind == 'function_call':
        return str(item.get('arguments', ''))
    if kind == 'function_call_output':
        output = item.get('output', '')
        return output if isinstance(output, str) else json.dumps(output)
    content = item.get('content', '')
    if isinstance(content, str):
        return content
    return ''.join(str(part.get('text', '')) for part in content if isinstance(part, dict))


@dataclass
class ScriptedModel(Model):
    """A model that follows the prompt's script (see the module docstring), counting what it is sent."""

    requests: list[int] = field(default_factory=list)
    """Chars of model-visible text (instructions and items) of each request, in order."""

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        **kwargs: Any,
    ) -> ModelResponse:
        items: list[Any] = [{'role': 'user', 'content': input}] if isinstance(input, str) else list(input)
        self.requests.append(len(system_instructions or '') + sum(len(item_text(i)) for i in items))
        return ModelResponse(output=[next_step(items)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError('the scripted model does not stream')


def next_step(items: Sequence[Any]) -> Any:
    """The script (`agents_support.next_step`): the model's next output item for a conversation."""
    prompt = next(item_text(i) for i in items if isinstance(i, dict) and i.get('role') == 'user')
    calls = [i for i in items if isinstance(i, dict) and i.get('type') == 'function_call']
    outputs = [item_text(i) for i in items if isinstance(i, dict) and i.get('type') == 'function_call_output']
    step = agents_support.next_step(prompt, len(calls), outputs)
    return _message(step) if isinstance(step, str) else _call(len(calls), *step)


def _call(k: int, name: str, arguments: dict[str, Any]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        arguments=json.dumps(arguments),
        call_id=f'call-{k}',
        name=name,
        type='function_call',
        id=f'fc-{k}',
        status='completed',
    )


def _message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id='msg',
        content=[ResponseOutputText(text=text, annotations=[], type='output_text')],
        role='assistant',
        status='completed',
        type='message',
    )


class ScriptedProvider(ModelProvider):
    """The `ModelProvider` of the scripted model, whatever model name an agent asks for."""

    def __init__(self, model: ScriptedModel | None = None) -> None:
        self.model = model or ScriptedModel()

    def get_model(self, model_name: str | None) -> Model:
        return self.model


def plugin(provider: ScriptedProvider) -> OpenAIAgentsPlugin:
    """The integration's plugin with the scripted model, for the client (and so its workers)."""
    return OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(
            start_to_close_timeout=timedelta(seconds=60), retry_policy=RetryPolicy(maximum_attempts=3)
        ),
        model_provider=provider,
    )


# --- the agent workflow ----------------------------------------------------------------------


@dataclass
class AgentRequest:
    """What the agent workflow runs: a prompt for the scripted model, how many turns it may take,
    and how Overspill serves it (nothing by default: the integration's docs' setup)."""

    prompt: str
    max_turns: int = 1_000
    overspill_queue: str = ''
    """The Overspill worker's task queue: the agent gets `overspill_tools()` on it ('': none)."""
    masking_budget: int | None = None
    """`OverspillMasking`'s budget in chars (None: no masking)."""
    overspill_start_timeout: float = 10.0
    """How long an Overspill activity waits for a worker to start it, in seconds."""


@workflow.defn
class CrawlAgent:
    """An OpenAI agent on Temporal whose tool is an activity (`activity_as_tool`)."""

    @workflow.run
    async def run(self, request: AgentRequest) -> str:
        tools: list[Tool] = [
            activity_as_tool(tool, start_to_close_timeout=timedelta(seconds=60)) for tool in (fetch_page, fetch_records)
        ]
        run_config = RunConfig()
        start_timeout = timedelta(seconds=request.overspill_start_timeout)
        if request.overspill_queue:
            tools += overspill_tools(task_queue=request.overspill_queue, start_timeout=start_timeout)
        if request.masking_budget is not None:
            worker = OverspillWorker(task_queue=request.overspill_queue, start_timeout=start_timeout)
            run_config = RunConfig(call_model_input_filter=OverspillMasking(budget=request.masking_budget, worker=worker))
        agent = Agent[None](name='crawler', instructions='Fetch the pages you are asked for, then answer.', tools=tools)
        result = await Runner.run(agent, request.prompt, max_turns=request.max_turns, run_config=run_config)
        return str(result.final_output)


# --- a run's figures -------------------------------------------------------------------------


MEASURE = Measure(
    is_model=lambda name: name == MODEL_ACTIVITY or name.endswith('__model_request'),
    model_chars=lambda name, data: model_input_chars(data) if name == MODEL_ACTIVITY else pydantic_input_chars(data),
    is_tool=lambda name: name == 'fetch_page' or name.endswith('__call_tool'),
)
"""The OpenAI agent's model calls and tool calls (and pydantic-ai's, for the side by side)."""


async def run_agent(client: Client, run: Any, arg: Any, *, task_queue: str, timeout: float) -> tuple[RunFigures, Any]:
    """`agents_support.run_agent` for the OpenAI agent (or the pydantic-ai one)."""
    return await agents_support.run_agent(client, run, arg, task_queue=task_queue, timeout=timeout, measure=MEASURE)


def model_input_chars(data: bytes) -> int:
    """Chars of model-visible text in one recorded model-call input (`ActivityModelInput`)."""
    model_input = json.loads(data)
    items = model_input['input']
    items = [items] if isinstance(items, str) else items
    return len(model_input.get('system_instructions') or '') + sum(len(item_text(i)) for i in items)


# --- the same agent on pydantic-ai, for the side by side ---------------------------------------


def pydantic_agent(
    name: str, store_url: str | None, overspill_queue: str = '', masking_budget: int | None = None
) -> tuple[type, Any, Any]:
    """The crawler as a pydantic-ai agent on `TemporalDurability`, with the same scripted model:
    its workflow class, and the `ToolOutputLimits` it has (`None` without Overspill: nothing limits
    what the tool returns) and the `OverspillInterceptor` for its worker (or `None`). With a store,
    outputs are reduced under the limits' defaults (spilled over 10,000 chars) by the interceptor,
    in the tool's activity, and with `masking_budget` older returns are masked
    (`ProcessHistory(OverspillMasking(store, budget=masking_budget))`)."""
    from overspill.pydantic_ai import OverspillInterceptor as PydanticInterceptor
    from overspill.pydantic_ai import OverspillStore
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.durable_exec.temporal import TemporalDurability
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse as PydanticResponse, TextPart
    from pydantic_ai.messages import ToolCallPart, ToolReturnPart, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai_harness.tool_output_limits import ToolOutputLimits

    async def fetch_page(n: int, chars: int) -> str:
        """Fetch page `n` of the crawl log."""
        return page_text(n, chars)

    async def model(messages: list[ModelMessage], info: AgentInfo) -> PydanticResponse:
        parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
        prompt = ' '.join(str(p.content) for p in parts if isinstance(p, UserPromptPart))
        script = _PROMPT.search(prompt)
        assert script is not None, prompt
        pages, chars = int(script[1]), int(script[2])
        fetched = sum(1 for p in parts if isinstance(p, ToolReturnPart))
        if fetched < pages:
            return PydanticResponse(parts=[ToolCallPart('fetch_page', {'n': fetched, 'chars': chars}, tool_call_id=f'call-{fetched}')])
        return PydanticResponse(parts=[TextPart(f'fetched {fetched} pages')])

    capabilities: list[Any] = []
    limits = interceptor = None
    if store_url is not None:
        store = OverspillStore(store_url, task_queue=overspill_queue)
        limits = ToolOutputLimits(store=store)
        capabilities.append(limits)
        interceptor = PydanticInterceptor(limits)
        if masking_budget is not None:
            from overspill.pydantic_ai import OverspillMasking as PydanticMasking
            from pydantic_ai.capabilities import ProcessHistory

            capabilities.append(ProcessHistory(PydanticMasking(store, budget=masking_budget)))
    capabilities.append(TemporalDurability(activity_config={'start_to_close_timeout': timedelta(seconds=60)}))
    agent = PydanticAgent(FunctionModel(model, model_name='scripted'), name=name, tools=[fetch_page], capabilities=capabilities)

    workflow_class = PydanticCrawl if store_url is None else PydanticCrawlOverspill
    # Read by PydanticAIPlugin when the worker is built: it registers the agent's activities.
    workflow_class.__pydantic_ai_agents__ = (agent,)
    return workflow_class, limits, interceptor


@workflow.defn
class PydanticCrawl:
    """The crawler on pydantic-ai (the agent `pydantic_agent` set last, without Overspill)."""

    __pydantic_ai_agents__: tuple[Any, ...] = ()

    @workflow.run
    async def run(self, request: AgentRequest) -> str:
        limits = UsageLimits(request_limit=request.max_turns)
        return str((await self.__pydantic_ai_agents__[0].run(request.prompt, usage_limits=limits)).output)


@workflow.defn
class PydanticCrawlOverspill(PydanticCrawl):
    """The crawler on pydantic-ai (the agent `pydantic_agent` set last, with Overspill)."""

    __pydantic_ai_agents__: tuple[Any, ...] = ()

    @workflow.run
    async def run(self, request: AgentRequest) -> str:
        limits = UsageLimits(request_limit=request.max_turns)
        return str((await self.__pydantic_ai_agents__[0].run(request.prompt, usage_limits=limits)).output)


def pydantic_input_chars(data: bytes) -> int:
    """Chars of model-visible text in one recorded pydantic-ai model-request input (its messages)."""
    total = 0
    for message in json.loads(data).get('messages', []):
        for part in message.get('parts', []):
            kind = part.get('part_kind')
            if kind == 'tool-call':
                args = part.get('args')
                total += len(args if isinstance(args, str) else json.dumps(args))
            else:
                content = part.get('content')
                total += len(content) if isinstance(content, str) else len(json.dumps(content)) if content else 0
    return total
