"""`OverspillStore`: a pydantic-ai-harness `OverflowStore` backed by an Overspill worker."""

from __future__ import annotations

import base64
import errno
import logging
import os
import stat
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic_ai_harness.tool_output_limits import LocalFileStore
from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError

from overspill.pydantic_ai._activity import ON_UNAVAILABLE, OnUnavailable, OtherStoreError, execute_activity, unavailable
from overspill.pydantic_ai._keys import StoreLocation, default_store_url, refusal, sanitize_key
from overspill.pydantic_ai._scope import READ_SCOPES, admits, current_scope, facts_entry

FACTS_KEY = 'overspill'
"""The object metadata entry (a local file's `user.overspill` attribute) a spill's facts are in."""

SPILL_ACTIVITY = 'tool_output_limits.spill'
"""The Overspill activity that persists a payload under its key."""

DEFAULT_TASK_QUEUE = 'tool-output-limits'
"""The task queue an Overspill worker polls by default."""


def default_task_queue() -> str:
    """`OVERSPILL_TASK_QUEUE`, else `tool-output-limits`: the queue `overspill worker` and `overspill dev` poll."""
    return os.environ.get('OVERSPILL_TASK_QUEUE') or DEFAULT_TASK_QUEUE

READ_ACTIVITY = 'overspill.read_spill'
"""The default name of the Python read activity (see `OverspillStore.read_activity`)."""


class SpillError(Exception):
    """A spill was not stored: the store refused the write, or the Overspill worker's answer was
    not the handle of exactly these bytes. ToolOutputLimits then runs the band's `then`."""


