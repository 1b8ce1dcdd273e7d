/**
 * The AI SDK on Temporal, with and without Overspill: an agent whose tool returns `chars` chars a
 * call, called `calls` times by the scripted model, then answering. Prints one row per setup:
 * how the run ended, tool and model calls, the history's size (the server's `historySizeBytes`),
 * the largest model-call input recorded, and the chars of model-visible text sent over all model
 * calls. Run by `benches/ai_sdk.sh` (see its header); needs what the tests need.
 *
 * Usage: node build/test/bench.js [--calls 100] [--chars 200000] [--setups plain,source,masking,bodies]
 */

import { parseArgs } from 'node:util';

import type { Client } from '@temporalio/client';
import { Store } from '@overspill/temporal-ai-sdk';

import { type AgentWorker, agentWorker, bundle, client, largestModelInput, overspillWorker, s3Store, unique } from './support';
import type { AgentInput } from './workflows';

/** A setup: the Overspill plugin's options (`null`: none), masking, and a model that returns bodies. */
interface Setup {
  label: string;
  overspill: boolean;
  mask: boolean;
  dropBodies: boolean;
}

const SETUPS: Record<string, Setup> = {
  plain: { label: 'AI SDK, without Overspill', overspill: false, mask: false, dropBodies: false },
  source: { label: 'AI SDK, with Overspill at the source', overspill: true, mask: false, dropBodies: false },
  masking: { label: 'AI SDK, at the source + masking', overspill: true, mask: true, dropBodies: false },
  bodies: { label: 'AI SDK, at the source + masking + dropModelBodies', overspill: true, mask: true, dropBodies: true },
};

/** One run's figures. */
interface Figures {
  end: string;
  toolCalls: number;
  modelCalls: number;
  history: number;
  largestModelRequest: number;
  charsSent: number;
  wallSeconds: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      calls: { type: 'string', default: '100' },
      chars: { type: 'string', default: '200000' },
      setups: { type: 'string', default: 'plain,source,masking,bodies' },
    },
  });
  const calls = Number(values.calls);
  const chars = Number(values.chars);
  const storeUrl = s3Store('bench');
  const store = new Store(storeUrl);
  const [temporalClient, workflowBundle, overspill] = await Promise.all([client(), bundle(), overspillWorker(storeUrl)]);
  const rows: [Setup, Figures][] = [];
  try {
    for (const name of (values.setups ?? '').split(',')) {
      const setup = SETUPS[name];
      if (setup === undefined) throw new Error(`no setup ${name}: ${Object.keys(SETUPS).join(', ')}`);
      // Every model returns the bodies a real provider returns (the prompt again, and its reply).
      const agent = await agentWorker(
        workflowBundle,
        setup.overspill ? { tools: { fetchPage: 'fetch_page' }, store, dropModelBodies: setup.dropBodies } : null,
        { bodies: true },
      );
      try {
        const input: AgentInput = {
          prompt: `fetch ${calls} pages of ${chars} chars`,
          overspillQueue: overspill.queue,
          maxSteps: calls + 1,
          ...(setup.mask ? { mask: { budget: 100_000 } } : {}),
        };
        const figures = await run(temporalClient, agent, input);
        rows.push([setup, figures]);
        console.error(`${setup.label}: ${JSON.stringify(figures)}`);
      } finally {
        await agent.stop();
      }
    }
  } finally {
    await overspill.process.stop();
    await temporalClient.connection.close();
  }
  console.log('| run | end | tool calls | model calls | history | largest model request | chars sent to the model | wall |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  const n = (x: number): string => x.toLocaleString('en-US');
  for (const [setup, f] of rows) {
    console.log(
      `| ${setup.label} | ${f.end} | ${n(f.toolCalls)} | ${n(f.modelCalls)} | ${n(f.history)} B | ${n(f.largestModelRequest)} B | ${n(f.charsSent)} | ${f.wallSeconds.toFixed(0)} s |`,
    );
  }
}

/** Run the agent until it completes, or until its workflow task keeps failing (stuck: terminated). */
async function run(temporalClient: Client, agent: AgentWorker, input: AgentInput): Promise<Figures> {
  const started = Date.now();
  const handle = await temporalClient.workflow.start('agent', {
    taskQueue: agent.queue,
    workflowId: unique('bench'),
    args: [input],
    workflowExecutionTimeout: '30 minutes',
  });
  let end: string | undefined;
  const result = handle.result().then(
    () => 'completed',
    (error: unknown) => `failed: ${String(error)}`,
  );
  while (end === undefined) {
    const settled = await Promise.race([result, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 2_000))]);
    if (settled !== undefined) {
      end = settled;
      break;
    }
    // A workflow task that fails again and again (a payload over the limit): the server retries it
    // forever and the run shows Running. Its fourth attempt ends the wait.
    const task = (await handle.describe()).raw.pendingWorkflowTask;
    if ((task?.attempt ?? 0) > 3) {
      const history = await handle.fetchHistory();
      const failed = (history.events ?? []).findLast((e) => e.workflowTaskFailedEventAttributes);
      const cause = failed?.workflowTaskFailedEventAttributes?.failure?.message ?? '';
      const why = cause.includes('TMPRL1103') ? 'a payload over 2 MiB' : cause.slice(0, 60);
      end = `stuck at call ${count(history, 'fetchPage') + 1} (${why})`;
      await handle.terminate('the bench: stuck');
    }
  }
  const history = await handle.fetchHistory();
  const description = await handle.describe();
  return {
    end,
    toolCalls: count(history, 'fetchPage'),
    modelCalls: count(history, 'invokeModel'),
    history: Number(description.historySize),
    largestModelRequest: largestModelInput(history),
    charsSent: agent.sent.requests.reduce((sum, c) => sum + c, 0),
    wallSeconds: (Date.now() - started) / 1000,
  };
}

/** Completed activities of `type` in `history`. */
function count(history: Awaited<ReturnType<import('@temporalio/client').WorkflowHandle['fetchHistory']>>, type: string): number {
  const scheduled = new Map<string, string>();
  let completed = 0;
  for (const event of history.events ?? []) {
    const attributes = event.activityTaskScheduledEventAttributes;
    if (attributes?.activityType?.name) scheduled.set(String(event.eventId), attributes.activityType.name);
    const done = event.activityTaskCompletedEventAttributes;
    if (done && scheduled.get(String(done.scheduledEventId)) === type) completed++;
  }
  return completed;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
