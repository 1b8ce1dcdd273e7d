"""The OpenAI Agents SDK on Temporal (`temporalio.openai_agents`), with and without Overspill.

A scripted model (`openai_agents_support.ScriptedModel`, the SDK's own `Model` interface) drives
an agent whose tool is an activity (`activity_as_tool`). Every model call is an activity whose
input carries the whole conversation so far, so each big tool output is recorded again in every
later model call's input.

Needs `TEMPORAL_ADDRESS`, and for the Overspill runs `OVERSPILL_TEST_S3_URL` with the `AWS_*`
variables and `OVERSPILL_BIN`.
"""

from __future__ import annotations

import asyncio
import os
import uuid

from openai_agents_support import AgentRequest, PlainAgent, ScriptedProvider, fetch_page, plugin, run_agent
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

PAYLOAD_LIMIT = 2 * 1024 * 1024
"""Temporal's default limit on one payload (the server's `limit.blobSize.error`)."""


async def _client(provider: ScriptedProvider) -> Client:
    return await Client.connect(
        os.environ['TEMPORAL_ADDRESS'],
        namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'),
        plugins=[plugin(provider)],
    )


def test_without_overspill_200_kb_outputs_stop_the_agent_at_the_12th_call() -> None:
    """100 calls of 200 KB: the 12th model call's input (11 outputs, 2.2 MB) is over the payload
    limit, so the workflow task that schedules it fails on every retry while the run shows
    Running; nothing ends it. The test sees the failed task in the history and terminates it."""

    async def main() -> tuple[object, object]:
        provider = ScriptedProvider()
        client = await _client(provider)
        queue = f'oa-plain-{uuid.uuid4()}'
        async with Worker(
            client,
            task_queue=queue,
            workflows=[PlainAgent],
            activities=[fetch_page],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            return await run_agent(
                client, PlainAgent.run, AgentRequest('fetch 100 pages of 200000 chars'), task_queue=queue, timeout=240
            )

    figures, _ = asyncio.run(main())
    print(f'\nwithout Overspill: {figures}')
    assert figures.status == 'stuck', figures  # type: ignore[attr-defined]
    assert figures.tool_calls == 11 and figures.model_calls == 11, figures  # type: ignore[attr-defined]
    assert figures.largest_model_input < PAYLOAD_LIMIT, figures  # type: ignore[attr-defined]
