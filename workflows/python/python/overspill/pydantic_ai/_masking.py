"""`OverspillMasking`: the masking core (`overspill._masking`) as a pydantic-ai history processor."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from overspill._masking import Conversation, Entry, MaskingSettings, ToolOutput
from overspill.pydantic_ai._store import OverspillStore


@dataclass
class OverspillMasking(MaskingSettings):
    """Clears old tool returns from the model's context without losing them.

    A history processor for pydantic-ai's `ProcessHistory` capability:

    ```python
    store = OverspillStore()
    agent = Agent(model, name='my_agent', toolsets=[OverspillToolset(store)], capabilities=[
        ToolOutputLimits(store=store),
        ProcessHistory(OverspillMasking(store, budget=100_000, keep_recent=3)),
        TemporalDurability(),
    ])
    ```

    Once the messages to be sent (every part's text and the request's instructions) measure more
    than `budget` chars (or tokens, `unit='tokens'`), every older tool return becomes, at once, a
    marker naming the tool, the output's size and a handle: `[Tool output of 'fetch' cleared from
    context (60,000 chars); stored to handle 'run-1/call-1.masked-…'. Get it back with
    read_tool_result, grep_tool_result or query_tool_result.]`; the messages then grow back until
    they pass the budget again: the rule every framework shares (`overspill._masking`). Never the
    current turn's returns (those after the model's last response, which it has not seen), nor
    the `keep_recent` newest returns, the current turn's counted among them; nor returns shorter
    than `min_chars`, failed or retried ones, returns with files, pydantic-ai's typed returns
    (capability loads, tool search: state it rebuilds from history) and those of `exclude_tools`.

    A return the harness already spilled keeps its handle (no new write). Any other is spilled
    first through `store.write`, under `{run_id}/{tool_call_id}.masked-{sha256, 12 hex}` (the
    pydantic-ai run id): on Temporal that is Overspill's `tool_output_limits.spill` activity,
    journaled, so a replay gets the recorded handle back; outside a workflow, a write to the
    store. A return whose spill fails stays as it was (a WARNING says why) and is tried again at
    the next request; no Overspill worker, or one on another store, ends the run
    (`OverspillUnavailable`) unless the store's `on_unavailable` is `'fallback'`.

    `ProcessHistory` keeps the processor's output as the run's history, so the history itself is
    the masked view: `all_messages()` holds the markers (their bytes are in the store), and each
    request is masked from its messages alone. Deterministic: the output depends only on the
    messages, the run id and the spills' results.
    """

    store: OverspillStore
    """Where returns are spilled; the read-back tools must read the same store."""

    async def __call__(self, ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        """The history to send: `messages` with old returns masked, once over budget (the very
        list when nothing is masked)."""
        # pydantic-ai counts the current turn's returns among the `keep_recent` newest.
        current = sum(isinstance(p, ToolReturnPart) for m in messages[_last_response(messages) + 1 :] for p in m.parts)
        conversation = _conversation(dataclasses.replace(self, keep_recent=max(0, self.keep_recent - current)))
        run_id = ctx.run_id or 'run'
        masked = await conversation.mask(messages, run_id=run_id, spill=self.store.write, fixed=_instructions(messages))
        return masked if conversation.masked_now else messages

    def measure(self, messages: Sequence[ModelMessage]) -> int:
        """The size of `messages` in `unit`s, as masking compares it with `budget`: the text of
        every part the model is sent (files and images not counted) and the last request's
        instructions."""
        return _conversation(self).measure(messages, fixed=_instructions(messages))


def _conversation(settings: MaskingSettings) -> Conversation[ModelMessage]:
    # A new conversation per request (its `key`, `id`, is never compared): the history is the
    # masked view already (`ProcessHistory`), and one agent serves concurrent runs.
    return Conversation(settings, id, _entry, _replace)


def _entry(message: ModelMessage) -> Entry:
    """A message as masking sees it: its parts' texts, and a request's tool returns."""
    texts = [text for part in message.parts if (text := _part_text(part))]
    if not isinstance(message, ModelRequest):
        return Entry(texts=texts, from_model=isinstance(message, ModelResponse))
    return Entry(texts=texts, outputs=[_output(p) for p in message.parts if isinstance(p, ToolReturnPart)])


def _output(part: ToolReturnPart) -> ToolOutput:
    """A tool return, with no text unless it may be masked: only plain successful returns, since
    typed subclasses carry state pydantic-ai rebuilds from history, errors and retries are
    feedback, not data, and files would be lost."""
    plain = type(part) is ToolReturnPart and part.outcome == 'success' and not part.files
    metadata = part.metadata if isinstance(part.metadata, dict) else {}
    handle = metadata.get('overflow_handle')  # the harness's record of its spill
    return ToolOutput(
        part.tool_call_id,
        part.tool_name,
        part.model_response_str() if plain else None,
        handle if isinstance(handle, str) else None,
    )


def _replace(message: ModelMessage, k: int, marker: str) -> ModelMessage:
    """`message` with its `k`-th tool return's content replaced by the marker (a new message)."""
    assert isinstance(message, ModelRequest), 'only requests carry tool returns'
    parts = list(message.parts)
    returns: list[tuple[int, ToolReturnPart[Any, Any]]] = [
        (i, p) for i, p in enumerate(parts) if isinstance(p, ToolReturnPart)
    ]
    at, part = returns[k]  # a plain `ToolReturnPart`: only those are masked
    parts[at] = dataclasses.replace(part, content=marker)
    return dataclasses.replace(message, parts=parts)


def _last_response(messages: Sequence[ModelMessage]) -> int:
    """The position of the model's last response (-1: none)."""
    return next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], ModelResponse)), -1)


def _instructions(messages: Sequence[ModelMessage]) -> str:
    """The instructions the model is sent: the last request's."""
    request = next((m for m in reversed(messages) if isinstance(m, ModelRequest)), None)
    return (request.instructions or '') if request is not None else ''


def _part_text(part: Any) -> str:
    """The text of a message part as the model is sent it (files and images not counted)."""
    if isinstance(part, ToolReturnPart):
        return part.model_response_str()
    if isinstance(part, RetryPromptPart):
        return part.model_response()
    if isinstance(part, ToolCallPart):
        return part.args_as_json_str()
    if isinstance(part, UserPromptPart):
        content = part.content
        return content if isinstance(content, str) else ''.join(c for c in content if isinstance(c, str))
    if isinstance(part, (SystemPromptPart, TextPart, ThinkingPart)):
        return part.content
    other = getattr(part, 'content', None)
    return other if isinstance(other, str) else ''
