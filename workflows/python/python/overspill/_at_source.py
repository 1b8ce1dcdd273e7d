"""`OverspillInterceptor`: tool outputs reduced in the tool's own activity, before Temporal records them.

An agent on Temporal runs its loop in the workflow and each tool as an activity. Whatever an
activity returns is recorded in the workflow's history, travels to the workflow worker, and is
carried in every later model call's input; a hook in the workflow sees an output only after all
that. On the worker that runs the tools, this interceptor reduces each covered tool's output when
its activity completes, with the engine the Overspill worker runs: Truncate and Spill happen right
there (a spill is written under `{run}/{call}.{retry}`, the same key a retry or a replay derives
again, so it is an overwrite, never a second object), and only the reduced form is recorded. A
Summarize band runs there only with a `model`; without one the output goes on to the workflow
unchanged. A spill the store refuses falls back to its band's `then` with a WARNING on the logger
`overspill`.

Which activities are tool calls, and where their outputs are, is the framework's business:
`ToolActivities` says it (by name, suffix or predicate, with a codec, see `overspill._codecs`).

On the workflow's side (where the interceptor is also given to the worker that runs the
workflow) it notes which handles its spills gave this run, so that a read-back tool whose worker
answers "No stored tool result" for one of them ends the run: that worker keeps its spills in
another store (`OtherStoreError`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import typing
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from weakref import WeakKeyDictionary

from temporalio import activity, workflow
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    StartActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from overspill._caller import current_caller
from overspill._codecs import NO_ANNOTATION, UNTYPED, Codec, Reduced, ToolOutputParts
from overspill._compat.temporalio import activity_name
from overspill._markers import spill_header
from overspill._names import default_store_url
from overspill._native import Limits, Model, Store, reduce

if TYPE_CHECKING:
    from overspill._native import Reduction  # a TypedDict of the type stub only

_logger = logging.getLogger('overspill.interceptor')

DEFAULT_LIMITS: Mapping[str, Any] = {'serializer': 'json_lines'}
"""What the interceptor's limits say unless given otherwise: a structured output (a list of
records) is spilled one compact record per line, so `read_tool_result` and `grep_tool_result` page
it by record and `query_tool_result` still runs a jq filter on each; anything else as indented
JSON. (pydantic-ai's integration passes its `ToolOutputLimits`' own serializer, byte-compatible.)"""


@dataclass(frozen=True)
class ToolCallSite:
    """Which tool call an activity runs, and the parts of its spill key (`{run_id}/{tool_call_id}.{retry}`,
    or `{run_id}/{run_step}/{tool_call_id}.{retry}` where the limits' harness keys by run step a
    call id that an earlier step of the run spilled)."""

    tool_name: str
    run_id: str
    tool_call_id: str
    retry: int = 0
    run_step: int | None = None


class ToolSelection(Protocol):
    """Which activities are tool calls, and where their outputs are: `ToolActivities`, or an
    adapter's own (pydantic-ai keys its calls by its run context)."""

    def call_site(self, info: activity.Info, input: ExecuteActivityInput) -> ToolCallSite | None:
        """The tool call the activity runs, or `None` if it is not one this covers."""
        ...

    def outputs(self, result: Any) -> Sequence[ToolOutputParts]:
        """The tool outputs in the activity's result."""
        ...

    def with_outputs(self, result: Any, reduced: Sequence[Reduced | None]) -> Any:
        """The activity's result with the reduced outputs in place (`None`: left as it was)."""
        ...

    def covers(self, activity_type: str) -> bool:
        """Whether activities of this type are tool calls (the workflow side knows only the type)."""
        ...


