"""What the LangGraph and Deep Agents tests (and `benches/langgraph_deepagents.py`) share: a
scripted chat model (LangChain's own `BaseChatModel`, no network), the tool activities, the
LangGraph graph and its workflow, the Deep Agents workflow, and a run's figures read off its
history.

The model answers from its input alone, so a retried or replayed model activity answers the same.
The first human message is its script:

- `fetch <n> pages of <chars> chars` makes it call `fetch_page` n times, one call a turn (`at once`
  after it: all n in one turn; `using <tool>`: that fetching tool), then answer `fetched <n> pages`;
- `, then read|grep|query <pattern> [at offset <k>]` after it: read the first output that names a
  handle (a spill or a mask marker) back through `<verb>_tool_result` (read: one line matching
  the pattern, after k of them), and answer with what that returned; `, then list`:
  `list_tool_results`.
- `fetch <n> records, then query <jq filter>`: call `fetch_records` once, run the filter over its
  spill and answer with the page.

Tool call ids are `call-<k>`, `k` the call's position in the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, ClassVar

import agents_support
from agents_support import HANDLE, Measure, RunFigures
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, convert_to_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command
from support import page_text
from temporalio import activity, workflow
from temporalio.client import Client
from typing_extensions import Annotated

with workflow.unsafe.imports_passed_through():
    from overspill import OverspillWorker
    from overspill.langgraph import OverspillMasking, activity_tool, overspill_tools, run_tool_node

_PROMPT = re.compile(
    r'fetch (\d+) pages? of (\d+) chars( at once)?(?: using (\w+))?'
    r'(?:, then (read|grep|query|list)(?: (\S+))?(?: at offset (-?\d+))?)?'
)
_RECORDS = re.compile(r'fetch (\d+) records, then query (.+)')
FETCHERS = ('fetch_page', 'fetch_spec', 'fetch_page_command')
"""The tools that fetch pages (the others read back)."""
TOOL_ACTIVITIES = (*FETCHERS, 'deepagents.invoke_tool', 'crawl.tools')
"""The activities a run's tool calls are: a fetching tool's, Deep Agents' `invoke_tool`, the crawl graph's ToolNode."""


# --- the tools -----------------------------------------------------------------------------------


@activity.defn
async def fetch_page(n: int, chars: int) -> str:
    """Fetch page `n` of the crawl log, `chars` chars of it."""
    return page_text(n, chars)


@activity.defn
async def fetch_spec(spec: str) -> str:
    """Fetch a page of the crawl log by its spec, `<page>:<chars>` (one argument: Deep Agents'
    `activity_as_tool` passes an activity one payload)."""
    n, chars = spec.split(':')
    return page_text(int(n), int(chars))


@activity.defn
async def fetch_records(count: int) -> list[dict[str, Any]]:
    """Fetch the first `count` records of the crawl."""
    return records(count)


def records(count: int) -> list[dict[str, Any]]:
    """What `fetch_records(count)` returns."""
    return [{'id': i, 'status': 'ERROR' if i % 13 == 0 else 'ok', 'page': i // 50} for i in range(count)]


# --- the scripted model ----------------------------------------------------------------------------


class ScriptedChatModel(BaseChatModel):
    """A chat model that follows the script (see the module), counting what it is sent."""

    requests: ClassVar[list[int]] = []
    """Chars of model-visible text of each request in this process, in order (`clear()` it per run)."""

    @property
    def _llm_type(self) -> str:
        return 'scripted'

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        ScriptedChatModel.requests.append(sum(message_chars(m) for m in messages))
        return ChatResult(generations=[ChatGeneration(message=next_step(messages))])

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return self._generate(messages)  # the default runs _generate on a thread, which a workflow refuses


def message_chars(message: BaseMessage) -> int:
    """Chars of a message's model-visible text: its content and its tool calls' arguments."""
    content = message.content if isinstance(message.content, str) else json.dumps(message.content)
    calls = getattr(message, 'tool_calls', None) or []
    return len(content) + sum(len(json.dumps(c.get('args', {}))) for c in calls)


def next_step(messages: Sequence[BaseMessage]) -> AIMessage:
    """The script: the model's next message for a conversation."""
    prompt = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
    calls = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    outputs = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
    handles = [h[1] for o in outputs if (h := HANDLE.search(o))]
    records_script = _RECORDS.search(prompt)
    if records_script is not None:
        if not calls:
            return _calls(0, [('fetch_records', {'count': int(records_script[1])})])
        if len(calls) == 1 and handles:
            return _calls(1, [('query_tool_result', {'handle': handles[0], 'filter': records_script[2], 'limit': 3})])
        return AIMessage(content=outputs[-1])
    script = _PROMPT.search(prompt)
    if script is None:
        return AIMessage(content=f'no script in {prompt!r}')
    pages, chars, at_once, fetcher, then = int(script[1]), int(script[2]), script[3], script[4] or 'fetch_page', script[5]
    fetched = sum(1 for c in calls if c['name'] in FETCHERS)
    if fetched < pages:
        wanted = range(fetched, pages if at_once else fetched + 1)
        return _calls(len(calls), [(fetcher, _fetch_args(fetcher, n, chars)) for n in wanted])
    if then is None:
        return AIMessage(content=f'fetched {fetched} pages')
    if calls[-1]['name'] not in FETCHERS:
        return AIMessage(content=outputs[-1])
    if then == 'list':
        return _calls(len(calls), [('list_tool_results', {})])
    if not handles:
        return AIMessage(content=f'no handle in any page; the last: {outputs[-1][:200]!r}')
    arguments: dict[str, Any] = {'handle': handles[0], 'pattern': script[6], 'offset': int(script[7] or 0)}
    if then == 'read':
        arguments['limit'] = 1
    if then == 'query':
        arguments = {'handle': handles[0], 'filter': script[6], 'limit': 3}
    return _calls(len(calls), [(f'{then}_tool_result', arguments)])


