"""Serve the example agent's workflow and activities (`python run_worker.py`) until Ctrl-C.

The Overspill worker (`overspill dev`, or `overspill worker --store s3://…`) must run beside it:
this worker runs the agent; Overspill runs the spills, summaries and reads it delegates.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys

from log_agent import WORKFLOW_TASK_QUEUE, LogAgentReadInWorkflow, LogAgentSearch, LogAgentWorkflow, connect, store
from temporalio.worker import Worker


async def main() -> None:
    client = await connect()
    worker = Worker(
        client,
        task_queue=WORKFLOW_TASK_QUEUE,
        workflows=[LogAgentWorkflow, LogAgentReadInWorkflow, LogAgentSearch],
        # Serves OverspillStore.read in workflow code (LogAgentReadInWorkflow's read_tool_result).
        activities=[store.read_activity()],
    )
    print(f'log agent worker polling {WORKFLOW_TASK_QUEUE!r}', flush=True)
    await worker.run()


if __name__ == '__main__':
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    # Skip interpreter teardown, where temporalio's native threads can abort the process.
    sys.stdout.flush()
    os._exit(0)
