"""An OpenAI agent on Temporal whose 200 KB tool output Overspill spills in the tool's own activity;
the model reads it back. Run `cargo run -- dev` (or `overspill dev`) first; then
`python openai_agents_quickstart.py`."""

import asyncio
import json
import os
import re
import uuid
from datetime import timedelta
from typing import Any

from agents import Agent, Model, ModelProvider, ModelResponse, RunConfig, Runner, Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.workflow import activity_as_tool
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from overspill.openai_agents import OverspillInterceptor, OverspillMasking, overspill_tools


@activity.defn
async def build_log() -> str:
    """The tool: a 200 KB build log."""
    return ''.join(f'{i:05d} INFO step {i % 7} done\n' for i in range(9_000)) + 'BUILD FAILED: disk full\n'


class ScriptedModel(Model):
    """Stands in for an LLM: calls the tool, reads the spill's last line back by its handle, answers."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        outputs = [item['output'] for item in input if item.get('type') == 'function_call_output']
        if not outputs:
            return reply(call('build_log', {}))
        marker = re.search(r"stored to handle '([^']+)'", outputs[-1])
        if len(outputs) == 1 and marker:
            return reply(call('read_tool_result', {'handle': marker[1], 'offset': 0, 'limit': 1, 'from_end': True}))
        text = ResponseOutputText(text=outputs[-1], annotations=[], type='output_text')
        return reply(ResponseOutputMessage(id='answer', content=[text], role='assistant', status='completed', type='message'))

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def call(tool: str, arguments: dict[str, Any]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        arguments=json.dumps(arguments), call_id=tool, name=tool, type='function_call', id=tool, status='completed'
    )


def reply(item: Any) -> ModelResponse:
    return ModelResponse(output=[item], usage=Usage(), response_id=None)


class ScriptedProvider(ModelProvider):
    def get_model(self, model_name: str | None) -> Model:
        return ScriptedModel()


@workflow.defn
class Quickstart:
    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = Agent(
            name='quickstart',
            tools=[activity_as_tool(build_log, start_to_close_timeout=timedelta(seconds=30)), *overspill_tools()],
        )
        result = await Runner.run(agent, prompt, run_config=RunConfig(call_model_input_filter=OverspillMasking()))
        return str(result.final_output)


async def main() -> None:
    plugin = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
        model_provider=ScriptedProvider(),
    )
    client = await Client.connect(os.environ.get('TEMPORAL_ADDRESS', 'localhost:7233'), plugins=[plugin])
    queue = f'quickstart-{uuid.uuid4()}'
    async with Worker(
        client,
        task_queue=queue,
        workflows=[Quickstart],
        activities=[build_log],
        interceptors=[OverspillInterceptor([build_log])],
    ):
        answer = await client.execute_workflow(Quickstart.run, 'Why did the build fail?', id=queue, task_queue=queue)
    print(answer, flush=True)


if __name__ == '__main__':
    asyncio.run(main())
    # Skip interpreter teardown, where temporalio's native threads can abort the process.
    os._exit(0)
