"""A LangGraph agent on Temporal whose 200 KB tool output Overspill spills in the tool's own activity;
the model reads it back. Run `cargo run -- dev` (or `overspill dev`) first; then
`python langgraph_quickstart.py`."""

import asyncio
import os
import re
import uuid
from datetime import timedelta
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.langgraph import LangGraphPlugin, graph
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from overspill.langgraph import OverspillMasking, OverspillPlugin, activity_tool, overspill_tools, run_tool_node


@activity.defn
async def build_log() -> str:
    """The tool: a 200 KB build log."""
    return ''.join(f'{i:05d} INFO step {i % 7} done\n' for i in range(9_000)) + 'BUILD FAILED: disk full\n'


class ScriptedModel(BaseChatModel):
    """Stands in for an LLM: calls the tool, reads the spill's last line back by its handle, answers."""

    @property
    def _llm_type(self) -> str:
        return 'scripted'

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        outputs = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        marker = re.search(r"stored to handle '([^']+)'", outputs[-1]) if outputs else None
        if not outputs:
            reply = call('build_log', {})
        elif len(outputs) == 1 and marker:
            reply = call('read_tool_result', {'handle': marker[1], 'limit': 1, 'from_end': True})
        else:
            reply = AIMessage(content=outputs[-1])
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return self._generate(messages)


def call(tool: str, arguments: dict[str, Any]) -> AIMessage:
    return AIMessage(content='', tool_calls=[{'name': tool, 'args': arguments, 'id': tool, 'type': 'tool_call'}])


async def model(state: MessagesState) -> dict[str, Any]:
    """The model node, an activity: it gets the state as plain dicts."""
    return {'messages': [await ScriptedModel().ainvoke(convert_to_messages(state['messages']))]}


TOOLS = ToolNode([activity_tool(build_log, start_to_close_timeout=timedelta(seconds=30)), *overspill_tools()])


async def tools(state: MessagesState, config: RunnableConfig, runtime: Runtime) -> Any:
    """The tool node, in the workflow: each tool call runs its own activity."""
    return await run_tool_node(TOOLS, state, config, runtime)


async def next_node(state: MessagesState) -> str:
    return 'tools' if state['messages'][-1].tool_calls else END


def agent_graph() -> StateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node('mask', OverspillMasking().node, metadata={'execute_in': 'workflow'})
    builder.add_node('model', model, metadata={'execute_in': 'activity', 'start_to_close_timeout': timedelta(seconds=30)})
    builder.add_node('tools', tools, metadata={'execute_in': 'workflow'})
    builder.add_edge(START, 'mask')
    builder.add_edge('mask', 'model')
    builder.add_conditional_edges('model', next_node, ['tools', END])
    builder.add_edge('tools', 'mask')
    return builder


@workflow.defn
class Quickstart:
    @workflow.run
    async def run(self, prompt: str) -> str:
        state = await graph('quickstart').compile().ainvoke({'messages': [HumanMessage(prompt)]})
        return str(state['messages'][-1].content)


async def main() -> None:
    client = await Client.connect(
        os.environ.get('TEMPORAL_ADDRESS', 'localhost:7233'),
        plugins=[LangGraphPlugin(graphs={'quickstart': agent_graph()}), OverspillPlugin([build_log])],
    )
    queue = f'quickstart-{uuid.uuid4()}'
    async with Worker(client, task_queue=queue, workflows=[Quickstart], activities=[build_log]):
        answer = await client.execute_workflow(Quickstart.run, 'Why did the build fail?', id=queue, task_queue=queue)
    print(answer, flush=True)


if __name__ == '__main__':
    # LangGraphPlugin takes activity nodes from a named module, not __main__: run this file's as one.
    import langgraph_quickstart

    asyncio.run(langgraph_quickstart.main())
    # Skip interpreter teardown, where temporalio's native threads can abort the process.
    os._exit(0)