class SpillReadError(ApplicationError):
    """The store could not be asked for a spill (credentials, bucket, endpoint), not an unknown handle.

    Deliberately not an `OSError`: the harness turns an `OSError` into its "No stored tool result"
    answer, which would tell the model a spill is gone when the store could not be asked. It is
    non-retryable: boto3 already retried a transient failure (3 attempts), and a configuration
    error does not heal, so the `read_tool_result` activity fails once and the run ends with this
    message instead of retrying forever.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, type='SpillReadError', non_retryable=True)


@dataclass
class OverspillStore:
    """Spill ToolOutputLimits payloads through Overspill: journaled writes, shared S3 reads.

    Pass it as `ToolOutputLimits(store=OverspillStore())` on an agent that runs on Temporal
    (`TemporalDurability`). The URL must name the Overspill worker's store: `s3://bucket[/prefix]`
    (`?endpoint=…&region=…` accepted) or `file:///path` (when the agent's workers run on the
    Overspill worker's machine); other schemes are refused. Without one it is the default every
    Overspill command takes: `OVERSPILL_STORE`, else `file://$TMPDIR/overspill-<euid>` (the store
    of `overspill dev` and of a worker started without `--store`).

    When no Overspill worker polls `task_queue`, or the worker's store (each spill's result names
    it) is not this one, the run ends: its workflow fails with one line naming the queue, or both
    stores (`OverspillUnavailable`, which says how). `on_unavailable='fallback'` lets the spill
    fall back to its band's `then` instead, with one WARNING line.

    - `write(key, data)` in workflow code (where ToolOutputLimits' `after_tool_execute` runs)
      executes `tool_output_limits.spill` on Overspill's task queue and returns the handle from its
      result: the write is journaled, a replay returns the recorded handle without writing again,
      and a write retried after a crash overwrites the same object. Outside a workflow (a plain
      `agent.run()`), it puts the object into the store directly, under the same key.
    - `read(handle)` outside workflow code, which includes the activity in which the harness runs
      its `read_tool_result` tool, reads the object straight from the store. In workflow code
      (when `read_tool_result` is configured to run in the workflow) it executes the Python
      activity `read_activity()` returns, which the agent's worker must register; the whole
      payload then enters the workflow history on every read.

    Reads from the store are scoped as the Overspill worker's (see `read_scope`): inside a
    Temporal activity, which includes the harness's `read_tool_result` and `read_activity()`, a
    spill another workflow wrote reads exactly as a missing one.

    Handles are the harness's keys, unchanged (`{run_id}/{tool_call_id}.{retry}[.content]`), so
    they are identical to the handles `LocalFileStore` produces. Objects live at
    `{prefix}/tool_output_limits/{sanitized handle}` in the bucket (`{path}/tool_output_limits/…`
    for `file://`), where Overspill's own `read_tool_result` and `overspill read` find them too.

    S3 endpoint, region and credentials come from the URL's `?endpoint=…&region=…` or the usual
    `AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` variables, as
    for the worker; pass `s3_client` to use a boto3 client of your own.
    """

    url: str = field(default_factory=default_store_url)
    """The Overspill worker's store URL, `s3://bucket[/prefix]` or `file:///path` (default above)."""

    task_queue: str = field(default_factory=default_task_queue)
    """The task queue the Overspill worker polls (`OVERSPILL_TASK_QUEUE`, else `tool-output-limits`)."""

    spill_timeout: timedelta = timedelta(minutes=2)
    """`schedule_to_close_timeout` of a spill, retries included. When it passes, the spill fails
    and ToolOutputLimits runs the band's `then` (logging a WARNING) instead of hanging the run."""

    start_timeout: timedelta = timedelta(seconds=10)
    """How long a spill (or a workflow-side read) waits for a worker to start it: then no Overspill
    worker polls `task_queue`, and `on_unavailable` says what happens."""

    on_unavailable: OnUnavailable = 'fail'
    """When no Overspill worker polls `task_queue` within `start_timeout`, or the worker stores
    spills in another store than `url`: `'fail'` ends the run, its workflow failing with one line
    that says which (`OverspillUnavailable`); `'fallback'` makes the spill fail with an
    `UnavailableError`, so ToolOutputLimits runs the band's `then` (a truncation, say) and logs
    one WARNING line, and the run goes on without the spill."""

    read_timeout: timedelta = timedelta(minutes=1)
    """`schedule_to_close_timeout` of a workflow-side read through `read_activity()`."""

    read_activity_name: str = READ_ACTIVITY
    """The activity name `read_activity()` registers under and workflow-side reads call
    (`overspill.read_spill`); set it when two stores' read activities share one worker."""

    read_task_queue: str | None = None
    """The task queue of the worker that registered `read_activity()` (default: the workflow's)."""

    read_scope: str = 'workflow'
    """Which spills a read inside a Temporal activity sees, as `overspill worker --read-scope`:
    `'workflow'` those its own workflow id wrote (continue-as-new runs included), `'namespace'`
    those of its namespace, `'any'` every spill. A spill written outside a workflow is seen only
    with `'any'`; a read outside any activity (a plain `agent.run()`) sees every spill."""

    s3_client: Any = field(default=None, repr=False)
    """A boto3 S3 client to read and write with (default: one built from the URL and environment)."""

    location: StoreLocation = field(init=False, repr=False)
    """Where `url` keeps spills: its bucket and prefix, or its directory."""

    def __post_init__(self) -> None:
        self.location = StoreLocation.parse(self.url)
        if self.read_scope not in READ_SCOPES:
            raise ValueError(f'read_scope {self.read_scope!r} is not one of {", ".join(READ_SCOPES)}')
        if self.on_unavailable not in ON_UNAVAILABLE:
            raise ValueError(f'on_unavailable {self.on_unavailable!r} is not one of {", ".join(ON_UNAVAILABLE)}')

    @property
    def bucket(self) -> str:
        """The bucket spills live in."""
        return self.location.bucket

    def object_key(self, handle: str) -> str:
        """The object key of `handle` in the bucket (`tool_output_limits/run-1/call-1.0`)."""
        return self.location.object_key(handle)

    async def write(self, key: str, data: bytes) -> str:
        """Persist `data` under `key` and return its handle (the `OverflowStore` protocol)."""
        if not workflow.in_workflow():
            await self._put(key, data)
            return key
        try:
            output: dict[str, str] = {'text': data.decode('utf-8')}
        except UnicodeDecodeError:
            output = {'bytes_b64': base64.b64encode(data).decode('ascii')}
        request = {
            'key': key,
            'output': output,
            # The reference's defaults (no strip_ansi, no serializer), whatever the worker's
            # `--limits` say: the stored bytes must be exactly `data`.
            'config': {},
        }
        response = await execute_activity(
            SPILL_ACTIVITY,
            [request],
            task_queue=self.task_queue,
            schedule_to_close_timeout=self.spill_timeout,
            start_timeout=self.start_timeout,
            on_unavailable=self.on_unavailable,
            summary=f'spill {key}',
        )
        if not isinstance(response, dict) or not isinstance(handle := response.get('handle'), str):
            raise SpillError(f'{SPILL_ACTIVITY} returned {type(response).__name__}, not a spill response')
        if response.get('overflow_bytes') != len(data):
            raise SpillError(
                f'{SPILL_ACTIVITY} stored {response.get("overflow_bytes")} bytes for {key!r}, not {len(data)}'
            )
        if isinstance(theirs := response.get('store'), str) and not self.location.same_place(theirs):
            message = (
                f'The Overspill worker on task queue {self.task_queue!r} stores spills in {theirs}, but this '
                f'OverspillStore reads {self.url}: read_tool_result would not find them. Give both the same '
                'store (OVERSPILL_STORE).'
            )
            raise unavailable(message, self.on_unavailable, OtherStoreError)
        return handle

    async def read(self, handle: str) -> bytes:
        """Return the payload stored for `handle` (the `OverflowStore` protocol).

        Raises `FileNotFoundError` for an unknown or refused handle (the harness then tells the
        model there is no such result) and `SpillReadError` when the store cannot be reached. In
        workflow code, a read no worker starts within `start_timeout` ends the run whatever
        `on_unavailable` says (a read has no `then`): `OverspillUnavailable`, or `NoWorkerError`.
        """
        if workflow.in_workflow():
            data = await execute_activity(
                self.read_activity_name,
                [handle],
                task_queue=self.read_task_queue,
                result_type=bytes,
                schedule_to_close_timeout=self.read_timeout,
                start_timeout=self.start_timeout,
                on_unavailable=self.on_unavailable,
                summary=f'read {handle}',
            )
            if not isinstance(data, bytes):
                raise SpillReadError(
                    f'{self.read_activity_name} returned {type(data).__name__}, not the bytes of {handle!r}'
                )
            return data
        return await self._get(handle)

    def read_activity(self) -> Any:
        """The Python activity that serves workflow-side reads; register it on the agent's worker.

        Only needed when the harness's `read_tool_result` tool runs in workflow code; by default it
        runs in an activity, where `read` goes to the store directly. It returns the raw bytes
        (`binary/plain`).
        """

        async def read_spill(handle: str) -> bytes:
            return await self._get(handle)

        read_spill.__doc__ = f'Read the spill `handle` from {self.url}.'
        return activity.defn(name=self.read_activity_name)(read_spill)

    # --- direct store access (never in workflow code) ---

    def client(self) -> Any:
        """The boto3 S3 client reads and writes use: `s3_client`, built from the URL and the
        environment on first use when none was given."""
        if self.s3_client is None:
            self.s3_client = default_s3_client(self.location)
        return self.s3_client

    def _local(self) -> LocalFileStore:
        # The harness's own store over `{root}/tool_output_limits`: the same sanitized paths, root
        # checks (not a symlink, owned by this user, 0700) and confinement as Overspill's file store.
        return LocalFileStore(base_dir=self.location.local_dir())

    def _local_path(self, handle: str) -> Path:
        return self.location.local_dir() / sanitize_key(handle)

    async def _put(self, key: str, data: bytes) -> None:
        # Inside an activity of a workflow, the spill records that workflow, as the worker's do.
        facts = facts_entry()
        if self.location.root is not None:
            await self._local().write(key, data)
            if facts is not None:
                self._keep_facts(key, facts)
        else:
            await anyio.to_thread.run_sync(self._s3_put, key, data, facts)

    def _keep_facts(self, key: str, facts: str) -> None:
        """Record a local spill's writer in its `user.overspill` attribute. When this store's reads
        are scoped (`read_scope` other than `'any'`), a spill kept without its writer is one its own
        workflow could never read: the write fails (ToolOutputLimits then runs the band's `then`).
        Under `'any'` the writer is not needed: a failure (or a platform without `os.setxattr`,
        such as macOS) leaves the spill without it, with a warning."""
        try:
            os.setxattr(self._local_path(key), f'user.{FACTS_KEY}', facts.encode())
        except (OSError, AttributeError) as error:
            if self.read_scope != 'any':
                raise SpillError(
                    f'could not record the writer of {key!r} (the file system keeps no extended '
                    f'attributes?): {error}; its workflow could not read it back with '
                    f"read_scope={self.read_scope!r}. Use read_scope='any' or a file system that keeps them."
                ) from error
            _logger.warning('spill %r is kept without its writer: %s', key, error)

    async def _get(self, handle: str) -> bytes:
        if (why := refusal(handle)) is not None:
            raise FileNotFoundError(f'handle refused ({why})')
        # The caller is read here: the thread below may not see the activity's context.
        caller = current_scope()
        if self.location.root is not None:
            return await anyio.to_thread.run_sync(self._local_read, handle, caller)
        return await anyio.to_thread.run_sync(self._s3_get, handle, caller)

    def _local_read(self, handle: str, caller: tuple[bool, str | None]) -> bytes:
        """The payload of local spill `handle`, if `caller` may see it. The bytes and the writer
        come from one open file: its writer is read before and after the bytes, with its size,
        inode and change time, and a file changed in between is read again, so the writer checked
        is the writer of the bytes returned."""
        # The harness's checks (`LocalFileStore.read`'s): the root, and the target's confinement
        # to it with symlinks resolved.
        root = self.location.local_dir()
        _check_root(root)
        target = self._local_path(handle).resolve()
        if not target.is_relative_to(root.resolve()):
            raise PermissionError(f'Handle {handle!r} resolves outside the store root.')
        missing = FileNotFoundError(f'no stored tool result for {handle!r}')
        scoped = caller[0] and self.read_scope != 'any'
        for _ in range(3):
            try:
                f = target.open('rb')
            except FileNotFoundError:
                # One message for a missing spill and one not seen, without the file's path.
                raise missing from None
            with f:
                before = _version(f.fileno(), handle) if scoped else None
                data = f.read()
                if not scoped:
                    return data
                after = _version(f.fileno(), handle)
            if before == after:
                if not admits(self.read_scope, after[1], caller):
                    raise missing
                return data
        raise SpillReadError(f'{handle!r} kept changing while it was read; try again')

    def _local_facts(self, handle: str) -> str | None:
        """The facts local spill `handle` keeps: `None` when it keeps none, is gone, or this file
        system or platform keeps no extended attributes; any other failure is the store's
        (`SpillReadError`), never an unknown writer that would read the workflow's own spill as
        missing."""
        return _facts_at(self._local_path(handle), handle)

    def sees(self, handle: str) -> bool:
        """Whether a read here may see `handle` (one `HEAD` on S3); a missing spill is not seen."""
        if refusal(handle) is not None:
            return False
        facts = self.writer_facts(handle)
        return facts is not None and admits(self.read_scope, facts)

    def writer_facts(self, handle: str) -> str | None:
        """The `overspill` metadata (URL query form; empty if it keeps none) of spill `handle`, or
        `None` if it is gone. Any other failure raises `SpillReadError`: an unreadable writer is
        never taken for an unknown one, which would hide the workflow's own spill."""
        if self.location.root is not None:
            if not self._local_path(handle).is_file():
                return None
            return self._local_facts(handle) or ''
        try:
            head = self.client().head_object(Bucket=self.bucket, Key=self.object_key(handle))
        except Exception as error:  # botocore errors are not OSErrors
            response = getattr(error, 'response', {})
            if response.get('ResponseMetadata', {}).get('HTTPStatusCode') == 404:
                return None
            raise SpillReadError(
                f'could not read the writer of {handle!r} in {self.url}: {type(error).__name__}: {error}'
            ) from error
        return str(head.get('Metadata', {}).get(FACTS_KEY, ''))

    def _s3_put(self, key: str, data: bytes, facts: str | None = None) -> None:
        metadata = {} if facts is None else {'Metadata': {FACTS_KEY: facts}}
        try:
            self.client().put_object(Bucket=self.bucket, Key=self.object_key(key), Body=data, **metadata)
        except Exception as error:  # botocore errors are not OSErrors
            raise SpillError(f'could not store {key!r} in s3://{self.bucket}: {type(error).__name__}') from error

    def _s3_get(self, handle: str, caller: tuple[bool, str | None]) -> bytes:
        client = self.client()
        try:
            response = client.get_object(Bucket=self.bucket, Key=self.object_key(handle))
            # The writer comes with the object's metadata: no request more.
            if not admits(self.read_scope, response.get('Metadata', {}).get(FACTS_KEY), caller):
                response['Body'].close()
                raise FileNotFoundError(f'no stored tool result for {handle!r}')
            body: bytes = response['Body'].read()
            return body
        except FileNotFoundError:
            raise
        except client.exceptions.NoSuchKey:
            raise FileNotFoundError(f'no stored tool result for {handle!r}') from None
        except Exception as error:
            response = getattr(error, 'response', {})
            if response.get('ResponseMetadata', {}).get('HTTPStatusCode') == 404 and response.get('Error', {}).get(
                'Code'
            ) in ('404', 'NoSuchKey', None):
                raise FileNotFoundError(f'no stored tool result for {handle!r}') from None
            raise SpillReadError(
                f'could not read {handle!r} from {self.url}: {type(error).__name__}: {error}. Check the '
                'store URL (OVERSPILL_STORE, the same as the Overspill worker\'s) and its AWS_* settings.'
            ) from error


_logger = logging.getLogger('overspill.pydantic_ai.store')

_NONE_KEPT = {
    errno.ENOENT,
    errno.ENOTSUP,
    getattr(errno, 'ENODATA', errno.ENOENT),
    getattr(errno, 'ENOATTR', errno.ENOENT),
}
"""The errors of `getxattr` that mean no writer is kept: none set, file gone, no xattrs here."""


def _facts_at(where: Path | int, handle: str) -> str | None:
    """The `user.overspill` attribute of a path or open file descriptor (see `_local_facts`)."""
    try:
        return os.getxattr(where, f'user.{FACTS_KEY}').decode('utf-8', 'replace')
    except AttributeError:  # a platform without extended attributes (macOS): none kept
        return None
    except OSError as error:
        if error.errno in _NONE_KEPT:
            return None
        raise SpillReadError(f'could not read the writer of {handle!r}: {error}') from error


def _version(fd: int, handle: str) -> tuple[tuple[int, int, int, int], str | None]:
    """What identifies the open file `fd`'s content and writer: its inode, size and modification
    and change times, and its facts."""
    st = os.fstat(fd)
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns), _facts_at(fd, handle)