def _fetch_args(fetcher: str, n: int, chars: int) -> dict[str, Any]:
    return {'spec': f'{n}:{chars}'} if fetcher == 'fetch_spec' else {'n': n, 'chars': chars}


def _calls(first: int, calls: Sequence[tuple[str, dict[str, Any]]]) -> AIMessage:
    return AIMessage(
        content='',
        tool_calls=[{'name': name, 'args': args, 'id': f'call-{first + k}', 'type': 'tool_call'} for k, (name, args) in enumerate(calls)],
    )


MODEL = ScriptedChatModel()


# --- LangGraph -----------------------------------------------------------------------------------

TIMEOUT = {'start_to_close_timeout': timedelta(seconds=60)}
IN_WORKFLOW = {'execute_in': 'workflow'}


async def agent(state: MessagesState) -> dict[str, Any]:
    """The model node, an activity (`crawl.agent`) whose input is the whole state, as plain dicts."""
    return {'messages': [await MODEL.ainvoke(convert_to_messages(state['messages']))]}


@tool('fetch_page')
async def fetch_page_inline(n: int, chars: int) -> str:
    """Fetch page `n` of the crawl log, `chars` chars of it (in the ToolNode's activity)."""
    return page_text(n, chars)


@tool
async def fetch_page_command(n: int, chars: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Fetch page `n` of the crawl log, as a `Command` updating the state."""
    return Command(update={'messages': [ToolMessage(page_text(n, chars), tool_call_id=tool_call_id, name='fetch_page_command')]})


ACTIVITY_TOOL_NODE = ToolNode([fetch_page_inline, fetch_page_command])


async def tools_in_activity(state: MessagesState, config: RunnableConfig, runtime: Runtime[Any]) -> Any:
    """A prebuilt ToolNode as an activity node (`crawl.tools`): its tools do their I/O in it."""
    return await run_tool_node(ACTIVITY_TOOL_NODE, state, config, runtime)


@dataclass
class GraphSetup:
    """How the crawl graph is built: where the read-back tools run, masking, and the layout."""

    overspill_queue: str = ''
    """The Overspill worker's task queue: the graph gets `overspill_tools()` on it ('': none)."""
    masking_budget: int | None = None
    """`OverspillMasking`'s budget in chars (None: no masking node)."""
    tool_node_activity: bool = False
    """The tools in a ToolNode run as an activity node, the read-back tools in a workflow-side
    node of their own; else one workflow-side ToolNode whose tools each run their activity."""
    start_timeout: float = 10.0
    """How long an Overspill activity waits for a worker to start it, in seconds."""


def crawl_graph(setup: GraphSetup) -> StateGraph[Any, Any, Any, Any]:
    """The crawler: `[mask ->] agent -> tools -> [mask ->] agent ... -> END`."""
    worker = OverspillWorker(task_queue=setup.overspill_queue, start_timeout=timedelta(seconds=setup.start_timeout))
    read_back = overspill_tools(worker) if setup.overspill_queue else []
    fetchers = [activity_tool(fetch_page, **TIMEOUT), activity_tool(fetch_records, **TIMEOUT)]
    in_workflow = ToolNode(read_back if setup.tool_node_activity else [*fetchers, *read_back])

    async def tools_in_workflow(state: MessagesState, config: RunnableConfig, runtime: Runtime[Any]) -> Any:
        return await run_tool_node(in_workflow, state, config, runtime)

    async def route(state: MessagesState) -> str:  # async: a sync edge function runs on a thread
        last = state['messages'][-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return END
        if setup.tool_node_activity and all(c['name'] in FETCHERS for c in last.tool_calls):
            return 'tools'
        return 'readback' if setup.tool_node_activity else 'tools'

    graph = StateGraph(MessagesState)
    graph.add_node('agent', agent, metadata={'execute_in': 'activity', **TIMEOUT})
    if setup.tool_node_activity:
        graph.add_node('tools', tools_in_activity, metadata={'execute_in': 'activity', **TIMEOUT})
        graph.add_node('readback', tools_in_workflow, metadata=IN_WORKFLOW)
    else:
        graph.add_node('tools', tools_in_workflow, metadata=IN_WORKFLOW)
    entry = 'agent'
    if setup.masking_budget is not None:
        masking = OverspillMasking(budget=setup.masking_budget, worker=worker)
        graph.add_node('mask', masking.node, metadata=IN_WORKFLOW)
        graph.add_edge('mask', 'agent')
        entry = 'mask'
    graph.add_edge(START, entry)
    graph.add_conditional_edges('agent', route, ['tools', 'readback', END] if setup.tool_node_activity else ['tools', END])
    graph.add_edge('tools', entry)
    if setup.tool_node_activity:
        graph.add_edge('readback', entry)
    return graph


@workflow.defn
class GraphCrawl:
    """Runs the graph `crawl` on a prompt, answering the model's last message."""

    @workflow.run
    async def run(self, prompt: str) -> str:
        from temporalio.langgraph import graph

        state = await graph('crawl').compile().ainvoke({'messages': [HumanMessage(prompt)]}, {'recursion_limit': 100_000})
        return str(state['messages'][-1].content)


# --- Deep Agents -------------------------------------------------------------------------------------


@dataclass
class DeepRequest:
    """What the Deep Agents workflow runs: a prompt, and how Overspill serves it (nothing by default)."""

    prompt: str
    overspill_queue: str = ''
    """The Overspill worker's task queue: the agent gets `overspill_tools()` on it ('': none)."""
    masking_budget: int | None = None
    """`OverspillMasking`'s budget in chars (None: no masking middleware)."""


@workflow.defn
class DeepCrawl:
    """A deep agent with `tool_as_activity` tools (`fetch_page`, `fetch_records`) and an
    `activity_as_tool` one (`fetch_spec`): its answer, the files in its final state (where its
    eviction puts outputs) and the tool outputs there."""

    @workflow.run
    async def run(self, request: DeepRequest) -> dict[str, Any]:
        from deepagents import create_deep_agent
        from temporalio.deepagents import activity_as_tool, tool_as_activity

        with workflow.unsafe.imports_passed_through():
            from overspill.deepagents import OverspillMasking as DeepMasking
            from overspill.deepagents import overspill_tools as deep_tools

        worker = OverspillWorker(task_queue=request.overspill_queue)
        tools: list[Any] = [tool_as_activity(fetch, **TIMEOUT) for fetch in (fetch_page, fetch_records)]
        tools.append(activity_as_tool(fetch_spec, **TIMEOUT))
        tools += deep_tools(worker) if request.overspill_queue else []
        middleware = [] if request.masking_budget is None else [DeepMasking(budget=request.masking_budget, worker=worker)]
        agent = create_deep_agent(model='scripted', tools=tools, middleware=middleware)
        state = await agent.ainvoke({'messages': [HumanMessage(request.prompt)]}, {'recursion_limit': 100_000})
        outputs = [str(m.content) for m in state['messages'] if isinstance(m, ToolMessage)]
        return {'answer': str(state['messages'][-1].content), 'files': sorted(state.get('files') or {}), 'outputs': outputs}


def deep_agents_plugin() -> Any:
    """`DeepAgentsPlugin` with the scripted model for every model name."""
    from temporalio.deepagents import DeepAgentsPlugin

    return DeepAgentsPlugin(model_provider=lambda name: MODEL)


# --- a run's figures -------------------------------------------------------------------------------


async def run_agent(client: Client, run: Any, arg: Any, *, task_queue: str, timeout: float, model: str) -> tuple[RunFigures, Any]:
    """`agents_support.run_agent` for the crawl graph or the deep agent: model calls are the
    activities of type `model`, tool calls the completed activities of the fetching tools (or of a
    ToolNode); the chars sent to the model are those it counted (`ScriptedChatModel.requests`),
    also when External Storage keeps the model calls' inputs out of the history."""
    ScriptedChatModel.requests.clear()
    measure = Measure(is_model=lambda name: name == model, model_chars=lambda name, data: 0, is_tool=TOOL_ACTIVITIES.__contains__)
    figures, history = await agents_support.run_agent(client, run, arg, task_queue=task_queue, timeout=timeout, measure=measure)
    return replace(figures, total_model_chars=sum(ScriptedChatModel.requests)), history
