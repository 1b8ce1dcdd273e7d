"""Overspill's engine (Rust), as the worker runs it. See `overspill` for the overview."""

from collections.abc import Awaitable
from typing import Any, Literal, TypedDict

Caller = tuple[str, str | None] | None

JsonValue = None | bool | int | float | str | list['JsonValue'] | dict[str, 'JsonValue']
"""A JSON value as Python holds it: what `reduce` takes besides `str` and `bytes`."""

ReductionKind = Literal['passthrough', 'truncated', 'spilled', 'summarized']
"""What happened to one part of a tool return."""

class Usage(TypedDict):
    """What a reduction's model calls cost."""

    requests: int
    input_tokens: int
    output_tokens: int

class Reduction(TypedDict):
    """What `reduce` made of a tool return: the reduce activity's reply, without the return itself."""

    kind: ReductionKind
    """What happened to the return value."""
    content_kind: ReductionKind
    """What happened to the envelope's text content."""
    return_value: str | None
    """The text the model sees instead of the return value; `None` when it is left as it was."""
    content: str | None
    """The envelope's content as reduced; `None` when it is left as it was."""
    metadata: Any
    """The envelope's metadata, with `overflow_handle` / `overflow_bytes` / `overflow_content_handle` after a spill."""
    envelope: bool
    """Whether the result is a ToolReturn envelope (a bare value that spilled becomes one)."""
    usage: Usage
    store: str | None
    """The store a spill went to (its URL, as the worker shows it)."""

class StoreError(Exception):
    """A spill store or the query sandbox failed: `kind` says how, `retryable` whether the same call may succeed later."""

    kind: str
    """The failure's kind, as the worker's activities name it (`StoreUnavailable`, `StoreMisconfigured`,
    `QuerySandboxFailed`, `QuerySandboxUnbounded`, …)."""
    retryable: bool

class ArgumentError(ValueError):
    """An argument is wrong: a read-back tool's (the message tells the model what to change), or a call's (the message names the keyword)."""

class ConfigError(ValueError):
    """A limits configuration the engine refuses (the message names the field)."""

class Store:
    """A spill store by URL, written and read exactly as the worker writes and reads it."""

    def __init__(
        self, url: str | None = None, *, read_scope: str = 'workflow', query_sandbox: str | None = None
    ) -> None: ...
    @property
    def url(self) -> str: ...
    @property
    def read_scope(self) -> str: ...
    @property
    def query_sandbox(self) -> str | None: ...
    def check(self) -> Awaitable[None]: ...
    def write(
        self, key: str, data: bytes, *, tool_name: str | None = None, caller: Caller = None
    ) -> Awaitable[str]: ...
    def read(self, handle: str, *, caller: Caller = None) -> Awaitable[bytes]: ...
    def read_tool_result(self, request: dict[str, Any], *, caller: Caller = None) -> Awaitable[str]: ...
    def grep_tool_result(self, request: dict[str, Any], *, caller: Caller = None) -> Awaitable[str]: ...
    def query_tool_result(self, request: dict[str, Any], *, caller: Caller = None) -> Awaitable[str]: ...
    def list_tool_results(self, request: dict[str, Any], *, caller: Caller = None) -> Awaitable[str]: ...

class Limits:
    """Size bands and their actions: the JSON `overspill worker --limits` takes."""

    def __init__(self, config: str | None = None) -> None: ...

class Model:
    """An OpenAI-compatible chat-completions endpoint that writes summaries."""

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        context_tokens: int = 128000,
    ) -> None: ...

def reduce(
    limits: Limits,
    store: Store,
    *,
    tool_name: str,
    output: str | bytes | JsonValue,
    run_id: str | None = None,
    tool_call_id: str | None = None,
    retry: int = 0,
    run_step: int | None = None,
    tool_kind: str | None = None,
    content: Any = None,
    metadata: Any = None,
    envelope: bool = False,
    caller: Caller = None,
    model: Model | None = None,
) -> Awaitable[Reduction | None]: ...
def sanitize_key(key: str) -> str: ...

class ToolSpec(TypedDict):
    """A read-back tool as a model sees it."""

    name: str
    """The tool's name as the model calls it."""
    activity: str
    """The Overspill activity that serves it (`tool_output_limits.<name>`)."""
    description: str
    """What the model reads about the tool."""
    parameters: dict[str, Any]
    """Its arguments, a JSON Schema object (each property with its type, description, default and bounds)."""

def read_back_tools() -> list[ToolSpec]: ...
def harness_release(version: str) -> str: ...
