"""A pydantic-ai agent on Temporal whose 200 KB tool output Overspill spills at the source, in the
tool's own activity, so the history never holds it; the model reads it back by its handle.
Run `overspill dev` (or `cargo run -p overspill-cli -- dev`) first; then `python quickstart.py`
(or `python quickstart.py 40` for a 40 MB log: still nothing large in the history)."""

import asyncio
import os
import re
import sys
import uuid

from overspill.pydantic_ai import OverspillInterceptor, OverspillStore
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_harness.tool_output_limits import ToolOutputLimits
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker


MEGABYTES = float(sys.argv[1]) if len(sys.argv) > 1 else 0.2


def build_log() -> str:
    """The tool: a build log of MEGABYTES (200 KB by default)."""
    lines = round(MEGABYTES * 45_000)
    return ''.join(f'{i:05d} INFO step {i % 7} done\n' for i in range(lines)) + 'BUILD FAILED: disk full\n'


async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Stands in for an LLM: calls the tool, reads the spill's last line back by its handle, answers."""
    seen = [p for m in messages for p in m.parts if p.part_kind == 'tool-return']
    if not seen:
        return ModelResponse(parts=[ToolCallPart('build_log', {}, tool_call_id='log')])
    marker = re.search(r"stored to handle '([^']+)'", seen[-1].model_response_str())
    if seen[-1].tool_name == 'build_log' and marker:
        args = {'handle': marker[1], 'offset': 0, 'limit': 1, 'from_end': True}
        return ModelResponse(parts=[ToolCallPart('read_tool_result', args, tool_call_id='read')])
    return ModelResponse(parts=[TextPart(seen[-1].model_response_str())])


limits = ToolOutputLimits(store=OverspillStore())  # OVERSPILL_STORE, else the default `overspill dev` uses
agent = Agent(FunctionModel(model), name='quickstart', tools=[build_log], capabilities=[limits, TemporalDurability()])


@workflow.defn
class Quickstart(PydanticAIWorkflow):
    __pydantic_ai_agents__ = (agent,)

    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await agent.run(prompt)).output


async def main() -> None:
    client = await Client.connect(os.environ.get('TEMPORAL_ADDRESS', 'localhost:7233'), plugins=[PydanticAIPlugin()])
    queue = f'quickstart-{uuid.uuid4()}'
    # The worker that runs the tools reduces their outputs before Temporal records them.
    async with Worker(client, task_queue=queue, workflows=[Quickstart], interceptors=[OverspillInterceptor(limits)]):
        answer = await client.execute_workflow(Quickstart.run, 'Why did the build fail?', id=queue, task_queue=queue)
    print(answer, flush=True)


if __name__ == '__main__':
    asyncio.run(main())
    # Skip interpreter teardown, where temporalio's native threads can abort the process.
    os._exit(0)
