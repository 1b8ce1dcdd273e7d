"""`OverspillMasking`: a `call_model_input_filter` that clears old tool outputs from the model's
input losslessly, leaving a marker whose handle reads them back from Overspill's store."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from agents.run_config import CallModelData, ModelInputData
from temporalio import workflow

from overspill._markers import is_masked, mask_marker, spill_header
from overspill.openai_agents._worker import OverspillWorker

SPILL_ACTIVITY = 'tool_output_limits.spill'
"""The Overspill activity that persists a payload under its key."""

_MODEL_ITEMS = ('function_call', 'reasoning', 'custom_tool_call')
"""Input item types the model produced: the outputs after the last of them are the current turn's."""

_spilled_by_run: WeakKeyDictionary[Any, dict[str, str]] = WeakKeyDictionary()
"""The handles masking stored, per workflow instance: a workflow replayed from its start (a new
instance) spills again in the same order, as its history recorded, so replay stays deterministic."""


@dataclass
class OverspillMasking:
    """Clears old tool outputs from the model's input without losing them.

    A `call_model_input_filter` for the OpenAI Agents SDK:

    ```python
    result = await Runner.run(agent, prompt, run_config=RunConfig(call_model_input_filter=OverspillMasking()))
    ```

    Before each model call, once the input (instructions and items) measures more than `budget`
    chars, every older `function_call_output` becomes a short marker naming the tool, the output's
    size and a handle: `[Tool output of 'fetch' cleared from context (60,000 chars); stored to
    handle 'run/3.0'. Get it back with read_tool_result, grep_tool_result or query_tool_result.]`
    (`overspill_tools()` gives the agent those tools). It never touches the `keep_recent` most
    recent outputs, nor the current turn's (those after the model's last call, which it has not
    seen yet), nor outputs shorter than `min_chars`, outputs that are not text, and the outputs of
    `exclude_tools`.

    An output Overspill already spilled (it starts with the spill marker) keeps its handle: no new
    write. Any other is spilled first, in workflow code through the Overspill worker's
    `tool_output_limits.spill` activity, under `{run_id}/{call_id}.masked-{sha256 of the text, 12
    hex}`: the write is journaled, so a replay gets the recorded handle back, and a handle never
    names other content. An output whose spill fails stays as it was (a WARNING is logged) and is
    tried again at the next model call.

    The SDK hands the filter the whole conversation at every call and keeps none of its changes,
    so masking is done again each time; the handles it stored are kept for the workflow's
    lifetime, so each output is spilled once. Deterministic: the input sent depends only on the
    conversation, the run id and the spills' recorded results.
    """

    budget: int = 100_000
    """Mask once the model's input measures more than this many chars (≈ 25,000 tokens)."""

    keep_recent: int = 3
    """How many of the most recent tool outputs are never masked (the current turn's never are)."""

    min_chars: int = 1_000
    """Outputs shorter than this are never masked: the marker would save little."""

    exclude_tools: frozenset[str] = frozenset()
    """Names of tools whose outputs are never masked."""

    read_tools: tuple[str, ...] = ('read_tool_result', 'grep_tool_result', 'query_tool_result')
    """The tools the marker names to get an output back (`overspill_tools()` gives them)."""

    worker: OverspillWorker = field(default_factory=OverspillWorker)
    """The Overspill worker that stores the outputs masking spills (its queue and timeouts)."""

    def __post_init__(self) -> None:
        if self.budget < 0 or self.keep_recent < 0 or self.min_chars < 0:
            raise ValueError('budget, keep_recent and min_chars must be non-negative')
        if not self.read_tools:
            raise ValueError('read_tools must name at least one tool')

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The input to send: the model's input with old outputs masked, once over budget."""
        model_data = data.model_data
        items: list[Any] = list(model_data.input)  # dicts: TypedDicts of the Responses API
        if measure(items, model_data.instructions) <= self.budget:
            return model_data
        names = {
            str(item.get('call_id')): str(item.get('name', ''))
            for item in items
            if isinstance(item, dict) and item.get('type') == 'function_call'
        }
        masked = list(items)
        for at in self.candidates(items, names):
            item = items[at]
            marker = await self._marker(item, names.get(str(item.get('call_id')), ''))
            if marker is not None:
                masked[at] = {**item, 'output': marker}
        return ModelInputData(input=masked, instructions=model_data.instructions)

    def candidates(self, items: Sequence[Any], names: dict[str, str]) -> list[int]:
        """The positions of the outputs to mask, oldest first: every tool output but the
        `keep_recent` newest and the current turn's, if maskable and not masked yet."""
        outputs = [i for i, item in enumerate(items) if isinstance(item, dict) and item.get('type') == 'function_call_output']
        model_items = [i for i, item in enumerate(items) if _from_model(item)]
        current = model_items[-1] if model_items else len(items)
        older = outputs[: max(0, len(outputs) - self.keep_recent)]
        return [i for i in older if i < current and self._maskable(items[i], names)]

    def _maskable(self, item: dict[str, Any], names: dict[str, str]) -> bool:
        output = item.get('output')
        if not isinstance(output, str) or names.get(str(item.get('call_id'))) in self.exclude_tools:
            return False
        return len(output) >= self.min_chars and not is_masked(output)

    async def _marker(self, item: dict[str, Any], tool_name: str) -> str | None:
        """The marker for `item`'s output, or `None` when it could not be stored or would not be shorter."""
        text = str(item['output'])
        spilled = _spilled(text)
        if spilled is not None:
            handle, size = spilled
        else:
            if not workflow.in_workflow():
                raise RuntimeError('OverspillMasking spills in a Temporal workflow (an agent on OpenAIAgentsPlugin)')
            data = text.encode('utf-8')
            digest = hashlib.sha256(data).hexdigest()[:12]
            key = f'{workflow.info().run_id}/{item.get("call_id") or "call"}.masked-{digest}'
            size = f'{len(text):,} chars'
            if len(mask_marker(tool_name, key, size, self.read_tools)) >= len(text):
                return None  # the marker would not be shorter: no spill for nothing
            stored = await self._spill(key, text, tool_name)
            if stored is None:
                return None
            handle = stored
        marker = mask_marker(tool_name, handle, size, self.read_tools)
        return marker if len(marker) < len(text) else None

    async def _spill(self, key: str, text: str, tool_name: str) -> str | None:
        """Store `text` under `key` (once per workflow) and return its handle, or `None` on failure."""
        spilled = _spilled_by_run.setdefault(workflow.instance(), {})
        if key in spilled:
            return spilled[key]
        # The reference's defaults (no strip_ansi, no serializer), whatever the worker's `--limits`
        # say: the stored bytes must be exactly the output's.
        request = {'key': key, 'output': {'text': text}, 'config': {}}
        try:
            response = await self.worker.run(SPILL_ACTIVITY, request, f'spill {key}')
            handle = response.get('handle') if isinstance(response, dict) else None
            if not isinstance(handle, str):
                raise TypeError(f'{SPILL_ACTIVITY} returned {type(response).__name__}, not a spill response')
        except Exception as error:  # the activity's, the worker's: the output stays as it was
            workflow.logger.warning(
                'Masking output of tool %r failed (%s: %s); leaving it in context', tool_name, type(error).__name__, error
            )
            return None
        spilled[key] = handle
        return handle


def measure(items: Sequence[Any], instructions: str | None) -> int:
    """Chars of model-visible text in a model's input: the instructions and every item's text."""
    return len(instructions or '') + sum(len(item_text(item)) for item in items)


def item_text(item: Any) -> str:
    """The model-visible text of one input item: a message's text, a call's arguments, an output."""
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        return ''
    kind = item.get('type')
    if kind == 'function_call':
        return str(item.get('arguments', ''))
    if kind == 'function_call_output':
        output = item.get('output', '')
        if isinstance(output, str):
            return output
        return ''.join(str(part.get('text', '')) for part in output if isinstance(part, dict))
    content = item.get('content', '')
    if isinstance(content, str):
        return content
    return ''.join(str(part.get('text', '')) for part in content if isinstance(part, dict))


def _from_model(item: Any) -> bool:
    """Whether an input item is one the model produced (a call, reasoning, an assistant message)."""
    return isinstance(item, dict) and (item.get('type') in _MODEL_ITEMS or item.get('role') == 'assistant')


def _spilled(text: str) -> tuple[str, str] | None:
    """The handle and size of an output Overspill spilled (its text starts with the spill marker)."""
    header = spill_header(text)
    if header is None or header[0] is None:
        return None
    return header[0], header[1]
