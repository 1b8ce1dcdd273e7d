"""The read-back tools, `read_tool_result`, `grep_tool_result`, `query_tool_result` and
`list_tool_results`, for every framework: one table, the engine's (`overspill._native.read_back_tools()`:
the names, the Overspill activity of each, the model-visible descriptions, the parameters with
the engine's own bounds), rendered here into what a framework needs.

Each tool runs in workflow code and executes the Overspill worker's activity of its name on the
worker's task queue: the worker reads the spill from its store, and only the page it returns (at
most 50,000 chars) enters the history, where a replay takes it from. The model sees the worker's
text, byte for byte. What a call can end in, for an adapter to render in its framework's form:

- the page (a `str`);
- `ModelRetry`: the worker refused the model's arguments; the message says what to change;
- the run ends (`NoWorkerError`, `OtherStoreError`), or with `on_unavailable='fallback'` the page
  is `unavailable_text(tool)`: no worker polls the queue, or the worker keeps its spills in another
  store than this run's at-source spills went to (it answers "No stored tool result" for a handle
  the interceptor gave this run);
- any other failure of the activity (a store that cannot be read), which ends the run.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from temporalio import workflow

from overspill._activity import ModelRetry, OtherStoreError, OverspillWorker, UnavailableError, unavailable_text
from overspill._at_source import at_source_store
from overspill._caller import current_caller
from overspill._native import ArgumentError, Store, read_back_tools

_NO_STORED_RESULT = '[No stored tool result for handle '
"""How the engine's answer for a handle its store does not have begins (`read::no_stored_result`)."""


@dataclass(frozen=True)
class ReadBackTool:
    """One read-back tool, as the engine describes it."""

    name: str
    """The tool's name as the model calls it (no dots: every provider accepts it)."""

    activity: str
    """The Overspill activity that serves it (`tool_output_limits.<name>`)."""

    description: str
    """What the model reads about the tool."""

    parameters: Mapping[str, Any]
    """Its arguments: a JSON Schema object, each property with its type, description, default and
    the engine's bounds. `list_tool_results` takes no handle: its run comes from the framework."""

    @property
    def lists(self) -> bool:
        """Whether this is `list_tool_results`, whose request names the run rather than a handle."""
        return 'handle' not in self.parameters.get('properties', {})

    def strict_parameters(self) -> dict[str, Any]:
        """The parameters for a strict schema mode (the OpenAI Agents SDK's default): every property
        required, each optional one also accepting `null`, which stands for its default."""
        schema = copy.deepcopy(dict(self.parameters))
        required = set(schema.get('required', ()))
        for name, prop in schema['properties'].items():
            if name not in required and 'null' not in _types(prop):
                prop['type'] = [*_types(prop), 'null']
                if 'enum' in prop:
                    prop['enum'] = [*prop['enum'], None]
        schema['required'] = list(schema['properties'])
        return schema

    def request(
        self, arguments: Mapping[str, Any], *, run_id: str | None = None, tool_names: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """The activity's request for the model's `arguments` (a `null` one is its default); for
        `list_tool_results` also the run whose spills to list and, where the spills carry no tool
        name, the tool of each call id."""
        request = {k: v for k, v in arguments.items() if v is not None}
        if self.lists:
            request['run_id'] = run_id or 'run'
            request['tool_names'] = dict(tool_names or {})
        return request

    async def __call__(
        self,
        arguments: Mapping[str, Any],
        *,
        worker: OverspillWorker | None = None,
        store: Store | None = None,
        run_id: str | None = None,
        tool_names: Mapping[str, str] | None = None,
    ) -> str:
        """The page for the model's `arguments`: in workflow code, from `worker`'s activity (default
        `OverspillWorker()`; `run_id` default the workflow's run id, the run segment of at-source
        handles); outside a workflow, from `store` in this process. See the module for what it
        raises."""
        if not workflow.in_workflow():
            if store is None:
                raise RuntimeError(f'{self.name} runs in a Temporal workflow, or outside one with a store')
            return await self._page(store, self.request(arguments, run_id=run_id, tool_names=tool_names))
        worker = worker or OverspillWorker()
        request = self.request(arguments, run_id=run_id or workflow.info().run_id, tool_names=tool_names)
        try:
            page = await worker.run(self.activity, request, f'{self.name} {request.get("handle") or request.get("run_id")}')
            if not isinstance(page, str):
                raise TypeError(f'{self.activity} returned {type(page).__name__}, not the page text')
            self._check_store(page, request.get('handle'), worker)
        except UnavailableError as error:
            if error.ends_run:
                raise
            workflow.logger.warning('%s is unavailable in this run: %s', self.name, error.message)
            return unavailable_text(self.name)
        return page

    def _check_store(self, page: str, handle: Any, worker: OverspillWorker) -> None:
        """`OtherStoreError` when the worker has no spill the at-source interceptor gave this run."""
        if not page.startswith(_NO_STORED_RESULT) or not isinstance(handle, str):
            return
        store = at_source_store(handle)
        if store is not None:
            raise worker.unavailable(
                OtherStoreError(
                    f'The Overspill worker on task queue {worker.task_queue!r} has no spill {handle!r}, which '
                    f'OverspillInterceptor stored in {store} for this run: the worker keeps its spills in another '
                    'store, where read_tool_result finds none of them. Give both the same store (OVERSPILL_STORE).'
                )
            )

    async def _page(self, store: Store, request: dict[str, Any]) -> str:
        """The engine's page in this process, as the calling activity's workflow may see the spill."""
        page = getattr(store, self.name)
        try:
            text: str = await page(request, caller=current_caller())
        except ArgumentError as error:
            raise ModelRetry(str(error)) from None
        return text


def _types(prop: Mapping[str, Any]) -> list[Any]:
    kind = prop.get('type', [])
    return list(kind) if isinstance(kind, list) else [kind]


READ_BACK_TOOLS: tuple[ReadBackTool, ...] = tuple(ReadBackTool(**spec) for spec in read_back_tools())
"""The four read-back tools, in the engine's order: read, grep, query, list."""

TOOLS: Mapping[str, ReadBackTool] = {tool.name: tool for tool in READ_BACK_TOOLS}
"""The read-back tools by name."""

READ_ACTIVITY = TOOLS['read_tool_result'].activity
"""The Overspill activity that pages a spill."""

GREP_ACTIVITY = TOOLS['grep_tool_result'].activity
"""The Overspill activity that searches a spill."""

QUERY_ACTIVITY = TOOLS['query_tool_result'].activity
"""The Overspill activity that runs a jq filter over a spill."""

LIST_ACTIVITY = TOOLS['list_tool_results'].activity
"""The Overspill activity that lists a run's spills."""
