/**
 * `OverspillMasking`: clears old tool outputs from the model's input losslessly, leaving a marker
 * whose handle reads them back from Overspill's store. Workflow-safe.
 *
 * The rule is the Python package's (`overspill.openai_agents.OverspillMasking`), on the AI SDK's
 * messages: the same budget over the same measure, the same outputs spared, the same keys and the
 * same marker text.
 *
 * @module
 */

import type { Instructions, ModelMessage, ToolResultPart } from 'ai';
import { log, workflowInfo } from '@temporalio/workflow';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';

import { chars, isMasked, maskMarker, spillHeader, thousands } from './markers';
import { OverspillWorker, SPILL_ACTIVITY } from './overspill-worker';

/** How {@link OverspillMasking} masks. */
export interface OverspillMaskingOptions {
  /** Mask once the model's input measures more than this many chars (default 100,000 ≈ 25,000
   * tokens). */
  budget?: number;
  /** How many of the most recent tool outputs are never masked (default 3; the current turn's
   * never are). */
  keepRecent?: number;
  /** Outputs shorter than this are never masked: the marker would save little (default 1,000). */
  minChars?: number;
  /** Names of tools whose outputs are never masked. */
  excludeTools?: readonly string[];
  /** The tools the marker names to get an output back (`overspillTools()` gives them). */
  readTools?: readonly string[];
  /** The Overspill worker that stores the outputs masking spills (its queue and timeouts). */
  worker?: OverspillWorker;
}

/**
 * Clears old tool outputs from the model's input without losing them: an AI SDK `prepareStep`.
 * Create one per agent run, inside the workflow function:
 *
 * ```ts
 * const masking = new OverspillMasking();
 * await generateText({ model, tools, prompt, prepareStep: masking.prepareStep });
 * ```
 *
 * Before each step, once the input (instructions and messages) measures more than `budget` chars,
 * every older text tool result becomes a short marker naming the tool, the output's size and a
 * handle: `[Tool output of 'fetch' cleared from context (60,000 chars); stored to handle 'run/3.0'.
 * Get it back with read_tool_result, grep_tool_result or query_tool_result.]`. It never touches the
 * `keepRecent` most recent results, nor the current turn's (those after the model's last message,
 * which it has not seen yet), nor results shorter than `minChars`, results that are not text, and
 * the results of `excludeTools`.
 *
 * A result Overspill already spilled (it starts with the spill marker) keeps its handle: no new
 * write. Any other is spilled first, through the Overspill worker's `tool_output_limits.spill`
 * activity, under `{run id}/{toolCallId}.masked-{sha256 of the text, 12 hex}`: the write is
 * journaled, so a replay gets the recorded handle back, and a handle never names other content. A
 * result whose spill fails stays as it was (a warning is logged) and is tried again at the next step.
 *
 * The masked messages carry forward to later steps (`prepareStep`'s `messages` override does), so
 * each output is masked, and spilled, once. Deterministic: the messages sent depend only on the
 * conversation, the run id and the spills' recorded results.
 */
export class OverspillMasking {
  readonly budget: number;
  readonly keepRecent: number;
  readonly minChars: number;
  readonly excludeTools: ReadonlySet<string>;
  readonly readTools: readonly string[];
  readonly worker: OverspillWorker;
  /** The handles this run's masking stored, by key: each output is spilled once. */
  private readonly spilled = new Map<string, string>();

  constructor(options: OverspillMaskingOptions = {}) {
    this.budget = options.budget ?? 100_000;
    this.keepRecent = options.keepRecent ?? 3;
    this.minChars = options.minChars ?? 1_000;
    this.excludeTools = new Set(options.excludeTools ?? []);
    this.readTools = options.readTools ?? ['read_tool_result', 'grep_tool_result', 'query_tool_result'];
    this.worker = options.worker ?? new OverspillWorker();
    if (this.budget < 0 || this.keepRecent < 0 || this.minChars < 0) {
      throw new RangeError('budget, keepRecent and minChars must be non-negative');
    }
    if (this.readTools.length === 0) throw new RangeError('readTools must name at least one tool');
  }

  /** An AI SDK `prepareStep`: the step's messages with old outputs masked, once over budget. */
  readonly prepareStep = async (step: {
    messages: ModelMessage[];
    instructions?: Instructions | undefined;
  }): Promise<{ messages: ModelMessage[] } | undefined> => {
    const messages = await this.mask(step.messages, step.instructions);
    return messages === undefined ? undefined : { messages };
  };

