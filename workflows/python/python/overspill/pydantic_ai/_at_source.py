"""pydantic-ai's tool activities at the source: `OverspillInterceptor` for `TemporalDurability`.

Under `TemporalDurability` each function toolset runs its tools in one activity,
`agent__<agent>__toolset__<toolset id>__call_tool`, whose input carries the run context (the run
id, the tool call id, the retry and the run step, from which the harness builds its spill key)
and whose result carries the tool's return. The interceptor reduces that return there, under the
same `ToolOutputLimits` the workflow's agent has, in the text of the installed harness release,
so the workflow receives exactly what the harness would have made of it, byte for byte, and the
harness, finding it under every band, leaves it.

The harness's own read-back tools run in its toolset's activity
(`agent__<agent>__toolset__tool_output_limits__call_tool`), where they would read a spill of an
`OverspillStore` whole. With a harness that has its own `grep_tool_result` (0.75), the
interceptor answers `read_tool_result` and `grep_tool_result` there with the engine's page
instead, which is the harness's text byte for byte and takes memory for the page, not the spill.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import ToolReturn
from pydantic_ai_harness.tool_output_limits import (
    Band,
    Passthrough,
    Spill,
    Summarize,
    ToolOutputLimits,
    Truncate,
    indented_json,
    json_lines,
)
from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput

from overspill._caller import current_caller
from overspill._interceptor import OverspillInterceptor as _Interceptor
from overspill._interceptor import Reduced, ToolCallSite, ToolOutputParts, heartbeating
from overspill._native import ArgumentError, Model, Store, StoreError
from overspill.pydantic_ai._harness import GREP_KIND, READ_KIND, harness_has_grep, installed_harness
from overspill.pydantic_ai._store import OverspillStore, SpillReadError

_TOOL_ACTIVITY = re.compile(r'agent__.+__toolset__(?P<toolset>.+)__call_tool')

_HARNESS_TOOLSET = 'tool_output_limits'
"""The toolset of the harness's own `read_tool_result`, whose pages are never reduced."""


class PydanticAiTools:
    """The tool activities of pydantic-ai's `TemporalDurability` (function toolsets)."""

    def call_site(self, info: activity.Info, args: Sequence[Any]) -> ToolCallSite | None:
        """The call of an `agent__…__toolset__…__call_tool` activity, from its run context."""
        match = _TOOL_ACTIVITY.fullmatch(info.activity_type)
        if match is None or match['toolset'] == _HARNESS_TOOLSET or not args:
            return None
        params = args[0]
        context = getattr(params, 'serialized_run_context', None)
        name = getattr(params, 'name', None)
        if not isinstance(context, Mapping) or not isinstance(name, str):
            return None
        retry, step = context.get('retry'), context.get('run_step')
        return ToolCallSite(
            tool_name=name,
            run_id=context.get('run_id') or 'run',
            tool_call_id=context.get('tool_call_id') or 'call',
            retry=retry if isinstance(retry, int) else 0,
            run_step=step if isinstance(step, int) else None,
        )

    def output(self, result: Any) -> ToolOutputParts | None:
        """The return inside pydantic-ai's `_ToolReturn` result (a ToolReturn envelope unwrapped)."""
        if getattr(result, 'kind', None) != 'tool_return':
            return None
        value = result.result
        if isinstance(value, ToolReturn):
            content = value.content
            if content is not None and not isinstance(content, str):
                return None  # multi-part content: the harness never reduces it, nor do we
            return ToolOutputParts(value.return_value, content, value.metadata, envelope=True)
        return ToolOutputParts(value)

    def with_output(self, result: Any, reduced: Reduced) -> Any:
        """pydantic-ai's result carrying the reduced return (a ToolReturn when it is an envelope,
        as the harness returns a spilled value)."""
        value: Any = reduced.value
        if reduced.envelope:
            value = ToolReturn(return_value=value, content=reduced.content, metadata=reduced.metadata)
        return dataclasses.replace(result, result=value)


class OverspillInterceptor(_Interceptor):
    """Reduce a pydantic-ai agent's tool outputs in their activities, as its `ToolOutputLimits` would.

    Give it to the worker that runs the agent's activities (and the same `ToolOutputLimits` to the
    agent, which reads spills back and leaves the already reduced returns as they are):

    ```python
    limits = ToolOutputLimits(store=OverspillStore())
    agent = Agent(model, capabilities=[limits, TemporalDurability()], name='agent')
    worker = Worker(client, task_queue='agent', workflows=[...],
                    interceptors=[OverspillInterceptor(limits)])
    ```

    Spills go to `store` (default: the limits' own `OverspillStore`, else the default store),
    written by this process with the engine the Overspill worker runs. A Summarize band runs here
    with `model`; without one its outputs go on to the workflow, whose harness summarizes them.
    `limits` must be expressible as Overspill's configuration: its bands, `per_tool`, a
    `tool_filter` by name, `over_tokens` with the default token estimate, `strip_ansi`, the
    `indented_json` / `json_lines` serializers and the summary prompt (a `ValueError` says what
    is not). The text is the installed harness release's; a release Overspill does not know is
    refused here, naming the known ones.

    With a harness that has its own `grep_tool_result` (0.75) and `limits.store` an
    `OverspillStore`, the harness's `read_tool_result` and `grep_tool_result` are answered here,
    in their activity, with the engine's page (the harness's text, byte for byte) rather than
    by the harness reading the whole spill.
    """

    def __init__(
        self,
        limits: ToolOutputLimits[Any],
        store: OverspillStore | Store | str | None = None,
        *,
        model: Model | None = None,
    ) -> None:
        if store is None and isinstance(limits.store, OverspillStore):
            store = limits.store
        if isinstance(store, OverspillStore):
            store = store.engine
        super().__init__(limits_config(limits), store, tools=[PydanticAiTools()], model=model)
        pages = limits.store.engine if isinstance(limits.store, OverspillStore) and harness_has_grep() else None
        self.pages: Store | None = pages
        """The store whose spills the harness's own read-back tools read, answered here; `None`: the harness's."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Reduce the tool activities' outputs; answer the harness's read-back tools with the engine's pages."""
        reduced = super().intercept_activity(next)
        return reduced if self.pages is None else _HarnessPages(reduced, self.pages)


