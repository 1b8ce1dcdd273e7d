"""A Strands agent on Temporal whose 200 KB tool output Overspill spills in the tool's own activity;
the model reads it back. Run `cargo run -- dev` (or `overspill dev`) first; then
`python strands_quickstart.py`."""

import asyncio
import json
import os
import re
import uuid
from collections.abc import AsyncIterable
from datetime import timedelta
from typing import Any

from strands.middleware import InvokeModelStage
from strands.models import Model
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.strands_agents import StrandsPlugin, TemporalAgent
from temporalio.strands_agents.workflow import activity_as_tool
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from overspill.strands import OverspillMasking, OverspillPlugin, overspill_tools


@activity.defn
async def build_log() -> str:
    """The tool: a 200 KB build log."""
    return ''.join(f'{i:05d} INFO step {i % 7} done\n' for i in range(9_000)) + 'BUILD FAILED: disk full\n'


class ScriptedModel(Model):
    """Stands in for an LLM: calls the tool, reads the spill's last line back by its handle, answers."""

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterable[Any]:
        results = [block['toolResult'] for message in messages for block in message['content'] if 'toolResult' in block]
        outputs = [result['content'][0]['text'] for result in results]
        marker = re.search(r"stored to handle '([^']+)'", outputs[-1]) if outputs else None
        yield {'messageStart': {'role': 'assistant'}}
        if not outputs or len(outputs) == 1 and marker:
            read = {'handle': marker[1], 'limit': 1, 'from_end': True} if marker else {}
            name, args = ('read_tool_result', read) if marker else ('build_log', {})
            yield {'contentBlockStart': {'start': {'toolUse': {'name': name, 'toolUseId': name}}}}
            yield {'contentBlockDelta': {'delta': {'toolUse': {'input': json.dumps(args)}}}}
            yield {'contentBlockStop': {}}
            yield {'messageStop': {'stopReason': 'tool_use'}}
        else:
            yield {'contentBlockDelta': {'delta': {'text': outputs[-1]}}}
            yield {'contentBlockStop': {}}
            yield {'messageStop': {'stopReason': 'end_turn'}}

    def update_config(self, **config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@workflow.defn
class Quickstart:
    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = TemporalAgent(
            model='scripted',
            start_to_close_timeout=timedelta(seconds=30),
            tools=[activity_as_tool(build_log, start_to_close_timeout=timedelta(seconds=30)), *overspill_tools()],
            callback_handler=None,
        )
        agent.add_middleware(InvokeModelStage.Input, OverspillMasking())
        return str(await agent.invoke_async(prompt)).strip()


async def main() -> None:
    client = await Client.connect(
        os.environ.get('TEMPORAL_ADDRESS', 'localhost:7233'),
        plugins=[StrandsPlugin(models={'scripted': ScriptedModel}), OverspillPlugin([build_log])],
    )
    queue = f'quickstart-{uuid.uuid4()}'
    async with Worker(client, task_queue=queue, workflows=[Quickstart], activities=[build_log]):
        answer = await client.execute_workflow(Quickstart.run, 'Why did the build fail?', id=queue, task_queue=queue)
    print(answer, flush=True)


if __name__ == '__main__':
    asyncio.run(main())
    # Skip interpreter teardown, where temporalio's native threads can abort the process.
    os._exit(0)
