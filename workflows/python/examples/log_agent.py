"""An example pydantic-ai agent on Temporal whose oversized tool outputs go through Overspill.

The agent has one tool, `fetch_build_log`, that returns a build log of any length, and a scripted
`FunctionModel` standing in for an LLM (so the example runs without an API key):

1. it asks for the log (the user prompt names the line count: `fetch the build log, 2000 lines`);
2. when the tool return it sees is a spill marker, it pages back the `ERROR` lines with the
   harness's `read_tool_result` tool;
3. it answers with every tool return it saw, verbatim, as a JSON list -- which makes the
   model-visible text easy to compare with other runs.

ToolOutputLimits bands: 20,000 chars or more spill to Overspill's S3 store (falling back to a
truncation); 5,000 or more are summarized by Overspill's model (falling back to a truncation).

Run it against `overspill dev` (or any Temporal server plus `overspill worker --store s3://…`):
`python run_worker.py` in one terminal, `python run_agent.py 2000` in another. Configuration comes
from the same variables the Overspill worker reads: `TEMPORAL_ADDRESS`, `OVERSPILL_STORE` (default:
the store every Overspill command takes, `file://$TMPDIR/overspill-<euid>`), `OVERSPILL_TASK_QUEUE`,
`OVERSPILL_EXTERNAL_STORAGE` (a bucket, `s3://…`: turns Temporal External Storage on, so a log of
any size stays out of the workflow history), plus `LOG_AGENT_TASK_QUEUE` for this agent's own
worker.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from overspill.pydantic_ai import (
    OverspillStore,
    OverspillSummarizer,
    OverspillToolset,
    external_storage,
)
from pydantic_ai import Agent
from pydantic_ai.capabilities import SetToolMetadata
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
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
from pydantic_ai_harness.tool_output_limits import (
    Band,
    OverflowStore,
    Spill,
    Summarize,
    ToolOutputLimits,
    Truncate,
)
from temporalio import workflow
from temporalio.client import Client
from temporalio.converter import DataConverter

AGENT_NAME = 'log_agent'
WORKFLOW_TASK_QUEUE = os.environ.get('LOG_AGENT_TASK_QUEUE', 'log-agent')
store = OverspillStore()
"""The agent's spill store: Overspill's (`OVERSPILL_STORE`, else the default every Overspill
command takes), reached through its task queue (`OVERSPILL_TASK_QUEUE`) and its bucket."""
EXTERNAL_STORAGE_URL = os.environ.get('OVERSPILL_EXTERNAL_STORAGE')
"""The bucket of the Overspill worker's `--external-storage`, if External Storage is on."""
PAUSE_FILE_ENV = 'LOG_AGENT_PAUSE_FILE'
"""Test hook: when set, the model's first attempt at answering a `fetch_build_log` return creates
this file and then hangs, so a test can kill the worker at a known point of the run."""

_MARKER = re.compile(r"stored to handle ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")


def build_log(lines: int) -> str:
    """A deterministic build log: one `ERROR` line in every 97, the rest `INFO`."""
    out = []
    for i in range(lines):
        level = 'ERROR' if i % 97 == 13 else 'INFO'
        out.append(f'{i:05d} {level:<5} step={i % 7} target=//pkg/module_{i % 31}:test elapsed={i * 37 % 1000}ms\n')
    return ''.join(out)


async def fetch_build_log(lines: int) -> str:
    """Return the last build's log, `lines` lines long."""
    return build_log(lines)


def _seen_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


async def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: fetch the log, page back a spill's ERROR lines, report what it saw."""
    returns = _seen_returns(messages)
    if not returns:
        prompts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)]
        prompt = ' '.join(str(p.content) for p in prompts)
        lines = int(m.group(1)) if (m := re.search(r'(\d+) lines', prompt)) else 100
        call = ToolCallPart('fetch_build_log', {'lines': lines}, tool_call_id='call-log')
        return ModelResponse(parts=[call])
    last = returns[-1]
    if last.tool_name == 'fetch_build_log':
        await _maybe_pause()
        marker = _MARKER.search(last.model_response_str())
        if marker is not None:
            handle = _unrepr(marker.group(1))
            args = {'handle': handle, 'offset': 0, 'limit': 5, 'from_end': False, 'pattern': 'ERROR'}
            return ModelResponse(parts=[ToolCallPart('read_tool_result', args, tool_call_id='call-read')])
    seen = [p.model_response_str() for p in returns]
    return ModelResponse(parts=[TextPart(json.dumps(seen))])


async def search_script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model of the search agent: fetch the log, list the run's spills, grep the
    spill's `ERROR` lines with a line of context, report what it saw."""
    returns = _seen_returns(messages)
    last = returns[-1] if returns else None
    if last is None or last.tool_name not in ('fetch_build_log', 'list_tool_results'):
        return await script(messages, info)
    if last.tool_name == 'fetch_build_log':
        return ModelResponse(parts=[ToolCallPart('list_tool_results', {}, tool_call_id='call-list')])
    handle = re.search(r"^- ('(?:[^'\\]|\\.)*')", last.model_response_str(), re.M)
    assert handle is not None, last.model_response_str()
    args = {'handle': _unrepr(handle.group(1)), 'pattern': 'ERROR', 'context': 1, 'max_matches': 3}
    return ModelResponse(parts=[ToolCallPart('grep_tool_result', args, tool_call_id='call-grep')])


