"""What the LangChain frameworks (LangGraph, Deep Agents) share: the read-back tools as LangChain
tools, and masking over a conversation of LangChain messages whose edits the graph state keeps.

Both run their tools and their hooks in workflow code, on a state whose `messages` channel
`add_messages` reduces: a message returned with the id of one in the state replaces it there. So
masking returns, at each model call, only the messages it masked now, as that state update; the
state then holds the markers, and later calls (and continue-as-new) carry them instead of the
outputs.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from overspill._activity import ModelRetry, OverspillWorker
from overspill._codecs import _texts
from overspill._masking import Conversation, Conversations, Entry, MaskingSettings, ToolOutput
from overspill._tools import READ_BACK_TOOLS, ReadBackTool


def overspill_tools(worker: OverspillWorker | None = None) -> list[BaseTool]:
    """The read-back tools `read_tool_result`, `grep_tool_result`, `query_tool_result` and
    `list_tool_results` as LangChain tools, with the engine's names, descriptions and JSON Schema
    parameters (`overspill.READ_BACK_TOOLS`).

    Each runs in workflow code (a workflow-side tool node, Deep Agents' agent loop) and executes
    the Overspill worker's activity of its name on `worker`'s task queue (default
    `OverspillWorker()`: `OVERSPILL_TASK_QUEUE`, else `tool-output-limits`); the model gets the
    worker's page byte for byte. A bad argument (the worker's `ModelRetry`) comes back to the model
    as the tool's error message; no worker, or a worker on another store than this run's at-source
    spills, ends the run with one line (`worker.on_unavailable`).
    """
    worker = worker or OverspillWorker()
    return [_langchain_tool(tool, worker) for tool in READ_BACK_TOOLS]


def _langchain_tool(tool: ReadBackTool, worker: OverspillWorker) -> BaseTool:
    async def call(**arguments: Any) -> str:
        # A dict `args_schema` is not validated by LangChain: these are the model's arguments as
        # it sent them, which the worker bounds and defaults.
        try:
            return await tool(arguments, worker=worker)
        except ModelRetry as error:
            raise ToolException(str(error)) from None

    return StructuredTool.from_function(
        coroutine=call,
        name=tool.name,
        description=tool.description,
        args_schema=dict(tool.parameters),
        handle_tool_error=True,
    )


@dataclass
class MessageMasking(MaskingSettings):
    """Masking (`overspill._masking`'s rule) over a conversation of LangChain messages, from
    workflow code: `updates(messages)` is what to return as the state update before a model call."""

    worker: OverspillWorker = field(default_factory=OverspillWorker)
    """The Overspill worker that stores the outputs masking spills (its queue and timeouts)."""

    _conversations: Conversations[Any] = field(default_factory=Conversations, init=False, repr=False, compare=False)

    async def updates(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The `ToolMessage`s masked now, each with its id and a marker in place of its content: the
        state keeps them, so each output is masked once, and each call examines only new messages."""
        conversation = self._conversations.get(lambda: Conversation(self, _key, _describe, _masked))
        view = await conversation.mask_in_workflow(messages, self.worker)
        return [view[at] for at in conversation.masked_now]


def _key(message: Any) -> Hashable:
    """A message's id (which a masked message keeps), else what tells it from another."""
    if getattr(message, 'id', None):
        return str(message.id)
    return type(message).__name__, getattr(message, 'tool_call_id', None), _texts(getattr(message, 'content', None))


def _describe(message: Any) -> Entry:
    kind = getattr(message, 'type', None)
    text = _texts(getattr(message, 'content', None)) or ''
    calls = [json.dumps(call.get('args', {}), default=str) for call in getattr(message, 'tool_calls', None) or ()]
    outputs: tuple[ToolOutput, ...] = ()
    if kind == 'tool':
        ok = getattr(message, 'status', 'success') != 'error'
        output = _texts(message.content) if ok else None
        outputs = (ToolOutput(str(message.tool_call_id), str(getattr(message, 'name', None) or ''), output),)
    return Entry(texts=(text, *calls), from_model=kind == 'ai', outputs=outputs)


def _masked(message: Any, _: int, marker: str) -> Any:
    return message.model_copy(update={'content': marker})

