"""A Deep Agents agent on Temporal whose 200 KB tool output Overspill spills in the tool's own
activity; the model reads it back. Run `cargo run -- dev` (or `overspill dev`) first; then
`python deepagents_quickstart.py`."""

import asyncio
import os
import re
import uuid
from datetime import timedelta
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from temporalio import workflow
from temporalio.client import Client
from temporalio.deepagents import DeepAgentsPlugin, tool_as_activity
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from overspill.deepagents import OverspillMasking, OverspillPlugin, overspill_tools


async def build_log() -> str:
    """The tool: a 200 KB build log."""
    return ''.join(f'{i:05d} INFO step {i % 7} done\n' for i in range(9_000)) + 'BUILD FAILED: disk full\n'


class ScriptedModel(BaseChatModel):
    """Stands in for an LLM: calls the tool, reads the spill's last line back by its handle, answers."""

    @property
    def _llm_type(self) -> str:
        return 'scripted'

    def bind_tools(self, tools: Any, **kwargs: Any) -> 'ScriptedModel':
        return self

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


def call(tool: str, arguments: dict[str, Any]) -> AIMessage:
    return AIMessage(content='', tool_calls=[{'name': tool, 'args': arguments, 'id': tool, 'type': 'tool_call'}])


@workflow.defn
class Quickstart:
    @workflow.run
    async def run(self, prompt: str) -> str:
        from deepagents import create_deep_agent

        agent = create_deep_agent(
            model='scripted',
            tools=[tool_as_activity(build_log, start_to_close_timeout=timedelta(seconds=30)), *overspill_tools()],
            middleware=[OverspillMasking()],
        )
        state = await agent.ainvoke({'messages': [HumanMessage(prompt)]})
        return str(state['messages'][-1].content)


async def main() -> None:
    client = await Client.connect(
        os.environ.get('TEMPORAL_ADDRESS', 'localhost:7233'),
        plugins=[DeepAgentsPlugin(model_provider=lambda name: ScriptedModel()), OverspillPlugin()],
    )
    queue = f'quickstart-{uuid.uuid4()}'
    async with Worker(client, task_queue=queue, workflows=[Quickstart]):
        answer = await client.execute_workflow(Quickstart.run, 'Why did the build fail?', id=queue, task_queue=queue)
    print(answer, flush=True)


if __name__ == '__main__':
    asyncio.run(main())
    # Skip interpreter teardown, where temporalio's native threads can abort the process.
    os._exit(0)