def _unrepr(quoted: str) -> str:
    """The string a Python `repr()` in a spill marker stands for."""
    import ast

    value = ast.literal_eval(quoted)
    assert isinstance(value, str)
    return value


async def _maybe_pause() -> None:
    pause = os.environ.get(PAUSE_FILE_ENV)
    if pause and not Path(pause).exists():
        Path(pause).write_text('paused\n')
        await asyncio.sleep(3600)


def build_agent(
    name: str = AGENT_NAME,
    *,
    store: OverflowStore | None = None,
    heartbeat_timeout: timedelta = timedelta(seconds=30),
    read_in_workflow: bool = False,
    search: bool = False,
) -> Agent[None, str]:
    """The example agent, spilling to `store` (default: Overspill at `OVERSPILL_STORE`).

    With `read_in_workflow`, the harness's `read_tool_result` tool runs in workflow code instead of
    an activity, so `OverspillStore.read` goes through the worker's `store.read_activity()`. With
    `search`, the agent also has `OverspillToolset`'s `list_tool_results` (and, with a harness
    that has none of its own, `grep_tool_result`), and its model lists the run's spills and greps
    the log's errors before it reports.
    """
    spills = store or OverspillStore()
    limits = ToolOutputLimits(
        bands=[
            Band(over=20_000, action=Spill(then=Truncate())),
            Band(
                over=5_000,
                action=Summarize(summarize=OverspillSummarizer(), then=Truncate()),
            ),
        ],
        store=spills,
    )
    toolsets = []
    if search:
        assert isinstance(spills, OverspillStore), "the search tools read Overspill's store"
        toolsets.append(OverspillToolset(spills))
    durability = TemporalDurability(
        activity_config={'start_to_close_timeout': timedelta(seconds=60), 'heartbeat_timeout': heartbeat_timeout},
    )
    # `temporal=False` tool metadata keeps a tool out of activities under TemporalDurability.
    in_workflow = [SetToolMetadata(tools=['read_tool_result'], temporal=False)] if read_in_workflow else []
    return Agent(
        FunctionModel(search_script if search else script, model_name='scripted'),
        name=name,
        tools=[fetch_build_log],
        toolsets=toolsets,
        capabilities=[limits, *in_workflow, durability],
    )


_heartbeat = timedelta(seconds=float(os.environ.get('LOG_AGENT_HEARTBEAT_SECONDS', '30')))

agent = build_agent(store=store, heartbeat_timeout=_heartbeat)
"""The example agent: `read_tool_result` runs in an activity and reads the store directly."""

workflow_read_agent = build_agent('log_agent_wf_read', store=store, heartbeat_timeout=_heartbeat, read_in_workflow=True)
"""The same agent with `read_tool_result` in workflow code, reading through `store.read_activity()`."""


search_agent = build_agent('log_agent_search', store=store, heartbeat_timeout=_heartbeat, search=True)
"""The same agent with `OverspillToolset`: it lists the run's spills and greps the log's errors."""


async def connect() -> Client:
    """A client for this agent (and its worker): pydantic-ai's plugin, plus Temporal External
    Storage in `OVERSPILL_EXTERNAL_STORAGE`'s bucket when it is set."""
    converter = DataConverter(external_storage=external_storage(EXTERNAL_STORAGE_URL)) if EXTERNAL_STORAGE_URL else None
    return await Client.connect(
        os.environ.get('TEMPORAL_ADDRESS', '127.0.0.1:7233'),
        namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
        plugins=[PydanticAIPlugin()],
        **({'data_converter': converter} if converter else {}),
    )


@dataclass
class RunReport:
    """What a run of the workflow returns."""

    output: str
    """The model's final answer (the JSON list of the tool returns it saw)."""
    run_id: str
    """The agent run's id: the first segment of every spill handle."""


@workflow.defn
class LogAgentWorkflow(PydanticAIWorkflow):
    """Runs the example agent on one prompt."""

    __pydantic_ai_agents__ = (agent,)

    @workflow.run
    async def run(self, prompt: str) -> RunReport:
        result = await agent.run(prompt)
        return RunReport(output=result.output, run_id=result.run_id)


@workflow.defn
class LogAgentSearch(PydanticAIWorkflow):
    """Runs `search_agent` (lists the run's spills and greps one) on one prompt."""

    __pydantic_ai_agents__ = (search_agent,)

    @workflow.run
    async def run(self, prompt: str) -> RunReport:
        result = await search_agent.run(prompt)
        return RunReport(output=result.output, run_id=result.run_id)


@workflow.defn
class LogAgentReadInWorkflow(PydanticAIWorkflow):
    """Runs `workflow_read_agent` (reads through the worker's read activity) on one prompt."""

    __pydantic_ai_agents__ = (workflow_read_agent,)

    @workflow.run
    async def run(self, prompt: str) -> RunReport:
        result = await workflow_read_agent.run(prompt)
        return RunReport(output=result.output, run_id=result.run_id)
