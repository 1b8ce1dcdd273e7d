"""Codecs: where a tool activity's result carries its tool outputs, and how reduced ones go back.

The at-source interceptor reduces each output a codec finds, and the codec rebuilds the result
with the reduced outputs in place, keeping its envelope (the fields the framework reads besides the
text: ids, status, context). A codec also says whether the workflow can decode the rebuilt result
where the activity's return annotation is what it is (`fits`): the workflow side decodes an
activity's result into that annotation when it calls the activity function (rather than its name).

- `TEXT`: a plain value (text, or any JSON value) the workflow decodes into the return annotation
  (Google ADK's and Deep Agents' `activity_as_tool`): only where that annotation is `str`, `dict`
  or `Any` (or absent); a `dict` result comes back as `{'result': text}`, the form ADK gives a
  text result.
- `UNTYPED`: a plain value the workflow decodes without a type (the OpenAI Agents SDK's and
  Strands' `activity_as_tool` call the activity by name): any result, which comes back as text.
- `TOOL_MESSAGE`: LangChain `ToolMessage`s, live (LangGraph: anywhere in a node's update) or as
  `dumpd` dicts (Deep Agents' `deepagents.invoke_tool`), each with its `tool_call_id`.
- `MCP_RESULT`: an MCP `CallToolResult` as a dict, alone or in Google ADK's `_CallToolResult`
  (its `tool_context.function_call_id` the call id).
- `STRANDS_RESULT`: a Strands `ToolResult` dict (MCP `{server}-call-tool`), its `toolUseId` the call id.

An output the engine leaves as it is comes back as `None` in `rebuild`; an error result carries no
output (errors are feedback for the model, not data).
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Any, Protocol

from temporalio import activity
from temporalio.converter import default as default_converter


@dataclass(frozen=True)
class ToolOutputParts:
    """A tool's output as the engine reduces it: the value, and a ToolReturn envelope's text
    `content` and `metadata` (`envelope`: there is an envelope at all; pydantic-ai's only); the
    tool call id and tool name when the result says them."""

    value: Any
    content: Any = None
    metadata: Any = None
    envelope: bool = False
    call_id: str | None = None
    tool_name: str | None = None


@dataclass(frozen=True)
class Reduced:
    """What the engine made of a tool's output: the value and content the model sees (each the
    original object where it was left as it was), the metadata, and whether it is an envelope."""

    value: Any
    content: Any
    metadata: Any
    envelope: bool
    kind: str
    """What happened to the value: `truncated`, `spilled`, `summarized` or `passthrough`."""

    @property
    def text(self) -> str:
        """The value as the model reads it: text as itself, anything else as compact JSON."""
        if isinstance(self.value, str):
            return self.value
        return json.dumps(self.value, ensure_ascii=False, separators=(',', ':'))


NO_ANNOTATION: Any = object()
"""The return annotation of an activity function that has none (or whose annotation does not resolve)."""


class Codec(Protocol):
    """How one kind of activity result carries tool outputs."""

    def fits(self, annotation: Any) -> bool:
        """Whether the workflow decodes a rebuilt result where the activity's return annotation is
        `annotation` (`NO_ANNOTATION` for none)."""
        ...

    def outputs(self, result: Any) -> Sequence[ToolOutputParts]:
        """The tool outputs in `result`, in a fixed order (none for an error result)."""
        ...

    def rebuild(self, result: Any, reduced: Sequence[Reduced | None]) -> Any:
        """`result` with each output (in `outputs`' order) replaced by its reduced form (`None`: as it was)."""
        ...


@dataclass(frozen=True)
class TextCodec:
    """A plain value: text as itself, any other value as the JSON the workflow would decode (so
    the spill is the JSON `query_tool_result` reads)."""

    typed: bool = True
    """The workflow decodes the result into the activity's return annotation (`False`: without a type)."""

    def fits(self, annotation: Any) -> bool:
        """Untyped: always; typed: a `str`, `dict` or `Any` annotation (or none, or `X | None` of one)."""
        if not self.typed or annotation in (NO_ANNOTATION, Any, str, dict):
            return True
        if typing.get_origin(annotation) is dict:
            return True
        members = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, UnionType) else ()
        return bool(members) and all(m is type(None) or self.fits(m) for m in members)

    def outputs(self, result: Any) -> Sequence[ToolOutputParts]:
        """The one output: the result, as the workflow will decode it."""
        if isinstance(result, (str, bytes)):
            return [ToolOutputParts(result)]
        # The activity's converter (the framework's plugin may install its own); the default outside one.
        converter = activity.payload_converter() if activity.in_activity() else default_converter().payload_converter
        return [ToolOutputParts(converter.from_payloads(converter.to_payloads([result]))[0])]

    def rebuild(self, result: Any, reduced: Sequence[Reduced | None]) -> Any:
        """The reduced text (`{'result': text}` in place of a typed `dict` result)."""
        (new,) = reduced
        if new is None:
            return result
        if self.typed and isinstance(result, Mapping):
            return {'result': new.text}
        return new.text


