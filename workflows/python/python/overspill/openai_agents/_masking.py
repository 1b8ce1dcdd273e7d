"""`OverspillMasking`: the masking core (`overspill._masking`) as a `call_model_input_filter`."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from agents.run_config import CallModelData, ModelInputData

from overspill._masking import Conversation, Entry, ToolOutput, WorkflowMasking


@dataclass
class OverspillMasking(WorkflowMasking):
    """Clears tool outputs the model has already seen from its input, without losing them.

    A `call_model_input_filter` for the OpenAI Agents SDK:

    ```python
    result = await Runner.run(agent, prompt, run_config=RunConfig(call_model_input_filter=OverspillMasking()))
    ```

    Once the model's input (instructions and items) measures more than `budget` chars, every
    `function_call_output` the model has seen but the `keep_recent` newest becomes, at once, a
    marker naming the tool, the output's size and a handle: `[Tool output of 'fetch' cleared from
    context (60,000 chars); stored to handle 'run/3.0'. Get it back with read_tool_result,
    grep_tool_result or query_tool_result.]` (`overspill_tools()` gives the agent those tools);
    the input then grows back until it passes the budget again (see `overspill._masking` for the
    rule, the same for every framework). Never the current turn's outputs (those after the
    model's last call: it has not seen them yet), outputs shorter than `min_chars`, outputs that
    are not text, and the outputs of `exclude_tools`.

    An output Overspill already spilled (it starts with the spill marker) keeps its handle: no new
    write. Any other is spilled first, in workflow code through `worker` (the Overspill worker's
    `tool_output_limits.spill` activity), under `{run_id}/{call_id}.masked-{sha256, 12 hex}`: the
    write is journaled, so a replay gets the recorded handle back. An output whose spill fails
    stays as it was (a WARNING says why) and is tried again at the next masking; no worker, or a
    worker on another store than the at-source spills', ends the run (`worker.on_unavailable`).

    The SDK hands the filter the whole conversation at every call and keeps none of its changes:
    the masked view is kept here for the workflow instance, and each call examines only the items
    that are new. Deterministic: the input sent depends only on the conversation, the run id and
    the spills' recorded results.
    """

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The input to send: the model's input with the outputs masked so far."""
        model_data = data.model_data
        items = await self.masked(model_data.input, self._conversation, fixed=model_data.instructions or '')
        return ModelInputData(input=items, instructions=model_data.instructions)

    def _conversation(self) -> Conversation[Any]:
        names: dict[str, str] = {}  # call id -> tool name, from the function calls seen so far

        def describe(item: Any) -> Entry:
            if not isinstance(item, dict):
                return Entry(texts=(item,) if isinstance(item, str) else ())
            kind = item.get('type')
            if kind == 'function_call':
                names[str(item.get('call_id'))] = str(item.get('name', ''))
            outputs: tuple[ToolOutput, ...] = ()
            if kind == 'function_call_output':
                text = item.get('output')
                call_id = str(item.get('call_id'))
                outputs = (ToolOutput(call_id, names.get(call_id, ''), text if isinstance(text, str) else None),)
            return Entry(texts=(item_text(item),), from_model=_from_model(item), outputs=outputs)

        return Conversation(self, _key, describe, lambda item, _, marker: {**item, 'output': marker})


def _key(item: Any) -> Hashable:
    """What tells one item from another: its kind, ids and text (the SDK copies items at every call,
    but not their strings, whose hashes Python keeps)."""
    if not isinstance(item, dict):
        return hash(item) if isinstance(item, str) else type(item).__name__
    text = item.get('output', item.get('content', item.get('arguments')))
    return item.get('type'), item.get('role'), item.get('call_id'), item.get('id'), hash(text) if isinstance(text, str) else None


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
    """Whether an input item is one the model produced (a call of any tool, reasoning, an answer)."""
    kind = item.get('type')
    return (isinstance(kind, str) and kind.endswith('_call')) or kind == 'reasoning' or item.get('role') == 'assistant'