  /** `messages` with old outputs masked, or `undefined` when within budget or nothing was masked. */
  async mask(messages: readonly ModelMessage[], instructions?: Instructions | undefined): Promise<ModelMessage[] | undefined> {
    if (measure(messages, instructions) <= this.budget) return undefined;
    const masked = messages.map((message) =>
      message.role === 'tool' ? { ...message, content: [...message.content] } : message,
    );
    let changed = false;
    for (const [at, index] of this.candidates(messages)) {
      const message = masked[at];
      const part = message?.role === 'tool' ? message.content[index] : undefined;
      if (message?.role !== 'tool' || part?.type !== 'tool-result' || part.output.type !== 'text') continue;
      const marker = await this.marker(part, part.output.value);
      if (marker === undefined) continue;
      message.content[index] = { ...part, output: { ...part.output, value: marker } };
      changed = true;
    }
    return changed ? masked : undefined;
  }

  /** The positions (message, part) of the results to mask, oldest first: every tool result but the
   * `keepRecent` newest and the current turn's, if maskable and not masked yet. */
  candidates(messages: readonly ModelMessage[]): [number, number][] {
    const results: [number, number][] = [];
    messages.forEach((message, at) => {
      if (message.role !== 'tool') return;
      message.content.forEach((part, index) => {
        if (part.type === 'tool-result') results.push([at, index]);
      });
    });
    const lastFromModel = messages.map((m) => m.role).lastIndexOf('assistant');
    const current = lastFromModel === -1 ? messages.length : lastFromModel;
    const older = results.slice(0, Math.max(0, results.length - this.keepRecent));
    return older.filter(([at, index]) => {
      const message = messages[at];
      const part = message?.role === 'tool' ? message.content[index] : undefined;
      return at < current && part?.type === 'tool-result' && this.maskable(part);
    });
  }

  private maskable(part: ToolResultPart): boolean {
    if (part.output.type !== 'text' || this.excludeTools.has(part.toolName)) return false;
    const text = part.output.value;
    return chars(text) >= this.minChars && !isMasked(text);
  }

  /** The marker for `text`, the output of `part`, or `undefined` when it could not be stored or
   * would not be shorter. */
  private async marker(part: ToolResultPart, text: string): Promise<string | undefined> {
    const spilled = spillHeader(text);
    let handle = spilled?.handle;
    let size = spilled?.size ?? '';
    if (handle === undefined) {
      const digest = bytesToHex(sha256(new TextEncoder().encode(text))).slice(0, 12);
      const key = `${workflowInfo().runId}/${part.toolCallId || 'call'}.masked-${digest}`;
      size = `${thousands(chars(text))} chars`;
      if (chars(maskMarker(part.toolName, key, size, this.readTools)) >= chars(text)) return undefined;
      const stored = await this.spill(key, text, part.toolName);
      if (stored === undefined) return undefined;
      handle = stored;
    }
    const marker = maskMarker(part.toolName, handle, size, this.readTools);
    return chars(marker) < chars(text) ? marker : undefined;
  }

  /** Store `text` under `key` (once per run) and resolve to its handle, or `undefined` on failure. */
  private async spill(key: string, text: string, toolName: string): Promise<string | undefined> {
    const known = this.spilled.get(key);
    if (known !== undefined) return known;
    // The reference's defaults (no strip_ansi, no serializer), whatever the worker's `--limits`
    // say: the stored bytes must be exactly the output's.
    const request = { key, output: { text }, config: {} };
    try {
      const response = await this.worker.run(SPILL_ACTIVITY, request, `spill ${key}`);
      const handle = (response as { handle?: unknown } | null)?.handle;
      if (typeof handle !== 'string') throw new TypeError(`${SPILL_ACTIVITY} returned no handle`);
      this.spilled.set(key, handle);
      return handle;
    } catch (error) {
      log.warn(`Masking output of tool '${toolName}' failed (${String(error)}); leaving it in context`);
      return undefined;
    }
  }
}

/** Chars of model-visible text in a model's input: the instructions and every message's text. */
export function measure(messages: readonly ModelMessage[], instructions?: Instructions | undefined): number {
  const system = instructions === undefined ? [] : Array.isArray(instructions) ? instructions : [instructions];
  let total = 0;
  for (const part of system) total += typeof part === 'string' ? chars(part) : contentChars(part.content);
  for (const message of messages) total += contentChars(message.content);
  return total;
}

/** Chars of a message's content: its text, reasoning, call inputs (as JSON) and tool results. */
function contentChars(content: unknown): number {
  if (typeof content === 'string') return chars(content);
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content as { type?: string; text?: unknown; input?: unknown; output?: unknown }[]) {
    if (part.type === 'text' || part.type === 'reasoning') total += typeof part.text === 'string' ? chars(part.text) : 0;
    else if (part.type === 'tool-call') total += chars(JSON.stringify(part.input ?? null));
    else if (part.type === 'tool-result') total += outputChars(part.output);
  }
  return total;
}

/** Chars of a tool result's output: its text, or its JSON. */
function outputChars(output: unknown): number {
  const { type, value } = (output ?? {}) as { type?: string; value?: unknown };
  if (type === 'text' || type === 'error-text') return typeof value === 'string' ? chars(value) : 0;
  if (type === 'json' || type === 'error-json' || type === 'content') return chars(JSON.stringify(value ?? null));
  return 0;
}