_MAX_DEPTH = 8
"""How deep a codec looks for outputs inside a result (a node's update, a Command, a list)."""


def _walk(value: Any, leaf: Callable[[Any], tuple[bool, Any]], depth: int = 0) -> Any:
    """`value` rebuilt bottom-up through `leaf`, which says whether a node is an output (and its
    new form); containers (dicts, lists, tuples, dataclasses) are copied only where a part changed."""
    is_leaf, new = leaf(value)
    if is_leaf or depth >= _MAX_DEPTH:
        return new if is_leaf else value
    if isinstance(value, dict):
        items = {k: _walk(v, leaf, depth + 1) for k, v in value.items()}
        return items if any(items[k] is not value[k] for k in value) else value
    if isinstance(value, (list, tuple)):
        parts = [_walk(v, leaf, depth + 1) for v in value]
        if all(p is v for p, v in zip(parts, value)):
            return value
        if isinstance(value, list) or type(value) is tuple:
            return type(value)(parts)
        return type(value)(*parts)  # a named tuple
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            old = getattr(value, f.name)
            new_field = _walk(old, leaf, depth + 1)
            if new_field is not old:
                changes[f.name] = new_field
        return dataclasses.replace(value, **changes) if changes else value
    return value


def _texts(content: Any) -> str | None:
    """A message content as one text: a string, or a list of only text blocks (joined); `None` otherwise."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    texts = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, Mapping) and block.get('type') == 'text' and isinstance(block.get('text'), str):
            texts.append(block['text'])
        else:
            return None
    return ''.join(texts)


class ToolMessageCodec:
    """LangChain `ToolMessage`s anywhere in a result: live (`message.type == 'tool'`, rebuilt with
    `model_copy`) or `dumpd` dicts (`{'lc': 1, 'type': 'constructor', 'id': [..., 'ToolMessage'],
    'kwargs': {...}}`, rebuilt as a new dict). Each output is the message's `content` (a string,
    or only text blocks), its call id the message's `tool_call_id`, its tool the message's `name`;
    error messages (`status == 'error'`) are left."""

    def fits(self, annotation: Any) -> bool:
        """The envelope is kept: any annotation."""
        return True

    def outputs(self, result: Any) -> Sequence[ToolOutputParts]:
        """Every successful text ToolMessage, in document order."""
        found: list[ToolOutputParts] = []

        def leaf(node: Any) -> tuple[bool, Any]:
            fields = self._fields(node)
            if fields is None:
                return False, node
            text = _texts(fields.get('content'))
            if text is not None and fields.get('status', 'success') != 'error':
                found.append(ToolOutputParts(text, call_id=_str(fields.get('tool_call_id')), tool_name=_str(fields.get('name'))))
            return True, node

        _walk(result, leaf)
        return found

    def rebuild(self, result: Any, reduced: Sequence[Reduced | None]) -> Any:
        """The result with each reduced message's content replaced by the reduced text."""
        pending = iter(reduced)

        def leaf(node: Any) -> tuple[bool, Any]:
            fields = self._fields(node)
            if fields is None:
                return False, node
            if _texts(fields.get('content')) is None or fields.get('status', 'success') == 'error':
                return True, node
            new = next(pending, None)
            if new is None:
                return True, node
            if isinstance(node, Mapping):
                return True, {**node, 'kwargs': {**node['kwargs'], 'content': new.text}}
            return True, node.model_copy(update={'content': new.text})

        return _walk(result, leaf)

    @staticmethod
    def _fields(node: Any) -> Mapping[str, Any] | None:
        """A ToolMessage's fields (live or dumped), or `None` if `node` is not one."""
        if isinstance(node, Mapping):
            ids, kwargs = node.get('id'), node.get('kwargs')
            if node.get('lc') == 1 and isinstance(ids, list) and ids[-1:] == ['ToolMessage'] and isinstance(kwargs, Mapping):
                return kwargs
            return None
        if getattr(node, 'type', None) == 'tool' and hasattr(node, 'tool_call_id') and hasattr(node, 'model_copy'):
            return {k: getattr(node, k, None) for k in ('content', 'status', 'tool_call_id', 'name')}
        return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _mcp_text(result: Any) -> str | None:
    """An MCP `CallToolResult` dict's text (its text blocks, one per line), or `None` when it is an
    error or carries anything else."""
    if not isinstance(result, Mapping) or result.get('isError') or not isinstance(content := result.get('content'), list):
        return None
    texts = []
    for block in content:
        if not isinstance(block, Mapping) or block.get('type') != 'text' or not isinstance(block.get('text'), str):
            return None
        texts.append(block['text'])
    return '\n'.join(texts) if texts else None


