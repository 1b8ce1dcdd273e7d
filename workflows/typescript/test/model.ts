/**
 * A scripted model (`MockLanguageModelV4` from `ai/test`) that answers from its prompt alone, so a
 * retried or replayed model activity answers the same, and counts what it is sent.
 *
 * The prompt's script:
 * - `fetch N pages of C chars` calls `fetch_page` N times, then answers `fetched N pages`;
 * - `fetch the log of M MB` calls `fetch_log` once;
 * - `fetch N records` calls `fetch_records` once;
 * - then, after `, then`: `read <pattern>` calls `read_tool_result` for the first line containing the
 *   pattern, `grep <pattern>` calls `grep_tool_result`, `query <jq filter>` calls `query_tool_result`,
 *   each on the first handle any tool output names (a spill or a mask marker), and `list` calls
 *   `list_tool_results`; several steps are separated by `; then`. The answer is the last output.
 */

import type { LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4GenerateResult, LanguageModelV4Prompt } from '@ai-sdk/provider';
import { MockLanguageModelV4, MockProviderV4 } from 'ai/test';

const FETCH = /fetch (?:(\d+) pages? of (\d+) chars|the log of (\d+) MB|(\d+) records)/;
const HANDLE = /stored to handle '([^']+)'/;

/** What the model was sent. */
export interface Sent {
  /** Chars of model-visible text of each request, in order. */
  requests: number[];
  /** The tool outputs of the last request, as the model saw them. */
  lastOutputs: string[];
}

/** A provider of one scripted model, `scripted`; `bodies` makes it return the request and response
 * bodies a real provider returns (the prompt again, and a raw response). */
export function scriptedProvider(sent: Sent, options: { bodies?: boolean } = {}): MockProviderV4 {
  const model = new MockLanguageModelV4({
    doGenerate: async (call: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> => {
      model.doGenerateCalls.length = 0; // keeps no prompts: a long run would hold them all
      const outputs = toolOutputs(call.prompt);
      sent.requests.push(promptChars(call.prompt));
      sent.lastOutputs = outputs;
      const content = [nextStep(call.prompt, outputs)];
      const result: LanguageModelV4GenerateResult = {
        content,
        finishReason: { unified: content[0]?.type === 'tool-call' ? 'tool-calls' : 'stop', raw: undefined },
        usage: {
          inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: undefined, text: undefined, reasoning: undefined },
        },
        warnings: [],
      };
      if (options.bodies) {
        result.request = { body: { model: 'scripted', messages: call.prompt } };
        result.response = { body: { choices: [{ message: content }] } };
      }
      return result;
    },
  });
  return new MockProviderV4({ languageModels: { scripted: model } });
}

/** The model's next step for `prompt`, whose tool outputs are `outputs`. */
function nextStep(prompt: LanguageModelV4Prompt, outputs: string[]): LanguageModelV4Content {
  const user = prompt.find((m) => m.role === 'user');
  const script = user ? textOf(user.content) : '';
  const calls = prompt.flatMap((m) => (m.role === 'assistant' ? m.content.filter((p) => p.type === 'tool-call') : []));
  const [fetch, ...steps] = script.split(/[,;] then /);
  const match = FETCH.exec(fetch ?? '');
  if (match === null) return text(`no script in ${JSON.stringify(script)}`);
  const fetched = calls.filter((c) => c.toolName.startsWith('fetch_')).length;
  if (match[1] !== undefined) {
    const pages = Number(match[1]);
    if (fetched < pages) return toolCall(calls.length, 'fetch_page', { n: fetched, chars: Number(match[2]) });
    if (steps.length === 0) return text(`fetched ${fetched} pages`);
  } else if (fetched === 0) {
    return match[3] !== undefined
      ? toolCall(0, 'fetch_log', { mb: Number(match[3]) })
      : toolCall(0, 'fetch_records', { count: Number(match[4]) });
  }
  const done = calls.length - fetched;
  const step = steps[done];
  if (step === undefined) return text(outputs[outputs.length - 1] ?? '');
  const [verb, ...rest] = step.split(' ');
  const argument = rest.join(' ');
  if (verb === 'list') return toolCall(calls.length, 'list_tool_results', {});
  const handle = outputs.map((o) => HANDLE.exec(o)?.[1]).find((h) => h !== undefined);
  if (handle === undefined) return text(`no handle in any output; the last: ${(outputs[outputs.length - 1] ?? '').slice(0, 200)}`);
  if (verb === 'read') return toolCall(calls.length, 'read_tool_result', { handle, pattern: argument, limit: 1 });
  if (verb === 'grep') return toolCall(calls.length, 'grep_tool_result', { handle, pattern: argument });
  if (verb === 'query') return toolCall(calls.length, 'query_tool_result', { handle, filter: argument, limit: 3 });
  return text(`no step ${JSON.stringify(step)}`);
}

function toolCall(k: number, toolName: string, input: object): LanguageModelV4Content {
  return { type: 'tool-call', toolCallId: `call-${k}`, toolName, input: JSON.stringify(input) };
}

function text(value: string): LanguageModelV4Content {
  return { type: 'text', text: value };
}

/** The text of every tool output in `prompt`, in order, as the model sees it. */
export function toolOutputs(prompt: LanguageModelV4Prompt): string[] {
  return prompt.flatMap((m) =>
    m.role === 'tool'
      ? m.content.flatMap((part) => {
          if (part.type !== 'tool-result') return [];
          const output = part.output as { type: string; value?: unknown };
          return [typeof output.value === 'string' ? output.value : JSON.stringify(output.value)];
        })
      : [],
  );
}

/** Chars of model-visible text in `prompt`: every message's text, call inputs and tool outputs. */
export function promptChars(prompt: LanguageModelV4Prompt): number {
  let total = 0;
  for (const message of prompt) {
    if (message.role === 'system') total += message.content.length;
    else if (message.role === 'user') total += textOf(message.content).length;
    else if (message.role === 'assistant') {
      for (const part of message.content) {
        if (part.type === 'text' || part.type === 'reasoning') total += part.text.length;
        else if (part.type === 'tool-call') total += JSON.stringify(part.input).length;
      }
    }
  }
  return total + toolOutputs(prompt).reduce((sum, o) => sum + o.length, 0);
}

function textOf(content: readonly { type: string; text?: string }[] | string): string {
  return typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? (p.text ?? '') : '')).join('');
}
