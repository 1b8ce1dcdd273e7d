"""Temporal External Storage in the bucket an Overspill worker reads (`--external-storage`): the
long-run setup for agents of every framework.

Every model call's input carries the whole conversation so far, so with Overspill's reduction and
masking an agent's history still grows with the square of its calls, inline. With External
Storage on the agent's client every payload over a threshold (a model call's input, a large tool
output that was not reduced) goes to the bucket and the history carries a small reference; the
Overspill worker, started with `--external-storage` on the same bucket, resolves those references
and offloads its own large replies the same way. The bucket then holds every offloaded payload:
start the worker with `--external-storage-gc-every`, or run `overspill external-storage gc`, to
delete the objects of runs Temporal has let go.

```python
from overspill.external_storage import external_storage
client = await Client.connect('localhost:7233', plugins=[...],
    data_converter=DataConverter(external_storage=external_storage('s3://spills', payload_size_threshold=32 * 1024)))
```

Needs boto3 (`pip install 'overspill[external-storage]'`), imported only when a client is made
here: pass `s3_client` to use one of your own.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from temporalio.contrib.aws.s3driver import S3StorageDriver, S3StorageDriverClient
from temporalio.converter import ExternalStorage

DEFAULT_THRESHOLD = 256 * 1024
"""Payloads of at least this many bytes are offloaded (Temporal's default, and Overspill's)."""

DEFAULT_MAX_PAYLOAD = 50 * 1024 * 1024
"""The largest payload stored (the S3 driver's default, and Overspill's)."""


def external_storage(
    url: str,
    *,
    payload_size_threshold: int = DEFAULT_THRESHOLD,
    max_payload_size: int = DEFAULT_MAX_PAYLOAD,
    s3_client: Any = None,
) -> ExternalStorage:
    """The `ExternalStorage` for the bucket of `url` (`s3://bucket`), as temporalio's own
    `S3StorageDriver` writes it: pass it to the agent's client,
    `Client.connect(..., data_converter=DataConverter(external_storage=external_storage(url)))`,
    and start the Overspill worker with `--external-storage` on the same bucket.

    Endpoint, region and credentials come from the URL's `?endpoint=…&region=…` or the usual
    `AWS_*` variables, as for the worker; pass `s3_client` to use a boto3 client of your own. The
    driver writes keys under `v0/` at the bucket's root (a URL prefix is not used here; the worker
    reads `v0/` keys anywhere in its bucket). The bucket must exist.
    """
    parts = urlsplit(url)
    if parts.scheme not in ('s3', 's3a') or not parts.netloc:
        raise ValueError(f'External Storage needs an s3:// bucket, not {url!r}')
    if s3_client is None:
        s3_client = default_s3_client(url)
    driver = S3StorageDriver(
        client=Boto3StorageDriverClient(s3_client), bucket=parts.netloc, max_payload_size=max_payload_size
    )
    return ExternalStorage(drivers=[driver], payload_size_threshold=payload_size_threshold)


class Boto3StorageDriverClient(S3StorageDriverClient):
    """temporalio's `S3StorageDriverClient` over a (synchronous, thread-safe) boto3 S3 client;
    each call runs on a worker thread."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def describe(self) -> Mapping[str, str]:
        """The client's region and endpoint, for the driver's error messages."""
        meta = self._client.meta
        return {'client_region': meta.region_name or '', 'endpoint': meta.endpoint_url or ''}

    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None:
        """Upload `data` to `bucket`/`key`."""
        await asyncio.to_thread(lambda: self._client.put_object(Bucket=bucket, Key=key, Body=data))

    async def object_exists(self, *, bucket: str, key: str) -> bool:
        """Whether `bucket`/`key` exists (a HEAD; 404 is `False`)."""

        def head() -> bool:
            try:
                self._client.head_object(Bucket=bucket, Key=key)
            except Exception as error:
                status = getattr(error, 'response', {}).get('ResponseMetadata', {}).get('HTTPStatusCode')
                if status == 404:
                    return False
                raise
            return True

        return await asyncio.to_thread(head)

    async def get_object(self, *, bucket: str, key: str) -> bytes:
        """The bytes stored at `bucket`/`key`."""

        def get() -> bytes:
            body: bytes = self._client.get_object(Bucket=bucket, Key=key)['Body'].read()
            return body

        return await asyncio.to_thread(get)


def default_s3_client(url: str) -> Any:
    """A boto3 S3 client for the bucket of `url`, configured like the Overspill worker's:
    `?endpoint=…&region=…` from the URL, else `AWS_ENDPOINT_URL` and `AWS_REGION`; path-style
    requests to a custom endpoint (SeaweedFS, MinIO); bounded timeouts and three attempts."""
    try:
        import boto3  # here: never needed (nor importable) in the workflow sandbox, nor without the extra
        from botocore.config import Config
    except ImportError as error:
        raise ImportError(
            "External Storage's S3 client needs boto3: pip install 'overspill[external-storage]', or pass s3_client"
        ) from error

    query = dict(parse_qsl(urlsplit(url).query))
    endpoint = query.get('endpoint') or os.environ.get('AWS_ENDPOINT_URL') or None
    region = query.get('region') or os.environ.get('AWS_REGION') or os.environ.get('AWS_DEFAULT_REGION') or 'us-east-1'
    config = Config(
        s3={'addressing_style': 'path' if endpoint else 'auto'},
        connect_timeout=2,
        read_timeout=30,
        retries={'max_attempts': 3, 'mode': 'standard'},
    )
    return boto3.session.Session().client('s3', endpoint_url=endpoint, region_name=region, config=config)
