"""Temporal External Storage for a pydantic-ai agent's long runs: the core's
(`overspill.external_storage`), under the names this module always had."""

from overspill.external_storage import Boto3StorageDriverClient, default_s3_client, external_storage

__all__ = ['Boto3StorageDriverClient', 'default_s3_client', 'external_storage']
