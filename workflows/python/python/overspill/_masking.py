"""Masking: clear tool outputs the model has already seen from its input, losslessly, the same
way for every framework.

**The rule.** Before each model call the input is measured (instructions and every item's
model-visible text, in chars or tokens). While it measures at most `budget`, nothing changes.
Once it measures more, every tool output the model has already seen, but the `keep_recent` newest
of those, is replaced at once by a mask marker naming the tool, the output's size and a handle
(`[Tool output of 'fetch' cleared from context (60,000 chars); stored to handle 'run/call-1.0'.
Get it back with read_tool_result, grep_tool_result or query_tool_result.]`), and stays replaced;
the input then grows back until it passes the budget again. Never masked: the current turn's
outputs (those after the model's last call: it has not seen them yet, and they do not count
among the `keep_recent`), outputs shorter than `min_chars`, outputs that are not text, failed
ones, the outputs of `exclude_tools`, and any whose marker would not be shorter.

Why batches: between two batches the input only grows at its end, so a provider's prompt cache
keeps matching its prefix; masking down to the newest outputs at every call would change the
prefix at every call.

**Handles.** An output Overspill already spilled (it starts with the spill marker) keeps its
handle: no new write. Any other is spilled first, under `{run_id}/{call_id}.masked-{sha256 of the
text, 12 hex}`, so a re-spill writes the same bytes and a handle never names other content. An
output whose spill fails stays as it was (a WARNING says why) and is tried again at the next
masking; Overspill being unavailable ends the run unless its caller chose to fall back.

**Cost.** Masking costs in proportion to what is new, not to the conversation: each item is
examined once, when it first appears (its text measured, its output noted); a batch touches only
the outputs it masks. A framework that hands the hook the whole conversation at every call (the
OpenAI Agents SDK keeps none of a filter's changes) gets the masked view kept here, for its
workflow instance, extended by the new items. Deterministic: the view depends only on the
conversation, the run id and the spills' recorded results; a replay from the start (a new
workflow instance) rebuilds it in the same order.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar
from weakref import WeakKeyDictionary

from temporalio import workflow

from overspill._activity import OverspillWorker, UnavailableError
from overspill._at_source import at_source_stores
from overspill._markers import is_masked, mask_marker, spill_header
from overspill._tools import READ_BACK_TOOLS

Item = TypeVar('Item')

CHARS_PER_TOKEN = 4
"""The token estimate without a tokenizer: ~4 chars per token, as the harness's `over_tokens`."""

MASKED_TOOLS = tuple(tool.name for tool in READ_BACK_TOOLS if not tool.lists)
"""The read-back tools a mask marker names by default: those that read one output back
(`read_tool_result`, `grep_tool_result`, `query_tool_result`)."""

_logger = logging.getLogger('overspill.masking')


@dataclass(kw_only=True)
class MaskingSettings:
    """When masking clears outputs, and which (see the module's rule); each framework's hook has
    these. Keyword-only, so an adapter's own required settings (pydantic-ai's `store`) come first."""

    budget: int = 100_000
    """Mask once the model's input measures more than this, in `unit`s (100,000 chars ≈ 25,000 tokens)."""

    keep_recent: int = 3
    """How many of the newest outputs the model has already seen are never masked (the current
    turn's, which it has not seen, never are, and do not count here)."""

    min_chars: int = 1_000
    """Outputs shorter than this are never masked: the marker would save little."""

    exclude_tools: frozenset[str] = frozenset()
    """Names of tools whose outputs are never masked."""

    read_tools: tuple[str, ...] = MASKED_TOOLS
    """The tools the marker names to get an output back (the agent must have them)."""

    unit: Literal['chars', 'tokens'] = 'chars'
    """How `budget` is measured: chars of model-visible text, or tokens (by `tokenizer`)."""

    tokenizer: Callable[[str], int] | None = None
    """With `unit='tokens'`: a `(text) -> int` token counter applied to each text; default the
    harness's estimate, `len(text) // 4` over all the text."""

    def __post_init__(self) -> None:
        if self.budget < 0 or self.keep_recent < 0 or self.min_chars < 0:
            raise ValueError('budget, keep_recent and min_chars must be non-negative')
        if self.unit not in ('chars', 'tokens'):
            raise ValueError(f"unit must be 'chars' or 'tokens', not {self.unit!r}")
        if not self.read_tools:
            raise ValueError('read_tools must name at least one tool')


