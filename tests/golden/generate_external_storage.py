"""Record External Storage references exactly as temporalio 1.35's Python SDK writes them.

Run with temporalio 1.35.0 installed (the project venv has it):

    .deploy/venv/bin/python tests/golden/generate_external_storage.py tests/golden

Each case is a reference payload the SDK's own `ExternalStorage` produced (the current
`json/protobuf` form, the legacy `json/external-storage-reference` form, and the marked form an
SDK writes once it encodes references), with the object its driver stored and the payload the
reference stands for. `src/external_storage/tests.rs` resolves every one and rebuilds every key,
so Overspill reads and writes the format byte for byte as the Python SDK does. The key segment
cases record both drivers' percent-encoding of awkward identifiers.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

import temporalio.converter._extstore as extstore
from temporalio.api.common.v1 import Payload
from temporalio.contrib.aws.s3driver import S3StorageDriver, S3StorageDriverClient
from temporalio.contrib.aws.s3driver import _driver as s3_driver
from temporalio.contrib.gcp.gcsdriver import GCSStorageDriver, GCSStorageDriverClient
from temporalio.contrib.gcp.gcsdriver import _driver as gcs_driver
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    StorageDriverActivityInfo,
    StorageDriverClaim,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
)

BUCKET = 'temporal-payloads'


class MemoryS3(S3StorageDriverClient):
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}

    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None:
        self.objects[(bucket, key)] = data

    async def object_exists(self, *, bucket: str, key: str) -> bool:
        return (bucket, key) in self.objects

    async def get_object(self, *, bucket: str, key: str) -> bytes:
        return self.objects[(bucket, key)]


class MemoryGcs(GCSStorageDriverClient):
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}

    async def put_object(self, *, bucket: str, object_name: str, data: bytes) -> None:
        self.objects[(bucket, object_name)] = data

    async def object_exists(self, *, bucket: str, object_name: str) -> bool:
        return (bucket, object_name) in self.objects

    async def get_object(self, *, bucket: str, object_name: str) -> bytes:
        return self.objects[(bucket, object_name)]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode('ascii')


def payload_json(payload: Payload) -> dict[str, Any]:
    return {
        'metadata': {k: b64(v) for k, v in sorted(payload.metadata.items())},
        'data': b64(payload.data),
        'external_sizes': [e.size_bytes for e in payload.external_payloads],
    }


def scope_json(target: StorageDriverWorkflowInfo | StorageDriverActivityInfo | None) -> dict[str, Any]:
    if isinstance(target, StorageDriverWorkflowInfo):
        return {'kind': 'workflow', 'namespace': target.namespace, 'type': target.type, 'id': target.id,
                'run_id': target.run_id}
    if isinstance(target, StorageDriverActivityInfo):
        return {'kind': 'activity', 'namespace': target.namespace, 'type': target.type, 'id': target.id,
                'run_id': target.run_id}
    return {'kind': 'none'}


async def record(name: str, value: Any, target: Any = None, gcs: bool = False) -> dict[str, Any]:
    """Encode `value` through a DataConverter whose ExternalStorage offloads everything."""
    client: Any = MemoryGcs() if gcs else MemoryS3()
    driver: Any = GCSStorageDriver(client=client, bucket=BUCKET) if gcs else S3StorageDriver(client=client, bucket=BUCKET)
    storage = ExternalStorage(drivers=[driver], payload_size_threshold=0)
    storage = storage._with_store_context(StorageDriverStoreContext(target=target))
    [original] = await DataConverter().encode([value])
    [reference] = await DataConverter(external_storage=storage).encode([value])
    [(bucket, key)] = client.objects
    resolved = await DataConverter(external_storage=storage).decode([reference])
    assert resolved == [value]
    return {
        'name': name,
        'driver': driver.name(),
        'scope': scope_json(target),
        'reference': payload_json(reference),
        'stored': {'bucket': bucket, 'key': key, 'data': b64(client.objects[(bucket, key)])},
        'payload': payload_json(original),
    }


async def legacy_case() -> dict[str, Any]:
    """The legacy form, as the SDK's own legacy claim converter writes it."""
    case = await record('legacy', {'legacy': True})
    claim = json.loads(base64.b64decode(case['reference']['data']))['claimData']
    legacy = extstore._StorageReference(driver_name='aws.s3driver', driver_claim=StorageDriverClaim(claim_data=claim))
    payload = ExternalStorage._legacy_claim_converter.to_payload(legacy)
    assert payload is not None
    case['reference'] = payload_json(payload)
    return case


async def marked_case() -> dict[str, Any]:
    """A reference carrying the marker a later SDK writes (`_ENCODE_STORAGE_REFERENCES`)."""
    extstore._ENCODE_STORAGE_REFERENCES = True
    try:
        return await record('marked', ['marked', 1])
    finally:
        extstore._ENCODE_STORAGE_REFERENCES = False


async def main(out_dir: Path) -> None:
    workflow = StorageDriverWorkflowInfo(namespace='default', id='wf id/ü:1', run_id='run-1', type='My Wf')
    activity = StorageDriverActivityInfo(namespace='prod ns', id='act*1', run_id=None, type="it's.(x)")
    long_workflow = StorageDriverWorkflowInfo(namespace='default', id='w' * 1100, run_id='run-2', type='Long')
    cases = [
        await record('workflow_scope', {'tool_name': 'cat', 'output': {'text': 'line\n' * 50}}, workflow),
        await record('activity_scope', 'a plain string', activity),
        await record('no_scope', 12345),
        await record('long_key_falls_back_to_namespace', {'x': 'y'}, long_workflow),
        await record('binary_payload', b'\x00\xff binary', workflow),
        await record('gcs_workflow_scope', {'gcs': 'yes'}, workflow, gcs=True),
        await legacy_case(),
        await marked_case(),
    ]
    values = ['plain', 'with space', 'slash/inside', 'ü unicode', '*()!-_.\'', '..', '.', '%25 pct', 'a#b?c:d"e<f>g|h',
              '\x01ctl', '[brackets]', 'tab\tx']
    segments = [
        {'value': v, 's3': s3_driver._percent_encode(v), 'gcs': gcs_driver._percent_encode(v)} for v in values
    ]
    out = {'bucket': BUCKET, 'cases': cases, 'segments': segments}
    (out_dir / 'external_storage.json').write_text(json.dumps(out, indent=1, ensure_ascii=False) + '\n')


if __name__ == '__main__':
    asyncio.run(main(Path(sys.argv[1])))
