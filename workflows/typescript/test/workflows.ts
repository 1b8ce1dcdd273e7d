/**
 * The tests' workflows: an AI SDK agent on Temporal (`@temporalio/ai-sdk`) whose tools are
 * activities, with Overspill's read-back tools and, if asked, its masking; and direct calls of the
 * Overspill worker's activities, to compare with what the agent got.
 */

import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';
import { type ToolSet, generateText, jsonSchema, stepCountIs, tool } from 'ai';
import {
  OverspillMasking,
  type OverspillMaskingOptions,
  OverspillWorker,
  SPILL_ACTIVITY,
  overspillTools,
} from '@overspill/temporal-ai-sdk/workflow';

import type * as activities from './activities';

/** What the agent is asked, and with what. */
export interface AgentInput {
  /** The scripted model's script (see `model.ts`). */
  prompt: string;
  /** The Overspill worker's task queue (the read-back tools', masking's spills). */
  overspillQueue: string;
  /** The most steps (model calls) the agent takes. */
  maxSteps: number;
  /** Mask older tool outputs with these options. */
  mask?: OverspillMaskingOptions;
  /** Fetch pages through `fetchFlaky` (whose first attempt the retry test fails). */
  flaky?: boolean;
}

/** What the agent answered, and how many steps it took. */
export interface AgentOutput {
  text: string;
  steps: number;
}

const tools = proxyActivities<typeof activities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 3, initialInterval: '100 milliseconds' },
});

/** A crawl agent: `fetch_page`, `fetch_records` and `fetch_log`, plus Overspill's read-back tools. */
export async function agent(input: AgentInput): Promise<AgentOutput> {
  const worker = new OverspillWorker({ taskQueue: input.overspillQueue });
  const crawl: ToolSet = {
    fetch_page: tool({
      description: 'Fetch page `n` of the crawl log, `chars` chars of it.',
      inputSchema: jsonSchema<{ n: number; chars: number }>({
        type: 'object',
        properties: { n: { type: 'integer' }, chars: { type: 'integer' } },
        required: ['n', 'chars'],
      }),
      execute: async (args: { n: number; chars: number }) => await (input.flaky ? tools.fetchFlaky(args) : tools.fetchPage(args)),
    }),
    fetch_records: tool({
      description: "Fetch the crawl's first `count` records.",
      inputSchema: jsonSchema<{ count: number }>({ type: 'object', properties: { count: { type: 'integer' } }, required: ['count'] }),
      execute: async (args: { count: number }) => await tools.fetchRecords(args),
    }),
    fetch_log: tool({
      description: 'Fetch the build log, about `mb` MB.',
      inputSchema: jsonSchema<{ mb: number }>({ type: 'object', properties: { mb: { type: 'integer' } }, required: ['mb'] }),
      execute: async (args: { mb: number }) => await tools.fetchLog(args),
    }),
  };
  const masking = input.mask === undefined ? undefined : new OverspillMasking({ ...input.mask, worker });
  const result = await generateText({
    model: temporalProvider.languageModel('scripted'),
    tools: { ...crawl, ...overspillTools({ worker }) },
    prompt: input.prompt,
    stopWhen: stepCountIs(input.maxSteps),
    ...(masking === undefined ? {} : { prepareStep: masking.prepareStep }),
  });
  return { text: result.text, steps: result.steps.length };
}

/** Run the Overspill worker's activity `name` on `queue` with `request`. */
export async function overspillActivity(queue: string, name: string, request: object): Promise<unknown> {
  return await new OverspillWorker({ taskQueue: queue }).run(name, request, `test ${name}`);
}

/** Spill `spill` through the Overspill worker on `queue`, then run each page activity on it, in one
 * workflow (whose spills its pages may read): the spill's reply, then each page's text. */
export async function spillThenPage(
  queue: string,
  spill: object,
  pages: { activity: string; request: object }[],
): Promise<unknown[]> {
  const worker = new OverspillWorker({ taskQueue: queue });
  const results: unknown[] = [await worker.run(SPILL_ACTIVITY, spill, 'test spill')];
  for (const page of pages) results.push(await worker.run(page.activity, page.request, `test ${page.activity}`));
  return results;
}