@dataclass(frozen=True)
class ToolOutput:
    """A tool output in the conversation, as masking sees it."""

    call_id: str
    """The tool call it answers (part of the masked key)."""

    tool_name: str
    """The tool that produced it."""

    text: str | None
    """Its model-visible text, or `None` when it is never masked (not text, failed, with files)."""

    handle: str | None = None
    """The handle it was spilled under, when the framework records one beside the text
    (pydantic-ai's `metadata['overflow_handle']`); else the spill marker's is used."""


@dataclass(frozen=True)
class Entry:
    """One item of a conversation, as masking sees it."""

    texts: Sequence[str] = ()
    """Its model-visible texts, which the input is measured by."""

    from_model: bool = False
    """The model produced it (a call, reasoning, an answer): outputs after it are the current turn's."""

    outputs: Sequence[ToolOutput] = ()
    """The tool outputs it carries (an OpenAI item one; a pydantic-ai request one per tool return)."""


@dataclass
class _Seen(Generic[Item]):
    """What a conversation's items so far came to."""

    view: list[Item] = field(default_factory=list)
    """The items, with the outputs masked so far replaced."""
    ends: tuple[Hashable, Hashable] | None = None
    """The keys of the first and the last item."""
    chars: int = 0
    tokens: int = 0
    outputs: list[tuple[int, int]] = field(default_factory=list)
    """The positions of the tool outputs (item, output in it), in order."""
    found: dict[tuple[int, int], tuple[ToolOutput, int, int]] = field(default_factory=dict)
    """Each output, with the chars and tokens it measured."""
    pending: list[tuple[int, int]] = field(default_factory=list)
    """The outputs that may be masked and are not yet."""
    last_model: int = -1
    """The position of the model's last item."""


Spill = Callable[[str, bytes], Awaitable[str]]
"""Stores the bytes under the key and returns the handle (raising when it could not)."""


def masked_key(run_id: str, call_id: str, text: str) -> str:
    """The key an output is spilled under when masking spills it: `{run}/{call}.masked-{sha256, 12 hex}`."""
    return f'{run_id}/{call_id or "call"}.masked-{hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]}'


