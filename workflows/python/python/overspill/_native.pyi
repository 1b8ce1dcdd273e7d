"""Overspill's engine (Rust), as the worker runs it. See `overspill` for the overview."""

from collections.abc import Awaitable
from typing import Any, TypedDict

Caller = tuple[str, str | None] | None

class StoreError(Exception):
    """A spill store failed: it is down, slow, refuses the credentials, or is misconfigured."""

    kind: str
    retryable: bool

class ArgumentError(ValueError):
    """A read-back tool's argument is wrong: the message tells the model what to change."""

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
    output: str | bytes,
    structured: bool = False,
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
) -> Awaitable[dict[str, Any] | None]: ...
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
def serve_query_sandbox() -> None: ...
