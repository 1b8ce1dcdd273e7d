"""Run the example agent once: `python run_agent.py [LINES] [--read-in-workflow]`.

LINES defaults to 2000 (a spill). `--read-in-workflow` runs the variant whose `read_tool_result`
runs in workflow code, reading through the worker's `store.read_activity()`.

Prints the agent run id and every tool return the model saw. 2000 lines (121,130 chars) spill
to Overspill and are paged back with `read_tool_result`; 200 lines (12,112 chars) are summarized
by Overspill's model; 50 lines (3,024 chars) pass through.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid

from log_agent import WORKFLOW_TASK_QUEUE, LogAgentReadInWorkflow, LogAgentWorkflow, connect


async def main(lines: int, read_in_workflow: bool) -> None:
    client = await connect()
    run = LogAgentReadInWorkflow.run if read_in_workflow else LogAgentWorkflow.run
    report = await client.execute_workflow(
        run,
        f'fetch the build log, {lines} lines',
        id=f'log-agent-{uuid.uuid4()}',
        task_queue=WORKFLOW_TASK_QUEUE,
    )
    print(f'agent run {report.run_id}')
    for seen in json.loads(report.output):
        print('---')
        print(seen)


if __name__ == '__main__':
    numbers = [a for a in sys.argv[1:] if a.isdigit()]
    asyncio.run(main(int(numbers[0]) if numbers else 2000, '--read-in-workflow' in sys.argv[1:]))
    # Skip interpreter teardown, where temporalio's native threads can abort the process.
    sys.stdout.flush()
    os._exit(0)