@dataclass
class Conversation(Generic[Item]):
    """The masking state of one conversation: the masked view of the items seen so far.

    An adapter gives `mask` the conversation at every model call, with three functions of its
    items: `key` (what identifies an item: a new conversation is told by it), `describe` (an
    `Entry`, called once per item) and `replace` (the item with a marker in place of its `k`-th
    output).
    """

    settings: MaskingSettings
    key: Callable[[Item], Hashable]
    describe: Callable[[Item], Entry]
    replace: Callable[[Item, int, str], Item]

    examined: int = 0
    """Items described so far: each item once, however many calls see it."""

    masked_now: list[int] = field(default_factory=list)
    """The positions of the items the last `mask` call replaced outputs in: what a hook that keeps
    its edits (LangGraph's state update by message id) sends back."""

    _handles: dict[str, str] = field(default_factory=dict)
    """The handles this conversation's spills returned, by key: each output is spilled once."""

    _state: _Seen[Item] = field(default_factory=lambda: _Seen())
    """What the items seen so far came to (started over for another conversation)."""

    async def mask(self, items: Sequence[Item], *, run_id: str, spill: Spill, fixed: str = '') -> list[Item]:
        """The items to send: `items` with the outputs masked so far, and those masked now if the
        input (with the `fixed` text, such as instructions) measures over budget."""
        self._catch_up(items)
        self.masked_now = []
        if self._measure(fixed) > self.settings.budget:
            await self._batch(run_id, spill)
        return list(self._state.view)

    def measure(self, items: Sequence[Item], *, fixed: str = '') -> int:
        """The size of the input `items` and `fixed` make, in `unit`s, as the rule compares it
        with `budget` (the masked view's, for items seen before)."""
        self._catch_up(items)
        return self._measure(fixed)

    async def mask_in_workflow(self, items: Sequence[Item], worker: OverspillWorker, *, fixed: str = '') -> list[Item]:
        """`mask` as a framework's hook runs it in workflow code: spills go through `worker`'s
        `tool_output_limits.spill` under the workflow's run id, checked against the store this
        run's at-source spills went to (`OtherStoreError` when the worker keeps another). Outside a
        workflow nothing can be spilled: an output that would need it stays, with a WARNING."""
        in_workflow = workflow.in_workflow()
        stores = at_source_stores()
        store = next(iter(stores)) if len(stores) == 1 else None

        async def spill(key: str, data: bytes) -> str:
            if not in_workflow:
                raise RuntimeError('masking spills from workflow code: run the agent on Temporal')
            return await worker.spill(key, data, store=store)

        return await self.mask(items, run_id=workflow.info().run_id if in_workflow else 'run', spill=spill, fixed=fixed)

    def _catch_up(self, items: Sequence[Item]) -> None:
        """Examine the items not seen yet; start over when `items` is another conversation."""
        seen = len(self._state.view)
        if seen and (len(items) < seen or self._state.ends != (self.key(items[0]), self.key(items[seen - 1]))):
            self._state = _Seen()
            seen = 0
        settings = self.settings
        for at in range(seen, len(items)):
            item = items[at]
            entry = self.describe(item)
            self.examined += 1
            self._state.view.append(item)
            chars, tokens = self._size(entry.texts)
            self._state.chars += chars
            self._state.tokens += tokens
            if entry.from_model:
                self._state.last_model = at
            for k, output in enumerate(entry.outputs):
                self._state.outputs.append((at, k))
                self._state.found[at, k] = (output, *self._size((output.text,) if output.text else ()))
                text = output.text
                if (
                    text is not None
                    and len(text) >= settings.min_chars
                    and output.tool_name not in settings.exclude_tools
                    and not is_masked(text)
                ):
                    self._state.pending.append((at, k))
        if items:
            self._state.ends = (self.key(items[0]), self.key(items[-1]))

    def _size(self, texts: Sequence[str]) -> tuple[int, int]:
        chars = sum(len(t) for t in texts)
        tokenizer = self.settings.tokenizer
        return chars, (sum(tokenizer(t) for t in texts) if tokenizer is not None else 0)

    def _measure(self, fixed: str) -> int:
        chars, tokens = self._size((fixed,) if fixed else ())
        if self.settings.unit == 'chars':
            return self._state.chars + chars
        if self.settings.tokenizer is not None:
            return self._state.tokens + tokens
        return (self._state.chars + chars) // CHARS_PER_TOKEN

    def _due(self) -> list[tuple[int, int]]:
        """The positions to mask now, oldest first: pending outputs the model has seen, but the
        `keep_recent` newest seen outputs."""
        # the outputs before the model's last item
        seen = bisect.bisect_left(self._state.outputs, (self._state.last_model, -1))
        keep = self.settings.keep_recent
        if seen <= keep:
            return []
        limit = self._state.outputs[seen - keep] if keep else (self._state.last_model, -1)
        return [at for at in self._state.pending if at < limit]

    async def _batch(self, run_id: str, spill: Spill) -> None:
        done: set[tuple[int, int]] = set()
        for at in self._due():
            output, chars, tokens = self._state.found[at]
            try:
                marker = await self._marker(output, run_id, spill)
            except _SpillFailed:
                continue  # tried again at the next batch
            done.add(at)
            if marker is None:
                continue
            item, k = at
            self._state.view[item] = self.replace(self._state.view[item], k, marker)
            if item not in self.masked_now:
                self.masked_now.append(item)
            new_chars, new_tokens = self._size((marker,))
            self._state.chars += new_chars - chars
            self._state.tokens += new_tokens - tokens
        self._state.pending = [at for at in self._state.pending if at not in done]

    async def _marker(self, output: ToolOutput, run_id: str, spill: Spill) -> str | None:
        """The mask marker for `output`, or `None` when it would not be shorter; `_SpillFailed`
        when it had to be spilled and was not."""
        text, tools = output.text or '', self.settings.read_tools
        header = spill_header(text)
        handle = (output.handle or header[0]) if header is not None else None  # unparsed quoting: as any text
        if header is not None and handle is not None:
            size = header[1]
        else:
            key = masked_key(run_id, output.call_id, text)
            size = f'{len(text):,} chars'
            if len(mask_marker(output.tool_name, key, size, tools)) >= len(text):
                return None  # the marker would not be shorter: no spill for nothing
            handle = self._handles.get(key)
            if handle is None:
                handle = self._handles[key] = await _spill(spill, key, text, output.tool_name)
        marker = mask_marker(output.tool_name, handle, size, tools)
        return marker if len(marker) < len(text) else None


