"""An example agent whose 30 tool outputs (2 KB to 200 KB) would fill its context, kept small by
`OverspillMasking`, and which still answers from an output that was masked, by reading it back.

The agent has one tool, `fetch_records(batch)`, whose output for batch `b` is `SIZES[b]` chars of
records; batch 4 alone holds the line with the release codename, in its middle. A scripted
`FunctionModel` stands in for an LLM: it fetches batches 0, 1, … one call at a time (the prompt
names how many: `fetch 30 batches`), then answers "what is the release codename?": from its
context if batch 4's output is still there, else by reading it back with `read_tool_result` by
the handle in the marker that replaced it.

On Temporal (`MaskingAgentWorkflow`), with an Overspill worker on `OVERSPILL_TASK_QUEUE` and the
store `OVERSPILL_STORE` (`overspill dev` gives both), the masking spills run as Overspill's
`tool_output_limits.spill` activity. `MASKING_AGENT_TASK_QUEUE` names this agent's own queue.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from overspill.pydantic_ai import OverspillMasking, OverspillStore, OverspillToolset
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_harness.tool_output_limits import Band, Spill, ToolOutputLimits, Truncate
from temporalio import workflow

CALLS = 30
SIZES = [round(2_000 * 100 ** (((i * 7) % CALLS) / (CALLS - 1))) for i in range(CALLS)]
"""Chars of batch `i`'s output: 2,000 to 200,000, spread geometrically, in a shuffled order."""
SECRET_BATCH = 4
CODENAME = 'the release codename is MARMALADE-7'
WORKFLOW_TASK_QUEUE = os.environ.get('MASKING_AGENT_TASK_QUEUE', 'masking-agent')

_HANDLE = re.compile(r"stored to handle ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")


def batch_output(batch: int) -> str:
    """Batch `batch`'s records, exactly `SIZES[batch]` chars; batch 4 names the codename mid-way."""
    size = SIZES[batch]
    lines = []
    total = i = 0
    while total < size:
        note = f' note: {CODENAME}' if batch == SECRET_BATCH and i == 100 else ''
        line = f'batch={batch:02d} record={i:05d} status=ok region=eu-west-{i % 3} latency={i * 37 % 1000}ms{note}\n'
        lines.append(line)
        total += len(line)
        i += 1
    return ''.join(lines)[:size]


async def fetch_records(batch: int) -> str:
    """Return the records of batch `batch`."""
    return batch_output(batch)


def message_chars(messages: list[ModelMessage]) -> int:
    """The chars of text in `messages`, as `OverspillMasking` measures them."""
    return OverspillMasking(OverspillStore('file:///unused')).measure(messages)


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


async def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: fetch the batches one by one, then find the codename (reading it back if masked)."""
    prompt = ' '.join(
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
    )
    calls = int(m.group(1)) if (m := re.search(r'fetch (\d+) batches', prompt)) else CALLS
    returns = _returns(messages)
    fetched = [r for r in returns if r.tool_name == 'fetch_records']
    if len(fetched) < calls:
        batch = len(fetched)
        return ModelResponse(parts=[ToolCallPart('fetch_records', {'batch': batch}, tool_call_id=f'fetch-{batch:02d}')])
    if returns[-1].tool_name == 'read_tool_result':
        found = [line for line in returns[-1].model_response_str().splitlines() if CODENAME in line]
        return ModelResponse(parts=[TextPart(f'read back: {found[0]}' if found else 'not found')])
    secret = next(r for r in fetched if r.tool_call_id == f'fetch-{SECRET_BATCH:02d}')
    text = secret.model_response_str()
    if CODENAME in text:
        line = next(line for line in text.splitlines() if CODENAME in line)
        return ModelResponse(parts=[TextPart(f'in context: {line}')])
    marker = _HANDLE.search(text)
    assert marker is not None, text
    handle = ast.literal_eval(marker.group(1))
    args = {'handle': handle, 'pattern': 'codename', 'limit': 5}
    return ModelResponse(parts=[ToolCallPart('read_tool_result', args, tool_call_id='read-secret')])


def build_agent(
    name: str,
    store: OverspillStore,
    *,
    masking: OverspillMasking | None,
    spill_over: int | None = None,
    durable: bool = True,
    sent: list[int] | None = None,
) -> Agent[None, str]:
    """The example agent. `masking`: the processor, or `None` for none. `spill_over`: a
    ToolOutputLimits band spilling outputs of that many chars or more (default: no band, so only
    masking takes outputs out of the context; `read_tool_result` is there either way). `sent`:
    a list to which each model request appends the chars of the messages it was sent."""
    bands = [Band(over=spill_over, action=Spill(then=Truncate()))] if spill_over is not None else []
    limits = ToolOutputLimits(bands=bands, store=store)
    capabilities: list[Any] = [limits]
    if masking is not None:
        capabilities.append(ProcessHistory(masking))
    if durable:
        capabilities.append(TemporalDurability(activity_config={'start_to_close_timeout': timedelta(seconds=60)}))

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if sent is not None:
            sent.append(message_chars(messages))
        return await script(messages, info)

    return Agent(
        FunctionModel(model, model_name='scripted'),
        name=name,
        tools=[fetch_records],
        toolsets=[OverspillToolset(store)],
        capabilities=capabilities,
    )


store = OverspillStore()
"""Overspill's store (`OVERSPILL_STORE`) and queue (`OVERSPILL_TASK_QUEUE`)."""

masking = OverspillMasking(store, budget=100_000, keep_recent=3)
"""Mask once the messages exceed 100,000 chars, keeping the 3 newest returns."""

agent = build_agent('masking_agent', store, masking=masking)
"""The agent on Temporal, with `masking`."""

unreachable_store = OverspillStore(
    task_queue=f'{store.task_queue}-nobody-polls',
    start_timeout=timedelta(seconds=1),
    spill_timeout=timedelta(seconds=5),
    on_unavailable='fallback',
)
"""A store whose spills fail: no worker polls its queue, so every spill gives up after 1 s (and,
with `on_unavailable='fallback'`, the run goes on without it)."""

failing_agent = build_agent(
    'masking_agent_failing', store, masking=OverspillMasking(unreachable_store, budget=10_000, keep_recent=1)
)
"""The agent with masking spills that always fail: its returns must stay as they were."""


@dataclass
class Report:
    """What a run returns."""

    output: str
    run_id: str
    messages: str
    """The run's final history (`ModelMessagesTypeAdapter` JSON), masked returns included."""


@workflow.defn
class MaskingAgentWorkflow(PydanticAIWorkflow):
    """Runs `agent` on one prompt."""

    __pydantic_ai_agents__ = (agent,)

    @workflow.run
    async def run(self, prompt: str) -> Report:
        result = await agent.run(prompt)
        return Report(result.output, result.run_id, result.all_messages_json().decode())


@workflow.defn
class FailingMaskingWorkflow(PydanticAIWorkflow):
    """Runs `failing_agent` on one prompt."""

    __pydantic_ai_agents__ = (failing_agent,)

    @workflow.run
    async def run(self, prompt: str) -> Report:
        result = await failing_agent.run(prompt)
        return Report(result.output, result.run_id, result.all_messages_json().decode())