_PAGES = {READ_KIND: 'read_tool_result', GREP_KIND: 'grep_tool_result'}
"""The harness's read-back tools, by kind, and the engine's page of the same name."""


class _HarnessPages(ActivityInboundInterceptor):
    """Answers the harness's `read_tool_result` and `grep_tool_result` activities with the
    engine's pages, in the harness's text, over `store`."""

    def __init__(self, next: ActivityInboundInterceptor, store: Store) -> None:
        super().__init__(next)
        self._store = store

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        page = _harness_page_request(activity.info(), input.args)
        if page is None:
            return await super().execute_activity(input)
        from pydantic_ai.durable_exec._toolset import wrap_tool_call_result

        async with heartbeating(activity.info()):
            return await wrap_tool_call_result(self._page(*page))

    async def _page(self, tool: str, request: dict[str, Any]) -> str:
        """The engine's page, as the harness's tool answers: a bad argument is the model's
        retry, a store that cannot be asked fails the call (as `OverspillStore.read` does)."""
        page = getattr(self._store, tool)
        try:
            text: str = await page(request, caller=current_caller())
        except ArgumentError as error:
            raise ModelRetry(str(error)) from None
        except StoreError as error:
            raise SpillReadError(f'could not read {request["handle"]!r} from {self._store.url}: {error}') from error
        return text


def _harness_page_request(info: activity.Info, args: Sequence[Any]) -> tuple[str, dict[str, Any]] | None:
    """The engine page (`read_tool_result` or `grep_tool_result`) and request that answer the
    harness's read-back tool call this activity runs, if it runs one."""
    match = _TOOL_ACTIVITY.fullmatch(info.activity_type)
    if match is None or match['toolset'] != _HARNESS_TOOLSET or not args:
        return None
    params = args[0]
    tool_def, tool_args = getattr(params, 'tool_def', None), getattr(params, 'tool_args', None)
    tool = _PAGES.get(getattr(tool_def, 'tool_kind', None) or '')
    context = getattr(params, 'serialized_run_context', None)
    if tool is None or not isinstance(tool_args, Mapping) or not isinstance(context, Mapping):
        return None
    request = dict(tool_args)
    if tool == 'read_tool_result':
        request['harness'] = installed_harness()
    names = context.get('_tool_names_by_kind')
    if isinstance(names, Mapping) and isinstance(reader := names.get(READ_KIND), str):
        request['read_tool_name'] = reader
    return tool, request


def limits_config(limits: ToolOutputLimits[Any]) -> dict[str, Any]:
    """`limits` as Overspill's limits configuration (the JSON `overspill worker --limits` takes),
    in the text of the installed harness release."""
    if limits.tokenizer is not None:
        raise ValueError('at the source, over_tokens counts with the default estimate: a custom tokenizer is Python')
    config: dict[str, Any] = {
        'harness': installed_harness(),
        'bands': _bands(limits.bands),
        'per_tool': {name: _bands(bands) for name, bands in limits.per_tool.items()},
        'tool_filter': _tool_filter(limits.tool_filter),
        'over_tokens': limits.over_tokens,
        'strip_ansi': limits.strip_ansi,
        'summary_prompt': limits.summary_prompt,
    }
    if limits.serializer is not None:
        config['serializer'] = _serializer(limits.serializer)
    return config


def _bands(bands: Sequence[Band]) -> list[dict[str, Any]]:
    return [{'over': band.over, 'action': _action(band.action)} for band in bands]


def _action(action: Any) -> dict[str, Any]:
    then = getattr(action, 'then', None)
    form: dict[str, Any]
    if isinstance(action, Passthrough):
        return {'type': 'passthrough'}
    if isinstance(action, Truncate):
        form = {
            'type': 'truncate',
            'strategy': getattr(action.strategy, 'value', action.strategy),
            'max_chars': action.max_chars,
            'keep_tail_lines': action.keep_tail_lines,
        }
    elif isinstance(action, Spill):
        form = {'type': 'spill', 'preview_chars': action.preview_chars}
    elif isinstance(action, Summarize):
        # Its model is the interceptor's: the agent's (a pydantic-ai model, or a `summarize`
        # callable) is Python, and without the interceptor's `model` the band is the workflow's.
        form = {'type': 'summarize'}
    else:
        raise ValueError(f'{type(action).__name__} is not an action Overspill knows')
    if then is not None:
        form['then'] = _action(then)
    return form


def _tool_filter(selector: Any) -> str | list[str]:
    if selector == 'all' or isinstance(selector, str):
        return str(selector)
    if isinstance(selector, Sequence) and all(isinstance(name, str) for name in selector):
        return list(selector)
    raise ValueError('at the source, tool_filter must be "all", a tool name or a list of names')


def _serializer(serializer: Any) -> str:
    for preset, name in ((indented_json, 'indented_json'), (json_lines, 'json_lines')):
        if serializer is preset:
            return name
    raise ValueError('at the source, serializer must be None, indented_json or json_lines')
