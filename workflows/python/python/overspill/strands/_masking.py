"""`OverspillMasking`: the masking core (`overspill._masking`) as a Strands `InvokeModelStage.Input` middleware."""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from strands.middleware import InvokeModelContext
from strands.types.content import Message

from overspill._activity import OverspillUnavailable, UnavailableError
from overspill._codecs import STRANDS_RESULT, Reduced
from overspill._masking import Conversation, Entry, ToolOutput, WorkflowMasking


@dataclass
class OverspillMasking(WorkflowMasking):
    """Clears tool outputs the model has already seen from its input, without losing them: an
    agent's `InvokeModelStage.Input` middleware.

    ```python
    agent = TemporalAgent(..., tools=[..., *overspill_tools()])
    agent.add_middleware(InvokeModelStage.Input, OverspillMasking())
    ```

    Once the model's input (the system prompt and the messages) measures more than `budget` chars,
    every `toolResult` the model has seen but the `keep_recent` newest gets, at once, the one text
    `[Tool output of 'fetch' cleared from context (60,000 chars); stored to handle …]. Get it back
    with read_tool_result, …` (and loses its `structuredContent`, an MCP result's second copy of the
    data), and the input grows back until it passes the budget again: the rule every framework
    shares (`overspill._masking`). Never the current turn's results, nor failed ones, those under
    `min_chars`, of `exclude_tools`, or not text.

    A result Overspill spilled at the source keeps its handle; any other is spilled first through
    `worker` under `{run_id}/{toolUseId}.masked-{sha256, 12 hex}`.

    Strands hands the middleware a copy of the conversation at every call and keeps none of its
    edits: the masked view is kept here for the workflow instance, and each call examines only
    what is new. It also sends the conversation a second time, in the call's `invocation_state`
    (`messages`, which its tool executor sets and `TemporalModel` ships to the model activity):
    that copy is masked too, in a copy of the state (the live one is shared with hooks and tools).
    No worker, or a worker on another store, ends the run (`OverspillUnavailable`: Strands wraps a
    middleware's exceptions).
    """

    async def __call__(self, context: InvokeModelContext) -> InvokeModelContext:
        """The call's context with the messages masked so far, in both places."""
        try:
            messages = await self.masked(context.messages, self._conversation, fixed=_text(context.system_prompt))
        except UnavailableError as error:
            raise OverspillUnavailable(error.message) from None
        state = context.invocation_state
        if 'messages' in state:
            state = {**state, 'messages': messages}
        return context.replace(messages=messages, invocation_state=state)

    def _conversation(self) -> Conversation[Message]:
        names: dict[str, str] = {}  # toolUseId -> tool name, from the tool uses seen so far

        def describe(message: Message) -> Entry:
            texts: list[str] = []
            outputs: list[ToolOutput] = []
            for block in message.get('content', ()):
                texts.append(_block_text(block))
                if 'toolUse' in block:
                    names[str(block['toolUse'].get('toolUseId'))] = str(block['toolUse'].get('name', ''))
                if 'toolResult' in block:
                    call_id = str(block['toolResult'].get('toolUseId', ''))
                    outputs.append(ToolOutput(call_id, names.get(call_id, ''), _output(block['toolResult'])))
            return Entry(texts=texts, from_model=message.get('role') == 'assistant', outputs=outputs)

        return Conversation(self, _key, describe, _replace)


def _replace(message: Message, k: int, marker: str) -> Message:
    """`message` with its `k`-th tool result's content replaced by the marker (a new message)."""
    content = list(message.get('content', ()))
    at = [i for i, block in enumerate(content) if 'toolResult' in block][k]
    masked = Reduced(value=marker, content=None, metadata=None, envelope=False, kind='masked')
    content[at] = {**content[at], 'toolResult': STRANDS_RESULT.rebuild(content[at]['toolResult'], [masked])}
    return {**message, 'content': content}


def _key(message: Message) -> Hashable:
    """What tells one message from another (Strands copies them at every call, not their strings)."""
    return message.get('role'), tuple(hash(_block_text(block)) for block in message.get('content', ()))


def _block_text(block: Any) -> str:
    """A content block's model-visible text: its text, a tool use's name and input, a result's output."""
    if 'toolUse' in block:
        return f'{block["toolUse"].get("name")}{json.dumps(block["toolUse"].get("input"), default=str)}'
    if 'toolResult' in block:
        output = _output(block['toolResult'])
        return output if output is not None else json.dumps(block['toolResult'].get('content'), default=str)
    return str(block.get('text', ''))


def _output(result: Any) -> str | None:
    """A successful tool result's text (its text blocks, one per line), else `None`."""
    found = STRANDS_RESULT.outputs(result)
    return found[0].value if found and isinstance(found[0].value, str) else None


def _text(system_prompt: Any) -> str:
    """A system prompt's text (a string, or its text blocks)."""
    if isinstance(system_prompt, str):
        return system_prompt
    return ''.join(str(block.get('text', '')) for block in system_prompt or () if isinstance(block, dict))
