"""Overspill's key scheme: store URLs, handle checks and object keys (as `src/store/` does it).

A handle is the harness's spill key, unsanitized (`{run_id}/{tool_call_id}.{retry}[.content]`),
exactly as pydantic-ai-harness's `LocalFileStore` returns it. Its object lives at
`{prefix}/tool_output_limits/{sanitized segments}` in the bucket, where segments are sanitized
like the harness's `_safe_segment`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import parse_qsl, unquote, urlsplit

NAMESPACE = 'tool_output_limits'
"""The folder every spill lives under, inside the store URL's own prefix."""

INDEX_SUFFIX = '.idx'
"""The suffix of the line index Overspill writes beside each spill (never a spill itself)."""

_UNSAFE = re.compile(r'[^A-Za-z0-9._-]+')
_PERCENT_ESCAPE = re.compile(r'%[0-9A-Fa-f]{2}')


def default_store_url() -> str:
    """The store every Overspill command uses without `--store`: `OVERSPILL_STORE`, else
    `file://$TMPDIR/overspill-<euid>` (`/tmp` without `TMPDIR`), as `overspill dev` and the worker."""
    tmp = os.environ.get('TMPDIR') or '/tmp'
    return os.environ.get('OVERSPILL_STORE') or PurePosixPath(tmp, f'overspill-{os.geteuid()}').as_uri()


@dataclass(frozen=True)
class StoreLocation:
    """Where a store URL keeps spills: a bucket and prefix (`s3://`), or a directory (`file://`)."""

    bucket: str
    prefix: str
    endpoint_url: str | None = None
    region: str | None = None
    root: str | None = None
    """The directory of a `file://` store (then `bucket` and `prefix` are empty)."""

    @classmethod
    def parse(cls, url: str) -> StoreLocation:
        """Parse a store URL as `overspill worker --store` takes it.

        `s3://bucket[/prefix][?endpoint=…&region=…]`: endpoint and region default to the usual
        `AWS_ENDPOINT_URL` / `AWS_REGION` variables when the client is built, as the Overspill
        worker does; `allow_http` is accepted and ignored (boto3 follows the endpoint's scheme).
        `file:///path`: a directory on this machine (`overspill dev`'s default store).
        """
        parts = urlsplit(url)
        if parts.scheme == 'file':
            if parts.netloc not in ('', 'localhost') or not parts.path.startswith('/') or parts.query:
                raise ValueError(f'store URL {url!r} is not an absolute local path (use file:///path)')
            return cls(bucket='', prefix='', root=unquote(parts.path).rstrip('/') or '/')
        if parts.scheme not in ('s3', 's3a'):
            raise ValueError(f'unsupported store URL {url!r}: OverspillStore reads s3:// and file:// stores')
        if not parts.netloc:
            raise ValueError(f'store URL {url!r} names no bucket')
        segments = [s for s in parts.path.split('/') if s]
        if any(s in ('.', '..') for s in segments):
            raise ValueError(f'store URL {url!r} has an invalid prefix')
        endpoint = region = None
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key == 'endpoint':
                endpoint = value
            elif key == 'region':
                region = value
            elif key != 'allow_http':
                raise ValueError(f'store URL {url!r}: unknown parameter {key!r}')
        return cls(bucket=parts.netloc, prefix='/'.join(segments), endpoint_url=endpoint, region=region)

    def same_place(self, url: str) -> bool:
        """Whether store URL `url` (as the Overspill worker reports it) keeps spills where this does."""
        try:
            other = StoreLocation.parse(url)
        except ValueError:
            return False
        # Plain string work: this runs in workflow code, where the sandbox refuses `os.path`.
        roots = [[part for part in (r or '').split('/') if part not in ('', '.')] for r in (self.root, other.root)]
        return (self.bucket, self.prefix, self.root is None, roots[0]) == (
            other.bucket,
            other.prefix,
            other.root is None,
            roots[1],
        )

    def local_dir(self) -> Path:
        """The directory a `file://` store keeps its spills in, `{root}/tool_output_limits`."""
        if self.root is None:
            raise ValueError(f's3://{self.bucket} is not a file:// store: it has no local directory')
        return Path(self.root) / NAMESPACE

    def object_key(self, handle: str) -> str:
        """The object key of `handle` inside the bucket (or the path inside a `file://` root)."""
        return '/'.join([*([self.prefix] if self.prefix else []), NAMESPACE, sanitize_key(handle)])


def sanitize_segment(segment: str) -> str:
    """One key segment made safe, as the harness's `_safe_segment` and Overspill do it."""
    cleaned = _UNSAFE.sub('_', segment)
    return '_' if cleaned in ('', '.', '..') else cleaned


def sanitize_key(key: str) -> str:
    """`key`'s sanitized segments joined by `/` (`run-1/../call 1.0` → `run-1/_/call_1.0`)."""
    return '/'.join([sanitize_segment(part) for part in key.split('/') if part] or ['_'])


def refusal(handle: str) -> str | None:
    """Why Overspill refuses to resolve `handle` (absolute, traversal, …), or `None`.

    The same checks as `overspill::store::check_handle`, so a read from Python answers exactly
    when a read through the worker would.
    """
    if handle.startswith(('/', '\\')) or (
        len(handle) >= 2 and handle[0].isascii() and handle[0].isalpha() and handle[1] == ':'
    ):
        return 'absolute path'
    if '://' in handle:
        return 'foreign prefix'
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in handle):
        return 'control character'
    if '\\' in handle or any(s in ('.', '..') for s in handle.split('/')):
        return 'path traversal'
    if _PERCENT_ESCAPE.search(handle):
        return 'percent-encoded escape'
    # Judged on the last segment as stored: `run/call.0.idx/` names the object `run/call.0.idx`.
    segments = [part for part in handle.split('/') if part]
    if segments and sanitize_segment(segments[-1]).endswith(INDEX_SUFFIX):
        return 'index object'
    return None
