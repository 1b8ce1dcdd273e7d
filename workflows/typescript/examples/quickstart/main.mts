// Run `overspill dev` first; then `node main.mts` (Node >= 22.18 runs TypeScript as it is).
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult } from '@ai-sdk/provider';
import { MockLanguageModelV4, MockProviderV4 } from 'ai/test';
import { OverspillPlugin } from '@overspill/temporal-ai-sdk';

// The tool: a 200 KB build log whose last line says why the build failed.
async function buildLog(): Promise<string> {
  const steps = Array.from({ length: 9_000 }, (_, i) => `step ${i}: compiled module ${i}\n`);
  return `${steps.join('')}BUILD FAILED: disk full\n`;
}

// A scripted model: it calls build_log, reads the last line back by the handle in the marker it
// gets instead of the log, and answers with that page.
const model = new MockLanguageModelV4({
  doGenerate: async ({ prompt }: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> => {
    const results = prompt.flatMap((m) => (m.role === 'tool' ? m.content : []));
    const last = results.at(-1);
    const seen = last?.type === 'tool-result' && last.output.type === 'text' ? last.output.value : '';
    const handle = /stored to handle '([^']+)'/.exec(seen)?.[1];
    const content: LanguageModelV4GenerateResult['content'] =
      results.length === 0
        ? [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'build_log', input: '{}' }]
        : results.length === 1 && handle
          ? [{ type: 'tool-call', toolCallId: 'call-2', toolName: 'read_tool_result', input: JSON.stringify({ handle, from_end: true, limit: 1 }) }]
          : [{ type: 'text', text: seen }];
    const finished = content[0]?.type === 'text';
    return {
      content,
      finishReason: { unified: finished ? 'stop' : 'tool-calls', raw: undefined },
      usage: {
        inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      },
      warnings: [],
    };
  },
});

const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const queue = `quickstart-${randomUUID()}`;
const worker = await Worker.create({
  connection: await NativeConnection.connect({ address }),
  taskQueue: queue,
  workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
  activities: { buildLog },
  plugins: [
    new AiSdkPlugin({ modelProvider: new MockProviderV4({ languageModels: { scripted: model } }) }),
    // The worker that runs the tools reduces their outputs before Temporal records them, into the
    // store `overspill dev` reads (OVERSPILL_STORE, else the default every Overspill command shares).
    new OverspillPlugin({ tools: { buildLog: 'build_log' } }),
  ],
});
const client = new Client({ connection: await Connection.connect({ address }) });
const answer = await worker.runUntil(
  client.workflow.execute('quickstart', {
    taskQueue: queue,
    workflowId: queue,
    args: ['Why did the build fail?', process.env.OVERSPILL_TASK_QUEUE],
  }),
);
console.log(answer);
