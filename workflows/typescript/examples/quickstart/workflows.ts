import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { overspillTools } from '@overspill/temporal-ai-sdk/workflow';

const { buildLog } = proxyActivities<{ buildLog(): Promise<string> }>({ startToCloseTimeout: '1 minute' });

// The agent: its tool's 200 KB output reaches it as a marker with a handle, and the read-back
// tools (served by `overspill dev` on `overspillQueue`) get any part of it back.
export async function quickstart(question: string, overspillQueue?: string): Promise<string> {
  const result = await generateText({
    model: temporalProvider.languageModel('scripted'),
    prompt: question,
    tools: {
      build_log: tool({
        description: "The CI build's log.",
        inputSchema: jsonSchema<Record<string, never>>({ type: 'object', properties: {} }),
        execute: async () => await buildLog(),
      }),
      ...overspillTools({ taskQueue: overspillQueue }),
    },
    stopWhen: stepCountIs(5),
  });
  return result.text;
}