class _SpillFailed(Exception):
    """A spill masking needed failed (and was logged): the output stays, and is tried again next batch."""


async def _spill(spill: Spill, key: str, text: str, tool_name: str) -> str:
    """`spill(key, text)`'s handle; `_SpillFailed` (with a WARNING) when it fails, unless Overspill
    is unavailable and the run is to end."""
    try:
        return await spill(key, text.encode('utf-8'))
    except UnavailableError as error:
        if error.ends_run:
            raise
        _warn(tool_name, error)
    except Exception as error:  # the store's, the activity's: the output stays as it was
        _warn(tool_name, error)
    raise _SpillFailed


def _warn(tool_name: str, error: Exception) -> None:
    args = ('Masking output of tool %r failed (%s: %s); leaving it in context', tool_name, type(error).__name__, error)
    if workflow.in_workflow():
        workflow.logger.warning(*args)
    else:
        _logger.warning(*args)


class Conversations(Generic[Item]):
    """The conversations one masking hook sees, one per workflow instance (a replay from the start
    is a new instance, and rebuilds its view in the same order); outside a workflow, one."""

    def __init__(self) -> None:
        self._by_workflow: WeakKeyDictionary[Any, Conversation[Item]] = WeakKeyDictionary()
        self._outside: Conversation[Item] | None = None

    def get(self, make: Callable[[], Conversation[Item]]) -> Conversation[Item]:
        """This workflow instance's conversation (made by `make` the first time)."""
        if not workflow.in_workflow():
            if self._outside is None:
                self._outside = make()
            return self._outside
        instance = workflow.instance()
        conversation = self._by_workflow.get(instance)
        if conversation is None:
            conversation = self._by_workflow[instance] = make()
        return conversation


@dataclass
class WorkflowMasking(MaskingSettings):
    """The settings of a framework's masking hook, with the Overspill worker its spills go through
    and the masked view of each workflow's conversation: what every adapter's hook is made of.

    A hook calls `masked(items, conversation)` at each model call and sends what it returns.
    """

    worker: OverspillWorker = field(default_factory=OverspillWorker)
    """The Overspill worker that stores the outputs masking spills (its queue and timeouts)."""

    _conversations: Conversations[Any] = field(default_factory=Conversations, init=False, repr=False, compare=False)

    async def masked(
        self, items: Sequence[Item], conversation: Callable[[], Conversation[Item]], *, fixed: str = ''
    ) -> list[Item]:
        """The items to send: this workflow's conversation (made by `conversation` the first time)
        masked by the rule, with `fixed` text (instructions) counted. Its spills go through `worker`
        under the workflow's run id, checked against the store this run's at-source spills went
        to; outside a workflow nothing can be spilled, so an output that needs a spill stays (with
        a WARNING)."""
        return await self._conversations.get(conversation).mask_in_workflow(items, self.worker, fixed=fixed)
