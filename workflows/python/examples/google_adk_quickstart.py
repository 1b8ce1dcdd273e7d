"""A Google ADK agent on Temporal whose 200 KB tool output Overspill spills in the tool's own activity;
the model reads it back. Run `cargo run -- dev` (or `overspill dev`) first; then
`python google_adk_quickstart.py`."""

import asyncio
import os
import re
import uuid
from collections.abc import AsyncGenerator
from datetime import timedelta

from google.adk import Agent
from google.adk.models import BaseLlm, LLMRegistry
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.google_adk import GoogleAdkPlugin, TemporalModel
from temporalio.google_adk.workflow import activity_as_tool
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from overspill.google_adk import OverspillMasking, OverspillPlugin, overspill_tools


@activity.defn
async def build_log() -> str:
    """The tool: a 200 KB build log."""
    return ''.join(f'{i:05d} INFO step {i % 7} done\n' for i in range(9_000)) + 'BUILD FAILED: disk full\n'


class ScriptedLlm(BaseLlm):
    """Stands in for an LLM: calls the tool, reads the spill's last line back by its handle, answers."""

    @classmethod
    def supported_models(cls) -> list[str]:
        return ['scripted']

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = [part for content in llm_request.contents for part in content.parts or ()]
        outputs = [part.function_response.response['result'] for part in parts if part.function_response]
        marker = re.search(r"stored to handle '([^']+)'", outputs[-1]) if outputs else None
        if not outputs:
            answer = types.Part.from_function_call(name='build_log', args={})
        elif len(outputs) == 1 and marker:
            read = {'handle': marker[1], 'limit': 1, 'from_end': True}
            answer = types.Part.from_function_call(name='read_tool_result', args=read)
        else:
            answer = types.Part(text=outputs[-1])
        yield LlmResponse(content=types.Content(role='model', parts=[answer]))


@workflow.defn
class Quickstart:
    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = Agent(
            name='quickstart',
            model=TemporalModel('scripted'),
            tools=[activity_as_tool(build_log, start_to_close_timeout=timedelta(seconds=30)), *overspill_tools()],
            before_model_callback=OverspillMasking(),
        )
        runner = InMemoryRunner(agent=agent, app_name='quickstart')
        session = await runner.session_service.create_session(app_name='quickstart', user_id='user')
        message = types.Content(role='user', parts=[types.Part(text=prompt)])
        answer = ''
        async for event in runner.run_async(user_id='user', session_id=session.id, new_message=message):
            texts = [part.text for part in (event.content.parts or []) if part.text] if event.content else []
            answer = texts[-1] if texts else answer
        return answer


async def main() -> None:
    LLMRegistry.register(ScriptedLlm)
    client = await Client.connect(
        os.environ.get('TEMPORAL_ADDRESS', 'localhost:7233'), plugins=[GoogleAdkPlugin(), OverspillPlugin([build_log])]
    )
    queue = f'quickstart-{uuid.uuid4()}'
    async with Worker(client, task_queue=queue, workflows=[Quickstart], activities=[build_log]):
        answer = await client.execute_workflow(Quickstart.run, 'Why did the build fail?', id=queue, task_queue=queue)
    print(answer, flush=True)


if __name__ == '__main__':
    asyncio.run(main())
    # Skip interpreter teardown, where temporalio's native threads can abort the process.
    os._exit(0)