@dataclass(frozen=True)
class ToolActivities:
    """The activities that run a framework's tools: selected by name, suffix or predicate of the
    activity type, their outputs found by `codec`, keyed by the tool call id the result carries,
    else by the workflow's run id and the activity's id (the same for every attempt and on replay).

    ```python
    ToolActivities.of([fetch])                           # activity functions, or their names
    ToolActivities(suffix='-call-tool', codec=MCP_RESULT) # every MCP server's call activity
    ToolActivities(predicate=lambda t: t.startswith('graph.'), codec=TOOL_MESSAGE)
    ```

    A result is reduced only where the workflow can decode the rebuilt one: `codec.fits` the
    activity's return annotation (`TEXT`: `str`, `dict` or `Any`).
    """

    names: Mapping[str, str] = field(default_factory=dict)
    """Activity type -> the tool name the model sees."""

    suffix: str | None = None
    """Also every activity whose type ends so (its tool: the type without the suffix)."""

    predicate: Callable[[str], bool] | None = None
    """Also every activity whose type this accepts (its tool: the type)."""

    codec: Codec = UNTYPED
    """Where the outputs are in the result (see `overspill._codecs`)."""

    tool_from_args: Callable[[Sequence[Any]], str | None] | None = None
    """The tool's name as the activity's arguments say it, where one activity runs several tools
    (an MCP server's `-call-tool`); the name above where it says none."""

    call_ids: bool = True
    """Key each spill by the tool call id the result carries, where it has one (the handle then
    names the framework's call); `False`: always by the activity. A model-chosen id that repeats
    within a run would make a later spill overwrite an earlier one's object: choose `False` where
    the ids are the model's and may repeat (a workflow's own ids, as Deep Agents' and ADK's, do not)."""

    @classmethod
    def of(
        cls, tools: Sequence[Callable[..., Any] | str], *, codec: Codec = UNTYPED, named_by: str = 'function'
    ) -> ToolActivities:
        """The activities `tools` (`@activity.defn` functions, or activity names), each tool named
        as the model sees it: after the function (`named_by='function'`: the OpenAI Agents SDK's and
        Google ADK's `activity_as_tool`) or after the activity (`'activity'`: Strands')."""
        if named_by not in ('function', 'activity'):
            raise ValueError(f"named_by is 'function' or 'activity', not {named_by!r}")
        names: dict[str, str] = {}
        for tool in tools:
            if isinstance(tool, str):
                names[tool] = tool
                continue
            name = activity_name(tool)
            if name is None:
                raise ValueError(f'{tool!r} is not an activity: decorate it with @activity.defn')
            names[name] = getattr(tool, '__name__', name) if named_by == 'function' else name
        return cls(names=names, codec=codec)

    def covers(self, activity_type: str) -> bool:
        """Whether activities of this type are tool calls."""
        return self._tool_name(activity_type) is not None

    def call_site(self, info: activity.Info, input: ExecuteActivityInput) -> ToolCallSite | None:
        """The tool call of a covered activity of a workflow whose result the codec can rebuild."""
        tool_name = self._tool_name(info.activity_type)
        if tool_name is None or not info.workflow_run_id or not self.codec.fits(return_annotation(input.fn)):
            return None
        named = self.tool_from_args(input.args) if self.tool_from_args is not None else None
        tool_name = named if isinstance(named, str) and named else tool_name
        return ToolCallSite(tool_name=tool_name, run_id=info.workflow_run_id, tool_call_id=info.activity_id)

    def outputs(self, result: Any) -> Sequence[ToolOutputParts]:
        """The codec's outputs (without their call ids unless `call_ids`)."""
        outputs = self.codec.outputs(result)
        return outputs if self.call_ids else [dataclasses.replace(o, call_id=None) for o in outputs]

    def with_outputs(self, result: Any, reduced: Sequence[Reduced | None]) -> Any:
        """The codec's rebuilt result."""
        return self.codec.rebuild(result, reduced)

    def _tool_name(self, activity_type: str) -> str | None:
        if activity_type in self.names:
            return self.names[activity_type]
        if self.suffix and activity_type.endswith(self.suffix):
            return activity_type.removesuffix(self.suffix)
        if self.predicate is not None and self.predicate(activity_type):
            return activity_type
        return None


_annotations: dict[Callable[..., Any], Any] = {}


def return_annotation(fn: Callable[..., Any] | None) -> Any:
    """`fn`'s resolved return annotation, or `NO_ANNOTATION` (none, or one that does not resolve)."""
    if fn is None:
        return NO_ANNOTATION
    try:
        return _annotations[fn]
    except (KeyError, TypeError):
        pass
    try:
        annotation = typing.get_type_hints(fn).get('return', NO_ANNOTATION)
    except Exception:  # a forward reference that does not resolve: nothing is known
        annotation = NO_ANNOTATION
    with suppress(TypeError):
        _annotations[fn] = annotation
    return annotation


