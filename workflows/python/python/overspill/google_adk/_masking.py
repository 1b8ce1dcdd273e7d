"""`OverspillMasking`: the masking core (`overspill._masking`) as an ADK `before_model_callback`."""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from overspill._codecs import MCP_RESULT
from overspill._masking import Conversation, Entry, ToolOutput, WorkflowMasking


@dataclass
class OverspillMasking(WorkflowMasking):
    """Clears tool outputs the model has already seen from its input, without losing them: an
    agent's `before_model_callback`.

    ```python
    agent = Agent(..., tools=[..., *overspill_tools()], before_model_callback=OverspillMasking())
    ```

    Once the request (the system instruction and the contents) measures more than `budget` chars,
    every function response the model has seen but the `keep_recent` newest becomes, at once,
    `{"result": "[Tool output of 'fetch' cleared from context (60,000 chars); stored to handle …].
    Get it back with read_tool_result, …"}`, and the input grows back until it passes the budget
    again: the rule every framework shares (`overspill._masking`). Never the current turn's
    responses, nor those under `min_chars`, of `exclude_tools`, or not text (a text is
    `{"result": text}`, or an MCP result of text blocks).

    A response Overspill spilled at the source keeps its handle; any other is spilled first
    through `worker` under `{run_id}/{call}.masked-{sha256, 12 hex}` (ADK leaves function call ids
    out of the request, so `{call}` is the tool's name: the hash tells outputs apart).

    ADK rebuilds the request from the session at every call and keeps none of a callback's edits:
    the masked view is kept here for the workflow instance, and each call examines only what is
    new. Give each agent its own `OverspillMasking`: one conversation each.
    """

    async def __call__(self, callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse | None:
        """Send the request's contents with the outputs masked so far (`None`: ADK calls the model)."""
        instruction = llm_request.config.system_instruction if llm_request.config else None
        llm_request.contents = await self.masked(llm_request.contents, self._conversation, fixed=_text(instruction))
        return None

    def _conversation(self) -> Conversation[types.Content]:
        return Conversation(self, _key, _describe, _replace)


def _describe(content: types.Content) -> Entry:
    texts: list[str] = []
    outputs: list[ToolOutput] = []
    for part in content.parts or ():
        texts.append(_part_text(part))
        response = part.function_response
        if response is not None:
            name = response.name or ''
            outputs.append(ToolOutput(response.id or name or 'call', name, _output(response.response)))
    return Entry(texts=texts, from_model=content.role == 'model', outputs=outputs)


def _replace(content: types.Content, k: int, marker: str) -> types.Content:
    """`content` with its `k`-th function response's replaced by the marker: new parts, since ADK
    shares a request's nested fields with the session."""
    parts = list(content.parts or ())
    at, response = [(i, p.function_response) for i, p in enumerate(parts) if p.function_response is not None][k]
    masked = response.model_copy(update={'response': {'result': marker}})
    parts[at] = parts[at].model_copy(update={'function_response': masked})
    return content.model_copy(update={'parts': parts})


def _key(content: types.Content) -> Hashable:
    """What tells one content from another (ADK copies them at every call, not their strings)."""
    return content.role, tuple(hash(_part_text(part)) for part in content.parts or ())


def _part_text(part: types.Part) -> str:
    """A part's model-visible text: its text, a call's name and arguments, a response's output."""
    if part.function_call is not None:
        return f'{part.function_call.name}{json.dumps(part.function_call.args or {}, default=str)}'
    if part.function_response is not None:
        output = _output(part.function_response.response)
        return output if output is not None else json.dumps(part.function_response.response, default=str)
    return part.text or ''


def _output(response: dict[str, Any] | None) -> str | None:
    """A function response's output text: `{"result": text}`, or an MCP result's text blocks."""
    if isinstance(response, dict) and response.keys() == {'result'} and isinstance(response['result'], str):
        return response['result']
    found = MCP_RESULT.outputs(response)
    return found[0].value if found and isinstance(found[0].value, str) else None


def _text(instruction: Any) -> str:
    """A system instruction's text (a string, or a content's text parts)."""
    if isinstance(instruction, str):
        return instruction
    return ''.join(part.text or '' for part in getattr(instruction, 'parts', None) or ())