def _check_root(root: Path) -> None:
    """Refuse a symlinked root or one another user owns, and clear its group and other bits, as
    the harness's `LocalFileStore` does before a read."""
    st = root.lstat()
    if stat.S_ISLNK(st.st_mode):
        raise PermissionError(f'Overflow store root {str(root)!r} is a symbolic link; refusing to use it.')
    if st.st_uid != os.geteuid():
        raise PermissionError(f'Overflow store root {str(root)!r} is not owned by the current user; refusing it.')
    if stat.S_IMODE(st.st_mode) & 0o077:
        root.chmod(0o700)


def default_s3_client(location: StoreLocation) -> Any:
    """A boto3 S3 client for `location`, configured like the Overspill worker's store."""
    import boto3  # imported here: never needed (nor importable) in the workflow sandbox
    from botocore.config import Config

    endpoint = location.endpoint_url or os.environ.get('AWS_ENDPOINT_URL') or None
    region = location.region or os.environ.get('AWS_REGION') or os.environ.get('AWS_DEFAULT_REGION') or 'us-east-1'
    config = Config(
        # Self-hosted servers (SeaweedFS, MinIO) want path-style requests, as object_store sends them.
        s3={'addressing_style': 'path' if endpoint else 'auto'},
        connect_timeout=2,
        read_timeout=30,
        retries={'max_attempts': 3, 'mode': 'standard'},
    )
    return boto3.session.Session().client('s3', endpoint_url=endpoint, region_name=region, config=config)