class McpResultCodec:
    """An MCP `CallToolResult` as a dict (`{'content': [{'type': 'text', 'text': …}], 'isError': …}`),
    alone or as the `result` of Google ADK's `_CallToolResult(result, tool_context)` (its
    `tool_context.function_call_id` the call id). Only text results are reduced; the rebuilt result
    has one text block and no `structuredContent` (which would carry the data again)."""

    def fits(self, annotation: Any) -> bool:
        """The envelope is kept: any annotation."""
        return True

    def outputs(self, result: Any) -> Sequence[ToolOutputParts]:
        """The one text output, if any."""
        inner = getattr(result, 'result', result)
        text = _mcp_text(inner)
        if text is None:
            return []
        context = getattr(result, 'tool_context', None)
        return [ToolOutputParts(text, call_id=_str(getattr(context, 'function_call_id', None)))]

    def rebuild(self, result: Any, reduced: Sequence[Reduced | None]) -> Any:
        """The result carrying the reduced text."""
        (new,) = reduced
        if new is None:
            return result
        inner = getattr(result, 'result', result)
        rebuilt = {k: v for k, v in inner.items() if k != 'structuredContent'}
        rebuilt['content'] = [{'type': 'text', 'text': new.text}]
        if dataclasses.is_dataclass(result) and not isinstance(result, type):
            return dataclasses.replace(result, result=rebuilt)
        return rebuilt


class StrandsResultCodec:
    """A Strands `ToolResult` dict (`{'toolUseId', 'status', 'content': [{'text': …} | {'json': …}]}`),
    as Strands' MCP `{server}-call-tool` returns it. A successful result's text blocks (one per
    line) or single JSON block are reduced; the rebuilt result has one text block and no
    `structuredContent`."""

    def fits(self, annotation: Any) -> bool:
        """The envelope is kept: any annotation."""
        return True

    def outputs(self, result: Any) -> Sequence[ToolOutputParts]:
        """The one output, if the result is a successful one of text or one JSON block."""
        if not isinstance(result, Mapping) or result.get('status') != 'success':
            return []
        content = result.get('content')
        if not isinstance(content, list) or not content or not all(isinstance(b, Mapping) for b in content):
            return []
        call_id = _str(result.get('toolUseId'))
        if len(content) == 1 and set(content[0]) == {'json'}:
            return [ToolOutputParts(content[0]['json'], call_id=call_id)]
        if not all(set(b) == {'text'} and isinstance(b['text'], str) for b in content):
            return []
        return [ToolOutputParts('\n'.join(b['text'] for b in content), call_id=call_id)]

    def rebuild(self, result: Any, reduced: Sequence[Reduced | None]) -> Any:
        """The result carrying the reduced text."""
        (new,) = reduced
        if new is None:
            return result
        rebuilt = {k: v for k, v in result.items() if k != 'structuredContent'}
        rebuilt['content'] = [{'text': new.text}]
        return rebuilt


TEXT: Codec = TextCodec()
UNTYPED: Codec = TextCodec(typed=False)
TOOL_MESSAGE: Codec = ToolMessageCodec()
MCP_RESULT: Codec = McpResultCodec()
STRANDS_RESULT: Codec = StrandsResultCodec()