class OverspillInterceptor(Interceptor):
    """Reduce the tool outputs of the activities `tools` cover, in the activity, under `limits`.

    ```python
    worker = Worker(client, task_queue='agent', workflows=[MyAgent], activities=[fetch],
                    interceptors=[OverspillInterceptor([fetch])])
    ```

    `tools`: activity functions (or names) whose result is a plain value the workflow decodes
    without a type, as the OpenAI Agents SDK's `activity_as_tool` calls them, each tool named after
    its function; or `ToolActivities` selections with the framework's codec. `limits`: a `Limits`
    (taken as it is), or its JSON (a string, or a mapping) as `overspill worker --limits` takes it,
    over `DEFAULT_LIMITS`; by default outputs over 10,000 chars are spilled with a 1,000-char
    preview. `store`: a `Store` or its URL (default `OVERSPILL_STORE`, else the store every
    Overspill command shares). `model`, if any, writes the summaries of Summarize bands.
    """

    def __init__(
        self,
        tools: Sequence[ToolSelection | Callable[..., Any] | str],
        limits: Limits | str | Mapping[str, Any] | None = None,
        store: Store | str | None = None,
        *,
        model: Model | None = None,
    ) -> None:
        plain = [t for t in tools if isinstance(t, str) or callable(t) and not _is_selection(t)]
        selections = [t for t in tools if _is_selection(t)]
        self.tools: tuple[ToolSelection, ...] = (*((ToolActivities.of(plain),) if plain else ()), *selections)  # type: ignore[arg-type]
        self.limits = limits if isinstance(limits, Limits) else Limits(limits_json(limits))
        self.store = store if isinstance(store, Store) else Store(store or default_store_url())
        self.model = model

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Wrap each activity's execution."""
        return _ReduceOutputs(next, self)

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        """Note, in each workflow, the handles this interceptor's spills gave its tool activities."""
        tools, store = self.tools, self.store.url

        class NoteSpills(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                super().init(_NoteSpills(outbound, tools, store))

        return NoteSpills

    async def reduce(self, tools: ToolSelection, site: ToolCallSite, result: Any) -> Any:
        """`result` with its tool outputs reduced, or as it is when there is nothing to reduce here."""
        outputs = tools.outputs(result)
        reduced = [await self._reduce(site, parts, i, len(outputs)) for i, parts in enumerate(outputs)]
        return result if all(r is None for r in reduced) else tools.with_outputs(result, reduced)

    async def _reduce(self, site: ToolCallSite, parts: ToolOutputParts, index: int, count: int) -> Reduced | None:
        """One output reduced, or `None` when the engine leaves it (or cannot carry it)."""
        call_id = parts.call_id or (site.tool_call_id if count == 1 else f'{site.tool_call_id}-{index}')
        try:
            reduced = await engine_reduce(
                self, parts, tool_name=parts.tool_name or site.tool_name, run_id=site.run_id,
                tool_call_id=call_id, retry=site.retry if parts.call_id is None else 0,
                run_step=site.run_step,
            )
        except (TypeError, ValueError) as error:
            # A value, content or metadata that is not JSON: the workflow's serializer knows its
            # Python type, and renders it as the framework would.
            _logger.debug('leaving the output of tool %r to the workflow: %s', site.tool_name, error)
            return None
        return None if reduced is None else _reduced(parts, reduced)


async def engine_reduce(
    interceptor: OverspillInterceptor,
    parts: ToolOutputParts,
    *,
    tool_name: str,
    run_id: str,
    tool_call_id: str,
    retry: int,
    run_step: int | None = None,
) -> Reduction | None:
    """The engine's reduction of one output (`None`: nothing to do), as the calling activity's
    workflow writes it: the one call across the native boundary, where the value crosses as it is
    (a `str` or `bytes`, or a JSON value; anything else is a `TypeError`)."""
    return await reduce(
        interceptor.limits,
        interceptor.store,
        tool_name=tool_name,
        output=parts.value,
        run_id=run_id,
        tool_call_id=tool_call_id,
        retry=retry,
        run_step=run_step,
        content=parts.content,
        metadata=parts.metadata,
        envelope=parts.envelope,
        caller=current_caller(),
        model=interceptor.model,
    )


def _is_selection(tool: Any) -> bool:
    return all(hasattr(tool, m) for m in ('call_site', 'outputs', 'with_outputs', 'covers'))


def limits_json(limits: str | Mapping[str, Any] | None) -> str:
    """The limits configuration `limits` says, over `DEFAULT_LIMITS` (a JSON text that is not an
    object goes to the engine as it is, which says what is wrong)."""
    if limits is None:
        return json.dumps(DEFAULT_LIMITS)
    if isinstance(limits, str):
        try:
            parsed = json.loads(limits)
        except ValueError:
            return limits
        if not isinstance(parsed, dict):
            return limits
        limits = parsed
    return json.dumps({**DEFAULT_LIMITS, **limits})


class _ReduceOutputs(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, root: OverspillInterceptor) -> None:
        super().__init__(next)
        self._root = root

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        result = await super().execute_activity(input)
        info = activity.info()
        for tools in self._root.tools:
            site = tools.call_site(info, input)
            if site is not None:
                async with heartbeating(info):
                    return await self._root.reduce(tools, site, result)
        return result


@asynccontextmanager
async def heartbeating(info: activity.Info) -> AsyncIterator[None]:
    """Heartbeat at half the activity's heartbeat timeout while the body runs: a spill of a large
    output can take longer than the timeout the tool's own heartbeats were sized for."""
    if info.heartbeat_timeout is None:
        yield
        return
    interval = info.heartbeat_timeout.total_seconds() / 2

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(interval)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


def _reduced(parts: ToolOutputParts, reduced: Reduction) -> Reduced:
    """The engine's reduced result, with the original objects where it left them."""
    value, content = reduced['return_value'], reduced['content']
    return Reduced(
        value=parts.value if value is None else value,
        content=parts.content if content is None else content,
        metadata=reduced['metadata'],
        envelope=reduced['envelope'],
        kind=reduced['kind'],
    )


# --- the workflow's side: which handles this run's at-source spills gave -------------------------

_spilled_at_source: WeakKeyDictionary[Any, dict[str, str]] = WeakKeyDictionary()
"""Per workflow instance: each handle an at-source spill gave one of its tool activities, and the
store it was written to. Rebuilt from the recorded results on replay."""


def at_source_store(handle: str) -> str | None:
    """The store the interceptor wrote `handle` to for one of this workflow's tool activities, if it did."""
    if not workflow.in_workflow():
        return None
    return _spilled_at_source.get(workflow.instance(), {}).get(handle)


def at_source_stores() -> set[str]:
    """The stores the interceptor wrote this workflow's at-source spills to (empty outside a workflow)."""
    if not workflow.in_workflow():
        return set()
    return set(_spilled_at_source.get(workflow.instance(), {}).values())


class _NoteSpills(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, tools: Sequence[ToolSelection], store: str) -> None:
        super().__init__(next)
        self._tools = tools
        self._store = store

    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        handle = super().start_activity(input)
        if any(tools.covers(input.activity) for tools in self._tools):
            noted = _spilled_at_source.setdefault(workflow.instance(), {})
            handle.add_done_callback(lambda done: _note(done, noted, self._store))
        return handle


def _note(done: asyncio.Future[Any], noted: dict[str, str], store: str) -> None:
    """Note the handles of the spill markers in a completed tool activity's result."""
    if done.cancelled() or done.exception() is not None:
        return
    budget = [10_000]  # nodes looked at: a result the interceptor left may be large

    def visit(value: Any, depth: int) -> None:
        budget[0] -= 1
        if budget[0] < 0 or depth > 8:
            return
        if isinstance(value, str):
            header = spill_header(value)
            if header is not None and header[0] is not None:
                noted[header[0]] = store
        elif isinstance(value, Mapping):
            for item in value.values():
                visit(item, depth + 1)
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item, depth + 1)
        elif hasattr(value, '__dict__') and not isinstance(value, type):
            for item in vars(value).values():
                visit(item, depth + 1)

    visit(done.result(), 0)
