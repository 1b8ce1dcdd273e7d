"""`OverspillMasking`: a history processor that clears old tool returns from the model's context
losslessly, leaving a marker whose handle reads them back from Overspill's store."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic_ai import RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from temporalio import workflow

from overspill._markers import is_masked, mask_marker, spill_header
from overspill.pydantic_ai._store import OverspillStore

CHARS_PER_TOKEN = 4
"""The token estimate without a tokenizer: ~4 chars per token, as the harness's `over_tokens`."""

_logger = logging.getLogger('overspill.pydantic_ai.masking')


@dataclass
class OverspillMasking:
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

    Before each model request, once the messages to be sent measure more than `budget` (chars,
    or tokens with `unit='tokens'`), it replaces the content of every older tool return with a
    short marker naming the tool, the output's size and a handle, e.g. `[Tool output of 'fetch'
    cleared from context (60,000 chars); stored to handle 'run-1/call-1.masked-…'. Get it back
    with read_tool_result, grep_tool_result or query_tool_result.]`. It never touches the
    `keep_recent` most recent returns, nor those of the current turn (the last request's, which
    the model has not seen yet), nor returns shorter than `min_chars`, failed or retried
    returns, returns with files, and the returns of `exclude_tools`.

    A return the harness already spilled keeps its handle (no new write). Any other is spilled
    first, through `store.write`: on Temporal that is Overspill's `tool_output_limits.spill`
    activity, journaled, so a replay gets the recorded handle back; outside a workflow, a write
    to the store. The key is `{run_id}/{tool_call_id}.masked-{sha256 of the text, 12 hex}`, so a
    re-spill overwrites the same bytes and a handle never names other content. A return whose
    spill fails stays as it was (a WARNING is logged) and is tried again at the next request;
    but no Overspill worker, or one on another store, ends the run (`OverspillUnavailable`)
    unless the store's `on_unavailable` is `'fallback'`.

    Deterministic: the output depends only on the messages and the run id, so the same history
    gives the same masked history and the same spills, and masking a masked history changes
    nothing. The masked history is the run's history from then on (`ProcessHistory` makes it
    persistent), so `all_messages()` holds markers in place of the masked outputs; their bytes
    are in the store.
    """

    store: OverspillStore
    """Where returns are spilled; the read-back tools must read the same store."""

    budget: int = 100_000
    """Mask once the messages measure more than this, in `unit`s (100,000 chars ≈ 25,000 tokens)."""

    keep_recent: int = 3
    """How many of the most recent tool returns are never masked (the current turn's never are)."""

    unit: Literal['chars', 'tokens'] = 'chars'
    """How `budget` is measured: chars of message text, or tokens (by `tokenizer`)."""

    tokenizer: Callable[[str], int] | None = None
    """With `unit='tokens'`: a `(text) -> int` token counter, applied to each text of each message;
    default the harness's estimate, `len(text) // 4` over all the text."""

    min_chars: int = 1_000
    """Returns shorter than this are never masked: the marker would save little."""

    exclude_tools: frozenset[str] = frozenset()
    """Names of tools whose returns are never masked."""

    read_tools: tuple[str, ...] = ('read_tool_result', 'grep_tool_result', 'query_tool_result')
    """The tools the marker names to get a return back (`OverspillToolset` adds the last two)."""

    def __post_init__(self) -> None:
        if self.budget < 0 or self.keep_recent < 0 or self.min_chars < 0:
            raise ValueError('budget, keep_recent and min_chars must be non-negative')
        if self.unit not in ('chars', 'tokens'):
            raise ValueError(f"unit must be 'chars' or 'tokens', not {self.unit!r}")
        if not self.read_tools:
            raise ValueError('read_tools must name at least one tool')

    async def __call__(self, ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        """The history to send: `messages` with old returns masked, once over budget."""
        if self.measure(messages) <= self.budget:
            return messages
        candidates = self.candidates(messages)
        if not candidates:
            return messages
        run_id = ctx.run_id or 'run'
        masked: dict[tuple[int, int], ToolReturnPart] = {}
        for at in candidates:
            part = messages[at[0]].parts[at[1]]
            if isinstance(part, ToolReturnPart) and (new := await self._mask(run_id, part)) is not None:
                masked[at] = new
        if not masked:
            return messages
        out: list[ModelMessage] = []
        for i, message in enumerate(messages):
            # Tool returns are parts of requests only.
            if isinstance(message, ModelRequest) and any(at[0] == i for at in masked):
                message = replace(message, parts=[masked.get((i, j), part) for j, part in enumerate(message.parts)])
            out.append(message)
        return out

    def measure(self, messages: Sequence[ModelMessage]) -> int:
        """The size of `messages` in `unit`s: the text of every part the model is sent."""
        texts = [text for message in messages for part in message.parts if (text := _part_text(part))]
        if self.unit == 'chars':
            return sum(len(t) for t in texts)
        if self.tokenizer is not None:
            return sum(self.tokenizer(t) for t in texts)
        return sum(len(t) for t in texts) // CHARS_PER_TOKEN

    def candidates(self, messages: Sequence[ModelMessage]) -> list[tuple[int, int]]:
        """The (message, part) positions of the returns to mask, oldest first: every tool return but
        the `keep_recent` newest and the current turn's, if maskable and not masked yet."""
        returns = [
            (i, j)
            for i, message in enumerate(messages)
            if isinstance(message, ModelRequest)
            for j, part in enumerate(message.parts)
            if isinstance(part, ToolReturnPart)
        ]
        current = len(messages) - 1 if messages and isinstance(messages[-1], ModelRequest) else None
        older = returns[: max(0, len(returns) - self.keep_recent)]
        return [at for at in older if at[0] != current and self._maskable(messages[at[0]].parts[at[1]])]

    def _maskable(self, part: Any) -> bool:
        # Only plain successful returns: typed subclasses (capability loads, tool search) carry
        # state pydantic-ai rebuilds from history, and errors and retries are feedback, not data.
        if type(part) is not ToolReturnPart or part.outcome != 'success' or part.tool_name in self.exclude_tools:
            return False
        if part.files:
            return False
        text = part.model_response_str()
        return len(text) >= self.min_chars and not is_masked(text)

    async def _mask(self, run_id: str, part: ToolReturnPart) -> ToolReturnPart | None:
        """`part` with its content replaced by the marker, or `None` if its output could not be stored."""
        text = part.model_response_str()
        spilled = _spilled(part, text)
        if spilled is not None:
            handle, size = spilled
        else:
            data = text.encode('utf-8')
            key = f'{run_id}/{part.tool_call_id or "call"}.masked-{hashlib.sha256(data).hexdigest()[:12]}'
            size = f'{len(text):,} chars'
            if len(mask_marker(part.tool_name, key, size, self.read_tools)) >= len(text):
                return None  # the marker would not be shorter: no spill for nothing
            try:
                handle = await self.store.write(key, data)
            except Exception as error:  # the store's, the activity's: the return stays as it was
                _warn(
                    'Masking output of tool %r failed (%s: %s); leaving it in context',
                    part.tool_name,
                    type(error).__name__,
                    error,
                )
                return None
        marker = mask_marker(part.tool_name, handle, size, self.read_tools)
        if len(marker) >= len(text):
            return None
        return replace(part, content=marker)


def _spilled(part: ToolReturnPart, text: str) -> tuple[str, str] | None:
    """The handle and size of a return the harness spilled (its content is the spill marker)."""
    header = spill_header(text)
    if header is None:
        return None
    metadata = part.metadata if isinstance(part.metadata, dict) else {}
    handle = metadata.get('overflow_handle')
    if not isinstance(handle, str):
        handle = header[0]
        if handle is None:
            return None  # then it is masked like any text: its marker, preview and all, is spilled
    return handle, header[1]


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


def _warn(message: str, *args: Any) -> None:
    if workflow.in_workflow():
        workflow.logger.warning(message, *args)
    else:
        _logger.warning(message, *args)
