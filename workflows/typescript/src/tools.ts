/**
 * `overspillTools()`: `read_tool_result`, `grep_tool_result`, `query_tool_result` and
 * `list_tool_results` as AI SDK tools for workflow code, run by the Overspill worker. Workflow-safe.
 *
 * Their names, descriptions and JSON schemas are the engine's read-back tool table (the same
 * every Overspill integration gives its models), read from the native addon when the package is
 * built.
 *
 * @module
 */

import { type JSONSchema7, type Tool, jsonSchema, tool } from 'ai';
import { workflowInfo } from '@temporalio/workflow';

import type * as Native from '../native/index.js';
import engine from './generated/engine.json';
import { OverspillWorker, type OverspillWorkerOptions } from './overspill-worker';

/** A read-back tool as the engine declares it: its model-visible name, description and parameters,
 * and the Overspill activity that runs it. */
export type ToolSpec = Native.ToolSpec;

/** The engine's read-back tools (its table, as `readBackTools()` gives it on the worker). */
export const READ_BACK_TOOLS: readonly ToolSpec[] = engine.tools;

/** What {@link overspillTools} needs: the Overspill worker's queue and timeouts, or the worker. */
export interface OverspillToolsOptions extends OverspillWorkerOptions {
  worker?: OverspillWorker;
}

/**
 * The read-back tools, for an agent's `tools`: `generateText({ tools: { ...myTools,
 * ...overspillTools() } })`.
 *
 * Each runs in workflow code and executes the Overspill worker's activity of that tool
 * (`tool_output_limits.read_tool_result`, …) on `taskQueue` (default `tool-output-limits`): the
 * worker reads the spill from its store, and only the page it returns (at most 50,000 chars) enters
 * the workflow history, where a replay takes it from. The model sees the worker's text, byte for
 * byte. A failure, a bad argument the worker refuses (`ModelRetry`) among them, goes back to the
 * model as the tool's error, as the AI SDK reports every tool's failure.
 *
 * The spills of a run are listed by the workflow's run id, the run segment of the handles
 * `OverspillPlugin` writes.
 */
export function overspillTools(options: OverspillToolsOptions = {}): Record<string, Tool<Record<string, unknown>, string>> {
  const worker = options.worker ?? new OverspillWorker(options);
  return Object.fromEntries(
    READ_BACK_TOOLS.map((spec) => [
      spec.name,
      tool({
        description: spec.description,
        inputSchema: jsonSchema<Record<string, unknown>>(spec.parameters as JSONSchema7),
        execute: async (input: Record<string, unknown>) => await page(worker, spec, input),
      }),
    ]),
  );
}

/** The page `spec`'s activity returns for the model's `input`. */
async function page(worker: OverspillWorker, spec: ToolSpec, input: Record<string, unknown>): Promise<string> {
  const listing = spec.name === 'list_tool_results';
  // The run whose spills are listed is this workflow's: not the model's to choose.
  const request = listing ? { ...input, run_id: workflowInfo().runId, tool_names: {} } : input;
  const subject = listing ? `spills of ${workflowInfo().runId}` : String(input['handle']);
  const text = await worker.run(spec.activity, request, `${spec.name} ${subject}`);
  if (typeof text !== 'string') throw new TypeError(`${spec.activity} returned ${typeof text}, not the page text`);
  return text;
}
